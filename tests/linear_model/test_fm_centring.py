"""Centring the declared domain: a free reparametrization that shrinks the noise."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from skdp._fm import (
    DataDomain,
    clip_to_domain,
    sensitivity,
    solve_noisy_quadratic,
    sufficient_statistics,
)
from skdp.linear_model import FMLinearRegression, FMLogisticRegression

LOWER, UPPER = np.array([1.0, -3.0, 10.0]), np.array([3.0, -1.0, 50.0])
Y_BOUNDS = (100.0, 140.0)


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(LOWER - 0.5, UPPER + 0.5, (n, 3))  # some rows outside: clipped
    y = 120 + X @ [2.0, -1.0, 0.2] + rng.normal(0, 3, n)
    return X, y


def _uncentred_fit(X, y, objective, y_bounds=None):
    """The exact minimizer on the uncentred domain, from the core functions."""
    dom = DataDomain(
        3,
        lower=LOWER,
        upper=UPPER,
        y_bounds=y_bounds,
        fit_intercept=True,
        intercept_scaling=50.0,
    )
    Xc, yc = clip_to_domain(X, y, objective, dom)
    A, b = sufficient_statistics(
        Xc, yc, objective, fit_intercept=True, intercept_scaling=50.0
    )
    w = solve_noisy_quadratic(A, b)
    return w[:-1], w[-1] * 50.0, dom


def test_centred_regression_is_identical_at_eps_inf():
    X, y = _data()
    reg = FMLinearRegression(
        epsilon=np.inf, bounds_X=(LOWER, UPPER), bounds_y=Y_BOUNDS
    ).fit(X, y)
    np.testing.assert_allclose(reg.offset_X_, [2.0, -2.0, 30.0])
    assert reg.offset_y_ == 120.0
    coef, intercept, _ = _uncentred_fit(X, y, "squared", Y_BOUNDS)
    np.testing.assert_allclose(reg.coef_, coef, rtol=1e-9)
    assert reg.intercept_ == pytest.approx(intercept, rel=1e-9)
    # and both are OLS on the clipped data, in the user's units
    Xc = np.clip(X, LOWER, UPPER)
    ols = LinearRegression().fit(Xc, np.clip(y, *Y_BOUNDS))
    np.testing.assert_allclose(reg.coef_, ols.coef_, rtol=1e-9)
    np.testing.assert_allclose(reg.predict(Xc), ols.predict(Xc), rtol=1e-9)
    # the reported domain is the declared one
    np.testing.assert_array_equal(reg.bounds_[0], LOWER)
    np.testing.assert_array_equal(reg.bounds_[1], UPPER)
    assert reg.bounds_y_ == Y_BOUNDS


def test_centred_logistic_is_identical_at_eps_inf():
    X, y = _data()
    labels = (y > np.median(y)).astype(int)
    clf = FMLogisticRegression(
        epsilon=np.inf, bounds_X=(LOWER, UPPER), classes=[0, 1]
    ).fit(X, labels)
    coef, intercept, _ = _uncentred_fit(X, labels.astype(float), "logistic_taylor")
    np.testing.assert_allclose(clf.coef_, coef, rtol=1e-8)
    assert clf.intercept_ == pytest.approx(intercept, rel=1e-8)


@pytest.mark.parametrize("objective", ["squared", "logistic_taylor"])
def test_centring_strictly_shrinks_the_sensitivity(objective):
    X, y = _data()
    kw = dict(epsilon=1.0, bounds_X=(LOWER, UPPER), linear_weight=1.0, random_state=0)
    if objective == "squared":
        est = FMLinearRegression(bounds_y=Y_BOUNDS, **kw).fit(X, y)
    else:
        est = FMLogisticRegression(classes=[0, 1], **kw).fit(
            X, (y > np.median(y)).astype(int)
        )
    _, _, uncentred = _uncentred_fit(X, y, objective, Y_BOUNDS)
    before = sensitivity(objective, uncentred, linear_weight=1.0)
    assert est.sensitivity_.l1 < before.l1
    assert est.sensitivity_.l2 < before.l2
    # the same numbers as the core on the centred domain mapped to [-1, 1]
    centred = DataDomain(
        3,
        lower=-np.ones(3),
        upper=np.ones(3),
        y_bounds=(-20.0, 20.0) if objective == "squared" else None,
        fit_intercept=True,
        intercept_scaling=1.0,
    )
    after = sensitivity(objective, centred, linear_weight=1.0)
    assert est.sensitivity_.l1 == pytest.approx(after.l1)
    assert est.sensitivity_.l2 == pytest.approx(after.l2)


def test_symmetric_domain_is_not_shifted():
    X, y = _data()
    reg = FMLinearRegression(
        epsilon=1.0, bounds_X=(-60, 60), bounds_y=(-200, 200), random_state=0
    ).fit(X, y)
    assert reg.offset_X_ is None and reg.offset_y_ == 0.0


def test_norm_domain_keeps_rows_but_centres_labels():
    X, y = _data()
    reg = FMLinearRegression(
        epsilon=1.0, data_norm=60.0, bounds_y=Y_BOUNDS, random_state=0
    ).fit(X, y)
    assert reg.offset_X_ is None and reg.offset_y_ == 120.0
    # without an intercept nothing is shifted (it would change the model class)
    reg = FMLinearRegression(
        epsilon=1.0,
        bounds_X=(LOWER, UPPER),
        bounds_y=Y_BOUNDS,
        fit_intercept=False,
        random_state=0,
    ).fit(X, y)
    assert reg.offset_X_ is None and reg.offset_y_ == 0.0


def test_centred_statistics_merge_to_the_fit():
    X, y = _data()
    reg = FMLinearRegression(
        epsilon=1.0, bounds_X=(LOWER, UPPER), bounds_y=Y_BOUNDS, random_state=4
    )
    stats = reg.statistics(X[:150], y[:150]) + reg.statistics(X[150:], y[150:])
    a = reg.fit_statistics(stats)
    coef, intercept = a.coef_.copy(), a.intercept_
    b = reg.fit(X, y)
    np.testing.assert_array_equal(b.coef_, coef)
    assert b.intercept_ == intercept


def test_undeclared_domain_warning_says_how_to_declare():
    from skdp.exceptions import PrivacyLeakWarning

    X, y = _data()
    with pytest.warns(PrivacyLeakWarning, match=r"bounds_X=\(lower, upper\)"):
        FMLinearRegression(epsilon=1.0, bounds_y=Y_BOUNDS).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match=r"bounds_y=\(lower, upper\)"):
        FMLinearRegression(epsilon=1.0, data_norm=60.0).fit(X, y)


def _sparse_data(n=3000, d=12, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = np.zeros((n, d))
    for i in range(n):
        X[i, rng.choice(d, k, replace=False)] = rng.uniform(0, 1, k)
    y = (X @ rng.normal(size=d) > 0).astype(int)
    return X, y


def test_box_with_sparsity_keeps_the_cheaper_valid_description():
    # a box [0, 1] with max_nonzero=3 out of 12: the sparse description is far
    # cheaper in L1 (Laplace), the centred box alone cheaper in L2 (Gaussian)
    from skdp._fm.sensitivity import release_cost

    X, y = _sparse_data()
    kw = dict(bounds_X=(0, 1), max_nonzero=3, classes=[0, 1], random_state=0)
    lap = FMLogisticRegression(epsilon=1.0, **kw).fit(X, y)
    gau = FMLogisticRegression(epsilon=1.0, mechanism="gaussian", delta=1e-8, **kw)
    gau.fit(X, y)
    assert lap.offset_X_ is None
    np.testing.assert_array_equal(gau.offset_X_, np.full(12, 0.5))
    sparse = DataDomain(
        12, lower=0, upper=1, max_nonzero=3, fit_intercept=True, intercept_scaling=1.0
    )
    centred = DataDomain(
        12,
        lower=-0.5,
        upper=0.5,
        fit_intercept=True,
        intercept_scaling=0.5,
        x_offset=0.5,
    )
    for mech, chosen in (("laplace", sparse), ("gaussian", centred)):
        other = centred if chosen is sparse else sparse
        cost = release_cost("logistic_taylor", chosen, mech)
        assert cost < release_cost("logistic_taylor", other, mech)
    # data inside both descriptions: the same model at eps = inf
    exact = [
        FMLogisticRegression(epsilon=np.inf, mechanism=m, delta=1e-8, **kw)
        .fit(X, y)
        .coef_
        for m in ("laplace", "gaussian")
    ]
    np.testing.assert_allclose(exact[0], exact[1], rtol=1e-8, atol=1e-12)
