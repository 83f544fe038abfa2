"""The per-column range release as it was before issue 35 (one column at a
time, the exponential mechanisms over all 324,001 candidates): kept here only
as the "before" of ``bench_statistics_speed``'s private-range timing. Same
mechanisms and law as :func:`skdp.preprocessing.private_bounds` (which draws
them on cells, many columns at once); open-grid columns only."""

import numpy as np

from skdp._ranges.centre_width import centre_width_range
from skdp._ranges.grid import (
    CENTRE_WIDTH_BELOW,
    _positive_width,
    candidate_grid,
    fence_factor,
    quantile_level,
    sample_quantile_pair,
)
from skdp._ranges.ranks import quantile_distance


def column_range(x, epsilon, grid, log_weight, rng):
    """``(lower, upper)`` of one column (no envelope), as released before."""
    q = quantile_level(x.size, epsilon)
    if x.size * epsilon < CENTRE_WIDTH_BELOW:
        return _positive_width(
            *centre_width_range(x, epsilon, grid, log_weight, rng), grid
        )
    sorted_x = np.sort(x)
    d_low = quantile_distance(sorted_x, grid, q)
    d_high = quantile_distance(sorted_x, grid, 1.0 - q)
    i, j = sample_quantile_pair(d_low, d_high, epsilon, log_weight, rng)
    low, high = sorted((float(grid[i]), float(grid[j])))
    k = fence_factor(q)
    width = high - low
    return _positive_width(low - k * width, high + k * width, grid)


def per_column_ranges(X, epsilon, rng):
    """Every column's range with ``epsilon / d`` each, one column at a time."""
    grid, log_weight = candidate_grid()
    span = float(grid[-1])
    eps = epsilon / X.shape[1]
    out = [
        column_range(np.clip(X[:, j], -span, span), eps, grid, log_weight, rng)
        for j in range(X.shape[1])
    ]
    return np.array(out).T
