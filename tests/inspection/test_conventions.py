"""RRInfluenceEstimator and scikit-learn's conventions: feature names, metadata
routing, verbose progress, HTML repr, the default order."""

import sys
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp.exceptions import ReproducibleNoiseWarning
from skdp.inspection import LABEL, RRInfluenceEstimator
from tests.inspection._data import make_data


# ------------------------------------------------------------------ feature names
@pytest.mark.parametrize("pipeline", [False, True], ids=["bare", "pipeline"])
def test_fitted_on_a_dataframe_predicts_on_it_without_warning(pipeline):
    pd = pytest.importorskip("pandas")
    X, y = make_data()
    df = pd.DataFrame(X, columns=["a", "b", "g"])
    model = LogisticRegression()
    if pipeline:
        model = make_pipeline(StandardScaler(), model)
    est = RRInfluenceEstimator(model, attributes={"g": 2}).fit(df, y)
    assert list(est.feature_names_in_) == ["a", "b", "g"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        est.predict(df)
        est.predict_proba(df)
        est.score(df, y)
        est.influence(df, y, groups=[0, 1], perturb={"g": 1.0})
        est.validate(df, y, groups=[0, 1], perturb={LABEL: 1.0}, n_draws=2)


def test_dataframe_and_array_fits_give_identical_estimates():
    pd = pytest.importorskip("pandas")
    X, y = make_data(seed=1)
    df = pd.DataFrame(X, columns=["a", "b", "g"])
    kw = dict(groups=[np.arange(20), X[:, 2] == 1], perturb={"g": [0.5, 2.0]})
    a = RRInfluenceEstimator(LogisticRegression(), attributes={"g": "g"}).fit(df, y)
    b = RRInfluenceEstimator(LogisticRegression(), attributes={"g": 2}).fit(X, y)
    np.testing.assert_array_equal(a.estimator_.coef_, b.estimator_.coef_)
    # equal up to the memory layout of the converted test inputs
    np.testing.assert_allclose(
        a.influence(df, y, **kw), b.influence(X, y, **kw), rtol=1e-12
    )


# ------------------------------------------------------------------ routing
@pytest.fixture
def routing():
    """Metadata routing enabled for the test (set_*_request needs it)."""
    with sklearn.config_context(enable_metadata_routing=True):
        yield


def _weighted_logreg(**params):
    return (
        LogisticRegression(**params)
        .set_fit_request(sample_weight=True)
        .set_score_request(sample_weight=True)
    )


def test_cross_validate_routes_sample_weight_to_the_estimator_and_objective(routing):
    X, y, w = make_data(seed=2, weights=True)
    est = RRInfluenceEstimator(_weighted_logreg(), attributes={"g": 2})
    # explicit: scikit-learn < 1.7 routes weights to score only on request
    est.set_score_request(sample_weight=True)
    out = cross_validate(
        est,
        X,
        y,
        cv=3,
        params={"sample_weight": w},
        return_estimator=True,
        return_indices=True,
    )
    for fitted, train, test, score in zip(
        out["estimator"],
        out["indices"]["train"],
        out["indices"]["test"],
        out["test_score"],
    ):
        want = LogisticRegression().fit(X[train], y[train], sample_weight=w[train])
        np.testing.assert_array_equal(fitted.estimator_.coef_, want.coef_)
        # the influence objective uses the weights the estimator was fitted with
        np.testing.assert_array_equal(fitted._state.sample_weight, w[train])
        assert score == want.score(X[test], y[test], sample_weight=w[test])
        unweighted = LogisticRegression().fit(X[train], y[train])
        assert not np.allclose(unweighted.coef_, want.coef_)


def test_grid_search_routes_sample_weight(routing):
    X, y, w = make_data(seed=3, weights=True)
    est = RRInfluenceEstimator(_weighted_logreg())
    est.set_score_request(sample_weight=True)  # explicit for scikit-learn < 1.7
    search = GridSearchCV(est, {"estimator__C": [0.05, 1.0]}, cv=3)
    search.fit(X, y, sample_weight=w)
    C = search.best_params_["estimator__C"]
    want = LogisticRegression(C=C).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(search.best_estimator_.estimator_.coef_, want.coef_)
    np.testing.assert_array_equal(search.best_estimator_._state.sample_weight, w)


def test_routing_through_a_pipeline_reaches_its_last_step():
    X, y, w = make_data(seed=4, weights=True)
    with sklearn.config_context(enable_metadata_routing=True):
        scaler = StandardScaler().set_fit_request(sample_weight=False)
        pipe = make_pipeline(scaler, _weighted_logreg())
        est = RRInfluenceEstimator(pipe).fit(X, y, sample_weight=w)
    legacy = RRInfluenceEstimator(make_pipeline(StandardScaler(), LogisticRegression()))
    legacy = legacy.fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(est._state.sample_weight, w)
    kw = dict(groups=np.arange(15), perturb={LABEL: [0.5, 2.0]})
    np.testing.assert_array_equal(
        est.influence(X, y, **kw), legacy.influence(X, y, **kw)
    )


def test_unrequested_or_declined_sample_weight_follows_sklearn_rules(routing):
    # as for scikit-learn's own meta-estimators: an unset request is an error,
    # and so is metadata that every consumer declined
    X, y, w = make_data(seed=5, weights=True)
    with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
        RRInfluenceEstimator(LogisticRegression()).fit(X, y, sample_weight=w)
    declined = LogisticRegression().set_fit_request(sample_weight=False)
    with pytest.raises(TypeError, match="sample_weight"):
        RRInfluenceEstimator(declined).fit(X, y, sample_weight=w)
    # without metadata, a declined estimator fits unweighted
    est = RRInfluenceEstimator(declined).fit(X, y)
    assert est._state.sample_weight is None


def test_without_routing_only_sample_weight_is_accepted():
    X, y, w = make_data(seed=6, weights=True)
    est = RRInfluenceEstimator(LogisticRegression()).fit(X, y, sample_weight=w)
    want = LogisticRegression().fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(est.estimator_.coef_, want.coef_)
    with pytest.raises(ValueError, match="enable_metadata_routing"):
        RRInfluenceEstimator(LogisticRegression()).fit(X, y, groups=np.ones(len(y)))


def test_get_metadata_routing_names_the_inner_estimator(routing):
    routing = RRInfluenceEstimator(_weighted_logreg()).get_metadata_routing()
    assert "estimator" in str(routing) and "sample_weight" in str(routing)


# ------------------------------------------------------------------ verbose
def _validate(verbose):
    X, y = make_data(seed=7)
    est = RRInfluenceEstimator(LogisticRegression(), verbose=verbose).fit(X, y)
    return est.validate(
        X, y, groups=[np.arange(5), np.arange(5, 9)], perturb={LABEL: 1.0}, n_draws=3
    )


def test_verbose_0_prints_nothing(capsys):
    _validate(0)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_verbose_1_reports_progress(capsys):
    _validate(1)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "RRInfluenceEstimator.validate" in captured.err


def test_verbose_without_tqdm_prints_plain_lines(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    _validate(1)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "RRInfluenceEstimator.validate: 0/6"
    assert lines[-1] == "RRInfluenceEstimator.validate: 6/6"


# ------------------------------------------------------------------ repr, params
def test_html_repr_unfitted_and_fitted():
    X, y = make_data(seed=8)
    est = RRInfluenceEstimator(make_pipeline(StandardScaler(), LogisticRegression()))
    for html in (est._repr_html_(), est.fit(X, y)._repr_html_()):
        assert "RRInfluenceEstimator" in html
        assert "LogisticRegression" in html and "StandardScaler" in html


def test_random_state_accepts_a_generator():
    X, y = make_data(seed=9)
    kw = dict(groups=np.arange(30), perturb={"g": [0.5, 1.0]})
    ests = [
        RRInfluenceEstimator(
            LogisticRegression(),
            attributes={"g": 2},
            expectation="monte_carlo",
            order=1,
            random_state=rs,
        ).fit(X, y)
        for rs in (np.random.default_rng(0), np.random.default_rng(0))
    ]
    np.testing.assert_array_equal(
        ests[0].influence(X, y, **kw), ests[1].influence(X, y, **kw)
    )


# ------------------------------------------------------------------ order
def test_order_defaults_to_2_where_the_dense_hessian_applies():
    X, y = make_data(seed=10)
    assert RRInfluenceEstimator(LogisticRegression()).order == "auto"
    assert RRInfluenceEstimator(LogisticRegression()).fit(X, y).order_ == 2
    forward = RRInfluenceEstimator(LogisticRegression(), correction="forward")
    assert forward.fit(X, y).order_ == 1
    with pytest.raises(ValueError, match="order=2.*forward"):
        RRInfluenceEstimator(LogisticRegression(), correction="forward", order=2).fit(
            X, y
        )


def test_order_falls_back_to_1_without_a_dense_hessian():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(60, 4000))  # 4001 parameters: no dense Hessian
    y = (X[:, 0] > 0).astype(int)
    est = RRInfluenceEstimator(LogisticRegression(), method="cg").fit(X, y)
    assert est.hessian_ is None and est.order_ == 1
    with pytest.raises(ValueError, match="dense Hessian"):
        RRInfluenceEstimator(LogisticRegression(), method="cg", order=2).fit(X, y)


def test_docstring_says_it_is_an_analysis_tool():
    first_paragraph = RRInfluenceEstimator.__doc__.split("\n\n")[1]
    assert "analysis tool, not a private release" in first_paragraph
    assert "Nothing this estimator outputs is differentially private" in (
        RRInfluenceEstimator.__doc__
    )
