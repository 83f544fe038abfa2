"""The exact minimizer of a perturbed logistic objective, with a certificate.

Objective (binary, ``theta`` of length ``p``; multinomial, ``W`` of shape
``(C, p)``)::

    J(theta) = sum_i loss(x_i^T theta, y_i) + (lam / 2) ||theta||^2 + b^T theta

with the logistic loss ``log(1 + e^m) - y m`` or the softmax loss
``logsumexp(W x) - (W x)_y``. ``J`` is ``lam``-strongly convex, so a point
whose gradient has norm at most ``tau`` lies within ``tau / lam`` of the
minimizer: the **certificate** that approximate minima perturbation needs
(:mod:`skdp.linear_model._objective_perturbation`).

The solver is damped Newton (Cholesky of the exact Hessian, Armijo
backtracking), which converges globally on a smooth strongly convex function
and quadratically near the minimum. The final gradient is evaluated in
extended precision (``numpy.longdouble``, 64-bit mantissa on x86-64) so that
its rounding error (at most about ``n u R`` with ``u`` its unit roundoff) is far
below ``tau``; where ``longdouble`` is plain double the tolerance is raised by
:func:`gradient_tolerance` accordingly. If the certificate still fails after
refinement steps, :class:`CertificateError` is raised and nothing is released.
"""

import functools
import math

import numpy as np
from scipy import linalg
from scipy.special import expit, log_expit, logsumexp, softmax
from threadpoolctl import ThreadpoolController

__all__ = [
    "CertificateError",
    "gradient_tolerance",
    "solve_binary",
    "solve_multinomial",
]

_MAX_NEWTON = 100
_MAX_REFINE = 5
# unit roundoff of the certificate's arithmetic
_EXTENDED_EPS = float(np.finfo(np.longdouble).eps)
# the tolerance, relative to the largest possible gradient sum: 1e3 times the
# worst-case rounding of a sum of n terms in extended precision (u = 5e-20), or
# in double precision (u = 1.1e-16) where longdouble is double
TOLERANCE_RELATIVE = 1e-13 if _EXTENDED_EPS < 1e-18 else 1e-10


@functools.cache
def _controller():
    # built once: inspecting the loaded BLAS libraries reads /proc, ~10 ms
    return ThreadpoolController()


class CertificateError(RuntimeError):
    """The solver could not certify ``||grad J|| <= tau`` (nothing released)."""


def gradient_tolerance(n, row_gradient_bound, noise_norm):
    """``tau``: the certified gradient norm, from public quantities only.

    ``TOLERANCE_RELATIVE * (n G + E||b||)``: ``G`` bounds one record's gradient
    norm and ``E||b||`` is the expected noise norm, so ``n G + E||b||`` bounds
    the size of the terms whose sum is the gradient (``lam ||theta*|| <= n G +
    ||b||`` at the minimum). Data-free, so the output perturbation's
    sensitivity ``2 tau / lam`` is fixed before the noise is drawn.
    """
    return TOLERANCE_RELATIVE * (n * row_gradient_bound + noise_norm)


# --------------------------------------------------------------------- binary
def _binary_value(X, y, lam, b, theta):
    m = X @ theta
    # log(1 + e^m) - y m is -log_expit(m) for y = 1 and -log_expit(-m) for y = 0
    loss = -log_expit(np.where(y > 0, m, -m))
    return float(loss.sum() + 0.5 * lam * theta @ theta + b @ theta)


def _binary_gradient(X, y, lam, b, theta, dtype=np.float64):
    X = X.astype(dtype, copy=False)
    theta_ = theta.astype(dtype)
    m = X @ theta_
    # p - y without cancellation: -sigmoid(-m) for y = 1, sigmoid(m) for y = 0
    r = np.where(y > 0, -_sigmoid(-m), _sigmoid(m))
    return X.T @ r + lam * theta_ + b.astype(dtype)


def _sigmoid(m):
    if m.dtype == np.float64:
        return expit(m)
    return 1.0 / (1.0 + np.exp(-m))  # longdouble: exp overflows to inf, 1/inf = 0


def solve_binary(X, y, lam, b, tau):
    # one BLAS thread: small dense products gain little from threads, and
    # oversubscribed OpenBLAS threads spin (as in skdp._fm.statistics)
    with _controller().limit(limits=1, user_api="blas"):
        return _solve_binary(X, y, lam, b, tau)


def _solve_binary(X, y, lam, b, tau):
    """Minimize the perturbed binary logistic objective; certify ``||grad|| <= tau``.

    Parameters
    ----------
    X : ndarray (n, p)
        Clipped rows with the intercept column.
    y : ndarray (n,)
        Labels in {0, 1}.
    lam : float
        Ridge ``> 0``.
    b : ndarray (p,)
        The linear perturbation.
    tau : float or None
        Certified gradient norm; None (no privacy claim, ``epsilon=inf``):
        iterate to the double-precision floor, certify nothing.

    Returns
    -------
    theta : ndarray (p,)
    grad_norm : float
        The certified (extended-precision) gradient norm, ``<= tau``.
    """
    p = X.shape[1]
    theta = np.zeros(p)
    for _ in range(_MAX_NEWTON):
        g = _binary_gradient(X, y, lam, b, theta)
        if tau is not None and np.linalg.norm(g) <= 0.1 * tau:
            break
        w = expit(X @ theta)
        w = w * (1.0 - w)
        H = (X.T * w) @ X
        H[np.diag_indices(p)] += lam
        step = linalg.cho_solve(linalg.cho_factor(H), g)
        theta, moved = _backtrack(
            lambda t: _binary_value(X, y, lam, b, t),
            lambda t: _binary_gradient(X, y, lam, b, t),
            theta,
            step,
            g,
        )
        if not moved:
            break
    return _certify(
        theta,
        lambda t: _binary_gradient(X, y, lam, b, t, np.longdouble),
        lambda t: _binary_hessian_solve(X, lam, t),
        tau,
    )


def _binary_hessian_solve(X, lam, theta):
    w = expit(X @ theta)
    w = w * (1.0 - w)
    H = (X.T * w) @ X
    H[np.diag_indices(X.shape[1])] += lam
    factor = linalg.cho_factor(H)
    return lambda g: linalg.cho_solve(factor, g)


# ---------------------------------------------------------------- multinomial
def _multinomial_value(X, codes, lam, B, W):
    scores = X @ W.T
    loss = logsumexp(scores, axis=1) - scores[np.arange(codes.size), codes]
    return float(loss.sum() + 0.5 * lam * np.sum(W * W) + np.sum(B * W))


def _multinomial_gradient(X, Y, lam, B, W, dtype=np.float64):
    X = X.astype(dtype, copy=False)
    W_ = W.astype(dtype)
    scores = X @ W_.T
    scores = scores - scores.max(axis=1, keepdims=True)
    P = np.exp(scores)
    P /= P.sum(axis=1, keepdims=True)
    return (P - Y.astype(dtype)).T @ X + lam * W_ + B.astype(dtype)


def _multinomial_hessian(X, lam, W):
    n, p = X.shape
    C = W.shape[0]
    P = softmax(X @ W.T, axis=1)
    Z = (P[:, :, None] * X[:, None, :]).reshape(n, C * p)
    H = -(Z.T @ Z)  # - sum_i (P_i kron x_i)(P_i kron x_i)^T
    for k in range(C):
        block = slice(k * p, (k + 1) * p)
        H[block, block] += (X.T * P[:, k]) @ X  # + diag(P_i) kron x_i x_i^T
    H[np.diag_indices(C * p)] += lam
    return H


def solve_multinomial(X, codes, n_classes, lam, B, tau):
    with _controller().limit(limits=1, user_api="blas"):
        return _solve_multinomial(X, codes, n_classes, lam, B, tau)


def _solve_multinomial(X, codes, n_classes, lam, B, tau):
    """Minimize the perturbed softmax objective; certify ``||grad||_F <= tau``.

    ``W`` has one row per class. ``B`` must lie in the subspace of matrices
    whose rows sum to 0 (then so does the minimizer, and ``J`` restricted to
    it is the objective the privacy analysis is about); the Hessian there is
    positive definite, and ``lam I`` makes it so on the whole space.

    Returns
    -------
    W : ndarray (C, p)
    grad_norm : float
    """
    n, p = X.shape
    C = int(n_classes)
    Y = np.zeros((n, C))
    Y[np.arange(n), codes] = 1.0
    W = np.zeros((C, p))
    for _ in range(_MAX_NEWTON):
        G = _multinomial_gradient(X, Y, lam, B, W)
        if tau is not None and np.linalg.norm(G) <= 0.1 * tau:
            break
        H = _multinomial_hessian(X, lam, W)
        step = linalg.cho_solve(linalg.cho_factor(H), G.ravel()).reshape(C, p)
        W, moved = _backtrack(
            lambda t: _multinomial_value(X, codes, lam, B, t),
            lambda t: _multinomial_gradient(X, Y, lam, B, t),
            W,
            step,
            G,
        )
        if not moved:
            break

    def solve(W_):
        factor = linalg.cho_factor(_multinomial_hessian(X, lam, W_))
        return lambda G: linalg.cho_solve(factor, G.ravel()).reshape(C, p)

    return _certify(
        W,
        lambda t: _multinomial_gradient(X, Y, lam, B, t, np.longdouble),
        solve,
        tau,
    )


# -------------------------------------------------------------------- shared
def _backtrack(value, gradient, theta, step, grad):
    """Armijo backtracking along ``-step``; returns (new theta, moved).

    Near the minimum the decrease ``slope / 2`` falls below the rounding of
    ``J`` itself and the Armijo test becomes a coin toss; there the full Newton
    step is taken if it shrinks the gradient (quadratic convergence region).
    """
    f0 = value(theta)
    slope = float(np.sum(grad * step))
    if slope < 1e-12 * (1.0 + abs(f0)):
        candidate = theta - step
        moved = np.linalg.norm(gradient(candidate)) < np.linalg.norm(grad)
        return (candidate, True) if moved else (theta, False)
    t = 1.0
    while t > 1e-12:
        candidate = theta - t * step
        if value(candidate) <= f0 - 1e-4 * t * slope:
            return candidate, True
        t *= 0.5
    return theta, False


def _certify(theta, extended_gradient, hessian_solve, tau):
    """Check ``||grad|| <= tau`` in extended precision, refining if needed."""
    if tau is None:
        g = extended_gradient(theta)
        return theta, float(np.sqrt(np.sum(g * g)))
    for _ in range(_MAX_REFINE + 1):
        g = extended_gradient(theta)
        norm = float(np.sqrt(np.sum(g * g)))
        if norm <= 0.5 * tau:  # half: room for the certificate's own rounding
            return theta, norm
        if not math.isfinite(norm):
            break
        # iterative refinement: a Newton step from the accurate gradient
        theta = theta - hessian_solve(theta)(np.asarray(g, dtype=np.float64))
    raise CertificateError(
        f"could not certify the minimizer: gradient norm {norm:.3g} > tau/2 = "
        f"{0.5 * tau:.3g} after refinement; nothing was released."
    )
