"""Private quantiles: the exponential mechanism over the intervals (Smith 2011)."""

import math

import numpy as np

from skdp._smith_quantile import sample_quantile
from skdp.tools._reduction import Reduction, as_data, checked_epsilon, spend
from skdp.utils import noise_generator

__all__ = ["median", "percentile", "quantile"]


def quantile(
    a, q, epsilon=1.0, bounds=None, axis=None, keepdims=False, random_state=None
):
    """Differentially private quantile(s) of ``a`` over ``axis`` (pure epsilon).

    Parameters
    ----------
    a : array-like
        The data; its records are the slices along the first axis (the rows;
        the elements of a 1-d array).
    q : float or array-like of float
        Quantile level(s) in [0, 1]. Several levels share ``epsilon``
        equally (basic composition).
    epsilon : float, default=1.0
        In (0, inf]; ``inf`` returns numpy's quantile (linear interpolation)
        of the clipped data.
    bounds : tuple (lower, upper), list of pairs, dict or None, default=None
        The range of the values: a pair of scalars, or one ``(lower, upper)``
        per output (flattened order) in any form of
        :func:`~skdp.utils.check_bounds`. None: taken from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning` (not private).
    axis : None, int or tuple of ints, default=None
    keepdims : bool, default=False
    random_state : None, int, RandomState or Generator, default=None
        Seeds the noise only under skdp's reproducible-noise opt-in.

    Returns
    -------
    float or ndarray
        As :func:`numpy.quantile`: the levels first when ``q`` is an array.

    Notes
    -----
    **Mechanism** (Smith 2011). The ``m`` values of an output, clipped and
    sorted, with the range ends ``z_0 = lower``, ``z_{m+1} = upper``, cut the
    range into ``m + 1`` intervals; interval ``i`` is drawn with probability
    proportional to ``(z_{i+1} - z_i) exp(-epsilon_o |i - q m| / (2 e))``,
    then a point uniformly inside it. The output has density
    ``f(t) ∝ exp(-epsilon_o |r(t) - q m| / (2 e))`` with ``r(t) = #{x < t}``.

    **Privacy.** Replacing one record moves up to ``e`` of an output's values
    (``e = 1`` for a 1-d array), so ``r(t)`` moves by at most ``e`` at every
    ``t``: the unnormalised density changes by at most ``exp(epsilon_o / 2)``
    and so does its integral, hence the density ratio is at most
    ``exp(epsilon_o)`` (the exponential mechanism with base measure the
    Lebesgue measure on the range). A record touches ``k`` outputs (all of
    them when ``axis`` reduces the first axis, else those of its own
    slice), and each of ``L`` levels is a release: ``epsilon_o = epsilon /
    (L k)``, so every record's total is ``epsilon`` (basic composition). The
    tests check the density ratio exactly on every neighbour of a tiny
    data set.

    References
    ----------
    Smith (2011). Privacy-preserving statistical estimation with optimal
    convergence rates. STOC.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import tools
    >>> x = np.random.default_rng(0).normal(50, 10, 10_000)
    >>> bool(abs(tools.median(x, epsilon=1.0, bounds=(0, 100)) - np.median(x)) < 1)
    True
    """
    arr = as_data(a)
    epsilon = checked_epsilon(epsilon)
    levels = np.asarray(q, dtype=np.float64)
    if levels.ndim > 1 or levels.size == 0:
        raise ValueError("q must be a float or a non-empty 1-d array of floats.")
    if not np.all((levels >= 0) & (levels <= 1)):
        raise ValueError(f"Quantiles must be in the unit interval [0, 1], got {q!r}.")
    red = Reduction(arr, axis, keepdims)
    lower, upper = red.bounds(bounds)
    private = not math.isinf(epsilon)
    spend(epsilon, "quantile")
    rng = noise_generator(random_state)
    clipped = np.clip(red.values, lower[:, None], upper[:, None])
    if not private:
        out = np.quantile(clipped, levels, axis=1)
    else:
        per_output = epsilon / (levels.size * red.touched)
        out = np.array(
            [
                [
                    sample_quantile(
                        clipped[o],
                        level,
                        per_output,
                        lower[o],
                        upper[o],
                        red.per_output,
                        rng,
                    )  # fmt: skip
                    for o in range(red.n_outputs)
                ]
                for level in np.atleast_1d(levels)
            ]
        )
    out = np.asarray(out).reshape((-1, red.n_outputs))
    if levels.ndim == 0:
        return red.shape_result(out[0])
    return np.stack(
        [np.asarray(red.shape_result(row)).reshape(red.out_shape) for row in out]
    )


def percentile(
    a, p, epsilon=1.0, bounds=None, axis=None, keepdims=False, random_state=None
):
    """Differentially private percentile(s): :func:`quantile` at ``p / 100``.

    Parameters and guarantee as in :func:`quantile`; ``p`` in [0, 100].

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import tools
    >>> x = np.random.default_rng(0).uniform(0, 100, 10_000)
    >>> bool(abs(tools.percentile(x, 90, epsilon=1.0, bounds=(0, 100)) - 90) < 2)
    True
    """
    p = np.asarray(p, dtype=np.float64)
    if not np.all((p >= 0) & (p <= 100)):
        raise ValueError("Percentiles must be in [0, 100].")
    return quantile(a, p / 100, epsilon, bounds, axis, keepdims, random_state)


def median(a, epsilon=1.0, bounds=None, axis=None, keepdims=False, random_state=None):
    """Differentially private median: :func:`quantile` at 0.5.

    Parameters and guarantee as in :func:`quantile`.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import tools
    >>> x = np.random.default_rng(0).uniform(0, 100, 10_000)
    >>> bool(abs(tools.median(x, epsilon=1.0, bounds=(0, 100)) - 50) < 2)
    True
    """
    return quantile(a, 0.5, epsilon, bounds, axis, keepdims, random_state)
