"""Private histograms: Laplace noise on the counts, rounded and clipped at 0."""

import math
import numbers

import numpy as np

from skdp._discrete_laplace import integer_laplace_noise
from skdp.tools._dask_counts import dask_histogram_counts, public_edges
from skdp.tools._reduction import as_data, checked_epsilon, spend
from skdp.utils import noise_generator
from skdp.utils.dask_rows import is_dask_collection
from skdp.utils.privacy_warnings import warn_privacy_leak

__all__ = ["histogram", "histogram2d", "histogramdd", "integer_laplace_noise"]


def _noisy_counts(counts, sensitivity, epsilon, source, rng_seed):
    """Record the spend, then release ``counts`` (any shape)."""
    spend(epsilon, source)
    rng = noise_generator(rng_seed)
    if math.isinf(epsilon):
        return counts.astype(np.int64)
    noise = integer_laplace_noise(counts.shape, epsilon, sensitivity, rng)
    return np.maximum(counts.astype(np.int64) + noise, 0)


def _density(counts, edges):
    """numpy's ``density=True`` from the released counts (post-processing)."""
    total = counts.sum()
    widths = np.ones(counts.shape)
    for axis, e in enumerate(edges):
        shape = [1] * counts.ndim
        shape[axis] = -1
        widths = widths * np.diff(e).reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        return counts / total / widths


def _check_bins(bins, name="bins"):
    if isinstance(bins, str):
        raise ValueError(
            f"{name}={bins!r} chooses the bins from the data, which is not private: "
            "give a number of bins and a range, or the bin edges."
        )
    return bins


def histogram(
    a,
    bins=10,
    range=None,
    epsilon=1.0,
    density=False,
    random_state=None,  # noqa: A002
):
    """Differentially private histogram of ``a`` (as :func:`numpy.histogram`).

    Parameters
    ----------
    a : array-like or dask array
        The data; its records are the slices along the first axis (the rows;
        the elements of a 1-d array); all values are binned, as numpy does.
        A 1-d or 2-d dask array (or dataframe) is binned on the workers, block
        by block (a NaN or inf fails there, before anything is spent), and
        only the counts come back; ``range`` (or the edges) must then be
        declared.
    bins : int or sequence of float, default=10
        Number of equal-width bins in ``range``, or the bin edges (public).
        A string rule (``"auto"``) reads the data and is refused.
    range : (float, float) or None, default=None
        The range of the bins when ``bins`` is an int. None: taken from the
        data with a :class:`~skdp.exceptions.PrivacyLeakWarning` (not private).
        Values outside the bins are not counted (numpy's rule).
    epsilon : float, default=1.0
        In (0, inf]; ``inf`` returns numpy's histogram.
    density : bool, default=False
        Normalise the released counts as numpy does (post-processing).
    random_state : None, int, RandomState or Generator, default=None
        Seeds the noise only under skdp's reproducible-noise opt-in.

    Returns
    -------
    hist : ndarray of int (float if ``density``)
    bin_edges : ndarray of float

    Notes
    -----
    Replacing one record moves each of its ``E`` values (``E = 1`` for a
    1-d array) from one bin to another (or in or out of the bins): the
    counts change by at most ``2 E`` in L1. Discrete Laplace noise
    ``P(k) ∝ exp(-epsilon |k| / (2 E))`` (:func:`integer_laplace_noise`) is
    added to every count, then clipped at 0 (post-processing). diffprivlib
    adds geometric noise of sensitivity 1 (add/remove neighbours, under which
    its guarantee holds; under replace-one neighbours it is ``2 epsilon``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import tools
    >>> x = np.random.default_rng(0).uniform(0, 1, 10_000)
    >>> hist, edges = tools.histogram(x, bins=4, range=(0, 1), epsilon=1.0)
    >>> bool(np.all(np.abs(hist - 2500) < 100)), edges.tolist()
    (True, [0.0, 0.25, 0.5, 0.75, 1.0])
    """
    epsilon = checked_epsilon(epsilon)
    bins = _check_bins(bins)
    if is_dask_collection(a):  # counted on the workers; range declared
        (edges,) = public_edges([bins], [range])
        counts, per_record = dask_histogram_counts(
            a, [edges], all_values=True, name="a"
        )
        hist = _noisy_counts(
            counts, 2.0 * per_record, epsilon, "histogram", random_state
        )
        return (_density(hist, [edges]) if density else hist), edges
    arr = as_data(a)
    if range is None and isinstance(bins, numbers.Integral):
        warn_privacy_leak(
            "range was not declared, so the bins span the data's range: the "
            "result leaks it and is not differentially private. Declare "
            "range=(lower, upper) or give the bin edges."
        )
    counts, edges = np.histogram(arr, bins=bins, range=range)
    per_record = arr.size // arr.shape[0]
    hist = _noisy_counts(counts, 2.0 * per_record, epsilon, "histogram", random_state)
    if density:
        return _density(hist, [edges]), edges
    return hist, edges


def histogramdd(
    sample,
    bins=10,
    range=None,
    epsilon=1.0,
    density=False,
    random_state=None,  # noqa: A002
):
    """Differentially private multidimensional histogram (:func:`numpy.histogramdd`).

    Parameters
    ----------
    sample : array-like or dask array of shape (n_samples, n_dims)
        One record per row (a 1-d array: one value per record). A dask array
        (or dataframe) is binned on the workers as in :func:`histogram`;
        ``range`` (or the edges) must then be declared.
    bins : int, sequence of int or sequence of edge arrays, default=10
        As numpy's (string rules are refused).
    range : sequence of (float, float) or None, default=None
        One range per dimension when ``bins`` gives numbers of bins. None:
        taken from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning` (not private).
    epsilon : float, default=1.0
    density : bool, default=False
    random_state : None, int, RandomState or Generator, default=None

    Returns
    -------
    hist : ndarray of int (float if ``density``)
    edges : list of ndarray

    Notes
    -----
    A record is one row, which falls in one cell: replacing it changes two
    counts by 1, ``Delta_1 = 2``; discrete Laplace noise
    ``P(k) ∝ exp(-epsilon |k| / 2)`` on every cell, clipped at 0.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import tools
    >>> X = np.random.default_rng(0).uniform(0, 1, (10_000, 2))
    >>> hist, edges = tools.histogramdd(X, bins=2, range=[(0, 1), (0, 1)])
    >>> hist.shape
    (2, 2)
    """
    epsilon = checked_epsilon(epsilon)
    bins = _check_bins(bins)
    if is_dask_collection(sample):  # counted on the workers; ranges declared
        n_dims = 1 if sample.ndim == 1 else sample.shape[1]
        per_dim = [bins] * n_dims if isinstance(bins, numbers.Integral) else bins
        edges = public_edges(
            list(per_dim), [None] * n_dims if range is None else list(range)
        )
        counts, _ = dask_histogram_counts(
            sample, edges, all_values=False, name="sample"
        )
        hist = _noisy_counts(counts, 2.0, epsilon, "histogramdd", random_state)
        return (_density(hist, edges) if density else hist), edges
    arr = as_data(sample, "sample")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"sample must be 2-d (n_samples, n_dims), got {arr.shape}.")
    needs_range = isinstance(bins, numbers.Integral) or any(
        isinstance(b, numbers.Integral) for b in bins
    )
    if range is None and needs_range:
        warn_privacy_leak(
            "range was not declared, so the bins span the data's range: the "
            "result leaks it and is not differentially private. Declare "
            "range=[(lower, upper), ...] or give the bin edges."
        )
    counts, edges = np.histogramdd(arr, bins=bins, range=range)
    hist = _noisy_counts(counts, 2.0, epsilon, "histogramdd", random_state)
    if density:
        return _density(hist, edges), edges
    return hist, edges


def histogram2d(
    x,
    y,
    bins=10,
    range=None,
    epsilon=1.0,
    density=False,
    random_state=None,  # noqa: A002
):
    """Differentially private 2-d histogram (:func:`numpy.histogram2d`).

    :func:`histogramdd` of the pairs ``(x_i, y_i)``: a record is one pair.

    Parameters
    ----------
    x, y : array-like or dask array of shape (n_samples,)
    bins, range, epsilon, density, random_state :
        As in :func:`histogramdd`.

    Returns
    -------
    hist : ndarray of shape (nx, ny)
    xedges, yedges : ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import tools
    >>> rng = np.random.default_rng(0)
    >>> x, y = rng.uniform(0, 1, 1000), rng.uniform(0, 1, 1000)
    >>> hist, xe, ye = tools.histogram2d(x, y, bins=3, range=[(0, 1), (0, 1)])
    >>> hist.shape
    (3, 3)
    """
    if is_dask_collection(x) or is_dask_collection(y):
        import dask.array as da

        x, y = (v.to_dask_array(lengths=True) if hasattr(v, "to_dask_array")
                else da.asarray(v) for v in (x, y))  # fmt: skip
        if x.shape != y.shape or x.ndim != 1:
            raise ValueError(
                f"x and y must be 1-d of the same length, got {x.shape} and {y.shape}."
            )
        sample = da.stack([x, y.rechunk(x.chunks)], axis=1)
        hist, edges = histogramdd(sample, bins, range, epsilon, density, random_state)
        return hist, edges[0], edges[1]
    x = as_data(x, "x").ravel()
    y = as_data(y, "y").ravel()
    if x.shape != y.shape:
        raise ValueError(
            f"x and y must have the same length, got {x.size} and {y.size}."
        )
    hist, edges = histogramdd(
        np.column_stack([x, y]), bins, range, epsilon, density, random_state
    )
    return hist, edges[0], edges[1]
