"""Exact and statistical tests of the functional-mechanism core."""

import math
import warnings

import numpy as np
import pytest

from skdp._fm import (
    DEFAULT_RIDGE_FACTOR,
    DataDomain,
    add_noise,
    balanced_linear_weight,
    draw_noise,
    lattice_granularity,
    make_mechanism,
    n_released,
    objective_constants,
    prior_eigenvalue,
    release_noise_std,
    sensitivity,
    solve_noisy_quadratic,
    sufficient_statistics,
    symmetric_from_triu,
    triu_indices,
)
from skdp.exceptions import ReproducibleNoiseWarning
from skdp.utils import audit_mechanism
from tests.linear_model._domain_points import extreme_points


# ----------------------------------------------------------------- statistics
@pytest.mark.parametrize("objective", ["squared", "logistic_taylor"])
def test_statistics_are_the_objective_coefficients(objective):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(50, 3))
    y = rng.integers(0, 2, size=50).astype(float)
    A, b = sufficient_statistics(X, y, objective, fit_intercept=True)
    Xa = np.column_stack([X, np.ones(50)])
    kappa, beta = objective_constants(objective)
    w = rng.normal(size=4)
    if objective == "squared":
        direct = np.sum((y - Xa @ w) ** 2) - np.sum(y**2)
    else:  # Taylor expansion minus its constant n log 2
        z = Xa @ w
        direct = np.sum((0.5 - y) * z + z**2 / 8)
    assert w @ A @ w + b @ w == pytest.approx(direct)
    np.testing.assert_allclose(A, kappa * Xa.T @ Xa)


def test_statistics_of_chunks_add_up():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(30, 4)), rng.normal(size=30)
    whole = sufficient_statistics(X, y, "squared", fit_intercept=True)
    parts = [
        sufficient_statistics(X[s], y[s], "squared", fit_intercept=True)
        for s in (slice(0, 7), slice(7, 30))
    ]
    np.testing.assert_allclose(whole[0], parts[0][0] + parts[1][0])
    np.testing.assert_allclose(whole[1], parts[0][1] + parts[1][1])


def test_intercept_scaling_is_a_constant_column():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(20, 2)), rng.normal(size=20)
    A, b = sufficient_statistics(
        X, y, "squared", fit_intercept=True, intercept_scaling=3.0
    )
    A2, b2 = sufficient_statistics(np.column_stack([X, np.full(20, 3.0)]), y, "squared")
    np.testing.assert_allclose(A, A2)
    np.testing.assert_allclose(b, b2)


# ------------------------------------------------------ exact sensitivities
@pytest.mark.parametrize("d", [2, 3, 20])
def test_sensitivity_norm_domain_closed_form(d):
    dom = DataDomain(d, data_norm=1.0, y_bounds=(-1, 1))
    lin = sensitivity("squared", dom)
    assert lin.l1 == pytest.approx((d + 1) + 4 * math.sqrt(d))
    assert lin.l2 == pytest.approx(math.sqrt(2 + 16))
    log = sensitivity("logistic_taylor", dom)
    assert log.l1 == pytest.approx((d + 1) / 8 + math.sqrt(d))
    assert log.l2 == pytest.approx(math.sqrt(2 / 64 + 1))


def test_sensitivity_scales_with_norm_and_label_bound():
    dom = DataDomain(5, data_norm=2.0, y_bounds=(-3, 3))
    # quadratic part scales with R^2, linear with B R
    assert sensitivity("squared", dom).l1 == pytest.approx(6 * 4 + 4 * 3 * 2 * 5**0.5)


def test_sensitivity_box_with_intercept_hand_derived():
    # x in [-1, 1]^3, y in [-1, 1], constant column 1. Ranges: diagonals x_j^2 in
    # [0, 1] (3 x 1), products x_j x_k in [-1, 1] (3 x 2), intercept column x_j
    # (3 x 2), linear -2 y x_j (3 x 4), -2 y (4): 3 + 6 + 6 + 12 + 4 = 31.
    dom = DataDomain(3, lower=-1, upper=1, y_bounds=(-1, 1), fit_intercept=True)
    sens = sensitivity("squared", dom)
    assert sens.l1 == pytest.approx(31.0)
    # L2: sqrt(2 * sum_{j<=k} m^4) = sqrt(12); intercept column 2 sqrt(3);
    # linear 4 sqrt(3); intercept's linear entry 4
    assert sens.l2 == pytest.approx(math.sqrt(12 + 12 + 48 + 16))


def test_sensitivity_nonnegative_box_logistic():
    # x in [0, 1]^2: products in [0, 1] (3 entries of width 1/8); (1/2 - y) x_j in
    # [-1/2, 1/2] (2 entries of width 1): 3/8 + 2
    dom = DataDomain(2, lower=0, upper=1, fit_intercept=False)
    assert sensitivity("logistic_taylor", dom).l1 == pytest.approx(3 / 8 + 2)


def test_sensitivity_norm_with_intercept_hand_derived():
    # R = 1, s = 1, d = 2: features min(3, 3) + intercept column 2 sqrt(2)
    # + linear 4 sqrt(2) + intercept's linear entry 4
    dom = DataDomain(2, data_norm=1.0, y_bounds=(-1, 1), fit_intercept=True)
    assert sensitivity("squared", dom).l1 == pytest.approx(7 + 6 * math.sqrt(2))


def test_sensitivity_with_max_nonzero_hand_derived():
    # ||x||_1 <= sqrt(3) on 3-sparse rows of the unit ball: quadratic part
    # 2 (||x||_1^2 + ||x||^2) / 2 = 4, linear part 2 * 2 * sqrt(3)
    dom = DataDomain(10, data_norm=1.0, y_bounds=(-1, 1), max_nonzero=3)
    assert sensitivity("squared", dom).l1 == pytest.approx(4 + 4 * math.sqrt(3))
    # a box: the 2 largest |bounds| count for the linear part
    box = DataDomain(4, lower=[-1, -2, 0, -3], upper=1, y_bounds=(0, 1), max_nonzero=2)
    lin_only = sensitivity(
        "squared", box, quad_mask=np.zeros((4, 4), bool), linear_weight=1.0
    )
    # -2 y x_j ranges: widths 4, 8, 2, 12 sum to 26; norm bound 2 * 2 * (3 + 2) = 20
    assert lin_only.l1 == pytest.approx(20.0)


def test_linear_weight_scales_only_the_linear_part():
    dom = DataDomain(4, data_norm=1.0, y_bounds=(-1, 1))
    sens = sensitivity("squared", dom, linear_weight=0.5)
    assert sens.l1 == pytest.approx(5 + 0.5 * 4 * 2)
    assert sens.l2 == pytest.approx(math.sqrt(2 + 0.25 * 16))


def test_tightest_bound_is_taken_from_box_and_norm():
    d = 10
    box = sensitivity("squared", DataDomain(d, lower=-1, upper=1, y_bounds=(-1, 1)))
    ball = sensitivity("squared", DataDomain(d, data_norm=1.0, y_bounds=(-1, 1)))
    both = sensitivity(
        "squared", DataDomain(d, lower=-1, upper=1, data_norm=1.0, y_bounds=(-1, 1))
    )
    assert both.l1 <= min(box.l1, ball.l1) + 1e-12
    assert both.l2 <= min(box.l2, ball.l2) + 1e-12
    # a narrow box inside the ball is tighter than the ball
    narrow = DataDomain(d, lower=-0.1, upper=0.1, data_norm=1.0, y_bounds=(-1, 1))
    assert sensitivity("squared", narrow).l1 < ball.l1


def _record_vector(x, y, objective, dom, c, qmask, lmask):
    kappa, beta = objective_constants(objective)
    if dom.fit_intercept:
        x = np.append(x, dom.intercept_scaling)
    rows, cols = triu_indices(x.size)
    quad = kappa * np.outer(x, x)[rows, cols][qmask[rows, cols]]
    return np.concatenate([quad, (c * beta(y) * x)[lmask]])


DOMAINS = [
    DataDomain(3, data_norm=1.0, y_bounds=(-1, 1)),
    DataDomain(3, lower=[-1, 0, -2], upper=[1, 2, 0.5], y_bounds=(0, 2)),
    DataDomain(4, lower=-1, upper=1, data_norm=1.5, y_bounds=(-1, 1)),
    DataDomain(
        3, data_norm=2.0, y_bounds=(-1, 1), fit_intercept=True, intercept_scaling=2.0
    ),
    DataDomain(3, lower=0, upper=1, y_bounds=(0, 1), fit_intercept=True),
    DataDomain(5, data_norm=1.0, y_bounds=(-1, 1), max_nonzero=2, fit_intercept=True),
    DataDomain(4, lower=[-1, -2, 0, -1], upper=1, y_bounds=(-1, 1), max_nonzero=2),
]


@pytest.mark.parametrize("objective", ["squared", "logistic_taylor"])
@pytest.mark.parametrize("dom", DOMAINS)
@pytest.mark.parametrize("block", ["all", "party", "cross"])
def test_sensitivity_bounds_every_pair_of_records(objective, dom, block):
    """Brute force: no pair of records in the domain moves the vector further."""
    rng = np.random.default_rng(3)
    p = dom.n_coef
    qmask, lmask = np.ones((p, p), bool), np.ones(p, bool)
    if block == "party":  # one party's own coefficients
        qmask[:] = False
        qmask[np.ix_([0, 1], [0, 1])] = True
        lmask[:] = False
        lmask[[0, 1]] = True
    elif block == "cross":  # coefficients between two parties
        qmask[:] = False
        qmask[np.ix_([0], list(range(1, p)))] = True
        lmask[:] = False
    c = 0.7
    sens = sensitivity(objective, dom, linear_weight=c, quad_mask=qmask, lin_mask=lmask)
    rows, cols = triu_indices(p)
    tri_mask = np.triu(qmask | qmask.T)
    ys = [0.0, 1.0] if objective == "logistic_taylor" else list(dom.y_bounds)
    pts = extreme_points(dom, rng, 300)
    vecs = np.array(
        [
            _record_vector(x, y, objective, dom, c, tri_mask, lmask)
            for x in pts
            for y in ys
        ]
    )
    diffs = vecs[:, None, :] - vecs[None, :, :]
    assert np.abs(diffs).sum(-1).max() <= sens.l1 * (1 + 1e-9)
    assert np.sqrt((diffs**2).sum(-1)).max() <= sens.l2 * (1 + 1e-9)


def test_block_sensitivities_cover_the_whole():
    dom = DataDomain(4, data_norm=1.0, y_bounds=(-1, 1), fit_intercept=True)
    p = dom.n_coef
    parts = [[0, 1], [2, 3, 4]]
    total = 0.0
    for i, pi in enumerate(parts):
        for pj in parts[i:]:
            q = np.zeros((p, p), bool)
            q[np.ix_(pi, pj)] = True
            total += sensitivity(
                "squared", dom, quad_mask=q, lin_mask=np.zeros(p, bool)
            ).l1
    lin = sensitivity("squared", dom, quad_mask=np.zeros((p, p), bool)).l1
    assert total + lin >= sensitivity("squared", dom).l1 - 1e-9


def test_bad_domains():
    with pytest.raises(ValueError, match="lower"):
        DataDomain(2, lower=1, upper=0)
    with pytest.raises(ValueError, match="data_norm"):
        DataDomain(2, data_norm=-1.0)
    with pytest.raises(ValueError, match="box"):
        DataDomain(2)
    with pytest.raises(ValueError, match="contain 0"):
        DataDomain(2, lower=0.5, upper=1, data_norm=1.0)
    with pytest.raises(ValueError, match="contain 0"):
        DataDomain(2, lower=0.5, upper=1, max_nonzero=1)
    with pytest.raises(ValueError, match="max_nonzero"):
        DataDomain(2, data_norm=1.0, max_nonzero=0)
    with pytest.raises(ValueError, match="y_bounds"):
        sensitivity("squared", DataDomain(2, data_norm=1.0))
    with pytest.raises(ValueError, match="objective"):
        sensitivity("hinge", DataDomain(2, data_norm=1.0))


# -------------------------------------------------------------------- noise
def test_noise_order_and_determinism():
    dom = DataDomain(3, data_norm=1.0, y_bounds=(-1, 1), fit_intercept=True)
    mech = make_mechanism(1.0, 0.0, sensitivity("squared", dom), n_released(dom))
    nA, nb = draw_noise(mech, dom, np.random.default_rng(5))
    nA2, nb2 = draw_noise(mech, dom, np.random.default_rng(5))
    np.testing.assert_array_equal(nA, nA2)
    np.testing.assert_array_equal(nb, nb2)
    assert nA.shape == (10,) and nb.shape == (4,)
    assert nA[-1] == 0.0 and np.all(nA[:-1] != 0)  # intercept diagonal is exact
    # the same draw, reproduced from the mechanism and one generator
    rng = np.random.default_rng(5)
    np.testing.assert_array_equal(nA[:-1], mech.sample_noise(10, rng)[:-1])
    np.testing.assert_array_equal(nb, mech.sample_noise(4, rng))


def test_add_noise_puts_noise_in_triu_order():
    A = np.zeros((3, 3))
    b = np.zeros(3)
    nA = np.arange(1.0, 7.0)
    A_hat, b_hat = add_noise(A, b, nA, np.array([2.0, 4.0, 6.0]), linear_weight=2.0)
    np.testing.assert_array_equal(A_hat, A_hat.T)
    assert A_hat[0, 1] == 2.0 and A_hat[1, 2] == 5.0 and A_hat[2, 2] == 6.0
    np.testing.assert_array_equal(b_hat, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(symmetric_from_triu(nA, 3), A_hat)


def test_laplace_sensitivity_is_inflated_for_lattice_rounding():
    dom = DataDomain(5, data_norm=1.0, y_bounds=(-1, 1))
    sens = sensitivity("squared", dom)
    mech = make_mechanism(0.1, 0.0, sens, n_released(dom))
    # every released coordinate is rounded to the lattice: one step each is paid
    assert mech.dimension == n_released(dom)
    rounding = n_released(dom) * lattice_granularity(mech)
    assert mech.scale * mech.epsilon == pytest.approx(sens.l1 + rounding, rel=1e-12)
    assert mech.scale * mech.epsilon == pytest.approx(sens.l1, rel=1e-5)
    gauss = make_mechanism(1.0, 1e-5, sens, n_released(dom), "gaussian")
    assert gauss.sensitivity == sens.l2 and lattice_granularity(gauss) == 0.0


def test_noise_variance_matches_the_mechanism():
    dom = DataDomain(2, data_norm=1.0, y_bounds=(-1, 1))
    mech = make_mechanism(2.0, 0.0, sensitivity("squared", dom), n_released(dom))
    rng = np.random.default_rng(0)
    draws = np.concatenate(
        [np.concatenate(draw_noise(mech, dom, rng)) for _ in range(4000)]
    )
    n = draws.size
    # 5 sigma of the sample variance of Laplace noise (kurtosis 6)
    tol = 5 * mech.variance * math.sqrt(5 / n)
    assert abs(draws.var() - mech.variance) < tol
    assert release_noise_std(mech) == pytest.approx(math.sqrt(mech.variance))


def test_balanced_weight_balances_gaussian_noise():
    dom = DataDomain(20, data_norm=1.0, y_bounds=(-1, 1))
    c = balanced_linear_weight("squared", dom, "gaussian", coef_norm=1.0)
    # minimizer of (2 + 16 c^2)(1 + 1/(4 c^2)): c^4 = 1/32
    assert c == pytest.approx(32**-0.25, rel=0.05)


# ---------------------------------------------------------------------- solve
def test_exact_solve_is_least_squares():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
    A, b = sufficient_statistics(X, y, "squared")
    np.testing.assert_allclose(
        solve_noisy_quadratic(A, b), np.linalg.lstsq(X, y, rcond=None)[0]
    )


def test_ridge_grows_when_noise_swamps_the_signal():
    rng = np.random.default_rng(0)
    A = np.eye(4) * 10.0
    b = -2 * A @ np.ones(4) + rng.normal(size=4)
    quiet = solve_noisy_quadratic(A, b, noise_std=0.1, noise_std_b=0.1, coef_norm=1)
    np.testing.assert_allclose(quiet, np.ones(4), atol=0.2)
    loud = solve_noisy_quadratic(A, b, noise_std=0.1, noise_std_b=100, coef_norm=1)
    # lambda = 4 * (0.01 + 10^4 / 4) / 10 ~ 1000: shrunk ~100-fold
    assert np.linalg.norm(loud) < 0.05 * np.linalg.norm(quiet)


@pytest.mark.parametrize("method", ["ridge", "trim"])
def test_postprocessing_handles_indefinite_quadratics(method):
    A = np.diag([5.0, -3.0, 1e-9])
    b = np.array([-10.0, 4.0, 1.0])
    w = solve_noisy_quadratic(A, b, noise_std=0.5, method=method)
    lam = DEFAULT_RIDGE_FACTOR * 2 * np.sqrt(3) * 0.5
    # every eigenvalue used is >= lam, so |w| <= |b| / (2 lam)
    assert np.all(np.isfinite(w)) and np.linalg.norm(w) <= np.linalg.norm(b) / (2 * lam)
    if method == "trim":  # only the well-determined direction survives
        np.testing.assert_allclose(w, [1.0, 0.0, 0.0])


# ---------------------------------------------------------------------- audit
def _coef_release(objective, dom, mech, c):
    """Vectorized release of the 1-d coefficient, as the core computes it."""

    def run(data, n, rng):
        X, y = data
        A, b = sufficient_statistics(X, y, objective)
        noise_a = mech.sample_noise(n, rng)  # same stream order as draw_noise
        noise_b = mech.sample_noise(n, rng)
        a_hat = A[0, 0] + noise_a
        b_hat = (c * b[0] + noise_b) / c
        # the ridge rule of solve_noisy_quadratic for p = 1
        lam = DEFAULT_RIDGE_FACTOR * 2 * release_noise_std(mech)
        return -0.5 * b_hat / (np.maximum(a_hat, 0) + lam)

    return run


def test_vectorized_release_matches_core():
    dom = DataDomain(1, data_norm=1.0, y_bounds=(-1, 1))
    mech = make_mechanism(1.0, 0.0, sensitivity("squared", dom), n_released(dom))
    X, y = np.array([[0.5], [1.0]]), np.array([0.2, -1.0])
    A, b = sufficient_statistics(X, y, "squared")
    nA, nb = draw_noise(mech, dom, np.random.default_rng(3))
    w = solve_noisy_quadratic(
        *add_noise(A, b, nA, nb), noise_std=release_noise_std(mech)
    )
    run = _coef_release("squared", dom, mech, 1.0)
    assert run((X, y), 1, np.random.default_rng(3))[0] == pytest.approx(w[0], rel=1e-6)


@pytest.mark.parametrize("mechanism, delta", [("laplace", 0.0), ("gaussian", 1e-3)])
def test_privacy_audit_of_released_coefficient(mechanism, delta):
    """Worst-case neighbours: the last record is (x=1, y=1) or (x=1, y=-1)."""
    eps = 1.0
    dom = DataDomain(1, data_norm=1.0, y_bounds=(-1, 1))
    c = 1.0
    sens = sensitivity("squared", dom, linear_weight=c)
    mech = make_mechanism(eps, delta, sens, n_released(dom), mechanism)
    base_X = np.full((20, 1), 0.5)
    base_y = np.zeros(20)
    data_a = (np.vstack([base_X, [[1.0]]]), np.append(base_y, 1.0))
    data_b = (np.vstack([base_X, [[1.0]]]), np.append(base_y, -1.0))
    run = _coef_release("squared", dom, mech, c)
    result = audit_mechanism(
        run, data_a, data_b, n_samples=200_000, delta=delta, random_state=0
    )
    assert result.epsilon_lower_bound <= eps
    # the audit has power: the same test on a mechanism with a quarter of the
    # noise refutes the claim
    weak = make_mechanism(4 * eps, delta, sens, n_released(dom), mechanism)
    broken = audit_mechanism(
        _coef_release("squared", dom, weak, c),
        data_a,
        data_b,
        n_samples=200_000,
        delta=delta,
        random_state=0,
    )
    assert broken.epsilon_lower_bound > eps


def test_swamped_quadratic_falls_back_to_the_isotropic_prior():
    # no positive eigenvalue left: A is replaced by a0 I and the ridge is computed
    # for it, so w = -b / (2 (a0 + lambda)) instead of an overflow to exactly 0
    A = -np.diag([1.0, 2.0, 3.0])
    b = np.array([1.0, -2.0, 0.5])
    sd, sd_b, W, a0 = 2.0, 3.0, 0.5, 4.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        w = solve_noisy_quadratic(
            A, b, noise_std=sd, noise_std_b=sd_b, coef_norm=W, prior_eig=a0
        )
    lam = max(0.5 * 2 * np.sqrt(3) * sd, 3 * (sd**2 + sd_b**2 / (4 * W**2)) / a0)
    np.testing.assert_allclose(w, -b / (2 * (a0 + lam)), rtol=1e-12)
    # a quadratic with signal is not touched by the prior
    B = np.diag([5.0, 1.0, 2.0])
    np.testing.assert_array_equal(
        solve_noisy_quadratic(B, b, noise_std=sd, noise_std_b=sd_b, coef_norm=W),
        solve_noisy_quadratic(
            B, b, noise_std=sd, noise_std_b=sd_b, coef_norm=W, prior_eig=a0
        ),
    )


def test_prior_eigenvalue_bounds_the_mean_eigenvalue():
    dom = DataDomain(4, data_norm=2.0, fit_intercept=True, intercept_scaling=2.0)
    # kappa n (R^2 + s^2) / p, attained when every row has norm R
    assert prior_eigenvalue("squared", dom, 10) == pytest.approx(10 * 8 / 5)
    assert prior_eigenvalue("logistic_taylor", dom, 10) == pytest.approx(2.0)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 4))
    X *= 2.0 / np.linalg.norm(X, axis=1, keepdims=True)
    A, _ = sufficient_statistics(
        X, np.zeros(10), "squared", fit_intercept=True, intercept_scaling=2.0
    )
    assert np.trace(A) / 5 == pytest.approx(prior_eigenvalue("squared", dom, 10))
