"""PrivateBoundsEstimator: a privately released box for estimators that need
one (OP, PrivateLogisticRegression), the spend, the mapping and delegation."""

import numpy as np
import pytest
from sklearn.base import is_classifier, is_regressor
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp.accounting import PrivacyBudget, track_budget
from skdp.linear_model import (
    FMLinearRegression,
    OPLogisticRegression,
    PrivateLogisticRegression,
)
from skdp.preprocessing import PrivateBoundsEstimator


def _data(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [rng.normal(40, 10, n), rng.lognormal(9, 1, n), rng.integers(0, 2, n)]
    )
    logit = 0.15 * (X[:, 0] - 40) + 1.5 * (X[:, 2] - 0.5)
    y = (logit + rng.logistic(size=n) > 0).astype(int)
    return X, y


def _op(**kw):
    params = {"epsilon": 2.0, "delta": 1e-6, "classes": [0, 1], "random_state": 0}
    params.update(kw)
    return OPLogisticRegression(**params)


def test_spend_is_two_releases_that_compose_to_the_estimators_budget():
    X, y = _data()
    with track_budget() as acc:
        clf = PrivateBoundsEstimator(_op(), public_bounds={2: (0, 1)}).fit(X, y)
    assert acc.spends == [
        ("PrivateBoundsEstimator.bounds", PrivacyBudget(0.4, 0.0)),
        ("PrivateBoundsEstimator (OPLogisticRegression)", PrivacyBudget(1.6, 1e-6)),
    ]
    assert clf.privacy_spent_ == PrivacyBudget(2.0, 1e-6)
    assert clf.bounds_privacy_spent_ == PrivacyBudget(0.4, 0.0)
    assert clf.estimator_.get_params()["bounds_X"] == (-1.0, 1.0)
    assert (clf.bounds_[0][2], clf.bounds_[1][2]) == (0.0, 1.0)


def test_the_clone_sees_rows_in_its_box_and_predictions_are_delegated():
    X, y = _data()
    clf = PrivateBoundsEstimator(_op(), public_bounds={2: (0, 1)}, random_state=1)
    clf.fit(X, y)
    Z = clf._mapped(X)
    assert Z.min() >= -1.0 and Z.max() <= 1.0
    np.testing.assert_array_equal(clf.predict(X), clf.estimator_.predict(Z))
    np.testing.assert_allclose(clf.predict_proba(X), clf.estimator_.predict_proba(Z))
    # the linear model in the user's units gives the same decision values on
    # rows inside the box
    inside = np.all((X >= clf.bounds_[0]) & (X <= clf.bounds_[1]), axis=1)
    np.testing.assert_allclose(
        X[inside] @ clf.coef_.ravel() + np.ravel(clf.intercept_)[0],
        clf.decision_function(X[inside]),
        rtol=1e-9,
        atol=1e-9,
    )
    assert clf.score(X, y) > 0.75
    np.testing.assert_array_equal(clf.classes_, [0, 1])


@pytest.mark.parametrize("envelope", [None, (0, [150, 1e7, 1])])
def test_private_logistic_auto_with_private_ranges_learns(envelope):
    """n * eps per range = 6,000 * 0.4 / 2 = 1,200: the ranges hold the data."""
    X, y = _data()
    inner = PrivateLogisticRegression(
        epsilon=2.0, delta=1e-6, classes=[0, 1], random_state=0
    )
    clf = PrivateBoundsEstimator(
        inner, envelope=envelope, public_bounds={2: (0, 1)}, random_state=0
    ).fit(X, y)
    assert clf.score(X, y) > 0.75
    lo, hi = clf.bounds_
    assert lo[0] <= np.quantile(X[:, 0], 0.01) and hi[0] >= np.quantile(X[:, 0], 0.99)


# 1,500 rows per fold at eps 0.5: the small budget warns, which is not tested here
@pytest.mark.filterwarnings("ignore::skdp.preprocessing.PrivateBoundsWarning")
def test_tags_follow_the_estimator_and_grid_search_tunes_its_epsilon():
    assert is_classifier(PrivateBoundsEstimator(_op()))
    assert is_regressor(PrivateBoundsEstimator(FMLinearRegression()))
    X, y = _data(n=3000)
    pipe = make_pipeline(
        FunctionTransformer(), PrivateBoundsEstimator(_op(), public_bounds={2: (0, 1)})
    )
    search = GridSearchCV(
        pipe, {"privateboundsestimator__estimator__epsilon": [2.0, 4.0]}, cv=2
    )
    search.fit(X, y)
    assert search.best_params_["privateboundsestimator__estimator__epsilon"] in (2, 4)


def test_envelope_keeps_ranges_inside_it():
    X, y = _data()
    clf = PrivateBoundsEstimator(_op(), envelope=(0, [150, 1e7, 1]), random_state=0)
    clf.fit(X, y)
    assert np.all(clf.bounds_[0] >= 0) and np.all(clf.bounds_[1] <= [150, 1e7, 1])


@pytest.mark.parametrize(
    "estimator, err, match",
    [
        (_op(data_norm=1.0), ValueError, "data_norm must be None"),
        (_op(epsilon=-1.0), ValueError, "epsilon must be > 0"),
        (FunctionTransformer(), TypeError, "epsilon and bounds_X"),
    ],
)
def test_bad_estimators(estimator, err, match):
    X, y = _data(n=200)
    with pytest.raises(err, match=match):
        PrivateBoundsEstimator(estimator).fit(X, y)


def test_input_unchanged_and_seeded():
    X, y = _data(n=3000)
    X0 = X.copy()
    a = PrivateBoundsEstimator(_op(), random_state=3).fit(X, y)
    b = PrivateBoundsEstimator(_op(), random_state=3).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(a.bounds_[0], b.bounds_[0])
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_an_envelope_the_data_fill_records_the_whole_share():
    """Two numeric columns uniform over their envelopes: the fullest
    half-envelope window holds about half the rows, so "loose" has
    probability exp(-0.4 * 32) / 2 < 1e-5 per column. Each range draws only
    its looseness test, 32 / n, and keeps its envelope; the release records
    its whole share before drawing (what it leaves unused is not given to the
    estimator, whose budget would then depend on the test), and the estimator
    gets the rest of epsilon."""
    rng = np.random.default_rng(0)
    n = 4000
    X = np.column_stack(
        [rng.uniform(0, 80, n), rng.uniform(0, 1e4, n), rng.integers(0, 2, n)]
    )
    y = (0.1 * (X[:, 0] - 40) + rng.logistic(size=n) > 0).astype(int)
    env = (0.0, [80.0, 1e4, 1.0])
    with track_budget() as acc:
        clf = PrivateBoundsEstimator(
            _op(), envelope=env, public_bounds={2: (0, 1)}, random_state=0
        ).fit(X, y)
    assert acc.spends[0] == ("PrivateBoundsEstimator.bounds", PrivacyBudget(0.4))
    assert acc.spends[1][1].epsilon == pytest.approx(1.6, rel=1e-12)
    assert clf.privacy_spent_.epsilon == pytest.approx(2.0, rel=1e-12)
    np.testing.assert_array_equal(clf.bounds_[0], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(clf.bounds_[1], [80.0, 1e4, 1.0])
