"""Issue 35 item 2: private ranges that know when they cannot work.

The failure bound and the refusal threshold (exact checks of the formulas),
the coverage guarantee against the stated probability (sampling, tolerances
from the number of draws) and the looseness test's false keeps."""

import math

import numpy as np
import pytest
from scipy import stats

from skdp._ranges import reliability
from skdp._ranges.envelope_budget import TEST_N_EPSILON, looseness_n_epsilon
from skdp._ranges.private_bounds import CENTRE_WIDTH_BELOW, candidate_grid
from skdp._ranges.reliability import (
    BETA,
    centre_width_failure_bound,
    failure_bound,
    min_n_epsilon,
    pair_failure_bound,
)
from skdp.preprocessing import private_bounds


# --------------------------------------------------------------------------- #
# the bound and the threshold: exact
# --------------------------------------------------------------------------- #
def test_centre_width_bound_is_its_formula():
    """beta_cw(x, n) = (rho_m + rho_w) e^{-3x/64} + (M/om_m + M_w/om_w)
    e^{-7x/64} with the reference column's masses, recomputed here."""
    grid, logw = candidate_grid()
    M, M_w = np.exp(logw).sum(), np.exp(logw[grid >= 0]).sum()
    assert M == pytest.approx(83.909, abs=1e-3) and M_w == pytest.approx(42.455, 1e-4)
    n, c = 1000, reliability.REFERENCE_CV
    z = stats.norm.ppf(1 - 1 / (2 * n))
    om_m = (stats.norm.ppf(9 / 16) - stats.norm.ppf(7 / 16)) * c
    om_w = math.log(stats.norm.ppf(25 / 32) / stats.norm.ppf(23 / 32))
    rho_m = 2 * z * c / om_m
    rho_w = (
        math.log(stats.norm.ppf(5 / 8) * 2 * n / 1.25)
        + math.log(z / stats.norm.ppf(7 / 8))
    ) / om_w
    for x in (100.0, 128.0, 150.0, 200.0):
        want = (rho_m + rho_w) * math.exp(-3 * x / 64) + (
            M / om_m + M_w / om_w
        ) * math.exp(-7 * x / 64)
        assert centre_width_failure_bound(x, n) == pytest.approx(want, rel=1e-12)
    # the numbers the docstrings quote
    got = [failure_bound(x, 1000) for x in (100, 128, 150, 200, 256, 300)]
    np.testing.assert_allclose(
        got, [0.471, 0.116, 0.0407, 0.00388, 0.0149, 0.00111], rtol=0.01
    )
    assert pair_failure_bound(160, 1000, 0.25) > 1  # vacuous: why 256


@pytest.mark.parametrize("n", [10, 300, 1000, 10_000, 10**6])
def test_threshold_is_the_least_budget_with_the_bound_below_beta(n):
    t = min_n_epsilon(n)
    assert failure_bound(t, n) <= BETA < failure_bound(t - 0.02, n)
    assert 110 < t < CENTRE_WIDTH_BELOW
    # above it the bound stays below BETA, through the switch to the pair
    for x in np.geomspace(t, 1e7, 400):
        assert failure_bound(x, n) <= BETA
    assert failure_bound(math.inf, n) == 0.0


def test_threshold_values():
    got = [round(min_n_epsilon(n)) for n in (300, 1000, 10_000, 10**6)]
    assert got == [142, 146, 151, 158]


# --------------------------------------------------------------------------- #
# the coverage guarantee, against the stated probability
# --------------------------------------------------------------------------- #
def _failures(y, n_eps, draws, seed, **kw):
    """Draws of the range of column ``y`` at ``n * eps_c = n_eps`` that miss
    its central half. The draws are the columns of one release (each column
    its own exponential mechanisms, independent noise): ``draws`` copies of
    ``y`` sharing ``draws * eps_c``."""
    n = y.size
    X = np.repeat(y[:, None], draws, axis=1)
    res = private_bounds(X, epsilon=draws * n_eps / n, random_state=seed, **kw)
    q1, q3 = np.quantile(y, [0.25, 0.75])
    return int(np.sum((res.lower > q1) | (res.upper < q3)))


@pytest.mark.parametrize(
    "n, n_eps",
    [
        (1000, None),  # at the threshold: median and half-width
        (300, 200.0),  # median and half-width
        (1000, 300.0),  # the quantile pair
        (10_000, 1000.0),  # the pair at q = 0.064
    ],
)
def test_label_range_covers_the_central_half_with_the_stated_probability(n, n_eps):
    """A label column at the edge of the reference kind (normal, sd 50
    around 500: a tenth of the mean) released with n * eps_c at or above the
    threshold: over 2,000 draws the fraction that miss the labels' central
    half is at most the stated bound plus 3 binomial standard errors
    (measured: 0 of 2,000 in each case; the bound is conservative)."""
    draws = 2000
    n_eps = min_n_epsilon(n) if n_eps is None else n_eps
    beta = failure_bound(n_eps, n)
    assert beta <= BETA
    y = np.random.default_rng(0).normal(500.0, 50.0, n)
    misses = _failures(y, n_eps, draws, seed=1)
    assert misses / draws <= beta + 3 * math.sqrt(beta * (1 - beta) / draws)


def test_the_failure_event_is_not_vacuous_below_the_threshold():
    """Far below the threshold (released anyway, small_budget="ignore") the
    same event happens often: the coverage test above can see failures."""
    y = np.random.default_rng(0).normal(500.0, 50.0, 1000)
    misses = _failures(y, 30.0, 2000, seed=1, small_budget="ignore")
    assert misses / 2000 > 0.2  # measured on 180 +- 50: 1,070 of 2,000


# --------------------------------------------------------------------------- #
# the looseness test: its false keeps fall with the budget
# --------------------------------------------------------------------------- #
def test_looseness_test_spend_grows_with_the_budget():
    assert looseness_n_epsilon(160) == TEST_N_EPSILON
    assert looseness_n_epsilon(512) == TEST_N_EPSILON
    assert looseness_n_epsilon(2000) == 125.0
    # a column in one window keeps its envelope with prob exp(-0.1 N_t) / 2
    p = [math.exp(-0.1 * looseness_n_epsilon(x)) / 2 for x in (512, 1000, 2000)]
    np.testing.assert_allclose(p, [0.0204, 0.000965, 1.86e-6], rtol=0.01)


def _keeps(n, n_eps, states):
    """How many of ``states`` releases keep an envelope 100 times as wide as
    the column's data (uniform on [500, 700], envelope [0, 20,000])."""
    x = np.random.default_rng(0).uniform(500.0, 700.0, (n, 1))
    kept = 0
    for seed in range(states):
        res = private_bounds(
            x, epsilon=n_eps / n, envelope={0: (0.0, 2e4)}, random_state=seed
        )
        kept += (res.lower[0], res.upper[0]) == (0.0, 2e4)
    return kept


def test_a_loose_envelope_is_kept_under_half_a_percent_of_2000_states():
    """Issue 35: on a column whose envelope is 100 times too wide, the loose
    range is kept in under 0.5% of 2,000 random states at n * eps_c = 2,000
    (the bound is 2e-6 per state; measured 0 of 2,000, and 48 of 2,000 with
    the fixed n * eps_t = 32 of before). About 10 s."""
    assert _keeps(2000, 2000.0, 2000) < 10
