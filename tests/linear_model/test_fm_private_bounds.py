"""FM estimators with private bounds (bounds_X / bounds_y = "private") and the
empirical-Bayes post-processing of FMLinearRegression."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from skdp._fm.solve import empirical_bayes_solve
from skdp.accounting import PrivacyBudget, track_budget
from skdp.linear_model import FMLinearRegression, FMLogisticRegression
from skdp.preprocessing import PrivateBoundsWarning


def _data(n=6000, seed=0):
    """Features on very different scales and a 0/1 column."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [rng.normal(50, 10, n), rng.lognormal(8, 0.5, n), rng.integers(0, 2, n)]
    )
    y = 0.05 * X[:, 0] + 1e-4 * X[:, 1] + 1.0 * X[:, 2] + rng.normal(0, 0.5, n)
    return X, y


def _private(**kw):
    params = {
        "epsilon": 2.0,
        "bounds_X": "private",
        "bounds_y": "private",
        "public_bounds": {2: (0, 1)},
        "random_state": 0,
    }
    params.update(kw)
    return FMLinearRegression(**params)


def test_spend_is_composed_and_recorded_as_two_releases():
    X, y = _data()
    with track_budget() as acc:
        reg = _private(mechanism="gaussian", delta=1e-8).fit(X, y)
    assert acc.spends == [
        ("FMLinearRegression.bounds", PrivacyBudget(0.2, 0.0)),
        ("FMLinearRegression", PrivacyBudget(1.8, 1e-8)),
    ]
    assert reg.privacy_spent_ == PrivacyBudget(2.0, 1e-8)
    assert reg.bounds_privacy_spent_ == PrivacyBudget(0.2, 0.0)


def test_reports_the_ranges_in_the_users_units():
    X, y = _data()
    reg = _private().fit(X, y)
    lower, upper = reg.bounds_
    assert lower[2] == 0 and upper[2] == 1  # public, as declared
    q = np.quantile(X, [0.05, 0.95], axis=0)
    assert np.all(lower[:2] < q[0, :2]) and np.all(upper[:2] > q[1, :2])
    assert reg.bounds_y_[0] < np.quantile(y, 0.05) < np.quantile(y, 0.95)
    assert np.quantile(y, 0.95) < reg.bounds_y_[1]
    np.testing.assert_allclose(reg.offset_X_, (lower + upper) / 2)


def test_private_bounds_fit_well_at_large_n_epsilon():
    """n * eps per column = 6000 * 0.2 / 3 = 400: the model is close to OLS."""
    X, y = _data()
    reg = _private(epsilon=2.0).fit(X, y)
    ols = LinearRegression().fit(X, y)
    mse = np.mean((reg.predict(X) - y) ** 2)
    assert mse < 1.2 * np.mean((ols.predict(X) - y) ** 2)
    np.testing.assert_allclose(reg.coef_[[0, 2]], ols.coef_[[0, 2]], rtol=0.2)


def test_infinite_epsilon_is_least_squares_on_the_clipped_rows():
    X, y = _data()
    reg = _private(epsilon=np.inf).fit(X, y)
    lo, hi = reg.bounds_
    ylo, yhi = reg.bounds_y_
    ols = LinearRegression().fit(np.clip(X, lo, hi), np.clip(y, ylo, yhi))
    np.testing.assert_allclose(reg.coef_, ols.coef_, rtol=1e-6)
    np.testing.assert_allclose(reg.intercept_, ols.intercept_, rtol=1e-6)


def test_pandas_schema_is_free():
    X, y = _data()
    df = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "flag": X[:, 2].astype(bool)})
    with track_budget() as acc:
        reg = FMLinearRegression(
            epsilon=1.0,
            bounds_X="private",
            bounds_y=(-5.0, 10.0),
            public_bounds={"a": (0.0, 100.0)},
            random_state=0,
        ).fit(df, y)
    assert reg.bounds_[0][1:].tolist()[1] == 0.0 and reg.bounds_[1][2] == 1.0
    assert (reg.bounds_[0][0], reg.bounds_[1][0]) == (0.0, 100.0)
    assert reg.bounds_y_ == (-5.0, 10.0)
    assert acc.spends[0] == ("FMLinearRegression.bounds", PrivacyBudget(0.1, 0.0))


def test_classifier_with_private_bounds():
    X, y = _data()
    labels = (y > np.median(y)).astype(int)
    with track_budget() as acc:
        clf = FMLogisticRegression(
            epsilon=2.0,
            bounds_X="private",
            public_bounds={2: (0, 1)},
            classes=[0, 1],
            refinement="newton",
            random_state=0,
        ).fit(X, labels)
    assert clf.privacy_spent_ == PrivacyBudget(2.0, 0.0)
    assert [s for _, s in acc.spends] == [
        PrivacyBudget(0.2, 0.0),
        PrivacyBudget(1.8, 0.0),
    ]
    assert clf.score(X, labels) > 0.75
    # the Taylor round's model is mapped back to the user's units too
    z = X @ clf.taylor_coef_ + clf.taylor_intercept_
    assert np.mean((z > 0) == labels) > 0.75


def test_warns_when_the_budget_per_column_is_small():
    X, y = _data(n=300)
    with pytest.warns(PrivateBoundsWarning, match="per column"):
        _private(epsilon=1.0).fit(X, y)


def test_same_seed_same_model_and_input_unchanged():
    X, y = _data()
    X0, y0 = X.copy(), y.copy()
    a = _private(random_state=3).fit(X, y)
    b = _private(random_state=3).fit(X, y)
    c = _private(random_state=4).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"data_norm": 1.0}, "data_norm"),
        ({"bounds_X": (0, 1), "bounds_y": (0, 1)}, "public_bounds"),
        ({"public_bounds": {"nope": (0, 1)}}, "'nope'"),
    ],
)
def test_bad_combinations(kwargs, match):
    X, y = _data(n=500)
    with pytest.raises(ValueError, match=match), warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivateBoundsWarning)
        _private(**kwargs).fit(X, y)


@pytest.mark.parametrize("step", ["fit_chunks", "partial_fit", "statistics"])
def test_steps_without_all_rows_refuse_private_bounds(step):
    X, y = _data(n=200)
    reg = _private()
    with pytest.raises(ValueError, match="private"):
        if step == "fit_chunks":
            reg.fit_chunks([(X, y)])
        else:
            getattr(reg, step)(X, y)


# ------------------------------------------------------- empirical Bayes solve
def test_empirical_bayes_without_noise_is_least_squares():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=(200, 3)), np.ones(200)])
    y = X @ [1.0, -2.0, 0.5, 3.0] + rng.normal(size=200)
    A, b = X.T @ X, -2 * X.T @ y
    w = empirical_bayes_solve(A, b, noise_std=0.0, noise_std_b=0.0, fit_intercept=True)
    np.testing.assert_allclose(w, np.linalg.solve(A, X.T @ y), rtol=1e-9)


def test_empirical_bayes_drops_the_features_when_noise_swamps_them():
    """Noise 100x the statistics: the features' coefficients are shrunk to ~0
    and the intercept stays the mean of the labels up to its own noise (the
    plain solve of the noisy quadratic loses even the mean)."""
    rng = np.random.default_rng(1)
    n = 2000
    X = np.column_stack([rng.uniform(-1, 1, (n, 4)), np.ones(n)])
    y = X @ [0.3, 0.0, 0.0, 0.0, 0.5] + 0.1 * rng.normal(size=n)
    A, b = X.T @ X, -2 * X.T @ y
    sd = 100.0 * np.abs(A[:4, :4]).max()
    sd_b = 0.01 * np.abs(b).max()
    E = rng.normal(0, sd, (5, 5))
    E = np.triu(E) + np.triu(E, 1).T
    E[-1, -1] = 0.0  # the intercept's diagonal is exact
    A_hat, b_hat = A + E, b + rng.normal(0, sd_b, 5)
    w = empirical_bayes_solve(
        A_hat, b_hat, noise_std=sd, noise_std_b=sd_b, fit_intercept=True
    )
    plain = np.linalg.solve(A_hat, -0.5 * b_hat)
    assert abs(plain[-1] - y.mean()) > 0.2  # the noise is real
    assert np.abs(w[:4]).max() < 0.1
    assert w[-1] == pytest.approx(y.mean(), abs=5 * 0.5 * sd_b / n)


def test_ridge_is_the_default_and_eb_an_option():
    X, y = _data(n=2000)
    kw = {"epsilon": 1.0, "bounds_X": [(0, 0, 0), (100, 1e5, 1)]}
    kw.update(bounds_y=(-5, 10), random_state=0)
    eb = FMLinearRegression(postprocessing="eb", **kw).fit(X, y)
    ridge = FMLinearRegression(**kw).fit(X, y)
    assert FMLinearRegression().postprocessing == "ridge"
    assert not np.allclose(eb.coef_, ridge.coef_)
    with pytest.raises(ValueError):
        FMLogisticRegression(postprocessing="eb").fit(X, (y > 3).astype(int))
