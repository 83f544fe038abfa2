"""Issue 35 item 1: declared per-feature ranges on raw columns give the model
of the same ranges mapped to [-1, 1] by hand, up to the float grid of the
map back (coef / h, intercept - coef @ m), for FM (central and vertical), OP
and PrivateLogisticRegression, and in every form the ranges can be written."""

import numpy as np
import pandas as pd
import pytest

from skdp.linear_model import (
    FMLinearRegression,
    FMLogisticRegression,
    OPLogisticRegression,
    PrivateLogisticRegression,
)
from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor

LO = np.array([0.0, 10.0, -100.0, 1.0])
HI = np.array([1.0, 50.0, 300.0, 3.0])
MID, HALF = (LO + HI) / 2, (HI - LO) / 2


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    X = LO + (HI - LO) * rng.random((n, LO.size))
    Z = (X - MID) / HALF  # the map by hand
    y = Z @ np.array([1.0, 0.5, -0.7, 0.2]) + rng.normal(0, 0.3, n)
    return X, Z, y, (y > 0).astype(int)


def _same_model(raw, mapped):
    """The raw fit's model is the hand-mapped fit's, mapped back."""
    coef = np.asarray(mapped.coef_) / HALF
    intercept = np.asarray(mapped.intercept_) - coef @ MID
    np.testing.assert_allclose(raw.coef_, coef, rtol=1e-12, atol=0)
    np.testing.assert_allclose(raw.intercept_, intercept, rtol=1e-12, atol=1e-12)
    assert np.any(np.asarray(raw.coef_) != 0)  # a real model, not all shrunk


REGRESSORS = [
    (FMLinearRegression, {"mechanism": "laplace"}),
    (FMLinearRegression, {"mechanism": "gaussian", "delta": 1e-6}),
    (FMLinearRegression, {"postprocessing": "ridge"}),
    (VerticalFMRegressor, {"partition": [[0, 2], [1, 3]]}),
    (
        VerticalFMRegressor,
        {"partition": [[0, 2], [1, 3]], "noise_generation": "dealer"},
    ),
]
CLASSIFIERS = [
    (FMLogisticRegression, {}),
    (FMLogisticRegression, {"refinement": "newton"}),
    (OPLogisticRegression, {}),
    (OPLogisticRegression, {"delta": 1e-6}),
    (PrivateLogisticRegression, {}),
    (PrivateLogisticRegression, {"method": "fm"}),
    (VerticalFMClassifier, {"partition": [[0, 2], [1, 3]]}),
]


@pytest.mark.parametrize("cls, kw", REGRESSORS)
def test_regressors_map_declared_ranges_to_unit_box(cls, kw):
    X, Z, y, _ = _data()
    common = dict(epsilon=2.0, bounds_y=(-5, 5), random_state=0, **kw)
    raw = cls(bounds_X=(LO, HI), **common).fit(X, y)
    mapped = cls(bounds_X=(-1, 1), **common).fit(Z, y)
    _same_model(raw, mapped)
    np.testing.assert_allclose(raw.predict(X), mapped.predict(Z), rtol=1e-9)
    # reported in the user's units: the declared box, its midpoints and scale
    np.testing.assert_array_equal(raw.bounds_[0], LO)
    np.testing.assert_array_equal(raw.bounds_[1], HI)
    np.testing.assert_array_equal(raw.offset_X_, MID)
    np.testing.assert_array_equal(raw.scale_X_, HALF)


@pytest.mark.parametrize("cls, kw", CLASSIFIERS)
def test_classifiers_map_declared_ranges_to_unit_box(cls, kw):
    X, Z, _, labels = _data()
    common = dict(epsilon=2.0, classes=[0, 1], random_state=0, **kw)
    raw = cls(bounds_X=(LO, HI), **common).fit(X, labels)
    mapped = cls(bounds_X=(-1, 1), **common).fit(Z, labels)
    _same_model(raw, mapped)
    np.testing.assert_array_equal(raw.predict(X), mapped.predict(Z))


def test_every_form_of_the_ranges_gives_the_same_model():
    X, _, y, _ = _data()
    names = ["a", "b", "c", "d"]
    df = pd.DataFrame(X, columns=names)
    common = dict(epsilon=2.0, bounds_y=(-5, 5), random_state=0)
    ref = FMLinearRegression(bounds_X=(LO, HI), **common).fit(X, y)
    pairs = list(zip(LO, HI))
    for bounds, data in (
        (pairs, X),
        ({j: p for j, p in enumerate(pairs)}, X),
        (dict(zip(names, pairs)), df),
    ):
        got = FMLinearRegression(bounds_X=bounds, **common).fit(data, y)
        np.testing.assert_array_equal(got.coef_, ref.coef_)


def test_steps_statistics_chunks_and_partial_fit_agree_with_fit():
    """The scaled rows' statistics are exact sums: any split, the same model."""
    X, _, y, _ = _data()
    est = FMLinearRegression(
        bounds_X=(LO, HI), bounds_y=(-5, 5), epsilon=2.0, random_state=0
    )
    ref = est.fit(X, y).coef_.copy()
    stats = est.statistics(X[:1000], y[:1000]) + est.statistics(X[1000:], y[1000:])
    np.testing.assert_array_equal(est.fit_statistics(stats).coef_, ref)
    chunks = [(X[:1500], y[:1500]), (X[1500:], y[1500:])]
    np.testing.assert_array_equal(est.fit_chunks(chunks).coef_, ref)


def test_no_scale_with_a_norm_bound_or_at_infinite_epsilon_exact_ols():
    X, Z, y, _ = _data()
    # a norm is in the user's units: the box is not scaled then
    reg = FMLinearRegression(
        bounds_X=(-300, 300), data_norm=400.0, bounds_y=(-5, 5), random_state=0
    ).fit(X, y)
    assert reg.scale_X_ is None
    # eps = inf: least squares on the (clipped) rows, in the user's units
    from sklearn.linear_model import LinearRegression

    reg = FMLinearRegression(bounds_X=(LO, HI), bounds_y=(-5, 5), epsilon=np.inf).fit(
        X, y
    )
    ols = LinearRegression().fit(X, y)
    np.testing.assert_allclose(reg.coef_, ols.coef_, rtol=1e-8)
    np.testing.assert_allclose(reg.intercept_, ols.intercept_, rtol=1e-8)
