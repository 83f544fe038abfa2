"""OPLogisticRegression and PrivateLogisticRegression as estimators."""

import math
import warnings

import numpy as np
import pytest
from scipy.special import expit
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.validation import check_is_fitted

import skdp.linear_model._op_solver as op_solver
import skdp.linear_model._private_logistic as private_logistic
from skdp.accounting import ObjectivePerturbationEvent, PrivacyBudget, track_budget
from skdp.exceptions import PrivacyLeakWarning, ReproducibleNoiseWarning
from skdp.linear_model import (
    FMLogisticRegression,
    OPLogisticRegression,
    PrivateLogisticRegression,
)
from skdp.linear_model._op_solver import CertificateError


def _data(n=300, d=3, C=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)  # ||x|| <= 1
    W = rng.standard_normal((C, d)) * 4
    y = np.argmax(X @ W.T + rng.gumbel(size=(n, C)), axis=1)
    return X, y


# --------------------------------------------------------------- the model
@pytest.mark.parametrize("C", [2, 3])
def test_epsilon_inf_is_the_exact_regularized_mle(C):
    """No noise: the minimizer of sum loss + (alpha_/2) ||theta||^2, as
    scikit-learn finds it (same objective: C = 1 / alpha_, no intercept)."""
    X, y = _data(C=C)
    op = OPLogisticRegression(
        epsilon=np.inf, data_norm=1.0, fit_intercept=False, classes=list(range(C))
    ).fit(X, y)
    assert op.privacy_spent_ == PrivacyBudget(math.inf)
    sk = LogisticRegression(
        C=1.0 / op.alpha_, fit_intercept=False, tol=1e-12, max_iter=10_000
    ).fit(X, y)
    np.testing.assert_allclose(
        op.coef_, sk.coef_[0] if C == 2 else sk.coef_, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("C", [2, 3])
def test_a_fixed_alpha_is_the_exact_ridge_mle_at_epsilon_inf(C):
    """The solver minimizes with the ridge it is given (binary and multinomial:
    a solver using 0.9 alpha moves the coefficients by ~1e-2, far above rtol)."""
    X, y = _data(C=C)
    op = OPLogisticRegression(
        epsilon=np.inf,
        alpha=3.0,
        data_norm=1.0,
        fit_intercept=False,
        classes=list(range(C)),
    ).fit(X, y)
    sk = LogisticRegression(C=1 / 3.0, fit_intercept=False, tol=1e-12).fit(X, y)
    np.testing.assert_allclose(
        op.coef_, sk.coef_[0] if C == 2 else sk.coef_, rtol=1e-6, atol=1e-9
    )
    assert op.alpha_ == 3.0


def test_centred_box_gives_the_model_in_user_units():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 10, (400, 2))
    y = (X[:, 0] - X[:, 1] + rng.normal(0, 2, 400) > 0).astype(int)
    op = OPLogisticRegression(epsilon=np.inf, bounds_X=(0, 10), classes=[0, 1]).fit(
        X, y
    )
    np.testing.assert_array_equal(op.offset_X_, [5.0, 5.0])
    np.testing.assert_array_equal(op.scale_X_, [5.0, 5.0])
    assert op.intercept_scaling_ == 1.0
    # the same objective on the rows mapped to [-1, 1] with the column 1
    rows = np.column_stack([(X - 5.0) / 5.0, np.ones(400)])
    sk = LogisticRegression(C=1 / op.alpha_, fit_intercept=False, tol=1e-12).fit(
        rows, y
    )
    np.testing.assert_allclose(
        op.decision_function(X), rows @ sk.coef_[0], rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(op.predict_proba(X).sum(1), 1.0)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_multinomial_one_release_centred_logits(delta):
    X, y = _data(C=4)
    with track_budget() as acc:
        op = OPLogisticRegression(
            epsilon=2.0,
            delta=delta,
            data_norm=1.0,
            classes=[0, 1, 2, 3],
            random_state=0,
        ).fit(X, y)
    assert acc.spends == [("OPLogisticRegression", PrivacyBudget(2.0, delta))]
    assert op.coef_.shape == (4, 3) and op.intercept_.shape == (4,)
    np.testing.assert_allclose(op.coef_.sum(0), 0.0, atol=1e-9)
    np.testing.assert_allclose(op.intercept_.sum(), 0.0, atol=1e-9)
    proba = op.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_array_equal(op.predict(X), np.argmax(proba, 1))
    assert op.gradient_norm_ <= op.gradient_tolerance_ / 2


def test_randomness_comes_from_random_state_only():
    X, y = _data()
    kw = dict(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1])
    a = OPLogisticRegression(random_state=1, **kw).fit(X, y)
    b = OPLogisticRegression(random_state=1, **kw).fit(X, y)
    c = OPLogisticRegression(random_state=2, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.allclose(a.coef_, c.coef_)


def test_inputs_are_not_modified():
    X, y = _data()
    X0, y0 = X.copy(), y.copy()
    OPLogisticRegression(epsilon=1.0, bounds_X=(-0.1, 0.1), classes=[0, 1]).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_rows_are_clipped_to_the_declared_norm():
    # outliers beyond the declared norm move nothing beyond what a row at the
    # norm could: the fit equals the fit on the clipped rows
    X, y = _data()
    X_out = X.copy()
    X_out[:5] *= 100.0
    clipped = X_out / np.maximum(np.linalg.norm(X_out, axis=1, keepdims=True), 1.0)
    kw = dict(epsilon=1.0, data_norm=1.0, classes=[0, 1], random_state=0)
    a = OPLogisticRegression(**kw).fit(X_out, y)
    b = OPLogisticRegression(**kw).fit(clipped, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12)


# ------------------------------------------------------------ the guarantee
@pytest.mark.parametrize("C", [2, 3])
@pytest.mark.parametrize("delta", [1e-5, 0.0])
@pytest.mark.parametrize(
    "make",
    [
        OPLogisticRegression,
        lambda **kw: PrivateLogisticRegression(method="auto", **kw),
        lambda **kw: PrivateLogisticRegression(method="fm", **kw),
    ],
    ids=["op", "auto", "fm"],
)
def test_declared_classes_fit_one_class_neighbours(C, delta, make):
    """Neighbours where a class occurs once and not at all both fit (OP, and
    the entry point whichever method it takes), pure and (eps, delta)."""
    X, _ = _data(n=40)
    y_d = np.zeros(40, dtype=int)
    y_d[-1] = C - 1
    fitted = []
    for y in (y_d, np.zeros(40, dtype=int)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)
            # the suite's reproducible-noise opt-in warns on every release
            # (a subclass): not the leak this test is about
            warnings.simplefilter("ignore", ReproducibleNoiseWarning)
            est = make(
                epsilon=1.0,
                delta=delta,
                data_norm=1.0,
                classes=list(range(C)),
                random_state=0,
            ).fit(X, y)
        np.testing.assert_array_equal(est.classes_, np.arange(C))
        assert np.all(np.isfinite(est.coef_))
        fitted.append(est)
    assert set(vars(fitted[0])) == set(vars(fitted[1]))


def test_undeclared_domain_and_classes_warn():
    X, y = _data()
    with pytest.warns(PrivacyLeakWarning) as record:
        OPLogisticRegression(epsilon=1.0).fit(X, y)
    text = " ".join(str(w.message) for w in record)
    assert "data_norm" in text and "classes" in text


def test_pld_accountant_gets_the_op_event():
    pytest.importorskip("dp_accounting")
    X, y = _data()
    with track_budget(accountant="pld", delta=1e-5) as acc:
        est = OPLogisticRegression(
            epsilon=1.0,
            delta=1e-6,
            noise="gaussian",
            data_norm=1.0,
            classes=[0, 1],
            random_state=0,
        ).fit(X, y)
    (events,) = acc.events
    assert events == (est.privacy_event_,)
    assert isinstance(est.privacy_event_, ObjectivePerturbationEvent)
    # one release at (1, 1e-6) is (eps <= 1)-DP at the looser delta 1e-5
    assert acc.total.epsilon <= 1.0


def test_refused_budget_draws_nothing(monkeypatch):
    X, y = _data()
    est = OPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1])
    called = []
    monkeypatch.setattr(op_solver, "_solve_binary", lambda *a: called.append(1))
    with pytest.raises(Exception, match="limit"), track_budget(epsilon=0.5):
        est.fit(X, y)
    assert not called
    with pytest.raises(NotFittedError):
        check_is_fitted(est)


def _zero_rows_and_neighbour(n=50):
    """D: every row 0 (the objective is a quadratic, one Newton step solves
    it exactly); D': one row replaced by (0.9, 0) with label 1 (not a
    quadratic: one Newton step does not reach the certificate)."""
    X = np.zeros((n, 2))
    y = np.arange(n) % 2
    X2 = X.copy()
    X2[0] = [0.9, 0.0]
    y2 = y.copy()
    y2[0] = 1
    return (X, y), (X2, y2)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_whether_a_fit_releases_does_not_depend_on_one_record(monkeypatch, delta):
    """Issue 40: with a solver budget too small for one of two neighbouring
    data sets, the old fit released on D and raised CertificateError on D'
    after recording the spend (the exception revealed the record). Now both
    release, each after exactly one recorded spend."""
    monkeypatch.setattr(op_solver, "_MAX_NEWTON", 1)
    monkeypatch.setattr(op_solver, "_MAX_REFINE", 0)
    kw = dict(
        epsilon=1.0,
        delta=delta,
        data_norm=1.0,
        fit_intercept=False,
        classes=[0, 1],
        random_state=0,
    )
    for X, y in _zero_rows_and_neighbour():
        with track_budget() as acc:
            est = OPLogisticRegression(**kw).fit(X, y)
        assert acc.spends == [("OPLogisticRegression", PrivacyBudget(1.0, delta))]
        check_is_fitted(est)
        assert np.all(np.isfinite(est.coef_))


@pytest.mark.parametrize("C", [2, 3])
def test_a_failing_factorization_after_the_spend_still_releases(monkeypatch, C):
    """A Cholesky that fails on rounding (data-dependent) is not an exception
    after the spend either: the solver stops and the fit releases."""

    def broken(*args, **kwargs):
        raise op_solver.linalg.LinAlgError("not positive definite")

    monkeypatch.setattr(op_solver.linalg, "cho_factor", broken)
    X, y = _data(C=C)
    with track_budget() as acc:
        est = OPLogisticRegression(
            epsilon=1.0, data_norm=1.0, classes=list(range(C)), random_state=0
        ).fit(X, y)
    assert len(acc.spends) == 1
    assert np.all(np.isfinite(est.coef_))


def test_the_neighbour_pair_separates_certified_from_uncertified(monkeypatch):
    """The pair above is a real test: under the same budget the solver
    certifies D and not D' (so the old code's outcomes differed)."""
    monkeypatch.setattr(op_solver, "_MAX_NEWTON", 1)
    monkeypatch.setattr(op_solver, "_MAX_REFINE", 0)
    b, lam, tau = np.array([0.3, -0.2]), 2.0, 1e-9
    outcomes = [
        op_solver.solve_binary(X, y.astype(float), lam, b, tau)[2]
        for X, y in _zero_rows_and_neighbour()
    ]
    assert outcomes == [True, False]


def test_a_ridge_too_small_for_the_certificate_is_refused_before_spending():
    """check_certifiable is data-independent and runs before the spend: a
    given alpha under its floor is refused with nothing recorded."""
    X, y = _data(n=50)
    floor = op_solver.certifiable_lambda(50, 4, 2, math.sqrt(2.0))
    est = OPLogisticRegression(
        epsilon=40.0, alpha=floor / 2, data_norm=1.0, classes=[0, 1]
    )
    with track_budget() as acc, pytest.raises(CertificateError, match="spent"):
        est.fit(X, y)
    assert acc.spends == []
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    # alpha="auto" never chooses a ridge under the floor
    auto = OPLogisticRegression(epsilon=40.0, data_norm=1.0, classes=[0, 1])
    assert auto.fit(X, y).alpha_ >= floor


def test_blocked_passes_equal_the_appended_column():
    """Rows without the appended column give the gradient of the augmented
    rows (summation order aside: rtol 1e-12), and the released minimizer is
    within 2 tau / lam of an independent dense Newton solve on the augmented
    rows (both certified at tau / 2: each is within tau / (2 lam) of the
    minimizer, by strong convexity)."""
    rng = np.random.default_rng(3)
    n, d, s = 20_000, 5, 0.7
    X = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)
    y = (rng.random(n) < 0.5 + 0.4 * X[:, 0]).astype(float)
    A = np.column_stack([X, np.full(n, s)])
    lam, b = 3.0, rng.normal(0, 5, d + 1)
    rows = op_solver.Rows(X, s)
    theta = rng.normal(0, 1, d + 1)
    dense = A.T @ (expit(A @ theta) - y) + lam * theta + b
    np.testing.assert_allclose(
        op_solver._binary_gradient(rows, y, lam, b, theta), dense, rtol=1e-12
    )
    tau = op_solver.gradient_tolerance(n, math.sqrt(1 + s * s), np.linalg.norm(b))
    got, norm, certified = op_solver.solve_binary(rows, y, lam, b, tau)
    assert certified and norm <= tau / 2
    ref = np.zeros(d + 1)
    for _ in range(50):  # plain Newton on the augmented rows, to the floor
        w = expit(A @ ref)
        g = A.T @ (w - y) + lam * ref + b
        H = (A.T * (w * (1 - w))) @ A + lam * np.eye(d + 1)
        ref = ref - np.linalg.solve(H, g)
    assert np.linalg.norm(got - ref) <= 2 * tau / lam


# released by acd4f11 (the solver on full n x p copies, before the blocked
# passes) under reproducible noise, seed 11: readable values, not bytes
_BEFORE_BLOCKS = {
    (2, 1e-8): (
        [2.26897271159562, 1.7765228071913346, -3.3544640853091994, 10.682148676855062],
        [0.06378081424894289],
    ),
    (3, 0.0): (
        [
            [
                -2.9900544199100025,
                0.5295020134206079,
                1.4107304098374627,
                -5.690841728427539,
            ],
            [
                -1.001260627841437,
                4.23740325657308,
                -1.050524681105192,
                5.117488333861566,
            ],
            [
                3.9913150477514394,
                -4.766905269993687,
                -0.3602057287322705,
                0.5733533945659739,
            ],
        ],
        [0.11304294909416876, -0.05730558207001363, -0.05573736702415513],
    ),
}


@pytest.mark.parametrize("C, delta", sorted(_BEFORE_BLOCKS))
def test_the_blocked_solver_releases_the_same_model(C, delta):
    """Same data, parameters and seed as at acd4f11: the same noise draws, and
    both solvers' iterates are certified at ||grad J|| <= tau / 2, so each lies
    within tau / (2 lam) of the one minimizer (strong convexity) and they
    differ by at most tau / lam, on any machine (rounding moves each iterate,
    never its certificate). In user units here: data_norm=1 gives s = 1, so
    (coef, intercept) is theta itself (the multinomial projection onto the
    rows-sum-to-0 space only brings both closer)."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (3000, 4)) / 2.0
    W = rng.standard_normal((C, 4)) * 4
    y = np.argmax(X @ W.T + rng.gumbel(size=(3000, C)), axis=1)
    est = OPLogisticRegression(
        epsilon=2.0,
        delta=delta,
        # the pins were drawn with the Gaussian noise whenever delta > 0
        noise="gaussian" if delta > 0 else "auto",
        data_norm=1.0,
        classes=list(range(C)),
        random_state=11,
    ).fit(X, y)
    assert est.intercept_scaling_ == 1.0
    coef, intercept = (np.asarray(v) for v in _BEFORE_BLOCKS[C, delta])
    diff = np.c_[np.atleast_2d(est.coef_ - coef), np.ravel(est.intercept_ - intercept)]
    assert np.linalg.norm(diff) <= est.gradient_tolerance_ / est.alpha_


def test_clipping_by_blocks_is_clipping_at_once():
    """Clipping is row by row, so the blocks give the same array bit for bit
    (the shift of a centred box, max_nonzero, the box, the row norm)."""
    from skdp._fm.clipping import clip_features
    from skdp.linear_model._objective_perturbation import _clipped
    from skdp.linear_model._op_problem import op_domain

    rng = np.random.default_rng(0)
    X = rng.normal(0, 2, (70_001, 4))
    for params in [
        dict(bounds_X=(-1, 2)),
        dict(bounds_X=(-1, 2), data_norm=2.0, max_nonzero=3),
    ]:
        est = OPLogisticRegression(classes=[0, 1], **params)
        domain = op_domain(est._resolve_declared_domain(4, X, None))
        got = _clipped(X, domain)
        np.testing.assert_array_equal(got, clip_features(X, domain))
    assert domain.max_nonzero == 3 and not np.array_equal(got, X)


def test_a_ridge_too_small_for_the_budget_is_refused_before_spending():
    X, y = _data()
    est = OPLogisticRegression(epsilon=0.1, alpha=1e-4, data_norm=1.0, classes=[0, 1])
    with track_budget() as acc, pytest.raises(ValueError, match="lambda"):
        est.fit(X, y)
    assert acc.spends == []


# -------------------------------------------------------------- the entry
def test_explicit_methods_are_the_underlying_estimators():
    X, y = _data()
    kw = dict(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1], random_state=0)
    fm = PrivateLogisticRegression(method="fm", **kw).fit(X, y)
    op = PrivateLogisticRegression(method="op", **kw).fit(X, y)
    np.testing.assert_array_equal(
        fm.coef_, FMLogisticRegression(mechanism="gaussian", **kw).fit(X, y).coef_
    )
    np.testing.assert_array_equal(op.coef_, OPLogisticRegression(**kw).fit(X, y).coef_)
    assert (fm.method_, op.method_) == ("fm", "op")
    assert isinstance(op.estimator_, OPLogisticRegression)
    np.testing.assert_array_equal(op.predict(X), op.estimator_.predict(X))
    np.testing.assert_array_equal(fm.predict_proba(X), fm.estimator_.predict_proba(X))


def test_pure_epsilon_uses_the_pure_variants():
    X, y = _data()
    kw = dict(epsilon=1.0, data_norm=1.0, classes=[0, 1], random_state=0)
    fm = PrivateLogisticRegression(method="fm", **kw).fit(X, y)
    op = PrivateLogisticRegression(method="op", **kw).fit(X, y)
    assert fm.estimator_.mechanism == "laplace"
    assert fm.privacy_spent_ == op.privacy_spent_ == PrivacyBudget(1.0)
    assert op.estimator_.noise_std_ == 0 and math.isfinite(op.estimator_.noise_rate_)


def test_auto_reads_public_quantities_only(monkeypatch):
    X, y = _data(n=500)
    rng = np.random.default_rng(5)
    X2, y2 = rng.uniform(-0.5, 0.5, X.shape), rng.integers(0, 2, y.size)
    kw = dict(epsilon=2.0, delta=1e-7, data_norm=1.0, classes=[0, 1])
    rho = private_logistic.noise_level(500, 3, 2, 2.0, 1e-7, data_norm=1.0)
    for threshold, method in ((rho * 1.01, "op"), (rho * 0.99, "fm")):
        monkeypatch.setattr(private_logistic, "AUTO_THRESHOLD", threshold)
        a = PrivateLogisticRegression(**kw).fit(X, y)
        b = PrivateLogisticRegression(**kw).fit(X2, y2)  # other data, same shape
        assert a.method_ == b.method_ == method
        assert a.noise_level_ == b.noise_level_ == rho


def test_coef_norm_guess_grows_with_p_and_past_the_knee_with_n_epsilon():
    """W = W_0 max(1, n eps / (300 k)): W_0 = (4 / R_x)(p / 30) binary,
    4 C / R_x multinomial; no growth at eps = inf."""
    from skdp._fm.domain import DataDomain
    from skdp.linear_model._op_problem import coef_norm_guess

    d = 8
    dom = DataDomain(
        n_features=d, data_norm=2.0, fit_intercept=True, intercept_scaling=2.0
    )
    p, R_x = d + 1, 2.0
    for C, W0 in ((2, 4 / R_x * p / 30), (4, 4 * 4 / R_x)):
        k = p * (C - 1)
        knee = 300 * k
        assert coef_norm_guess(dom, knee, C, 1.0) == pytest.approx(W0, rel=1e-12)
        assert coef_norm_guess(dom, 10, C, 0.5) == pytest.approx(W0, rel=1e-12)
        assert coef_norm_guess(dom, knee, C, 7.0) == pytest.approx(7 * W0, rel=1e-12)
        assert coef_norm_guess(dom, 3 * knee, C, 2.0) == pytest.approx(6 * W0)
        assert coef_norm_guess(dom, 10**9, C, np.inf) == pytest.approx(W0)


def test_noise_level_falls_with_n_and_epsilon():
    levels = [
        private_logistic.noise_level(n, 10, 2, eps, 1e-8, bounds_X=(0, 1))
        for n, eps in ((500, 1.0), (5000, 1.0), (5000, 5.0))
    ]
    assert levels[0] > levels[1] > levels[2] > 0
    assert private_logistic.noise_level(500, 10, 2, np.inf, 0.0, data_norm=1) == 0


@pytest.mark.parametrize("method", ["auto", "op", "fm"])
def test_pipeline_and_grid_search_over_epsilon_record_every_spend(method):
    X, y = _data(n=200)
    pipe = make_pipeline(
        FunctionTransformer(),
        PrivateLogisticRegression(
            method=method, data_norm=1.0, classes=[0, 1], random_state=0
        ),
    )
    grid = {"privatelogisticregression__epsilon": [0.5, 5.0]}
    with track_budget() as acc:
        search = GridSearchCV(pipe, grid, cv=2).fit(X, y)
    # 2 values x 2 folds + the refit
    assert len(acc.spends) == 5
    assert search.best_estimator_[-1].privacy_spent_.epsilon in (0.5, 5.0)


def test_multiclass_in_one_release_through_the_entry_point():
    X, y = _data(C=5)
    with track_budget() as acc:
        clf = PrivateLogisticRegression(
            epsilon=3.0,
            delta=1e-6,
            data_norm=1.0,
            classes=list(range(5)),
            random_state=0,
        ).fit(X, y)
    assert len(acc.spends) == 1
    assert clf.predict_proba(X).shape == (300, 5)
    assert clf.coef_.shape == (5, 3)


def test_clone_keeps_the_parameters():
    est = PrivateLogisticRegression(epsilon=2.0, method="op", classes=[0, 1])
    assert clone(est).get_params() == est.get_params()


def test_noise_under_delta_is_the_smaller_one():
    """``noise="auto"`` under delta > 0 draws the pure noise where its risk
    proxy is the smaller (few dimensions) and the Gaussian where that is (many
    dimensions); the recorded spend is the (epsilon, delta) asked for."""
    from skdp.linear_model._op_calibration import (
        choose_lambda,
        noise_delta,
        risk_proxy,
    )
    from skdp.linear_model._op_problem import op_domain, op_problem

    for d, want_pure in [(3, True), (60, False)]:
        X, y = _data(n=2000, d=d)
        kw = dict(epsilon=1.0, delta=1e-7, data_norm=1.0, classes=[0, 1])
        est = OPLogisticRegression(random_state=0, **kw).fit(X, y)
        assert (est.noise_std_ == 0.0) == want_pure
        assert est.privacy_spent_ == PrivacyBudget(1.0, 1e-7)
        # the criterion, recomputed independently of the estimator's path
        domain = op_domain(est._resolve_declared_domain(d, X, y))
        problem = op_problem(domain, 2000, 2, 1.0)
        risks = {
            dl: risk_proxy(problem, 1.0, dl, choose_lambda(problem, 1.0, dl))
            for dl in (0.0, 1e-7)
        }
        assert (risks[0.0] < risks[1e-7]) == want_pure
        assert noise_delta(problem, 1.0, 1e-7) == (0.0 if want_pure else 1e-7)
        # forced either way, whatever the proxy says
        forced = OPLogisticRegression(noise="gaussian", random_state=0, **kw)
        assert forced.fit(X, y).noise_std_ > 0
        pure = OPLogisticRegression(noise="pure", random_state=0, **kw).fit(X, y)
        assert pure.noise_std_ == 0.0 and math.isfinite(pure.noise_rate_)


def test_gaussian_noise_needs_delta():
    X, y = _data()
    est = OPLogisticRegression(noise="gaussian", data_norm=1.0, classes=[0, 1])
    with pytest.raises(ValueError, match="noise='gaussian' needs delta > 0"):
        est.fit(X, y)


def test_light_ridge_is_a_multiple_of_the_smallest_admissible():
    """``alpha="light"`` is ``LIGHT_RIDGE_MULTIPLE`` times the ridge whose
    Jacobian term is epsilon / 2, computed independently here (binary:
    ``log(1 + R^2 / (4 lam)) = eps / 2``), and raised to the certificate's
    floor like ``"auto"``."""
    from skdp.linear_model._op_calibration import LIGHT_RIDGE_MULTIPLE

    X, y = _data(n=3000, d=4)
    for eps in (0.5, 2.0):
        est = OPLogisticRegression(
            epsilon=eps, alpha="light", data_norm=1.0, classes=[0, 1], random_state=0
        ).fit(X, y)
        R = est.row_norm_
        smallest = R**2 / (4.0 * math.expm1(eps / 2.0))
        assert est.alpha_ == pytest.approx(LIGHT_RIDGE_MULTIPLE * smallest, rel=1e-12)
        assert est.jacobian_epsilon_ < eps / 2.0
    inf = OPLogisticRegression(
        epsilon=math.inf, alpha="light", data_norm=1.0, classes=[0, 1]
    ).fit(X, y)
    auto = OPLogisticRegression(epsilon=math.inf, data_norm=1.0, classes=[0, 1])
    assert inf.alpha_ == auto.fit(X, y).alpha_
