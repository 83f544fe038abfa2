"""The looseness test that decides which envelope ranges are released."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from skdp._ranges.envelope_budget import (
    ENVELOPE_PART,
    LOOSE_FRACTION,
    TEST_N_EPSILON,
    TEST_SHARE,
    half_window_count,
    looseness_n_epsilon,
    looseness_test,
)
from skdp.accounting import PrivacyBudget, track_budget
from skdp.linear_model import FMLinearRegression
from skdp.preprocessing import private_bounds
from skdp.utils import audit_mechanism

# the envelope [0, 8]: windows [0, 4], [1, 5], [2, 6], [3, 7], [4, 8]
VALUES = (0.0, 0.5, 1.0, 3.5, 4.0, 6.5, 8.0)


def _brute_count(x, lower, upper):
    """The definition, window by window."""
    w = upper - lower
    best = 0
    for k in range(5):
        a = lower + k * 0.125 * w
        best = max(best, sum(a <= v <= a + 0.5 * w for v in x))
    return best


def test_half_window_count_matches_its_definition_and_has_sensitivity_one():
    """Every 4-row data set on VALUES (window edges included) and every
    replace-one neighbour: the count is the brute-force one and moves by at
    most 1, and by exactly 1 somewhere (the bound is tight)."""
    worst = 0
    for x in itertools.combinations_with_replacement(VALUES, 4):
        g = half_window_count(x, 0.0, 8.0)
        assert g == _brute_count(x, 0.0, 8.0)
        for i, v in itertools.product(range(4), VALUES):
            y = list(x)
            y[i] = v
            worst = max(worst, abs(half_window_count(y, 0.0, 8.0) - g))
    assert worst == 1


def test_any_interval_up_to_three_eighths_of_the_envelope_fits_a_window():
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = rng.uniform(300.0, 900.0 - 225.0)
        x = rng.uniform(a, a + 225.0, 50)  # 3/8 of 600
        assert half_window_count(x, 300.0, 900.0) == 50


def test_the_released_fraction_is_the_count_plus_laplace_noise():
    """20,000 draws of the production test: Kolmogorov-Smirnov against
    (g + Laplace(1 / eps)) / n (p-value above 1e-3; with the right law the
    test fails one run in a thousand)."""
    x = np.random.default_rng(0).normal(600.0, 20.0, 200)
    g = half_window_count(x, 300.0, 900.0)
    rng = np.random.default_rng(1)
    eps = TEST_N_EPSILON / x.size
    draws = np.array(
        [looseness_test(x, 300.0, 900.0, eps, rng)[0] for _ in range(20_000)]
    )
    law = stats.laplace(loc=g / x.size, scale=1.0 / (eps * x.size))
    assert stats.kstest(draws, law.cdf).pvalue > 1e-3


def test_privacy_audit_of_the_looseness_test_does_not_refute_claim():
    """Neighbours whose counts differ by one (the worst case): the audit's
    lower bound stays below eps and finds a good part of it."""
    eps = 1.0
    a = [0.0, 1.0, 2.0, 3.0]  # all in [0, 4]: g = 4
    b = [0.0, 1.0, 2.0, 8.0]  # g = 3
    assert half_window_count(a, 0.0, 8.0) - half_window_count(b, 0.0, 8.0) == 1

    def mechanism(x, n, rng):
        return np.array([looseness_test(x, 0.0, 8.0, eps, rng)[0] for _ in range(n)])

    result = audit_mechanism(mechanism, a, b, n_samples=100_000, random_state=0)
    assert 0.5 * eps < result.epsilon_lower_bound <= eps


def test_an_envelope_the_data_fill_records_its_whole_part():
    """Uniform data over the whole envelope: the best half-window holds about
    half the rows, 0.4 n below LOOSE_FRACTION, so "loose" has probability
    exp(-0.4 * 125) / 2 < 1e-20 (n * eps_c = 2,000: the test gets 1/16).
    The range is the envelope; only the test is drawn, but the whole part is
    recorded (before the draws, whatever the test says) and the rest is
    reported unused."""
    n = 2000
    x = np.random.default_rng(0).uniform(0.0, 10.0, (n, 1))
    with track_budget() as acc:
        res = private_bounds(x, epsilon=1.0, envelope={0: (0.0, 10.0)}, random_state=0)
    eps_test = looseness_n_epsilon(n * 1.0) / n
    assert eps_test == TEST_SHARE  # 2,000 / 16 = 125 > 32
    assert (res.lower[0], res.upper[0]) == (0.0, 10.0)
    assert res.epsilon == 1.0 and res.epsilon_per_column.tolist() == [1.0]
    assert res.epsilon_unused == pytest.approx(1.0 - eps_test, rel=1e-12)
    assert np.isnan(res.quantile_level[0]) and 0.4 < res.loose_fraction[0] < 0.7
    assert acc.spends == [("private_bounds", PrivacyBudget(1.0, 0.0))]


def test_a_loose_envelope_gets_its_whole_part():
    n = 2000
    x = np.random.default_rng(0).normal(600.0, 20.0, (n, 1))
    res = private_bounds(x, epsilon=1.0, envelope={0: (0.0, 1e4)}, random_state=0)
    assert res.loose_fraction[0] > LOOSE_FRACTION and res.epsilon == 1.0
    assert 0.0 < res.lower[0] < 560.0 and 640.0 < res.upper[0] < 1e3


def test_a_kept_envelope_leaves_the_fit_only_its_share():
    """An FM fit whose declared label range the labels fill: the label's
    test keeps the envelope, but the range release records its whole share
    (0.2) before drawing, so the fit gets 0.8 (with the noise a declared fit
    at that epsilon draws), not the unused rest: the two spends add up to
    epsilon whatever the test says."""
    rng = np.random.default_rng(0)
    n = 4000
    X = rng.uniform(0.0, 1.0, (n, 2))
    y = rng.uniform(-1.0, 1.0, n)
    with track_budget() as acc:
        reg = FMLinearRegression(
            epsilon=1.0,
            bounds_X=(0.0, 1.0),
            bounds_y=(-1.0, 1.0),
            tighten_bounds=True,
            public_bounds={0: (0.0, 1.0), 1: (0.0, 1.0)},
            random_state=0,
        ).fit(X, y)
    assert reg.bounds_y_ == (-1.0, 1.0)
    assert reg.bounds_privacy_spent_ == PrivacyBudget(0.2, 0.0)
    assert acc.spends[0] == ("FMLinearRegression.bounds", PrivacyBudget(0.2))
    fit = acc.spends[1][1]
    assert math.isclose(fit.epsilon, 0.8, rel_tol=1e-12)
    assert math.isclose(reg.privacy_spent_.epsilon, 1.0, rel_tol=1e-12)
    # the range release draws from its own stream: the fit's noise is that
    # of a declared fit at the epsilon left, draw for draw
    declared = FMLinearRegression(
        epsilon=0.8,
        bounds_X=(0.0, 1.0),
        bounds_y=(-1.0, 1.0),
        random_state=0,
    ).fit(X, y)
    # equal up to rounding (the tightened fit maps features to [-1, 1]
    # first): the coefficients are pure noise here (true ones 0), ~0.05, so
    # other draws would differ by ~1e-2, rounding by ~1e-9
    np.testing.assert_allclose(reg.coef_, declared.coef_, rtol=1e-6)


def test_a_column_part_below_envelope_part_is_not_tested():
    """One envelope column at n * eps just below ENVELOPE_PART: no test, no
    spend; just above: tested."""
    n = 1000
    x = np.random.default_rng(0).normal(600.0, 20.0, (n, 1))
    below = private_bounds(
        x, epsilon=(ENVELOPE_PART - 1) / n, envelope={0: (0.0, 1e4)}, random_state=0
    )
    assert below.epsilon == 0.0 and np.isnan(below.loose_fraction[0])
    above = private_bounds(
        x, epsilon=(ENVELOPE_PART + 1) / n, envelope={0: (0.0, 1e4)}, random_state=0
    )
    assert np.isfinite(above.loose_fraction[0])
