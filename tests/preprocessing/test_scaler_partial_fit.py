"""PrivateStandardScaler.partial_fit: one release per batch, added to running
totals.

The suite runs with reproducible noise opted in (``conftest.py``), so a seed
drives the noise and a release can be recomputed by hand: the bit-for-bit
assertions compare computations skdp itself guarantees identical.
"""

import math

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.preprocessing import PrivateStandardScaler
from skdp.preprocessing._private_scaler import MOMENT_WEIGHT, moment_statistics
from skdp.utils import noise_generator

LOWER = np.array([0.0, -5.0, 9.0])
UPPER = np.array([10.0, 5.0, 11.0])  # the last feature is constant (10)


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(0, 10, n), rng.normal(1, 2, n), np.full(n, 10.0)])
    X[:5, 0] = 40.0  # outside: clipped
    return X


def _batches(X, sizes=(300, 500, 400)):
    edges = np.cumsum((0,) + sizes)
    return [X[a:b] for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _scaler(**kw):
    return PrivateStandardScaler(**{"epsilon": 1.0, "bounds_X": (LOWER, UPPER), **kw})


def _model(est):
    out = {"privacy_spent_": est.privacy_spent_, "n": est.n_samples_seen_}
    for name in ("mean_", "var_", "scale_", "variance_floor_"):
        out[name] = np.copy(getattr(est, name))
    out["totals"] = np.copy(est._running.totals)
    return out


def _assert_same_model(a, b):
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("with_mean, with_std", [(True, True), (True, False)])
def test_infinite_epsilon_partial_fit_equals_fit_and_sklearn(with_mean, with_std):
    X = _data()
    kw = {"epsilon": np.inf, "with_mean": with_mean, "with_std": with_std}
    full = _scaler(**kw).fit(X)
    stream = _scaler(**kw)
    ref = StandardScaler(with_mean=with_mean, with_std=with_std)
    for batch in _batches(X):
        stream.partial_fit(batch)
        ref.partial_fit(np.clip(batch, LOWER, UPPER))
    assert stream.privacy_spent_ == PrivacyBudget(np.inf, 0.0)
    assert stream.n_samples_seen_ == full.n_samples_seen_ == ref.n_samples_seen_
    # Chan's pairwise update against numpy's two passes: a few roundings of
    # values of size ~10 apart
    np.testing.assert_allclose(stream.mean_, full.mean_, rtol=1e-13)
    np.testing.assert_allclose(stream.mean_, ref.mean_, rtol=1e-13)
    if with_std:
        np.testing.assert_allclose(stream.var_, full.var_, rtol=1e-10)
        np.testing.assert_allclose(stream.var_, ref.var_, rtol=1e-10)
        np.testing.assert_array_equal(stream.scale_, [*np.sqrt(stream.var_[:2]), 1.0])
    np.testing.assert_allclose(stream.transform(X), full.transform(X), rtol=1e-9)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_running_totals_are_the_sum_of_the_per_batch_releases(delta):
    X = _data()
    seed = 21
    est = _scaler(delta=delta, random_state=np.random.default_rng(seed))
    for batch in _batches(X):
        est.partial_fit(batch)
    gen = np.random.default_rng(seed)
    mech = est._mechanism((UPPER - LOWER) / 2)
    total = None
    for batch in _batches(X):
        stats = moment_statistics(np.clip(batch, LOWER, UPPER), LOWER, UPPER)
        release = mech.randomize(stats, random_state=noise_generator(gen))
        total = release if total is None else total + release
    np.testing.assert_array_equal(est._running.totals, total)
    assert (est._running.n, est._running.releases) == (1200, 3)
    assert est.n_samples_seen_ == 1200
    # fit's post-processing of the totals, n all rows, the floor from 3 draws
    centre, half = (LOWER + UPPER) / 2, (UPPER - LOWER) / 2
    m = np.clip(total[:3] / 1200, -1, 1)
    np.testing.assert_allclose(est.mean_, centre + half * m, rtol=1e-15)
    floor = min(math.sqrt(3 * mech.variance) / (MOMENT_WEIGHT * 1200), 1.0)
    np.testing.assert_allclose(est.variance_floor_, half**2 * floor, rtol=1e-14)
    assert np.all(est.var_ >= est.variance_floor_)


def test_first_release_is_fits_and_an_int_seed_does_not_repeat_its_noise():
    X = _data(400)
    one = _scaler(random_state=3).partial_fit(X)
    _assert_same_model(_model(one), _model(_scaler(random_state=3).fit(X)))
    twice = _scaler(random_state=3).partial_fit(X).partial_fit(X)
    assert not np.allclose(twice._running.totals, 2 * one._running.totals)


@pytest.mark.parametrize("delta", [0.0, 1e-7])
def test_each_call_records_its_spend_and_privacy_spent_is_the_sum(delta):
    est = _scaler(epsilon=0.25, delta=delta, random_state=0)
    with track_budget() as acc:
        for k, batch in enumerate(_batches(_data()), start=1):
            est.partial_fit(batch)
            assert est.privacy_spent_.epsilon == pytest.approx(0.25 * k, rel=1e-15)
            assert est.privacy_spent_.delta == pytest.approx(delta * k, rel=1e-15)
    spend = ("PrivateStandardScaler.partial_fit", PrivacyBudget(0.25, delta))
    assert acc.spends == [spend] * 3


def test_nothing_released_nothing_recorded_rows_counted():
    est = _scaler(with_mean=False, with_std=False)
    with track_budget() as acc:
        for batch in _batches(_data()):
            est.partial_fit(batch)
    assert acc.spends == []
    assert est.privacy_spent_ == PrivacyBudget(0.0, 0.0)
    assert est.n_samples_seen_ == 1200 and est.mean_ is None and est.scale_ is None


def _with_nan(X):
    X = X.copy()
    X[2, 0] = np.nan
    return X


@pytest.mark.parametrize(
    "make_bad, match",
    [
        (_with_nan, "Input X contains NaN"),
        (
            lambda X: X[:, :2],
            "X has 2 features, but PrivateStandardScaler is expecting 3",
        ),
    ],
    ids=["NaN", "n_features"],
)
def test_a_bad_batch_raises_records_nothing_and_keeps_the_model(make_bad, match):
    b1, b2, b3 = _batches(_data())
    est = _scaler(random_state=8).partial_fit(b1)
    before = _model(est)
    with track_budget() as acc:
        with pytest.raises(ValueError, match=match):
            est.partial_fit(make_bad(b2))
    assert acc.spends == []
    _assert_same_model(_model(est), before)
    est.partial_fit(b3)
    clean = _scaler(random_state=8).partial_fit(b1).partial_fit(b3)
    _assert_same_model(_model(est), _model(clean))


def test_a_refused_call_draws_nothing_and_keeps_the_model():
    b1, b2, _ = _batches(_data())
    gen = np.random.default_rng(4)
    est = _scaler(random_state=gen)
    with pytest.raises(BudgetExceededError):
        with track_budget(epsilon=1.5) as acc:
            est.partial_fit(b1)
            before, state = _model(est), gen.bit_generator.state
            est.partial_fit(b2)
    assert len(acc.spends) == 1
    assert gen.bit_generator.state == state
    _assert_same_model(_model(est), before)


def test_inputs_are_not_modified():
    X = _data()
    before = X.copy()
    est = _scaler(random_state=0)
    for batch in _batches(X):
        est.partial_fit(batch)
    np.testing.assert_array_equal(X, before)


def test_fit_starts_new_totals_and_partial_fit_after_fit_adds_to_them():
    b1, b2, b3 = _batches(_data())
    est = _scaler(random_state=2).partial_fit(b1).partial_fit(b2)
    est.fit(b3)
    _assert_same_model(_model(est), _model(_scaler(random_state=2).fit(b3)))
    est.partial_fit(b1)
    assert est.privacy_spent_ == PrivacyBudget(2.0, 0.0)
    assert est.n_samples_seen_ == len(b3) + len(b1)


def test_a_failed_fit_leaves_no_totals_behind():
    b1, b2, _ = _batches(_data())
    est = _scaler(random_state=6).partial_fit(b1)
    with pytest.raises(ValueError, match="Input X contains NaN"):
        est.fit(_with_nan(b2))
    est.partial_fit(b2)  # starts anew: one release, on b2 only
    _assert_same_model(_model(est), _model(_scaler(random_state=6).partial_fit(b2)))


def test_undeclared_bounds_are_read_off_the_first_batch_only():
    b1, b2, _ = _batches(_data())
    with pytest.warns(PrivacyLeakWarning):
        est = PrivateStandardScaler(epsilon=np.inf).partial_fit(b1)
    bounds = [b.copy() for b in est.bounds_]
    est.partial_fit(b2 * 3)  # wider data: clipped to the first batch's ranges
    np.testing.assert_array_equal(est.bounds_[0], bounds[0])
    np.testing.assert_array_equal(est.bounds_[1], bounds[1])
    assert np.all(est.mean_ <= bounds[1])


def test_changed_with_std_is_refused_before_the_spend():
    b1, b2, _ = _batches(_data())
    est = _scaler(random_state=0).partial_fit(b1)
    est.set_params(with_std=False)
    with track_budget() as acc:
        with pytest.raises(ValueError, match="call fit to start again"):
            est.partial_fit(b2)
    assert acc.spends == []


def test_dask_input_is_refused_with_a_type_error():
    da = pytest.importorskip("dask.array")
    with track_budget() as acc:
        with pytest.raises(TypeError, match="partial_fit takes in-memory batches"):
            _scaler().partial_fit(da.from_array(_data(100), chunks=50))
    assert acc.spends == []
