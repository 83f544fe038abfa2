"""skdp.tools: exact sensitivities, exact quantile densities, spends, numpy parity."""

import itertools
import math
import warnings

import numpy as np
import pytest

from skdp import tools
from skdp._smith_quantile import interval_log_probabilities, sample_quantile
from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.preprocessing._private_scaler import MOMENT_WEIGHT
from skdp.tools import _quantiles
from skdp.tools._histograms import integer_laplace_noise
from skdp.tools._moments import moment_sums, moments_sensitivity
from skdp.tools._reduction import Reduction

LAM = MOMENT_WEIGHT
# per-value candidates in [-1, 1] units: the ends, 0 and the L1 maximizers of
# (a - b, lambda (a^2 - b^2)) (a = 1, b = -1/(2 lambda) and mirrored)
VALUES = np.array([-1.0, -1 / (2 * LAM), 0.0, 1 / (2 * LAM), 1.0])


# --- exact: sensitivities of the moment releases by brute force -----------------


@pytest.mark.parametrize(
    "shape, axis",
    [((3,), None), ((3, 2), None), ((3, 2), 0), ((3, 2), 1), ((3, 2, 2), (0, 2))],
)
@pytest.mark.parametrize("squares", [False, True])
def test_moment_sensitivity_equals_brute_force(shape, axis, squares):
    rng = np.random.default_rng(0)
    base = rng.uniform(-1, 1, shape)
    per_record = math.prod(shape[1:])
    worst = 0.0
    stats = []
    for row in itertools.product(VALUES, repeat=per_record):
        data = base.copy()
        data[-1] = np.reshape(row, shape[1:])
        red = Reduction(data, axis)
        ones = np.ones(red.n_outputs)
        stats.append(moment_sums(red.values, -ones, ones, squares))
    stats = np.array(stats)
    for i in range(len(stats)):
        worst = max(worst, np.abs(stats - stats[i]).sum(axis=1).max())
    claimed = moments_sensitivity(per_record, with_squares=squares)
    # attained (the candidates hold the maximizers) and never exceeded
    assert worst == pytest.approx(claimed, rel=1e-12)


def test_reduction_geometry():
    # a record is a row: E elements, e of them in each of k outputs, e k = E
    for shape, axis, e, k in [
        ((5,), None, 1, 1),
        ((5, 3), None, 3, 1),
        ((5, 3), 0, 1, 3),
        ((5, 3), 1, 3, 1),
        ((5, 3, 4), (0, 2), 4, 3),
        ((5, 3, 4), 2, 4, 3),
    ]:
        red = Reduction(np.zeros(shape), axis)
        assert (red.per_output, red.touched) == (e, k)
        assert red.per_output * red.touched == red.per_record


# --- exact: histograms' sensitivity ---------------------------------------------


@pytest.mark.parametrize("shape", [(3,), (3, 2)])
def test_histogram_sensitivity_by_brute_force(shape):
    base = np.random.default_rng(1).uniform(0, 1, shape)
    per_record = math.prod(shape[1:])
    candidates = [-0.5, 0.1, 0.5, 0.9]  # outside the bins, and in each bin
    counts = []
    for row in itertools.product(candidates, repeat=per_record):
        data = base.copy()
        data[-1] = np.reshape(row, shape[1:])
        counts.append(np.histogram(data, bins=3, range=(0, 1))[0])
    counts = np.array(counts)
    worst = max(np.abs(counts - c).sum(axis=1).max() for c in counts)
    assert worst == 2 * per_record  # the scale the function uses, times epsilon


def test_integer_laplace_noise_has_the_stated_pmf():
    # statistical: frequencies of -3..3 within 5 standard deviations of
    # P(k) = (1 - a) / (1 + a) a^|k|, a = exp(-epsilon / sensitivity)
    eps, sens, n = 1.0, 2.0, 100_000
    noise = integer_laplace_noise(n, eps, sens, np.random.default_rng(0))
    a = math.exp(-eps / sens)
    for k in range(-3, 4):
        p = (1 - a) / (1 + a) * a ** abs(k)
        assert abs(np.mean(noise == k) - p) <= 5 * math.sqrt(p * (1 - p) / n)
    # the ratio of neighbouring outputs' probabilities is exp(eps |s| / sens)
    # for a shift s: exp(eps) at |s| = sens, the claimed bound


# --- exact: the quantile mechanism's output density --------------------------------


def _density(x, q, eps, lower, upper, t, sensitivity=1):
    log_p, left, length = interval_log_probabilities(
        x, q, eps, lower, upper, sensitivity
    )
    i = np.clip(np.searchsorted(left, t, side="right") - 1, 0, left.size - 1)
    return np.exp(log_p[i]) / length[i]


@pytest.mark.parametrize("q", [0.0, 0.3, 0.5, 1.0])
def test_quantile_density_ratio_is_at_most_exp_epsilon(q):
    # tiny data in [0, 1] with a tie; every neighbour replaces one value by a
    # candidate (the ends, the data's own values, points between); the output
    # densities are compared at the midpoints of every piece of both partitions
    eps, lower, upper = 1.0, 0.0, 1.0
    x = np.array([0.1, 0.4, 0.4, 0.8])
    candidates = np.unique(np.concatenate([x, np.linspace(0, 1, 11), [0.05, 0.95]]))
    worst = 0.0
    for j, v in itertools.product(range(x.size), candidates):
        y = x.copy()
        y[j] = v
        cuts = np.unique(np.concatenate([[lower, upper], x, y]))
        t = (cuts[:-1] + cuts[1:]) / 2
        ratio = np.abs(np.log(_density(x, q, eps, lower, upper, t))
                       - np.log(_density(y, q, eps, lower, upper, t)))  # fmt: skip
        worst = max(worst, ratio.max())
    assert worst <= eps + 1e-12
    # not vacuous: inner levels reach 0.72-0.74 here (the bound is not tight
    # on 4 values); at q = 0 or 1 the utility moves one way at every t, and
    # about epsilon / 2 (0.48-0.49) is reached
    assert worst > (0.6 if 0 < q < 1 else 0.4) * eps


def test_quantile_density_ratio_with_records_of_two_values():
    # axis=None over (n, 2): a record moves two values, the utility's
    # sensitivity is 2 (sensitivity=per_output), and the ratio stays <= e^eps
    eps = 1.0
    X = np.array([[0.1, 0.7], [0.3, 0.35], [0.9, 0.5]])
    worst = 0.0
    for a, b in itertools.product(np.linspace(0, 1, 6), repeat=2):
        Y = X.copy()
        Y[0] = (a, b)
        cuts = np.unique(np.concatenate([[0, 1], X.ravel(), Y.ravel()]))
        t = (cuts[:-1] + cuts[1:]) / 2
        dx = _density(X.ravel(), 0.5, eps, 0, 1, t, sensitivity=2)
        dy = _density(Y.ravel(), 0.5, eps, 0, 1, t, sensitivity=2)
        worst = max(worst, np.abs(np.log(dx) - np.log(dy)).max())
    assert worst <= eps + 1e-12


def test_quantile_sampler_draws_the_stated_distribution():
    # statistical: interval frequencies within 5 standard deviations
    x = np.array([0.1, 0.4, 0.45, 0.8])
    log_p, left, _ = interval_log_probabilities(x, 0.5, 1.0, 0.0, 1.0)
    rng = np.random.default_rng(0)
    n = 5_000
    draws = np.array([sample_quantile(x, 0.5, 1.0, 0.0, 1.0, 1, rng) for _ in range(n)])
    freq = np.bincount(np.searchsorted(left, draws, side="right") - 1, minlength=5) / n
    p = np.exp(log_p)
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n))


def test_quantile_splits_epsilon_over_levels_and_touched_outputs(monkeypatch):
    seen = []
    original = _quantiles.sample_quantile

    def spy(x, q, eps, lower, upper, sensitivity, rng):
        seen.append((eps, sensitivity))
        return original(x, q, eps, lower, upper, sensitivity, rng)

    monkeypatch.setattr(_quantiles, "sample_quantile", spy)
    X = np.random.default_rng(0).uniform(0, 1, (20, 3))
    tools.quantile(X, [0.25, 0.75], epsilon=1.2, bounds=(0, 1), axis=0)
    assert set(seen) == {(1.2 / 6, 1)}  # 2 levels x 3 columns, one value each
    seen.clear()
    tools.quantile(X, 0.5, epsilon=1.2, bounds=(0, 1), axis=1)
    assert set(seen) == {(1.2, 3)}  # a row touches its own output only
    seen.clear()
    tools.median(X, epsilon=1.2, bounds=(0, 1))
    assert seen == [(1.2, 3)]


# --- spends ---------------------------------------------------------------------

X2 = np.random.default_rng(2).uniform(0, 10, (200, 3))
CALLS = {
    "mean": lambda e: tools.mean(X2, e, (0, 10), axis=0),
    "var": lambda e: tools.var(X2, e, (0, 10)),
    "std": lambda e: tools.std(X2, e, (0, 10), axis=1),
    "sum": lambda e: tools.sum(X2[:, 0], e, (0, 10)),
    "count_nonzero": lambda e: tools.count_nonzero(X2 > 5, e, axis=0),
    "quantile": lambda e: tools.quantile(X2, [0.1, 0.9], e, (0, 10), axis=0),
    "percentile": lambda e: tools.percentile(X2[:, 0], 50, e, (0, 10)),
    "median": lambda e: tools.median(X2, e, (0, 10)),
    "histogram": lambda e: tools.histogram(X2[:, 0], 5, (0, 10), e),
    "histogramdd": lambda e: tools.histogramdd(X2, 2, [(0, 10)] * 3, e),
    "histogram2d": lambda e: tools.histogram2d(X2[:, 0], X2[:, 1], 2, [(0, 10)] * 2, e),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_each_call_records_its_epsilon_once(name):
    with track_budget() as acc:
        CALLS[name](0.3)
    assert acc.total == PrivacyBudget(0.3, 0.0)
    assert len(acc.spends) == 1


@pytest.mark.parametrize("name", list(CALLS))
def test_a_cap_refuses_before_any_draw(name):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with track_budget(epsilon=0.1), pytest.raises(BudgetExceededError):
        CALLS[name](0.3)
    assert rng.bit_generator.state == state


# --- epsilon = inf: numpy on the clipped data -------------------------------------


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_infinite_epsilon_equals_numpy(axis, keepdims):
    X = np.random.default_rng(3).normal(5, 3, (50, 4))
    C = np.clip(X, 0, 10)
    kw = {"epsilon": np.inf, "bounds": (0, 10), "axis": axis, "keepdims": keepdims}
    np.testing.assert_allclose(tools.mean(X, **kw), C.mean(axis, keepdims=keepdims))
    np.testing.assert_allclose(tools.sum(X, **kw), C.sum(axis, keepdims=keepdims))
    np.testing.assert_allclose(tools.var(X, **kw), C.var(axis, keepdims=keepdims))
    np.testing.assert_allclose(tools.std(X, **kw), C.std(axis, keepdims=keepdims))
    np.testing.assert_allclose(
        tools.quantile(X, [0.2, 0.5], **kw),
        np.quantile(C, [0.2, 0.5], axis=axis, keepdims=keepdims),
    )
    np.testing.assert_allclose(
        tools.median(X, **kw), np.median(C, axis=axis, keepdims=keepdims)
    )
    kw.pop("bounds")
    np.testing.assert_array_equal(
        tools.count_nonzero(X > 5, **kw),
        np.count_nonzero(X > 5, axis=axis, keepdims=keepdims),
    )
    hist, edges = tools.histogram(X, 4, (0, 10), epsilon=np.inf)
    ref = np.histogram(X, 4, (0, 10))
    np.testing.assert_array_equal(hist, ref[0])
    np.testing.assert_array_equal(edges, ref[1])


def test_per_output_bounds_in_the_forms_of_check_bounds():
    X = np.column_stack([np.full(10, 50.0), np.full(10, 0.5)])
    kw = {"epsilon": np.inf, "axis": 0}
    for bounds in [([0, 0], [10, 1]), [(0, 10), (0, 1)], {1: (0, 1), 0: (0, 10)}]:
        np.testing.assert_allclose(tools.mean(X, bounds=bounds, **kw), [10.0, 0.5])


# --- behaviour --------------------------------------------------------------------


def test_private_results_within_noise_tolerance():
    # statistical, fixed seeds; tolerances from the noise scales (6 sd)
    x = np.random.default_rng(4).uniform(0, 10, 5000)
    n, eps = x.size, 1.0
    b = 2 / eps  # Laplace scale on the sum in [-1, 1] units
    m = tools.mean(x, eps, (0, 10), random_state=0)
    assert abs(m - x.mean()) <= 6 * math.sqrt(2) * b * 5 / n
    s = tools.sum(x, eps, (0, 10), random_state=0)
    assert abs(s - x.sum()) <= 6 * math.sqrt(2) * b * 5
    v = tools.var(x, eps, (0, 10), random_state=0)
    b2 = moments_sensitivity(1, True) / eps
    # error of S2/n - m^2 in [-1, 1] units: at most (1/lambda + 2) noise / n
    assert abs(v - x.var()) <= 6 * math.sqrt(2) * b2 * (1 / LAM + 2) / n * 25
    hist, _ = tools.histogram(x, 5, (0, 10), eps, random_state=0)
    ref, _ = np.histogram(x, 5, (0, 10))
    assert np.all(np.abs(hist - ref) <= 6 * math.sqrt(2) * 2 / eps + 1)
    q = tools.quantile(x, 0.5, eps, (0, 10), random_state=0)
    # the interval drawn is within 20 ranks of n/2 except with probability
    # below (n + 1) exp(-eps 20 / 2) / (mass near the target) ~ 1e-2 ... use 40
    lo, hi = np.sort(x)[[n // 2 - 40, n // 2 + 40]]
    assert lo <= q <= hi


def test_same_seed_same_result_and_results_inside_bounds():
    x = np.random.default_rng(5).uniform(-5, 15, (30, 2))
    a = tools.mean(x, 0.1, (0, 10), axis=0, random_state=1)
    b = tools.mean(x, 0.1, (0, 10), axis=0, random_state=1)
    np.testing.assert_array_equal(a, b)
    assert np.all((a >= 0) & (a <= 10))
    v = tools.var(x, 0.1, (0, 10), axis=0, random_state=2)
    assert np.all((v >= 0) & (v <= 25))
    q = tools.quantile(x, [0.1, 0.9], 0.1, (0, 10), axis=0, random_state=3)
    assert q.shape == (2, 2) and np.all((q >= 0) & (q <= 10))
    hist, _ = tools.histogram(x, 3, (0, 10), 0.1, random_state=4)
    assert hist.dtype == np.int64 and np.all(hist >= 0)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: tools.mean([1.0, np.nan], 1.0, (0, 1)), ValueError, "finite"),
        (lambda: tools.mean([1.0], 0.0, (0, 1)), ValueError, "epsilon"),
        (lambda: tools.mean([[1.0]], 1.0, (0, 1), axis=2), ValueError, "axis"),
        (lambda: tools.mean([1.0, 2.0], 1.0, (1, 0)), ValueError, "lower < upper"),
        (lambda: tools.quantile([1.0], 1.5, 1.0, (0, 1)), ValueError, "unit"),
        (lambda: tools.percentile([1.0], 150, 1.0, (0, 1)), ValueError, "100"),
        (lambda: tools.histogram([1.0], "auto"), ValueError, "not private"),
        (lambda: tools.mean(["a"], 1.0, (0, 1)), TypeError, "numbers"),
    ],
)
def test_bad_input_raises_before_anything_is_recorded(call, error, match):
    with track_budget() as acc, pytest.raises(error, match=match):
        call()
    assert acc.spends == []


def test_undeclared_bounds_and_range_warn():
    x = np.arange(10.0)
    for call in (
        lambda: tools.mean(x),
        lambda: tools.quantile(x, 0.5),
        lambda: tools.histogram(x, 3),
        lambda: tools.histogramdd(np.c_[x, x], 2),
    ):
        with pytest.warns(PrivacyLeakWarning):
            call()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        tools.mean(x, bounds=(0, 10))
        tools.histogram(x, bins=[0, 5, 10])
