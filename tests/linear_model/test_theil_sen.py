"""PrivateTheilSenRegressor: the exact privacy of each release (recomputed here
from the definitions, not from the module), the budget split, the line it
recovers, and clear errors."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import BudgetExceededError
from skdp.linear_model import PrivateTheilSenRegressor
from skdp.linear_model import _theil_sen as ts_module
from skdp.linear_model._theil_sen import SELECTION_SHARE
from skdp.linear_model._theil_sen_stats import (
    CUTS,
    cut_predictions,
    kendall_numerators,
)
from skdp.utils import audit_mechanism


# ------------------------------------------------- definitions, written anew
def _kendall_by_definition(x, y):
    n = x.size
    return sum(
        int(np.sign(x[i] - x[k]) * np.sign(y[i] - y[k]))
        for i in range(n)
        for k in range(i + 1, n)
    )


def _selection_log_probs(X, y, eps_s):
    """log P(feature j): exponential mechanism, utility |S_j| / (n - 1), sens 2."""
    n = X.shape[0]
    u = np.array([abs(_kendall_by_definition(X[:, j], y)) for j in range(X.shape[1])])
    logw = eps_s * (u / (n - 1)) / 4.0
    return logw - np.logaddexp.reduce(logw)


def _readings(x, y, pairs):
    """Each non-flat pair's line at the cuts, by the two-point formula."""
    out = [[], []]
    for a, b in pairs:
        if x[a] == x[b]:
            continue
        for c, cut in enumerate(CUTS):
            out[c].append(y[a] + (y[b] - y[a]) * (cut - x[a]) / (x[b] - x[a]))
    return [np.array(v) for v in out]


def _median_log_density(values, t, eps_c, lo, hi):
    """log f(t), f ∝ exp(-eps_c |#{v < t} - m/2| / 2) on [lo, hi] (Smith)."""
    v = np.sort(np.clip(values, lo, hi))
    ends = np.concatenate([[lo], v, [hi]])
    m = v.size
    weights = np.exp(-eps_c * np.abs(np.arange(m + 1) - m / 2) / 2)
    norm = np.sum(np.diff(ends) * weights)
    rank = np.sum(v < t)
    return -eps_c * abs(rank - m / 2) / 2 - math.log(norm)


def _joint_log_density(X, y, pairs, j, t25, t75, eps, lo, hi):
    eps_s = SELECTION_SHARE * eps
    eps_c = (eps - eps_s) / 2
    x = X[:, j]
    r25, r75 = _readings(x, y, pairs)
    return (
        _selection_log_probs(X, y, eps_s)[j]
        + _median_log_density(r25, t25, eps_c, lo, hi)
        + _median_log_density(r75, t75, eps_c, lo, hi)
    )


# ------------------------------------------------------------------ privacy
def test_the_joint_release_is_epsilon_dp_on_every_neighbour_of_a_tiny_set():
    """(feature, both medians) on 6 rows, 2 features, a fixed pairing: every
    replace-one neighbour from a grid of rows, every feature and a grid of
    outputs: the joint log-ratio is at most eps, each median's at most its
    eps_c and the choice's at most eps_s; and a median's bound is nearly
    reached (its calibration is not loose by 2x: it carries 9/10 of eps)."""
    eps, lo, hi = 1.0, -1.0, 2.0
    eps_s = SELECTION_SHARE * eps
    eps_c = (eps - eps_s) / 2
    X = np.array(
        [[0.0, 0.2], [0.25, 0.9], [0.5, 0.5], [0.75, 0.1], [1.0, 0.6], [0.6, 0.6]]
    )
    y = np.array([0.0, 0.3, 0.4, 0.9, 1.0, -0.5])
    pairs = np.array([[0, 1], [2, 3], [4, 5]])
    grid_rows = [
        (a, b, c) for a in (0.0, 0.5, 1.0) for b in (0.0, 1.0) for c in (lo, 0.5, hi)
    ]
    ts = np.linspace(lo, hi, 61)
    joint = choice = median = 0.0
    for i, (a, b, c) in itertools.product(range(6), grid_rows):
        X2, y2 = X.copy(), y.copy()
        X2[i], y2[i] = (a, b), c
        sel = _selection_log_probs(X, y, eps_s) - _selection_log_probs(X2, y2, eps_s)
        choice = max(choice, np.max(np.abs(sel)))
        for j in range(2):
            r1, r2 = _readings(X[:, j], y, pairs), _readings(X2[:, j], y2, pairs)
            logs = [
                np.array([_median_log_density(r[k], t, eps_c, lo, hi) for t in ts])
                for r in (r1, r2)
                for k in range(2)
            ]
            d25, d75 = logs[0] - logs[2], logs[1] - logs[3]
            median = max(median, np.max(np.abs(d25)), np.max(np.abs(d75)))
            # every (t25, t75) pair: the sum of the three log-ratios
            both = np.abs(sel[j] + d25[:, None] + d75[None, :])
            joint = max(joint, np.max(both))
    assert choice <= eps_s + 1e-12 and median <= eps_c + 1e-12
    assert joint <= eps + 1e-9
    assert median >= 0.7 * eps_c


def test_the_choice_utility_moves_by_its_full_sensitivity():
    """|S_j| / (n - 1) moves by exactly 2 when a row concordant with every
    other is replaced by one discordant with every other: the 2 of the
    exponential mechanism's calibration is attained, not loose."""
    n = 9
    x = np.arange(n, dtype=float)
    y = np.arange(n, dtype=float)
    x2, y2 = x.copy(), y.copy()
    x2[0], y2[0] = -1.0, 100.0  # smallest x, largest y: discordant with all
    u = abs(_kendall_by_definition(x, y)) / (n - 1)
    u2 = abs(_kendall_by_definition(x2, y2)) / (n - 1)
    assert u - u2 == 2.0
    both = np.column_stack([x, x2])
    assert kendall_numerators(both, y).tolist() == [36, 36]  # x2 keeps the order
    assert kendall_numerators(np.column_stack([x2]), y2).tolist() == [20]


def test_the_selection_law_is_the_stated_exponential_mechanism():
    """2,000 fits on 30 rows with 3 features: the frequencies of ``feature_``
    match exp(eps_s |S_j| / (4 (n - 1))) normalised (chi-square, 2 dof, at
    the 1e-3 level: the test fails 1 time in 1,000 by chance)."""
    rng = np.random.default_rng(1)
    n, eps = 30, 8.0
    X = rng.uniform(0, 1, (n, 3))
    y = 0.6 * X[:, 0] + 0.3 * X[:, 1] + rng.normal(0, 0.3, n)
    expected = np.exp(_selection_log_probs(X, y, SELECTION_SHARE * eps))
    assert expected.min() > 0.05  # a test with power on every cell
    counts = np.zeros(3)
    gen = np.random.default_rng(7)
    for _ in range(2000):
        reg = PrivateTheilSenRegressor(
            epsilon=eps, bounds_X=(0, 1), bounds_y=(-2, 3), random_state=gen
        ).fit(X, y)
        counts[reg.feature_] += 1
    p = stats.chisquare(counts, 2000 * expected).pvalue
    assert p > 1e-3, (counts, expected)


def test_the_medians_get_the_rest_of_the_budget(monkeypatch):
    """Each cut's median is drawn at (1 - SELECTION_SHARE) eps / 2 with auto
    choice, at eps / 2 with a feature given, over bounds_y."""
    seen = []
    real = ts_module._private_median

    def spy(values, epsilon, lower, upper, rng):
        seen.append((epsilon, lower, upper))
        return real(values, epsilon, lower, upper, rng)

    monkeypatch.setattr(ts_module, "_private_median", spy)
    X = np.random.default_rng(0).uniform(0, 1, (50, 3))
    y = X[:, 0]
    kw = {"epsilon": 2.0, "bounds_X": (0, 1), "bounds_y": (-1, 2)}
    PrivateTheilSenRegressor(**kw).fit(X, y)
    assert seen == [((1 - SELECTION_SHARE) * 2.0 / 2, -1.0, 2.0)] * 2
    seen.clear()
    PrivateTheilSenRegressor(**kw, feature=2).fit(X, y)
    assert seen == [(1.0, -1.0, 2.0)] * 2


def test_the_spend_is_recorded_before_any_draw(monkeypatch):
    """A refused spend draws nothing: no generator is even made."""
    made = []
    real = ts_module.noise_generator
    monkeypatch.setattr(
        ts_module, "noise_generator", lambda rs: made.append(rs) or real(rs)
    )
    X = np.random.default_rng(0).uniform(0, 1, (40, 2))
    y = X[:, 0]
    refused = PrivateTheilSenRegressor(epsilon=1.0, bounds_X=(0, 1), bounds_y=(0, 1))
    with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
        refused.fit(X, y)
    assert made == []
    reg = PrivateTheilSenRegressor(epsilon=0.7, bounds_X=(0, 1), bounds_y=(0, 1))
    with track_budget() as ledger:
        reg.fit(X, y)
    assert reg.privacy_spent_ == PrivacyBudget(0.7, 0.0)
    assert ledger.total == PrivacyBudget(0.7, 0.0) and len(ledger.spends) == 1


# --------------------------------------------------------- the statistics
@pytest.mark.parametrize("n", [7, 60])
def test_kendall_numerators_equal_the_definition_both_ways(n):
    """The brute-force path and scipy's tau-b path give the exact integer of
    the definition, on data with many ties in x and y."""
    rng = np.random.default_rng(n)
    X = rng.integers(0, 4, (n, 3)).astype(float)
    X[:, 2] = 1.0  # a constant column: every pair ties
    y = rng.integers(0, 3, n).astype(float)
    want = [_kendall_by_definition(X[:, j], y) for j in range(3)]
    assert kendall_numerators(X, y).tolist() == want
    assert kendall_numerators(X, y, brute_force_below=0).tolist() == want


def test_cut_predictions_equal_the_two_point_formula_and_drop_flat_pairs():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, 40) / 4.0
    y = rng.normal(size=40)
    pairs = rng.permutation(40).reshape(20, 2)
    got = cut_predictions(x, y, pairs)
    want = _readings(x, y, pairs)
    assert got.shape == (2, len(want[0])) and len(want[0]) < 20
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------- the model
def test_without_noise_a_noiseless_line_is_recovered_in_user_units():
    """eps = inf on y = 2 x_1 + 1 with x_1 in [10, 20]: the exact line (every
    pair's line is the line), its feature chosen, on columns in raw units."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 1, 200), rng.uniform(10, 20, 200)])
    y = 2 * X[:, 1] + 1
    reg = PrivateTheilSenRegressor(
        epsilon=np.inf, bounds_X=[(0, 1), (10, 20)], bounds_y=(0, 60)
    ).fit(X, y)
    assert reg.feature_ == 1
    np.testing.assert_allclose(reg.coef_, [0.0, 2.0], atol=1e-12)
    assert reg.intercept_ == pytest.approx(1.0, abs=1e-10)
    np.testing.assert_allclose(reg.cut_values_, [2 * 12.5 + 1, 2 * 17.5 + 1])


def test_a_private_fit_on_many_rows_is_close_to_the_line():
    """n = 20,000, eps = 1, y = 3 x_1 + N(0, 1), x in [0, 10]. Each cut's
    readings have a spread of about 3 (the noise over the pair's x gap), so
    ranks m/2 +- 30 (the exponential mechanism's error, O(log(1/b) / eps_c)
    with eps_c = 0.375, far beyond 1 - 1e-6) move the median by about
    0.01: slope within 0.05 and intercept within 0.3 hold with a wide margin."""
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 10, (20_000, 3))
    y = 3 * X[:, 1] + rng.normal(0, 1, 20_000)
    reg = PrivateTheilSenRegressor(
        epsilon=1.0, bounds_X=(0, 10), bounds_y=(-5, 35), random_state=0
    ).fit(X, y)
    assert reg.feature_ == 1
    assert abs(reg.coef_[1] - 3) < 0.05 and abs(reg.intercept_) < 0.3


def test_predictions_stay_in_bounds_y_and_inputs_are_not_modified():
    rng = np.random.default_rng(2)
    X = rng.uniform(-5, 5, (100, 2))  # outside the declared box: clipped
    y = 100 * X[:, 0]
    X0, y0 = X.copy(), y.copy()
    reg = PrivateTheilSenRegressor(
        epsilon=0.5, bounds_X=(0, 1), bounds_y=(-3, 4), random_state=1
    ).fit(X, y)
    pred = reg.predict(rng.uniform(-50, 50, (500, 2)))
    assert pred.min() >= -3 and pred.max() <= 4
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"feature": 5}, "feature must be 'auto' or a column index below 2"),
        ({"feature": "best"}, "feature"),
        ({"bounds_y": (3, 1)}, "bounds_y"),
        ({"epsilon": 0}, "epsilon"),
    ],
)
def test_bad_parameters_get_clear_errors(kwargs, match):
    X = np.zeros((10, 2))
    y = np.zeros(10)
    params = {"bounds_X": (0, 1), "bounds_y": (0, 1), **kwargs}
    with pytest.raises(ValueError, match=match):
        PrivateTheilSenRegressor(**params).fit(X, y)


def test_one_row_is_refused():
    with pytest.raises(ValueError, match="minimum of 2"):
        PrivateTheilSenRegressor(bounds_X=(0, 1), bounds_y=(0, 1)).fit([[0.5]], [1.0])


def test_audit_of_the_median_release_on_a_worst_case_pair():
    """The median release the fit calls (the spy test above checks with which
    epsilon): readings {.2, .4, .6, .8} against {.2, .4, .6, 0}: the moved value
    shifts the rank of every point in (0, 0.8). The empirical lower bound on
    epsilon from 40,000 draws per side stays below eps_c = 1 and is not
    vacuous."""
    eps_c = 1.0

    def draws(values, n, rng):
        return [
            ts_module._private_median(values, eps_c, 0.0, 1.0, rng) for _ in range(n)
        ]

    a, b = np.array([0.2, 0.4, 0.6, 0.8]), np.array([0.2, 0.4, 0.6, 0.0])
    res = audit_mechanism(draws, a, b, n_samples=40_000, random_state=3)
    assert res.epsilon_lower_bound <= eps_c
    assert res.epsilon_lower_bound > 0.3
