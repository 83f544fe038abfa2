"""PrivateGridSearchCV / PrivateRandomizedSearchCV: API, ledger, privacy audit."""

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp.accounting import (
    BudgetTrackingMixin,
    PrivacyBudget,
    record_spend,
    track_budget,
)
from skdp.exceptions import BudgetExceededError
from skdp.linear_model import FMLinearRegression, OPLogisticRegression
from skdp.model_selection import PrivateGridSearchCV, PrivateRandomizedSearchCV, _base
from skdp.utils import audit_mechanism, noise_generator


class NoisyMajority(ClassifierMixin, BudgetTrackingMixin, BaseEstimator):
    """A tiny eps-DP classifier: randomized response on the majority label.

    The majority bit of binary labels takes one of two values on any data
    set; releasing it through binary randomized response at ``epsilon`` is
    epsilon-DP. ``flip`` (a hyperparameter) predicts the other label.
    """

    fits = 0

    def __init__(
        self,
        *,
        epsilon=1.0,
        flip=False,
        record=True,
        release_at_predict=False,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.flip = flip
        self.record = record
        self.release_at_predict = release_at_predict
        self.random_state = random_state

    def fit(self, X, y):
        type(self).fits += 1
        rng = noise_generator(self.random_state)
        majority = int(np.mean(np.asarray(y) == 1) >= 0.5)
        keep = rng.random() < 1 / (1 + np.exp(-self.epsilon))
        self.label_ = majority if keep else 1 - majority
        self.classes_ = np.array([0, 1])
        if self.record:
            self.privacy_spent_ = record_spend(PrivacyBudget(self.epsilon), "stub")
        return self

    def predict(self, X):
        if self.release_at_predict:
            record_spend(PrivacyBudget(self.epsilon), "stub.predict")
        label = 1 - self.label_ if self.flip else self.label_
        return np.full(len(X), label)


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=3000,
        n_features=4,
        n_informative=3,
        n_redundant=0,
        class_sep=2.0,
        random_state=0,
    )
    return np.clip(X / 3, -1, 1), y


def _op(**kwargs):
    return OPLogisticRegression(bounds_X=(-1, 1), classes=[0, 1], **kwargs)


def test_fit_predict_and_released_attributes(data):
    X, y = data
    search = PrivateGridSearchCV(
        _op(), {"alpha": [5.0, 20.0, 80.0]}, epsilon=2.0, random_state=0
    ).fit(X, y)
    assert search.method_ == "random_stopping"
    assert search.best_params_["alpha"] in (5.0, 20.0, 80.0)
    assert search.best_estimator_.epsilon == search.base_epsilon_ < 2.0
    assert search.predict(X).shape == (3000,)
    assert search.predict_proba(X).shape == (3000, 2)
    # non-private logistic regression: 0.75; majority: 0.5
    assert search.score(X, y) > 0.7
    np.testing.assert_array_equal(search.classes_, [0, 1])
    assert search.n_features_in_ == 4
    results = search.cv_results_
    assert results["params"] == [{"alpha": a} for a in (5.0, 20.0, 80.0)]
    # only the released run's score: one finite value, at the selected candidate
    finite = np.isfinite(results["mean_test_score"])
    np.testing.assert_array_equal(finite, results["selected"])
    assert results["mean_test_score"][search.best_index_] == search.best_score_
    assert not hasattr(search, "n_trials_")  # never released
    assert search.expected_n_trials_ > 1
    assert search.privacy_spent_ == PrivacyBudget(2.0, 0.0)


def test_ledger_records_the_total_exactly_once(data):
    X, y = data
    search = PrivateGridSearchCV(
        _op(), {"alpha": [5.0, 20.0, 80.0]}, epsilon=1.0, random_state=1
    )
    with track_budget() as acc:
        search.fit(X, y)
    assert len(acc.spends) == 1
    assert acc.total == PrivacyBudget(1.0, 0.0)
    with track_budget(epsilon=1.0) as capped:  # exactly at the cap: accepted
        search.fit(X, y)
    assert capped.total == PrivacyBudget(1.0, 0.0)


def test_cap_refuses_before_any_base_run(data, monkeypatch):
    X, y = data
    drawn = []
    monkeypatch.setattr(
        _base, "noise_generator", lambda rs: drawn.append(rs) or noise_generator(rs)
    )
    NoisyMajority.fits = 0
    search = PrivateGridSearchCV(
        NoisyMajority(), {"flip": [False, True]}, epsilon=1.0, random_state=0
    )
    with pytest.raises(BudgetExceededError):
        with track_budget(epsilon=0.5):
            search.fit(X, y)
    assert drawn == [] and NoisyMajority.fits == 0
    assert not hasattr(search, "best_estimator_")


def test_works_on_a_pipeline(data):
    X, y = data
    pipe = Pipeline(
        [
            ("clip", FunctionTransformer(np.clip, kw_args={"a_min": -1, "a_max": 1})),
            ("clf", _op()),
        ]
    )
    search = PrivateGridSearchCV(
        pipe, {"clf__alpha": [10.0, 40.0]}, epsilon=3.0, random_state=0
    )
    with track_budget() as acc:
        search.fit(X, y)
    assert acc.total == PrivacyBudget(3.0, 0.0) and len(acc.spends) == 1
    assert set(search.best_params_) == {"clf__alpha"}
    fitted_eps = search.best_estimator_.named_steps["clf"].epsilon
    assert fitted_eps == search.base_epsilon_
    assert search.score(X, y) > 0.7


def test_exponential_mechanism_and_single_candidate(data):
    X, y = data
    em = PrivateGridSearchCV(
        _op(),
        {"alpha": [10.0, 40.0]},
        epsilon=2.0,
        method="exponential",
        random_state=0,
    ).fit(X, y)
    assert em.method_ == "exponential"
    assert em.base_epsilon_ == 2.0 and np.isnan(em.best_score_)
    assert em.privacy_spent_ == PrivacyBudget(2.0, 0.0)
    one = PrivateGridSearchCV(
        _op(), {"alpha": [10.0]}, epsilon=2.0, random_state=0
    ).fit(X, y)
    assert one.method_ == "single" and one.best_estimator_.epsilon == 2.0


def test_auto_prefers_the_exponential_mechanism_for_two_candidates():
    search = PrivateGridSearchCV(_op(), {"alpha": [1.0, 2.0]}, epsilon=1.0)
    assert search._plan(2)["method"] == "exponential"
    assert search._plan(10)["method"] == "random_stopping"


def test_delta_is_passed_to_the_estimator_only_by_parallel_methods(data):
    X, y = data
    est = _op(delta=0.0)
    rs = PrivateGridSearchCV(
        est, {"alpha": [5.0, 20.0, 80.0]}, epsilon=2.0, delta=1e-6, random_state=0
    ).fit(X, y)
    assert rs.best_estimator_.delta == 0.0  # base runs are pure
    assert rs.privacy_spent_.epsilon == 2.0 and rs.privacy_spent_.delta <= 1e-6
    em = PrivateGridSearchCV(
        est,
        {"alpha": [5.0, 20.0]},
        epsilon=2.0,
        delta=1e-6,
        method="exponential",
        random_state=0,
    ).fit(X, y)
    assert em.best_estimator_.delta == 1e-6
    assert em.privacy_spent_ == PrivacyBudget(2.0, 1e-6)


def test_infinite_epsilon_selects_on_exact_scores(data):
    X, y = data
    search = PrivateGridSearchCV(
        NoisyMajority(), {"flip": [False, True]}, epsilon=np.inf, random_state=0
    ).fit(X[:200], np.r_[np.ones(150, int), np.zeros(50, int)])
    assert search.method_ == "exhaustive" and search.best_params_ == {"flip": False}


def test_regression_with_clipped_mse(data):
    X, _ = data
    rng = np.random.default_rng(0)
    y = np.clip(X @ np.array([0.5, -0.3, 0.2, 0.0]) + rng.normal(0, 0.1, len(X)), -1, 1)
    search = PrivateGridSearchCV(
        FMLinearRegression(bounds_X=(-1, 1), bounds_y=(-1, 1)),
        {"postprocessing": ["ridge", "eb"]},
        epsilon=5.0,
        method="random_stopping",
        random_state=0,
    ).fit(X, y)
    assert search.scoring_ == "neg_mean_squared_error"
    assert -4.0 - 1 < search.best_score_ < 0.5  # noisy, in y-units squared


def test_randomized_search(data):
    X, y = data
    search = PrivateRandomizedSearchCV(
        _op(),
        {"alpha": stats.loguniform(5, 100)},
        n_iter=4,
        epsilon=2.0,
        random_state=0,
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 4
    assert 5 <= search.best_params_["alpha"] <= 100


def test_same_seed_same_release(data):
    X, y = data
    kwargs = dict(param_grid={"alpha": [5.0, 20.0, 80.0]}, epsilon=1.0)
    a = PrivateGridSearchCV(_op(), random_state=3, **kwargs).fit(X, y)
    b = PrivateGridSearchCV(_op(), random_state=3, **kwargs).fit(X, y)
    assert a.best_params_ == b.best_params_ and a.best_score_ == b.best_score_
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)


def test_inputs_are_not_modified(data):
    X, y = data
    X_before, y_before = X.copy(), y.copy()
    PrivateGridSearchCV(_op(), {"alpha": [10.0, 40.0]}, epsilon=1.0).fit(X, y)
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(y, y_before)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"validation_fraction": 1.5}, "validation_fraction"),
        ({"method": "best"}, "method"),
        ({"scoring": "roc_auc"}, "scoring"),
        ({"max_trials": 0}, "max_trials"),
        ({"expected_trials": 0.5}, "expected_trials"),
        ({"epsilon_param": "nope"}, "epsilon_param"),
        ({"param_grid": {"epsilon": [0.5, 1.0]}}, "'epsilon'"),
        ({"param_grid": {"random_state": [0, 1]}}, "'random_state'"),
        ({"param_grid": []}, "candidate"),
        ({"scoring": "neg_mean_squared_error"}, "label_range"),
    ],
)
def test_bad_parameters_raise_naming_them(data, kwargs, match):
    X, y = data
    params = {"estimator": _op(), "param_grid": {"alpha": [10.0, 40.0]}, "epsilon": 1}
    params.update(kwargs)
    with pytest.raises(ValueError, match=match):
        PrivateGridSearchCV(**params).fit(X, y)


def test_ambiguous_or_missing_epsilon_parameter(data):
    X, y = data
    two = Pipeline([("a", _op()), ("b", _op())])
    with pytest.raises(ValueError, match="epsilon_param"):
        PrivateGridSearchCV(two, {"a__alpha": [1.0]}, epsilon=1.0).fit(X, y)
    plain = Pipeline([("f", FunctionTransformer()), ("lr", LogisticRegression())])
    with pytest.raises(ValueError, match="epsilon_param"):
        PrivateGridSearchCV(plain, {"lr__C": [1.0]}, epsilon=1.0).fit(X, y)


def test_an_estimator_that_records_nothing_is_refused(data):
    X, y = data
    search = PrivateGridSearchCV(
        NoisyMajority(record=False), {"flip": [False, True]}, epsilon=1.0
    )
    with pytest.raises(ValueError, match="recorded no privacy spend"):
        search.fit(X, y)


def test_an_estimator_that_releases_at_predict_time_is_refused(data):
    X, y = data
    search = PrivateGridSearchCV(
        NoisyMajority(release_at_predict=True), {"flip": [False, True]}, epsilon=1.0
    )
    with pytest.raises(ValueError, match="releases at predict time"):
        search.fit(X, y)


def _search_outputs(labels, n_runs, rng, epsilon=1.0):
    """best_index_ of the search on one data set (the released choice)."""
    out = np.empty(n_runs)
    X = np.zeros((len(labels), 1))
    for i in range(n_runs):
        s = PrivateGridSearchCV(
            NoisyMajority(),
            {"flip": [False, True]},
            epsilon=epsilon,
            method="random_stopping",
            validation_fraction=0.3,
            random_state=int(rng.integers(2**31 - 1)),
        ).fit(X, labels)
        out[i] = s.best_index_
    return out


@pytest.mark.slow
def test_privacy_audit_does_not_refute_the_total():
    """Black-box audit of the whole search (random stopping, two candidates).

    Three rows, one validation row: the replaced record always reaches the
    release (in the training pair it flips the majority, in the validation
    row the score). The claimed total is epsilon = 3 (each base run gets
    about 1.9); the released choice is audited.
    """
    a = np.array([1, 0, 0])
    b = np.array([0, 0, 0])  # the first record replaced
    result = audit_mechanism(
        lambda labels, n, rng: _search_outputs(labels, n, rng, epsilon=3.0),
        a,
        b,
        n_samples=3000,
        random_state=0,
    )
    assert result.epsilon_lower_bound <= 3.0
    assert result.epsilon_lower_bound > 0.0  # the audit sees the data


def test_estimators_in_the_grid_are_cloned(data):
    X, y = data
    steps = [_op(alpha=20.0), _op(alpha=60.0)]
    pipe = Pipeline([("clf", _op())])
    search = PrivateGridSearchCV(
        pipe, {"clf": steps}, epsilon=2.0, method="random_stopping", random_state=0
    ).fit(X, y)
    assert not any(hasattr(step, "coef_") for step in steps)  # grid untouched
    released = search.best_estimator_.named_steps["clf"]
    assert released not in steps and released.epsilon == search.base_epsilon_


def test_refit_share_refits_on_all_rows_and_composes(data):
    X, y = data
    search = PrivateGridSearchCV(
        _op(),
        {"alpha": [5.0, 20.0, 80.0]},
        epsilon=2.0,
        refit_share=0.4,
        random_state=0,
    )
    with track_budget(epsilon=2.0) as acc:
        search.fit(X, y)
    assert len(acc.spends) == 1
    assert acc.total == PrivacyBudget(2.0, 0.0)
    assert search.best_estimator_.epsilon == pytest.approx(0.8)  # the refit
    assert search.best_estimator_.n_features_in_ == 4
    # the selection ran with 1.2: its base runs got what 1.2 leaves
    assert search.base_epsilon_ < 1.2 * 0.6


@pytest.mark.parametrize("capped, eta", [(True, 0.5), (False, 0.0), (False, 1.0)])
def test_number_of_trials_follows_the_accounted_distribution(capped, eta):
    """K is drawn from the distribution the bound was computed for (chi-square)."""
    from skdp.model_selection._accounting import tnb_gamma, tnb_pmf

    gamma = tnb_gamma(eta, 6.0)
    pmf = tnb_pmf(eta, gamma, 30 if capped else None)
    plan = {"capped": capped, "eta": eta, "gamma": gamma, "pmf": pmf}
    rng = np.random.default_rng(0)
    n = 20_000
    draws = np.array(
        [_base.BasePrivateSearch._draw_trials(plan, rng) for _ in range(n)]
    )
    assert draws.min() >= 1 and (not capped or draws.max() <= 30)
    # bins 1..9 and a tail, each expected >= 5 draws
    counts = np.bincount(np.minimum(draws, 10), minlength=11)[1:]
    expected = n * np.append(pmf[:9], pmf[9:].sum())
    assert stats.chisquare(counts, expected).pvalue > 1e-3


class _Fixed:
    def __init__(self, pred):
        self.pred = pred

    def predict(self, X):
        return self.pred


@pytest.mark.parametrize(
    "scoring", ["accuracy", "neg_mean_squared_error", "neg_mean_absolute_error"]
)
def test_validation_score_sensitivity_is_one_over_n_val(scoring):
    """Replacing one validation row moves the bounded score by at most 1 / n_val."""
    rng = np.random.default_rng(0)
    search = PrivateGridSearchCV(_op(), {"alpha": [1.0]}, epsilon=1.0)
    n = 40
    if scoring == "accuracy":
        spec, draw = (scoring, None, None), lambda size: rng.integers(0, 3, size)
    else:
        spec, draw = (scoring, -2.0, 3.0), lambda size: rng.normal(0, 5, size)
    worst = 0.0
    for _ in range(2000):
        pred, y = draw(n), draw(n)
        y2 = y.copy()
        y2[rng.integers(n)] = draw(1)[0]
        a = search._bounded_score(_Fixed(pred), None, y, spec)[0]
        b = search._bounded_score(_Fixed(pred), None, y2, spec)[0]
        worst = max(worst, abs(a - b))
    assert worst <= 1 / n + 1e-12
    assert worst > 0.5 / n  # the bound is nearly attained
