"""The range releases' exponential mechanisms on cells, for many columns at once.

Every score of a range release (:func:`~skdp._ranges.ranks.quantile_distance`:
the rank distance of a candidate from a quantile) depends on a candidate ``g``
only through the counts ``#{x < g}`` and ``#{x <= g}``. Those are constant on
each **cell** of the public grid: the candidates strictly between two
consecutive distinct data values, or equal to one data value. A column of
``n`` rows cuts the grid into at most ``2 n + 1`` cells (many empty), so an
exponential mechanism over the ``G`` = 324,001 candidates is the same
mechanism over the cells, each weighing the base mass of its candidates,
followed by a candidate drawn inside the chosen cell in proportion to its
base mass. The cells of ``k`` columns are arrays of shape ``(k, 2 n + 1)``,
built with one ``searchsorted`` of the sorted data into the grid: no loop
over columns, no pass over the whole grid per column.

The pair of quantiles ``P(i, j) ∝ mu_i mu_j min(w_i, v_j)`` is drawn by the
**layer decomposition** ``min(w, v) = ∫_0^∞ 1[s < w] 1[s < v] ds``: sort the
``2 C`` values ``w_i, v_j`` of a row, so that between two consecutive ones
``u_(m+1) < s < u_(m)`` the set of cells with ``w_i > s`` (and of those with
``v_j > s``) is fixed; draw the layer ``m`` with probability ``∝ (u_(m) -
u_(m+1)) A_m B_m`` (``A_m``, ``B_m`` the base masses of those sets), then
``i`` and ``j`` independently in proportion to ``mu`` inside them. Summing
over layers, ``P(i, j) ∝ mu_i mu_j sum_{m: u_(m) <= min(w_i, v_j)} (u_(m) -
u_(m+1)) = mu_i mu_j min(w_i, v_j)``: the exact law, with sorts and cumulative
sums along rows only.

Floating point: the draws are inverse CDFs of float64 cumulative weights
(each row's relative to its largest), as exact as a Gumbel-max draw in log
space; a cell's base mass is a difference of float64 prefix sums of the
grid's weights and the candidate inside a cell is drawn by inverting them,
which moves a candidate's probability by at most ``ulp(84) / min mu`` ≈
1.4e-10 relative (84 is the grid's total mass, 1e-4 its lightest
candidate), a factor ``exp(2.8e-10)`` on any privacy ratio.
"""

import numpy as np
from scipy import special

__all__ = [
    "categorical",
    "cell_log_mass",
    "draw_in_cells",
    "grid_cells",
    "pack_cells",
    "prefix_mass",
    "rank_distance",
    "sample_pair_cells",
]


def prefix_mass(log_weight):
    """``P[i] = sum_{g < i} exp(log_weight[g])``, shape ``(G + 1,)``."""
    out = np.empty(log_weight.size + 1)
    out[0] = 0.0
    np.cumsum(np.exp(log_weight), out=out[1:])
    return out


def grid_cells(sorted_columns, grid):
    """The cells of ``grid`` that each column's values cut it into.

    Parameters
    ----------
    sorted_columns : ndarray of shape (n, k)
        ``k`` columns, each sorted ascending.
    grid : ndarray of shape (G,)
        The candidates, sorted ascending, distinct.

    Returns
    -------
    lo, hi : ndarray of int, shape (k, 2 n + 1)
        Cell ``c`` of a column holds the candidates ``grid[lo:hi]`` (empty if
        ``lo == hi``). In order: the candidates below every value; then for
        each sorted value ``x_(t)`` the candidate equal to it (empty unless
        ``x_(t)`` is on the grid and ``t`` is its first row) and the
        candidates strictly between it and the next larger value.
    below, upto : ndarray of shape (k, 2 n + 1)
        ``#{x < g}`` and ``#{x <= g}`` for every ``g`` of the cell (any value
        for an empty cell).
    """
    S = np.asarray(sorted_columns, dtype=np.float64)
    n, k = S.shape
    St = np.ascontiguousarray(S.T)  # (k, n): each row's queries ascending
    left = np.searchsorted(grid, St, side="left")
    # the grid's values are distinct: one more where the value is on it
    right = left + (grid[np.minimum(left, grid.size - 1)] == St)
    bounds = np.empty((k, 2 * n + 2), dtype=np.intp)
    bounds[:, 0] = 0
    bounds[:, 1:-1:2] = left
    bounds[:, 2:-1:2] = right
    bounds[:, -1] = grid.size
    # a repeated value's cells collapse to empty ones
    np.maximum.accumulate(bounds, axis=1, out=bounds)
    rows = np.arange(1, n + 1, dtype=np.float64)
    # #{x <= x_(t)}: the end of t's run of ties (for t the first of its run)
    last = np.ones((n, k), dtype=bool)
    last[:-1] = S[1:] != S[:-1]
    ends = np.where(last, rows[:, None], float(n))
    ends = np.minimum.accumulate(ends[::-1], axis=0)[::-1].T  # (k, n)
    below = np.empty((k, 2 * n + 1))
    upto = np.empty((k, 2 * n + 1))
    below[:, 0] = upto[:, 0] = 0.0
    below[:, 1::2] = rows - 1.0  # the value's cell: x_(t) itself
    upto[:, 1::2] = ends
    below[:, 2::2] = upto[:, 2::2] = rows  # strictly above x_(t)
    return bounds[:, :-1], bounds[:, 1:], below, upto


def pack_cells(lo, hi, below, upto):
    """The non-empty cells of every row moved to the front, in order, and
    the rows cut to the most any row has (the others padded with empty
    cells, which no draw can choose). The draws only see the cells' masses
    and counts, so this changes nothing but the work: a column of ``n``
    rows has ``2 n + 1`` cells, of which those holding a candidate are often
    far fewer (about a fifth for 10,000 rows of a normal column)."""
    nonempty = hi > lo
    counts = nonempty.sum(axis=1)
    width = max(int(counts.max()), 1)
    if width == lo.shape[1]:
        return lo, hi, below, upto
    rows, cols = np.nonzero(nonempty)
    dest = np.cumsum(nonempty, axis=1)[rows, cols] - 1
    out = []
    for a in (lo, hi, below, upto):
        packed = np.zeros((lo.shape[0], width), dtype=a.dtype)
        packed[rows, dest] = a[rows, cols]
        out.append(packed)
    return tuple(out)


def rank_distance(below, upto, target):
    """``max(0, below - target, target - upto)``: the rank distance from the
    quantile at rank ``target`` (shape ``(k, 1)`` or scalar)."""
    return np.maximum(0.0, np.maximum(below - target, target - upto))


def cell_log_mass(lo, hi, log_weight, prefix):
    """Log base mass of each cell (``-inf`` when empty); a one-candidate
    cell's is its candidate's own log weight."""
    size = hi - lo
    with np.errstate(divide="ignore"):
        out = np.log(np.maximum(prefix[hi] - prefix[lo], 0.0))
    one = size == 1
    out[one] = log_weight[lo[one]]
    out[size <= 0] = -np.inf
    return out


def categorical(logits, rng):
    """Per row, an index drawn with probability ``∝ exp(logits)`` (a row
    needs one finite logit): inverse CDF of the row's weights relative to
    its largest (so nothing overflows; a weight below ``1e-308`` of the
    largest, probability under ``1e-300``, is 0)."""
    top = np.max(logits, axis=-1, keepdims=True)
    weights = np.exp(logits - top)
    return _inverse_cdf(np.cumsum(weights, axis=-1), rng)


def _inverse_cdf(cumulative, rng, scale=None):
    """Per row, the first index whose cumulative weight exceeds ``U`` times
    the row's total (or ``U * scale``, ``scale`` of shape (k,))."""
    total = cumulative[..., -1] if scale is None else scale
    target = rng.random(total.shape) * total
    idx = np.sum(cumulative <= target[..., None], axis=-1)
    return np.minimum(idx, cumulative.shape[-1] - 1)


def draw_in_cells(lo, hi, prefix, rng):
    """For each chosen cell ``grid[lo:hi]`` (1-D arrays), a candidate index
    drawn in proportion to its base mass (inverting the prefix sums)."""
    lo = np.asarray(lo)
    hi = np.asarray(hi)
    u = prefix[lo] + rng.random(lo.shape) * (prefix[hi] - prefix[lo])
    idx = np.searchsorted(prefix, u, side="right") - 1
    return np.clip(idx, lo, hi - 1)


def sample_pair_cells(la, lb, log_mass, rng, log_fallback=None):
    """Rows of ``P(i, j) ∝ mu_i mu_j min(w_i, v_j)`` over cells, and a
    fallback outcome of weight ``exp(log_fallback)``.

    Parameters
    ----------
    la, lb : ndarray of shape (k, C)
        ``log w`` and ``log v`` of every cell (finite).
    log_mass : ndarray of shape (k, C)
        ``log mu`` of every cell (``-inf`` for an empty one).
    log_fallback : ndarray of shape (k,) or None
        Unnormalised log-probability of "no pair" (keep the envelope).

    Returns
    -------
    i, j : ndarray of int, shape (k,)
        The cells of the lower and the upper end.
    fallback : ndarray of bool, shape (k,)
        Rows whose draw is the fallback (their ``i``, ``j`` are meaningless).
    """
    k, C = la.shape
    values = np.concatenate([la, lb], axis=1)  # (k, 2C)
    order = np.argsort(-values, axis=1, kind="stable")
    u = np.take_along_axis(values, order, axis=1)  # descending
    top = u[:, :1]
    e = np.exp(u - top)  # the layers' ends, relative to the highest
    mass = np.exp(log_mass)
    none = np.zeros((k, C))
    # base mass of the cells whose w (resp. v) is at least u_(m)
    cum_a = np.cumsum(np.take_along_axis(np.hstack([mass, none]), order, 1), 1)
    cum_b = np.cumsum(np.take_along_axis(np.hstack([none, mass]), order, 1), 1)
    layers = np.empty_like(u)
    np.subtract(e[:, :-1], e[:, 1:], out=layers[:, :-1])
    layers[:, -1] = e[:, -1]  # the last layer reaches down to 0
    layers *= cum_a
    layers *= cum_b
    cum_layers = np.cumsum(layers, axis=1)
    fallback = np.zeros(k, dtype=bool)
    if log_fallback is not None:
        with np.errstate(divide="ignore"):
            log_total = np.log(cum_layers[:, -1]) + top[:, 0]
        p_keep = special.expit(np.asarray(log_fallback, float) - log_total)
        fallback = rng.random(k) < p_keep
    m = _inverse_cdf(cum_layers, rng)
    rows = np.arange(k)
    # i among the cells with w_i >= u_(m), j among those with v_j >= u_(m),
    # each by base mass: the first A (B) entry whose cumulative mass passes
    i = order[rows, _inverse_cdf(cum_a, rng, cum_a[rows, m])]
    j = order[rows, _inverse_cdf(cum_b, rng, cum_b[rows, m])] - C
    return i, j, fallback
