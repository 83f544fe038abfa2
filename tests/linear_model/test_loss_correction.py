"""LossCorrectedLogisticRegression: exact unbiasedness, recovery, API and errors."""

import itertools
import warnings

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import chi2
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skdp.linear_model import LossCorrectedLogisticRegression
from skdp.linear_model._loss_correction import corrected_log_loss
from skdp.mechanisms import RandomizedResponseMechanism
from skdp.preprocessing import ExponentialLabelRelease, RandomizedResponse


def _rr_matrix(epsilon, n_classes):
    return RandomizedResponseMechanism(epsilon, n_classes).matrix


def _clean_loss(Z, y):
    return corrected_log_loss(Z, y)[0]


# ----------------------------------------------- backward: exactly unbiased


@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_backward_loss_expectation_over_rr_equals_clean_loss(n_classes, epsilon):
    # E over the RR draw, computed exactly: sum_j T[y, j] loss_b(Z, j)
    T = _rr_matrix(epsilon, n_classes)
    Z = np.random.default_rng(0).normal(scale=3.0, size=(6, n_classes))
    for y in range(n_classes):
        truth = np.full(len(Z), y)
        expected_loss = np.zeros(len(Z))
        expected_grad = np.zeros_like(Z)
        for j in range(n_classes):
            loss, grad = corrected_log_loss(Z, np.full(len(Z), j), T, "backward")
            expected_loss += T[y, j] * loss
            expected_grad += T[y, j] * grad
        clean_loss, clean_grad = corrected_log_loss(Z, truth)
        np.testing.assert_allclose(expected_loss, clean_loss, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(expected_grad, clean_grad, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("release", ["rr", "exponential"])
def test_backward_risk_is_unbiased_over_every_released_label_vector(release):
    # enumerate all C^n label vectors of a small sample with their probabilities
    n_classes, n, epsilon = 3, 4, 1.0
    if release == "rr":
        rr = RandomizedResponse(epsilon=epsilon, classes=[0, 1, 2])
        rr.fit_resample(np.zeros((n, 1)), np.zeros(n, dtype=int))
        T = rr.label_matrix_
    else:
        elr = ExponentialLabelRelease(epsilon=epsilon, classes=[0, 1, 2])
        elr.fit(np.zeros((n, 1)), np.zeros(n, dtype=int))
        T = elr.label_matrix_  # k-ary RR at eps / 2
        np.testing.assert_allclose(T, _rr_matrix(epsilon / 2, n_classes))
    rng = np.random.default_rng(1)
    Z = rng.normal(scale=2.0, size=(n, n_classes))
    y = np.array([0, 2, 1, 2])
    total_p, expected = 0.0, 0.0
    for released in itertools.product(range(n_classes), repeat=n):
        released = np.array(released)
        p = np.prod(T[y, released])
        total_p += p
        expected += p * corrected_log_loss(Z, released, T, "backward")[0].sum()
    assert total_p == pytest.approx(1.0, abs=1e-12)
    assert expected == pytest.approx(_clean_loss(Z, y).sum(), rel=1e-10)


def test_forward_loss_is_the_log_loss_of_the_noisy_posterior():
    T = _rr_matrix(0.7, 3)
    Z = np.random.default_rng(2).normal(size=(5, 3))
    p = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    for j in range(3):
        loss, grad = corrected_log_loss(Z, np.full(5, j), T, "forward")
        np.testing.assert_allclose(loss, -np.log(p @ T[:, j]), rtol=1e-12)
        # gradient against central differences
        h = 1e-6
        for m in range(3):
            dZ = np.zeros_like(Z)
            dZ[:, m] = h
            up = corrected_log_loss(Z + dZ, np.full(5, j), T, "forward")[0]
            down = corrected_log_loss(Z - dZ, np.full(5, j), T, "forward")[0]
            np.testing.assert_allclose(grad[:, m], (up - down) / (2 * h), atol=1e-7)


# ------------------------------------- forward: recovers clean probabilities


def _noisy_fisher_information(X1, theta, rho):
    """Fisher information of theta from labels flipped with probability rho."""
    s = expit(X1 @ theta)
    q = rho + (1 - 2 * rho) * s
    dq = ((1 - 2 * rho) * s * (1 - s))[:, None] * X1
    return (dq / (q * (1 - q))[:, None]).T @ dq


def test_forward_correction_recovers_the_clean_model_from_rr_labels():
    # known logistic model; labels released by binary RR at eps = 1 (rho = 0.27)
    rng = np.random.default_rng(3)
    n, epsilon = 20000, 1.0
    theta = np.array([1.5, -1.0, 0.3])  # coef, coef, intercept
    X = rng.normal(size=(n, 2))
    X1 = np.column_stack([X, np.ones(n)])
    y = (rng.random(n) < expit(X1 @ theta)).astype(int)
    rr = RandomizedResponse(epsilon=epsilon, classes=[0, 1], random_state=4)
    _, y_noisy = rr.fit_resample(X, y)
    rho = 1 / (1 + np.exp(epsilon))
    info = _noisy_fisher_information(X1, theta, rho)
    # the forward loss is the likelihood of the noisy labels: the MLE is
    # asymptotically N(theta, I^-1), so its Mahalanobis error is chi2(3)
    bound = chi2.ppf(1 - 1e-6, df=3)

    def mahalanobis(model):
        est = np.append(model.coef_[0], model.intercept_)
        return float((est - theta) @ info @ (est - theta))

    forward = LossCorrectedLogisticRegression(
        transition_matrix=rr.label_matrix_, classes=[0, 1], C=1e6
    ).fit(X, y_noisy)
    assert mahalanobis(forward) < bound
    # clean class probabilities on fresh points, within the propagated error
    X_new = rng.normal(size=(200, 2))
    p_true = expit(X_new @ theta[:2] + theta[2])
    p_hat = forward.predict_proba(X_new)[:, 1]
    X_new1 = np.column_stack([X_new, np.ones(200)])
    grad = (p_true * (1 - p_true))[:, None] * X_new1
    sd = np.sqrt(np.einsum("ij,jk,ik->i", grad, np.linalg.inv(info), grad))
    assert np.all(np.abs(p_hat - p_true) < 6 * sd + 1e-3)
    # the same test fails for logistic regression on the noisy labels (shrunk)
    plain = LogisticRegression(C=1e6).fit(X, y_noisy)
    assert mahalanobis(plain) > 5 * bound


def test_forward_correction_recovers_three_class_probabilities():
    rng = np.random.default_rng(5)
    n, epsilon = 30000, 1.5
    W = np.array([[1.0, 0.0], [-0.5, 1.0], [-0.5, -1.0]])
    X = rng.normal(size=(n, 2))
    logits = X @ W.T
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    rr = RandomizedResponse(epsilon=epsilon, classes=[0, 1, 2], random_state=6)
    _, y_noisy = rr.fit_resample(X, y)
    forward = LossCorrectedLogisticRegression(
        transition_matrix=rr.label_matrix_, classes=[0, 1, 2], C=1e6
    ).fit(X, y_noisy)
    plain = LossCorrectedLogisticRegression(correction=None, C=1e6).fit(X, y_noisy)
    X_new = rng.normal(size=(500, 2))
    Ln = X_new @ W.T
    P_new = np.exp(Ln) / np.exp(Ln).sum(axis=1, keepdims=True)
    err_forward = np.abs(forward.predict_proba(X_new) - P_new).mean()
    err_plain = np.abs(plain.predict_proba(X_new) - P_new).mean()
    # an MLE's probability error is O(sqrt(k / n)) for k = 6 parameters, times
    # the noise's variance inflation 1 / (p - q)^2 = 3.5 at this epsilon: the
    # bound 5 sqrt(3.5 k / n) is 5 standard errors
    assert err_forward < 5 * np.sqrt(3.5 * 6 / n)
    assert err_plain > 3 * err_forward


# ------------------------------------------------------- API and errors


@pytest.mark.parametrize("n_classes", [2, 3])
def test_no_correction_is_scikit_learns_logistic_regression(n_classes):
    X, y = make_classification(
        n_samples=300, n_informative=4, n_classes=n_classes, random_state=0
    )
    ours = LossCorrectedLogisticRegression(correction=None, tol=1e-10).fit(X, y)
    ref = LogisticRegression(tol=1e-12, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-6)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-6)
    # the identity matrix leaves every correction equal to no correction
    for correction in ("forward", "backward"):
        other = LossCorrectedLogisticRegression(correction=correction, tol=1e-10)
        np.testing.assert_allclose(other.fit(X, y).coef_, ours.coef_, atol=1e-6)


def test_sample_weight_equals_repetition():
    X, y = make_classification(n_samples=80, random_state=1)
    T = _rr_matrix(1.0, 2)
    w = np.random.default_rng(0).integers(0, 3, size=len(y))
    kw = dict(transition_matrix=T, tol=1e-10)
    a = LossCorrectedLogisticRegression(**kw).fit(X, y, sample_weight=w)
    b = LossCorrectedLogisticRegression(**kw).fit(np.repeat(X, w, 0), np.repeat(y, w))
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)


def test_declared_classes_order_the_matrix_and_allow_a_missing_class():
    X = np.random.default_rng(0).normal(size=(60, 2))
    y = np.where(X[:, 0] > 0, "b", "c")  # "a" never released
    T = _rr_matrix(2.0, 3)
    clf = LossCorrectedLogisticRegression(transition_matrix=T, classes=["a", "b", "c"])
    with pytest.warns(UserWarning, match="outside what transition_matrix"):
        clf.fit(X, y)  # no "a" at all: more than eps = 2 can explain
    assert clf.classes_.tolist() == ["a", "b", "c"]
    assert clf.predict_proba(X).shape == (60, 3)
    assert set(clf.predict(X)) <= {"a", "b", "c"}


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(transition_matrix=np.eye(3)), r"shape \(2, 2\)"),
        (dict(transition_matrix=[[0.5, 0.6], [0.5, 0.5]]), "row-stochastic"),
        (dict(transition_matrix=[[1.5, -0.5], [0.5, 0.5]]), "non-negative"),
        (
            dict(transition_matrix=[[0.5, 0.5], [0.5, 0.5]], correction="backward"),
            "invertible",
        ),
        (dict(classes=[0, 2]), "outside the declared classes"),
        (dict(correction="sideways"), "correction"),
        (dict(C=0.0), "'C' parameter"),
    ],
)
def test_bad_input_is_rejected(kwargs, match):
    X, y = make_classification(n_samples=40, random_state=0)
    with pytest.raises(ValueError, match=match):
        LossCorrectedLogisticRegression(**kwargs).fit(X, y)


def test_inputs_unchanged():
    X, y = make_classification(n_samples=40, random_state=0)
    T = _rr_matrix(1.0, 2)
    X0, y0, T0 = X.copy(), y.copy(), T.copy()
    LossCorrectedLogisticRegression(transition_matrix=T).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(T, T0)


def test_forward_warns_when_frequencies_are_outside_the_noise_range():
    X = np.random.default_rng(0).normal(size=(100, 2))
    y = np.r_[np.ones(60, dtype=int), np.zeros(40, dtype=int)]  # 60% positive
    T = _rr_matrix(0.1, 2)  # can only produce 47.5% .. 52.5% positives
    with pytest.warns(UserWarning, match="outside what transition_matrix"):
        LossCorrectedLogisticRegression(transition_matrix=T).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LossCorrectedLogisticRegression(transition_matrix=_rr_matrix(2.0, 2)).fit(X, y)
        LossCorrectedLogisticRegression(transition_matrix=T, correction="backward").fit(
            X, y
        )
