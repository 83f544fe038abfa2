"""The cell statistics of :class:`~skdp.cluster.PrivateKMeans`, per block of rows:
in memory, and on dask workers (merged there).

Every release of the fit is the vector ``(mu n_j, S_j)_j`` of a partition into
cells that reads no data (the coreset's random tree, or the nearest of the
current public centres). :class:`MemoryRows` computes it from the rows mapped to
[-1, 1] in this process; :class:`DaskRows` maps, assigns and sums each block of
a dask array on its worker (the same elementwise operations, so every row
falls in the same cell), merges the per-block integer counts and float sums
there, and brings back only the ``(cells, 1 + d)`` table.
"""

import functools

import numpy as np

from skdp._trees import apply_tree
from skdp._trees_dask import validation_pass
from skdp.utils.dask_rows import reduce_rows

__all__ = [
    "DaskRows",
    "MemoryRows",
    "block_cell_stats",
    "block_labels",
    "merge_cell_stats",
    "statistics_vector",
    "unit_rows",
]


def _assign(W, centres):
    from skdp.cluster._kmeans import _assign

    return _assign(W, centres)


def unit_rows(X, lower, upper, active):
    """The rows clipped to the box and mapped to [-1, 1] (active features)."""
    centre, half = (lower + upper) / 2, (upper - lower) / 2
    return (np.clip(X, lower, upper)[:, active] - centre[active]) / half[active]


def statistics_vector(counts, sums, count_weight):
    """``(mu n_j)_j`` then ``(S_j)_j`` row-major, as ``kmeans_statistics``."""
    counts = np.asarray(counts).astype(np.float64)
    return np.concatenate([count_weight * counts, sums.ravel()])


def _cells(W, scale, partition):
    kind, a, b = partition
    if kind == "tree":
        return apply_tree(W, a, b)
    return _assign(W * scale, a * scale)


def block_cell_stats(block, *, lower, upper, active, scale, n_cells, partition,
                     previous=None):  # fmt: skip
    """``(counts, sums, changed)`` of one block of raw rows, on its worker.

    ``partition`` is ``("tree", feature, threshold)`` or ``("centres",
    centres, None)`` (centres in [-1, 1] units); ``counts`` are int64 per
    cell, ``sums`` the sums of the mapped rows per cell (added row by row in
    the block's order, as in memory), ``changed`` the number of rows whose
    nearest centre differs from their nearest ``previous`` centre (0 without
    ``previous``).
    """
    W = unit_rows(np.asarray(block, dtype=np.float64), lower, upper, active)
    cells = _cells(W, scale, partition)
    counts = np.bincount(cells, minlength=n_cells).astype(np.int64)
    sums = np.zeros((n_cells, W.shape[1]))
    np.add.at(sums, cells, W)
    changed = 0
    if previous is not None:
        changed = int(np.count_nonzero(_assign(W * scale, previous * scale) != cells))
    return counts, sums, changed


def merge_cell_stats(*parts):
    """Counts and ``changed`` added exactly (integers), sums in float."""
    return tuple(functools.reduce(np.add, items) for items in zip(*parts, strict=True))


def block_labels(block, *, lower, upper, active, scale, centres):
    """Nearest centre of each raw row of one block (``labels_`` on dask)."""
    W = unit_rows(np.asarray(block, dtype=np.float64), lower, upper, active)
    return _assign(W * scale, centres * scale)


class MemoryRows:
    """The cell statistics of rows in this process (``W`` mapped to [-1, 1])."""

    def __init__(self, W, scale):
        self.W, self.scale = W, scale
        self._labels = None

    def tree_statistics(self, feature, threshold, n_cells, mu):
        from skdp.cluster._kmeans import kmeans_statistics

        cells = apply_tree(self.W, feature, threshold)
        return kmeans_statistics(self.W, cells, n_cells, mu)

    def lloyd_statistics(self, centres, mu, compare):
        """The release vector of the clusters of ``centres``, and the number
        of rows whose cluster changed since the last call (None when not
        ``compare`` or at the first call)."""
        from skdp.cluster._kmeans import kmeans_statistics

        labels = _assign(self.W * self.scale, centres * self.scale)
        changed = None
        if compare and self._labels is not None:
            changed = int(np.count_nonzero(labels != self._labels))
        self._labels = labels
        return kmeans_statistics(self.W, labels, centres.shape[0], mu), changed

    def labels(self, centres):
        return _assign(self.W * self.scale, centres * self.scale)


class DaskRows:
    """The cell statistics of a dask array of raw rows, reduced on the workers.

    Made by :meth:`validated`, which first checks every block (a full pass on
    the workers: finite, 2-D, ``d`` columns) and raises before the caller
    records any spend. Each statistic is then one more pass.
    """

    def __init__(self, blocks, lower, upper, active, scale):
        self.blocks, self.scale = blocks, scale
        self._map = dict(lower=lower, upper=upper, active=active, scale=scale)
        self._previous = None

    @classmethod
    def validated(cls, blocks, n, lower, upper, active, scale):
        validation_pass(blocks, n, lower.size)
        return cls(blocks, lower, upper, active, scale)

    def statistics(self, n_cells, partition, previous=None):
        """``(counts, sums, changed)`` summed over the blocks on the workers."""
        reduce_block = functools.partial(
            block_cell_stats,
            n_cells=n_cells,
            partition=partition,
            previous=previous,
            **self._map,
        )
        return reduce_rows(self.blocks, reduce_block, merge_cell_stats)

    def tree_statistics(self, feature, threshold, n_cells, mu):
        counts, sums, _ = self.statistics(n_cells, ("tree", feature, threshold))
        return statistics_vector(counts, sums, mu)

    def lloyd_statistics(self, centres, mu, compare):
        previous = self._previous if compare else None
        counts, sums, changed = self.statistics(
            centres.shape[0], ("centres", centres, None), previous
        )
        self._previous = centres
        stats = statistics_vector(counts, sums, mu)
        return stats, (None if previous is None else int(changed))

    def labels(self, centres):
        """The nearest centre of every row: a lazy dask array (not computed)."""
        return self.blocks.map_blocks(
            functools.partial(block_labels, centres=centres, **self._map),
            drop_axis=1,
            dtype=np.intp,
        )
