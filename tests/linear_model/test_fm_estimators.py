"""FMLinearRegression and FMLogisticRegression: exactness, accounting, inputs."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler

from skdp._fm import (
    DataDomain,
    add_noise,
    default_coef_norm,
    draw_noise,
    lattice_granularity,
    make_mechanism,
    n_released,
    release_noise_std,
    sensitivity,
    solve_noisy_quadratic,
    sufficient_statistics,
)
from skdp.accounting import PrivacyBudget, track_budget
from skdp.datasets import make_private_classification, make_private_regression
from skdp.exceptions import PrivacyLeakWarning, ReproducibleNoiseWarning
from skdp.linear_model import FMLinearRegression, FMLogisticRegression

ESTIMATORS = [FMLinearRegression, FMLogisticRegression]


@pytest.fixture(scope="module")
def reg_data():
    X, y, coef = make_private_regression(2000, 4, noise=0.1, random_state=0)
    return X, y, coef


@pytest.fixture(scope="module")
def clf_data():
    X, y, coef = make_private_classification(2000, 4, random_state=0)
    return X, y, coef


def _declared(est):
    kw = {"data_norm": 1.0}
    if isinstance(est, FMLinearRegression) or est is FMLinearRegression:
        kw["bounds_y"] = (-1, 1)
    else:
        kw["classes"] = (0, 1)
    return kw


# ------------------------------------------------------------- eps = inf
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_infinite_epsilon_is_ols(reg_data, fit_intercept):
    X, y, _ = reg_data
    y = y + 0.3 * fit_intercept  # a real intercept
    reg = FMLinearRegression(
        epsilon=np.inf, data_norm=1.0, bounds_y=(-2, 2), fit_intercept=fit_intercept
    ).fit(X, y)
    ols = LinearRegression(fit_intercept=fit_intercept).fit(X, y)
    np.testing.assert_allclose(reg.coef_, ols.coef_, rtol=1e-8, atol=1e-10)
    assert reg.intercept_ == pytest.approx(ols.intercept_, abs=1e-10)
    assert reg.privacy_spent_ == PrivacyBudget(np.inf)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_infinite_epsilon_is_the_taylor_minimizer(clf_data, fit_intercept):
    X, y, _ = clf_data
    labels = np.array(["no", "yes"])[y]
    clf = FMLogisticRegression(
        epsilon=np.inf, data_norm=1.0, fit_intercept=fit_intercept
    ).fit(X, labels)
    Xa = np.column_stack([X, np.ones(len(X))]) if fit_intercept else X
    # gradient of sum (1/2 - y) z + z^2 / 8 is zero: Xa^T Xa w / 4 = Xa^T (y - 1/2)
    w = np.linalg.solve(Xa.T @ Xa / 4, Xa.T @ (y - 0.5))
    np.testing.assert_allclose(clf.coef_, w[: X.shape[1]], rtol=1e-8)
    assert clf.intercept_ == pytest.approx(w[-1] if fit_intercept else 0.0, abs=1e-9)
    assert list(clf.classes_) == ["no", "yes"]
    assert set(clf.predict(X)) <= {"no", "yes"}
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(
        np.log(proba), clf.predict_log_proba(X), rtol=1e-10, atol=1e-12
    )
    assert np.array_equal(clf.predict(X), clf.classes_[(proba[:, 1] > 0.5) * 1])


# --------------------------------------------------- estimator == core release
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_estimator_is_the_core_release(reg_data, mechanism):
    X, y, _ = reg_data
    reg = FMLinearRegression(
        epsilon=0.7,
        delta=1e-6,
        mechanism=mechanism,
        data_norm=1.0,
        bounds_y=(-1, 1),
        postprocessing="ridge",  # the solve this test rebuilds
        random_state=4,
    ).fit(X, y)
    dom = DataDomain(4, data_norm=1.0, y_bounds=(-1, 1), fit_intercept=True)
    c = reg.linear_weight_
    sens = sensitivity("squared", dom, linear_weight=c)
    assert reg.sensitivity_ == sens
    mech = make_mechanism(0.7, 1e-6, sens, n_released(dom), mechanism)
    noise = draw_noise(mech, dom, np.random.default_rng(4))
    A, b = sufficient_statistics(X, y, "squared", fit_intercept=True)
    A_hat, b_hat = add_noise(
        A, b, *noise, linear_weight=c, granularity=lattice_granularity(mech)
    )
    w = solve_noisy_quadratic(
        A_hat,
        b_hat,
        noise_std=release_noise_std(mech),
        noise_std_b=release_noise_std(mech) / c,
        coef_norm=default_coef_norm("squared", dom),
    )
    np.testing.assert_allclose(reg.coef_, w[:-1], rtol=1e-9)
    assert reg.intercept_ == pytest.approx(w[-1])


# ------------------------------------------------------------- randomness
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_same_seed_same_model_other_seed_other_model(Est, reg_data, clf_data):
    X, y, _ = reg_data if Est is FMLinearRegression else clf_data
    kw = _declared(Est)
    a = Est(epsilon=1.0, random_state=3, **kw).fit(X, y)
    b = Est(epsilon=1.0, random_state=3, **kw).fit(X, y)
    c = Est(epsilon=1.0, random_state=4, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.allclose(a.coef_, c.coef_)


def test_noise_shrinks_with_epsilon(reg_data):
    X, y, coef = reg_data
    errors = {}
    for eps in (0.5, 50.0):
        errs = [
            np.linalg.norm(
                FMLinearRegression(
                    epsilon=eps, data_norm=1.0, bounds_y=(-1, 1), random_state=s
                )
                .fit(X, y)
                .coef_
                - coef
            )
            for s in range(5)
        ]
        errors[eps] = np.median(errs)
    assert errors[50.0] < errors[0.5]


# ---------------------------------------------------------------- clipping
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_out_of_bounds_data_is_clipped(fit_intercept):
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(200, 3))
    y = X @ [1.0, -1.0, 0.5] + rng.normal(size=200)
    X0, y0 = X.copy(), y.copy()
    reg = FMLinearRegression(
        epsilon=np.inf,
        bounds_X=(-1, 1),
        bounds_y=(-2, 2),
        fit_intercept=fit_intercept,
    ).fit(X, y)
    np.testing.assert_array_equal(X, X0)  # caller's arrays untouched
    np.testing.assert_array_equal(y, y0)
    ols = LinearRegression(fit_intercept=fit_intercept).fit(
        np.clip(X, -1, 1), np.clip(y, -2, 2)
    )
    np.testing.assert_allclose(reg.coef_, ols.coef_, rtol=1e-8)
    assert not np.allclose(
        reg.coef_, LinearRegression(fit_intercept=fit_intercept).fit(X, y).coef_
    )
    # rows scaled to the norm bound
    reg = FMLinearRegression(
        epsilon=np.inf, data_norm=1.0, bounds_y=(-2, 2), fit_intercept=fit_intercept
    ).fit(X, y)
    Xn = X / np.maximum(1, np.linalg.norm(X, axis=1, keepdims=True))
    ols = LinearRegression(fit_intercept=fit_intercept).fit(Xn, np.clip(y, -2, 2))
    np.testing.assert_allclose(reg.coef_, ols.coef_, rtol=1e-8)
    assert reg.data_norm_ == 1.0 and reg.bounds_ is None


def test_max_nonzero_keeps_the_largest_entries():
    rng = np.random.default_rng(1)
    X = rng.uniform(-0.3, 0.3, size=(300, 5))
    y = X @ [1.0, 2.0, 0.0, -1.0, 0.5]
    X0 = X.copy()
    reg = FMLinearRegression(
        epsilon=np.inf, data_norm=1.0, bounds_y=(-2, 2), max_nonzero=2
    ).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    sparse = X.copy()
    order = np.argsort(np.abs(X), axis=1)
    np.put_along_axis(sparse, order[:, :3], 0.0, axis=1)
    ols = LinearRegression().fit(sparse, y)
    np.testing.assert_allclose(reg.coef_, ols.coef_, rtol=1e-8)
    dense = FMLinearRegression(epsilon=1.0, data_norm=1.0, bounds_y=(-2, 2)).fit(X, y)
    assert reg.set_params(epsilon=1.0).fit(X, y).sensitivity_.l1 < (
        dense.sensitivity_.l1
    )


def test_classifier_clips_too(clf_data):
    X, y, _ = clf_data
    big = 5 * X
    a = FMLogisticRegression(epsilon=np.inf, bounds_X=(-0.2, 0.2)).fit(big, y)
    b = FMLogisticRegression(epsilon=np.inf, bounds_X=(-0.2, 0.2)).fit(
        np.clip(big, -0.2, 0.2), y
    )
    np.testing.assert_allclose(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.bounds_[0], np.full(4, -0.2))


def test_missing_bounds_warn(reg_data, clf_data):
    X, y, _ = reg_data
    with pytest.warns(PrivacyLeakWarning, match="data_norm"):
        reg = FMLinearRegression(epsilon=1.0, bounds_y=(-1, 1)).fit(X, y)
    assert reg.data_norm_ == pytest.approx(np.linalg.norm(X, axis=1).max())
    with pytest.warns(PrivacyLeakWarning, match="bounds_y"):
        FMLinearRegression(epsilon=1.0, data_norm=1.0).fit(X, y)
    with pytest.warns(PrivacyLeakWarning):
        FMLogisticRegression(epsilon=1.0).fit(*clf_data[:2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        FMLinearRegression(epsilon=1.0, data_norm=1.0, bounds_y=(-1, 1)).fit(X, y)
        FMLogisticRegression(epsilon=1.0, bounds_X=(-1, 1), classes=[0, 1]).fit(
            *clf_data[:2]
        )
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        FMLogisticRegression(epsilon=1.0, bounds_X=(-1, 1)).fit(*clf_data[:2])


# ---------------------------------------------------------------- accounting
def test_privacy_spent_and_tracking(reg_data):
    X, y, _ = reg_data
    with track_budget() as acc:
        lap = FMLinearRegression(
            epsilon=0.5, delta=1e-5, data_norm=1.0, bounds_y=(-1, 1)
        ).fit(X, y)
        gau = FMLinearRegression(
            epsilon=0.5,
            delta=1e-5,
            mechanism="gaussian",
            data_norm=1.0,
            bounds_y=(-1, 1),
        ).fit(X, y)
    assert lap.privacy_spent_ == PrivacyBudget(0.5, 0.0)
    assert gau.privacy_spent_ == PrivacyBudget(0.5, 1e-5)
    assert acc.total == PrivacyBudget(1.0, 1e-5)


def test_partial_fit_composes_and_fit_chunks_releases_once(reg_data):
    X, y, _ = reg_data
    kw = dict(epsilon=0.5, data_norm=1.0, bounds_y=(-1, 1), random_state=0)
    inc = FMLinearRegression(**kw)
    with track_budget() as acc:
        for part in np.array_split(np.arange(len(X)), 4):
            inc.partial_fit(X[part], y[part])
    assert inc.privacy_spent_ == PrivacyBudget(2.0)
    assert len(acc.spends) == 4 and inc.n_samples_seen_ == len(X)
    chunks = [(X[p], y[p]) for p in np.array_split(np.arange(len(X)), 4)]
    once = FMLinearRegression(**kw).fit_chunks(iter(chunks))
    whole = FMLinearRegression(**kw).fit(X, y)
    assert once.privacy_spent_ == PrivacyBudget(0.5)
    np.testing.assert_allclose(once.coef_, whole.coef_, rtol=1e-6, atol=1e-9)
    # partial_fit uses fresh noise at every release
    inc2 = FMLinearRegression(**kw)
    inc2.partial_fit(X, y)
    first = inc2.coef_.copy()
    inc2.partial_fit(X[:1], y[:1])
    assert inc2.privacy_spent_ == PrivacyBudget(1.0)
    assert not np.allclose(first, inc2.coef_, atol=1e-3)


def test_partial_fit_classifier_needs_classes_once(clf_data):
    X, y, _ = clf_data
    clf = FMLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0)
    clf.partial_fit(X[y == 0][:50], y[y == 0][:50], classes=[0, 1])
    clf.partial_fit(X[:100], y[:100])
    assert clf.privacy_spent_ == PrivacyBudget(2.0)
    with pytest.raises(ValueError, match="classes_"):
        clf.partial_fit(X[:5], np.full(5, 7))


def test_chunked_fit_memory_does_not_grow_with_n():
    """fit_chunks keeps only p x p sums: peak memory is flat in n."""
    import tracemalloc

    def chunks(n_chunks):
        rng = np.random.default_rng(0)
        for _ in range(n_chunks):
            X = rng.uniform(-0.2, 0.2, size=(2000, 10))
            yield X, X.sum(axis=1)

    peaks = []
    for n_chunks in (2, 20):
        reg = FMLinearRegression(epsilon=1.0, data_norm=1.0, bounds_y=(-2, 2))
        tracemalloc.start()
        reg.fit_chunks(chunks(n_chunks))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.5 * peaks[0]


# ---------------------------------------------------------------- sklearn API
def test_pipeline_in_grid_search(reg_data):
    X, y, _ = reg_data
    pipe = make_pipeline(
        MinMaxScaler(feature_range=(-0.5, 0.5)),
        FMLinearRegression(bounds_X=(-0.5, 0.5), bounds_y=(-1, 1), random_state=0),
    )
    grid = GridSearchCV(
        pipe, param_grid={"fmlinearregression__epsilon": [0.1, 10.0]}, cv=3
    ).fit(X, y)
    assert grid.best_params_["fmlinearregression__epsilon"] == 10.0
    assert grid.predict(X).shape == (len(X),)


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_pickle_round_trip(Est, reg_data, clf_data):
    X, y, _ = reg_data if Est is FMLinearRegression else clf_data
    est = Est(epsilon=1.0, random_state=0, **_declared(Est)).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est.predict(X), again.predict(X))
    assert again.privacy_spent_ == est.privacy_spent_


def test_feature_names_are_kept(reg_data):
    pd = pytest.importorskip("pandas")
    X, y, _ = reg_data
    frame = pd.DataFrame(X, columns=list("abcd"))
    reg = FMLinearRegression(data_norm=1.0, bounds_y=(-1, 1), random_state=0)
    reg.fit(frame, y)
    assert list(reg.feature_names_in_) == list("abcd") and reg.n_features_in_ == 4


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("Est", ESTIMATORS)
@pytest.mark.parametrize("where", ["X", "y"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input(Est, where, bad, reg_data, clf_data):
    X, y, _ = reg_data if Est is FMLinearRegression else clf_data
    X, y = X.copy(), y.astype(float)
    (X if where == "X" else y)[3] = bad
    with pytest.raises(ValueError, match="NaN|infinity|Unknown label"):
        Est(**_declared(Est)).fit(X, y)


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_one_sample(Est):
    with pytest.raises(ValueError, match="1 sample"):
        Est(**_declared(Est)).fit(np.zeros((1, 2)), [1.0])


def test_labels_must_be_binary(clf_data):
    X, _, _ = clf_data
    # more than two classes: one multinomial release (tests/.../test_fm_multinomial)
    clf = FMLogisticRegression(data_norm=1.0, classes=[0, 1, 2], random_state=0)
    assert clf.fit(X, np.arange(len(X)) % 3).coef_.shape == (3, X.shape[1])
    with pytest.raises(ValueError, match="1 class"), warnings.catch_warnings():
        # undeclared classes warn first (PrivacyLeakWarning); the refusal is
        # under test
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        FMLogisticRegression(data_norm=1.0).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="Unknown label"):
        FMLogisticRegression(data_norm=1.0).fit(X, np.linspace(0, 1, len(X)))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"bounds_X": (1, -1)}, "bounds_X"),
        ({"bounds_X": ([0, 0, 0], [1, 1, 1])}, "bounds_X"),
        ({"data_norm": -1.0}, "data_norm"),
        ({"bounds_y": (1, -1), "data_norm": 1.0}, "bounds_y"),
        ({"epsilon": 0.0, "data_norm": 1.0}, "epsilon"),
        ({"mechanism": "gaussian", "data_norm": 1.0}, "delta"),
        ({"bounds_X": (0.1, 1), "data_norm": 1.0}, "contain 0"),
        ({"bounds_X": (0.1, 1), "max_nonzero": 1}, "contain 0"),
        ({"max_nonzero": 0, "data_norm": 1.0}, "max_nonzero"),
    ],
)
def test_bad_parameters(reg_data, params, match):
    X, y, _ = reg_data
    with pytest.raises(ValueError, match=match):
        FMLinearRegression(**{"bounds_y": (-1, 1), **params}).fit(X, y)


def test_noise_swamped_fit_gives_a_model_not_an_overflow():
    # n = 5, d = 1, eps = 0.01, no intercept: the noisy quadratic has no positive
    # eigenvalue for random_state=0; before the fallback coef_ was exactly 0 with
    # "overflow encountered in scalar divide"
    X, y, _ = make_private_regression(5, 1, random_state=0)
    est = FMLinearRegression(
        epsilon=0.01,
        data_norm=1.0,
        bounds_y=(-1, 1),
        fit_intercept=False,
        postprocessing="ridge",  # the ridge solve's fallback ("eb" gives 0 here)
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        est.fit(X, y)
    assert np.all(np.isfinite(est.coef_)) and np.all(est.coef_ != 0)
    # shrunk hard towards 0 (the noise swamps everything): |w| << 1 / R
    assert np.all(np.abs(est.coef_) < 0.1)
