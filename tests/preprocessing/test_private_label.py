"""PrivateLabelClassifier in sklearn pipelines, grid searches and imblearn pipelines."""

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
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

pytestmark = [
    pytest.mark.filterwarnings("error::skdp.exceptions.PrivacyLeakWarning"),
    # the suite's reproducible-noise opt-in warns on every seeded release
    pytest.mark.filterwarnings("ignore::skdp.exceptions.ReproducibleNoiseWarning"),
]


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


# ------------------------------------------- loss correction and classes


def test_label_matrix_is_passed_to_a_loss_corrected_learner(data):
    from sklearn.pipeline import make_pipeline

    from skdp.linear_model import LossCorrectedLogisticRegression
    from skdp.mechanisms import RandomizedResponseMechanism

    X, y = data
    clf = PrivateLabelClassifier(LossCorrectedLogisticRegression(), _rr(0.5)).fit(X, y)
    T = clf.privatizer_.label_matrix_
    np.testing.assert_array_equal(clf.estimator_.transition_matrix, T)
    np.testing.assert_array_equal(clf.estimator_.classes, [0, 1])
    np.testing.assert_array_equal(clf.transition_matrix_, T)
    # the exponential release at eps is RR at eps / 2: that matrix is passed
    elr = ExponentialLabelRelease(epsilon=1.0, classes=[0, 1], random_state=0)
    pipe = make_pipeline(StandardScaler(), LossCorrectedLogisticRegression())
    clf = PrivateLabelClassifier(pipe, elr).fit(X, y)
    passed = clf.estimator_[-1].transition_matrix
    np.testing.assert_allclose(passed, RandomizedResponseMechanism(0.5, 2).matrix)
    # the inner fit equals a direct fit on the same released labels with T
    _, y_priv = ExponentialLabelRelease(
        epsilon=1.0, classes=[0, 1], random_state=0
    ).fit_resample(X, y)
    direct = make_pipeline(
        StandardScaler(), LossCorrectedLogisticRegression(transition_matrix=passed)
    ).fit(X, y_priv)
    np.testing.assert_allclose(clf.estimator_[-1].coef_, direct[-1].coef_)


def test_user_matrix_and_opt_out_are_respected(data):
    from skdp.linear_model import LossCorrectedLogisticRegression

    X, y = data
    mine = np.array([[0.9, 0.1], [0.2, 0.8]])
    inner = LossCorrectedLogisticRegression(transition_matrix=mine)
    clf = PrivateLabelClassifier(inner, _rr(0.5)).fit(X, y)
    np.testing.assert_array_equal(clf.estimator_.transition_matrix, mine)
    assert clf.transition_matrix_ is None
    # the release's per-row likelihoods do not override the user's matrix
    _, y_priv = _rr(0.5).fit_resample(X, y)
    direct = LossCorrectedLogisticRegression(transition_matrix=mine).fit(X, y_priv)
    np.testing.assert_array_equal(clf.estimator_.coef_, direct.coef_)
    clf = PrivateLabelClassifier(
        LossCorrectedLogisticRegression(), _rr(0.5), pass_transition_matrix=False
    ).fit(X, y)
    assert clf.estimator_.transition_matrix is None
    # a declared inner label order that differs from the privatizer's: refused
    inner = LossCorrectedLogisticRegression(classes=[1, 0])
    with pytest.raises(ValueError, match="does not match the privatizer's classes_"):
        PrivateLabelClassifier(inner, _rr(0.5)).fit(X, y)


def test_forward_correction_through_the_wrapper_beats_no_correction(data):
    from skdp.linear_model import LossCorrectedLogisticRegression

    X, y = data
    # same released labels (same seed); the corrected model's probabilities are
    # calibrated for the clean labels, so its log loss on clean labels is lower
    from sklearn.metrics import log_loss

    corrected = PrivateLabelClassifier(LossCorrectedLogisticRegression(), _rr(0.5))
    plain = PrivateLabelClassifier(
        LossCorrectedLogisticRegression(correction=None), _rr(0.5)
    )
    loss_c = log_loss(y, corrected.fit(X, y).predict_proba(X))
    loss_p = log_loss(y, plain.fit(X, y).predict_proba(X))
    assert loss_c < loss_p


def test_declared_classes_reach_the_privatizer_without_warning(data):
    X, y = data
    rr = RandomizedResponse(epsilon=1.0, random_state=0)
    clf = PrivateLabelClassifier(LogisticRegression(), rr, classes=[0, 1]).fit(X, y)
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    assert rr.classes is None  # the user's privatizer is not modified
    with pytest.warns(PrivacyLeakWarning):
        PrivateLabelClassifier(LogisticRegression(), rr).fit(X, y)
    with pytest.raises(ValueError, match="conflicts with the privatizer's classes"):
        PrivateLabelClassifier(LogisticRegression(), _rr(), classes=[0, 1, 2]).fit(X, y)


def test_multiclass_symmetric_loss_behind_three_class_releases():
    from skdp.linear_model import SymmetricLossClassifier

    X, y = make_classification(
        n_samples=900, n_features=6, n_informative=4, n_classes=3, random_state=3
    )
    for privatizer in (
        RandomizedResponse(epsilon=np.inf, random_state=0),
        ExponentialLabelRelease(epsilon=np.inf, random_state=0),
    ):
        clf = PrivateLabelClassifier(
            SymmetricLossClassifier(objective="ber"), privatizer, classes=[0, 1, 2]
        ).fit(X, y)
        clean = SymmetricLossClassifier(objective="ber").fit(X, y)
        np.testing.assert_array_equal(clf.predict(X), clean.predict(X))
    noisy = PrivateLabelClassifier(
        SymmetricLossClassifier(objective="ber"),
        RandomizedResponse(epsilon=2.0, random_state=0),
        classes=[0, 1, 2],
    ).fit(X, y)
    assert noisy.decision_function(X).shape == (900, 3)
    # 3-class RR at eps = 2 keeps a label with p = 0.79: far above chance (1/3)
    assert noisy.score(X, y) > clean.score(X, y) - 0.15


# ------------------------------------------------------- metadata routing


def _weights(n):
    return np.random.default_rng(7).integers(0, 4, size=n).astype(float)


def test_sample_weight_is_routed_through_cross_validate(data):
    import sklearn
    from sklearn.model_selection import KFold, cross_validate

    from skdp.linear_model import LossCorrectedLogisticRegression

    X, y = data
    w = _weights(len(y))
    cv = KFold(3)
    with sklearn.config_context(enable_metadata_routing=True):
        inner = LossCorrectedLogisticRegression().set_fit_request(sample_weight=True)
        model = PrivateLabelClassifier(inner, _rr(1.0))
        out = cross_validate(
            model, X, y, cv=cv, params={"sample_weight": w}, return_estimator=True
        )
        for fitted, (train, _) in zip(out["estimator"], cv.split(X), strict=True):
            _, y_priv = _rr(1.0).fit_resample(X[train], y[train])
            ref = LossCorrectedLogisticRegression(
                transition_matrix=fitted.privatizer_.label_matrix_
            ).fit(X[train], y_priv, sample_weight=w[train])
            unweighted = LossCorrectedLogisticRegression(
                transition_matrix=fitted.privatizer_.label_matrix_
            ).fit(X[train], y_priv)
            np.testing.assert_allclose(fitted.estimator_.coef_, ref.coef_)
            assert not np.allclose(fitted.estimator_.coef_, unweighted.coef_)
        # not requested by the inner estimator: scikit-learn refuses the metadata
        unrequested = PrivateLabelClassifier(LogisticRegression(), _rr(1.0))
        with pytest.raises(ValueError, match="sample_weight"):
            cross_validate(unrequested, X, y, cv=cv, params={"sample_weight": w})


def test_sample_weight_is_routed_through_grid_search(data):
    import sklearn

    X, y = data
    w = _weights(len(y))
    with sklearn.config_context(enable_metadata_routing=True):
        inner = LogisticRegression().set_fit_request(sample_weight=True)
        search = GridSearchCV(
            PrivateLabelClassifier(inner, _rr(1.0)),
            {"privatizer__epsilon": [0.5, 2.0]},
            cv=3,
        ).fit(X, y, sample_weight=w)
        best = search.best_estimator_
        eps = search.best_params_["privatizer__epsilon"]
        _, y_priv = _rr(eps).fit_resample(X, y)
        ref = LogisticRegression().fit(X, y_priv, sample_weight=w)
        np.testing.assert_allclose(best.estimator_.coef_, ref.coef_)
        routing = best.get_metadata_routing()
        assert routing.consumes("fit", ["sample_weight"]) == {"sample_weight"}


def test_infinite_epsilon_loss_correction_is_the_non_private_fit(data):
    from skdp.linear_model import LossCorrectedLogisticRegression

    X, y = data
    reference = LossCorrectedLogisticRegression(correction=None).fit(X, y)
    for privatizer in (_rr(np.inf), ExponentialLabelRelease(epsilon=np.inf)):
        for correction in ("forward", "backward"):
            clf = PrivateLabelClassifier(
                LossCorrectedLogisticRegression(correction=correction),
                privatizer,
                classes=[0, 1],
            ).fit(X, y)
            np.testing.assert_array_equal(clf.transition_matrix_, np.eye(2))
            np.testing.assert_allclose(
                clf.estimator_.coef_, reference.coef_, rtol=1e-10, atol=1e-12
            )


# ------------------------------------------- per-row noise likelihoods


class TwoStageRR(BaseEstimator):
    """RR at eps1 on even rows and eps2 on odd rows: no single label matrix,
    only each row's likelihood ``label_likelihood_``."""

    def __init__(self, *, eps1=0.5, eps2=2.0, classes=None, random_state=None):
        self.eps1 = eps1
        self.eps2 = eps2
        self.classes = classes
        self.random_state = random_state

    def fit_resample(self, X, y):
        from skdp.mechanisms import RandomizedResponseMechanism

        self.classes_ = np.asarray(self.classes)
        n_classes = self.classes_.size
        rng = np.random.default_rng(self.random_state)
        position = {label: k for k, label in enumerate(self.classes_.tolist())}
        codes = np.array([position[label] for label in np.asarray(y).tolist()])
        released = codes.copy()
        likelihood = np.empty((len(y), n_classes))
        for rows, eps in (
            (slice(0, None, 2), self.eps1),
            (slice(1, None, 2), self.eps2),
        ):
            mechanism = RandomizedResponseMechanism(eps, n_classes)
            released[rows] = mechanism.randomize(codes[rows], random_state=rng)
            likelihood[rows] = mechanism.matrix[:, released[rows]].T
        self.label_likelihood_ = likelihood
        self.privacy_spent_ = PrivacyBudget(max(self.eps1, self.eps2))
        self.n_features_in_ = X.shape[1]
        return X, self.classes_[released]


class SilentRR(TwoStageRR):
    """Describes none of its noise."""

    def fit_resample(self, X, y):
        X, y_released = super().fit_resample(X, y)
        del self.label_likelihood_
        return X, y_released


@pytest.fixture(scope="module")
def data3():
    return make_classification(
        n_samples=900, n_features=6, n_informative=4, n_classes=3, random_state=1
    )


@pytest.mark.parametrize("routing", [False, True])
def test_per_row_likelihoods_reach_the_learner(data3, routing):
    import sklearn
    from sklearn.pipeline import make_pipeline

    from skdp.linear_model import LossCorrectedLogisticRegression

    X, y = data3
    sampler = TwoStageRR(classes=[0, 1, 2], random_state=5)
    reference = clone(sampler)
    _, y_released = reference.fit_resample(X, y)
    likelihood = reference.label_likelihood_
    direct = LossCorrectedLogisticRegression(classes=[0, 1, 2]).fit(
        X, y_released, label_likelihood=likelihood
    )
    scaled = StandardScaler().fit_transform(X)
    direct_scaled = LossCorrectedLogisticRegression(classes=[0, 1, 2]).fit(
        scaled, y_released, label_likelihood=likelihood
    )
    with sklearn.config_context(enable_metadata_routing=routing):
        clf = PrivateLabelClassifier(LossCorrectedLogisticRegression(), sampler)
        clf.fit(X, y)
        np.testing.assert_array_equal(clf.estimator_.coef_, direct.coef_)
        assert clf.transition_matrix_ is None
        # inside a Pipeline (step__label_likelihood, or routed by request)
        pipe = make_pipeline(StandardScaler(), LossCorrectedLogisticRegression())
        clf = PrivateLabelClassifier(pipe, sampler).fit(X, y)
        np.testing.assert_allclose(
            clf.estimator_[-1].coef_, direct_scaled.coef_, rtol=1e-12, atol=1e-12
        )
        # and under a grid search over the sampler, refit included
        search = GridSearchCV(
            PrivateLabelClassifier(LossCorrectedLogisticRegression(), sampler),
            {"privatizer__eps1": [0.5, 1.0]},
            cv=3,
        ).fit(X, y)
        assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
        best = search.best_estimator_
        if search.best_params_["privatizer__eps1"] == 0.5:
            np.testing.assert_array_equal(best.estimator_.coef_, direct.coef_)


def test_randomized_response_likelihoods_give_the_matrix_fit(data3):
    from skdp.linear_model import LossCorrectedLogisticRegression

    X, y = data3
    seen = {}

    class Recording(LossCorrectedLogisticRegression):
        def fit(self, X, y, sample_weight=None, label_likelihood=None):
            seen["label_likelihood"] = label_likelihood
            return super().fit(X, y, sample_weight, label_likelihood)

    rr = RandomizedResponse(epsilon=1.0, classes=[0, 1, 2], random_state=2)
    clf = PrivateLabelClassifier(Recording(), rr).fit(X, y)
    T = clf.privatizer_.label_matrix_
    _, y_released = clone(rr).fit_resample(X, y)
    np.testing.assert_array_equal(seen["label_likelihood"], T[:, y_released].T)
    matrix_fit = LossCorrectedLogisticRegression(transition_matrix=T).fit(X, y_released)
    np.testing.assert_array_equal(clf.estimator_.coef_, matrix_fit.coef_)
    # the backward correction accepts likelihoods that are columns of its matrix
    backward = PrivateLabelClassifier(
        LossCorrectedLogisticRegression(correction="backward"), rr
    ).fit(X, y)
    reference = LossCorrectedLogisticRegression(
        transition_matrix=T, correction="backward"
    ).fit(X, y_released)
    np.testing.assert_array_equal(backward.estimator_.coef_, reference.coef_)


def test_backward_correction_refuses_per_row_noise(data3):
    from skdp.linear_model import LossCorrectedLogisticRegression

    X, y = data3
    clf = PrivateLabelClassifier(
        LossCorrectedLogisticRegression(correction="backward"),
        TwoStageRR(classes=[0, 1, 2], random_state=0),
    )
    with pytest.raises(ValueError, match="per-row noise"):
        clf.fit(X, y)


def test_a_correcting_learner_without_noise_description_is_refused(data3):
    from sklearn.pipeline import make_pipeline

    from skdp.linear_model import LossCorrectedLogisticRegression

    X, y = data3
    silent = SilentRR(classes=[0, 1, 2], random_state=0)
    for learner in (
        LossCorrectedLogisticRegression(),
        LossCorrectedLogisticRegression(correction="backward"),
        make_pipeline(StandardScaler(), LossCorrectedLogisticRegression()),
    ):
        with pytest.raises(ValueError, match="neither label_matrix_ nor"):
            PrivateLabelClassifier(learner, silent).fit(X, y)
    # no correction asked for, or the user's own matrix, or an explicit opt-out
    PrivateLabelClassifier(
        LossCorrectedLogisticRegression(correction=None), silent
    ).fit(X, y)
    mine = np.full((3, 3), 0.1) + 0.7 * np.eye(3)
    clf = PrivateLabelClassifier(
        LossCorrectedLogisticRegression(transition_matrix=mine), silent
    ).fit(X, y)
    np.testing.assert_array_equal(clf.estimator_.transition_matrix_, mine)
    clf = PrivateLabelClassifier(
        LossCorrectedLogisticRegression(), silent, pass_transition_matrix=False
    ).fit(X, y)
    np.testing.assert_array_equal(clf.estimator_.transition_matrix_, np.eye(3))
    # a learner without a transition_matrix parameter fits as before
    PrivateLabelClassifier(LogisticRegression(), silent).fit(X, y)


def test_label_likelihood_cannot_be_passed_by_hand(data3):
    from skdp.linear_model import LossCorrectedLogisticRegression

    X, y = data3
    clf = PrivateLabelClassifier(LossCorrectedLogisticRegression(), _rr())
    with pytest.raises(ValueError, match="comes from the privatizer"):
        clf.fit(X, y, label_likelihood=np.ones((len(y), 3)))


def test_per_row_likelihood_columns_follow_the_privatizer_classes(data3):
    from skdp.linear_model import LossCorrectedLogisticRegression

    X, y = data3
    # a declared order that is not sorted: the likelihood's columns follow it,
    # so the learner must fit in that order (its classes are set from it)
    sampler = TwoStageRR(classes=[2, 0, 1], random_state=3)
    clf = PrivateLabelClassifier(LossCorrectedLogisticRegression(), sampler)
    clf.fit(X, y)
    reference = clone(sampler)
    _, y_released = reference.fit_resample(X, y)
    direct = LossCorrectedLogisticRegression(classes=[2, 0, 1]).fit(
        X, y_released, label_likelihood=reference.label_likelihood_
    )
    np.testing.assert_array_equal(clf.estimator_.classes_, [2, 0, 1])
    np.testing.assert_array_equal(clf.estimator_.coef_, direct.coef_)
    # a conflicting declared order is refused
    inner = LossCorrectedLogisticRegression(classes=[0, 1, 2])
    with pytest.raises(ValueError, match="label_likelihood_ columns"):
        PrivateLabelClassifier(inner, sampler).fit(X, y)
