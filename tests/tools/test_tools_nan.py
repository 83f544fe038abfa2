"""skdp.tools.nansum/nanmean/nanvar/nanstd: NaN is a missing value, and each
output's count of present values is released with its sums (one Laplace vector).

Exact tests: the per-element sensitivity by brute force on a fine grid
(including NaN), the released vector's L1 change over every replacement of a
record on a grid of values (including NaN and values outside the range),
numpy parity at ``epsilon=inf``. Sampling tests (fixed seeds, the suite's
reproducible-noise opt-in, tolerances argued from the number of draws): the
noise's variance. Then the spend and its order, errors, input untouched,
fallbacks, shapes, and dask input on a real cluster.
"""

import itertools
import math
import warnings

import numpy as np
import pytest

from skdp import tools
from skdp._moments import MOMENT_WEIGHT, moment_sensitivity
from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import (
    BudgetExceededError,
    PrivacyLeakWarning,
    ReproducibleNoiseWarning,
)
from skdp.mechanisms import LaplaceMechanism
from skdp.tools._nan_moments import nan_moment_sums, nan_moments_sensitivity
from skdp.tools._reduction import Reduction

LAM = MOMENT_WEIGHT
U = np.finfo(np.float64).eps / 2  # unit roundoff
LOWER, UPPER = 0.0, 10.0
C, R = 5.0, 5.0  # centre and half-width of (LOWER, UPPER)
FUNCS = {
    "nansum": (tools.nansum, np.nansum),
    "nanmean": (tools.nanmean, np.nanmean),
    "nanvar": (tools.nanvar, np.nanvar),
    "nanstd": (tools.nanstd, np.nanstd),
}


def _element_vectors(values, squares):
    """Each element's contribution ``(w, [lambda w^2], present)`` in [-1, 1]
    units, one row per element (one output each), from the released vector."""
    values = np.asarray(values, dtype=np.float64)[:, None]
    ones = np.ones(values.shape[0])
    stats = nan_moment_sums(values, -ones, ones, squares)
    return stats.reshape(3 if squares else 2, -1).T


# --- exact: the sensitivity ---------------------------------------------------


@pytest.mark.parametrize("squares", [False, True])
def test_per_element_sensitivity_equals_brute_force(squares):
    # a fine grid of [-1, 1] with the maximizers of the present -> present
    # case (+-1/(2 lambda)), and NaN; every pair of states of one element
    grid = np.concatenate(
        [np.linspace(-1, 1, 801), [-1 / (2 * LAM), 1 / (2 * LAM), np.nan]]
    )
    vec = _element_vectors(grid, squares)
    present = ~np.isnan(grid)
    np.testing.assert_array_equal(vec[~present], 0.0)  # a missing value adds 0
    np.testing.assert_array_equal(vec[present, -1], 1.0)  # a present one counts 1
    dist = np.abs(vec[:, None, :] - vec[None, :, :]).sum(axis=2)
    claimed = nan_moments_sensitivity(1, with_squares=squares)
    assert dist.max() == pytest.approx(claimed, rel=1e-12)
    # the case analysis: present <-> missing gives |a| + [lambda a^2] + 1
    to_missing = dist[present][:, ~present].max()
    within = dist[present][:, present].max()
    if squares:
        assert to_missing == pytest.approx(2 + LAM, rel=1e-12)
        g = moment_sensitivity(1, weight=LAM, norm="l1")  # (1 + 2 lam)^2 / (4 lam)
        assert within == pytest.approx(g, rel=1e-12)
        assert claimed == pytest.approx(2 + LAM) and claimed > g
    else:
        assert to_missing == within == pytest.approx(2.0, rel=1e-12)
    for per_record in (1, 3, 6):  # the triangle inequality, attained
        assert nan_moments_sensitivity(per_record, squares) == per_record * claimed


# record values in data units: the ends, the maximizers, the centre, values
# outside the range (clipped) and NaN
RECORD_VALUES = np.concatenate(
    [C + R * np.array([-1.0, -1 / (2 * LAM), 0.0, 1 / (2 * LAM), 1.0]), [-3.0, 14.0]]
)
RECORD_VALUES = np.append(RECORD_VALUES, np.nan)


@pytest.mark.parametrize(
    "shape, axis",
    [((3,), None), ((3, 2), None), ((3, 2), 0), ((3, 2), 1), ((3, 2, 2), (0, 2))],
)
@pytest.mark.parametrize("squares", [False, True])
def test_released_vector_change_never_exceeds_the_sensitivity(shape, axis, squares):
    # neighbours: the last record replaced by every combination of
    # RECORD_VALUES; the other records hold values and NaN; the L1 distance
    # between the pre-noise released vectors of every pair of neighbours
    base = np.random.default_rng(0).uniform(LOWER, UPPER, shape)
    base.flat[::3] = np.nan
    per_record = math.prod(shape[1:])
    stats = []
    for row in itertools.product(RECORD_VALUES, repeat=per_record):
        data = base.copy()
        data[-1] = np.reshape(row, shape[1:])
        red = Reduction(data, axis)
        ones = np.ones(red.n_outputs)
        stats.append(nan_moment_sums(red.values, LOWER * ones, UPPER * ones, squares))
    stats = np.array(stats)
    worst = max(np.abs(stats - s).sum(axis=1).max() for s in stats)
    claimed = nan_moments_sensitivity(per_record, with_squares=squares)
    assert worst <= claimed * (1 + 1e-12)
    assert worst == pytest.approx(claimed, rel=1e-12)  # attained: all 10 -> NaN


# --- epsilon = inf: numpy's nan* on the clipped data ------------------------------


def _data_with_nan(shape=(40, 3, 2), seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(5, 4, shape)  # some values outside (0, 10): clipped
    X[rng.uniform(size=shape) < 0.3] = np.nan
    return X


FALLBACK = {"nansum": 0.0, "nanmean": C, "nanvar": 0.0, "nanstd": 0.0}


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), (1, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", list(FUNCS))
def test_infinite_epsilon_equals_numpy_on_clipped_data(name, axis, keepdims):
    X = _data_with_nan()
    func, np_func = FUNCS[name]
    with warnings.catch_warnings():  # numpy warns on its all-NaN slices
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np_func(np.clip(X, LOWER, UPPER), axis=axis, keepdims=keepdims)
    present = np.sum(~np.isnan(X), axis=axis, keepdims=keepdims)
    ref = np.where(present == 0, FALLBACK[name], ref)  # the documented fallback
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning, no leak warning
        got = func(X, np.inf, (LOWER, UPPER), axis=axis, keepdims=keepdims)
    assert np.shape(got) == np.shape(ref)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    if axis is None and not keepdims:
        assert isinstance(got, float)


@pytest.mark.parametrize("name", list(FUNCS))
def test_outputs_without_present_values_get_the_fallback(name):
    fallback = FALLBACK[name]
    X = _data_with_nan((30, 3), seed=4)
    X[:, 1] = np.nan  # one all-NaN output
    func, np_func = FUNCS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # numpy's stays inside
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)  # the opt-in's
        exact = func(X, np.inf, (LOWER, UPPER), axis=0)
        everything = func(np.full((5, 2), np.nan), np.inf, (LOWER, UPPER))
        # private, noise far below one count: N~ < 1, the fallback
        tiny_noise = func(X, 1e4, (LOWER, UPPER), axis=0, random_state=0)
    ref = np_func(np.clip(X[:, [0, 2]], LOWER, UPPER), axis=0)
    np.testing.assert_allclose(exact[[0, 2]], ref, rtol=1e-12)
    assert exact[1] == fallback and everything == fallback
    # nansum: N^ c + r S1~ with N^ = clip(N~, 0, m), |N~| ~ 1e-3: about 0
    np.testing.assert_allclose(tiny_noise[1], fallback, atol=0.1)
    np.testing.assert_allclose(tiny_noise[[0, 2]], ref, rtol=1e-2, atol=1e-2)


def test_a_private_all_nan_release_stays_inside_the_range():
    X = np.full((20, 2), np.nan)
    for seed in range(20):
        m = tools.nanmean(X, 1.0, (LOWER, UPPER), axis=0, random_state=seed)
        v = tools.nanvar(X, 1.0, (LOWER, UPPER), axis=0, random_state=seed)
        s = tools.nansum(X, 1.0, (LOWER, UPPER), axis=0, random_state=seed)
        assert np.all((m >= LOWER) & (m <= UPPER))
        assert np.all((v >= 0) & (v <= R**2))
        assert np.all((s >= 0) & (s <= 20 * UPPER))


# --- statistical: the noise's scale ----------------------------------------------


def test_nansum_noise_has_the_stated_variance():
    # nansum - truth = c eta_N + r eta_1 while neither clip binds (here N =
    # 150 of m = 200 present with S1 near 0 and the noise's sd ~2.8: they
    # never bind), so its variance is (c^2 + r^2) Var(eta), Var(eta) the
    # discrete Laplace's exact variance. The sample variance of K draws has
    # relative sd sqrt((2 + kurt_excess) / K) <= sqrt(5 / K) (a Laplace's
    # excess kurtosis 3 bounds that of a weighted sum of two): 5 sd.
    x = np.random.default_rng(5).uniform(LOWER, UPPER, 200)
    x[::4] = np.nan
    truth = np.nansum(x)
    eps, K = 1.0, 20_000
    gen = np.random.default_rng(6)  # advanced by every draw (opt-in)
    err = np.array(
        [
            tools.nansum(x, eps, (LOWER, UPPER), random_state=gen) - truth
            for _ in range(K)
        ]
    )
    var_eta = LaplaceMechanism(eps, nan_moments_sensitivity(1), dimension=2).variance
    expected = (C**2 + R**2) * var_eta
    assert abs(err.var() / expected - 1) <= 5 * math.sqrt(5 / K)
    assert abs(err.mean()) <= 5 * math.sqrt(expected / K)
    # not vacuous: a public count (noise r eta_1 only) would be half of it
    assert err.var() > 1.5 * R**2 * var_eta


def test_nanmean_noise_has_the_stated_variance():
    # nanmean - truth ~= r (eta_1 - mu eta_N) / N (first order; mu = S1 / N),
    # variance r^2 Var(eta) (1 + mu^2) / N^2. The second-order terms are
    # relative O(Var(eta) / N^2) ~ 1e-4 here (N = 300, Var(eta) ~ 8) and the
    # clip to [-1, 1] never binds (mu = 0.4, sd of S1~/N ~0.01); the sample
    # variance's relative sd is at most sqrt(5 / K): 5 sd plus 1% for the
    # linearisation.
    x = np.random.default_rng(7).uniform(4, 10, 400)  # mean 7: mu = 0.4
    x[::4] = np.nan
    present = x[~np.isnan(x)]
    n, mu = present.size, ((present - C) / R).mean()
    eps, K = 1.0, 20_000
    gen = np.random.default_rng(8)
    err = np.array(
        [
            tools.nanmean(x, eps, (LOWER, UPPER), random_state=gen) - present.mean()
            for _ in range(K)
        ]
    )
    var_eta = LaplaceMechanism(eps, nan_moments_sensitivity(1), dimension=2).variance
    expected = R**2 * var_eta * (1 + mu**2) / n**2
    assert abs(err.var() / expected - 1) <= 5 * math.sqrt(5 / K) + 0.01
    # the ratio's bias, r mu Var(eta) / N^2 to first order (doubled for the
    # higher orders), is ~1e-4 of the sd
    bias = 2 * R * abs(mu) * var_eta / n**2
    assert abs(err.mean()) <= 5 * math.sqrt(expected / K) + bias


def test_nanvar_is_close_to_the_truth():
    # statistical, one fixed seed: N = 16_000 present values; to first order
    # the error of S2~/N^ - m1^2 in [-1, 1] units is at most (|eta_2| / lambda
    # + |eta_N| + 2 (|eta_1| + |eta_N|)) / N (S2 / N, |m1| <= 1): 6 sd of each
    # eta at b = (2 + lambda) / epsilon
    x = np.random.default_rng(9).uniform(LOWER, UPPER, 20_000)
    x[::5] = np.nan
    v = tools.nanvar(x, 1.0, (LOWER, UPPER), random_state=0)
    n = np.count_nonzero(~np.isnan(x))
    bound = 6 * math.sqrt(2) * (2 + LAM) * (1 / LAM + 5) / n * R**2
    assert abs(v - np.nanvar(x)) <= bound
    assert bound < 0.05 * np.nanvar(x)  # the check is not vacuous


# --- spends and their order -------------------------------------------------------

X_NAN = _data_with_nan((60, 3), seed=10)


@pytest.mark.parametrize("name", list(FUNCS))
@pytest.mark.parametrize("axis", [None, 0])
def test_the_spend_is_epsilon_and_recorded_before_the_draw(monkeypatch, name, axis):
    seen = []
    original = LaplaceMechanism.randomize

    def spy(self, value, random_state=None):
        seen.append((len(acc.spends), np.size(value)))
        return original(self, value, random_state)

    monkeypatch.setattr(LaplaceMechanism, "randomize", spy)
    with track_budget() as acc:
        FUNCS[name][0](X_NAN, 0.7, (LOWER, UPPER), axis=axis, random_state=1)
    assert acc.total == PrivacyBudget(0.7, 0.0)
    assert len(acc.spends) == 1
    outputs = 1 if axis is None else 3
    per_output = 3 if name in ("nanvar", "nanstd") else 2  # (S1, [S2,] N)
    # one draw, of the whole vector, after the spend was recorded
    assert seen == [(1, outputs * per_output)]


@pytest.mark.parametrize("name", list(FUNCS))
def test_a_cap_refuses_before_any_draw(name):
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    with track_budget(epsilon=0.1) as acc, pytest.raises(BudgetExceededError):
        FUNCS[name][0](X_NAN, 0.3, (LOWER, UPPER), random_state=gen)
    assert gen.bit_generator.state == state
    assert acc.spends == []


# --- errors, input, shapes, bounds -------------------------------------------------


@pytest.mark.parametrize("name", list(FUNCS))
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"a": [1.0, np.inf, np.nan]}, ValueError, "inf"),
        ({"a": [[1.0, -np.inf]]}, ValueError, "inf"),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"epsilon": np.nan}, ValueError, "epsilon"),
        ({"axis": 2}, ValueError, "axis"),
        ({"axis": (0, 0)}, ValueError, "axis"),
        ({"axis": 0.5}, TypeError, "axis"),
        ({"bounds": (10, 0)}, ValueError, "lower < upper"),
        ({"a": ["a", "b"]}, TypeError, "numbers"),
        ({"a": []}, ValueError, "empty"),
        ({"a": [np.nan, np.nan], "bounds": None}, ValueError, "declare bounds"),
        ({"random_state": "seed"}, TypeError, "random_state"),
    ],
)
def test_bad_input_raises_before_anything_is_recorded(name, kwargs, error, match):
    call = {"a": [[1.0, np.nan], [2.0, 3.0]], "epsilon": 1.0, "bounds": (0, 10)}
    call.update(kwargs)
    with track_budget() as acc, pytest.raises(error, match=match):
        FUNCS[name][0](**call)
    assert acc.spends == []


@pytest.mark.parametrize("name", list(FUNCS))
def test_the_input_is_not_modified(name):
    X = _data_with_nan((20, 3), seed=11)
    before = X.copy()
    view = X[:, 1:]  # a non-contiguous view too
    for eps in (1.0, np.inf):
        FUNCS[name][0](X, eps, (LOWER, UPPER), axis=0, random_state=2)
        FUNCS[name][0](view, eps, (LOWER, UPPER), random_state=2)
    np.testing.assert_array_equal(X, before)  # NaN where it was (equal_nan)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), (0, 1, 2), -2])
@pytest.mark.parametrize("keepdims", [False, True])
def test_private_shapes_match_numpy(axis, keepdims):
    X = _data_with_nan((10, 3, 4), seed=12)
    for name, (func, _) in FUNCS.items():
        got = func(X, 1.0, (LOWER, UPPER), axis=axis, keepdims=keepdims)
        ref = np.sum(X, axis=axis, keepdims=keepdims)  # numpy's shape
        assert np.shape(got) == np.shape(ref), name
        if name != "nansum":  # the mean and spread stay in their ranges
            lo, hi = {"nanmean": (LOWER, UPPER), "nanvar": (0, R**2)}.get(name, (0, R))
            assert np.all((np.asarray(got) >= lo) & (np.asarray(got) <= hi)), name


def test_same_seed_same_release_and_other_seeds_others():
    X = _data_with_nan((50, 2), seed=13)
    kw = {"epsilon": 1.0, "bounds": (LOWER, UPPER), "axis": 0}
    a = tools.nanvar(X, random_state=1, **kw)
    np.testing.assert_array_equal(a, tools.nanvar(X, random_state=1, **kw))
    assert not np.array_equal(a, tools.nanvar(X, random_state=2, **kw))


def test_undeclared_bounds_come_from_the_present_values_with_a_warning():
    x = np.array([np.nan, 2.0, 7.0, np.nan, 4.0])
    with pytest.warns(PrivacyLeakWarning, match="not declared"):
        got = tools.nanmean(x, np.inf)
    assert got == pytest.approx(np.nanmean(x))  # (2, 7): nothing clipped
    with pytest.warns(PrivacyLeakWarning):
        assert tools.nansum(x, np.inf) == pytest.approx(13.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        tools.nanmean(x, 1.0, (0, 10))


def test_plain_functions_still_refuse_nan_and_point_to_nan_functions():
    with pytest.raises(ValueError, match="nan\\* functions"):
        tools.mean([1.0, np.nan], 1.0, (0, 1))
