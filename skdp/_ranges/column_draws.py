"""Every column's range drawn on cells (:mod:`skdp._ranges.cells`), many
columns at once: the open grid's quantile pairs and medians and half-widths,
and one envelope column's pair or "keep the envelope"."""

import functools
import math

import numpy as np
from scipy import stats

from skdp._ranges.cells import (
    categorical,
    cell_log_mass,
    draw_in_cells,
    grid_cells,
    pack_cells,
    prefix_mass,
    rank_distance,
    sample_pair_cells,
)
from skdp._ranges.centre_width import centre_width_cells
from skdp._ranges.grid import (
    CENTRE_WIDTH_BELOW,
    KAPPA,
    Q_MAX,
    Q_MIN,
    TUKEY_Z,
    _fallback_log_weight,
    _positive_width,
    candidate_grid,
    envelope_grid,
    fence_factor,
    quantile_level,
)
from skdp._ranges.ranks import quantile_distance

__all__ = ["envelope_range", "open_grid_ranges", "snap_to_grid"]

# the cells of one chunk of columns: at most this many (rows of cells times
# cells per row), so that a chunk's arrays stay near 100 MB
CHUNK_CELLS = 2**21


@functools.cache
def _grid_and_prefix():
    """:func:`candidate_grid`, its prefix masses and the index of 0 (built
    once; read-only)."""
    grid, log_weight = candidate_grid()
    prefix = prefix_mass(log_weight)
    for a in (grid, log_weight, prefix):
        a.flags.writeable = False
    return grid, log_weight, prefix, int(np.searchsorted(grid, 0.0))


def snap_to_grid(values, grid):
    """Each value replaced by its nearest candidate of the sorted ``grid`` (the
    lower one at a midpoint), after clipping to the grid's span.

    A per-row public map, so every rank-distance bound holds unchanged for the
    snapped rows. It matters for ties: a block of rows sharing a value that is
    not a candidate (a top-coded ln wage, 7.77239...) would leave every
    candidate near the quantile it holds many ranks away, as far as the
    candidates beyond the data, whose base mass is far larger: the pair then
    lands on absurd ends (2% of draws on CPS1988's label at n * eps_c =
    9,854, ends at +-1e7). Snapped, the block sits on one candidate, which
    is then exact for every level the block covers.
    """
    v = np.clip(np.asarray(values, dtype=np.float64), grid[0], grid[-1])
    i = np.clip(np.searchsorted(grid, v), 1, grid.size - 1)
    left, right = grid[i - 1], grid[i]
    return np.where(v - left <= right - v, left, right)


def _pair_cells(S, epsilon, q, grid, log_weight, prefix, rng, fallback=None):
    """One quantile-pair draw per column of the sorted ``S`` (n, k): the grid
    indices ``(a, b)`` of its ends (unordered) and whether the draw kept the
    envelope (``fallback``: the envelope's log-weight per column, or None).
    ``epsilon`` and ``q`` per column, finite."""
    n, k = S.shape
    lo, hi, below, upto = pack_cells(*grid_cells(S, grid))
    log_mass = cell_log_mass(lo, hi, log_weight, prefix)
    half = 0.5 * epsilon[:, None]
    la = -half * rank_distance(below, upto, (q * n)[:, None])
    lb = -half * rank_distance(below, upto, ((1.0 - q) * n)[:, None])
    i, j, kept = sample_pair_cells(la, lb, log_mass, rng, log_fallback=fallback)
    rows = np.arange(k)
    a = draw_in_cells(lo[rows, i], hi[rows, i], prefix, rng)
    b = draw_in_cells(lo[rows, j], hi[rows, j], prefix, rng)
    return a, b, kept


def _exact_pair_cells(S, q, grid, log_weight, prefix, rng):
    """``epsilon = inf`` (no privacy): each end at its exact quantile, the
    weighted choice among the candidates at distance 0."""
    n, k = S.shape
    lo, hi, below, upto = grid_cells(S, grid)
    log_mass = cell_log_mass(lo, hi, log_weight, prefix)
    ends = []
    for level in (q * n, (1.0 - q) * n):
        dist = rank_distance(below, upto, level[:, None])
        dist = np.where(hi > lo, dist, np.inf)
        best = dist == dist.min(axis=1, keepdims=True)
        c = categorical(np.where(best, log_mass, -np.inf), rng)
        ends.append(
            draw_in_cells(lo[np.arange(k), c], hi[np.arange(k), c], prefix, rng)
        )
    return ends


def _fenced(a, b, q, grid):
    """``[a - k (b - a), b + k (b - a)]`` of the sorted ends, ``k = k(q)``."""
    low, high = np.minimum(a, b), np.maximum(a, b)
    z = stats.norm.ppf(1.0 - np.asarray(q, dtype=np.float64))
    k = (TUKEY_Z - z) / (2.0 * z)  # fence_factor, for every column
    width = high - low
    return low - k * width, high + k * width


def _chunks(columns, n):
    """Groups of column indices whose cells fit ``CHUNK_CELLS``."""
    size = max(1, CHUNK_CELLS // (2 * n + 1))
    return [columns[i : i + size] for i in range(0, len(columns), size)]


def open_grid_ranges(X, epsilon, rng):
    """``(lower, upper, q)`` of every column of ``X`` (n, m), released on the
    public grid :func:`candidate_grid` with ``epsilon[c]`` each: a quantile
    pair, or a median and half-width where ``n * epsilon[c]`` is below
    ``CENTRE_WIDTH_BELOW`` (see :func:`private_bounds`, Notes). The columns
    are drawn together, on cells (:mod:`skdp._ranges.cells`), in chunks."""
    grid, log_weight, prefix, zero = _grid_and_prefix()
    n, m = X.shape
    epsilon = np.asarray(epsilon, dtype=np.float64)
    lower, upper = np.empty(m), np.empty(m)
    with np.errstate(divide="ignore"):
        q = np.clip(KAPPA / (n * epsilon), Q_MIN, Q_MAX)  # quantile_level
    small = n * epsilon < CENTRE_WIDTH_BELOW
    exact = np.isinf(epsilon)
    groups = (
        ("pair", np.flatnonzero(~small & ~exact)),
        ("exact", np.flatnonzero(exact)),
        ("centre", np.flatnonzero(small)),
    )
    for kind, columns in groups:
        for cols in _chunks(columns, n):
            S = np.sort(snap_to_grid(X[:, cols], grid), axis=0)
            if kind == "centre":
                low, high = centre_width_cells(
                    S, epsilon[cols], grid, log_weight, prefix, zero, rng
                )
            else:
                if kind == "pair":
                    a, b, _ = _pair_cells(
                        S, epsilon[cols], q[cols], grid, log_weight, prefix, rng
                    )
                else:
                    a, b = _exact_pair_cells(S, q[cols], grid, log_weight, prefix, rng)
                low, high = _fenced(grid[a], grid[b], q[cols], grid)
            lower[cols], upper[cols] = _positive_widths(low, high, grid)
    return lower, upper, q


def envelope_range(x, epsilon, lower, upper, rng):
    """``(lower, upper, q)`` of one column clipped to its envelope ``[lower,
    upper]``: a quantile pair on :func:`envelope_grid`'s candidates, or "keep
    the envelope" (see :func:`private_bounds`, Notes)."""
    grid, log_weight = envelope_grid(lower, upper, base=_grid_and_prefix()[:2])
    prefix = prefix_mass(log_weight)
    n = x.size
    q = quantile_level(n, epsilon)
    S = np.sort(snap_to_grid(x, grid))[:, None]
    if math.isinf(epsilon):
        a, b = _exact_pair_cells(S, np.array([q]), grid, log_weight, prefix, rng)
        kept = np.array([False])
    else:
        score = -max(
            float(quantile_distance(S[:, 0], grid[:1], q)[0]),
            float(quantile_distance(S[:, 0], grid[-1:], 1.0 - q)[0]),
        )
        fallback = np.array([_fallback_log_weight(log_weight, epsilon, score)])
        a, b, kept = _pair_cells(
            S,
            np.array([epsilon]),
            np.array([q]),
            grid,
            log_weight,
            prefix,
            rng,
            fallback=fallback,
        )
    low, high = sorted((float(grid[a[0]]), float(grid[b[0]])))
    if kept[0] or low == high:
        # a pair that is one value says the column is mostly that value, not
        # where the rest lies (capital gains: 92% zeros): keep the envelope
        return lower, upper, q
    k = fence_factor(q)
    width = high - low
    return max(low - k * width, lower), min(high + k * width, upper), q


def _positive_widths(low, high, grid):
    """:func:`_positive_width` of every range."""
    low, high = np.asarray(low, float).copy(), np.asarray(high, float).copy()
    for c in np.flatnonzero(~(high > low)):
        low[c], high[c] = _positive_width(low[c], high[c], grid)
    return low, high
