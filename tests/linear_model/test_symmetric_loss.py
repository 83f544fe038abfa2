"""SymmetricLossClassifier: losses, exact optimality, robustness, API and errors."""

import numpy as np
import pytest
from scipy import optimize, sparse
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.kernel_approximation import Nystroem
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from skdp.linear_model import SymmetricLossClassifier
from skdp.linear_model._losses import LOSSES, make_loss
from skdp.linear_model._symmetric_solvers import best_intercept

SYMMETRIC = ["barrier_hinge", "sigmoid", "ramp", "unhinged"]
CONVEX = ["barrier_hinge", "hinge", "unhinged", "logistic", "squared"]


# ---------------------------------------------------------------- losses


@pytest.mark.parametrize(
    "name, z, expected",
    [
        ("barrier_hinge", 0.0, 50.0),
        ("barrier_hinge", 50.0, 0.0),
        ("barrier_hinge", -50.0, 100.0),
        ("barrier_hinge", 60.0, 2000.0),  # b (z - r) = 200 * 10
        ("barrier_hinge", -60.0, 2050.0),  # -b (r + z) + r = 2000 + 50
        ("hinge", 0.0, 1.0),
        ("hinge", 2.0, 0.0),
        ("unhinged", 3.0, -2.0),
        ("sigmoid", 0.0, 0.5),
        ("ramp", 0.0, 0.5),
        ("ramp", 2.0, 0.0),
        ("ramp", -3.0, 1.0),
        ("logistic", 0.0, np.log(2.0)),
        ("squared", 0.0, 1.0),
        ("squared", 3.0, 4.0),
    ],
)
def test_loss_values_at_hand_computed_points(name, z, expected):
    assert make_loss(name).value(z) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("name", SYMMETRIC)
def test_symmetric_losses_sum_to_a_constant(name):
    loss = make_loss(name, barrier_slope=200.0, symmetric_width=50.0)
    bound = min(loss.symmetric_range, 1e3)
    z = np.linspace(-bound, bound, 2001)
    total = loss.value(z) + loss.value(-z)
    np.testing.assert_allclose(total, loss.symmetric_constant, rtol=1e-12, atol=1e-12)


def test_barrier_hinge_is_symmetric_only_on_its_range():
    loss = make_loss("barrier_hinge", barrier_slope=3.0, symmetric_width=1.0)
    assert loss.value(0.5) + loss.value(-0.5) == pytest.approx(2.0)
    assert loss.value(2.0) + loss.value(-2.0) > 2.0 + 1.0


@pytest.mark.parametrize("name", ["hinge", "logistic", "squared"])
def test_non_symmetric_losses_are_not_symmetric(name):
    loss = make_loss(name)
    z = np.array([0.5, 2.0])
    total = loss.value(z) + loss.value(-z)
    assert abs(total[0] - total[1]) > 1e-3
    assert loss.symmetric_range == 0


@pytest.mark.parametrize("name", list(LOSSES))
def test_convexity_as_claimed(name):
    loss = make_loss(name, barrier_slope=5.0, symmetric_width=2.0)
    z = np.linspace(-6, 6, 601)
    # midpoint convexity on all pairs (z_i, z_j)
    zi, zj = np.meshgrid(z, z)
    gap = (loss.value(zi) + loss.value(zj)) / 2 - loss.value((zi + zj) / 2)
    if loss.convex:
        assert gap.min() >= -1e-9
    else:
        assert gap.min() < -1e-3


@pytest.mark.parametrize("name", list(LOSSES))
def test_derivative_matches_finite_differences(name):
    loss = make_loss(name, barrier_slope=5.0, symmetric_width=2.0)
    z = np.array([-7.3, -1.7, -0.4, 0.3, 1.4, 3.1, 6.2])  # away from kinks
    h = 1e-6
    numeric = (loss.value(z + h) - loss.value(z - h)) / (2 * h)
    np.testing.assert_allclose(loss.derivative(z), numeric, rtol=1e-5, atol=1e-7)


def test_barrier_hinge_rejects_bad_slope_and_width():
    with pytest.raises(ValueError, match=r"barrier_slope \(b\) must be > 1"):
        make_loss("barrier_hinge", barrier_slope=1.0)
    with pytest.raises(ValueError, match=r"symmetric_width \(r\) must be > 0"):
        make_loss("barrier_hinge", symmetric_width=0.0)


# ------------------------------------------------- exact optimality (HiGHS)


def _data(n=40, p=3, seed=0, flip=0.2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = (X @ rng.normal(size=p) + 0.3 * rng.normal(size=n) > 0).astype(int)
    y[rng.random(n) < flip] ^= 1
    return X, y


def _rows(X, y, objective):
    """Rows, intercept coefficients and weights of the risk, written independently."""
    s = np.where(y == 1, 1.0, -1.0)
    if objective == "auc":
        P, N = X[s > 0], X[s < 0]
        M = (P[:, None, :] - N[None, :, :]).reshape(-1, X.shape[1])
        return M, np.zeros(len(M)), np.full(len(M), 1.0 / len(M))
    n_pos, n_neg = (s > 0).sum(), (s < 0).sum()
    c = np.full(len(s), 1.0 / len(s))
    if objective == "ber":
        c = np.where(s > 0, 0.5 / n_pos, 0.5 / n_neg)
    return s[:, None] * X, s, c


def _primal(clf, M, e, c):
    loss = make_loss(
        clf.loss, barrier_slope=clf.barrier_slope, symmetric_width=clf.symmetric_width
    )
    w, b = clf.coef_[0], clf.intercept_[0]
    pen = clf.alpha * (np.abs(w).sum() if clf.penalty == "l1" else 0.5 * w @ w)
    return float(c @ loss.value(M @ w + e * b)) + pen


def _kinks(loss):
    """Kink positions z_k; the conjugate is l*(beta) = max_k (beta z_k - l(z_k))."""
    a, d = loss.pieces
    return (d[:-1] - d[1:]) / (a[1:] - a[:-1]), a[0], a[-1]


def _dual_l1_highs(loss, M, e, c, alpha, fit_intercept):
    """Dual LP of the L1 problem, solved by HiGHS; equals the primal optimum.

    max_{beta, u} -sum c_j u_j  s.t.  u_j >= beta_j z_k - l(z_k),
    |sum_j c_j beta_j M_j|_inf <= alpha, sum_j c_j beta_j e_j = 0, a_1 <= beta <= a_K.
    """
    m, p = M.shape
    z, lo, hi = _kinks(loss)
    rows, rhs = [], []
    for zk in z:  # beta_j z_k - u_j <= l(z_k)
        rows.append(np.hstack([zk * np.eye(m), -np.eye(m)]))
        rhs.append(np.full(m, loss.value(zk)))
    CM = (c[:, None] * M).T
    rows += [np.hstack([CM, np.zeros((p, m))]), np.hstack([-CM, np.zeros((p, m))])]
    rhs += [np.full(p, alpha), np.full(p, alpha)]
    A_eq = np.hstack([c * e, np.zeros(m)])[None] if fit_intercept else None
    res = optimize.linprog(
        np.concatenate([np.zeros(m), c]),
        A_ub=np.vstack(rows),
        b_ub=np.concatenate(rhs),
        A_eq=A_eq,
        b_eq=[0.0] if fit_intercept else None,
        bounds=[(lo, hi)] * m + [(None, None)] * m,
        method="highs",
    )
    assert res.status == 0, res.message
    return -res.fun


def _highs_qp(loss, M, e, c, alpha, fit_intercept):
    """Primal QP  min alpha/2 ||w||^2 + c^T t  s.t.  a_k (M_j w + e_j b) + d_k <= t_j,
    solved by the HiGHS QP solver bundled with scipy (private module: skip if absent).
    Returns the primal objective at the HiGHS solution."""
    core = pytest.importorskip("scipy.optimize._highspy._core")
    m, p = M.shape
    a, d = loss.pieces
    K = len(a)
    rows = np.repeat(np.arange(m), K)
    eb = (e[rows] * np.tile(a, m))[:, None] * fit_intercept
    T = sparse.csr_matrix((-np.ones(m * K), (np.arange(m * K), rows)), (m * K, m))
    A = sparse.hstack([M[rows] * np.tile(a, m)[:, None], eb, T]).tocsc()
    n = p + 1 + m
    lp = core.HighsLp()
    lp.num_col_, lp.num_row_ = n, m * K
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m * K
    lp.a_matrix_.format_ = core.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_ = A.indptr, A.indices
    lp.a_matrix_.value_ = A.data
    lp.col_cost_ = np.concatenate([np.zeros(p + 1), c])
    lower, upper = np.full(n, -core.kHighsInf), np.full(n, core.kHighsInf)
    if not fit_intercept:
        lower[p] = upper[p] = 0.0
    lp.col_lower_, lp.col_upper_ = lower, upper
    lp.row_lower_ = np.full(m * K, -core.kHighsInf)
    lp.row_upper_ = -np.tile(d, m)
    hess = core.HighsHessian()
    hess.dim_, hess.format_ = n, core.HessianFormat.kTriangular
    hess.start_ = np.concatenate([np.arange(p + 1), np.full(n - p, p)]).astype(np.int32)
    hess.index_ = np.arange(p, dtype=np.int32)
    hess.value_ = np.full(p, alpha)
    model = core.HighsModel()
    model.lp_, model.hessian_ = lp, hess
    highs = core._Highs()
    highs.setOptionValue("output_flag", False)
    highs.passModel(model)
    highs.run()
    assert highs.getModelStatus() == core.HighsModelStatus.kOptimal
    x = np.array(highs.getSolution().col_value)
    w, b = x[:p], x[p]
    return float(c @ loss.value(M @ w + e * b)) + 0.5 * alpha * w @ w


def _dual_lower_bound(loss, M, e, c, alpha, fit_intercept, w, b):
    """A dual-feasible point built from (w, b) and its dual value: a lower bound on
    the optimum by weak duality, whichever way (w, b) was found.

    beta_j is the slope of row j's active piece, or, for rows at a kink, chosen in
    the kink's subdifferential by bounded least squares on the stationarity
    conditions. D(beta) = -sum c_j l*(beta_j) - ||M^T (c beta)||^2 / (2 alpha).
    """
    z_kink, lo, hi = _kinks(loss)
    a, _ = loss.pieces
    z = M @ w + e * b
    dist = np.abs(z[:, None] - z_kink)
    at_kink = dist.min(axis=1) <= 1e-7 * max(1.0, np.abs(z_kink).max())
    beta = loss.derivative(z)
    k = dist.argmin(axis=1)[at_kink]
    S, F = np.flatnonzero(at_kink), np.flatnonzero(~at_kink)
    G = np.vstack([(c[:, None] * M).T, (c * e)[None] * fit_intercept])
    target = -np.concatenate([alpha * w, [0.0]]) - G[:, F] @ beta[F]
    if S.size:
        sol = optimize.lsq_linear(G[:, S], target, bounds=(a[k], a[k + 1]), tol=1e-14)
        beta[S] = sol.x
    v = M.T @ (c * beta)
    violation = abs(float((c * e * fit_intercept) @ beta))
    conj = np.max(beta[:, None] * z_kink - loss.value(z_kink), axis=1)
    return -float(c @ conj) - float(v @ v) / (2 * alpha), violation


@pytest.mark.parametrize("objective", ["error", "ber", "auc"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize(
    "loss,b,r",
    [
        ("barrier_hinge", 200.0, 50.0),
        ("barrier_hinge", 3.0, 1.0),
        ("hinge", 200.0, 50.0),
    ],
)
def test_l1_penalty_reaches_the_highs_lp_optimum(objective, fit_intercept, loss, b, r):
    X, y = _data(n=30 if objective == "auc" else 60)
    clf = SymmetricLossClassifier(
        loss=loss, barrier_slope=b, symmetric_width=r, feature_scaling=None,
        objective=objective, alpha=1e-3, penalty="l1",
        fit_intercept=fit_intercept,
    ).fit(X, y)  # fmt: skip
    M, e, c = _rows(X, y, objective)
    ref = _dual_l1_highs(
        make_loss(loss, barrier_slope=b, symmetric_width=r),
        M,
        e,
        c,
        1e-3,
        fit_intercept,
    )
    ours = _primal(clf, M, e, c)
    assert ours == pytest.approx(ref, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("objective", ["error", "ber", "auc"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize(
    "loss,b,r,alpha",
    [
        ("barrier_hinge", 200.0, 50.0, 1e-4),
        ("barrier_hinge", 3.0, 1.0, 1e-2),
        ("hinge", 200.0, 50.0, 1e-2),
    ],
)
def test_l2_penalty_reaches_the_dual_qp_optimum(
    objective, fit_intercept, loss, b, r, alpha
):
    X, y = _data(n=20 if objective == "auc" else 40, seed=1)
    clf = SymmetricLossClassifier(
        loss=loss, barrier_slope=b, symmetric_width=r, feature_scaling=None,
        objective=objective, alpha=alpha,
        fit_intercept=fit_intercept,
    ).fit(X, y)  # fmt: skip
    M, e, c = _rows(X, y, objective)
    lo = make_loss(loss, barrier_slope=b, symmetric_width=r)
    fit_b = fit_intercept and objective != "auc"
    ours = _primal(clf, M, e, c)
    highs = _highs_qp(lo, M, e, c, alpha, fit_b)
    w, b0 = clf.coef_[0], clf.intercept_[0]
    lower, violation = _dual_lower_bound(lo, M, e, c, alpha, fit_b, w, b0)
    tol = 1e-6 * max(1.0, abs(ours))
    # never worse than HiGHS, and within 1e-6 of a certified lower bound
    assert ours <= highs + tol
    assert violation < 1e-12
    assert lower <= ours + 1e-12 * max(1.0, abs(ours))
    assert ours - lower <= tol


def test_barrier_is_active_in_the_optimality_test():
    # the hard case: some margins sit beyond r, where the loss is not unhinged
    X, y = _data(n=40, seed=1)
    clf = SymmetricLossClassifier(alpha=1e-4, feature_scaling=None).fit(X, y)
    z = np.where(y == 1, 1, -1) * clf.decision_function(X)
    assert np.any(np.abs(z) >= clf.symmetric_width * (1 - 1e-9))


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_smooth_convex_losses_are_stationary(loss):
    X, y = _data(n=80, seed=2)
    clf = SymmetricLossClassifier(loss=loss, alpha=1e-2, feature_scaling=None)
    clf.fit(X, y)
    M, e, c = _rows(X, y, "error")
    lo = make_loss(loss)
    z = M @ clf.coef_[0] + e * clf.intercept_[0]
    r = c * lo.derivative(z)
    grad = np.concatenate([M.T @ r + 1e-2 * clf.coef_[0], [r @ e]])
    assert np.abs(grad).max() < 1e-6


def test_unhinged_is_closed_form_and_threshold_intercept():
    X, y = _data(n=50, seed=3)
    clf = SymmetricLossClassifier(
        loss="unhinged", objective="ber", alpha=0.5, feature_scaling=None
    ).fit(X, y)
    s = np.where(y == 1, 1.0, -1.0)
    expected = (X[s > 0].mean(axis=0) - X[s < 0].mean(axis=0)) / 2 / 0.5
    np.testing.assert_allclose(clf.coef_[0], expected, rtol=1e-12)
    # the intercept minimizes the training BER among all thresholds
    scores = X @ clf.coef_[0]
    ber = lambda t: 0.5 * (np.mean(scores[s > 0] <= t) + np.mean(scores[s < 0] > t))  # noqa: E731
    cand = np.concatenate([[-np.inf], np.sort(scores)])
    assert ber(-clf.intercept_[0]) == pytest.approx(min(ber(t) for t in cand))


def test_best_intercept_matches_brute_force():
    rng = np.random.default_rng(4)
    m = 25
    loss = make_loss("barrier_hinge", barrier_slope=4.0, symmetric_width=1.0)
    a, d = loss.pieces
    scores, e = rng.normal(scale=2, size=m), rng.choice([-1.0, 1.0], size=m)
    c = rng.random(m)
    S, D = np.tile(a, (m, 1)), np.tile(d, (m, 1))
    b_star = best_intercept(scores, e, c, S, D)
    f = lambda b: float(c @ loss.value(scores + e * b))  # noqa: E731
    grid = np.linspace(-10, 10, 20001)
    assert f(b_star) <= min(f(b) for b in grid) + 1e-12


def test_nonconvex_losses_do_not_lose_to_their_convex_initializer():
    X, y = _data(n=80, seed=5, flip=0.3)
    M, e, c = _rows(X, y, "error")
    for loss, init in [("sigmoid", "logistic"), ("ramp", "hinge")]:
        kw = dict(alpha=1e-2, feature_scaling=None)
        clf = SymmetricLossClassifier(loss=loss, random_state=0, **kw).fit(X, y)
        start = SymmetricLossClassifier(loss=init, **kw).fit(X, y)
        lo = make_loss(loss)

        def obj(model, lo=lo):
            w, b = model.coef_[0], model.intercept_[0]
            return float(c @ lo.value(M @ w + e * b)) + 0.5e-2 * w @ w

        assert obj(clf) <= obj(start) + 1e-10
        assert clf.objective_value_ == pytest.approx(obj(clf), rel=1e-10)


# ------------------------------------------------------ behaviour and API


def test_symmetric_loss_tolerates_symmetric_label_noise():
    # the unhinged (and barrier hinge interior) solution is linear in the labels:
    # flipping with rate rho shrinks its expectation by (1 - 2 rho), direction kept
    X, y = make_classification(n_samples=4000, n_features=5, random_state=0)
    rng = np.random.default_rng(0)
    noisy = np.where(rng.random(len(y)) < 0.3, 1 - y, y)
    clean = SymmetricLossClassifier(loss="unhinged", objective="ber").fit(X, y)
    dirty = SymmetricLossClassifier(loss="unhinged", objective="ber").fit(X, noisy)
    u, v = clean.coef_[0], dirty.coef_[0]
    cosine = u @ v / np.linalg.norm(u) / np.linalg.norm(v)
    assert cosine > 0.95


def test_same_seed_same_model_and_seed_matters_for_pair_sampling():
    X, y = _data(n=200, seed=6)
    kw = dict(objective="auc", max_pairs=500, loss="logistic")
    a = SymmetricLossClassifier(random_state=1, **kw).fit(X, y)
    b = SymmetricLossClassifier(random_state=1, **kw).fit(X, y)
    c = SymmetricLossClassifier(random_state=2, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.allclose(a.coef_, c.coef_)


def test_all_pairs_are_used_below_the_cap_so_seed_is_irrelevant():
    X, y = _data(n=30, seed=7)
    a = SymmetricLossClassifier(objective="auc", random_state=1).fit(X, y)
    b = SymmetricLossClassifier(objective="auc", random_state=2).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_string_labels_and_inputs_unchanged():
    X, y = _data(n=60, seed=8)
    labels = np.where(y == 1, "spam", "ham")
    X0, l0 = X.copy(), labels.copy()
    clf = SymmetricLossClassifier(alpha=1e-2).fit(X, labels)
    np.testing.assert_array_equal(clf.classes_, ["ham", "spam"])
    assert set(clf.predict(X)) <= {"ham", "spam"}
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(labels, l0)
    pred = clf.predict(X)
    np.testing.assert_array_equal(pred == "spam", clf.decision_function(X) > 0)


def test_predict_proba_only_for_the_proper_logistic_loss():
    X, y = _data(n=60, seed=9)
    clf = SymmetricLossClassifier(loss="logistic").fit(X, y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert not hasattr(SymmetricLossClassifier().fit(X, y), "predict_proba")
    assert not hasattr(SymmetricLossClassifier(loss="sigmoid"), "predict_proba")


def test_one_class_is_rejected():
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match="at least two classes.*got 1 class"):
        SymmetricLossClassifier().fit(X, np.ones(10))


@pytest.mark.parametrize(
    "param,value",
    [
        ("barrier_slope", 1.0),
        ("barrier_slope", 0.5),
        ("symmetric_width", 0.0),
        ("symmetric_width", -1.0),
    ],
)
def test_bad_barrier_parameters_are_rejected(param, value):
    X, y = _data(n=20)
    with pytest.raises(ValueError, match=f"'{param}' parameter"):
        SymmetricLossClassifier(**{param: value}).fit(X, y)


@pytest.mark.parametrize(
    "param,value",
    [("loss", "huber"), ("objective", "f1"), ("alpha", 0.0), ("penalty", "l0")],
)
def test_other_bad_parameters_are_rejected(param, value):
    X, y = _data(n=20)
    with pytest.raises(ValueError, match=param):
        SymmetricLossClassifier(**{param: value}).fit(X, y)


def test_unhinged_with_l1_is_rejected():
    X, y = _data(n=20)
    with pytest.raises(ValueError, match="unhinged.*l2"):
        SymmetricLossClassifier(loss="unhinged", penalty="l1").fit(X, y)


def test_works_after_nystroem_in_a_pipeline():
    X, y = make_classification(n_samples=300, n_features=6, random_state=1)
    pipe = make_pipeline(
        Nystroem(n_components=40, random_state=0),
        SymmetricLossClassifier(objective="ber", alpha=1e-5),
    )
    pipe.fit(X[:200], y[:200])
    assert pipe.score(X[200:], y[200:]) > 0.75
    clone(pipe).fit(X[:200], y[:200])


def test_private_label_classifier_grid_search_over_epsilon():
    prep = pytest.importorskip("skdp.preprocessing")
    X, y = make_classification(n_samples=300, n_features=5, random_state=2)
    model = prep.PrivateLabelClassifier(
        SymmetricLossClassifier(objective="ber", alpha=1e-5),
        prep.ExponentialLabelRelease(epsilon=1.0, classes=[0, 1], random_state=0),
    )
    search = GridSearchCV(
        model, {"privatizer__epsilon": [0.1, 2.0, 8.0]}, cv=3, error_score="raise"
    ).fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert search.best_params_["privatizer__epsilon"] in (2.0, 8.0)
    assert scores[2] > scores[0]
    assert search.best_estimator_.privacy_spent_.epsilon > 0


@pytest.mark.parametrize("loss", ["barrier_hinge", "hinge"])
def test_l2_optimum_certified_with_duplicate_rows(loss):
    # one-hot-like data has many identical rows: a degenerate KKT system
    rng = np.random.default_rng(10)
    base = rng.integers(0, 2, size=(8, 4)).astype(float)
    X = base[rng.integers(0, 8, size=120)]
    y = (X @ [1.0, -1.0, 0.5, 0.0] + 0.5 * rng.normal(size=120) > 0).astype(int)
    alpha = 1e-4 if loss == "barrier_hinge" else 1e-2
    clf = SymmetricLossClassifier(
        loss=loss, alpha=alpha, objective="ber", feature_scaling=None
    ).fit(X, y)
    M, e, c = _rows(X, y, "ber")
    ours = _primal(clf, M, e, c)
    lower, violation = _dual_lower_bound(
        make_loss(loss), M, e, c, alpha, True, clf.coef_[0], clf.intercept_[0]
    )
    scale = max(1.0, abs(ours))
    assert violation < 1e-12
    assert -1e-12 * scale <= ours - lower <= 1e-6 * scale


# ------------------------------------- defaults on unscaled data, multiclass


def _box_encoded(n=2000, seed=0):
    # imbalanced classes, features mapped from a declared range [-10, 10] to [0, 1]
    X, y = make_classification(
        n_samples=n, n_features=8, n_informative=4, weights=[0.8, 0.2],
        class_sep=1.5, random_state=seed,
    )  # fmt: skip
    return np.clip((X + 10) / 20, 0, 1), y


@pytest.mark.parametrize("objective", ["error", "ber", "auc"])
def test_defaults_do_not_collapse_to_one_class_on_unscaled_data(objective):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.preprocessing import StandardScaler

    X, y = _box_encoded()
    n = len(y)
    ref = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y).predict(X)
    pred = SymmetricLossClassifier(objective=objective, random_state=0)
    pred = pred.fit(X, y).predict(X)
    # balanced accuracy within 5 binomial standard errors of logistic regression
    # on standardized features (the score of a good linear model on this data)
    b_ref = balanced_accuracy_score(y, ref)
    se = np.sqrt(b_ref * (1 - b_ref) / (n * min(y.mean(), 1 - y.mean())))
    assert balanced_accuracy_score(y, pred) > b_ref - 5 * se
    assert 0.5 * y.mean() < pred.mean() < 1 - 0.5 * (1 - y.mean())
    if objective == "error":
        # the former defaults (small fixed alpha, raw features) collapse to the
        # majority class: the test above fails for them
        old = SymmetricLossClassifier(alpha=1e-5, feature_scaling=None)
        old_pred = old.fit(X, y).predict(X)
        assert old_pred.mean() < 0.5 * y.mean()
        assert balanced_accuracy_score(y, old_pred) < b_ref - 5 * se


def test_auto_alpha_keeps_every_margin_inside_the_symmetric_region():
    X, y = _box_encoded(n=500, seed=1)
    clf = SymmetricLossClassifier(symmetric_width=3.0).fit(X, y)
    z = np.where(y == 1, 1.0, -1.0) * clf.decision_function(X)
    assert np.abs(z).max() == pytest.approx(3.0, rel=1e-9)
    # inside [-r, r] the barrier hinge is r - z: w is proportional to the
    # whitened mean of y x (Fisher's direction Sigma^-1 (mu+ - mu-) for balanced
    # risk), independent of b, r and the scale of X
    s = np.where(y == 1, 1.0, -1.0)
    Xc = X - X.mean(axis=0)
    fisher = np.linalg.pinv(Xc.T @ Xc / len(X), rcond=1e-10) @ (Xc.T @ s / len(X))
    cosine = clf.coef_[0] @ fisher / np.linalg.norm(clf.coef_[0])
    assert cosine / np.linalg.norm(fisher) == pytest.approx(1.0, abs=1e-9)
    wide = SymmetricLossClassifier(barrier_slope=5.0, symmetric_width=70.0)
    np.testing.assert_array_equal(wide.fit(1e3 * X, y).predict(1e3 * X), clf.predict(X))


@pytest.mark.parametrize("scaling", ["whiten", "standardize"])
def test_feature_scaling_makes_predictions_invariant_to_feature_units(scaling):
    X, y = _data(n=120, p=4, seed=8)
    A = np.diag([1e-2, 1.0, 50.0, 2.0])
    if scaling == "whiten":  # invariant to any invertible affine map
        A = A @ np.random.default_rng(0).normal(size=(4, 4))
    shift = np.array([100.0, -3.0, 0.5, 7.0])
    for loss in ["barrier_hinge", "hinge", "logistic"]:
        kw = dict(loss=loss, feature_scaling=scaling, objective="ber")
        a = SymmetricLossClassifier(**kw).fit(X, y).decision_function(X)
        b = SymmetricLossClassifier(**kw).fit(X @ A + shift, y)
        np.testing.assert_allclose(
            b.decision_function(X @ A + shift),
            a,
            rtol=1e-6,
            atol=1e-6 * np.abs(a).max(),
        )


def test_multiclass_is_one_vs_rest():
    X, y = make_classification(
        n_samples=300, n_features=5, n_informative=3, n_classes=3, random_state=4
    )
    labels = np.array(["x", "y", "z"])[y]
    clf = SymmetricLossClassifier(objective="ber").fit(X, labels)
    assert clf.coef_.shape == (3, 5) and clf.intercept_.shape == (3,)
    scores = clf.decision_function(X)
    assert scores.shape == (300, 3)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[scores.argmax(axis=1)])
    for k, name in enumerate(clf.classes_):
        binary = SymmetricLossClassifier(objective="ber").fit(X, labels == name)
        np.testing.assert_allclose(scores[:, k], binary.decision_function(X))
    assert clf.score(X, labels) > 0.6  # chance is 1/3
    assert not hasattr(
        SymmetricLossClassifier(loss="logistic").fit(X, y), "predict_proba"
    )
