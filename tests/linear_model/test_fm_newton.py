"""FMLogisticRegression(refinement="newton"): a second release, one Newton step."""

import math

import numpy as np
import pytest
from scipy.special import expit

from skdp._fm import DataDomain, make_mechanism, n_released
from skdp._fm.newton import (
    WEIGHT_MAX,
    newton_release,
    newton_sensitivity,
    newton_statistics,
)
from skdp.accounting import track_budget
from skdp.exceptions import BudgetExceededError
from skdp.linear_model import FMLogisticRegression
from skdp.utils import audit_mechanism
from tests.linear_model._domain_points import extreme_points


def _data(n=2000, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(1, 3, (n, d))
    z = (X - 2) @ np.array([2.0, -1.5, 1.0][:d]) + 0.3
    y = (rng.random(n) < expit(z)).astype(int)
    return X, y


# ---------------------------------------------------------------- sensitivity
@pytest.mark.parametrize("d", [2, 3, 10])
@pytest.mark.parametrize("c", [1.0, 0.3])
def test_sensitivity_closed_form_on_the_ball(d, c):
    """||x|| <= R, no intercept, d >= 2: the Taylor bounds with |p - y| <= 1."""
    R = 2.0
    dom = DataDomain(d, data_norm=R)
    sens = newton_sensitivity(dom, linear_weight=c)
    assert sens.l1 == pytest.approx((d + 1) * R**2 / 8 + 2 * c * math.sqrt(d) * R)
    assert sens.l2 == pytest.approx(math.sqrt(R**4 / 32 + 4 * c**2 * R**2))


def test_sensitivity_closed_form_with_intercept_on_a_box():
    """Box [-1, 1]^d, s = 1: every group at its range or norm bound."""
    d, s = 2, 1.0
    dom = DataDomain(d, lower=-1, upper=1, fit_intercept=True, intercept_scaling=s)
    sens = newton_sensitivity(dom)
    # feature-feature ranges: x_j^2 in [0, 1] and x_1 x_2 in [-1, 1] with the
    # weight in [0, 1/8]: widths 1/8, 1/8, 2/8 -> L1 1/2 (the norm bound,
    # 2 (1/8) (1 + 1 + 1), is 3/4); L2 sqrt(6)/8 both ways
    quad = (0.5, math.sqrt(6) / 8)
    # feature-intercept a s x_j, a in [0, s/8]: ranges [-1/8, 1/8] -> 2/8 each
    cross = (2 * 2 / 8, math.sqrt(2) * 2 / 8)
    diag = (s * s / 8, s * s / 8)
    lin = (2 * d, 2 * math.sqrt(d))
    lin_b = (2 * s, 2 * s)
    parts = [quad, cross, diag, lin, lin_b]
    assert sens.l1 == pytest.approx(sum(p[0] for p in parts))
    assert sens.l2 == pytest.approx(math.sqrt(sum(p[1] ** 2 for p in parts)))


DOMAINS = [
    DataDomain(3, data_norm=1.0),
    DataDomain(3, data_norm=1.5, fit_intercept=True, intercept_scaling=1.5),
    DataDomain(3, lower=[-1, 0, -2], upper=[1, 2, 0.5], fit_intercept=True),
    DataDomain(3, lower=[0.5, 1, 0], upper=[1, 2, 3], fit_intercept=True),
    DataDomain(4, lower=-1, upper=1, data_norm=1.2, max_nonzero=2),
]


@pytest.mark.parametrize("dom", DOMAINS)
def test_sensitivity_bounds_every_pair_of_records(dom):
    """Brute force: records x with weights a in [0, 1/8] and r in [-1, 1]."""
    rng = np.random.default_rng(3)
    c = 0.7
    sens = newton_sensitivity(dom, linear_weight=c)
    iu = np.triu_indices(dom.n_coef)
    vecs = []
    for x in extreme_points(dom, rng, 60, cycle_kinds=True):
        xa = np.append(x, dom.intercept_scaling) if dom.fit_intercept else x
        for a in (0.0, WEIGHT_MAX, rng.uniform(0, WEIGHT_MAX)):
            for r in (-1.0, 1.0, rng.uniform(-1, 1)):
                vecs.append(np.concatenate([a * np.outer(xa, xa)[iu], c * r * xa]))
    V = np.array(vecs)
    D = V[:, None, :] - V[None, :, :]
    l1 = np.abs(D).sum(-1).max()
    l2 = np.sqrt((D**2).sum(-1)).max()
    assert l1 <= sens.l1 * (1 + 1e-9)
    assert l2 <= sens.l2 * (1 + 1e-9)
    # and not loose by much: the corners reach most of it
    assert l1 >= 0.6 * sens.l1 and l2 >= 0.6 * sens.l2


def test_statistics_are_half_the_hessian_and_the_gradient():
    X, y = _data(300)
    dom = DataDomain(3, lower=1, upper=3, fit_intercept=True, intercept_scaling=2.0)
    w1 = np.array([0.5, -0.2, 0.1, 0.3])
    A, b = newton_statistics(X, y, w1, dom)
    Z = np.column_stack([X, np.full(len(X), 2.0)])
    p = expit(Z @ w1)
    H = Z.T @ (Z * (p * (1 - p))[:, None])
    np.testing.assert_allclose(A, H / 2, rtol=1e-12)
    np.testing.assert_allclose(b, Z.T @ (p - y), rtol=1e-12)


# ---------------------------------------------------------------------- audit
def _linear_release(mech, c):
    """The second release's linear coordinate (d = 1, w1 = 0), vectorized."""

    def run(data, n, rng):
        X, y = data
        A, b = newton_statistics(X, y, np.zeros(1), DataDomain(1, data_norm=1.0))
        mech.sample_noise(n, rng)  # noise_A first (one triu entry), as the release
        return c * b[0] + np.asarray(mech.sample_noise(n, rng))

    return run


@pytest.mark.parametrize("mechanism, delta", [("laplace", 0.0), ("gaussian", 1e-3)])
def test_privacy_audit_of_the_second_release(mechanism, delta):
    """Neighbours differ in the last record, x = +1 or -1 (class 0, w1 = 0)."""
    eps, c = 1.0, 1.0
    dom = DataDomain(1, data_norm=1.0)
    sens = newton_sensitivity(dom, linear_weight=c)
    base_X, base_y = np.full((20, 1), 0.5), np.arange(20) % 2
    data_a = (np.vstack([base_X, [[1.0]]]), np.append(base_y, 0))
    data_b = (np.vstack([base_X, [[-1.0]]]), np.append(base_y, 0))
    mech = make_mechanism(eps, delta, sens, n_released(dom), mechanism)
    result = audit_mechanism(
        _linear_release(mech, c),
        data_a,
        data_b,
        n_samples=200_000,
        delta=delta,
        random_state=0,
    )
    assert result.epsilon_lower_bound <= eps
    # power: the pair moves the linear entry by 1 of the 2.125 sensitivity, so
    # a mechanism calibrated for 4 eps leaks about 1.9 eps and is refuted
    weak = make_mechanism(4 * eps, delta, sens, n_released(dom), mechanism)
    broken = audit_mechanism(
        _linear_release(weak, c),
        data_a,
        data_b,
        n_samples=200_000,
        delta=delta,
        random_state=0,
    )
    assert broken.epsilon_lower_bound > eps


def test_release_draws_in_the_documented_order():
    dom = DataDomain(2, data_norm=1.0, fit_intercept=True)
    A = np.arange(9.0).reshape(3, 3)
    A = A + A.T
    b = np.array([1.0, -2.0, 0.5])
    c = 0.5
    noisy = newton_release(
        A,
        b,
        dom,
        epsilon=1.0,
        delta=1e-5,
        mechanism="gaussian",
        linear_weight=c,
        random_state=7,
    )
    mech = make_mechanism(1.0, 1e-5, noisy.sensitivity, n_released(dom), "gaussian")
    rng = np.random.default_rng(7)
    noise_A = mech.sample_noise(6, rng)
    noise_b = mech.sample_noise(3, rng)
    iu = np.triu_indices(3)
    np.testing.assert_allclose(noisy.A[iu], A[iu] + noise_A)
    # the intercept's diagonal depends on the data here: it is noised
    assert noisy.A[2, 2] != A[2, 2]
    np.testing.assert_allclose(noisy.b, (c * b + noise_b) / c)


# ------------------------------------------------------------------ estimator
def test_eps_inf_is_one_exact_newton_step_from_the_taylor_solution():
    X, y = _data()
    kw = dict(epsilon=np.inf, bounds_X=(1, 3), classes=[0, 1])
    taylor = FMLogisticRegression(**kw).fit(X, y)
    clf = FMLogisticRegression(refinement="newton", **kw).fit(X, y)
    w1 = np.append(taylor.coef_, taylor.intercept_)
    np.testing.assert_allclose(np.append(clf.taylor_coef_, clf.taylor_intercept_), w1)
    Z = np.column_stack([X, np.ones(len(X))])
    p = expit(Z @ w1)
    H = Z.T @ (Z * (p * (1 - p))[:, None])
    w2 = w1 - np.linalg.solve(H, Z.T @ (p - y))
    np.testing.assert_allclose(np.append(clf.coef_, clf.intercept_), w2, rtol=1e-9)

    # closer to the logistic MLE: a lower logistic loss than the Taylor fit
    def loss(model):
        z = X @ model.coef_ + model.intercept_
        return np.mean(np.logaddexp(0, z) - y * z)

    assert loss(clf) < loss(taylor)


@pytest.mark.parametrize("mechanism, delta", [("laplace", 0.0), ("gaussian", 1e-6)])
def test_the_total_is_spent_once_and_tracked(mechanism, delta):
    X, y = _data()
    clf = FMLogisticRegression(
        epsilon=2.0,
        delta=delta,
        mechanism=mechanism,
        bounds_X=(1, 3),
        classes=[0, 1],
        refinement="newton",
        refinement_budget_share=0.3,
        random_state=0,
    )
    with track_budget() as acc:
        clf.fit(X, y)
    assert clf.privacy_spent_.epsilon == 2.0
    assert clf.privacy_spent_.delta == delta
    assert acc.total.epsilon == pytest.approx(2.0)
    assert acc.total.delta == pytest.approx(delta)
    assert clf.refinement_noise_std_ > 0


def test_a_refused_cap_releases_nothing():
    X, y = _data()
    clf = FMLogisticRegression(
        epsilon=1.0, bounds_X=(1, 3), classes=[0, 1], refinement="newton"
    )
    # the first round alone (0.5) would fit under the cap; the total does not
    with pytest.raises(BudgetExceededError), track_budget(epsilon=0.6):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_")
    assert not hasattr(clf, "taylor_coef_")


def test_refinement_is_refused_where_it_cannot_be_honoured():
    X, y = _data()
    clf = FMLogisticRegression(
        epsilon=1.0, bounds_X=(1, 3), classes=[0, 1], refinement="newton"
    )
    with track_budget() as acc:
        with pytest.raises(ValueError, match="needs fit"):
            clf.fit_statistics(clf.statistics(X, y))
        with pytest.raises(ValueError, match="needs fit"):
            clf.partial_fit(X, y)
        with pytest.raises(ValueError, match="needs fit"):
            clf.fit_chunks([(X[:1000], y[:1000]), (X[1000:], y[1000:])])
        three = FMLogisticRegression(
            bounds_X=(1, 3), classes=[0, 1, 2], refinement="newton"
        )
        with pytest.raises(ValueError, match="two classes only"):
            three.fit(X, y)
    assert acc.total.epsilon == 0
    with pytest.raises(ValueError, match="refinement"):
        FMLogisticRegression(refinement="newtn").fit(X, y)
    with pytest.raises(ValueError, match="refinement_budget_share"):
        FMLogisticRegression(refinement_budget_share=1.0).fit(X, y)
