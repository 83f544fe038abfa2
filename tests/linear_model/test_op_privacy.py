"""Objective perturbation's privacy, checked exactly: brute-forced neighbours,
the output densities by change of variables, the exact calibration, the noise
actually drawn, and an empirical audit."""

import math

import numpy as np
import pytest
from scipy.special import expit, softmax

from skdp.accounting import ObjectivePerturbationEvent
from skdp.linear_model import OPLogisticRegression
from skdp.linear_model._objective_perturbation import _sum_zero_basis
from skdp.linear_model._op_calibration import (
    OUTPUT_EPSILON_SHARE,
    OPProblem,
    _gaussian_event,
    calibrate,
    choose_lambda,
    risk_proxy,
)
from skdp.utils import audit_mechanism

RNG = np.random.default_rng(0)


def _ball(rng, n, p, R):
    """Rows in the R-ball: half on the sphere, half inside."""
    X = rng.standard_normal((n, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X * R * np.where(rng.random((n, 1)) < 0.5, 1.0, rng.random((n, 1)))


# ------------------------------------------------------- per-record pieces
def _binary_grad(theta, x, y):
    return (expit(x @ theta) - y) * x


def _binary_hess(theta, X):
    w = expit(X @ theta)
    return (X.T * (w * (1 - w))) @ X


def _multi_grad(W, x, y):
    """Gradient of logsumexp(W x) - (W x)_y with respect to W (C x p)."""
    pi = softmax(W @ x)
    pi[y] -= 1.0
    return np.outer(pi, x)


def _multi_hess(W, X, Q):
    """Hessian of the summed softmax loss in the sum-zero coordinates Z (W = Q Z)."""
    C, p = W.shape
    H = np.zeros(((C - 1) * p, (C - 1) * p))
    for x in X:
        pi = softmax(W @ x)
        S = Q.T @ (np.diag(pi) - np.outer(pi, pi)) @ Q
        H += np.kron(S, np.outer(x, x))
    return H


def _logdet(M):
    sign, value = np.linalg.slogdet(M)
    assert sign > 0
    return value


# ------------------------------------------------------------ sensitivities
def test_gradient_sensitivity_binary_by_brute_force():
    R, p = 1.5, 3
    delta = OPProblem(10, p, 2, R, 1.0).sensitivity
    assert delta == 2 * R
    worst = 0.0
    for _ in range(1500):
        x, x2 = _ball(RNG, 2, p, R)
        if RNG.random() < 0.5:  # near-opposite rows: the worst case
            x2 = -x + 0.05 * RNG.standard_normal(p)
            x2 *= R / max(np.linalg.norm(x2), R)
        theta = RNG.standard_normal(p) * 10 ** RNG.uniform(-1, 3)
        y, y2 = RNG.integers(2, size=2)
        worst = max(
            worst,
            np.linalg.norm(_binary_grad(theta, x, y) - _binary_grad(theta, x2, y2)),
        )
    assert worst <= delta
    assert worst >= 0.97 * delta  # approached: the bound is tight


@pytest.mark.parametrize("C", [3, 5])
def test_gradient_sensitivity_multinomial_by_brute_force(C):
    R, p = 1.0, 3
    delta = OPProblem(10, p, C, R, 1.0).sensitivity
    assert delta == pytest.approx(2 * math.sqrt(2) * R)
    worst = 0.0
    for _ in range(2000):
        x, x2 = _ball(RNG, 2, p, R)
        if RNG.random() < 0.5:  # near-opposite rows: the worst case
            x2 = -x + 0.05 * RNG.standard_normal(p)
            x2 *= R / max(np.linalg.norm(x2), R)
        W = RNG.standard_normal((C, p)) * 10 ** RNG.uniform(-1, 3)
        y, y2 = RNG.integers(C, size=2)
        diff = _multi_grad(W, x, y) - _multi_grad(W, x2, y2)
        worst = max(worst, np.linalg.norm(diff))
    assert worst <= delta + 1e-12
    assert worst >= 0.95 * delta


def test_jacobian_bound_binary_by_brute_force():
    R, p, lam = 1.0, 3, 0.3
    eps_j = OPProblem(10, p, 2, R, 1.0).jacobian_epsilon(lam)
    assert eps_j == pytest.approx(math.log1p(R * R / (4 * lam)))
    worst = 0.0
    for _ in range(1500):
        X0 = _ball(RNG, RNG.integers(0, 5), p, R)
        x, x2 = _ball(RNG, 2, p, R)
        theta = RNG.standard_normal(p) * 10 ** RNG.uniform(-2, 1)
        M = _binary_hess(theta, X0) + lam * np.eye(p) if len(X0) else lam * np.eye(p)
        ratio = _logdet(M + _binary_hess(theta, x[None])) - _logdet(
            M + _binary_hess(theta, x2[None])
        )
        worst = max(worst, abs(ratio))
    assert worst <= eps_j
    assert worst >= 0.8 * eps_j


@pytest.mark.parametrize("C", [3, 4])
def test_jacobian_bound_multinomial_by_brute_force(C):
    R, p, lam = 1.0, 2, 0.2
    eps_j = OPProblem(10, p, C, R, 1.0).jacobian_epsilon(lam)
    Q = _sum_zero_basis(C)
    k = (C - 1) * p
    worst = 0.0
    for _ in range(600):
        X0 = _ball(RNG, RNG.integers(0, 4), p, R)
        x, x2 = _ball(RNG, 2, p, R)
        W = Q @ RNG.standard_normal((C - 1, p)) * 10 ** RNG.uniform(-2, 1)
        M = _multi_hess(W, X0, Q) + lam * np.eye(k)
        ratio = _logdet(M + _multi_hess(W, x[None], Q)) - _logdet(
            M + _multi_hess(W, x2[None], Q)
        )
        worst = max(worst, abs(ratio))
    assert worst <= eps_j
    # equality: uniform probabilities (W = 0), no other rows, ||x|| = R, x' = 0
    x = np.zeros(p)
    x[0] = R
    exact = _logdet(lam * np.eye(k) + _multi_hess(np.zeros((C, p)), x[None], Q))
    assert exact - k * math.log(lam) == pytest.approx(eps_j, rel=1e-12)


# ---------------------------------------------- output densities (pure eps)
def _binary_log_density(theta, X, y, lam, gamma):
    """log p_D(theta) up to the (common) constant: -gamma ||b_D(theta)|| +
    log det(H_D + lam I), b_D(theta) = -grad loss - lam theta."""
    grad = sum(_binary_grad(theta, x, t) for x, t in zip(X, y))
    b = -grad - lam * theta
    return -gamma * np.linalg.norm(b) + _logdet(
        _binary_hess(theta, X) + lam * np.eye(len(theta))
    )


def _multi_log_density(Z, X, y, lam, gamma, Q):
    W = Q @ Z
    grad = sum(Q.T @ _multi_grad(W, x, t) for x, t in zip(X, y))
    b = -grad - lam * Z
    k = Z.size
    return -gamma * np.linalg.norm(b) + _logdet(_multi_hess(W, X, Q) + lam * np.eye(k))


def _pure_calibration(n, p, C, R, eps):
    problem = OPProblem(n, p, C, R, 4.0 / R)
    cal = calibrate(problem, eps, 0.0)
    # the objective's share: epsilon minus the output perturbation's
    assert cal.jacobian_epsilon + cal.noise_rate * problem.sensitivity == pytest.approx(
        eps * (1 - OUTPUT_EPSILON_SHARE), rel=1e-12
    )
    return problem, cal


def _weighted_binary_log_density(theta, X, y, w, lam, gamma):
    """As :func:`_binary_log_density` for distinct rows with multiplicities."""
    s = expit(X @ theta)
    b = -((s - y) * w) @ X - lam * theta
    H = (X.T * (w * s * (1 - s))) @ X + lam * np.eye(len(theta))
    return -gamma * np.linalg.norm(b) + _logdet(H)


def test_pure_binary_log_density_ratio_within_epsilon():
    n, p, R, eps = 4, 2, 1.0, 1.0
    problem, cal = _pure_calibration(n, p, 2, R, eps)
    budget = eps * (1 - OUTPUT_EPSILON_SHARE)
    worst = 0.0
    for _ in range(150):  # random neighbours, random outputs
        X0 = _ball(RNG, n - 1, p, R)
        x, x2 = _ball(RNG, 2, p, R)
        y0 = RNG.integers(2, size=n - 1)
        y, y2 = RNG.integers(2, size=2)
        D = (np.vstack([X0, x]), np.append(y0, y))
        D2 = (np.vstack([X0, x2]), np.append(y0, y2))
        for _ in range(10):
            theta = RNG.standard_normal(p) * 10 ** RNG.uniform(-1, 2.5)
            ratio = _binary_log_density(theta, *D, cal.lam, cal.noise_rate) - (
                _binary_log_density(theta, *D2, cal.lam, cal.noise_rate)
            )
            worst = max(worst, abs(ratio))
    assert worst <= budget + 1e-9
    # a constructed near-worst case: x' nearly opposite to x (so both
    # gradients saturate for theta with a large component across them) and
    # many copies of -x pushing b against v = g_z - g_z'
    x = np.array([R, 0.0])
    x2 = np.array([-1.0, 0.05]) * R / math.hypot(1.0, 0.05)
    worst_built = 0.0
    for t in (5.0, 20.0, 40.0):
        for T in (200.0, 800.0):
            theta = np.array([t, T])
            D = (np.array([x, -x]), np.array([0, 1]), np.array([1.0, 1e4]))
            D2 = (np.array([x2, -x]), np.array([0, 1]), np.array([1.0, 1e4]))
            ratio = _weighted_binary_log_density(
                theta, *D, cal.lam, cal.noise_rate
            ) - _weighted_binary_log_density(theta, *D2, cal.lam, cal.noise_rate)
            worst_built = max(worst_built, abs(ratio))
    assert worst_built <= budget + 1e-9
    assert worst_built >= 0.75 * budget  # the bound is nearly reached


@pytest.mark.parametrize("C", [3])
def test_pure_multinomial_log_density_ratio_within_epsilon(C):
    n, p, R, eps = 3, 2, 1.0, 2.0
    problem, cal = _pure_calibration(n, p, C, R, eps)
    budget = eps * (1 - OUTPUT_EPSILON_SHARE)
    Q = _sum_zero_basis(C)
    worst = -np.inf
    for _ in range(80):
        X0 = _ball(RNG, n - 1, p, R)
        x, x2 = _ball(RNG, 2, p, R)
        if RNG.random() < 0.5:
            x2 = -x
        y0 = RNG.integers(C, size=n - 1)
        y, y2 = RNG.integers(C, size=2)
        D = (np.vstack([X0, x]), np.append(y0, y))
        D2 = (np.vstack([X0, x2]), np.append(y0, y2))
        for _ in range(20):
            Z = RNG.standard_normal((C - 1, p)) * 10 ** RNG.uniform(-1, 2.5)
            ratio = _multi_log_density(Z, *D, cal.lam, cal.noise_rate, Q) - (
                _multi_log_density(Z, *D2, cal.lam, cal.noise_rate, Q)
            )
            worst = max(worst, abs(ratio))
    assert worst <= budget + 1e-9
    assert worst >= 0.4 * budget


# ----------------------------------------- output densities (epsilon, delta)
def test_gaussian_hockey_stick_by_integration_stays_below_the_profile():
    """delta_true(eps) = int (p_D - e^eps p_D')_+ over a grid of theta in R^2,
    with the exact output densities (change of variables), for neighbours
    differing in one record; the profile must bound it for every eps."""
    R, lam, sigma = 1.0, 0.5, 0.6
    problem = OPProblem(3, 2, 2, R, 1.0)
    event = ObjectivePerturbationEvent(
        problem.jacobian_epsilon(lam), sigma / problem.sensitivity, 2, 2
    )
    X0 = np.array([[0.3, -0.2]])
    y0 = np.array([1])
    x, x2 = np.array([0.0, 1.0]), np.array([0.1, -0.99])
    grid = np.linspace(-6, 6, 601)
    T1, T2 = np.meshgrid(grid, grid, indexing="ij")
    thetas = np.column_stack([T1.ravel(), T2.ravel()])

    def log_density(X, y):
        m = thetas @ X.T  # (g, n)
        s = expit(m)
        grad = (s - y) @ X
        b = -grad - lam * thetas
        w = s * (1 - s)
        h11 = lam + w @ (X[:, 0] ** 2)
        h22 = lam + w @ (X[:, 1] ** 2)
        h12 = w @ (X[:, 0] * X[:, 1])
        det = h11 * h22 - h12 * h12
        return (
            -0.5 * np.sum(b * b, 1) / sigma**2
            + np.log(det)
            - np.log(2 * np.pi * sigma**2)
        )

    cell = (grid[1] - grid[0]) ** 2
    worst_ratio = 0.0
    for y, y2 in ((0, 1), (1, 1), (0, 0)):
        lp = log_density(np.vstack([X0, x]), np.append(y0, y))
        lq = log_density(np.vstack([X0, x2]), np.append(y0, y2))
        assert np.exp(lp).sum() * cell == pytest.approx(1.0, abs=1e-3)  # a density
        for eps in (0.0, 0.5, 1.0, 2.0):
            for a, b in ((lp, lq), (lq, lp)):
                true = np.sum(np.maximum(np.exp(a) - np.exp(eps + b), 0)) * cell
                bound = event.delta(eps)
                assert true <= bound + 1e-4
                worst_ratio = max(worst_ratio, true / bound)
    assert worst_ratio > 0.3  # the profile is not vacuous here


# ------------------------------------------------------- exact calibration
CALIBRATION_CASES = [
    (OPProblem(1000, 5, 2, 1.5, 2.0), 1.0, 1e-6),
    (OPProblem(30000, 48, 2, 3.5, 1.2), 0.5, 1e-9),
    (OPProblem(2000, 10, 5, 1.0, 4.0), 5.0, 1e-7),
]


@pytest.mark.parametrize("problem, eps, delta", CALIBRATION_CASES)
def test_gaussian_calibration_is_exact(problem, eps, delta):
    cal = calibrate(problem, eps, delta)
    assert cal.event.delta(eps) <= delta
    assert cal.event == _gaussian_event(problem, cal.lam, cal.noise_std)
    # 10% less noise or 10% less ridge (a larger Jacobian term) breaks delta
    assert _gaussian_event(problem, cal.lam, 0.9 * cal.noise_std).delta(eps) > delta
    assert _gaussian_event(problem, 0.9 * cal.lam, cal.noise_std).delta(eps) > delta
    # and 0.01% less noise already does: the calibration is tight
    assert _gaussian_event(problem, cal.lam, 0.9999 * cal.noise_std).delta(eps) > delta


@pytest.mark.parametrize("problem, eps, delta", CALIBRATION_CASES)
def test_pure_calibration_is_exact(problem, eps, delta):
    cal = calibrate(problem, eps, 0.0)
    out = cal.output_rate * cal.output_sensitivity
    total = cal.jacobian_epsilon + cal.noise_rate * problem.sensitivity + out
    assert total == pytest.approx(eps, rel=1e-12)
    assert (
        problem.jacobian_epsilon(0.9 * cal.lam)
        + (cal.noise_rate * problem.sensitivity + out)
        > eps
    )
    assert cal.jacobian_epsilon + 1.1 * cal.noise_rate * problem.sensitivity + out > eps


@pytest.mark.parametrize("problem, eps, delta", CALIBRATION_CASES)
@pytest.mark.parametrize("pure", [False, True])
def test_released_ridge_is_the_chosen_minimizer(problem, eps, delta, pure):
    """The ridge a release uses is the data-free minimizer of the risk proxy:
    10% less or more ridge is worse (a lambda changed after the choice, even
    with the noise recalibrated to it, is caught here)."""
    delta = 0.0 if pure else delta
    cal = calibrate(problem, eps, delta)
    assert cal.lam == choose_lambda(problem, eps, delta)
    best = risk_proxy(problem, eps, delta, cal.lam)
    for factor in (0.9, 1.1):
        try:
            assert risk_proxy(problem, eps, delta, factor * cal.lam) > best
        except ValueError:  # below the smallest feasible ridge
            assert factor < 1


# ------------------------------------ the noise the estimator actually draws
def _recovered_noise(est, X, y):
    """b = -(grad loss(theta) + lam theta) from a released model (2 classes, no
    intercept, data_norm domain: the rows are X itself)."""
    theta = est.coef_
    return -((expit(X @ theta) - y) @ X + est.alpha_ * theta)


@pytest.mark.parametrize("delta", [1e-6, 0.0])
def test_released_model_carries_the_calibrated_noise(delta):
    """The released minimizer determines b; over many seeds b has the
    calibrated law (its variance, or its norm's mean, within 5 s.e.) and mean
    0, which fails if the solver used another lambda or the noise another
    scale (the power of each check is asserted: a 10% change moves the
    statistic by more than 8 s.e., 5 for the tolerance and 3 to spare)."""
    rng = np.random.default_rng(1)
    X = _ball(rng, 300, 40, 1.0)  # k = 40: the norm's s.e. is ~1/sqrt(k)
    y = (X[:, 0] > 0).astype(int)
    kw = dict(
        epsilon=8.0,
        delta=delta,
        data_norm=1.0,
        fit_intercept=False,
        classes=[0, 1],
        alpha=200.0,  # a strong ridge: lambda theta is large against the noise
    )
    fits = [OPLogisticRegression(random_state=s, **kw).fit(X, y) for s in range(300)]
    B = np.array([_recovered_noise(f, X, y) for f in fits])
    thetas = np.array([f.coef_ for f in fits])
    est = fits[0]
    k = B.shape[1]
    se_mean = B.std(0) / math.sqrt(len(B))
    assert np.all(np.abs(B.mean(0)) <= 5 * se_mean)
    # a solver with 0.9 lambda would shift the recovered b by 0.1 lambda theta
    shift = np.abs(0.1 * est.alpha_ * thetas.mean(0))
    assert np.max(shift / se_mean) > 10
    if delta > 0:
        ratio = B.var(0, ddof=1).mean() / est.noise_std_**2
        se = math.sqrt(2.0 / (B.size - k))
        assert abs(ratio - 1) <= 5 * se
        assert 0.19 > 8 * se  # 10% more or less sigma is caught
    else:
        norms = np.linalg.norm(B, axis=1)  # Gamma(k, 1 / gamma)
        expected = k / est.noise_rate_
        se = math.sqrt(k) / est.noise_rate_ / math.sqrt(len(norms))
        assert abs(norms.mean() - expected) <= 5 * se
        assert 0.09 * expected > 8 * se  # 10% more or less gamma is caught


# --------------------------------------------------------------- the audit
def _replica(X, lam, draw):
    """Vectorized release of the 1-d coefficient, as the core computes it:
    the root of sum_i (sigmoid(x_i t) - y_i) x_i + lam t + b (increasing in t)."""

    def run(y, n, rng):
        b = draw(n, rng)
        lo, hi = np.full(n, -1e3), np.full(n, 1e3)
        for _ in range(64):
            t = 0.5 * (lo + hi)
            g = (expit(np.outer(t, X)) - y) @ X + lam * t + b
            lo, hi = np.where(g < 0, t, lo), np.where(g < 0, hi, t)
        return 0.5 * (lo + hi)

    return run


def test_replica_is_what_the_estimator_releases():
    X = np.array([0.5, -1.0, 1.0])
    y = np.array([1, 0, 0])
    est = OPLogisticRegression(
        epsilon=1.0,
        delta=1e-6,
        data_norm=1.0,
        fit_intercept=False,
        classes=[0, 1],
        random_state=3,
    ).fit(X[:, None], y)
    b = _recovered_noise(est, X[:, None], y)
    theta = _replica(X, est.alpha_, lambda n, rng: np.full(n, b[0]))(y, 1, None)
    assert theta[0] == pytest.approx(est.coef_[0], abs=1e-9)


@pytest.mark.parametrize(
    "delta, noise", [(0.0, "auto"), (1e-4, "gaussian"), (1e-4, "auto")]
)
def test_privacy_audit_on_worst_case_neighbours(delta, noise):
    """D and D' differ in the last record (label 0 -> 1 at |x| = 1): the
    gradient moves by |x| = 1 everywhere, the audit's best case in 1-d.
    ``noise="auto"`` under delta > 0 draws the pure noise in 1-d (the smaller
    risk), audited here as the release it is."""
    eps = 1.0
    X = np.array([0.5, -1.0, 1.0])
    y_d, y_d2 = np.array([1, 0, 0]), np.array([1, 0, 1])
    est = OPLogisticRegression(
        epsilon=eps,
        delta=delta,
        noise=noise,
        data_norm=1.0,
        fit_intercept=False,
        classes=[0, 1],
    ).fit(X[:, None], y_d)
    assert (est.noise_std_ > 0) == (noise == "gaussian")
    if est.noise_std_ > 0:

        def draw(n, rng):
            return rng.normal(0, est.noise_std_, n)

        def weak(n, rng):
            return rng.normal(0, est.noise_std_ / 4, n)
    else:

        def draw(n, rng):
            return rng.laplace(0, 1 / est.noise_rate_, n)  # K-norm in 1-d

        def weak(n, rng):
            return rng.laplace(0, 1 / (4 * est.noise_rate_), n)

    result = audit_mechanism(
        _replica(X, est.alpha_, draw), y_d, y_d2, n_samples=50_000, delta=delta
    )
    assert result.epsilon_lower_bound <= eps
    broken = audit_mechanism(
        _replica(X, est.alpha_, weak), y_d, y_d2, n_samples=50_000, delta=delta
    )
    assert broken.epsilon_lower_bound > eps
