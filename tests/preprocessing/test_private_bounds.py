"""Private per-feature ranges: the score, the mechanism (exact and audited), the
sampler, the schema and the spend."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from skdp._ranges.private_bounds import (
    KAPPA,
    Q_MAX,
    Q_MIN,
    candidate_grid,
    fence_factor,
    pair_log_probabilities,
    quantile_distance,
    quantile_level,
    sample_quantile_pair,
)
from skdp._ranges.reliability import min_n_epsilon
from skdp.accounting import PrivacyBudget, track_budget
from skdp.preprocessing import PrivateBoundsWarning, private_bounds
from skdp.utils import audit_mechanism

# a tiny public grid and its (arbitrary, data-free) weights for exact checks
SMALL_GRID = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0])
SMALL_LOGW = np.log(np.array([0.5, 1.0, 2.0, 1.0, 1.0, 0.7, 0.3]))
VALUES = (-1.0, 0.0, 1.0, 2.0)  # the data domain of the brute-force checks


def _distance_by_definition(x, g, level):
    below = sum(v < g for v in x)
    upto = sum(v <= g for v in x)
    target = level * len(x)
    return max(0.0, below - target, target - upto)


def _neighbours(x, values=VALUES):
    """Every dataset that differs from ``x`` in one row (values in ``values``)."""
    for i, v in itertools.product(range(len(x)), values):
        if v != x[i]:
            y = list(x)
            y[i] = v
            yield y


def test_quantile_distance_matches_its_definition():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.choice(VALUES, size=7)
        for level in (0.1, 0.25, 0.5, 0.75):
            got = quantile_distance(np.sort(x), SMALL_GRID, level)
            want = [_distance_by_definition(x, g, level) for g in SMALL_GRID]
            np.testing.assert_allclose(got, want)


def test_ties_are_exact_quantiles():
    # 80% zeros: 0 is a 0.25- and a 0.75-quantile (distance 0), -1 and 1 are not
    x = np.sort(np.r_[np.zeros(8), 5.0, 6.0])
    d = quantile_distance(x, np.array([-1.0, 0.0, 1.0]), 0.75)
    assert d.tolist() == [7.5, 0.0, 0.5]


def test_score_sensitivity_is_one_by_brute_force():
    """Replace-one neighbours move every candidate's distance by at most 1 (and
    some by exactly 1), for the levels the mechanism uses."""
    worst = 0.0
    for x in itertools.combinations_with_replacement(VALUES, 4):  # multisets
        for level in (Q_MIN, 0.25, 1 - Q_MIN):
            d = quantile_distance(np.sort(x), SMALL_GRID, level)
            for y in _neighbours(x):
                d2 = quantile_distance(np.sort(y), SMALL_GRID, level)
                worst = max(worst, float(np.abs(d - d2).max()))
    assert worst == 1.0


def _quartile_pair_log_probabilities(x, epsilon):
    """The exact log-probabilities of the quartile pair on SMALL_GRID."""
    sx = np.sort(x)
    return pair_log_probabilities(
        quantile_distance(sx, SMALL_GRID, 0.25),
        quantile_distance(sx, SMALL_GRID, 0.75),
        epsilon,
        SMALL_LOGW,
    )


@pytest.mark.parametrize("epsilon", [0.3, 4.0])
def test_pair_mechanism_is_epsilon_dp_exactly(epsilon):
    """Every output pair's probability moves by at most e^eps between any two
    neighbouring datasets (all datasets of 4 rows on VALUES)."""
    worst = 0.0
    for x in itertools.combinations_with_replacement(VALUES, 4):  # multisets
        lp = _quartile_pair_log_probabilities(x, epsilon)
        for y in _neighbours(x):
            lq = _quartile_pair_log_probabilities(y, epsilon)
            worst = max(worst, float(np.abs(lp - lq).max()))
    assert worst <= epsilon + 1e-12
    assert worst > 0.5 * epsilon  # the bound is nearly attained: a real check


def test_sampler_draws_the_exact_distribution():
    rng = np.random.default_rng(1)
    x = np.sort(rng.choice(VALUES, size=9))
    d_low = quantile_distance(x, SMALL_GRID, 0.25)
    d_high = quantile_distance(x, SMALL_GRID, 0.75)
    eps = 0.8
    p = np.exp(pair_log_probabilities(d_low, d_high, eps, SMALL_LOGW)).ravel()
    n = 20_000
    counts = np.zeros(p.size)
    for _ in range(n):
        i, j = sample_quantile_pair(d_low, d_high, eps, SMALL_LOGW, rng)
        counts[i * SMALL_GRID.size + j] += 1
    keep = p * n >= 5  # chi-square cells with enough expected counts
    assert keep.sum() > 20 and p[~keep].sum() * n < 5
    expected = p[keep] / p[keep].sum() * counts[keep].sum()
    observed = counts[keep]
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_privacy_audit_does_not_refute_claim():
    """Audit on a worst-case pair: one row moved from the bottom to the top."""
    eps = 1.0
    a = np.sort([0.0, 0.0, 1.0, 1.0])
    b = np.sort([0.0, 1.0, 1.0, 2.0])

    def mechanism(x, n, rng):
        # the exact distribution; test_sampler_draws_the_exact_distribution
        # checks that the production sampler draws it
        p = np.exp(_quartile_pair_log_probabilities(x, eps)).ravel()
        return rng.choice(p.size, size=n, p=p / p.sum())

    result = audit_mechanism(mechanism, a, b, n_samples=200_000, random_state=0)
    assert 0.2 * eps < result.epsilon_lower_bound <= eps


def test_infinite_epsilon_gives_the_exact_quantiles():
    x = np.sort(np.arange(1.0, 101.0))  # 1..100
    grid, logw = candidate_grid()
    i, j = sample_quantile_pair(
        quantile_distance(x, grid, 0.25),
        quantile_distance(x, grid, 0.75),
        math.inf,
        logw,
        np.random.default_rng(0),
    )
    assert 25.0 <= grid[i] <= 26.0 and 75.0 <= grid[j] <= 76.0


def test_candidate_grid_is_public_scale_free_and_holds_round_numbers():
    grid, logw = candidate_grid()
    assert np.all(np.diff(grid) > 0) and 0.0 in grid
    assert np.all(np.isin(np.arange(-9999.0, 10000.0), grid))  # integers
    assert np.all(np.isin([1e-6, 0.0125, 1990.0, 37.5, 1.5e6, -2.5e11], grid))
    # each decade weighs about ln 10 (the log-uniform measure)
    decade = (grid >= 1.0) & (grid < 10.0)
    assert np.exp(logw[decade]).sum() == pytest.approx(math.log(10), rel=1e-3)
    assert grid[-1] < 1e12 and grid[np.searchsorted(grid, 0.0) + 1] == 1e-6


def test_quantile_level_and_fences():
    assert quantile_level(100, 0.01) == Q_MAX
    assert quantile_level(10**9, 1.0) == Q_MIN
    assert quantile_level(1000, 1.0) == pytest.approx(KAPPA / 1000)
    assert fence_factor(0.25) == pytest.approx(1.5, rel=1e-3)
    # the fence sits at the same normal quantile for every level
    for q in (0.01, 0.05, 0.25):
        z = stats.norm.ppf(1 - q)
        assert z + 2 * z * fence_factor(q) == pytest.approx(2.698, abs=1e-3)


@pytest.mark.parametrize(
    "make",
    [
        lambda rng, n: rng.normal(50.0, 10.0, n),
        lambda rng, n: rng.lognormal(10.0, 1.0, n),
        lambda rng, n: 1990.0 + rng.integers(0, 20, n),  # magnitude >> spread
        lambda rng, n: rng.normal(0.0, 1e-3, n),
        lambda rng, n: np.where(rng.random(n) < 0.85, 0.0, rng.integers(1, 40, n)),
    ],
)
def test_ranges_hold_the_data_at_a_large_budget(make):
    """At n * eps = 20,000 per column the miss odds are below e^-60: the range
    holds the central 98% of the data and is at most 3x its full width."""
    rng = np.random.default_rng(2)
    x = make(rng, 4000)
    res = private_bounds(x[:, None], epsilon=5.0, random_state=3)
    lo, hi = res.lower[0], res.upper[0]
    q01, q99 = np.quantile(x, [0.01, 0.99])
    assert lo <= q01 and hi >= q99
    assert hi - lo <= 3 * (x.max() - x.min())


def test_schema_and_public_bounds_cost_nothing():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "age": rng.normal(40, 10, 500),
            "member": rng.random(500) < 0.3,
            "grade": pd.Categorical(rng.integers(1, 4, 500), categories=[1, 2, 3, 4]),
            "score": rng.normal(0, 1, 500),
        }
    )
    with track_budget() as acc:
        res = private_bounds(
            df,
            epsilon=2.0,
            public_bounds={"score": (-5, 5)},
            public_categories=["grade"],
            random_state=0,
        )
    assert res.estimated.tolist() == [True, False, False, False]
    assert (res.lower[1:].tolist(), res.upper[1:].tolist()) == (
        [0.0, 1.0, -5.0],
        [1.0, 4.0, 5.0],
    )
    assert res.epsilon == 2.0
    assert res.epsilon_per_column.tolist() == [2.0, 0.0, 0.0, 0.0]
    assert np.isnan(res.quantile_level[1:]).all() and res.quantile_level[0] > 0
    assert acc.total == PrivacyBudget(2.0, 0.0)
    # all public: nothing is spent or recorded
    with track_budget() as acc:
        res = private_bounds(df[["member"]], epsilon=2.0, random_state=0, source="mine")
    assert res.epsilon == 0.0 and acc.spends == []


def test_spend_is_recorded_under_its_source():
    X = np.random.default_rng(0).normal(size=(2000, 3))
    with track_budget() as acc:
        private_bounds(X, epsilon=1.5, random_state=0, source="mine")
    assert acc.spends == [("mine", PrivacyBudget(1.5, 0.0))]


def test_refuses_where_the_budget_is_too_small_before_any_spend():
    """n * eps_c = 37.5 per column, below the refusal threshold: a clear
    error naming what to declare and what would do, nothing recorded; with
    small_budget="warn" the old release with a warning; just above the
    threshold, no error."""
    X = np.random.default_rng(0).normal(size=(300, 4))
    with track_budget() as acc:
        with pytest.raises(ValueError, match="column 0 gets 37.5") as err:
            private_bounds(X, epsilon=0.5, random_state=0)
    assert acc.spends == []
    message = str(err.value)
    threshold = min_n_epsilon(300)
    assert f"n * epsilon >= {threshold:.0f} per column for n = 300" in message
    assert "bounds_X / bounds_y" in message and "public_bounds" in message
    assert f"{threshold / 37.5:.3g} times the epsilon" in message
    # the rows that would do: the least n with n * eps_c >= min_n_epsilon(n)
    rows = int(message.split("use at least ")[1].split(" rows")[0].replace(",", ""))
    assert rows * 0.125 >= min_n_epsilon(rows) > (rows - 1) * 0.125
    with pytest.warns(PrivateBoundsWarning, match="column 0 gets 37.5"):
        private_bounds(X, epsilon=0.5, random_state=0, small_budget="warn")
    n = int(threshold / 0.5) + 1
    X = np.random.default_rng(0).normal(size=(n, 1))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivateBoundsWarning)
        private_bounds(X, epsilon=0.5, random_state=0)
    with pytest.raises(ValueError, match="small_budget"):
        private_bounds(X, epsilon=0.5, small_budget="no")


def test_label_column_gets_as_much_as_the_other_estimated_columns():
    X = np.random.default_rng(0).normal(size=(4000, 4))
    with track_budget() as acc:
        res = private_bounds(
            X, epsilon=2.0, public_bounds={1: (-9, 9)}, label_column=3, random_state=0
        )
    np.testing.assert_allclose(res.epsilon_per_column, [0.5, 0.0, 0.5, 1.0])
    assert acc.spends == [("private_bounds", PrivacyBudget(2.0, 0.0))]
    # alone, or public: the others split equally
    alone = private_bounds(X[:, [3]], epsilon=2.0, label_column=0, random_state=0)
    assert alone.epsilon_per_column.tolist() == [2.0]
    public = private_bounds(
        X, epsilon=2.0, public_bounds={3: (-9, 9)}, label_column=3, random_state=0
    )
    np.testing.assert_allclose(public.epsilon_per_column, [2 / 3, 2 / 3, 2 / 3, 0])


@pytest.mark.parametrize(
    "X, kwargs, err, match",
    [
        (np.array([[np.nan], [1.0]]), {}, ValueError, "finite"),
        (np.ones((3, 2)), {"public_bounds": [(0, 1)]}, TypeError, "dict"),
        (np.ones((3, 2)), {"public_bounds": {2: (0, 1)}}, ValueError, "index 2"),
        (np.ones((3, 2)), {"public_bounds": {"a": (0, 1)}}, ValueError, "'a'"),
        (np.ones((3, 2)), {"public_bounds": {0: (1, 0)}}, ValueError, "lower <"),
        (np.ones((3, 2)), {"public_bounds": {0: "x"}}, ValueError, "pair"),
        (np.ones((3, 2)), {"epsilon": 0.0}, ValueError, "epsilon"),
        (np.ones((3, 2)), {"label_column": 2}, ValueError, "label_column"),
        (np.ones(3), {}, ValueError, "2-dimensional"),
    ],
)
def test_bad_input(X, kwargs, err, match):
    kwargs = {"epsilon": 1.0, **kwargs}
    with pytest.raises(err, match=match):
        private_bounds(X, random_state=0, small_budget="ignore", **kwargs)


def test_input_unchanged_and_seeded():
    X = np.random.default_rng(0).normal(size=(3000, 2))
    X0 = X.copy()
    a = private_bounds(X, epsilon=2.0, random_state=5)
    b = private_bounds(X, epsilon=2.0, random_state=5)
    c = private_bounds(X, epsilon=2.0, random_state=6)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(a.lower, b.lower)
    assert not np.array_equal(a.lower, c.lower)
