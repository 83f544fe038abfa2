"""Private per-feature ranges: a DP pair of quantiles per column, then fences.

One reusable component for every estimator that needs a declared domain and
whose user cannot declare it (``bounds_X="private"``): it spends a given
epsilon on the columns whose range is not public, and takes the others from
the schema (boolean pandas dtypes, categorical ones whose categories the user
declares public, or ``public_bounds``) at no cost.
"""

import functools
import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from skdp._ranges.cells import (
    categorical,
    cell_log_mass,
    draw_in_cells,
    grid_cells,
    prefix_mass,
    rank_distance,
    sample_pair_cells,
)
from skdp._ranges.centre_width import centre_width_cells
from skdp._ranges.envelope_budget import (
    TEST_N_EPSILON,
    column_shares,
    drop_hopeless_envelopes,
    looseness_test,
)
from skdp._ranges.public_ranges import public_ranges, schema_bounds
from skdp._ranges.range_columns import float_columns
from skdp._ranges.ranks import quantile_distance
from skdp.accounting import PrivacyBudget, record_spend
from skdp.utils import noise_generator

__all__ = [
    "PrivateBounds",
    "PrivateBoundsWarning",
    "candidate_grid",
    "envelope_grid",
    "fence_factor",
    "pair_log_probabilities",
    "private_bounds",
    "quantile_distance",
    "quantile_level",
    "sample_quantile_pair",
    "schema_bounds",
]

# Candidates: 0 and every number with four significant digits whose magnitude
# is in [1e-6, 1e12): a public grid that is scale-free (the same relative
# resolution, 0.01-0.1%, at every magnitude), represents round numbers and
# integers below 10^4 exactly (so that ties at 0, counts, years or round values
# are seen as ties), and spans what real columns hold; a column is clipped to
# the grid's span. 324,001 candidates, each weighted by the log-uniform mass of
# its cell (``m * 10^k`` weighs ``1 / m``, so a decade weighs ``ln 10`` however
# finely it is cut, and 0 weighs 1): the resolution costs nothing, only the
# number of decades beyond the data does.
GRID_DECADES = (-9, 8)  # m * 10^k, m in 1000..9999, k in this closed range
MANTISSAS = (1000, 10000)
ZERO_WEIGHT = 1.0
# The quantile level q: the most extreme level the per-column budget can find
# reliably, q = KAPPA / (n * epsilon_column), between Q_MIN and 1/4. An end of
# the pair lands beyond the data with odds about (base mass of the candidates
# beyond the data / base mass near its target) * exp(-eps q n / 4); a pair
# misses when both ends do (odds about the product) or one does by a wide
# margin. The mass ratio is 100-1,000 for a column whose spread is comparable
# to its magnitude (tens of decades against a target region 10-50% of a decade
# wide) and up to ~1e5 when the magnitude is 1,000 times the spread (years, a
# depth of 61 +- 1): eps q n = 64 keeps an end's odds below ~1e-4 and ~1e-2.
KAPPA = 64.0
Q_MIN = 0.005
Q_MAX = 0.25
# Tukey's fences Q1 - 1.5 IQR, Q3 + 1.5 IQR sit at 2.698 standard deviations
# of a normal distribution; for level q the fence factor k(q) puts
# Q_q - k (Q_{1-q} - Q_q) at the same place (k(1/4) = 1.5).
TUKEY_Z = stats.norm.ppf(0.75) * 4.0  # 0.6745 + 1.5 * 1.349 = 2.698
# Below this n * epsilon per column even the quartiles (q = 1/4) are
# unreliable: KAPPA / Q_MAX.
MIN_N_EPSILON = KAPPA / Q_MAX
# Below this n * epsilon per column (without an envelope) the range is a
# released median and half-width (``_centre_width``) instead of a pair: on
# the 53 numeric columns and labels of bench_small_data, draws more than 30
# times too wide (or covering under half the rows) were 4% against 32% of
# the pair's at 128 and 4% against 3% at 180, where the pair covers more of
# skewed and tied columns: the crossover.
CENTRE_WIDTH_BELOW = 160.0
# Inside a declared envelope [L, H] (``envelope=``): candidates finer than
# this fraction of H - L are dropped (a range that fine is 10^4 times tighter
# than the envelope already), and the output "keep the envelope" gets this
# many times the base mass of all pairs together, so that where the budget
# cannot single out a tight pair the release falls back to the declared range
# (probability >= 10/11 when no pair scores better than the envelope) instead
# of landing on a random sub-interval that clips the data. The handicap it
# gives a tight pair, ln 10 = 2.3 in score units of eps_c / 2, is small next
# to the pair's own entropy (~2 ln 30 inside a typical envelope). Measured on
# the 24 regression cells of bench_small_data with n * eps >= 1,000
# (5 seeds): 10 and 100 both keep every cell within 10% of declared ranges;
# 100 fell back more often where the per-column budget was ~100 (diamonds
# at eps 0.1: 1.07 times declared, 10: 0.81).
ENVELOPE_RESOLUTION = 1e-4
FALLBACK_WEIGHT = 10.0


class PrivateBoundsWarning(UserWarning):
    """The private ranges are likely unreliable: too small a budget for n."""


def candidate_grid():
    """The public candidates, sorted, and their log base weights.

    Returns
    -------
    grid : ndarray of shape (G,)
    log_weight : ndarray of shape (G,)
        ``log(1 / m)`` for ``±m 10^k``, ``log(ZERO_WEIGHT)`` for 0.
    """
    k = np.arange(GRID_DECADES[0], GRID_DECADES[1] + 1)
    mantissa = np.arange(*MANTISSAS)
    # m / 10^j for negative exponents: the double nearest the decimal m 10^-j
    scale = 10.0 ** np.abs(k)[:, None]
    positive = np.where(k[:, None] >= 0, mantissa * scale, mantissa / scale).ravel()
    weight = np.broadcast_to(-np.log(mantissa), (k.size, mantissa.size)).ravel()
    grid = np.concatenate([-positive[::-1], [0.0], positive])
    log_weight = np.concatenate([weight[::-1], [math.log(ZERO_WEIGHT)], weight])
    return grid, log_weight


def envelope_grid(lower, upper, base=None):
    """The candidates inside a public envelope ``[lower, upper]``.

    The points of :func:`candidate_grid` (or of ``base``, its ``(grid,
    log_weight)`` already built) strictly inside it whose magnitude is at
    least ``ENVELOPE_RESOLUTION * (upper - lower)`` (and 0 if inside), plus
    both ends; the ends weigh as much as the heaviest grid point. A function
    of the envelope only (public).

    Returns
    -------
    grid, log_weight : ndarray of shape (G,)
    """
    grid, log_weight = candidate_grid() if base is None else base
    floor = ENVELOPE_RESOLUTION * (upper - lower)
    keep = (grid > lower) & (grid < upper) & ((np.abs(grid) >= floor) | (grid == 0))
    end_weight = float(log_weight.max())
    return (
        np.concatenate([[lower], grid[keep], [upper]]),
        np.concatenate([[end_weight], log_weight[keep], [end_weight]]),
    )


def quantile_level(n, epsilon_column):
    """The level ``q`` of the quantile pair for ``n`` rows (see ``KAPPA``)."""
    if not n * epsilon_column > 0:
        return Q_MAX
    return float(np.clip(KAPPA / (n * epsilon_column), Q_MIN, Q_MAX))


def fence_factor(q):
    """``k(q) = (TUKEY_Z - z) / (2 z)`` with ``z = Phi^{-1}(1 - q)``."""
    z = stats.norm.ppf(1.0 - q)
    return float((TUKEY_Z - z) / (2.0 * z))


def fallback_log_mass(log_weight):
    """Base log-mass of "keep the envelope": ``FALLBACK_WEIGHT`` times the
    base mass of all pairs, ``(sum mu)^2``."""
    return math.log(FALLBACK_WEIGHT) + 2.0 * float(special.logsumexp(log_weight))


def _fallback_log_weight(log_weight, epsilon, score):
    """Unnormalised log-probability of "keep the envelope" with ``score``."""
    return fallback_log_mass(log_weight) + 0.5 * epsilon * score


def pair_log_probabilities(d_low, d_high, epsilon, log_weight, fallback_score=None):
    """Exact log-probabilities of the pair mechanism, shape (G, G); for tests.

    ``P(i, j) ∝ mu_i mu_j exp(-epsilon max(d_low[i], d_high[j]) / 2)``. With
    ``fallback_score`` (the envelope's own score, ``-max(d_low[0],
    d_high[-1])``), the outcome "keep the envelope" joins with weight
    ``exp(fallback_log_mass + epsilon * score / 2)``; then returns
    ``(pairs, fallback)``, the (G, G) array and its log-probability.
    """
    score = -np.maximum(d_low[:, None], d_high[None, :])
    logw = 0.5 * epsilon * score + log_weight[:, None] + log_weight[None, :]
    if fallback_score is None:
        return logw - special.logsumexp(logw)
    log_env = _fallback_log_weight(log_weight, epsilon, fallback_score)
    total = np.logaddexp(special.logsumexp(logw), log_env)
    return logw - total, float(log_env - total)


def sample_quantile_pair(d_low, d_high, epsilon, log_weight, rng, fallback_score=None):
    """Draw ``(i, j)`` with ``P ∝ mu_i mu_j min(w_i, v_j)``, ``w_i =
    exp(-eps d_low[i] / 2)``, ``v_j = exp(-eps d_high[j] / 2)``, ``mu =
    exp(log_weight)``; with ``fallback_score``, ``None`` (keep the envelope)
    is one more outcome, weighed as in :func:`pair_log_probabilities`.

    Exact, in ``O(G log G)``: the marginal of ``i`` is ``mu_i S_i`` with
    ``S_i = sum_{v_j < w_i} mu_j v_j + w_i sum_{v_j >= w_i} mu_j`` (prefix and
    suffix sums over the candidates sorted by ``v``), then ``j`` given ``i``;
    both by the Gumbel-max trick in log space. ``epsilon=inf`` (no privacy):
    each end is a candidate at distance 0 (the weighted choice among ties).

    The per-candidate reference: :func:`private_bounds` draws the same law
    on cells, many columns at once (:mod:`skdp._ranges.cells`; tests check
    both against :func:`pair_log_probabilities`).
    """
    d_low = np.asarray(d_low, float)
    d_high = np.asarray(d_high, float)
    if math.isinf(epsilon):  # no privacy: each end at its exact quantile
        return tuple(
            int(
                np.argmax(
                    np.where(d == d.min(), log_weight, -np.inf)
                    + rng.gumbel(size=d.size)
                )
            )
            for d in (d_low, d_high)
        )
    la = -0.5 * epsilon * d_low
    lb = -0.5 * epsilon * d_high
    order = np.argsort(lb, kind="stable")
    lb_sorted = lb[order]
    lmu_sorted = log_weight[order]
    minus_inf = np.array([-np.inf])
    below = np.concatenate([minus_inf, np.logaddexp.accumulate(lb_sorted + lmu_sorted)])
    above = np.logaddexp.accumulate(lmu_sorted[::-1])[::-1]
    above = np.concatenate([above, minus_inf])
    k = np.searchsorted(lb_sorted, la, side="left")  # #{v_j < w_i}
    log_marginal = log_weight + np.logaddexp(below[k], la + above[k])
    if fallback_score is not None:
        log_env = _fallback_log_weight(log_weight, epsilon, fallback_score)
        log_pairs = float(special.logsumexp(log_marginal))
        if rng.random() < special.expit(log_env - log_pairs):
            return None
    i = int(np.argmax(log_marginal + rng.gumbel(size=la.size)))
    j = int(np.argmax(log_weight + np.minimum(la[i], lb) + rng.gumbel(size=lb.size)))
    return i, j


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


def _compact(nonempty, *arrays):
    """The cells (columns of the ``(k, C)`` arrays) non-empty in some row."""
    keep = nonempty.any(axis=0)
    if keep.all():
        return arrays
    return tuple(a[:, keep] for a in arrays)


def _pair_cells(S, epsilon, q, grid, log_weight, prefix, rng, fallback=None):
    """One quantile-pair draw per column of the sorted ``S`` (n, k): the grid
    indices ``(a, b)`` of its ends (unordered) and whether the draw kept the
    envelope (``fallback``: the envelope's log-weight per column, or None).
    ``epsilon`` and ``q`` per column, finite."""
    n, k = S.shape
    lo, hi, below, upto = grid_cells(S, grid)
    lo, hi, below, upto = _compact(hi > lo, lo, hi, below, upto)
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
    span = float(grid[-1])
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
            S = np.sort(np.clip(X[:, cols], -span, span), axis=0)
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
    S = np.sort(np.asarray(x, dtype=np.float64))[:, None]
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


def _positive_width(low, high, grid):
    """``(low, high)``, or the public grid's neighbours of a one-point range.

    A released range of width 0 (a width of 0 or a quantile pair on one grid
    point: most rows hold one value) says where most rows are, not how far
    the others spread; every estimator refuses a range of width 0 (it would
    clip every value to one constant). The grid points just below and above
    the point are a public function of the released range: post-processing,
    no privacy cost.
    """
    if high > low:
        return low, high
    below, above = grid[grid < low], grid[grid > high]
    step = float(grid[-1] - grid[-2])
    low = float(below[-1]) if below.size else float(low) - step
    high = float(above[0]) if above.size else float(high) + step
    return low, high


@dataclass(frozen=True)
class PrivateBounds:
    """Ranges of every column and what their release cost.

    Attributes
    ----------
    lower, upper : ndarray of shape (n_columns,)
    estimated : ndarray of bool
        Columns whose range was released privately (the others were public).
    epsilon : float
        Recorded in total (0 when no range was estimated), before any draw:
        the ``epsilon`` given, whatever the draws turn out to use. Pure
        epsilon-DP.
    epsilon_per_column : ndarray of shape (n_columns,)
        Each column's part (0 for a public one); they sum to ``epsilon``
        (basic composition over columns).
    quantile_level : ndarray of shape (n_columns,)
        The level ``q`` of each released quantile pair (NaN for a public
        column, or an envelope kept after its looseness test; 1/4 for a
        median and half-width, whose half-width holds the quartiles' rows).
    loose_fraction : ndarray of shape (n_columns,)
        An envelope column's released looseness test (the noisy fraction of
        rows in the fullest half-envelope window; NaN if not tested).
    epsilon_unused : float
        The part of ``epsilon`` no draw used: the rest of the parts of the
        envelope columns kept after their looseness test. For information
        only: it is recorded (part of ``epsilon``) and is not given back to
        anyone, because whether it is left depends on the released test.
    """

    lower: np.ndarray
    upper: np.ndarray
    estimated: np.ndarray
    epsilon: float
    epsilon_per_column: np.ndarray
    quantile_level: np.ndarray
    loose_fraction: np.ndarray
    epsilon_unused: float = 0.0

    @property
    def budget(self):
        """What the release spent, as a :class:`~skdp.accounting.PrivacyBudget`."""
        return PrivacyBudget(self.epsilon, 0.0)


def private_bounds(
    X,
    *,
    epsilon,
    public_bounds=None,
    feature_names=None,
    random_state=None,
    source="private_bounds",
    warn=True,
    label_column=None,
    envelope=None,
    public_categories=False,
):
    """Per-column ranges, released with epsilon-DP where they are not public.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_columns)
        Finite real values (complex or non-numeric columns are refused with a
        ValueError naming the column, before anything is spent). Boolean
        pandas columns take the range ``(0, 1)`` from the dtype; categorical
        columns are numbers like any other, estimated privately, unless
        ``public_categories`` declares their categories public
        (:func:`schema_bounds`).
    epsilon : float
        Spent on the columns whose range is not public, split equally (see
        ``label_column``).
    public_bounds : dict or None
        ``{feature: (lower, upper)}``, a feature by index (or by name, with
        ``feature_names`` or a DataFrame): ranges known from the schema
        (indicators, one-hot columns, ordinal codes), used as given at no cost.
    feature_names : sequence of str or None
        Column names, when ``X`` is not a DataFrame.
    random_state : None, int, RandomState or Generator
        Source of the noise.
        Seeds the noise only under the reproducible-noise opt-in
        (:func:`skdp.set_config`); by default, fresh OS entropy.
    source : str
        Who spends, for :func:`~skdp.accounting.track_budget`. The whole
        ``epsilon`` is recorded before the first draw (see Accounting).
    warn : bool
        Warn (:class:`PrivateBoundsWarning`) when ``n * epsilon`` of an
        estimated column without an envelope is below ``MIN_N_EPSILON`` = 256.
    label_column : int or None
        A column (the regression label, appended by the FM estimators) that
        gets as much of ``epsilon`` as all other estimated columns together
        (when it is estimated and others are). A label range that misses
        ruins every coefficient and the intercept, a feature's range only that
        feature's coefficient. Measured on the 24 regression cells with
        ``n * epsilon >= 1,000`` of ``benchmarks/bench_small_data.py`` (share
        0.2): with equal shares the test MSE was 10^7 to 10^16 times that of
        declared ranges in 8 cells (a label range missed by orders of
        magnitude), with half for the label at most 9 times. None: equal
        shares.
    envelope : dict or None
        ``{feature: (lower, upper)}``: loose public ranges (documentation,
        units) that a column's released range is drawn inside of, with
        "keep the envelope" as a possible outcome (see Notes). Each such
        column first gets a looseness test (``n * epsilon`` 32 of its part):
        only where the data sit in half the envelope is the rest of its part
        spent on a tighter range; elsewhere it keeps the envelope and the
        rest is not used (reported in ``epsilon_unused``; it is recorded all
        the same, see Notes). A column whose part gives ``n * epsilon_column``
        below ``ENVELOPE_PART`` = 160 is neither tested nor estimated (the
        others get its part: features first, then the label); when no column
        is left nothing is spent. A column in ``public_bounds`` or the schema
        is taken as given instead.
    public_categories : bool or sequence of str or int, default=False
        Categorical (pandas) columns whose categories are public: fixed by a
        schema or codebook, not read off these rows. Their range is then
        ``(min, max)`` of the categories, at no cost. True: every categorical
        column; a sequence: those columns, by name or index. By default the
        categories are data (``.astype("category")`` takes them from the
        values, so their range is the data's exact range) and the column's
        range is released privately like any numeric column.

    Returns
    -------
    PrivateBounds

    Notes
    -----
    **Mechanism.** For each column ``c`` that is not public, with its share
    ``eps_c`` of ``epsilon`` (equal shares; half of it for ``label_column``
    when other columns are estimated too) and the level
    ``q`` of
    :func:`quantile_level`: one exponential mechanism over pairs
    ``(a, b)`` of the public candidate set :func:`candidate_grid` with score
    ``u(a, b) = -max(d_q(a), d_{1-q}(b))`` (:func:`quantile_distance`: how
    many ranks a candidate is from the quantile, ties counted as exact) and
    ``P(a, b) ∝ exp(eps_c u(a, b) / 2)``. Replacing one row changes every
    ``d`` by at most 1, so ``u`` has sensitivity 1 and the draw is
    ``eps_c``-DP (McSherry & Talwar 2007); the columns compose to
    ``epsilon`` (basic composition); the fences are post-processing. Each
    column is clipped to the grid's span ``±9.99e11`` before counting, a
    data-independent map. Neighbours are replace-one (``n`` public), as for
    every skdp estimator: ``n`` and ``epsilon`` choose ``q``.

    **Why a pair, and why these candidates.** Drawing both quantiles at once
    gives each the whole ``eps_c`` (two separate draws would get half each):
    a pair is unlikely unless *both* ends are near their targets. The
    candidates are scale-free (four significant digits at every magnitude
    from 1e-6 to 1e12), so no unit or range is assumed, and they hold round
    numbers exactly, so a column with many zeros (or any tied value) gets
    that value as an exact quantile instead of an arbitrary point around it.
    The textbook 1% / 99% quantiles fail at realistic ``n * epsilon``: every
    candidate beyond the data scores nearly alike and there are many of them;
    at ``q`` the score gap to those candidates is ``q n``, so ``q`` is the most
    extreme level with ``eps_c q n`` large (:data:`KAPPA`).

    **Small budgets without an envelope.** Where ``n * eps_c`` is below
    ``CENTRE_WIDTH_BELOW`` = 160 the pair pays the grid's prior over 36
    decades at both ends and often lands orders of magnitude wide; the
    column's range is then ``[m - 4 w, m + 4 w]`` from two exponential
    mechanisms with ``eps_c / 2`` each: the median ``m`` on the grid (score
    minus the rank distance from ``n / 2``) and, given it, the half-width
    ``w`` holding half the rows on the grid's non-negative candidates (score
    minus the distance of ``n / 2`` from the counts ``#{|x - m| < w}`` and
    ``#{|x - m| <= w}``); each score has sensitivity 1, so the range is
    ``eps_c``-DP (``_centre_width``). ``4 w`` is Tukey's fence for a normal
    column; the range is symmetric, so a skewed column's long side is
    clipped more than by the pair.

    **Inside an envelope.** With ``envelope[c] = (L, H)`` the column is
    clipped to ``[L, H]`` (a data-independent map), the candidates are
    :func:`envelope_grid`'s (the grid inside the envelope, no finer than
    ``1e-4 (H - L)``, plus ``L`` and ``H``) and one more outcome, "keep
    ``[L, H]``", has score ``-max(d_q(L), d_{1-q}(H))`` (sensitivity 1 like
    every other) and base mass ``FALLBACK_WEIGHT = 10`` times that of all
    pairs together: the same exponential mechanism over one more candidate,
    still ``eps_c``-DP. Where the budget is too small to single out a tight
    pair the draw keeps the envelope (probability >= 10/11 when no pair
    scores better than it), so the fit is no worse than with the declared
    range but for the share spent; with enough budget the tight pair wins
    (its score is ``q n`` higher: odds ``exp(eps_c q n / 2) = e^32`` at
    ``q = KAPPA / (n eps_c)`` against a base-mass handicap of at most
    ``~1e7``). The fenced range is clipped to the envelope, and a pair that
    is one value (a column mostly equal to one value, like capital gains)
    keeps the envelope: post-processing of the draw. Envelope columns share
    ``epsilon`` equally with the label, even when ``label_column`` is set: a
    label range that misses keeps its envelope instead of ruining the model
    (measured: equal shares kept all 24 regression cells within 10% of
    declared ranges, half for the label missed diamonds at eps 0.1 by 2.3x
    but did better on the 294-row CASchools at eps 5, 0.42 vs 1.02 times
    declared).

    **Looseness test.** Before its pair, an envelope column spends
    ``eps_t = 32 / n`` on ``g + Laplace(1 / eps_t)``, ``g`` the most rows in
    one of five public windows half the envelope wide
    (:func:`~skdp._ranges.envelope_budget.half_window_count`,
    sensitivity 1): ``eps_t``-DP. Only if the noisy fraction is at least 0.9
    does the pair get the rest of the part; otherwise the envelope is kept
    and the rest is not used (``epsilon_unused``). Either way the column's
    whole part is what is recorded: the guarantee is ``epsilon``-DP by basic
    composition with adaptively chosen parameters (a privacy filter, Rogers
    et al. 2016: for every outcome of the tests, what follows uses at most
    the part left), and the amount recorded must not depend on the test's
    outcome (see Accounting).

    **Accounting.** All input is validated first (shape, finite real values,
    the parameters), then the whole ``epsilon`` is recorded
    (:func:`~skdp.accounting.record_spend`, which checks any
    :func:`~skdp.accounting.track_budget` cap), then the draws are made.
    The amount recorded is a function of ``epsilon``, ``n`` and the declared
    ranges only (0 when no column is estimated), never of a draw: under a cap,
    whether a call is refused says nothing about the data. (Before, the
    release recorded after its draws and only the looseness test's part of a
    kept envelope, so a refusal under a cap between ``32 / n`` and
    ``epsilon`` revealed the test's outcome and a refused call recorded
    nothing.) The price: the rest of a kept envelope's part is not given to a
    fit that follows (it was: diamonds at eps 0.1, whose documented label
    range is the data's, measured 1.5 to 2 times the test MSE when the
    label's part is lost to the fit).

    **Fences.** ``[a - k (b - a), b + k (b - a)]`` with ``k = fence_factor(q)``:
    Tukey's fences (``k = 1.5`` at quartiles, 2.698 standard deviations of a
    normal) generalised to level ``q``. Values outside are clipped by the
    estimator, never trusted. A column whose pair is one value (constant, or
    mostly one value at small budget) gets a range of width 0: it is then
    constant for the model.

    References
    ----------
    McSherry & Talwar (2007). Mechanism design via differential privacy. FOCS.
    Smith (2011). Privacy-preserving statistical estimation with optimal
    convergence rates. STOC (the exponential mechanism for quantiles).
    Gillenwater, Joseph & Kulesza (2021). Differentially private quantiles.
    ICML (JointExp: several quantiles from one draw).
    Tukey (1977). Exploratory data analysis (fences).
    Rogers, Roth, Ullman & Vadhan (2016). Privacy odometers and filters:
    pay-as-you-go composition. NeurIPS.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import private_bounds
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.normal(50, 10, 5000), rng.integers(0, 2, 5000)])
    >>> res = private_bounds(X, epsilon=1.0, public_bounds={1: (0, 1)},
    ...                      random_state=0)
    >>> res.estimated.tolist(), res.epsilon, res.epsilon_per_column.tolist()
    ([True, False], 1.0, [1.0, 0.0])
    >>> bool(10 < res.lower[0] < 30 and 70 < res.upper[0] < 90)
    True
    """
    names = feature_names
    if names is None and hasattr(X, "columns"):
        names = [str(c) for c in X.columns]
    known = schema_bounds(X, public_categories)
    X = float_columns(X, names)
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite (no NaN or infinity) for private bounds.")
    n, d = X.shape
    known.update(public_ranges(public_bounds, d, names))
    inside = public_ranges(envelope, d, names, name="envelope")
    estimated = np.array([j not in known for j in range(d)])
    m = int(estimated.sum())
    if m and not (isinstance(epsilon, numbers.Real) and epsilon > 0):
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
    if m and n < 1:
        raise ValueError("private bounds need at least one row.")
    lower = np.empty(d)
    upper = np.empty(d)
    for j, (lo, hi) in known.items():
        lower[j], upper[j] = lo, hi
    levels = np.full(d, np.nan)
    if m == 0:
        return PrivateBounds(
            lower, upper, estimated, 0.0, np.zeros(d), levels, levels.copy()
        )
    if label_column is not None and not (
        isinstance(label_column, numbers.Integral) and 0 <= label_column < d
    ):
        raise ValueError(
            f"label_column must be a column index in [0, {d}), got {label_column!r}."
        )
    in_envelope = np.isin(np.arange(d), list(inside))
    # the label's larger share guards against a label range that misses by
    # orders of magnitude; inside an envelope a miss keeps the envelope
    label_first = None if label_column in inside else label_column
    estimated = drop_hopeless_envelopes(
        estimated, in_envelope, label_column, label_first, n * float(epsilon)
    )
    for j in np.flatnonzero(~estimated & in_envelope):  # kept, at no cost
        lower[j], upper[j] = inside[j]
    m = int(estimated.sum())
    if m == 0:
        return PrivateBounds(
            lower, upper, estimated, 0.0, np.zeros(d), levels, levels.copy()
        )
    share = column_shares(estimated, label_first)
    eps_col = np.zeros(d)
    eps_col[estimated] = float(epsilon) * share[estimated]  # inf * 0 is nan
    # inside an envelope a small budget keeps the envelope: nothing to warn of
    open_grid = estimated & ~in_envelope
    low = open_grid & (n * eps_col < MIN_N_EPSILON)
    if warn and np.any(low):
        j = int(np.argmin(np.where(open_grid, eps_col, np.inf)))
        warnings.warn(
            f"Private bounds get n * epsilon = {n * eps_col[j]:.3g} for a column "
            f"({m} columns share epsilon = {float(epsilon):.3g}, n = {n}; "
            f"{int(low.sum())} below {MIN_N_EPSILON:g}): below {MIN_N_EPSILON:g} "
            "the released ranges can miss the data badly (and a range far too "
            "wide drowns the model in noise). Declare the ranges you know "
            "(bounds, or public_bounds for indicator and coded columns), raise "
            "the budget share, or use more rows.",
            PrivateBoundsWarning,
            stacklevel=2,
        )
    # all input is valid: record the whole epsilon (an upper bound on what
    # the draws below use, a function of the parameters and n only), checking
    # any cap, before the first draw
    spent = float(epsilon)
    record_spend(PrivacyBudget(spent, 0.0), source, mechanism=None)
    rng = noise_generator(random_state)
    fractions = np.full(d, np.nan)
    unused = 0.0  # recorded, but not used by a draw (envelopes kept after a test)
    open_columns = [j for j in np.flatnonzero(estimated) if j not in inside]
    if open_columns:
        lo, hi, q = open_grid_ranges(X[:, open_columns], eps_col[open_columns], rng)
        lower[open_columns], upper[open_columns], levels[open_columns] = lo, hi, q
    for j in np.flatnonzero(estimated):
        if j not in inside:
            continue
        lo, hi = lower[j], upper[j] = inside[j]
        x = np.clip(X[:, j], lo, hi)
        eps_pair = eps_col[j]
        if not math.isinf(eps_pair):  # first: is the envelope loose?
            eps_test = TEST_N_EPSILON / n
            fractions[j], loose = looseness_test(x, lo, hi, eps_test, rng)
            if not loose:  # keep it; the rest of the part stays unused
                unused += eps_pair - eps_test
                continue
            eps_pair -= eps_test
        lower[j], upper[j], levels[j] = envelope_range(x, eps_pair, lo, hi, rng)
    return PrivateBounds(
        lower,
        upper,
        estimated,
        spent,
        eps_col,
        levels,
        loose_fraction=fractions,
        epsilon_unused=unused,
    )
