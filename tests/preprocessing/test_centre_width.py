"""The median + half-width range release used without an envelope at small
budgets: exact privacy, the sampler's law, an audit and what it buys."""

import itertools
import math

import numpy as np
from scipy import stats

from skdp._ranges.centre_width import (
    WIDTH_FENCE,
    centre_log_probabilities,
    centre_width_range,
    width_candidates,
    width_log_probabilities,
)
from skdp._ranges.private_bounds import CENTRE_WIDTH_BELOW
from skdp.preprocessing import private_bounds
from skdp.utils import audit_mechanism
from tests.preprocessing.test_private_bounds import (
    SMALL_GRID,
    SMALL_LOGW,
    VALUES,
    _neighbours,
)


def _joint_log_probabilities(x, epsilon):
    """log P(centre i, width k) for every outcome, shape (G, W)."""
    sx = np.sort(np.asarray(x, float))
    log_c = centre_log_probabilities(sx, epsilon, SMALL_GRID, SMALL_LOGW)
    widths, wlogw = width_candidates(SMALL_GRID, SMALL_LOGW)
    rows = [
        log_c[i] + width_log_probabilities(sx, m, epsilon, widths, wlogw)
        for i, m in enumerate(SMALL_GRID)
    ]
    return np.array(rows)


def test_width_score_matches_its_definition():
    rng = np.random.default_rng(0)
    widths, wlogw = width_candidates(SMALL_GRID, SMALL_LOGW)
    assert widths.tolist() == [0.0, 0.5, 1.0, 2.0, 3.0]
    for _ in range(20):
        x = np.sort(rng.choice(VALUES, size=5))
        m = float(rng.choice(SMALL_GRID))
        within_lt = [(np.abs(x - m) < w).sum() for w in widths]
        within_le = [(np.abs(x - m) <= w).sum() for w in widths]
        d = [max(0.0, a - 2.5, 2.5 - b) for a, b in zip(within_lt, within_le)]
        logits = wlogw - 0.25 * 1.0 * np.array(d)
        expected = logits - np.logaddexp.reduce(logits)
        got = width_log_probabilities(x, m, 1.0, widths, wlogw)
        np.testing.assert_allclose(got, expected, atol=1e-12)


def test_centre_width_release_is_epsilon_dp_exactly():
    """Every 4-row data set on VALUES and every replace-one neighbour: the
    largest log-ratio over all (centre, width) outcomes is at most epsilon,
    and more than half of it (the two halves compose to the whole)."""
    for eps in (0.3, 4.0):
        worst = 0.0
        for x in itertools.combinations_with_replacement(VALUES, 4):
            p = _joint_log_probabilities(x, eps)
            for y in _neighbours(list(x)):
                worst = max(
                    worst, float(np.abs(p - _joint_log_probabilities(y, eps)).max())
                )
        assert 0.5 * eps < worst <= eps + 1e-9


def test_sampler_draws_the_exact_law():
    """Chi-square of 20,000 production draws against the exact joint law
    (outcomes with expected count >= 5; p-value above 1e-3)."""
    x = [-1.0, 0.0, 0.0, 1.0, 2.0]
    eps = 1.5
    p = np.exp(_joint_log_probabilities(x, eps))
    widths, _ = width_candidates(SMALL_GRID, SMALL_LOGW)
    rng = np.random.default_rng(0)
    counts = np.zeros_like(p)
    for _ in range(20_000):
        lo, hi = centre_width_range(np.array(x), eps, SMALL_GRID, SMALL_LOGW, rng)
        m, w = (lo + hi) / 2, (hi - lo) / (2 * WIDTH_FENCE)
        counts[np.argmin(np.abs(SMALL_GRID - m)), np.argmin(np.abs(widths - w))] += 1
    expected = 20_000 * p
    big = expected >= 5
    assert counts[~big].sum() <= max(30, 3 * expected[~big].sum())
    chi2 = (((counts - expected) ** 2 / expected)[big]).sum()
    assert stats.chi2.sf(chi2, big.sum() - 1) > 1e-3


def test_privacy_audit_of_centre_width_does_not_refute_claim():
    eps = 1.0
    a, b = [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 2.0]
    widths, _ = width_candidates(SMALL_GRID, SMALL_LOGW)

    def mechanism(x, n, rng):
        out = np.empty(n)
        for k in range(n):
            lo, hi = centre_width_range(np.array(x), eps, SMALL_GRID, SMALL_LOGW, rng)
            out[k] = 10 * np.argmin(np.abs(SMALL_GRID - (lo + hi) / 2)) + np.argmin(
                np.abs(widths - (hi - lo) / (2 * WIDTH_FENCE))
            )
        return out

    result = audit_mechanism(mechanism, a, b, n_samples=60_000, random_state=0)
    assert 0.1 * eps < result.epsilon_lower_bound <= eps


def test_small_budgets_without_an_envelope_use_centre_and_width():
    """A test score (650 +- 20, magnitude 30 times the spread) at n * eps =
    128 < CENTRE_WIDTH_BELOW: over 40 draws the range is never more than 30
    times the Tukey fences' width and covers the central 80% of the rows in
    at least 36. The pair at the same budget, measured on this column and
    these seeds: 35 of 40 draws more than 30 times too wide (2.5e6 times at
    the median)."""
    assert 128 < CENTRE_WIDTH_BELOW
    rng = np.random.default_rng(0)
    x = rng.normal(650.0, 20.0, 400)
    q1, q3 = np.quantile(x, [0.25, 0.75])
    tukey = 4 * (q3 - q1)
    p10, p90 = np.quantile(x, [0.1, 0.9])
    covered = 0
    for seed in range(40):
        res = private_bounds(
            x[:, None], epsilon=128 / 400, random_state=seed, small_budget="ignore"
        )
        assert res.upper[0] - res.lower[0] <= 30 * tukey
        covered += res.lower[0] <= p10 and p90 <= res.upper[0]
    assert covered >= 36
    assert math.isclose(WIDTH_FENCE, 4.0)
