"""A pickle of an FM model never carries partial_fit's exact sums or its noise
generator: either would let whoever holds the pickle take the noise off."""

import copy
import pickle

import numpy as np
import pytest

from skdp.linear_model import FMLinearRegression, FMLogisticRegression


def _data(seed=0, n=200):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=n), -1, 1)
    return X, y


def _streamed(cls=FMLinearRegression, **kw):
    X, y = _data()
    if cls is FMLogisticRegression:
        y = (y > 0).astype(int)
        kw.setdefault("classes", [0, 1])
    else:
        kw.setdefault("bounds_y", (-1, 1))
    est = cls(epsilon=1.0, bounds_X=(-1, 1), **kw)
    est.partial_fit(X[:100], y[:100])
    est.partial_fit(X[100:], y[100:])
    return est, X, y


@pytest.mark.parametrize("cls", [FMLinearRegression, FMLogisticRegression])
def test_pickle_drops_the_exact_sums_and_the_generator(cls):
    est, X, _ = _streamed(cls)
    assert hasattr(est, "_stats") and hasattr(est, "_rng")  # the live stream
    loaded = pickle.loads(pickle.dumps(est))
    assert not hasattr(loaded, "_stats")
    assert not hasattr(loaded, "_rng")
    # nothing in the pickle holds the sums under another name
    blob = pickle.dumps(est)
    assert b"FMStatistics" not in blob and b"Generator" not in blob
    # the released model itself survives
    np.testing.assert_array_equal(loaded.coef_, est.coef_)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert loaded.privacy_spent_ == est.privacy_spent_


def test_the_original_object_keeps_its_stream():
    est, X, y = _streamed()
    pickle.dumps(est)
    spent = est.privacy_spent_.epsilon
    est.partial_fit(X[:50], y[:50])
    assert est.privacy_spent_.epsilon == pytest.approx(spent + 1.0)
    assert est.n_samples_seen_ == 250


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_an_unpickled_stream_refuses_to_continue_and_changes_nothing(how):
    est, X, y = _streamed()
    loaded = pickle.loads(pickle.dumps(est)) if how == "pickle" else copy.deepcopy(est)
    coef, spent = loaded.coef_.copy(), loaded.privacy_spent_
    with pytest.raises(ValueError, match="running sums never leave"):
        loaded.partial_fit(X[:10], y[:10])
    np.testing.assert_array_equal(loaded.coef_, coef)
    assert loaded.privacy_spent_ == spent


def test_fit_after_unpickling_starts_afresh_and_so_does_a_new_stream():
    est, X, y = _streamed()
    loaded = pickle.loads(pickle.dumps(est))
    loaded.fit(X, y)
    assert loaded.privacy_spent_.epsilon == pytest.approx(1.0)
    loaded.partial_fit(X[:100], y[:100])  # a new stream after fit
    assert loaded.n_samples_seen_ == 100
    assert hasattr(loaded, "_stats")


def test_a_fitted_model_pickles_as_before():
    X, y = _data()
    est = FMLinearRegression(epsilon=1.0, bounds_X=(-1, 1), bounds_y=(-1, 1))
    est.fit(X, y)
    loaded = pickle.loads(pickle.dumps(est))
    assert not hasattr(loaded, "_stream_ended")
    loaded.partial_fit(X[:100], y[:100])  # partial_fit after fit: a new stream
    assert loaded.n_samples_seen_ == 100
