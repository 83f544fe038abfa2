"""RRInfluenceEstimator: objective, influence vs retraining, expectations, errors."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import (
    Lasso,
    LinearRegression,
    LogisticRegression,
    Ridge,
)
from sklearn.metrics import log_loss
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skdp.inspection import LABEL, RRInfluenceEstimator
from skdp.mechanisms import RandomizedResponseMechanism
from tests.inspection._data import make_data

TIGHT = {"tol": 1e-12, "max_iter": 10_000}


# ----------------------------------------------------------------------- objective
@pytest.mark.parametrize(
    "model, n_classes",
    [
        (LogisticRegression(C=0.7, **TIGHT), 2),
        (LogisticRegression(C=0.7, **TIGHT), 3),
        (LogisticRegression(C=2.0, solver="newton-cholesky", **TIGHT), 2),
        (LogisticRegression(class_weight={0: 2.0, 1: 0.5}, **TIGHT), 2),
        (Ridge(alpha=3.0), None),
        (LinearRegression(), None),
    ],
)
def test_gradient_of_objective_vanishes_at_sklearn_fit(model, n_classes):
    # the objective we differentiate is the one scikit-learn minimizes: its
    # gradient is zero at scikit-learn's solution (checks C, sum scaling, the
    # unpenalized intercept, class and sample weights)
    X, y = make_data(300, seed=1, n_classes=n_classes or 2)
    if n_classes is None:
        y = X[:, 0] + X[:, 2] + np.random.default_rng(2).normal(size=len(y))
    sw = np.random.default_rng(3).uniform(0.5, 2.0, size=len(y))
    est = RRInfluenceEstimator(model, polish=False).fit(X, y, sample_weight=sw)
    _, grad = est._objective.value_grad(est.theta_.ravel())
    scale = np.abs(est._objective.value_grad(np.zeros(est.theta_.size))[1]).max()
    assert np.abs(grad).max() <= 1e-6 * scale


def test_liblinear_penalizes_the_scaled_intercept():
    X, y = make_data(300, seed=4)
    model = LogisticRegression(
        solver="liblinear", intercept_scaling=0.5, C=0.3, tol=1e-10, max_iter=10_000
    )
    est = RRInfluenceEstimator(model, polish=False).fit(X, y)
    _, grad = est._objective.value_grad(est.theta_.ravel())
    assert np.abs(grad).max() <= 1e-5


@pytest.mark.parametrize("n_classes", [2, 3])
def test_hessian_matches_finite_differences(n_classes):
    X, y = make_data(200, seed=5, n_classes=n_classes)
    est = RRInfluenceEstimator(LogisticRegression()).fit(X, y)
    obj, theta = est._objective, est.theta_.ravel()
    h = 1e-5
    fd = np.column_stack(
        [
            (obj.value_grad(theta + h * e)[1] - obj.value_grad(theta - h * e)[1])
            / (2 * h)
            for e in np.eye(theta.size)
        ]
    )
    H = obj.hessian(theta)
    if n_classes > 2:  # the documented null-direction shift
        H = H - obj.null_shift()
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-6 * np.abs(H).max())


def test_polish_reaches_the_exact_minimizer_and_keeps_estimator():
    X, y = make_data(300, seed=6)
    est = RRInfluenceEstimator(LogisticRegression(tol=1e-2)).fit(X, y)
    _, grad = est._objective.value_grad(est.theta_.ravel())
    assert np.abs(grad).max() < 1e-6
    sk = LogisticRegression(tol=1e-2).fit(X, y)
    np.testing.assert_array_equal(est.estimator_.coef_, sk.coef_)


# -------------------------------------------------------------- vs retraining
def _sk_test_loss(model, X, y):
    return log_loss(y, model.predict_proba(X), labels=model.classes_)


def _test_group(n, n_classes, seed=8):
    # a test *group* (one category): its loss gradient is far from zero, so the
    # first-order term dominates, as in the group-to-group setting
    X_te, y_te = make_data(n, seed=seed, n_classes=n_classes)
    return X_te[X_te[:, 2] == 2], y_te[X_te[:, 2] == 2]


@pytest.mark.parametrize("n_classes", [2, 3])
def test_single_label_flip_matches_retraining(n_classes):
    # small, well-conditioned problem: the one-point influence is within 5 % of
    # retraining with scikit-learn itself, for the 5 most influential flips
    X, y = make_data(4000, seed=7, n_classes=n_classes)
    X_te, y_te = _test_group(1000, n_classes)
    model = LogisticRegression(C=0.1, **TIGHT)
    est = RRInfluenceEstimator(model).fit(X, y)
    base = _sk_test_loss(clone(model).fit(X, y), X_te, y_te)
    flipped = (y + 1) % n_classes
    predicted = est.replacement_influence(
        X_te, y_te, indices=np.arange(len(y)), X_new=X, y_new=flipped, per_row=True
    )
    for i in np.argsort(-np.abs(predicted))[:5]:
        y_new = y.copy()
        y_new[i] = flipped[i]
        actual = _sk_test_loss(clone(model).fit(X, y_new), X_te, y_te) - base
        assert abs(predicted[i] - actual) <= 0.05 * abs(actual), (i, actual)


def test_single_feature_change_ridge_matches_retraining():
    X, _ = make_data(4000, seed=9)
    y = X[:, 0] + 0.3 * X[:, 2] + np.random.default_rng(1).normal(size=len(X))
    X_te, _ = _test_group(1000, 2, seed=10)
    y_te = X_te[:, 0] + 0.3 * X_te[:, 2]
    est = RRInfluenceEstimator(Ridge(alpha=5.0)).fit(X, y)
    base = np.mean((Ridge(alpha=5.0).fit(X, y).predict(X_te) - y_te) ** 2)
    i = int(np.argmax(np.abs(y - X[:, 0] - 0.3 * X[:, 2])))
    X_new = X.copy()
    X_new[i, 2] = (X[i, 2] + 1) % 3
    actual = np.mean((Ridge(alpha=5.0).fit(X_new, y).predict(X_te) - y_te) ** 2)
    predicted = est.replacement_influence(
        X_te, y_te, indices=[i], X_new=X_new[[i]], y_new=y[[i]]
    )
    assert abs(predicted - (actual - base)) <= 0.05 * abs(actual - base)


def test_small_group_label_flips_match_retraining():
    # a deterministic group change (5 flipped labels): first order within 10 %
    X, y = make_data(4000, seed=11)
    X_te, y_te = _test_group(1000, 2, seed=12)
    model = LogisticRegression(C=0.1, **TIGHT)
    est = RRInfluenceEstimator(model).fit(X, y)
    base = _sk_test_loss(clone(model).fit(X, y), X_te, y_te)
    rows = np.argsort(-np.abs(X[:, 0]))[:5]
    y_new = y.copy()
    y_new[rows] = 1 - y[rows]
    actual = _sk_test_loss(clone(model).fit(X, y_new), X_te, y_te) - base
    predicted = est.replacement_influence(
        X_te, y_te, indices=rows, X_new=X[rows], y_new=y_new[rows]
    )
    assert abs(predicted - actual) <= 0.10 * abs(actual)


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize(
    "perturb", [{LABEL: 1.0}, {"g": 0.5}, {"g": 1.0, LABEL: 2.0}], ids=str
)
def test_rr_group_influence_matches_mean_retraining(perturb, order):
    # small-group regime: the expected change over RR draws; tolerance = 5
    # standard errors of the draw mean + 15 % for the expansion's error
    X, y = make_data(1000, seed=13)
    X_te, y_te = make_data(1000, seed=14)
    est = RRInfluenceEstimator(LogisticRegression(), attributes={"g": 2}, order=order)
    est = est.fit(X, y)
    group = np.arange(8)
    predicted = est.influence(X_te, y_te, groups=group, perturb=perturb)
    n_draws = 150
    actual, std = est.validate(
        X_te,
        y_te,
        groups=group,
        perturb=perturb,
        n_draws=n_draws,
        random_state=0,
        return_std=True,
    )
    tol = 5 * std / np.sqrt(n_draws) + 0.15 * abs(actual)
    assert abs(predicted - actual) <= tol, (predicted, actual, tol)


def test_validate_refit_estimator_agrees_with_exact_refit():
    X, y = make_data(500, seed=15)
    X_te, y_te = make_data(500, seed=16)
    est = RRInfluenceEstimator(LogisticRegression(**TIGHT), attributes={"g": 2}).fit(
        X, y
    )
    kwargs = dict(groups=np.arange(20), perturb={"g": 0.5, LABEL: 1.0}, n_draws=3)
    exact = est.validate(X_te, y_te, random_state=1, **kwargs)
    refit = est.validate(X_te, y_te, random_state=1, refit="estimator", **kwargs)
    np.testing.assert_allclose(exact, refit, rtol=1e-4, atol=1e-9)


def test_second_order_is_closer_for_a_large_group():
    X, y = make_data(1500, seed=17)
    X_te, y_te = make_data(1500, seed=18)
    group = X[:, 2] == 1
    perturb = {LABEL: 0.2}
    first = RRInfluenceEstimator(LogisticRegression(), order=1).fit(X, y)
    second = RRInfluenceEstimator(LogisticRegression(), order=2).fit(X, y)
    actual = first.validate(
        X_te, y_te, groups=group, perturb=perturb, n_draws=20, random_state=0
    )
    est1 = first.influence(X_te, y_te, groups=group, perturb=perturb)
    est2 = second.influence(X_te, y_te, groups=group, perturb=perturb)
    assert abs(est2 - actual) < abs(est1 - actual)


# ------------------------------------------------------------------ expectations
def test_exact_expectation_equals_brute_force_sum():
    X, y = make_data(300, seed=19)
    est = RRInfluenceEstimator(LogisticRegression(), attributes={"g": 2}, order=1)
    est = est.fit(X, y)
    X_te, y_te = make_data(200, seed=20)
    i, eps_g, eps_y = 7, 0.7, 1.3
    got = est.influence(X_te, y_te, groups=[i], perturb={"g": eps_g, LABEL: eps_y})
    P_g = RandomizedResponseMechanism(eps_g, 3).matrix
    P_y = RandomizedResponseMechanism(eps_y, 2).matrix
    want = 0.0
    for g_new in range(3):
        for y_new in range(2):
            x_new = X[[i]].copy()
            x_new[0, 2] = g_new
            prob = P_g[int(X[i, 2]), g_new] * P_y[y[i], y_new]
            want += prob * est.replacement_influence(
                X_te, y_te, indices=[i], X_new=x_new, y_new=[y_new]
            )
    assert got == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("order", [1, 2])
def test_monte_carlo_matches_exact(order):
    X, y = make_data(400, seed=21, n_groups=4)
    X_te, y_te = make_data(300, seed=22, n_groups=4)
    attrs = {"g": 2}
    groups = [np.arange(30), X[:, 2] == 1]
    perturb = {"g": [0.3, 2.0], LABEL: [0.5, 3.0]}
    exact = RRInfluenceEstimator(LogisticRegression(), attributes=attrs, order=order)
    exact = exact.fit(X, y).influence(X_te, y_te, groups=groups, perturb=perturb)
    mc = RRInfluenceEstimator(
        LogisticRegression(),
        attributes=attrs,
        expectation="monte_carlo",
        n_mc_samples=200,
        order=order,
        random_state=0,
    ).fit(X, y)
    if order == 1:
        mean, std = mc.influence(
            X_te, y_te, groups=groups, perturb=perturb, return_std=True
        )
        assert np.all(std > 0)
        assert np.all(np.abs(mean - exact) <= 5 * std)
    else:  # no standard error for order 2; its quadratic terms are O(1/n) biased
        mean = mc.influence(X_te, y_te, groups=groups, perturb=perturb)
        np.testing.assert_allclose(mean, exact, rtol=0.1)


@pytest.mark.parametrize("order", [1, 2])
def test_scaling_approximation_exact_for_one_attribute_not_for_two(order):
    X, y = make_data(300, seed=23)
    X_te, y_te = make_data(200, seed=24)
    kw = dict(groups=np.arange(40))
    exact = RRInfluenceEstimator(LogisticRegression(), attributes={"g": 2}, order=order)
    exact = exact.fit(X, y)
    scaling = RRInfluenceEstimator(
        LogisticRegression(), attributes={"g": 2}, expectation="scaling", order=order
    ).fit(X, y)
    one = {"g": [0.2, 1.0, 4.0]}
    np.testing.assert_allclose(
        scaling.influence(X_te, y_te, perturb=one, **kw),
        exact.influence(X_te, y_te, perturb=one, **kw),
        rtol=1e-10,
    )
    two = {"g": [0.2, 1.0, 4.0], LABEL: [0.2, 1.0, 4.0]}
    a = scaling.influence(X_te, y_te, perturb=two, **kw)
    b = exact.influence(X_te, y_te, perturb=two, **kw)
    assert not np.allclose(a, b, rtol=1e-3)


def test_single_attribute_influence_is_proportional_to_change_probability():
    # one binary attribute: E[change] = q(eps) * (effect of a flip), q = 1/(1+e^eps)
    # (first order: linear in the change probability)
    X, y = make_data(300, seed=25)
    est = RRInfluenceEstimator(LogisticRegression(), attributes={"g": 2}, order=1)
    est = est.fit(X, y)
    X_te, y_te = make_data(300, seed=26)
    eps = np.array([0.1, 1.0, 3.0, np.inf])
    group = X[:, 2] == 0
    delta = est.influence(X_te, y_te, groups=group, perturb={LABEL: eps})
    flip = est.replacement_influence(
        X_te, y_te, indices=np.flatnonzero(group), X_new=X[group], y_new=1 - y[group]
    )
    assert delta[-1] == 0.0
    np.testing.assert_allclose(delta, flip / (1 + np.exp(eps)), rtol=1e-10)


def test_forward_correction_matches_retraining_with_corrected_loss():
    X, y = make_data(1000, seed=27)
    X_te, y_te = make_data(1000, seed=28)
    est = RRInfluenceEstimator(LogisticRegression(), correction="forward").fit(X, y)
    group = np.arange(10)
    perturb = {LABEL: [0.5, 2.0, np.inf]}
    predicted = est.influence(X_te, y_te, groups=group, perturb=perturb)
    actual, std = est.validate(
        X_te,
        y_te,
        groups=group,
        perturb=perturb,
        n_draws=100,
        random_state=0,
        return_std=True,
    )
    assert predicted[-1] == pytest.approx(0.0, abs=1e-15)
    tol = 5 * std / np.sqrt(100) + 0.15 * np.abs(actual) + 1e-9
    assert np.all(np.abs(predicted - actual) <= tol)
    # the correction differs from training on the noisy labels as they are
    plain = RRInfluenceEstimator(LogisticRegression()).fit(X, y)
    assert not np.allclose(
        plain.influence(X_te, y_te, groups=group, perturb=perturb)[:2], predicted[:2]
    )


# ---------------------------------------------------------------------- solvers
@pytest.mark.parametrize("n_classes", [2, 3])
def test_solvers_agree(n_classes):
    X, y = make_data(400, seed=29, n_classes=n_classes)
    X_te, y_te = make_data(200, seed=30, n_classes=n_classes)
    kw = dict(groups=[np.arange(10), X[:, 2] == 2], perturb={LABEL: [0.5, 2.0]})
    results = {}
    for method in ("explicit", "cg", "lissa"):
        est = RRInfluenceEstimator(
            LogisticRegression(), method=method, lissa_depth=3000, order=1
        ).fit(X, y)
        results[method] = est.influence(X_te, y_te, **kw)
    np.testing.assert_allclose(results["cg"], results["explicit"], rtol=1e-8)
    np.testing.assert_allclose(results["lissa"], results["explicit"], rtol=1e-6)


# ---------------------------------------------------------------------- pipeline
def test_pipeline_with_raw_categories_equals_one_hot_block_interface():
    rng = np.random.default_rng(31)
    n = 600
    colour = rng.choice(["red", "green", "blue"], size=n)
    num = rng.normal(size=(n, 2))
    X_raw = np.empty((n, 3), dtype=object)
    X_raw[:, :2], X_raw[:, 2] = num, colour
    y = (num[:, 0] + (colour == "red") + rng.logistic(size=n) > 0.5).astype(int)
    ct = ColumnTransformer(
        [("num", StandardScaler(), [0, 1]), ("cat", OneHotEncoder(), [2])],
        sparse_threshold=0,
    )
    pipe = make_pipeline(ct, LogisticRegression())
    via_pipe = RRInfluenceEstimator(pipe, attributes={"colour": 2}).fit(X_raw, y)

    X_model = ct.fit(X_raw).transform(X_raw)
    via_block = RRInfluenceEstimator(
        LogisticRegression(), attributes={"colour": [2, 3, 4]}
    ).fit(X_model, y)
    kw = dict(groups=[np.arange(50), colour == "red"], perturb={"colour": [0.5, 2.0]})
    np.testing.assert_allclose(
        via_pipe.influence(X_raw[:100], y[:100], **kw),
        via_block.influence(X_model[:100], y[:100], **kw),
        rtol=1e-6,
    )
    assert via_pipe.predict(X_raw[:5]).shape == (5,)
    # validation refits the last step on transformed, perturbed rows
    a = via_pipe.validate(X_raw[:100], y[:100], n_draws=2, random_state=0, **kw)
    b = via_block.validate(X_model[:100], y[:100], n_draws=2, random_state=0, **kw)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-10)


def test_pipeline_with_unsupported_last_step_raises():
    X, y = make_data(100)
    pipe = make_pipeline(StandardScaler(), Lasso())
    with pytest.raises(TypeError, match="LogisticRegression.*Ridge"):
        RRInfluenceEstimator(pipe).fit(X, y)


# ----------------------------------------------------------------- bad input
def test_unsupported_estimator_names_supported_ones():
    X, y = make_data(100)
    with pytest.raises(TypeError, match="LinearRegression, LogisticRegression, Ridge"):
        RRInfluenceEstimator(Lasso()).fit(X, y)


def test_l1_logistic_regression_is_rejected():
    X, y = make_data(100)
    if LogisticRegression().penalty == "deprecated":  # scikit-learn >= 1.8
        model = LogisticRegression(solver="liblinear", l1_ratio=1.0)
    else:
        model = LogisticRegression(solver="liblinear", penalty="l1")
    with pytest.raises(ValueError, match="twice-differentiable"):
        RRInfluenceEstimator(model).fit(X, y)


def test_bad_queries_raise():
    X, y = make_data(200)
    est = RRInfluenceEstimator(LogisticRegression(), attributes={"g": 2}).fit(X, y)
    with pytest.raises(ValueError, match="empty"):
        est.influence(X, y, groups=np.zeros(len(y), dtype=bool), perturb={LABEL: 1})
    with pytest.raises(ValueError, match="empty"):
        est.influence(X, y, groups=np.array([], dtype=int), perturb={LABEL: 1})
    with pytest.raises(ValueError, match="epsilon"):
        est.influence(X, y, groups=[0, 1], perturb={LABEL: 0.0})
    with pytest.raises(ValueError, match="epsilon"):
        est.influence(X, y, groups=[0, 1], perturb={"g": [1.0, -2.0]})
    with pytest.raises(ValueError, match="Unknown attribute"):
        est.influence(X, y, groups=[0, 1], perturb={"colour": 1.0})
    with pytest.raises(TypeError, match="perturb"):
        est.influence(X, y, groups=[0, 1], perturb=1.0)
    with pytest.raises(ValueError, match="forward"):
        RRInfluenceEstimator(
            LogisticRegression(), attributes={"g": 2}, correction="forward"
        ).fit(X, y).influence(X, y, groups=[0], perturb={"g": 1.0})


@pytest.mark.parametrize(
    "attributes",
    [{"x0": 0}, {"block": [0, 1]}, {"block": [2]}],
    ids=["float-column", "non-binary-block", "one-category"],
)
def test_non_categorical_attribute_raises(attributes):
    X, y = make_data(200)
    with pytest.raises(ValueError, match="categor"):
        RRInfluenceEstimator(LogisticRegression(), attributes=attributes).fit(X, y)


def test_label_of_regressor_must_be_categorical():
    X, _ = make_data(200)
    y = X[:, 0] * 1.5
    est = RRInfluenceEstimator(Ridge()).fit(X, y)
    with pytest.raises(ValueError, match="not categorical"):
        est.influence(X, y, groups=[0], perturb={LABEL: 1.0})


def test_singular_linear_regression_needs_damping():
    X, _ = make_data(200)
    X = np.column_stack([X, 2 * X[:, 0]])  # collinear
    y = X[:, 0] + np.random.default_rng(0).normal(size=200)
    with pytest.raises(ValueError, match="damping"):
        RRInfluenceEstimator(LinearRegression()).fit(X, y)
    est = RRInfluenceEstimator(LinearRegression(), damping=1e-3, attributes={"g": 2})
    delta = est.fit(X, y).influence(X[:50], y[:50], groups=[0, 1], perturb={"g": 1})
    assert np.all(np.isfinite(delta))


def test_inputs_unchanged_and_results_reproducible():
    X, y = make_data(200)
    X0, y0 = X.copy(), y.copy()
    kw = dict(groups=np.arange(20), perturb={"g": [0.5, 1.0]})
    est = RRInfluenceEstimator(
        LogisticRegression(),
        attributes={"g": 2},
        expectation="monte_carlo",
        random_state=3,
    ).fit(X, y)
    a = est.influence(X, y, **kw)
    b = est.influence(X, y, **kw)
    v1 = est.validate(X, y, n_draws=2, random_state=5, **kw)
    v2 = est.validate(X, y, n_draws=2, random_state=5, **kw)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_dataframe_input_with_named_attribute_column():
    pd = pytest.importorskip("pandas")
    X, y = make_data(300, seed=32)
    df = pd.DataFrame(X, columns=["a", "b", "g"])
    est = RRInfluenceEstimator(LogisticRegression(), attributes={"g": "g"}).fit(df, y)
    plain = RRInfluenceEstimator(LogisticRegression(), attributes={"g": 2}).fit(X, y)
    kw = dict(groups=np.arange(30), perturb={"g": [0.5, 2.0]})
    np.testing.assert_allclose(
        est.influence(df, y, **kw), plain.influence(X, y, **kw), rtol=1e-10
    )


def test_second_order_equals_brute_force_for_two_rows():
    # enumerate the joint outcomes of two rows by hand: mean shift with the
    # expected perturbed Hessian, plus the variance term (class Notes)
    X, y = make_data(300, seed=33)
    X_te, y_te = make_data(200, seed=34)
    est = RRInfluenceEstimator(LogisticRegression(), attributes={"g": 2}, order=2).fit(
        X, y
    )
    rows, eps_g, eps_y = [3, 8], 0.8, 1.5
    perturb = {"g": eps_g, LABEL: eps_y}
    got = est.influence(X_te, y_te, groups=np.array(rows), perturb=perturb)
    obj, theta = est._objective, est.theta_.ravel()
    P_g = RandomizedResponseMechanism(eps_g, 3).matrix
    P_y = RandomizedResponseMechanism(eps_y, 2).matrix
    entry = est._test_direction(X_te, y_te)
    H, H_te, grad_te = est.hessian_, entry.hessian(), entry.grad
    mu, dH, second = np.zeros(H.shape[0]), np.zeros_like(H), []
    for i in rows:
        x_old = np.append(X[i], 1.0)[None]
        _, g_old = obj.rows_value_grad(x_old, y[[i]], np.ones(1), theta)
        h_old = obj.__class__(x_old, y[[i]], np.ones(1), est._adapter).hessian(
            theta, loss_only=True
        )
        outcomes = []
        for g_new in range(3):
            for y_new in range(2):
                x_new = x_old.copy()
                x_new[0, 2] = g_new
                prob = P_g[int(X[i, 2]), g_new] * P_y[y[i], y_new]
                _, g = obj.rows_value_grad(x_new, np.array([y_new]), np.ones(1), theta)
                h = obj.__class__(x_new, np.array([y_new]), np.ones(1), est._adapter)
                outcomes.append((prob, g - g_old, h.hessian(theta, loss_only=True)))
        mu_i = sum(p * d for p, d, _ in outcomes)
        mu += mu_i
        dH += sum(p * h for p, _, h in outcomes) - h_old
        second.append((outcomes, mu_i))
    H_new = H + dH
    dtheta = -np.linalg.solve(H_new, mu)
    B = np.linalg.solve(H_new, np.linalg.solve(H_new, H_te).T).T
    var = sum(
        sum(p * d @ B @ d for p, d, _ in outcomes) - mu_i @ B @ mu_i
        for outcomes, mu_i in second
    )
    want = grad_te @ dtheta + 0.5 * (dtheta @ H_te @ dtheta + var)
    assert got == pytest.approx(want, rel=1e-9)
