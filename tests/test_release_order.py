"""One order for every release: validate, record the spend, then draw.

Issue 40, item 3. A fit that fails on its own input or parameters (the inner
estimator's too) raises its clear error and leaves nothing in the ledger; a
release whose spend a cap refuses has drawn nothing (a user's Generator is
untouched, which the suite's reproducible-noise opt-in makes observable).
Each failing case here recorded a spend (or drew) on acd4f11, except the
central FM's string columns, which recorded nothing there but failed with
numpy's UFuncTypeError instead of scikit-learn's ValueError (issue 40, item 5).
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import make_column_transformer
from sklearn.ensemble import BaggingClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils._param_validation import InvalidParameterError

from skdp import tools
from skdp.accounting import track_budget
from skdp.exceptions import BudgetExceededError
from skdp.linear_model import (
    FMLogisticRegression,
    LossCorrectedLogisticRegression,
    OPLogisticRegression,
)
from skdp.linear_model._op_solver import CertificateError
from skdp.naive_bayes import PrivateGaussianNB
from skdp.preprocessing import (
    ExponentialLabelRelease,
    PrivateBoundsEstimator,
    PrivateLabelClassifier,
    PrivateLabelRegressor,
    PrivateStandardScaler,
    RandomizedResponse,
    RandomizedResponseWithPrior,
    RegressionLabelRelease,
)
from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor

N = 120


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(N, 3))
    y = (X[:, 0] > 0).astype(int)
    return X, y, X[:, 0] * 0.5


def _with_nan():
    X, y, y_reg = _data()
    X = X.copy()
    X[5, 1] = np.nan
    return X, y, y_reg


def _string_category():
    X, y, y_reg = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["c"] = pd.Categorical(np.where(X[:, 2] > 0, "high", "low"))
    return frame, y, y_reg


class _NeedsManyRows(ClassifierMixin, BaseEstimator):
    """Accepts NaN although its (default) tags say not; needs 100 rows."""

    def fit(self, X, y):
        if len(X) < 100:
            raise ValueError("needs at least 100 rows")
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


def _rr(**kw):
    return RandomizedResponse(epsilon=1.0, classes=[0, 1], **kw)


# (id, fit call on (X, y, y_reg), data, expected error, message pattern)
CASES = [
    (
        "bounds-estimator inner delta",
        lambda X, y, yr: PrivateBoundsEstimator(
            OPLogisticRegression(delta=1.5, classes=[0, 1])
        ).fit(X, y),
        _data,
        InvalidParameterError,
        "'delta' parameter of OPLogisticRegression",
    ),
    (
        "bounds-estimator label outside inner classes",
        lambda X, y, yr: PrivateBoundsEstimator(
            OPLogisticRegression(classes=[0, 1])
        ).fit(X, np.where(np.arange(N) == 3, 2, y)),
        _data,
        ValueError,
        r"labels not in OPLogisticRegression's classes \[0, 1\]: \[2\]",
    ),
    (
        "bounds-estimator fit parameter the inner lacks",
        lambda X, y, yr: PrivateBoundsEstimator(
            OPLogisticRegression(classes=[0, 1])
        ).fit(X, y, sample_weight=np.ones(N)),
        _data,
        TypeError,
        r"unexpected fit parameter\(s\) \['sample_weight'\]",
    ),
    (
        "bounds-estimator inner ridge leaving no room for noise",
        lambda X, y, yr: PrivateBoundsEstimator(
            OPLogisticRegression(alpha=1e-3, classes=[0, 1])
        ).fit(X, y),
        _data,
        ValueError,
        "leaves no room for noise",
    ),
    (
        # the certificate's floor on the ridge is public: checked before the
        # ranges' part is recorded (it raised after 10.0 was recorded)
        "bounds-estimator inner ridge below the certificate's floor",
        lambda X, y, yr: PrivateBoundsEstimator(
            OPLogisticRegression(epsilon=50.0, alpha=1e-12, classes=[0, 1])
        ).fit(X, y),
        _data,
        CertificateError,
        "too small for the certificate's precision",
    ),
    (
        "bounds-estimator one class for an inner that infers them",
        lambda X, y, yr: PrivateBoundsEstimator(OPLogisticRegression()).fit(
            X, np.zeros(N, dtype=int)
        ),
        _data,
        ValueError,
        "needs 2 classes; got 1 class",
    ),
    (
        "vertical regressor string column",
        lambda X, y, yr: VerticalFMRegressor(bounds_X=(-1, 1), bounds_y=(-1, 1)).fit(
            X, yr
        ),
        _string_category,
        ValueError,
        "could not convert string to float",
    ),
    (
        "vertical classifier string column",
        lambda X, y, yr: VerticalFMClassifier(bounds_X=(-1, 1), classes=[0, 1]).fit(
            X, y
        ),
        _string_category,
        ValueError,
        "could not convert string to float",
    ),
    (
        "FM fit string column",
        lambda X, y, yr: FMLogisticRegression(bounds_X=(-1, 1), classes=[0, 1]).fit(
            X, y
        ),
        _string_category,
        ValueError,
        "could not convert string to float",
    ),
    (
        "FM fit_chunks string column",
        lambda X, y, yr: FMLogisticRegression(
            bounds_X=(-1, 1), classes=[0, 1]
        ).fit_chunks([(X, y)]),
        _string_category,
        ValueError,
        "could not convert string to float",
    ),
    (
        "FM partial_fit string column",
        lambda X, y, yr: FMLogisticRegression(
            bounds_X=(-1, 1), classes=[0, 1]
        ).partial_fit(X, y),
        _string_category,
        ValueError,
        "could not convert string to float",
    ),
    (
        "naive Bayes partial_fit NaN",
        lambda X, y, yr: PrivateGaussianNB(
            bounds_X=(-1, 1), classes=[0, 1]
        ).partial_fit(X, y),
        _with_nan,
        ValueError,
        "Input X contains NaN",
    ),
    (
        "naive Bayes partial_fit label outside classes",
        lambda X, y, yr: PrivateGaussianNB(
            bounds_X=(-1, 1), classes=[0, 1]
        ).partial_fit(X, np.where(np.arange(N) == 3, 2, y)),
        _data,
        ValueError,
        r"labels not in classes \[0, 1\]: \[2\]",
    ),
    (
        "naive Bayes partial_fit classes argument differing from classes",
        lambda X, y, yr: PrivateGaussianNB(
            bounds_X=(-1, 1), classes=[0, 1]
        ).partial_fit(X, y, classes=[0, 1, 2]),
        _data,
        ValueError,
        r"classes=\[0, 1, 2\] differs from the declared classes=\[0, 1\]",
    ),
    (
        "standard scaler partial_fit NaN",
        lambda X, y, yr: PrivateStandardScaler(bounds_X=(-1, 1)).partial_fit(X),
        _with_nan,
        ValueError,
        "Input X contains NaN",
    ),
    (
        "FM newton refinement with 3 classes after private ranges",
        lambda X, y, yr: FMLogisticRegression(
            refinement="newton", classes=[0, 1, 2], bounds_X="private"
        ).fit(X, np.arange(N) % 3),
        _data,
        ValueError,
        "refinement='newton' supports two classes only",
    ),
    (
        "rr-with-prior NaN for the default prior",
        lambda X, y, yr: RandomizedResponseWithPrior(classes=[0, 1]).fit_resample(X, y),
        _with_nan,
        ValueError,
        "Input X contains NaN",
    ),
    (
        "rr-with-prior prior parameter",
        lambda X, y, yr: RandomizedResponseWithPrior(
            classes=[0, 1], prior_estimator=LogisticRegression(C=-1.0)
        ).fit_resample(X, y),
        _data,
        InvalidParameterError,
        "'C' parameter of LogisticRegression",
    ),
    (
        "private-label classifier NaN",
        lambda X, y, yr: PrivateLabelClassifier(LogisticRegression(), _rr()).fit(X, y),
        _with_nan,
        ValueError,
        "Input X contains NaN",
    ),
    (
        "private-label classifier inner parameter",
        lambda X, y, yr: PrivateLabelClassifier(LogisticRegression(C=-1.0), _rr()).fit(
            X, y
        ),
        _data,
        InvalidParameterError,
        "'C' parameter of LogisticRegression",
    ),
    (
        "private-label classifier nested inner parameter",
        lambda X, y, yr: PrivateLabelClassifier(
            make_pipeline(SimpleImputer(), LogisticRegression(penalty="l3")), _rr()
        ).fit(X, y),
        _data,
        InvalidParameterError,
        "'penalty' parameter of LogisticRegression",
    ),
    (
        "private-label classifier fit parameter the learner lacks",
        lambda X, y, yr: PrivateLabelClassifier(LogisticRegression(), _rr()).fit(
            X, y, bogus=1
        ),
        _data,
        TypeError,
        r"unexpected fit parameter\(s\) \['bogus'\]",
    ),
    (
        "private-label classifier learner left without a noise description",
        lambda X, y, yr: PrivateLabelClassifier(
            BaggingClassifier(LossCorrectedLogisticRegression(), n_estimators=2),
            RandomizedResponseWithPrior(epsilon=1.0, classes=[0, 1]),
        ).fit(X, y),
        _data,
        ValueError,
        "corrects for label noise",
    ),
    (
        "private-label classifier string column",
        lambda X, y, yr: PrivateLabelClassifier(LogisticRegression(), _rr()).fit(X, y),
        _string_category,
        ValueError,
        "could not convert string to float",
    ),
    (
        "rr-with-prior string column for the default prior",
        lambda X, y, yr: RandomizedResponseWithPrior(classes=[0, 1]).fit_resample(X, y),
        _string_category,
        ValueError,
        "could not convert string to float",
    ),
    (
        "private-label regressor string column",
        lambda X, y, yr: PrivateLabelRegressor(Ridge(), label_bounds=(-1, 1)).fit(
            X, yr
        ),
        _string_category,
        ValueError,
        "could not convert string to float",
    ),
    (
        "private-label regressor NaN",
        lambda X, y, yr: PrivateLabelRegressor(Ridge(), label_bounds=(-1, 1)).fit(
            X, yr
        ),
        _with_nan,
        ValueError,
        "Input X contains NaN",
    ),
    (
        "private-label regressor inner parameter",
        lambda X, y, yr: PrivateLabelRegressor(
            Ridge(alpha=-1.0), label_bounds=(-1, 1)
        ).fit(X, yr),
        _data,
        InvalidParameterError,
        "'alpha' parameter of Ridge",
    ),
]


@pytest.mark.parametrize(
    "fit, data, error, match",
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_a_fit_that_fails_on_its_input_records_nothing(fit, data, error, match):
    X, y, y_reg = data()
    with track_budget() as acc:
        with pytest.raises(error, match=match):
            fit(X, y, y_reg)
    assert acc.spends == []


@pytest.mark.parametrize(
    "fit, data",
    [
        # NaN handled by the pipeline's imputer although its tags say
        # allow_nan=False: the probe settles it, the release goes ahead
        (
            lambda X, y, yr: PrivateLabelClassifier(
                make_pipeline(SimpleImputer(), LogisticRegression()), _rr()
            ).fit(X, y),
            _with_nan,
        ),
        (
            lambda X, y, yr: RandomizedResponseWithPrior(
                classes=[0, 1],
                prior_estimator=make_pipeline(SimpleImputer(), LogisticRegression()),
                random_state=0,
            ).fit_resample(X, y),
            _with_nan,
        ),
        (
            lambda X, y, yr: PrivateLabelClassifier(
                make_pipeline(
                    make_column_transformer(
                        (OneHotEncoder(), ["c"]), remainder="passthrough"
                    ),
                    LogisticRegression(),
                ),
                _rr(),
            ).fit(X, y),
            _string_category,
        ),
        (
            # fails on the probe's first few rows, fits on all of them
            lambda X, y, yr: PrivateLabelClassifier(_NeedsManyRows(), _rr()).fit(X, y),
            _with_nan,
        ),
        (
            lambda X, y, yr: PrivateBoundsEstimator(
                OPLogisticRegression(classes=[0, 1]), envelope=(-1, 1)
            ).fit(X, y),
            _data,
        ),
        (
            lambda X, y, yr: PrivateLabelRegressor(Ridge(), label_bounds=(-1, 1)).fit(
                X, yr
            ),
            _data,
        ),
    ],
    ids=[
        "pipeline imputer",
        "rr-with-prior imputer",
        "pipeline one-hot encoder",
        "probe falls back to all rows",
        "bounds-estimator",
        "plr",
    ],
)
def test_valid_inputs_still_release_and_record(fit, data):
    X, y, y_reg = data()
    with track_budget() as acc:
        fit(X, y, y_reg)
    assert len(acc.spends) >= 1


# (id, release given a Generator): epsilon 1, refused under a 0.5 cap
REFUSED = [
    (
        "randomized response fit_resample",
        lambda X, y, gen: RandomizedResponse(
            epsilon=1.0, classes=[0, 1], random_state=gen
        ).fit_resample(X, y),
    ),
    (
        "randomized response transform",
        lambda X, y, gen: (
            RandomizedResponse(
                epsilon=1.0, columns=[0], categories=[[0, 1]], random_state=gen
            )
            .fit(np.column_stack([y, y]))
            .transform(np.column_stack([y, y]))
        ),
    ),
    (
        "exponential label release",
        lambda X, y, gen: ExponentialLabelRelease(
            epsilon=2.0, classes=[0, 1], random_state=gen
        ).fit_resample(X, y),
    ),
    (
        "regression label release, laplace",
        lambda X, y, gen: RegressionLabelRelease(
            epsilon=1.0, label_bounds=(-1, 1), mechanism="laplace", random_state=gen
        ).fit_resample(X, X[:, 0]),
    ),
    (
        "tools nanmean",
        lambda X, y, gen: tools.nanmean(
            np.where(X > 0.8, np.nan, X), 1.0, (-1, 1), axis=0, random_state=gen
        ),
    ),
    (
        "tools nanvar",
        lambda X, y, gen: tools.nanvar(
            np.where(X > 0.8, np.nan, X), 1.0, (-1, 1), random_state=gen
        ),
    ),
    (
        "naive Bayes partial_fit",
        lambda X, y, gen: PrivateGaussianNB(
            epsilon=1.0, bounds_X=(-1, 1), classes=[0, 1], random_state=gen
        ).partial_fit(X, y),
    ),
    (
        "standard scaler partial_fit",
        lambda X, y, gen: PrivateStandardScaler(
            epsilon=1.0, bounds_X=(-1, 1), random_state=gen
        ).partial_fit(X),
    ),
    (
        "regression label release, rr on bins",
        lambda X, y, gen: RegressionLabelRelease(
            epsilon=1.0, label_bounds=(-1, 1), mechanism="rr_on_bins", random_state=gen
        ).fit_resample(X, X[:, 0]),
    ),
]


@pytest.mark.parametrize(
    "release", [case[1] for case in REFUSED], ids=[case[0] for case in REFUSED]
)
def test_a_refused_release_draws_nothing(release):
    X, y, _ = _data()
    gen = np.random.default_rng(1)
    before = gen.bit_generator.state
    with pytest.raises(BudgetExceededError):
        with track_budget(epsilon=0.5) as acc:
            release(X, y, gen)
    assert acc.spends == []
    assert gen.bit_generator.state == before


def test_a_label_outside_the_classes_fails_before_the_spend():
    """Randomized response checks every label against ``classes`` before it
    records and draws (it used to find an unknown label during its draws, one
    block of 2**16 labels at a time, after drawing for the blocks before)."""
    n = 70_000  # the unknown label in the second block
    X, y = np.zeros((n, 1)), np.zeros(n, dtype=np.int64)
    y[-1] = 5
    gen = np.random.default_rng(1)
    before = gen.bit_generator.state
    with track_budget() as acc:
        with pytest.raises(ValueError, match=r"not among its categories \[0, 1\]"):
            RandomizedResponse(
                epsilon=1.0, classes=[0, 1], random_state=gen
            ).fit_resample(X, y)
    assert acc.spends == []
    assert gen.bit_generator.state == before
