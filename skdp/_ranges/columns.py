"""What a range release reads of a column: counts of rows below public points.

Every score of the range releases (the quantile pair, the median and
half-width, the looseness test's windows) is a function of ``n`` and of the
counts ``#{x < g}`` and ``#{x <= g}`` at public points ``g`` (or of ``|x - m|``
for a released centre ``m``). Counts are sums over rows, exact in any order, so
a column held in memory (:class:`SortedColumn`) and one spread over the blocks
of a dask collection (:func:`dask_columns`) give the same integers, hence the
same release for the same noise.
"""

import functools

import numpy as np

__all__ = ["CountedColumn", "SortedColumn", "as_column", "dask_columns"]


class SortedColumn:
    """A column in memory: counts by binary search in its sorted values."""

    def __init__(self, x):
        self.values = np.sort(np.asarray(x, dtype=np.float64))
        self.n = self.values.size

    def counts(self, points):
        """``(#{x < g}, #{x <= g})`` for every ``g`` in ``points``."""
        return (
            np.searchsorted(self.values, points, side="left"),
            np.searchsorted(self.values, points, side="right"),
        )

    def abs_counts(self, centre, points):
        """``(#{|x - centre| < w}, #{|x - centre| <= w})`` for ``w`` in ``points``."""
        r = np.sort(np.abs(self.values - centre))
        return (
            np.searchsorted(r, points, side="left"),
            np.searchsorted(r, points, side="right"),
        )


def as_column(x):
    """``x`` if it is a column object, else a :class:`SortedColumn` of it."""
    return x if hasattr(x, "counts") else SortedColumn(x)


class CountedColumn:
    """A column known only by its counts at prepared points (dask input).

    ``prepared``: a list of ``(points, below, upto)``; ``counts`` answers only
    for those points. ``abs_counts`` runs ``abs_pass(centre, points)`` (one
    more pass over the blocks, for the half-width after a released median).
    """

    def __init__(self, n, prepared, abs_pass):
        self.n = n
        self.prepared = prepared
        self.abs_pass = abs_pass

    def counts(self, points):
        points = np.asarray(points, dtype=np.float64)
        for prepared, below, upto in self.prepared:
            if prepared.shape == points.shape and np.array_equal(prepared, points):
                return below, upto
        raise RuntimeError("counts at points that were not prepared")  # a bug

    def abs_counts(self, centre, points):
        return self.abs_pass(centre, np.asarray(points, dtype=np.float64))


def _finite_block(block):
    X = np.asarray(block, dtype=np.float64)
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite (no NaN or infinity) for private bounds.")
    return X


def _block_counts(block, *, plan):
    """Per planned column: its clipped values' counts at each point set."""
    X = _finite_block(block)
    out = {}
    for j, (lo, hi, point_sets) in plan.items():
        col = SortedColumn(np.clip(X[:, j], lo, hi))
        out[j] = [
            np.stack(col.counts(points)).astype(np.int64) for points in point_sets
        ]
    return out


def _block_abs_counts(block, *, j, lo, hi, centre, points):
    X = _finite_block(block)
    col = SortedColumn(np.clip(X[:, j], lo, hi))
    return np.stack(col.abs_counts(centre, points)).astype(np.int64)


def _merge_counts(*parts):
    out = {}
    for j in parts[0]:
        out[j] = [sum(p[j][i] for p in parts) for i in range(len(parts[0][j]))]
    return out


def _merge_arrays(*parts):
    return sum(parts[1:], parts[0])


def dask_columns(blocks, n, plan):
    """The planned columns of dask ``blocks``, counted on the workers.

    Parameters
    ----------
    blocks : dask array of shape (n, d), whole-row blocks
    n : int
    plan : dict
        ``{j: (lo, hi, [points, ...])}``: column ``j`` is clipped to ``[lo,
        hi]`` (a data-independent map) and counted at each point set.

    Returns
    -------
    dict
        ``{j: CountedColumn}``. One pass over the blocks for all columns (each
        block's values checked finite there); a column's ``abs_counts`` makes
        one more pass when called.
    """
    from skdp.utils.dask_rows import reduce_rows

    if not plan:
        return {}
    merged = reduce_rows(
        blocks, functools.partial(_block_counts, plan=plan), _merge_counts
    )
    out = {}
    for j, (lo, hi, point_sets) in plan.items():

        def abs_pass(centre, points, j=j, lo=lo, hi=hi):
            fn = functools.partial(
                _block_abs_counts, j=j, lo=lo, hi=hi, centre=centre, points=points
            )
            below, upto = reduce_rows(blocks, fn, _merge_arrays)
            return below, upto

        prepared = [
            (np.asarray(points, dtype=np.float64), counts[0], counts[1])
            for points, counts in zip(point_sets, merged[j])
        ]
        out[j] = CountedColumn(n, prepared, abs_pass)
    return out
