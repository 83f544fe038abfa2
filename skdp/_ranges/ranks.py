"""How far, in ranks, a candidate is from a quantile (the score of every
range release: the quantile pair and the median and half-width)."""

import numpy as np

__all__ = ["quantile_distance"]


def quantile_distance(sorted_x, grid, level):
    """Distance in ranks of each candidate from the ``level`` quantile.

    ``d(g) = dist(level * n, [#{x < g}, #{x <= g}])``: 0 when ``g`` is a
    ``level``-quantile (ties included: a candidate equal to a value that many
    rows share is exact for every level those rows cover). Replacing one row
    moves both counts by at most 1, hence ``d`` by at most 1 (the distance from
    a point to an interval is 1-Lipschitz in each end).
    """
    n = sorted_x.size
    below = np.searchsorted(sorted_x, grid, side="left")
    upto = np.searchsorted(sorted_x, grid, side="right")
    target = level * n
    return np.maximum(0.0, np.maximum(below - target, target - upto))
