"""Private sums, means, variances and standard deviations ignoring NaN.

A NaN element is a missing value. How many values are missing is data, so
each output's count of present values is released too, in the same Laplace
vector as its sums (one release, pure epsilon).
"""

import functools
import math
import operator

import numpy as np

from skdp._moments import MOMENT_WEIGHT, moment_sensitivity
from skdp.mechanisms import LaplaceMechanism
from skdp.tools._reduction import (
    DaskReduction,
    Reduction,
    as_data,
    check_no_inf,
    checked_epsilon,
    spend,
)
from skdp.utils import noise_generator
from skdp.utils.dask_rows import is_dask_collection, reduce_rows
from skdp.utils.privacy_warnings import warn_privacy_leak

__all__ = [
    "MIN_COUNT",
    "NanMoments",
    "nan_moment_sums",
    "nan_moments_sensitivity",
    "nanmean",
    "nanstd",
    "nansum",
    "nanvar",
]

#: Below this released count of present values an output's mean, variance
#: and standard deviation are the fallback (the range's centre, 0, 0).
MIN_COUNT = 1.0


def nan_moments_sensitivity(per_record, with_squares=False):
    """L1 sensitivity of ``(S1_o, N_o)`` (or ``(S1_o, lambda S2_o, N_o)``).

    Parameters
    ----------
    per_record : int
        ``E``, the elements of one record over all outputs.
    with_squares : bool, default=False
        False: the sums of ``w`` and the counts of present elements; True:
        also ``MOMENT_WEIGHT`` times the sums of ``w^2``.

    Returns
    -------
    float

    Notes
    -----
    A present element adds ``(w, 1)`` to its output's ``(S1, N)`` (``w =
    (clip(x) - c) / r`` in [-1, 1]), and ``(w, lambda w^2, 1)`` to ``(S1,
    lambda S2, N)``; a missing one (NaN) adds zeros. Replacing a record moves
    each of its ``E`` elements from one state to another; the L1 change of
    one element, ``a`` and ``b`` in [-1, 1]:

    - present ``a`` -> present ``b``: ``|a - b| <= 2``; with squares ``|a - b|
      + lambda |a^2 - b^2| <= g(lambda) = (1 + 2 lambda)^2 / (4 lambda)``
      (``lambda > 1/2``; derived in ``skdp._moments.moment_sensitivity``;
      2.591 at ``lambda = sqrt(2)``); the count is unchanged;
    - present ``a`` <-> missing: ``|a| + 1 <= 2``; with squares ``|a| +
      lambda a^2 + 1 <= 2 + lambda`` (3.414), both at ``|a| = 1``;
    - missing -> missing: 0.

    So the sums and counts cost no more than the sums alone: 2 per element.
    With squares the worst case is a present value at an end of the range
    becoming missing (or back): ``2 + lambda >= g(lambda)`` since ``4 lambda
    (2 + lambda) - (1 + 2 lambda)^2 = 4 lambda - 1 > 0``, 32% above the plain
    variance's ``g(lambda)``. By the triangle inequality a record changes the
    vector by at most ``E`` times the element's maximum, attained when every
    element moves the same way (all from 1 to missing): ``Delta_1 = 2 E``,
    and ``(2 + lambda) E`` with squares.
    """
    if not with_squares:
        return 2.0 * per_record
    present_to_present = moment_sensitivity(1, weight=MOMENT_WEIGHT, norm="l1")
    return per_record * max(present_to_present, 2.0 + MOMENT_WEIGHT)


def nan_moment_sums(values, lower, upper, squares=False):
    """The released vector: ``S1_o`` (then ``MOMENT_WEIGHT * S2_o``), then ``N_o``.

    Parameters
    ----------
    values : ndarray of shape (n_outputs, m)
        The elements of each output, NaN where missing.
    lower, upper : ndarray of shape (n_outputs,)
        Each output's range; values are clipped to it and mapped to [-1, 1].
    squares : bool, default=False

    Returns
    -------
    ndarray of shape (2 * n_outputs,) or (3 * n_outputs,)
    """
    present = ~np.isnan(values)
    centre, half = (lower + upper) / 2, (upper - lower) / 2
    clipped = np.clip(values, lower[:, None], upper[:, None])
    w = np.where(present, (clipped - centre[:, None]) / half[:, None], 0.0)
    parts = [w.sum(axis=1)]
    if squares:
        parts.append(MOMENT_WEIGHT * np.einsum("ij,ij->i", w, w))
    parts.append(np.count_nonzero(present, axis=1).astype(np.float64))
    return np.concatenate(parts)


class _NanReduction(Reduction):
    """A :class:`Reduction` whose undeclared bounds come from the present values."""

    def bounds(self, bounds, name="bounds"):
        if bounds is not None:
            return super().bounds(bounds, name)
        present = self.values[~np.isnan(self.values)]
        if present.size == 0:
            raise ValueError(
                f"every value is missing (NaN): there is no range to take from the "
                f"data; declare {name}=(lower, upper)."
            )
        warn_privacy_leak(
            f"{name} were not declared, so they are taken from the data: the "
            "result leaks the data's range and is not differentially private. "
            f"Declare {name}=(lower, upper) to get the guarantee."
        )
        lo, hi = float(present.min()), float(present.max())
        if hi == lo:
            hi = lo + 1.0
        return np.full(self.n_outputs, lo), np.full(self.n_outputs, hi)


class NanMoments:
    """Mergeable per-output sums of blocks of rows with missing values.

    ``n``: the present values per output; ``sums``: the released sums (of
    ``w`` then ``w^2``) or, for ``epsilon=inf``, the clipped values' sums;
    ``mean``, ``m2``: their exact means and centred sums of squares (None
    when private), merged by Chan, Golub & LeVeque's update per output (an
    output without present values has mean and ``m2`` 0 and merges as none).
    """

    __slots__ = ("n", "sums", "mean", "m2")

    def __init__(self, n, sums, mean=None, m2=None):
        self.n = n
        self.sums = sums
        self.mean = mean
        self.m2 = m2

    def __add__(self, other):
        n = self.n + other.n
        sums = self.sums + other.sums
        if self.mean is None:
            return NanMoments(n, sums)
        safe = np.maximum(n, 1.0)
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.n / safe)
        m2 = self.m2 + other.m2 + delta**2 * (self.n * other.n / safe)
        return NanMoments(n, sums, mean, m2)


def _block_nan_moments(block, *, lower, upper, outputs, exact):
    """The :class:`NanMoments` of one block of rows, on its worker (``outputs
    == 1``: every element feeds the one output; else column ``o`` output ``o``)."""
    values = check_no_inf(np.asarray(block, dtype=np.float64)).reshape(-1, outputs)
    present = ~np.isnan(values)
    n = np.count_nonzero(present, axis=0).astype(np.float64)
    clipped = np.clip(values, lower, upper)
    if exact:
        total = np.where(present, clipped, 0.0).sum(axis=0)
        mean = total / np.maximum(n, 1.0)
        dev = np.where(present, clipped - mean, 0.0)
        return NanMoments(n, total, mean, np.einsum("ij,ij->j", dev, dev))
    centre, half = (lower + upper) / 2, (upper - lower) / 2
    w = np.where(present, (clipped - centre) / half, 0.0)
    return NanMoments(n, np.concatenate([w.sum(axis=0), np.einsum("ij,ij->j", w, w)]))


def _merge(*parts):
    return functools.reduce(operator.add, parts)


def _exact(values, lower, upper):
    """``(nansum, nanmean, nanvar)`` of the clipped values per output (numpy's),
    the fallback ``(0, c, 0)`` where an output has no present value."""
    clipped = np.clip(values, lower[:, None], upper[:, None])
    has = np.any(~np.isnan(clipped), axis=1)
    mean, var = (lower + upper) / 2, np.zeros(lower.size)
    if has.any():  # numpy on the outputs with values: no empty-slice warning
        mean[has] = np.nanmean(clipped[has], axis=1)
        var[has] = np.nanvar(clipped[has], axis=1)
    return np.nansum(clipped, axis=1), mean, var


def _nan_release(a, epsilon, bounds, axis, keepdims, random_state, source, squares):
    """Validate, record, draw: ``(reduction, lower, upper, stats, exact)``.

    Private: ``stats = (s1, s2, n)``, the noisy sums in [-1, 1] units (``s2``
    of squares, None unless ``squares``) and counts of present values,
    ``exact`` None; at ``epsilon=inf``: ``stats`` None, ``exact = (nansum,
    nanmean, nanvar)`` of the clipped values with the fallbacks."""
    on_dask = is_dask_collection(a)
    if on_dask:
        red = DaskReduction(a, axis, keepdims)
    else:
        red = _NanReduction(as_data(a, allow_nan=True), axis, keepdims)
    epsilon = checked_epsilon(epsilon)
    lower, upper = red.bounds(bounds)
    private = not math.isinf(epsilon)
    k = red.n_outputs
    mech = None
    if private:
        sens = nan_moments_sensitivity(red.per_record, with_squares=squares)
        mech = LaplaceMechanism(epsilon, sens, dimension=k * (3 if squares else 2))
    merged = None
    if on_dask:  # on the workers first: a bad block fails before any spend
        reduce_block = functools.partial(
            _block_nan_moments, lower=lower, upper=upper, outputs=k, exact=not private
        )
        merged = reduce_rows(red.arr, reduce_block, _merge)
    rng = noise_generator(random_state)  # checks random_state; draws nothing
    spend(epsilon, source, mechanism=mech)
    if not private:
        if not on_dask:
            return red, lower, upper, None, _exact(red.values, lower, upper)
        has = merged.n > 0
        mean = np.where(has, merged.mean, (lower + upper) / 2)
        var = np.where(has, merged.m2 / np.maximum(merged.n, 1.0), 0.0)
        return red, lower, upper, None, (merged.sums, mean, var)
    if on_dask:
        parts = [merged.sums[:k]]
        if squares:
            parts.append(MOMENT_WEIGHT * merged.sums[k:])
        stats = np.concatenate([*parts, merged.n])
    else:
        stats = nan_moment_sums(red.values, lower, upper, squares)
    stats = mech.randomize(stats, random_state=rng)
    s2 = stats[k : 2 * k] / MOMENT_WEIGHT if squares else None
    return red, lower, upper, (stats[:k], s2, stats[-k:]), None


def nansum(a, epsilon=1.0, bounds=None, axis=None, keepdims=False, random_state=None):
    """Differentially private sum of ``a`` over ``axis``, ignoring NaN (pure epsilon).

    Parameters
    ----------
    a : array-like or dask array
        The data, NaN where a value is missing (inf is refused); its records
        are the slices along the first axis (the rows; the elements of a 1-d
        array). An all-NaN input is data: its result is 0.
    epsilon : float, default=1.0
        In (0, inf]; ``inf`` returns numpy's ``nansum`` of the clipped data.
    bounds : tuple (lower, upper), list of pairs, dict or None, default=None
        The range of the values: a pair of scalars, or one ``(lower, upper)``
        per output of the result (flattened order), in any form of
        :func:`~skdp.utils.check_bounds`. Values outside are clipped. None:
        taken from the present values with a
        :class:`~skdp.exceptions.PrivacyLeakWarning` (not private).
    axis : None, int or tuple of ints, default=None
        Axes reduced (None: all).
    keepdims : bool, default=False
    random_state : None, int, RandomState or Generator, default=None
        Seeds the noise only under skdp's reproducible-noise opt-in.

    Returns
    -------
    float or ndarray

    Notes
    -----
    One Laplace release, per output, of ``S1`` (the sum of ``w = (clip(x) -
    c) / r`` over the present elements; ``c``, ``r`` the midpoint and
    half-width of the output's range) and ``N`` (the count of present
    elements), with ``Delta_1 = 2 E`` (:func:`nan_moments_sensitivity`: a
    present value becoming missing moves ``(S1, N)`` by ``|w| + 1 <= 2``, as
    much as a value moving across the range), ``E`` the elements of one
    record. Then ``N^ = clip(N~, 0, m)`` (``m`` elements per output) and
    ``nansum = N^ c + r clip(S1~, -N^, N^)``: post-processing (without
    present values numpy's ``nansum`` is 0, and the release's centre is 0
    too). Spends ``epsilon`` once, recorded in any active
    :func:`~skdp.accounting.track_budget` before the noise is drawn.

    **Dask input.** As for :func:`sum` (its records the rows, ``axis`` None
    or 0, ``bounds`` declared): each block of rows is checked (no inf) and
    reduced on the workers to its per-output sums of ``w`` (and ``w^2``) and
    counts of present values (at ``epsilon=inf``: counts, sums, means and
    centred sums of squares, merged by Chan's update); only they come back
    for the one release. A block holding inf fails there, before any spend.
    The same for :func:`nanmean`, :func:`nanvar` and :func:`nanstd`.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import tools
    >>> x = np.random.default_rng(0).uniform(0, 10, 1000)
    >>> x[::10] = np.nan
    >>> s = tools.nansum(x, epsilon=1.0, bounds=(0, 10))
    >>> bool(abs(s - np.nansum(x)) < 300)
    True
    """
    red, lower, upper, stats, exact = _nan_release(
        a, epsilon, bounds, axis, keepdims, random_state, "nansum", False
    )
    if exact is not None:
        return red.shape_result(exact[0])
    s1, _, n = stats
    centre, half = (lower + upper) / 2, (upper - lower) / 2
    n = np.clip(n, 0.0, red.m)
    return red.shape_result(n * centre + half * np.clip(s1, -n, n))


def nanmean(a, epsilon=1.0, bounds=None, axis=None, keepdims=False, random_state=None):
    """Differentially private mean of ``a`` over ``axis``, ignoring NaN (pure epsilon).

    Parameters
    ----------
    a : array-like or dask array
        As in :func:`nansum`. An all-NaN input is data: its result is the
        fallback (the range's centre).
    epsilon : float, default=1.0
        In (0, inf]; ``inf`` returns numpy's ``nanmean`` of the clipped data
        (the fallback for an output without present values).
    bounds : tuple (lower, upper), list of pairs, dict or None, default=None
        As in :func:`nansum`.
    axis : None, int or tuple of ints, default=None
    keepdims : bool, default=False
    random_state : None, int, RandomState or Generator, default=None
        Seeds the noise only under skdp's reproducible-noise opt-in.

    Returns
    -------
    float or ndarray

    Notes
    -----
    The release of :func:`nansum` (``S1~``, ``N~`` per output, one Laplace
    vector, ``Delta_1 = 2 E``), then ``N^ = clip(N~, 0, m)`` and ``nanmean =
    c + r clip(S1~ / N^, -1, 1)``: post-processing, inside the range.
    **Fallback:** where ``N^ < MIN_COUNT = 1`` (fewer than one present value
    released, e.g. an all-NaN output) the result is the range's centre ``c``
    (numpy's ``nanmean`` is NaN there, with a RuntimeWarning). Near the truth
    the error is about ``r (eta_1 - mu eta_N) / N`` (``mu = S1 / N``), of
    standard deviation ``sqrt(2) r b sqrt(1 + mu^2) / N``, ``b = 2 E /
    epsilon``: the private count costs at most a factor ``sqrt(2)``. Dask
    input: as for :func:`nansum`.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import tools
    >>> x = np.random.default_rng(0).uniform(0, 10, 10_000)
    >>> x[::10] = np.nan
    >>> m = tools.nanmean(x, epsilon=1.0, bounds=(0, 10))
    >>> bool(abs(m - np.nanmean(x)) < 0.05)
    True
    """
    red, lower, upper, stats, exact = _nan_release(
        a, epsilon, bounds, axis, keepdims, random_state, "nanmean", False
    )
    centre, half = (lower + upper) / 2, (upper - lower) / 2
    if exact is not None:
        return red.shape_result(exact[1])
    s1, _, n = stats
    n = np.clip(n, 0.0, red.m)
    ok = n >= MIN_COUNT
    mean = np.clip(s1 / np.maximum(n, MIN_COUNT), -1.0, 1.0)
    return red.shape_result(np.where(ok, centre + half * mean, centre))


def _nan_variance(a, epsilon, bounds, axis, keepdims, random_state, source):
    red, lower, upper, stats, exact = _nan_release(
        a, epsilon, bounds, axis, keepdims, random_state, source, True
    )
    if exact is not None:
        return red, exact[2]
    s1, s2, n = stats
    half = (upper - lower) / 2
    n = np.clip(n, 0.0, red.m)
    safe = np.maximum(n, MIN_COUNT)
    m1 = np.clip(s1 / safe, -1.0, 1.0)
    v = np.clip(s2 / safe - m1**2, 0.0, 1.0 - m1**2)
    return red, half**2 * np.where(n >= MIN_COUNT, v, 0.0)


def nanvar(a, epsilon=1.0, bounds=None, axis=None, keepdims=False, random_state=None):
    """Differentially private variance of ``a`` over ``axis``, ignoring NaN.

    Parameters
    ----------
    a : array-like or dask array
        As in :func:`nansum`. An all-NaN input is data: its result is the
        fallback (0).
    epsilon : float, default=1.0
        In (0, inf]; ``inf`` returns numpy's ``nanvar`` (``ddof=0``) of the
        clipped data (the fallback for an output without present values).
    bounds : tuple (lower, upper), list of pairs, dict or None, default=None
        As in :func:`nansum`.
    axis : None, int or tuple of ints, default=None
    keepdims : bool, default=False
    random_state : None, int, RandomState or Generator, default=None
        Seeds the noise only under skdp's reproducible-noise opt-in.

    Returns
    -------
    float or ndarray

    Notes
    -----
    **One** Laplace release (pure epsilon) of ``(S1_o, lambda S2_o, N_o)``
    per output, the sums of ``w`` and ``w^2`` over the present elements in
    [-1, 1] units and their count, ``lambda = sqrt(2)`` (the weight of
    :func:`var`), with ``Delta_1 = (2 + lambda) E = 3.414 E``
    (:func:`nan_moments_sensitivity`: a present value at an end of the range
    becoming missing moves ``(S1, lambda S2, N)`` by ``1 + lambda + 1``, more
    than any move within the range, ``g(lambda) = 2.591``). Then ``N^ =
    clip(N~, 0, m)``, ``m1 = clip(S1~ / N^, -1, 1)``, ``v = clip(S2~ / N^ -
    m1^2, 0, 1 - m1^2)`` and ``nanvar = r^2 v``: post-processing.
    **Fallback:** where ``N^ < MIN_COUNT = 1`` the result is 0 (the variance
    of values all at the centre, :func:`nanmean`'s fallback; numpy's is NaN).
    Dask input: as for :func:`nansum`.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import tools
    >>> x = np.random.default_rng(0).uniform(0, 10, 10_000)
    >>> x[::10] = np.nan
    >>> v = tools.nanvar(x, epsilon=1.0, bounds=(0, 10))
    >>> bool(abs(v - np.nanvar(x)) < 1.0)
    True
    """
    red, v = _nan_variance(a, epsilon, bounds, axis, keepdims, random_state, "nanvar")
    return red.shape_result(v)


def nanstd(a, epsilon=1.0, bounds=None, axis=None, keepdims=False, random_state=None):
    """Differentially private standard deviation ignoring NaN: ``sqrt(nanvar)``.

    Parameters and guarantee as in :func:`nanvar` (one release of ``(S1,
    lambda S2, N)`` per output, ``Delta_1 = (2 + lambda) E``, ``epsilon``
    spent once); the square root is post-processing. Fallback 0 where ``N^ <
    1``; ``epsilon=inf``: numpy's ``nanstd`` of the clipped data.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import tools
    >>> x = np.random.default_rng(0).uniform(0, 10, 10_000)
    >>> x[::10] = np.nan
    >>> s = tools.nanstd(x, epsilon=1.0, bounds=(0, 10))
    >>> bool(abs(s - np.nanstd(x)) < 0.2)
    True
    """
    red, v = _nan_variance(a, epsilon, bounds, axis, keepdims, random_state, "nanstd")
    return red.shape_result(np.sqrt(v))
