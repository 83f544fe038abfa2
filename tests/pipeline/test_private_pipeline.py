"""make_private_pipeline: refusal of leaking steps, domain hand-off, budgets."""

import contextlib
import itertools
import math
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.utils.validation import check_is_fitted

from skdp.accounting import PrivacyBudget, track_budget
from skdp.decomposition import PrivatePCA
from skdp.exceptions import (
    BudgetExceededError,
    PrivacyLeakError,
    PrivacyLeakWarning,
    ReproducibleNoiseWarning,
)
from skdp.linear_model import FMLogisticRegression, PrivateLogisticRegression
from skdp.pipeline import (
    NOT_PRIVATE,
    PRIVATE,
    PrivatePipeline,
    check_privacy,
    make_private_pipeline,
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


def _corners(lower, upper):
    return np.array(list(itertools.product(*zip(lower, upper, strict=True))))


# -- output domains of the private transformers (exact) -------------------------


@pytest.mark.parametrize(
    "kwargs", [{}, {"with_mean": False}, {"with_std": False}, {"delta": 1e-6}]
)
def test_scaler_output_domain_is_the_image_of_its_box(kwargs):
    X, _ = _data()
    bounds = ([-1, -2, 0], [1, 3, 0.5])
    scaler = PrivateStandardScaler(
        epsilon=1.0, bounds_X=bounds, random_state=0, **kwargs
    ).fit(X)
    lower, upper = scaler.output_domain()["bounds_X"]
    assert np.all(lower < upper)
    Z = scaler.transform(_corners(*bounds))
    # the corners of the box attain the range: it is the exact image
    np.testing.assert_allclose(Z.min(axis=0), lower, rtol=1e-12)
    np.testing.assert_allclose(Z.max(axis=0), upper, rtol=1e-12)
    inside = np.random.default_rng(1).uniform(bounds[0], bounds[1], (500, 3))
    Z = scaler.transform(inside)
    assert np.all((Z >= lower) & (Z <= upper))


def test_min_max_output_domain_is_the_feature_range():
    X, _ = _data(5000)
    scaler = PrivateMinMaxScaler(
        epsilon=1.0, bounds_X=(-2, 2), feature_range=(-1, 3), random_state=0
    ).fit(X)
    lower, upper = scaler.output_domain()["bounds_X"]
    np.testing.assert_array_equal(lower, [-1.0] * 3)
    np.testing.assert_array_equal(upper, [3.0] * 3)
    # the released range maps onto it exactly
    ends = scaler.transform(np.vstack([scaler.data_min_, scaler.data_max_]))
    np.testing.assert_allclose(ends, [[-1.0] * 3, [3.0] * 3], atol=1e-12)


@pytest.mark.parametrize("centering", [True, False])
@pytest.mark.parametrize("n_components", [1, 2, 3])
def test_pca_output_domain_holds_over_the_box(centering, n_components):
    X, _ = _data()
    bounds = ([-1, -2, 0], [1, 3, 0.5])
    pca = PrivatePCA(
        n_components,
        epsilon=1.0,
        delta=1e-6,
        bounds_X=bounds,
        centering=centering,
        random_state=0,
    ).fit(X)
    domain = pca.output_domain()
    lower, upper = domain["bounds_X"]
    assert lower.shape == upper.shape == (n_components,)
    corners = _corners(*bounds)
    Z = pca.transform(corners)
    # the largest ||x - mean|| over a box is at a corner: the norm bound is tight
    # when every component is kept
    assert np.linalg.norm(Z, axis=1).max() <= domain["data_norm"] * (1 + 1e-12)
    if n_components == 3:
        np.testing.assert_allclose(
            np.linalg.norm(Z, axis=1).max(), domain["data_norm"], rtol=1e-12
        )
    # each output coordinate is linear in x: its range over the box is attained
    # at corners, and interval arithmetic is exact for one linear form
    tol = 1e-12 * max(1.0, domain["data_norm"])
    assert np.all(Z >= lower - tol) and np.all(Z <= upper + tol)
    clipped = np.maximum(Z.min(axis=0), -domain["data_norm"])
    np.testing.assert_allclose(clipped, lower, atol=tol)


def test_pca_output_domain_with_a_row_norm_bound():
    X, _ = _data()
    pca = PrivatePCA(2, epsilon=1.0, delta=1e-6, data_norm=1.5, random_state=0)
    domain = pca.fit(X).output_domain()
    assert domain["bounds_X"] is None
    assert domain["data_norm"] == pytest.approx(1.5 + np.linalg.norm(pca.mean_))
    rng = np.random.default_rng(2)
    sphere = rng.standard_normal((2000, 3))
    sphere *= 1.5 / np.linalg.norm(sphere, axis=1, keepdims=True)
    assert np.linalg.norm(pca.transform(sphere), axis=1).max() <= domain["data_norm"]
    # with a box as well, the smaller bound
    both = PrivatePCA(
        2, epsilon=1.0, delta=1e-6, data_norm=0.5, bounds_X=(-1, 1), random_state=0
    ).fit(X)
    expected = min(
        0.5 + np.linalg.norm(both.mean_),
        np.linalg.norm(np.maximum(np.abs(-1 - both.mean_), np.abs(1 - both.mean_))),
    )
    assert both.output_domain()["data_norm"] == pytest.approx(expected, rel=1e-12)


def test_output_domain_needs_a_fit():
    from sklearn.exceptions import NotFittedError

    for est in (PrivateStandardScaler(), PrivateMinMaxScaler(), PrivatePCA()):
        with pytest.raises(NotFittedError):
            est.output_domain()


# -- make_private_pipeline -----------------------------------------------------


def _scaler(**kw):
    kw.setdefault("bounds_X", (-1, 1))
    return PrivateStandardScaler(epsilon=0.5, random_state=0, **kw)


def _lr(**kw):
    return PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0, **kw)


def _fm(**kw):
    return FMLogisticRegression(
        epsilon=1.0, bounds_X=(-3, 3), classes=[0, 1], random_state=0, **kw
    )


@contextlib.contextmanager
def _no_leak_warning():
    """Any PrivacyLeakWarning fails the test; the suite's seeded noise is opted
    into (its ReproducibleNoiseWarning, a PrivacyLeakWarning, is expected)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        yield


def test_scaler_hands_its_range_to_the_classifier():
    # issue 37: only the first step declares ranges; no step reads them off the
    # data, and track_budget records the pipeline's privacy_spent_
    X, y = _data(2000)
    scaler, clf = _scaler(), _lr()
    pipe = make_private_pipeline(scaler, clf)
    with _no_leak_warning():
        with track_budget() as acc:
            pipe.fit(X, y)
    assert pipe.privacy_spent_ == PrivacyBudget(1.5)
    assert acc.total == pipe.privacy_spent_
    assert [source for source, _ in acc.spends] == [
        "PrivateStandardScaler",
        "PrivateLogisticRegression ("
        + (
            "OPLogisticRegression"
            if pipe.named_steps["privatelogisticregression"].method_ == "op"
            else "FMLogisticRegression"
        )
        + ")",
    ]
    assert [spent.epsilon for _, spent in acc.spends] == [0.5, 1.0]
    fitted = pipe.named_steps
    lower, upper = fitted["privatestandardscaler"].output_domain()["bounds_X"]
    handed = pipe.domains_["privatelogisticregression"]
    assert set(handed) == {"bounds_X"}  # a scaler's output is a box
    np.testing.assert_array_equal(handed["bounds_X"][0], lower)
    np.testing.assert_array_equal(handed["bounds_X"][1], upper)
    assert fitted["privatelogisticregression"].bounds_X == handed["bounds_X"]
    assert {s.status for s in pipe.privacy_report_.steps} == {PRIVATE}
    assert check_privacy(pipe).is_private and check_privacy(pipe).total == acc.total
    # the user's objects are neither modified nor fitted
    assert clf.bounds_X is None and clf.data_norm is None
    for est in (scaler, clf):
        with pytest.raises(NotFittedError):
            check_is_fitted(est)
    assert pipe.pipeline.steps[1][1] is clf
    # predictions are the fitted scikit-learn pipeline's
    np.testing.assert_array_equal(pipe.predict(X), pipe.pipeline_.predict(X))
    assert pipe.score(X, y) > 0.8
    np.testing.assert_array_equal(pipe.classes_, [0, 1])
    assert pipe.n_features_in_ == 3


def test_scaler_pca_classifier_chain():
    X, y = _data(3000)
    pipe = make_private_pipeline(
        _scaler(delta=1e-8),
        PrivatePCA(2, epsilon=0.25, delta=1e-8, random_state=0),
        _lr(delta=1e-8),
    )
    with _no_leak_warning():
        with track_budget() as acc:
            pipe.fit(X, y)
    steps = pipe.named_steps
    scaler_out = steps["privatestandardscaler"].output_domain()["bounds_X"]
    np.testing.assert_array_equal(pipe.domains_["privatepca"]["bounds_X"], scaler_out)
    assert steps["privatepca"].data_norm is None  # a box is a PCA's better domain
    pca_out = steps["privatepca"].output_domain()
    handed = pipe.domains_["privatelogisticregression"]
    assert handed["data_norm"] == pca_out["data_norm"]
    np.testing.assert_array_equal(handed["bounds_X"], pca_out["bounds_X"])
    assert pipe.privacy_spent_ == acc.total
    assert pipe.privacy_spent_.epsilon == 1.75
    assert pipe.privacy_spent_.delta == pytest.approx(3e-8, rel=1e-12)
    assert not hasattr(pipe, "transform")  # a classifier last: no transform


def test_min_max_scaler_hands_on_its_feature_range():
    X, y = _data(5000)
    pipe = make_private_pipeline(
        PrivateMinMaxScaler(epsilon=1.0, bounds_X=(-2, 2), random_state=0),
        PrivatePCA(2, epsilon=0.5, delta=1e-8, random_state=0),
    )
    with _no_leak_warning():
        with track_budget() as acc:
            Z = pipe.fit_transform(X)
    assert pipe.domains_["privatepca"] == {"bounds_X": ([0.0] * 3, [1.0] * 3)}
    assert Z.shape == (5000, 2)
    assert pipe.privacy_spent_ == acc.total


def test_sklearn_scaler_is_reported_and_refused_before_any_spend():
    X, y = _data()
    report = check_privacy(make_pipeline(StandardScaler(), _fm()).fit(X, y))
    assert report.leaking_steps == ["standardscaler"]
    assert report.steps[0].status == NOT_PRIVATE
    fm = _fm()
    pipe = make_private_pipeline(StandardScaler(), fm)
    with track_budget() as acc, pytest.raises(PrivacyLeakError) as excinfo:
        pipe.fit(X, y)
    assert "'standardscaler'" in str(excinfo.value)
    assert "nothing was fitted and nothing spent" in str(excinfo.value)
    assert acc.spends == []
    with pytest.raises(NotFittedError):
        check_is_fitted(pipe)
    with pytest.raises(NotFittedError):
        check_is_fitted(fm)


def test_allowed_leak_fits_and_is_reported_as_infinite_epsilon():
    X, y = _data()
    pipe = make_private_pipeline(StandardScaler(), _fm(), allow=["standardscaler"])
    with track_budget() as acc:
        pipe.fit(X, y)
    assert pipe.privacy_spent_ == PrivacyBudget(math.inf)
    # the ledger holds what was spent with noise; the total is honest
    assert acc.total == PrivacyBudget(1.0)
    assert pipe.privacy_report_.leaking_steps == ["standardscaler"]
    assert not check_privacy(pipe).is_private
    assert "fmlogisticregression" not in pipe.domains_  # a leak hands nothing on


def test_a_leak_after_a_private_step_is_refused():
    X, y = _data()
    for leak in (StandardScaler(), PCA(2)):
        pipe = make_private_pipeline(_scaler(), leak, _fm())
        name = type(leak).__name__.lower()
        with track_budget() as acc, pytest.raises(PrivacyLeakError, match=name):
            pipe.fit(X, y)
        assert acc.spends == []


@pytest.mark.parametrize(
    "step, reason",
    [
        (PrivateStandardScaler(epsilon=1.0), "bounds_X not declared"),
        (PrivateStandardScaler(epsilon=np.inf, bounds_X=(-1, 1)), "epsilon=inf"),
        (PrivateMinMaxScaler(epsilon=np.inf), "epsilon=inf"),
        (
            PrivateLabelClassifier(
                LogisticRegression(), RandomizedResponse(epsilon=1.0, classes=[0, 1])
            ),
            "label differential privacy",
        ),
    ],
)
def test_private_steps_that_would_leak_are_refused(step, reason):
    X, y = _data()
    pipe = make_private_pipeline(step, _fm())
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # nothing is fitted
        with track_budget() as acc, pytest.raises(PrivacyLeakError, match=reason):
            pipe.fit(X, y)
    assert acc.spends == []


def test_undeclared_classes_are_refused_and_the_domain_is_not_inferred():
    X, y = _data()
    pipe = make_private_pipeline(
        _scaler(), PrivateLogisticRegression(epsilon=1.0, random_state=0)
    )
    with track_budget() as acc, pytest.raises(PrivacyLeakError) as excinfo:
        pipe.fit(X, y)
    message = str(excinfo.value)
    # the domain comes from the scaler; only the classes are missing
    assert "classes not declared" in message and "bounds_X" not in message
    assert acc.spends == []


def test_the_domain_passes_through_passthrough_only():
    X, y = _data()
    through = PrivatePipeline(
        Pipeline([("scale", _scaler()), ("skip", "passthrough"), ("clf", _lr())])
    )
    with _no_leak_warning():
        through.fit(X, y)
    assert "clf" in through.domains_
    # a data-independent transformer stops it: the classifier has no domain
    stopped = make_private_pipeline(_scaler(), FunctionTransformer(np.tanh), _lr())
    with track_budget() as acc, pytest.raises(PrivacyLeakError) as excinfo:
        stopped.fit(X, y)
    assert "privatelogisticregression" in str(excinfo.value)
    assert "bounds_X/data_norm not declared" in str(excinfo.value)
    assert acc.spends == []
    # ...unless the user declares it
    declared = make_private_pipeline(
        _scaler(), FunctionTransformer(np.tanh), _lr(bounds_X=(-1, 1))
    ).fit(X, y)
    assert declared.domains_ == {}
    assert declared.privacy_spent_ == PrivacyBudget(1.5)


def test_a_declared_domain_is_never_replaced():
    X, y = _data()
    pipe = make_private_pipeline(_scaler(), _lr(data_norm=2.0)).fit(X, y)
    assert pipe.domains_ == {}
    clf = pipe.named_steps["privatelogisticregression"]
    assert clf.data_norm == 2.0 and clf.bounds_X is None


def test_nested_composites_are_checked_leaf_by_leaf():
    X, y = _data()
    columns = ColumnTransformer(
        [("scaled", _scaler(), [0, 1]), ("exact", StandardScaler(), [2])]
    )
    pipe = make_private_pipeline(columns, _fm())
    with (
        track_budget() as acc,
        pytest.raises(PrivacyLeakError, match="columntransformer__exact"),
    ):
        pipe.fit(X, y)
    assert acc.spends == []
    pipe.set_params(allow=["columntransformer__exact"])
    with track_budget() as acc:
        pipe.fit(X, y)
    assert acc.total == PrivacyBudget(1.5)
    assert pipe.privacy_report_.leaking_steps == ["columntransformer__exact"]
    assert math.isinf(pipe.privacy_spent_.epsilon)
    # a private pipeline nested in another checks its own steps; check_privacy
    # walks it
    outer = make_private_pipeline(make_private_pipeline(_scaler()), _fm())
    with track_budget() as acc:
        outer.fit(X, y)
    report = check_privacy(outer)
    assert [s.name for s in report.steps] == [
        "privatepipeline__privatestandardscaler",
        "fmlogisticregression",
    ]
    assert report.total == outer.privacy_spent_ == acc.total == PrivacyBudget(1.5)
    # its steps are planned with the rest: a leak inside is refused before the
    # private step in front of it spends, and is named by its path
    leaky_inner = make_private_pipeline(
        _scaler(), make_private_pipeline(StandardScaler()), _fm()
    )
    with (
        track_budget() as acc,
        pytest.raises(PrivacyLeakError, match="'privatepipeline__standardscaler'"),
    ):
        leaky_inner.fit(X, y)
    assert acc.spends == []
    # hand-offs inside a nested private pipeline are planned as such
    inner = make_private_pipeline(_scaler(), PrivatePCA(2, epsilon=0.5, delta=1e-8))
    nested = make_private_pipeline(inner, _fm())
    with _no_leak_warning():
        nested.fit(X, y)
    assert nested.privacy_spent_ == PrivacyBudget(2.0, 1e-8)


def test_allow_must_name_a_step():
    X, y = _data()
    with pytest.raises(ValueError, match="allow names no step"):
        make_private_pipeline(_scaler(), _fm(), allow=["scaler"]).fit(X, y)


class _Declared(TransformerMixin, BaseEstimator):
    """An outside transformer declaring itself, before fit or after it only."""

    def __init__(self, answer=None, after_fit=False):
        self.answer = answer
        self.after_fit = after_fit

    def fit(self, X, y=None):
        self.fitted_ = True
        return self

    def transform(self, X):
        return X

    def __skdp_privacy__(self):
        if self.after_fit:
            check_is_fitted(self)
        return self.answer


def test_outside_estimators_declare_themselves():
    X, y = _data()
    ok = make_private_pipeline(_Declared(PrivacyBudget(0.3, 1e-9)), _fm()).fit(X, y)
    assert ok.privacy_spent_ == PrivacyBudget(1.3, 1e-9)
    # a declared leak answers before the fit: refused before anything is spent
    with track_budget() as acc, pytest.raises(PrivacyLeakError, match="_declared"):
        make_private_pipeline(_Declared(None), _fm()).fit(X, y)
    assert acc.spends == []
    # one that answers only once fitted is checked right after its own fit,
    # before the next step is fitted (the private step before it has spent)
    late = make_private_pipeline(_scaler(), _Declared(None, after_fit=True), _fm())
    with (
        track_budget() as acc,
        pytest.raises(PrivacyLeakError, match="found after its fit"),
    ):
        late.fit(X, y)
    assert acc.total == PrivacyBudget(0.5)
    with pytest.raises(NotFittedError):
        check_is_fitted(late)


def test_refused_budget_leaves_no_model():
    X, y = _data()
    pipe = make_private_pipeline(_scaler(), _fm()).fit(X, y)
    with track_budget(epsilon=1.0), pytest.raises(BudgetExceededError):
        pipe.fit(X, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(pipe)


def test_nested_parameters_clone_and_search():
    X, y = _data()
    pipe = make_private_pipeline(_scaler(), _fm())
    pipe.set_params(pipeline__privatestandardscaler__epsilon=0.25)
    assert pipe.get_params()["pipeline__privatestandardscaler__epsilon"] == 0.25
    copy = clone(pipe).fit(X, y)
    assert copy.privacy_spent_ == PrivacyBudget(1.25)
    # the same seeds give the same model (reproducible-noise opt-in of the suite)
    again = clone(pipe).fit(X, y)
    np.testing.assert_array_equal(
        copy.named_steps["fmlogisticregression"].coef_,
        again.named_steps["fmlogisticregression"].coef_,
    )


def test_fit_parameters_are_routed_by_step_name():
    X, y = _data()
    w = np.ones(len(y))
    pipe = make_private_pipeline(
        FunctionTransformer(), LogisticRegression(), allow=["logisticregression"]
    )
    pipe.fit(X, y, logisticregression__sample_weight=w)
    with pytest.raises(ValueError, match="stepname__parameter"):
        pipe.fit(X, y, sample_weight=w)


_FITS = []


class _CountedFits(_Declared):
    """Data-independent by declaration; counts its fits (a module-level list:
    joblib's cache hashes the estimator)."""

    def fit(self, X, y=None):
        _FITS.append(1)
        return super().fit(X, y)


def test_memory_caches_only_the_steps_that_are_not_private(tmp_path):
    X, y = _data()
    _FITS.clear()
    pipe = make_private_pipeline(
        _scaler(), _CountedFits("data-independent"), _fm(), memory=str(tmp_path)
    )
    with track_budget() as acc:
        pipe.fit(X, y)
        first = pipe.predict(X)
        pipe.fit(X, y)
    # the private steps spent twice (refitted, with the same seeded noise), the
    # data-independent step was fitted once and then read from the cache
    assert acc.total == PrivacyBudget(3.0)
    assert len(_FITS) == 1
    np.testing.assert_array_equal(pipe.predict(X), first)


def test_verbose_prints_each_step(capsys):
    X, y = _data()
    make_private_pipeline(_scaler(), _fm(), verbose=True).fit(X, y)
    out = capsys.readouterr().out
    assert "(step 1 of 2) Processing privatestandardscaler" in out
    assert "(step 2 of 2) Processing fmlogisticregression" in out


def test_transformer_pipeline_delegates_to_the_fitted_steps():
    X, _ = _data()
    pipe = make_private_pipeline(
        _scaler(), PrivatePCA(3, epsilon=0.5, delta=1e-8, random_state=0)
    )
    with pytest.raises(NotFittedError):
        pipe.transform(X)
    Z = pipe.fit(X).transform(X)
    np.testing.assert_array_equal(Z, pipe.pipeline_.transform(X))
    # every component kept: the inverse maps back (orthonormal basis, affine scaler)
    np.testing.assert_allclose(pipe.inverse_transform(Z), X, atol=1e-10)
    assert list(pipe.get_feature_names_out()) == [f"privatepca{i}" for i in range(3)]
    assert not hasattr(pipe, "predict")
