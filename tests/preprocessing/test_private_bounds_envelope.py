"""Private ranges inside a declared envelope (``envelope=``,
``tighten_bounds=True``): the mechanism with its "keep the envelope" outcome
is exactly epsilon-DP, the sampler draws it, and it falls back or tightens
where it should."""

import itertools
import math

import numpy as np
import pytest
from scipy import special, stats

from skdp._ranges import private_bounds as _private_bounds
from skdp._ranges.envelope_budget import TEST_N_EPSILON
from skdp._ranges.private_bounds import (
    ENVELOPE_RESOLUTION,
    FALLBACK_WEIGHT,
    candidate_grid,
    envelope_grid,
    fallback_log_mass,
    pair_log_probabilities,
    quantile_distance,
    sample_quantile_pair,
)
from skdp.accounting import track_budget
from skdp.preprocessing import PrivateBoundsWarning, private_bounds
from skdp.utils import audit_mechanism
from tests.preprocessing.test_private_bounds import SMALL_GRID, SMALL_LOGW, _neighbours

# SMALL_GRID is the envelope [-2, 3] and its candidates (ends first and last)
VALUES = (-2.0, 0.0, 1.0, 3.0)  # data in the envelope, ends included


def _log_probabilities(x, epsilon):
    """Every outcome's exact log-probability: the pairs, then the fallback."""
    sx = np.sort(x)
    d_low = quantile_distance(sx, SMALL_GRID, 0.25)
    d_high = quantile_distance(sx, SMALL_GRID, 0.75)
    fallback = -max(d_low[0], d_high[-1])
    pairs, keep = pair_log_probabilities(
        d_low, d_high, epsilon, SMALL_LOGW, fallback_score=fallback
    )
    return np.append(pairs.ravel(), keep)


def test_probabilities_sum_to_one_and_fallback_weight_is_as_documented():
    lp = _log_probabilities([0.0, 0.0, 1.0, 1.0], 1.0)
    assert special.logsumexp(lp) == pytest.approx(0.0, abs=1e-12)
    assert fallback_log_mass(SMALL_LOGW) == pytest.approx(
        np.log(FALLBACK_WEIGHT) + 2 * np.log(np.exp(SMALL_LOGW).sum())
    )
    # with no data signal (epsilon 0) the envelope is kept with odds FALLBACK_WEIGHT
    keep = np.exp(_log_probabilities([0.0, 0.0, 1.0, 1.0], 0.0)[-1])
    assert keep == pytest.approx(FALLBACK_WEIGHT / (FALLBACK_WEIGHT + 1))


@pytest.mark.parametrize("epsilon", [0.3, 4.0])
def test_envelope_mechanism_is_epsilon_dp_exactly(epsilon):
    """Every outcome, "keep the envelope" included, moves by at most e^eps
    between any two neighbouring datasets (all 4-row datasets on VALUES)."""
    worst = 0.0
    for x in itertools.combinations_with_replacement(VALUES, 4):
        lp = _log_probabilities(x, epsilon)
        for y in _neighbours(x, VALUES):
            worst = max(worst, float(np.abs(lp - _log_probabilities(y, epsilon)).max()))
    assert worst <= epsilon + 1e-12
    assert worst > 0.5 * epsilon


def test_sampler_draws_the_exact_distribution_with_the_fallback():
    rng = np.random.default_rng(1)
    x = np.sort(rng.choice(VALUES, size=9))
    d_low = quantile_distance(x, SMALL_GRID, 0.25)
    d_high = quantile_distance(x, SMALL_GRID, 0.75)
    fallback = -max(d_low[0], d_high[-1])
    eps = 0.8
    p = np.exp(_log_probabilities(x, eps))
    n = 20_000
    counts = np.zeros(p.size)
    for _ in range(n):
        pair = sample_quantile_pair(
            d_low, d_high, eps, SMALL_LOGW, rng, fallback_score=fallback
        )
        counts[-1 if pair is None else pair[0] * SMALL_GRID.size + pair[1]] += 1
    keep = p * n >= 5  # cells with fewer expected counts are pooled into one
    assert keep.sum() > 20 and keep[-1] and p[~keep].sum() * n >= 5
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(p[keep], p[~keep].sum()) * n
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_privacy_audit_of_the_envelope_mechanism_does_not_refute_claim():
    eps = 1.0
    a = [-2.0, -2.0, 0.0, 0.0]
    b = [-2.0, 0.0, 0.0, 3.0]

    def mechanism(x, n, rng):
        p = np.exp(_log_probabilities(x, eps))
        return rng.choice(p.size, size=n, p=p / p.sum())

    result = audit_mechanism(mechanism, a, b, n_samples=200_000, random_state=0)
    assert 0.2 * eps < result.epsilon_lower_bound <= eps


def test_envelope_grid_is_public_and_inside():
    grid, logw = envelope_grid(300.0, 900.0)
    assert grid[0] == 300.0 and grid[-1] == 900.0
    assert np.all(np.diff(grid) > 0) and grid.size == logw.size
    full, full_logw = candidate_grid()
    inner = full[(full > 300.0) & (full < 900.0)]
    np.testing.assert_array_equal(grid[1:-1], inner)
    assert logw[0] == logw[-1] == full_logw.max()
    # around 0: nothing finer than ENVELOPE_RESOLUTION of the width, 0 kept
    grid, _ = envelope_grid(-1.0, 1.0)
    small = np.abs(grid[(grid != 0)]).min()
    assert small >= ENVELOPE_RESOLUTION * 2.0 and 0.0 in grid


def test_a_budget_too_small_for_any_range_spends_nothing():
    """n * eps per range below ENVELOPE_PART (160): the ranges keep their
    envelopes at no cost, nothing is recorded, the result says epsilon 0."""
    x = np.random.default_rng(0).normal(600.0, 20.0, (100, 2))
    with track_budget() as acc:
        res = private_bounds(
            x,
            epsilon=1.0,
            envelope={0: (300.0, 900.0), 1: (0.0, 1e3)},
            random_state=0,
        )
    assert res.epsilon == 0.0 and acc.spends == []
    assert not res.estimated.any()
    assert (res.lower.tolist(), res.upper.tolist()) == ([300.0, 0.0], [900.0, 1e3])


def test_small_budgets_go_to_the_label_first():
    """Three envelope features and a label at n * eps = 180: 45 each is below
    ENVELOPE_PART = 160 (test 32 + pair 128), so the features keep their
    envelopes and the label gets all 180; at 150 the label is dropped too."""
    rng = np.random.default_rng(0)
    X = rng.normal(0.0, 1.0, (300, 4))
    env = {j: (-10.0, 10.0) for j in range(4)}
    res = private_bounds(X, epsilon=0.6, envelope=env, label_column=3, random_state=0)
    assert res.estimated.tolist() == [False, False, False, True]
    np.testing.assert_allclose(res.epsilon_per_column, [0, 0, 0, 0.6])
    assert res.epsilon == 0.6
    for j in range(3):
        assert (res.lower[j], res.upper[j]) == (-10.0, 10.0)
    res = private_bounds(X, epsilon=0.5, envelope=env, label_column=3, random_state=0)
    assert res.epsilon == 0.0 and not res.estimated.any()
    # a column without an envelope is never dropped
    res = private_bounds(
        X,
        epsilon=0.4,
        envelope={0: (-10.0, 10.0)},
        random_state=0,
        small_budget="ignore",
    )
    assert res.estimated.tolist() == [False, True, True, True]


def test_at_the_threshold_keeping_the_envelope_is_a_coin_flip(monkeypatch):
    """The pair gets n * eps = MIN_N_EPSILON_ENVELOPE = 128 (a column part of
    ENVELOPE_PART = 160, just estimated; the looseness test, 32 of it, is
    forced to say "loose" here) on clean normal data inside a 30-sd envelope:
    the derivation of the threshold says a perfect quartile pair only just
    overcomes the fallback's handicap there, so "keep" has probability near
    1/2 (exactly 0.48 here), while at n eps = 200 it is negligible. The
    production sampler's frequency over 300 draws matches the exact
    probability within 4 binomial standard errors."""
    monkeypatch.setattr(_private_bounds, "looseness_test", lambda *a: (1.0, True))
    grid, logw = envelope_grid(300.0, 900.0)
    for n, (lo, hi) in ((128, (0.3, 0.7)), (200, (0.0, 1e-3))):
        x = np.random.default_rng(0).normal(600.0, 20.0, n)
        d_low = quantile_distance(np.sort(x), grid, 0.25)
        d_high = quantile_distance(np.sort(x), grid, 0.75)
        _, log_keep = pair_log_probabilities(
            d_low, d_high, 1.0, logw, fallback_score=-max(d_low[0], d_high[-1])
        )
        p = math.exp(log_keep)
        assert lo < p < hi
        epsilon = (n + TEST_N_EPSILON) / n  # the pair gets 1.0
        kept = 0
        for seed in range(300):
            res = private_bounds(
                x[:, None],
                epsilon=epsilon,
                envelope={0: (300.0, 900.0)},
                random_state=seed,
            )
            assert res.epsilon == epsilon
            kept += (res.lower[0], res.upper[0]) == (300.0, 900.0)
        assert abs(kept - 300 * p) <= 4 * math.sqrt(300 * p * (1 - p)) + 1


def test_a_large_budget_tightens_inside_the_envelope():
    """n * eps = 5,000: the envelope is e^(-600) as likely as the quartile pair."""
    rng = np.random.default_rng(0)
    x = rng.normal(600.0, 20.0, 5000)
    res = private_bounds(
        x[:, None], epsilon=1.0, envelope={0: (300.0, 900.0)}, random_state=0
    )
    lo, hi = res.lower[0], res.upper[0]
    q01, q99 = np.quantile(x, [0.01, 0.99])
    assert 300.0 <= lo <= q01 and q99 <= hi <= 900.0
    assert hi - lo < 0.5 * 600.0  # much tighter than the envelope


def test_data_outside_the_envelope_is_clipped_and_ranges_stay_inside():
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 50.0, 4000)  # most of it beyond (0, 10)
    for seed in range(20):
        res = private_bounds(
            x[:, None], epsilon=2.0, envelope={0: (0.0, 10.0)}, random_state=seed
        )
        assert 0.0 <= res.lower[0] <= res.upper[0] <= 10.0


def test_a_column_mostly_one_value_keeps_the_envelope():
    """92% zeros at n * eps = 400 (q = 0.16): the pair is (0, 0) (e^-100 odds
    for any other with one end beyond 8% of the rows); a range of width 0
    would make a column whose other 8% carry signal constant, so the envelope
    is kept. Without an envelope the pair is [0, 0], widened to the public
    grid's neighbours of 0 (every estimator refuses a range of width 0)."""
    rng = np.random.default_rng(0)
    x = np.where(rng.random(20_000) < 0.92, 0.0, rng.uniform(1e3, 1e5, 20_000))
    for seed in range(5):
        res = private_bounds(
            x[:, None], epsilon=0.02, envelope={0: (0.0, 1e5)}, random_state=seed
        )
        assert (res.lower[0], res.upper[0]) == (0.0, 1e5)
    res = private_bounds(x[:, None], epsilon=0.02, random_state=0)
    grid, _ = candidate_grid()
    assert (res.lower[0], res.upper[0]) == (grid[grid < 0][-1], grid[grid > 0][0])


def test_envelope_columns_share_equally_with_the_label_and_do_not_warn():
    X = np.random.default_rng(0).normal(size=(3000, 3))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivateBoundsWarning)
        res = private_bounds(
            X,
            epsilon=0.3,
            envelope={j: (-10.0, 10.0) for j in range(3)},
            label_column=2,
            random_state=0,
        )
    np.testing.assert_allclose(res.epsilon_per_column, [0.1, 0.1, 0.1])
    # a column without an envelope is refused: 0.08 / 3 gives 80 each, the
    # envelope column's part is below ENVELOPE_PART and goes to the others
    with pytest.raises(ValueError, match="column 1 gets 120"):
        private_bounds(X, epsilon=0.08, envelope={0: (-10.0, 10.0)}, random_state=0)


def test_bad_envelope():
    with pytest.raises(TypeError, match="envelope must be a dict"):
        private_bounds(np.ones((5, 1)), epsilon=1.0, envelope=[(0, 1)])
    with pytest.raises(ValueError, match="envelope\\[0\\]"):
        private_bounds(np.ones((5, 1)), epsilon=1.0, envelope={0: (1, 0)})
