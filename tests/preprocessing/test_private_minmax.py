"""PrivateMinMaxScaler: scikit-learn parity, the release, spends and an audit."""

import math
import warnings

import numpy as np
import pytest
from sklearn.preprocessing import MinMaxScaler

from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.preprocessing import PrivateMinMaxScaler, private_bounds
from skdp.utils import audit_mechanism

LOWER, UPPER = np.array([-3.0, 0.0, 10.0]), np.array([5.0, 1.0, 20.0])


def _data(n=5000, seed=0):
    return np.random.default_rng(seed).uniform(LOWER, UPPER, size=(n, 3))


@pytest.mark.parametrize("bounds", [(-100, 100), None])
@pytest.mark.parametrize("feature_range, clip", [((0, 1), False), ((-1, 2), True)])
def test_infinite_epsilon_equals_sklearn(bounds, feature_range, clip):
    X = _data()
    kw = {"feature_range": feature_range, "clip": clip}
    ours = PrivateMinMaxScaler(epsilon=np.inf, bounds_X=bounds, **kw).fit(X)
    ref = MinMaxScaler(**kw).fit(X)
    for attr in ("data_min_", "data_max_", "data_range_", "scale_", "min_"):
        np.testing.assert_array_equal(getattr(ours, attr), getattr(ref, attr))
    Y = _data(50, seed=1) * 2
    np.testing.assert_allclose(ours.transform(Y), ref.transform(Y), rtol=1e-14)
    np.testing.assert_allclose(
        ours.inverse_transform(Y), ref.inverse_transform(Y), rtol=1e-14
    )
    assert ours.privacy_spent_ == PrivacyBudget(math.inf)


def test_the_release_is_private_bounds_inside_the_declared_ranges():
    # in-process identity: the fit is one call of private_bounds (whose
    # mechanism is tested exactly in test_private_bounds.py) with the declared
    # ranges as its envelope, and the same seed
    X = _data()
    est = PrivateMinMaxScaler(epsilon=1.0, bounds_X=(LOWER, UPPER), random_state=3)
    est.fit(X)
    envelope = {j: (LOWER[j], UPPER[j]) for j in range(3)}
    ref = private_bounds(X, epsilon=1.0, envelope=envelope, random_state=3)
    np.testing.assert_array_equal(est.data_min_, ref.lower)
    np.testing.assert_array_equal(est.data_max_, ref.upper)
    assert est.privacy_spent_ == ref.budget
    assert np.all(est.data_min_ >= LOWER) and np.all(est.data_max_ <= UPPER)
    np.testing.assert_allclose(
        est.transform(X), (X - ref.lower) / (ref.upper - ref.lower)
    )


def test_recorded_spend_equals_the_guarantee():
    X = _data()
    with track_budget() as acc:
        est = PrivateMinMaxScaler(epsilon=0.6, bounds_X=(-50, 50)).fit(X)
    assert acc.spends == [("PrivateMinMaxScaler", est.privacy_spent_)]
    assert 0 < est.privacy_spent_.epsilon <= 0.6
    assert est.privacy_spent_.delta == 0.0


def test_cap_refuses_and_leaves_no_model():
    est = PrivateMinMaxScaler(epsilon=1.0, bounds_X=(-50, 50))
    with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
        est.fit(_data())
    assert not hasattr(est, "data_min_") and not hasattr(est, "privacy_spent_")


def test_audit_on_a_neighbouring_pair():
    # one row moved from the top of the declared range to its bottom; the
    # released upper end is the statistic (post-processing)
    base = np.linspace(0.4, 0.6, 19)
    a = np.append(base, 1.0)[:, None]
    b = np.append(base, 0.0)[:, None]
    seeds = np.random.default_rng(11)

    def release(data, n, rng):
        out = np.empty(n)
        for i in range(n):
            est = PrivateMinMaxScaler(
                epsilon=1.0, bounds_X=(0.0, 1.0), random_state=rng
            ).fit(data)
            out[i] = est.data_max_[0]
        return out

    res = audit_mechanism(release, a, b, n_samples=4000, random_state=seeds)
    assert res.epsilon_lower_bound <= 1.0


def test_inputs_unchanged_and_clip():
    X = _data()
    before = X.copy()
    est = PrivateMinMaxScaler(bounds_X=(-50, 50), clip=True, random_state=0).fit(X)
    Z = est.transform(X * 10)
    assert Z.min() >= 0 and Z.max() <= 1
    est.inverse_transform(Z)
    np.testing.assert_array_equal(X, before)


def test_no_leak_warning_without_declared_ranges():
    # undeclared ranges are released over the public scale-free grid: private
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        est = PrivateMinMaxScaler(epsilon=2.0).fit(_data(20_000))
    assert est.privacy_spent_ == PrivacyBudget(2.0) and est.bounds_ is None


def test_set_output_pandas():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(_data(), columns=["a", "b", "c"])
    est = PrivateMinMaxScaler(bounds_X=(-50, 50), random_state=0)
    out = est.set_output(transform="pandas").fit_transform(X)
    assert list(out.columns) == ["a", "b", "c"]


@pytest.mark.parametrize(
    "params, match",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"feature_range": (1, 0)}, "feature range must be smaller"),
        ({"feature_range": (0, 1, 2)}, "feature_range must be a tuple"),
        ({"feature_range": [0, 1]}, "feature_range"),
        ({"bounds_X": (1.0, -1.0)}, "lower < upper"),
        ({"bounds_X": ([0, 0], [1, 1])}, "length 3"),
    ],
)
def test_bad_parameters_raise_clear_errors(params, match):
    with pytest.raises(ValueError, match=match):
        PrivateMinMaxScaler(**params).fit(_data(100))


def test_seed_policy_same_seed_gives_different_noise_by_default():
    import skdp

    X = _data()
    with skdp.config_context(reproducible_noise=False):
        fits = [
            PrivateMinMaxScaler(bounds_X=(-50, 50), random_state=0).fit(X)
            for _ in range(2)
        ]
    assert not np.array_equal(fits[0].data_max_, fits[1].data_max_)
