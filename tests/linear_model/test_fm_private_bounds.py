"""FM estimators with private bounds (bounds_X / bounds_y = "private")."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from skdp.accounting import PrivacyBudget, track_budget
from skdp.linear_model import FMLinearRegression, FMLogisticRegression
from skdp.preprocessing import PrivateBoundsWarning, private_bounds


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
        ("FMLinearRegression.bounds", PrivacyBudget(0.4, 0.0)),
        ("FMLinearRegression", PrivacyBudget(1.6, 1e-8)),
    ]
    assert reg.privacy_spent_ == PrivacyBudget(2.0, 1e-8)
    assert reg.bounds_privacy_spent_ == PrivacyBudget(0.4, 0.0)


def test_the_label_range_gets_half_of_the_bounds_budget(monkeypatch):
    import skdp._fm.estimator as estimator

    seen = []

    def spy(*args, **kwargs):
        result = private_bounds(*args, **kwargs)
        seen.append(result)
        return result

    monkeypatch.setattr(estimator, "private_bounds", spy)
    X, y = _data()
    _private().fit(X, y)
    # columns (X0, X1, X2 public, y): the label as much as both features
    np.testing.assert_allclose(seen[0].epsilon_per_column, [0.1, 0.1, 0.0, 0.2])


def test_predictions_use_the_released_box():
    """The model is fitted on rows clipped to the released ranges: a test row
    beyond them is predicted at the box's edge, not extrapolated."""
    X, y = _data()
    reg = _private().fit(X, y)
    lo, hi = reg.bounds_
    far = np.array([[hi[0] + 1e6, lo[1] - 1e6, 1.0]])
    edge = np.array([[hi[0], lo[1], 1.0]])
    np.testing.assert_allclose(reg.predict(far), reg.predict(edge))
    declared = FMLinearRegression(
        epsilon=2.0, bounds_X=(lo, hi), bounds_y=reg.bounds_y_, random_state=0
    ).fit(X, y)
    assert declared.predict(far)[0] != pytest.approx(declared.predict(edge)[0])


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
    """n * eps = 6000 * 0.4 = 2400 for the ranges (600 per feature, 1200 for
    the label): the model is close to OLS."""
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
    assert acc.spends[0] == ("FMLinearRegression.bounds", PrivacyBudget(0.2, 0.0))


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
        PrivacyBudget(0.4, 0.0),
        PrivacyBudget(1.6, 0.0),
    ]
    assert clf.score(X, labels) > 0.75
    # the Taylor round's model is mapped back to the user's units too
    z = X @ clf.taylor_coef_ + clf.taylor_intercept_
    assert np.mean((z > 0) == labels) > 0.75


def test_refuses_when_the_budget_per_column_is_small():
    """n * eps per range 300 * 1.0 * 0.2 / 4 = 15 (the label 30): refused
    before anything is spent, saying what to declare; no model is left."""
    X, y = _data(n=300)
    reg = _private(epsilon=1.0)
    with track_budget() as acc, pytest.raises(ValueError) as err:
        reg.fit(X, y)
    assert acc.spends == []
    assert not hasattr(reg, "coef_")
    message = str(err.value)
    assert "column 0 gets 15" in message and "bounds_X / bounds_y" in message


def test_the_issues_small_table_is_refused_not_answered_absurdly():
    """Issue 35: a 309-row table, labels between 25 and 346, eps = 1 and
    private ranges gave constant predictions of -2.9e8. Now: a refusal that
    names the label's budget, before any spend."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(309, 10)) * 5 + 20
    y = np.clip(150 + X @ rng.normal(size=10) + rng.normal(0, 40, 309), 25, 346)
    with track_budget() as acc, pytest.raises(ValueError, match="per column"):
        FMLinearRegression(
            epsilon=1.0, bounds_X="private", bounds_y="private", random_state=0
        ).fit(X, y)
    assert acc.spends == []
    # the label alone (features declared) gets 309 * 0.2 = 62: refused too
    with pytest.raises(ValueError, match="the label gets 61.8"):
        FMLinearRegression(
            epsilon=1.0, bounds_X=(0, 40), bounds_y="private", random_state=0
        ).fit(X, y)


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


# ---------------------------------------------------- tighten_bounds=True
def _tightened(**kw):
    params = {
        "epsilon": 2.0,
        "bounds_X": ([0, 0, 0], [1000, 1e6, 1]),  # loose: from "documentation"
        "bounds_y": (-100.0, 100.0),
        "tighten_bounds": True,
        "public_bounds": {2: (0, 1)},
        "random_state": 0,
    }
    params.update(kw)
    return FMLinearRegression(**params)


def test_tighten_spends_a_release_of_its_own_inside_the_declared_box():
    X, y = _data()
    with track_budget() as acc:
        reg = _tightened(mechanism="gaussian", delta=1e-8).fit(X, y)
    assert acc.spends == [
        ("FMLinearRegression.bounds", PrivacyBudget(0.4, 0.0)),
        ("FMLinearRegression", PrivacyBudget(1.6, 1e-8)),
    ]
    lower, upper = reg.bounds_
    assert np.all(lower >= [0, 0, 0]) and np.all(upper <= [1000, 1e6, 1])
    assert (lower[2], upper[2]) == (0.0, 1.0)  # public: as declared
    # n * eps per range = 6000 * 0.4 / 3 = 800: tight around the data
    assert upper[0] < 150 and upper[1] < 1e5
    assert -100 <= reg.bounds_y_[0] and reg.bounds_y_[1] <= 100
    assert reg.bounds_y_[1] - reg.bounds_y_[0] < 50


def test_tighten_beats_loose_declared_ranges_at_large_n_epsilon():
    X, y = _data(n=20000)
    Xt, yt = _data(n=5000, seed=1)
    declared = _tightened(tighten_bounds=False, public_bounds=None)

    def mse(model):
        return float(np.mean((model.fit(X, y).predict(Xt) - yt) ** 2))

    # averaged over 5 seeds each: the loose box's noise is ~1,000 times larger
    tight = np.mean([mse(_tightened(random_state=s)) for s in range(5)])
    loose = np.mean([mse(declared.set_params(random_state=s)) for s in range(5)])
    assert tight < 0.5 * loose


def test_tighten_spends_nothing_where_no_range_could_be_tightened():
    """n * eps per range = 300 * 0.1 * 0.2 / 2 = 3, below 128: the declared box
    is kept, nothing is recorded for it, and the fit gets all of epsilon."""
    X, y = _data(n=300)
    with track_budget() as acc:
        reg = _tightened(
            epsilon=0.1, bounds_X=(0, 1e6), public_bounds={0: (0, 1e6), 2: (0, 1)}
        ).fit(X, y)
    assert acc.spends == [("FMLinearRegression", PrivacyBudget(0.1, 0.0))]
    assert reg.bounds_privacy_spent_ == PrivacyBudget(0.0, 0.0)
    assert reg.privacy_spent_ == PrivacyBudget(0.1, 0.0)
    assert reg.bounds_[1][1] == 1e6 and reg.bounds_y_ == (-100.0, 100.0)
    declared = FMLinearRegression(
        epsilon=0.1, bounds_X=(0, 1e6), bounds_y=(-100.0, 100.0), random_state=0
    )
    assert declared.fit(X, y).privacy_spent_ == reg.privacy_spent_
    # nothing drawn for the ranges either: the same noise, the same model
    np.testing.assert_allclose(reg.coef_, declared.coef_, rtol=1e-12)


def test_tighten_needs_declared_ranges_to_do_anything():
    X, y = _data(n=1000)  # the label's range gets n * eps = 200 >= 128
    with track_budget() as acc, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bounds_X undeclared: leak warning
        reg = FMLinearRegression(
            epsilon=1.0, tighten_bounds=True, bounds_y=(-100, 100), random_state=0
        ).fit(X, y)
    # only the label range is tightened; features inferred as without it
    assert [s[0] for s in acc.spends] == [
        "FMLinearRegression.bounds",
        "FMLinearRegression",
    ]
    assert reg.bounds_privacy_spent_ == PrivacyBudget(0.2, 0.0)


def test_tighten_classifier_and_refusals():
    X, y = _data()
    labels = (y > np.median(y)).astype(int)
    clf = FMLogisticRegression(
        epsilon=2.0,
        bounds_X=([0, 0, 0], [1000, 1e6, 1]),
        tighten_bounds=True,
        public_bounds={2: (0, 1)},
        classes=[0, 1],
        random_state=0,
    ).fit(X, labels)
    assert clf.bounds_[1][0] < 150 and clf.privacy_spent_ == PrivacyBudget(2.0, 0.0)
    assert clf.score(X, labels) > 0.7
    with pytest.raises(ValueError, match="tighten_bounds"):
        _tightened().fit_chunks([(X, y)])


# ------------------------------------------- predictions in the label range
def test_predictions_never_leave_the_released_label_range():
    """Issue 35: predictions clipped to bounds_y_ (released or declared), for
    rows far beyond the data too; inside the range they are the linear
    model's."""
    X, y = _data(n=3000)
    far = np.vstack([X[:50], X[:50] * 1e6, -X[:50] * 1e6])
    outside = []
    for reg in (
        _private(epsilon=1.0).fit(X, y),
        FMLinearRegression(
            epsilon=5.0, bounds_X=([0, 0, 0], [100, 3e4, 1]), bounds_y=(0, 6)
        ).fit(X, y),
    ):
        lo, hi = reg.bounds_y_
        pred = reg.predict(far)
        assert np.all((lo <= pred) & (pred <= hi))
        z = reg._linear_predict(far)
        inside = (lo <= z) & (z <= hi)
        np.testing.assert_array_equal(pred[inside], z[inside])
        outside.append(not inside.all())
    # the declared box does not clip rows: far rows' raw predictions leave it
    assert outside[1]


def test_vertical_predictions_never_leave_the_label_range():
    from skdp.vertical import VerticalFMRegressor

    X, y = _data(n=2000)
    reg = VerticalFMRegressor(
        epsilon=0.1,
        bounds_X=([0, 0, 0], [100, 1e5, 1]),
        bounds_y=(0, 6),
        partition=[[0], [1, 2]],
        random_state=0,
    ).fit(X, y)
    pred = reg.predict(np.vstack([X, X * 1e6]))
    assert np.all((0 <= pred) & (pred <= 6))
