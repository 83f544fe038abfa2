"""check_privacy: statuses of the steps of fitted pipelines and the total."""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    Normalizer,
    PolynomialFeatures,
    StandardScaler,
)

from skdp.accounting import PrivacyBudget, track_budget
from skdp.decomposition import PrivatePCA
from skdp.exceptions import PrivacyLeakWarning
from skdp.linear_model import FMLogisticRegression, OPLogisticRegression
from skdp.pipeline import (
    DATA_INDEPENDENT,
    LABEL_PRIVATE,
    NOT_FITTED,
    NOT_PRIVATE,
    PRIVATE,
    check_privacy,
)
from skdp.preprocessing import (
    PrivateLabelClassifier,
    PrivateMinMaxScaler,
    PrivateStandardScaler,
    RandomizedResponse,
)


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 3))
    y = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def _op(**kw):
    return OPLogisticRegression(
        epsilon=1.0, bounds_X=(-3, 3), classes=[0, 1], random_state=0, **kw
    )


def _statuses(report):
    return {s.name: s.status for s in report.steps}


def test_sklearn_scaler_before_a_private_classifier_is_reported():
    # the case: StandardScaler's mean_ and var_ are released exactly
    X, y = _data()
    fm = FMLogisticRegression(
        epsilon=1.0, bounds_X=(-3, 3), classes=[0, 1], random_state=0
    )
    report = check_privacy(make_pipeline(StandardScaler(), fm).fit(X, y))
    assert _statuses(report) == {
        "standardscaler": NOT_PRIVATE,
        "fmlogisticregression": PRIVATE,
    }
    assert report.steps[1].spent == PrivacyBudget(1.0)
    assert not report.is_private
    assert report.leaking_steps == ["standardscaler"]
    assert math.isinf(report.total.epsilon)
    text = str(report)
    first = text.splitlines()[0]
    assert first.startswith("standardscaler ") and NOT_PRIVATE in first
    assert "not differentially private: standardscaler" in text


def test_private_pipeline_total_is_the_composition_recorded_by_track_budget():
    X, y = _data()
    pipe = make_pipeline(
        PrivateStandardScaler(epsilon=0.5, delta=1e-8, bounds_X=(-1, 1)),
        PrivatePCA(2, epsilon=0.25, delta=1e-8, bounds_X=(-4, 4)),
        _op(delta=1e-8),
    )
    with track_budget() as acc:
        pipe.fit(X, y)
    report = check_privacy(pipe)
    assert {s.status for s in report.steps} == {PRIVATE}
    assert report.is_private
    assert report.total == acc.total
    assert report.total.epsilon == 1.75
    assert report.total.delta == pytest.approx(3e-8, rel=1e-12)
    assert "total" in str(report) and "epsilon=1.75" in str(report)


def test_data_independent_steps_cost_nothing():
    X, y = _data()
    pipe = Pipeline(
        [
            ("log", FunctionTransformer(np.tanh)),
            ("norm", Normalizer()),
            ("poly", PolynomialFeatures(2)),
            ("skip", "passthrough"),
            ("clf", _op()),
        ]
    ).fit(X, y)
    report = check_privacy(pipe)
    assert _statuses(report) == {
        "log": DATA_INDEPENDENT,
        "norm": DATA_INDEPENDENT,
        "poly": DATA_INDEPENDENT,
        "skip": DATA_INDEPENDENT,
        "clf": PRIVATE,
    }
    assert report.total == PrivacyBudget(1.0)


def test_unfitted_pipeline_has_no_total():
    report = check_privacy(make_pipeline(FunctionTransformer(), _op()))
    assert _statuses(report) == {
        "functiontransformer": DATA_INDEPENDENT,
        "oplogisticregression": NOT_FITTED,
    }
    assert report.total is None and not report.is_private
    assert "unknown" in str(report)


def test_undeclared_domain_and_infinite_epsilon_are_not_private():
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        inferred = PrivateStandardScaler(epsilon=1.0).fit(X)
        no_classes = OPLogisticRegression(epsilon=1.0, bounds_X=(-1, 1)).fit(X, y)
    report = check_privacy(
        Pipeline(
            [
                ("scaler", inferred),
                ("pca", PrivatePCA(2, epsilon=np.inf, bounds_X=(-3, 3)).fit(X)),
                ("clf", no_classes),
            ]
        )
    )
    assert _statuses(report) == {
        "scaler": NOT_PRIVATE,
        "pca": NOT_PRIVATE,
        "clf": NOT_PRIVATE,
    }
    reasons = {s.name: s.reason for s in report.steps}
    assert "bounds_X not declared" in reasons["scaler"]
    assert "epsilon=inf" in reasons["pca"]
    assert "classes not declared" in reasons["clf"]
    # a row-norm bound alone declares the PCA's domain
    pca = PrivatePCA(2, data_norm=2.0, random_state=0).fit(X)
    assert check_privacy(pca).steps[0].status == PRIVATE


def test_nested_pipelines_unions_and_column_transformers_are_walked():
    X, y = _data()
    union = FeatureUnion(
        [
            ("pca", PrivatePCA(1, epsilon=0.5, bounds_X=(-1, 1))),
            ("raw", FunctionTransformer()),
        ]
    )
    columns = ColumnTransformer(
        [
            ("scaled", PrivateStandardScaler(epsilon=0.25, bounds_X=(-1, 1)), [0, 1]),
            ("exact", StandardScaler(), [2]),
        ]
    )
    pipe = Pipeline(
        [("union", union), ("inner", make_pipeline(FunctionTransformer(), _op()))]
    ).fit(X, y)
    report = check_privacy(pipe)
    assert _statuses(report) == {
        "union__pca": PRIVATE,
        "union__raw": DATA_INDEPENDENT,
        "inner__functiontransformer": DATA_INDEPENDENT,
        "inner__oplogisticregression": PRIVATE,
    }
    assert report.total == PrivacyBudget(1.5)
    report = check_privacy(make_pipeline(columns, _op()).fit(X, y))
    assert _statuses(report) == {
        "columntransformer__scaled": PRIVATE,
        "columntransformer__exact": NOT_PRIVATE,
        "oplogisticregression": PRIVATE,
    }
    assert report.leaking_steps == ["columntransformer__exact"]


def test_label_privacy_is_not_reported_as_privacy_of_the_features():
    X, y = _data()
    clf = PrivateLabelClassifier(
        LogisticRegression(),
        RandomizedResponse(epsilon=2.0, classes=[0, 1], random_state=0),
    ).fit(X, y)
    (step,) = check_privacy(clf).steps
    assert step.status == LABEL_PRIVATE and step.spent == PrivacyBudget(2.0)
    assert not check_privacy(clf).is_private


def test_plain_sklearn_models_and_searches_are_not_private():
    X, y = _data()
    report = check_privacy(make_pipeline(PCA(2), LogisticRegression()).fit(X, y))
    assert {s.status for s in report.steps} == {NOT_PRIVATE}
    search = GridSearchCV(_op(), {"epsilon": [0.5, 1.0]}, cv=2).fit(X, y)
    assert check_privacy(search).steps[0].status == NOT_PRIVATE


def test_min_max_scaler_without_ranges_is_private():
    # its ranges are released over the public grid: it declares itself
    X, y = _data(5000)
    scaler = PrivateMinMaxScaler(epsilon=1.0)
    assert check_privacy(scaler).steps[0].status == NOT_FITTED
    report = check_privacy(make_pipeline(scaler, _op()).fit(X, y))
    assert report.steps[0].status == PRIVATE
    assert report.total == scaler.privacy_spent_ + PrivacyBudget(1.0)
    exact = PrivateMinMaxScaler(epsilon=np.inf).fit(X)
    assert check_privacy(exact).steps[0].status == NOT_PRIVATE


class _Declared(TransformerMixin, BaseEstimator):
    """An outside estimator that declares itself through the documented tag."""

    def __init__(self, answer=None):
        self.answer = answer

    def fit(self, X, y=None):
        self.fitted_ = True
        return self

    def transform(self, X):
        return X

    def __skdp_privacy__(self):
        return self.answer


@pytest.mark.parametrize(
    "answer, status",
    [
        (PrivacyBudget(0.3, 1e-9), PRIVATE),
        ("data-independent", DATA_INDEPENDENT),
        (None, NOT_PRIVATE),
        (PrivacyBudget(math.inf), NOT_PRIVATE),
    ],
)
def test_outside_estimators_declare_themselves(answer, status):
    X, y = _data()
    report = check_privacy(make_pipeline(_Declared(answer), _op()).fit(X, y))
    assert report.steps[0].status == status
    if status == PRIVATE:
        assert report.total == PrivacyBudget(1.3, 1e-9)


def test_a_bad_declaration_raises():
    with pytest.raises(TypeError, match="__skdp_privacy__"):
        check_privacy(_Declared("private"))
