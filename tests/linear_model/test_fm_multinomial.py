"""Multinomial (softmax) FM logistic regression: one release for C classes."""

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from skdp._fm import DataDomain, make_mechanism, sensitivity
from skdp._fm.multinomial import (
    multinomial_n_released,
    multinomial_sensitivity,
    release_multinomial,
)
from skdp.linear_model import FMLogisticRegression
from skdp.utils import audit_mechanism
from tests.linear_model._domain_points import extreme_points


def _data(n=600, d=4, C=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d))
    centres = rng.uniform(0, 1, (C, d))
    y = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    return X, np.array(["a", "b", "c", "d", "e"])[:C][y]


# ------------------------------------------------------------------ objective
def test_statistics_are_the_softmax_taylor_coefficients():
    """g(t) = sum_i softmax-loss(t W0): g'(0) and g''(0) from the statistics."""
    X, y = _data()
    classes = np.unique(y)
    C = classes.size
    est = FMLogisticRegression(bounds_X=(0, 1), classes=classes)
    stats = est.statistics(X, y)
    G, B = 8 * stats.A, stats.b  # A = G / 8, B of shape (p, C - 1)
    assert B.shape == (5, C - 1)
    # the statistics are taken in the centred coordinates mapped to [-1, 1],
    # with the intercept column 1
    Xa = np.hstack([(X - 0.5) / 0.5, np.full((len(X), 1), 1.0)])
    rng = np.random.default_rng(1)
    W0 = rng.normal(size=(5, C - 1))
    onehot = (y[:, None] == classes[None]).astype(float)

    def g(t):
        Z = np.hstack([Xa @ (t * W0), np.zeros((len(X), 1))])  # w_C = 0
        return float(np.sum(logsumexp(Z, axis=1) - (Z * onehot).sum(1)))

    h = 1e-4
    grad = (g(h) - g(-h)) / (2 * h)
    hess = (g(h) - 2 * g(0) + g(-h)) / h**2
    K = np.eye(C - 1) - 1.0 / C
    assert grad == pytest.approx(np.trace(B.T @ W0), rel=1e-6)
    assert hess == pytest.approx(np.trace(W0.T @ G @ W0 @ K) / C, rel=1e-4)


def test_eps_inf_predictions_equal_one_vs_rest_taylor():
    # the multinomial Taylor solution is C (LS(y_c) - LS(y_C)): the same argmax
    # as the C binary Taylor fits (4 LS(y_c) - 2)
    X, y = _data(C=4)
    classes = np.unique(y)
    multi = FMLogisticRegression(epsilon=np.inf, bounds_X=(0, 1), classes=classes)
    multi.fit(X, y)
    scores = np.column_stack(
        [
            FMLogisticRegression(epsilon=np.inf, bounds_X=(0, 1), classes=[0, 1])
            .fit(X, (y == c).astype(int))
            .decision_function(X)
            for c in classes
        ]
    )
    np.testing.assert_array_equal(multi.predict(X), classes[scores.argmax(1)])
    # and the logits are C / 4 times the binary ones, up to a common shift
    z = multi.decision_function(X)
    diff = z - (multi.classes_.size / 4) * scores
    np.testing.assert_allclose(diff - diff[:, :1], 0, atol=1e-8)


# ---------------------------------------------------------------- sensitivity
DOMAINS = [
    DataDomain(3, data_norm=1.0),
    DataDomain(3, lower=-1, upper=1),
    DataDomain(3, lower=[-1, 0, -2], upper=[1, 2, 0.5], fit_intercept=True),
    DataDomain(3, data_norm=2.0, fit_intercept=True, intercept_scaling=2.0),
    DataDomain(4, data_norm=1.0, max_nonzero=2, fit_intercept=True),
]


@pytest.mark.parametrize("dom", DOMAINS)
def test_two_classes_is_the_binary_sensitivity(dom):
    for c in (0.3, 1.0, 4.0):
        multi = multinomial_sensitivity(dom, 2, linear_weight=c)
        binary = sensitivity("logistic_taylor", dom, linear_weight=c)
        assert multi.l1 == pytest.approx(binary.l1, rel=1e-12)
        assert multi.l2 == pytest.approx(binary.l2, rel=1e-12)


@pytest.mark.parametrize("C", [3, 5, 10])
@pytest.mark.parametrize("d", [1, 4])
def test_linear_sensitivity_closed_form_on_the_ball(C, d):
    R, c = 1.5, 0.7
    dom = DataDomain(d, data_norm=R)
    lin = multinomial_sensitivity(dom, C, linear_weight=c, quadratic=False)
    assert lin.l1 == pytest.approx(2 * c * math.sqrt(d) * R * (2 * C - 3) / C)
    assert lin.l2 == pytest.approx(2 * c * R * math.sqrt(C * C - C - 1) / C)
    # attained: x' = -x, the same label (not the last class)
    x = np.full(d, R / math.sqrt(d))
    beta = 1.0 / C - np.eye(C)[0][: C - 1]
    diff = c * np.outer(2 * x, beta)
    assert np.abs(diff).sum() == pytest.approx(lin.l1)
    assert np.linalg.norm(diff) == pytest.approx(lin.l2)
    # the joint L1 over all classes stays below 4 c sqrt(d) R for every C
    assert lin.l1 < 4 * c * math.sqrt(d) * R


@pytest.mark.parametrize("dom", DOMAINS)
@pytest.mark.parametrize("C", [3, 4, 7])
def test_sensitivity_bounds_every_pair_of_records(dom, C):
    """Brute force over records (corners, interior, sphere) and all labels."""
    rng = np.random.default_rng(2)
    c = 0.7
    sens = multinomial_sensitivity(dom, C, linear_weight=c)
    lin = multinomial_sensitivity(dom, C, linear_weight=c, quadratic=False)
    p = dom.n_coef
    iu = np.triu_indices(p)
    vecs, lins = [], []
    for x in extreme_points(dom, rng, 120):
        xa = np.append(x, dom.intercept_scaling) if dom.fit_intercept else x
        quad = np.outer(xa, xa)[iu] / 8
        if dom.fit_intercept:
            quad[-1] = 0.0  # s^2 / 8 per record: the same for every record
        for label in range(C):
            beta = 1.0 / C - np.eye(C)[label][: C - 1]
            linear = c * np.outer(xa, beta).ravel()
            vecs.append(np.concatenate([quad, linear]))
            lins.append(linear)
    for V, bound in ((np.array(vecs), sens), (np.array(lins), lin)):
        D = V[:, None, :] - V[None, :, :]
        assert np.abs(D).sum(-1).max() <= bound.l1 * (1 + 1e-9)
        assert np.sqrt((D**2).sum(-1)).max() <= bound.l2 * (1 + 1e-9)
    assert multinomial_n_released(dom, C) == p * (p + 1) // 2 + p * (C - 1)


def test_multinomial_is_cheaper_than_one_vs_rest_at_a_split_budget():
    # one release at eps vs C releases at eps / C: per class noise scale
    dom = DataDomain(
        10, lower=-0.5, upper=0.5, fit_intercept=True, intercept_scaling=0.5
    )
    for C in (3, 10):
        multi = multinomial_sensitivity(dom, C).l1
        ovr = sensitivity("logistic_taylor", dom).l1 * C  # eps / C each
        assert multi < ovr


# ---------------------------------------------------------------------- audit
def _vector_release(dom, C, mech, c):
    """The release of the first linear coefficient pair, vectorized like the core."""

    def run(data, n, rng):
        X, Y = data
        beta = 1.0 / C - Y[:, : C - 1]
        B = X.T @ beta  # (1, C - 1), d = 1, no intercept
        mech.sample_noise(n, rng)  # noise_A first (one triu entry), as the core
        noise_b = np.asarray(mech.sample_noise(n * (C - 1), rng)).reshape(n, C - 1)
        lin = c * B[0] + noise_b
        # the optimal linear test for the worst pair: signs of the difference
        return lin @ np.array([-1.0] + [1.0] * (C - 2))

    return run


@pytest.mark.parametrize("mechanism, delta", [("laplace", 0.0), ("gaussian", 1e-3)])
def test_privacy_audit_of_the_linear_release(mechanism, delta):
    """Worst-case neighbours: the last record is x = +1 or x = -1, class 0."""
    eps, C, c = 1.0, 3, 1.0
    dom = DataDomain(1, data_norm=1.0)
    sens = multinomial_sensitivity(dom, C, linear_weight=c, quadratic=False)
    mech = make_mechanism(eps, delta, sens, multinomial_n_released(dom, C), mechanism)
    base_X, base_Y = np.full((20, 1), 0.5), np.eye(C)[np.arange(20) % C]
    label = np.eye(C)[[0]]
    data_a = (np.vstack([base_X, [[1.0]]]), np.vstack([base_Y, label]))
    data_b = (np.vstack([base_X, [[-1.0]]]), np.vstack([base_Y, label]))
    run = _vector_release(dom, C, mech, c)
    result = audit_mechanism(
        run, data_a, data_b, n_samples=200_000, delta=delta, random_state=0
    )
    assert result.epsilon_lower_bound <= eps
    # power: a mechanism calibrated for 4 eps is refuted
    weak = make_mechanism(
        4 * eps, delta, sens, multinomial_n_released(dom, C), mechanism
    )
    broken = audit_mechanism(
        _vector_release(dom, C, weak, c),
        data_a,
        data_b,
        n_samples=200_000,
        delta=delta,
        random_state=0,
    )
    assert broken.epsilon_lower_bound > eps


def test_release_draws_in_the_documented_order():
    dom = DataDomain(2, data_norm=1.0, fit_intercept=True)
    C, c = 3, 0.5
    A = np.eye(3)
    B = np.arange(6.0).reshape(3, 2)
    noisy = release_multinomial(
        A,
        B,
        dom,
        C,
        epsilon=1.0,
        delta=1e-5,
        mechanism="gaussian",
        linear_weight=c,
        random_state=7,
    )
    sens = multinomial_sensitivity(dom, C, linear_weight=c)
    mech = make_mechanism(1.0, 1e-5, sens, multinomial_n_released(dom, C), "gaussian")
    rng = np.random.default_rng(7)
    nA = mech.sample_noise(6, rng)
    nB = np.asarray(mech.sample_noise(6, rng)).reshape(3, 2)
    assert noisy.A[0, 1] == pytest.approx(nA[1])
    assert noisy.A[2, 2] == 1.0  # the intercept's diagonal is public
    np.testing.assert_allclose(noisy.b, (c * B + nB) / c)
    assert noisy.sensitivity == sens


# ------------------------------------------------------------------ estimator
def test_estimator_multiclass_basics():
    X, y = _data(C=4)
    kw = dict(epsilon=2.0, bounds_X=(0, 1), classes=np.unique(y), random_state=0)
    clf = FMLogisticRegression(**kw).fit(X, y)
    assert clf.coef_.shape == (4, 4) and clf.intercept_.shape == (4,)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_allclose(np.log(proba), clf.predict_log_proba(X))
    assert set(clf.predict(X)) <= set(clf.classes_)
    assert clf.privacy_spent_.epsilon == 2.0  # one release
    again = FMLogisticRegression(**kw).fit(X, y)
    np.testing.assert_array_equal(again.coef_, clf.coef_)
    other = FMLogisticRegression(**{**kw, "random_state": 1}).fit(X, y)
    assert not np.array_equal(other.coef_, clf.coef_)
    # statistics of two blocks, merged: bit for bit the fit
    est = FMLogisticRegression(**kw)
    stats = est.statistics(X[:200], y[:200]) + est.statistics(X[200:], y[200:])
    merged = est.fit_statistics(stats)
    np.testing.assert_array_equal(merged.coef_, clf.coef_)
    np.testing.assert_array_equal(merged.intercept_, clf.intercept_)


def test_binary_path_is_unchanged_and_undeclared_classes_still_warn():
    from skdp.exceptions import PrivacyLeakWarning

    X, y = _data(C=2)
    clf = FMLogisticRegression(epsilon=1.0, bounds_X=(0, 1), random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        clf.fit(X, y)
    assert clf.coef_.shape == (4,)
    X, y = _data(C=3)
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        clf.fit(X, y)
    assert clf.coef_.shape == (3, 4)
