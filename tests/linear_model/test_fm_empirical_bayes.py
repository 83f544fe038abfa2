"""The empirical-Bayes solve of FMLinearRegression (postprocessing="eb")."""

import math

import numpy as np
import pytest

from skdp._fm.empirical_bayes import (
    EB_RIDGE_FLOOR,
    _GPriorModel,
    empirical_bayes_solve,
)
from skdp.linear_model import FMLinearRegression, FMLogisticRegression


def _statistics(n=2000, seed=0, coef=(0.3, 0.0, 0.0, 0.0), shift=(0.0,) * 4):
    """Exact ``A = Z^T Z``, ``b = -2 Z^T y`` with an intercept column of 1."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, len(coef))) + np.asarray(shift)
    Z = np.column_stack([X, np.ones(n)])
    y = X @ np.asarray(coef) + 0.5 + 0.1 * rng.normal(size=n)
    return Z, y, Z.T @ Z, -2.0 * Z.T @ y


def _noisy(A, b, sd, sd_b, seed):
    rng = np.random.default_rng(seed)
    p = A.shape[0]
    E = rng.normal(0, sd, (p, p))
    E = np.triu(E) + np.triu(E, 1).T
    E[-1, -1] = 0.0  # the intercept's diagonal n s^2 is exact
    return A + E, b + rng.normal(0, sd_b, p)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_without_noise_is_least_squares(fit_intercept):
    Z, y, A, b = _statistics()
    if not fit_intercept:
        A, b = A[:-1, :-1], b[:-1]
    w = empirical_bayes_solve(
        A, b, noise_std=0.0, noise_std_b=0.0, fit_intercept=fit_intercept
    )
    np.testing.assert_allclose(w, np.linalg.solve(A, -0.5 * b), rtol=1e-9)


def _dense_model(model, g):
    """``K(g)``, the covariance of ``r`` under the priors, built densely."""
    q = model.q
    C = model.V @ np.diag(model.c) @ model.V.T
    u = np.append(model.a, model.a_ii)
    K = model.v0 * np.outer(u, u)
    K[:q, :q] += g * C
    K += np.diag(model.noise(g))
    return K


@pytest.mark.parametrize("g", [0.0, 1e-3, 0.7, 40.0])
def test_likelihood_and_posterior_match_the_dense_formulas(g):
    """The O(p) determinant-lemma / Sherman-Morrison algebra against the
    dense Gaussian: log N(r; 0, K) and Cov(theta, r) K^{-1} r."""
    Z, y, A, b = _statistics(n=500, coef=(0.3, -0.2, 0.1, 0.0), shift=(2, 0, 0, 1))
    A_hat, b_hat = _noisy(A, b, 5.0, 8.0, seed=3)
    model = _GPriorModel(A_hat, b_hat, 5.0, 8.0, True, intercept_prior=2.0)
    K = _dense_model(model, g)
    r = -0.5 * b_hat
    sign, logdet = np.linalg.slogdet(K)
    assert sign > 0
    dense_ll = -0.5 * (logdet + r @ np.linalg.solve(K, r))
    assert model.log_likelihood(g) == pytest.approx(dense_ll, rel=1e-10, abs=1e-8)
    # Cov(w_f, r_f) = g V V^T (the g-prior's limit on clipped directions),
    # Cov(m, r) = v0 (a, a_ii), a the calibrated intercept column
    x = np.linalg.solve(K, r)
    q = model.q
    w_f = g * (model.V @ (model.V.T @ x[:q]))
    m = model.v0 * (np.append(model.a, model.a_ii) @ x)
    expected = np.append(w_f, m - model.a @ w_f / model.a_ii)
    np.testing.assert_allclose(model.posterior_mean(g), expected, rtol=1e-8, atol=1e-12)


def test_the_feature_ridge_never_falls_below_the_floor():
    """Small noise on a well-conditioned problem: the likelihood alone would
    pick a huge g (a ridge far below the noise's spectral norm); the cap keeps
    s^2(g) / g >= EB_RIDGE_FLOOR * 2 sqrt(p) sigma_A."""
    Z, y, A, b = _statistics(n=20000, coef=(0.3, -0.2, 0.1, 0.4))
    sd, sd_b = 2.0, 2.0
    A_hat, b_hat = _noisy(A, b, sd, sd_b, seed=4)
    model = _GPriorModel(A_hat, b_hat, sd, sd_b, True, intercept_prior=1.0)
    g = model.signal_strength()
    assert g > 0
    floor = EB_RIDGE_FLOOR * 2.0 * math.sqrt(model.p) * sd
    assert model.noise(g)[0] / g >= floor * (1 - 1e-12)
    # and the floor binds here: without it the likelihood goes higher
    assert model.signal_strength(ridge_floor=0.0) > g


def test_swamped_features_leave_the_mean():
    """Noise 100x the statistics on A: the features' coefficients are shrunk
    to ~0 and the intercept is the mean of the labels up to its own noise (the
    plain solve of the noisy quadratic loses even the mean)."""
    n = 2000
    Z, y, A, b = _statistics(n=n, seed=1)
    sd = 100.0 * np.abs(A[:4, :4]).max()
    sd_b = 0.01 * np.abs(b).max()
    A_hat, b_hat = _noisy(A, b, sd, sd_b, seed=2)
    w = empirical_bayes_solve(
        A_hat, b_hat, noise_std=sd, noise_std_b=sd_b, fit_intercept=True
    )
    plain = np.linalg.solve(A_hat, -0.5 * b_hat)
    assert abs(plain[-1] - y.mean()) > 0.2  # the noise is real
    assert np.abs(w[:4]).max() < 0.1
    # r_i = sum(y) has noise sd_b / 2; the mean from it alone has sd_b / (2 n)
    assert w[-1] == pytest.approx(y.mean(), abs=5 * 0.5 * sd_b / n)


def test_the_mean_uses_every_released_entry():
    """Features whose mean is far from 0 carry the labels' mean in r_f = a m:
    with the noise on r_i alone 20x that on the mean from r_f, the mean-only
    model (g = 0) recovers the mean far better than r_i / a_ii does.

    Rows x = 3 + u (u uniform on [-1, 1]), labels pure noise around 0.5:
    r_j = sum x_j y ~ 3 n 0.5 for each of the 4 features."""
    n = 4000
    Z, y, A, b = _statistics(n=n, seed=5, coef=(0, 0, 0, 0), shift=(3, 3, 3, 3))
    sd_b = 0.2 * n  # r = -b / 2 gets noise of sd 0.1 n on every entry
    errors, plain = [], []
    for seed in range(40):
        A_hat, b_hat = _noisy(A, b, 1e-6, sd_b, seed)
        w = empirical_bayes_solve(
            A_hat, b_hat, noise_std=1e-6, noise_std_b=sd_b, fit_intercept=True
        )
        level = Z.mean(axis=0) @ w  # the prediction at the features' mean
        errors.append(level - y.mean())
        plain.append(-0.5 * b_hat[-1] / n - y.mean())
    # r_i / n alone: sd 0.1; pooled with 4 entries of r_f, each sd 0.1 / 3 in
    # units of the mean: sd about 0.1 / sqrt(1 + 4 * 9) = 0.016
    assert np.std(plain) > 0.07
    assert np.sqrt(np.mean(np.square(errors))) < 0.03


def test_average_is_the_default_the_mean_of_three_solves_of_one_release():
    assert FMLinearRegression().postprocessing == "average"
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (400, 4))
    y = np.clip(X @ [0.5, -0.3, 0.2, 0.0] + 0.1 * rng.normal(size=400), -1, 1)
    kw = {"epsilon": 0.5, "bounds_X": (-1, 1), "bounds_y": (-1, 1), "random_state": 4}
    fits = {
        p: FMLinearRegression(postprocessing=p, **kw).fit(X, y)
        for p in ("average", "eb", "ridge", "trim")
    }
    # the same release (same random_state), three solves, their mean
    parts = [fits[p] for p in ("eb", "ridge", "trim")]
    np.testing.assert_allclose(
        fits["average"].coef_, np.mean([f.coef_ for f in parts], axis=0), atol=1e-12
    )
    assert fits["average"].intercept_ == pytest.approx(
        np.mean([f.intercept_ for f in parts]), abs=1e-12
    )
    assert not np.allclose(parts[0].coef_, parts[1].coef_)  # a real mean
    for post in ("average", "eb"):
        with pytest.raises(ValueError, match="postprocessing"):
            FMLogisticRegression(postprocessing=post, classes=[0, 1]).fit(
                X, (y > 0).astype(int)
            )


def test_eb_is_least_squares_only():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (500, 3))
    y = X @ [1.0, -1.0, 0.5] + 0.1 * rng.normal(size=500)
    kw = {"epsilon": 1.0, "bounds_X": (0, 1), "bounds_y": (-2, 3), "random_state": 0}
    eb = FMLinearRegression(postprocessing="eb", **kw).fit(X, y)
    ridge = FMLinearRegression(postprocessing="ridge", **kw).fit(X, y)
    assert not np.allclose(eb.coef_, ridge.coef_)
    with pytest.raises(ValueError):
        FMLogisticRegression(postprocessing="eb").fit(X, (y > 0.2).astype(int))
