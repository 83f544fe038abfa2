"""Differentially private statistics of arrays, as numpy's (and diffprivlib's tools).

Every function takes ``epsilon`` (in (0, inf]; ``inf`` returns numpy's result
on the clipped data), ``bounds`` or ``range`` (declared, or taken from the data
with a :class:`~skdp.exceptions.PrivacyLeakWarning`) and ``random_state``
(seeding the noise only under the reproducible-noise opt-in), records its
pure-epsilon spend in any active :func:`~skdp.accounting.track_budget` before
drawing, and derives its sensitivity in its Notes.

**Neighbours.** The records of an array are its slices along the first axis
(its rows; the elements of a 1-d array), and neighbouring arrays differ in one
record (replace-one; the shape is public). A statistic over ``axis`` with
several outputs is one release whose guarantee covers them all.

**Missing values.** The ``nan*`` functions read NaN as a missing value and
release each output's count of present values with its sums (how many are
missing is data); the others refuse NaN.
"""

from skdp.tools._histograms import histogram, histogram2d, histogramdd
from skdp.tools._moments import count_nonzero, mean, std, sum, var
from skdp.tools._nan_moments import nanmean, nanstd, nansum, nanvar
from skdp.tools._quantiles import median, percentile, quantile

__all__ = [
    "count_nonzero",
    "histogram",
    "histogram2d",
    "histogramdd",
    "mean",
    "median",
    "nanmean",
    "nanstd",
    "nansum",
    "nanvar",
    "percentile",
    "quantile",
    "std",
    "sum",
    "var",
]
