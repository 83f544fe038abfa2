"""PrivateLabelClassifier in sklearn pipelines, grid searches and imblearn pipelines."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import PrivacyLeakWarning
from skdp.preprocessing import (
    ExponentialLabelRelease,
    PrivateLabelClassifier,
    RandomizedResponse,
)

pytestmark = pytest.mark.filterwarnings("error::skdp.exceptions.PrivacyLeakWarning")


@pytest.fixture(scope="module")
def data():
    return make_classification(
        n_samples=1200, n_features=6, n_informative=4, random_state=0
    )


def _rr(epsilon=1.0, seed=0):
    return RandomizedResponse(epsilon=epsilon, classes=[0, 1], random_state=seed)


def test_grid_search_over_privatizer_epsilon(data):
    X, y = data
    pipe = Pipeline(
        [
            ("scale", StandardScaler()),
            ("clf", PrivateLabelClassifier(LogisticRegression(), _rr())),
        ]
    )
    grid = [0.05, 1.0, np.inf]
    search = GridSearchCV(pipe, {"clf__privatizer__epsilon": grid}, cv=3)
    with track_budget() as acc:
        search.fit(X, y)
    assert len(acc.spends) == len(grid) * 3 + 1  # every fit is a release, + refit
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    assert scores[2] > scores[0] + 0.2  # eps=0.05 labels are nearly coin flips
    best = search.best_estimator_.named_steps["clf"]
    best_epsilon = search.best_params_["clf__privatizer__epsilon"]
    assert best.privacy_spent_ == PrivacyBudget(best_epsilon)


def test_infinite_epsilon_reproduces_non_private_fit(data):
    X, y = data
    reference = LogisticRegression().fit(X, y)
    for privatizer in (
        _rr(np.inf),
        ExponentialLabelRelease(epsilon=np.inf, classes=[0, 1]),
    ):
        clf = PrivateLabelClassifier(LogisticRegression(), privatizer).fit(X, y)
        np.testing.assert_array_equal(clf.estimator_.coef_, reference.coef_)
        np.testing.assert_array_equal(clf.predict_proba(X), reference.predict_proba(X))


def test_seeds_and_delegation(data):
    X, y = data
    a = PrivateLabelClassifier(LogisticRegression(), _rr(seed=1)).fit(X, y)
    b = PrivateLabelClassifier(LogisticRegression(), _rr(seed=1)).fit(X, y)
    c = PrivateLabelClassifier(LogisticRegression(), _rr(seed=2)).fit(X, y)
    np.testing.assert_array_equal(a.estimator_.coef_, b.estimator_.coef_)
    assert not np.array_equal(a.estimator_.coef_, c.estimator_.coef_)
    np.testing.assert_array_equal(a.predict(X), a.estimator_.predict(X))
    np.testing.assert_array_equal(
        a.decision_function(X), a.estimator_.decision_function(X)
    )
    assert a.score(X, y) == a.estimator_.score(X, y)
    assert a.privatizer_ is not a.privatizer and a.estimator_ is not a.estimator
    np.testing.assert_array_equal(a.classes_, [0, 1])
    assert a.n_features_in_ == X.shape[1]
    # the forward-loss-correction matrix is reachable from the fitted privatizer
    np.testing.assert_allclose(a.privatizer_.label_matrix_.sum(axis=1), 1.0)


def test_privatizer_changes_the_training_labels(data):
    X, y = data
    privatizer = _rr(0.5, seed=3)
    clf = PrivateLabelClassifier(LogisticRegression(), privatizer).fit(X, y)
    _, y_private = _rr(0.5, seed=3).fit_resample(X, y)
    manual = LogisticRegression().fit(X, y_private)
    np.testing.assert_array_equal(clf.estimator_.coef_, manual.coef_)
    assert np.mean(y_private != y) > 0.2


def test_classes_missing_from_released_labels_get_zero_probability():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.array(["a", "b"])[np.arange(60) % 2]
    privatizer = RandomizedResponse(epsilon=np.inf, classes=["a", "b", "c"])
    clf = PrivateLabelClassifier(LogisticRegression(), privatizer).fit(X, y)
    assert clf.classes_.tolist() == ["a", "b", "c"]
    proba = clf.predict_proba(X)
    assert proba.shape == (60, 3) and np.all(proba[:, 2] == 0)
    np.testing.assert_allclose(proba[:, :2], clf.estimator_.predict_proba(X))
    assert np.all(np.isneginf(clf.predict_log_proba(X)[:, 2]))


def test_methods_follow_the_inner_estimator(data):
    X, y = data
    clf = PrivateLabelClassifier(LinearSVC(), _rr())
    assert not hasattr(clf, "predict_proba")
    clf.fit(X, y)
    assert not hasattr(clf, "predict_proba") and hasattr(clf, "decision_function")


@pytest.mark.parametrize(
    ("estimator", "privatizer", "y", "match"),
    [
        (LogisticRegression(), LogisticRegression(), None, "privatizer"),
        (StandardScaler(), _rr(), None, "estimator"),
        (LogisticRegression(), _rr(), np.linspace(0, 1, 30), "Unknown label type"),
        (LogisticRegression(), RandomizedResponse(), np.zeros(30), "2 classes"),
    ],
)
def test_bad_input(estimator, privatizer, y, match):
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.arange(30) % 2 if y is None else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match=match):
            PrivateLabelClassifier(estimator, privatizer).fit(X, y)


@pytest.mark.parametrize(
    "sampler",
    [_rr(1.0, seed=4), ExponentialLabelRelease(epsilon=2.0, classes=[0, 1])],
    ids=["rr", "exponential"],
)
def test_samplers_in_imblearn_pipeline(data, sampler):
    imblearn_pipeline = pytest.importorskip("imblearn.pipeline")
    X, y = data
    sampler = sampler.set_params(random_state=4)
    pipe = imblearn_pipeline.Pipeline(
        [
            ("scale", StandardScaler()),
            ("labels", sampler),
            ("clf", LogisticRegression()),
        ]
    ).fit(X, y)
    X_scaled = StandardScaler().fit_transform(X)
    _, y_private = type(sampler)(**sampler.get_params()).fit_resample(X_scaled, y)
    manual = LogisticRegression().fit(X_scaled, y_private)
    np.testing.assert_allclose(pipe.named_steps["clf"].coef_, manual.coef_)
    # samplers only act in fit: predict sees the test data as is
    np.testing.assert_array_equal(pipe.predict(X), manual.predict(X_scaled))
