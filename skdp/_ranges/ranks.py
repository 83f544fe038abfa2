"""How far, in ranks, a candidate is from a quantile (the score of every
range release: the quantile pair and the median and half-width)."""

import numpy as np

__all__ = ["counts_distance", "quantile_distance"]


def quantile_distance(sorted_x, grid, level):
    """Distance in ranks of each candidate from the ``level`` quantile.

    ``d(g) = dist(level * n, [#{x < g}, #{x <= g}])``: 0 when ``g`` is a
    ``level``-quantile (ties included: a candidate equal to a value that many
    rows share is exact for every level those rows cover). Replacing one row
    moves both counts by at most 1, hence ``d`` by at most 1 (the distance from
    a point to an interval is 1-Lipschitz in each end).
    """
    below = np.searchsorted(sorted_x, grid, side="left")
    upto = np.searchsorted(sorted_x, grid, side="right")
    return counts_distance(below, upto, sorted_x.size, level)


def counts_distance(below, upto, n, level):
    """:func:`quantile_distance` from the counts ``below = #{x < g}`` and
    ``upto = #{x <= g}`` of ``n`` values (sums over rows: any split of the
    rows gives the same integers)."""
    target = level * n
    return np.maximum(0.0, np.maximum(below - target, target - upto))
