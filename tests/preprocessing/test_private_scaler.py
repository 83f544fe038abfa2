"""PrivateStandardScaler: exact sensitivities, spends, audits, scikit-learn parity."""

import itertools
import math
import warnings

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.mechanisms import GaussianMechanism, LaplaceMechanism
from skdp.preprocessing import PrivateStandardScaler
from skdp.preprocessing._private_scaler import (
    MOMENT_WEIGHT,
    moment_sensitivity,
    moment_statistics,
)
from skdp.utils import audit_mechanism

LOWER = np.array([0.0, -2.0, 5.0])
UPPER = np.array([4.0, 6.0, 5.5])


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(LOWER, UPPER, size=(n, 3)) ** np.array([1, 1, 1])


# --- exact: sensitivities by brute force -------------------------------------


def _worst_rows():
    """Per-feature values containing every maximizer of the derivation.

    In [-1, 1] units: the ends, 0, and ``1 - t*`` with ``t* = 1 + 1/(2 lambda)``
    (the L1 maximizer ``a = 1, b = -1/(2 lambda)``), plus a grid.
    """
    special = [-1.0, 0.0, 1.0, -1 / (2 * MOMENT_WEIGHT), 1 / (2 * MOMENT_WEIGHT)]
    return np.unique(np.concatenate([special, np.linspace(-1, 1, 21)]))


@pytest.mark.parametrize("with_std", [True, False])
def test_sensitivities_equal_brute_force_over_neighbouring_rows(with_std):
    # tiny data (n = 3, d = 2) in unequal declared ranges; the last row is
    # replaced by every pair of candidate rows, in the user's units
    lower, upper = np.array([0.0, -2.0]), np.array([4.0, 6.0])
    centre, half = (lower + upper) / 2, (upper - lower) / 2
    base = np.array([[1.0, 0.0], [3.0, 5.0], [0.5, -1.0]])
    values = _worst_rows()
    rows = [centre + half * np.array(v) for v in itertools.product(values, values)]
    stats = []
    for row in rows:
        data = np.vstack([base[:-1], row])
        stats.append(moment_statistics(data, lower, upper, with_std=with_std))
    stats = np.array(stats)
    l1 = l2 = 0.0
    for i in range(len(stats)):
        diff = stats - stats[i]
        l1 = max(l1, np.abs(diff).sum(axis=1).max())
        l2 = max(l2, np.sqrt((diff**2).sum(axis=1)).max())
    # the claimed sensitivities are attained (the grid holds the maximizers)
    # and never exceeded; 1e-12: the rounding of the sums of 3 rows
    assert l1 == pytest.approx(moment_sensitivity(2, with_std=with_std), rel=1e-12)
    assert l2 == pytest.approx(
        moment_sensitivity(2, norm="l2", with_std=with_std), rel=1e-12
    )


def test_sensitivity_closed_forms():
    lam = MOMENT_WEIGHT
    assert moment_sensitivity(5) == pytest.approx(5 * (1 + 2 * lam) ** 2 / (4 * lam))
    assert moment_sensitivity(5) == pytest.approx(5 * 2.5910, abs=1e-3)
    assert moment_sensitivity(5, norm="l2") == pytest.approx(2 * math.sqrt(5))
    # squares are free up to lambda = 1/2 (L1) and sqrt(2) (L2)
    assert moment_sensitivity(1, weight=0.5) == 2.0
    assert moment_sensitivity(1, weight=math.sqrt(2), norm="l2") == 2.0
    # beyond sqrt(2) the L2 maximum moves inside (0, 2): checked on a fine grid
    t = np.linspace(0, 2, 200_001)
    brute = np.sqrt(np.max(t**2 * (1 + 4 * (2 - t) ** 2)))
    assert moment_sensitivity(1, weight=2.0, norm="l2") == pytest.approx(
        brute, rel=1e-9
    )


def test_estimator_uses_the_derived_sensitivity():
    X = _data()
    for delta, mech in ((0.0, LaplaceMechanism), (1e-6, GaussianMechanism)):
        est = PrivateStandardScaler(
            epsilon=1.0, delta=delta, bounds_X=(LOWER, UPPER), random_state=0
        ).fit(X)
        norm = "l2" if delta else "l1"
        assert est.sensitivity_ == moment_sensitivity(3, norm=norm)
        assert isinstance(est._mechanism((UPPER - LOWER) / 2), mech)
    # a zero-width range would clip every value to one constant: refused
    # (issue 40), before anything is recorded
    est = PrivateStandardScaler(bounds_X=([0, 0, 1], [1, 1, 1]), random_state=0)
    with pytest.raises(ValueError, match="lower < upper"):
        est.fit(np.clip(X, 0, 1))


# --- epsilon = inf: scikit-learn's StandardScaler ------------------------------


@pytest.mark.parametrize("with_mean", [True, False])
@pytest.mark.parametrize("with_std", [True, False])
def test_infinite_epsilon_equals_sklearn(with_mean, with_std):
    X = _data()
    kw = {"with_mean": with_mean, "with_std": with_std}
    ours = PrivateStandardScaler(epsilon=np.inf, bounds_X=(LOWER, UPPER), **kw).fit(X)
    ref = StandardScaler(**kw).fit(X)
    for attr in ("mean_", "var_", "scale_"):
        a, b = getattr(ours, attr), getattr(ref, attr)
        if b is None:
            assert a is None
        else:
            # both are numpy's sums over the same rows: equal up to rounding
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)
    np.testing.assert_allclose(ours.transform(X), ref.transform(X), rtol=1e-12)
    assert ours.n_samples_seen_ == ref.n_samples_seen_
    assert ours.privacy_spent_ == (
        PrivacyBudget(math.inf) if with_mean or with_std else PrivacyBudget(0.0)
    )


def test_infinite_epsilon_constant_feature_gets_unit_scale():
    X = _data()
    X[:, 1] = 2.0
    ours = PrivateStandardScaler(epsilon=np.inf, bounds_X=(LOWER, UPPER)).fit(X)
    ref = StandardScaler().fit(X)
    np.testing.assert_array_equal(ours.scale_, ref.scale_)


# --- accounting ------------------------------------------------------------------


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_recorded_spend_equals_the_guarantee(delta):
    X = _data()
    with track_budget() as acc:
        est = PrivateStandardScaler(
            epsilon=0.7, delta=delta, bounds_X=(LOWER, UPPER)
        ).fit(X)
    assert acc.spends == [("PrivateStandardScaler", PrivacyBudget(0.7, delta))]
    assert est.privacy_spent_ == PrivacyBudget(0.7, delta) == acc.total


def test_nothing_released_nothing_spent():
    with track_budget() as acc:
        est = PrivateStandardScaler(
            with_mean=False, with_std=False, bounds_X=(0, 1)
        ).fit(_data())
    assert acc.spends == []
    assert est.privacy_spent_ == PrivacyBudget(0.0)
    assert est.mean_ is None and est.var_ is None and est.scale_ is None


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_cap_refuses_before_any_draw(monkeypatch, delta):
    drawn = []
    for cls in (LaplaceMechanism, GaussianMechanism):
        monkeypatch.setattr(
            cls, "randomize", lambda self, *a, **k: drawn.append(1) or 1 / 0
        )
    est = PrivateStandardScaler(epsilon=1.0, delta=delta, bounds_X=(LOWER, UPPER))
    with track_budget(epsilon=0.5, delta=1e-5), pytest.raises(BudgetExceededError):
        est.fit(_data())
    assert drawn == []
    assert not hasattr(est, "privacy_spent_") and not hasattr(est, "mean_")


# --- empirical privacy audit of the release --------------------------------------


def _llr_audit(est, row_a, row_b, n_samples, seed):
    """Audit the release on the worst-case pair with the log-likelihood ratio
    (the most powerful statistic, so the bound is close to the true epsilon)."""
    lower, upper = est.bounds_
    base = np.array([[0.5 * (lo + up) for lo, up in zip(lower, upper)]])
    data_a, data_b = np.vstack([base, row_a]), np.vstack([base, row_b])
    f_a = moment_statistics(data_a, lower, upper)
    f_b = moment_statistics(data_b, lower, upper)
    mech = est._mechanism((upper - lower) / 2)

    def release(data, n, rng):
        f = moment_statistics(data, lower, upper)
        return mech.randomize(np.tile(f, (n, 1)), random_state=rng)

    if isinstance(mech, LaplaceMechanism):

        def llr(out):
            return (np.abs(out - f_b).sum(axis=1) - np.abs(out - f_a).sum(axis=1)) / (
                mech.scale
            )
    else:

        def llr(out):
            return (out - (f_a + f_b) / 2) @ (f_a - f_b)

    return audit_mechanism(
        release,
        data_a,
        data_b,
        n_samples=n_samples,
        statistic=llr,
        delta=est.delta,
        random_state=seed,
    )


def test_audit_laplace_release_on_the_worst_pair():
    est = PrivateStandardScaler(epsilon=1.0, bounds_X=(-1.0, 1.0), random_state=0)
    est.fit(np.zeros((2, 1)))
    # the L1 maximizer: a = 1 replaced by b = -1/(2 lambda)
    res = _llr_audit(est, [1.0], [-1 / (2 * MOMENT_WEIGHT)], 200_000, seed=1)
    # never above the claim; and the audit has power: the pair is the worst
    # case, so the bound comes close to the claim (0.94 with this seed)
    assert res.epsilon_lower_bound <= 1.0
    assert res.epsilon_lower_bound > 0.8


def test_audit_gaussian_release_on_the_worst_pair():
    est = PrivateStandardScaler(
        epsilon=1.0, delta=1e-3, bounds_X=(-1.0, 1.0), random_state=0
    ).fit(np.zeros((2, 1)))
    res = _llr_audit(est, [1.0], [-1.0], 200_000, seed=2)
    assert res.epsilon_lower_bound <= 1.0
    assert res.epsilon_lower_bound > 0.5  # 0.69 with this seed (delta = 1e-3)


# --- behaviour ------------------------------------------------------------------


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_means_within_noise_tolerance(delta):
    n = 20_000
    X = _data(n)
    est = PrivateStandardScaler(
        epsilon=1.0, delta=delta, bounds_X=(LOWER, UPPER), random_state=3
    ).fit(X)
    half = (UPPER - LOWER) / 2
    mech = est._mechanism(half)
    sd_mean = half * math.sqrt(mech.variance) / n  # noise sd of r * S1~ / n
    assert np.all(np.abs(est.mean_ - X.mean(axis=0)) < 5 * sd_mean)
    # variance: S2 noise (sd / lambda) plus the mean's (second order, tiny)
    sd_var = half**2 * math.sqrt(mech.variance) / (MOMENT_WEIGHT * n)
    sd_var += (
        half**2
        * 2
        * np.abs((X.mean(0) - (LOWER + UPPER) / 2) / half)
        * (sd_mean / half)
    )
    assert np.all(np.abs(est.var_ - X.var(axis=0)) < 5 * sd_var + 1e-12)


def test_variances_floored_at_a_public_positive_value():
    X = _data(50)
    X[:, 0] = 2.0  # constant inside its declared range
    est = PrivateStandardScaler(
        epsilon=0.05, bounds_X=(LOWER, UPPER), random_state=0
    ).fit(X)
    mech = est._mechanism((UPPER - LOWER) / 2)
    half = (UPPER - LOWER) / 2
    sd = math.sqrt(mech.variance) / (MOMENT_WEIGHT * 50)
    assert sd > 1  # so much noise that the floor is capped at 1 (in [-1, 1] units)
    np.testing.assert_allclose(est.variance_floor_, half**2)
    np.testing.assert_allclose(est.var_, half**2)
    assert np.all(np.isfinite(est.transform(X)))
    # with less noise the floor is the noise sd, and every variance is above it
    est = PrivateStandardScaler(
        epsilon=1.0, bounds_X=(LOWER, UPPER), random_state=0
    ).fit(_data(5000))
    mech = est._mechanism(half)
    floor = half**2 * math.sqrt(mech.variance) / (MOMENT_WEIGHT * 5000)
    np.testing.assert_allclose(est.variance_floor_, floor)
    assert np.all(est.var_ >= floor) and np.all(est.var_ <= half**2)


def test_data_outside_the_bounds_is_clipped_and_inputs_unchanged():
    X = _data()
    X[:5] *= 100  # far outside
    before = X.copy()
    kw = {"epsilon": 1.0, "bounds_X": (LOWER, UPPER), "random_state": 4}
    a = PrivateStandardScaler(**kw).fit(X)
    b = PrivateStandardScaler(**kw).fit(np.clip(X, LOWER, UPPER))
    np.testing.assert_array_equal(a.mean_, b.mean_)
    np.testing.assert_array_equal(a.var_, b.var_)
    Z = a.transform(X)
    a.inverse_transform(Z)
    np.testing.assert_array_equal(X, before)
    np.testing.assert_allclose(a.inverse_transform(Z), X, rtol=1e-12)


def test_same_seed_same_release_and_different_seeds_differ():
    X = _data()
    kw = {"epsilon": 1.0, "bounds_X": (LOWER, UPPER)}
    a = PrivateStandardScaler(random_state=5, **kw).fit(X)
    b = PrivateStandardScaler(random_state=5, **kw).fit(X)
    c = PrivateStandardScaler(random_state=6, **kw).fit(X)
    np.testing.assert_array_equal(a.mean_, b.mean_)
    assert not np.array_equal(a.mean_, c.mean_)


def test_with_std_false_releases_the_sums_only():
    X = _data()
    est = PrivateStandardScaler(
        with_std=False, bounds_X=(LOWER, UPPER), random_state=0
    ).fit(X)
    assert est.sensitivity_ == 2 * 3 and est.var_ is None and est.scale_ is None
    np.testing.assert_allclose(est.transform(X), X - est.mean_)


def test_undeclared_bounds_warn_and_declared_do_not():
    X = _data()
    with pytest.warns(PrivacyLeakWarning, match="bounds_X"):
        est = PrivateStandardScaler().fit(X)
    np.testing.assert_array_equal(est.bounds_[0], X.min(axis=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        PrivateStandardScaler(bounds_X=(LOWER, UPPER)).fit(X)


def test_set_output_pandas():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(_data(), columns=["a", "b", "c"])
    est = PrivateStandardScaler(bounds_X=(LOWER, UPPER), random_state=0)
    out = est.set_output(transform="pandas").fit_transform(X)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["a", "b", "c"]
    assert list(est.get_feature_names_out()) == ["a", "b", "c"]


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"delta": 1.0}, ValueError, "delta"),
        ({"bounds_X": (1.0, 0.0)}, ValueError, "lower < upper"),
        ({"bounds_X": ([0, 0], [1, 1])}, ValueError, "length 3"),
        ({"bounds_X": (0.0, np.inf)}, ValueError, "finite"),
        ({"bounds_X": (0.0,)}, TypeError, "tuple"),
        ({"with_std": "yes"}, ValueError, "with_std"),
    ],
)
def test_bad_parameters_raise_clear_errors(params, error, match):
    with pytest.raises(error, match=match):
        PrivateStandardScaler(**params).fit(_data())


def test_transform_checks_the_number_of_features():
    est = PrivateStandardScaler(bounds_X=(0, 1), random_state=0).fit(_data())
    with pytest.raises(ValueError, match="features"):
        est.transform(np.zeros((2, 2)))


def test_seed_policy_same_seed_gives_different_noise_by_default():
    import skdp

    X = _data()
    with skdp.config_context(reproducible_noise=False):
        fits = [
            PrivateStandardScaler(bounds_X=(LOWER, UPPER), random_state=0).fit(X)
            for _ in range(2)
        ]
    assert not np.array_equal(fits[0].mean_, fits[1].mean_)
