"""The per-class sums of :class:`~skdp.naive_bayes.PrivateGaussianNB`, per
block of rows: in memory, and on dask workers (merged there)."""

import functools

import numpy as np
from sklearn.utils import check_array

from skdp._moments import Moments
from skdp.utils.dask_rows import block_codes, reduce_rows

__all__ = [
    "batch_class_stats",
    "block_class_stats",
    "class_sums",
    "dask_class_stats",
    "exact_moments",
    "from_moments",
    "merge_class_stats",
    "weighted",
]


def class_sums(W, codes, n_classes):
    """``(n_k, S1_k, S2_k)``: integer counts, sums and sums of squares per class."""
    counts = np.bincount(codes, minlength=n_classes)
    d = W.shape[1]
    s1 = np.zeros((n_classes, d))
    s2 = np.zeros((n_classes, d))
    for k in range(n_classes):
        rows = W[codes == k]
        s1[k] = rows.sum(axis=0)
        s2[k] = np.einsum("ij,ij->j", rows, rows)
    return counts, s1, s2


def weighted(counts, s1, s2, count_weight, moment_weight):
    return np.concatenate(
        [
            count_weight * counts.astype(np.float64),
            s1.ravel(),
            moment_weight * s2.ravel(),
        ]
    )


def block_class_stats(block, *, lower, upper, n_classes, exact):
    """One block of ``[X | code]`` rows reduced on a worker (validated here).

    Private: ``(n_k, S1_k, S2_k)`` of the features mapped to [-1, 1], the
    counts as integers (exact in any order). ``exact`` (``epsilon=inf``): the
    per-class and overall :class:`~skdp._moments.Moments`
    of the clipped features (merged by Chan's update).
    """
    block = check_array(block, dtype=np.float64, ensure_min_samples=0)
    X, codes = block[:, :-1], block[:, -1].astype(np.intp)
    return batch_class_stats(
        X, codes, lower=lower, upper=upper, n_classes=n_classes, exact=exact
    )


def batch_class_stats(X, codes, *, lower, upper, n_classes, exact):
    """The statistic of validated rows ``X`` with class indices ``codes``:
    :func:`class_sums` of the features mapped to [-1, 1], or (``exact``) the
    :func:`exact_moments` of the clipped features."""
    clipped = np.clip(X, lower, upper)
    if not exact:
        centre, half = (lower + upper) / 2, (upper - lower) / 2
        safe = np.where(half > 0, half, 1.0)
        W = np.where(half > 0, (clipped - centre) / safe, 0.0)
        return class_sums(W, codes, n_classes)
    return exact_moments(clipped, codes, n_classes)


def exact_moments(clipped, codes, n_classes):
    """Per-class and overall moments of the clipped rows (``epsilon=inf``)."""

    def moments(rows):
        if rows.shape[0] == 0:
            return Moments(0)
        return Moments(
            rows.shape[0], mean=rows.mean(axis=0), m2=rows.var(axis=0) * rows.shape[0]
        )

    return [moments(clipped[codes == k]) for k in range(n_classes)] + [moments(clipped)]


def from_moments(moments, centre):
    """``(counts, theta, var, overall var)`` from merged moments (``epsilon=inf``)."""
    *per_class, total = moments
    counts = np.array([m.n for m in per_class], dtype=np.float64)
    theta = np.tile(centre, (len(per_class), 1))
    var = np.zeros_like(theta)
    for k, m in enumerate(per_class):
        if m.n:
            theta[k] = m.mean
            var[k] = m.m2 / m.n
    return counts, theta, var, total.m2 / total.n


def merge_class_stats(*parts):
    out = list(parts[0])
    for part in parts[1:]:
        out = [a + b for a, b in zip(out, part, strict=True)]
    return tuple(out) if isinstance(parts[0], tuple) else out


def dask_class_stats(X, y, classes, lower, upper, *, exact):
    """:func:`block_class_stats` of dask ``X`` (whole-row blocks) and labels
    ``y``, computed and merged on the workers; only the merged statistic
    returns. The labels become class codes block by block (checked there) and
    a last column of ``X`` (dask aligns the two blocks' rows)."""
    import dask.array as da

    codes = y.map_blocks(
        functools.partial(block_codes, classes=classes), dtype=np.float64
    )
    rows = da.concatenate([X, codes[:, None]], axis=1)
    reduce_block = functools.partial(
        block_class_stats,
        lower=lower,
        upper=upper,
        n_classes=classes.size,
        exact=exact,
    )
    return reduce_rows(rows, reduce_block, merge_class_stats)
