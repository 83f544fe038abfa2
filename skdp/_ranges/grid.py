"""The public grid of candidates and the per-candidate range mechanisms.

The candidates every range release draws from (:func:`candidate_grid`, and
:func:`envelope_grid` inside a declared envelope), the quantile level and the
fences, and the quantile-pair mechanism's exact law
(:func:`pair_log_probabilities`) and per-candidate sampler
(:func:`sample_quantile_pair`): the reference that the cell-based draws of
:mod:`skdp._ranges.column_draws` are tested against.
"""

import math

import numpy as np
from scipy import special, stats

__all__ = [
    "CENTRE_WIDTH_BELOW",
    "KAPPA",
    "MIN_N_EPSILON",
    "Q_MAX",
    "Q_MIN",
    "candidate_grid",
    "envelope_grid",
    "fallback_log_mass",
    "fence_factor",
    "pair_log_probabilities",
    "quantile_level",
    "sample_quantile_pair",
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
# released median and half-width (``_centre_width``) instead of a pair. On
# the 53 numeric columns and labels of bench_small_data, draws more than 30
# times too wide (or covering under half the rows) were 4% against 32% of
# the pair's at 128 and 4% against 3% at 180; the pair's failure bound
# (reliability) is vacuous at 160 and 3.6% at 240, the median and
# half-width's 0.06% there: the pair is used where its level is below the
# quartiles (MIN_N_EPSILON), where its guarantee holds.
CENTRE_WIDTH_BELOW = MIN_N_EPSILON  # 256
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
