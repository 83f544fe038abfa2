"""A column's range from its median and a half-width: for small budgets.

Without an envelope, the quantile pair of ``private_bounds`` pays the public
grid's prior over 36 decades at *both* ends: a pair lands beyond the data
with odds about ``(mass beyond / mass near a quartile)^2 exp(-n eps / 8)``,
and where a column's magnitude is tens of times its spread (a test score of
650 +- 20, a depth of 61 +- 1.4) that is still likely at ``n eps`` of a few
hundred. Here one end is located (the median, score gap ``n / 2``) and the
other is a *width*, whose own log-uniform prior does not depend on the
magnitude. On the 53 numeric columns and labels of ``bench_small_data``,
draws more than 30 times too wide or covering under half the rows: 4% at
``n * eps_c = 128`` (pair 32%), 6% at 100 (pair 61%); at 50 both fail often
(55%, pair 88%), and at 180 they are even (4%, pair 3%). The price: a
symmetric range, which clips more of a skewed column's long side, and a
width that collapses when a value holds nearly half the rows (hours worked:
47% at 40). ``private_bounds`` uses it below ``CENTRE_WIDTH_BELOW`` = 256
(it was 160; below 256 the pair's failure bound is vacuous or weak, the
median and half-width's is not: :mod:`~skdp._ranges.reliability`) and the
pair above; it refuses below ``min_n_epsilon(n)`` (about 140-160).
"""

import numpy as np

from skdp._ranges.cells import (
    categorical,
    cell_log_mass,
    draw_in_cells,
    grid_cells,
    pack_cells,
    rank_distance,
)
from skdp._ranges.ranks import quantile_distance

__all__ = [
    "WIDTH_FENCE",
    "centre_log_probabilities",
    "centre_width_cells",
    "centre_width_range",
    "width_candidates",
    "width_log_probabilities",
]

# Half of the column's epsilon for the median, half for the width.
CENTRE_SHARE = 0.5
# The width is the half-width around the median that holds this fraction of
# the rows: 0.6745 standard deviations of a normal column.
HALF_FRACTION = 0.5
# [m - K w, m + K w] with K = 2.698 / 0.6745 = 4: Tukey's fences
# (Q1 - 1.5 IQR, Q3 + 1.5 IQR, at 2.698 sd) for a normal column.
WIDTH_FENCE = 4.0


def width_candidates(grid, log_weight):
    """The widths: the non-negative candidates of the grid (0 included), with
    their log base weights (log-uniform in the width)."""
    keep = grid >= 0
    return grid[keep], log_weight[keep]


def centre_log_probabilities(sorted_x, epsilon, grid, log_weight):
    """Log-probabilities of the median's exponential mechanism: score minus
    the rank distance from ``n / 2`` (sensitivity 1), ``CENTRE_SHARE *
    epsilon``: ``P(g) ∝ mu_g exp(eps_m u(g) / 2)``."""
    d = quantile_distance(sorted_x, grid, 0.5)
    logits = log_weight - 0.5 * CENTRE_SHARE * epsilon * d
    return logits - np.logaddexp.reduce(logits)


def width_log_probabilities(sorted_x, centre, epsilon, widths, width_log_weight):
    """Log-probabilities of the width's exponential mechanism given the
    released ``centre``: score minus the distance of ``HALF_FRACTION * n``
    from ``[#{|x - m| < w}, #{|x - m| <= w}]``. Replacing one row moves both
    counts by at most 1 (``m`` is public), so the score has sensitivity 1;
    ``(1 - CENTRE_SHARE) * epsilon``."""
    r = np.sort(np.abs(sorted_x - centre))
    d = quantile_distance(r, widths, HALF_FRACTION)
    logits = width_log_weight - 0.5 * (1.0 - CENTRE_SHARE) * epsilon * d
    return logits - np.logaddexp.reduce(logits)


def centre_width_range(x, epsilon, grid, log_weight, rng):
    """``(m - K w, m + K w)``: the median ``m`` and the half-width ``w``
    released one after the other (``epsilon``-DP in total, basic
    composition), ``K = WIDTH_FENCE``. ``x`` already clipped to the grid's
    span (a data-independent map)."""
    sorted_x = np.sort(np.asarray(x, dtype=np.float64))
    log_p = centre_log_probabilities(sorted_x, epsilon, grid, log_weight)
    centre = float(grid[np.argmax(log_p + rng.gumbel(size=log_p.size))])
    widths, width_log_weight = width_candidates(grid, log_weight)
    log_p = width_log_probabilities(sorted_x, centre, epsilon, widths, width_log_weight)
    width = float(widths[np.argmax(log_p + rng.gumbel(size=log_p.size))])
    return centre - WIDTH_FENCE * width, centre + WIDTH_FENCE * width


def _draw_on_cells(S, target, scale, grid, log_weight, prefix, rng):
    """Per column of the sorted ``S`` (n, k): a candidate index drawn with
    ``P(g) ∝ mu_g exp(-scale d(g))``, ``d`` the rank distance of ``g`` from
    rank ``target`` (per column), on cells (:mod:`skdp._ranges.cells`)."""
    lo, hi, below, upto = pack_cells(*grid_cells(S, grid))
    logits = cell_log_mass(lo, hi, log_weight, prefix) - scale[:, None] * (
        rank_distance(below, upto, target[:, None])
    )
    c = categorical(logits, rng)
    rows = np.arange(S.shape[1])
    return draw_in_cells(lo[rows, c], hi[rows, c], prefix, rng)


def centre_width_cells(S, epsilon, grid, log_weight, prefix, zero, rng):
    """:func:`centre_width_range` of every column of the sorted ``S`` (n, k)
    at once, ``epsilon`` per column: the same two exponential mechanisms,
    drawn on cells. ``prefix``: :func:`~skdp._ranges.cells.prefix_mass` of
    ``log_weight``; ``zero``: the index of 0 in ``grid`` (the widths are
    ``grid[zero:]``)."""
    n, k = S.shape
    epsilon = np.asarray(epsilon, dtype=np.float64)
    half_n = np.full(k, 0.5 * n)
    c = _draw_on_cells(
        S, half_n, 0.5 * CENTRE_SHARE * epsilon, grid, log_weight, prefix, rng
    )
    centre = grid[c]
    R = np.sort(np.abs(S - centre), axis=0)
    widths, width_log_weight = grid[zero:], log_weight[zero:]
    w = _draw_on_cells(
        R,
        np.full(k, HALF_FRACTION * n),
        0.5 * (1.0 - CENTRE_SHARE) * epsilon,
        widths,
        width_log_weight,
        prefix[zero:],  # only differences of it are used
        rng,
    )
    width = widths[w]
    return centre - WIDTH_FENCE * width, centre + WIDTH_FENCE * width
