"""The exponential mechanism over pairs of candidates (a column's range).

Split from :mod:`skdp._ranges.private_bounds`, which documents the mechanism
(``P(a, b) ∝ mu_a mu_b exp(-eps max(d_q(a), d_{1-q}(b)) / 2)``) and, inside a
declared envelope, the extra outcome "keep the envelope".
"""

import math

import numpy as np
from scipy import special

__all__ = [
    "FALLBACK_WEIGHT",
    "fallback_log_mass",
    "pair_log_probabilities",
    "sample_quantile_pair",
]

# "Keep the envelope" gets this many times the base mass of all pairs
# together (see ENVELOPE_RESOLUTION and FALLBACK_WEIGHT in private_bounds).
FALLBACK_WEIGHT = 10.0


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
