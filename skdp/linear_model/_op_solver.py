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
:func:`gradient_tolerance` accordingly. Refinement steps (Newton steps from the
extended-precision gradient) follow until the certificate holds, up to a
data-independent budget; :func:`check_certifiable` (called before any spend)
refuses the problems whose conditioning could stop the refinement from
contracting. The solver never raises after it starts (see
:class:`~skdp.linear_model.OPLogisticRegression`, Notes, **No data-dependent
failure**).

**Memory.** The rows are held once, as the clipped float64 features
(:class:`Rows`) without the intercept column; every pass (value, gradient,
Hessian, the extended-precision gradient) reads them in blocks of a few
thousand rows into one reused buffer that carries the constant intercept
column, so the temporaries are of the block's size, not of ``n`` (the old
solver built ``n x p`` products, an ``n x p`` longdouble copy and, for ``C``
classes, an ``n x Cp`` matrix per Hessian). One pass computes the value, the
gradient and the Hessian of a Newton step together.
"""

import functools
import math

import numpy as np
from scipy import linalg
from scipy.special import expit, log_expit, logsumexp, softmax
from threadpoolctl import ThreadpoolController

__all__ = [
    "CertificateError",
    "Rows",
    "certifiable_lambda",
    "check_certifiable",
    "gradient_tolerance",
    "solve_binary",
    "solve_multinomial",
]

_MAX_NEWTON = 100
# refinement steps after the Newton phase: under check_certifiable each
# contracts the error by a factor <= 1/3, and 40 of them cover a factor 3^40
# ~ 1e19 (more than the distance from the double-precision floor to tau/2)
_MAX_REFINE = 40
# unit roundoff of the certificate's arithmetic
_EXTENDED_EPS = float(np.finfo(np.longdouble).eps)
_DOUBLE_EPS = float(np.finfo(np.float64).eps) / 2  # unit roundoff of float64
# the tolerance, relative to the largest possible gradient sum: 1e3 times the
# worst-case rounding of a sum of n terms in extended precision (u = 5e-20), or
# in double precision (u = 1.1e-16) where longdouble is double
TOLERANCE_RELATIVE = 1e-13 if _EXTENDED_EPS < 1e-18 else 1e-10
# a pass reads this many bytes of float64 rows per block (block temporaries
# stay in cache and under glibc's mmap threshold, so they are reused, not
# faulted in afresh)
_BLOCK_BYTES = 1 << 20


@functools.cache
def _controller():
    # built once: inspecting the loaded BLAS libraries reads /proc, ~10 ms
    return ThreadpoolController()


class CertificateError(RuntimeError):
    """The certificate's precondition fails (raised before any spend)."""


def gradient_tolerance(n, row_gradient_bound, noise_norm):
    """``tau``: the certified gradient norm, from public quantities only.

    ``TOLERANCE_RELATIVE * (n G + E||b||)``: ``G`` bounds one record's gradient
    norm and ``E||b||`` is the expected noise norm, so ``n G + E||b||`` bounds
    the size of the terms whose sum is the gradient (``lam ||theta*|| <= n G +
    ||b||`` at the minimum). Data-free, so the output perturbation's
    sensitivity ``2 tau / lam`` is fixed before the noise is drawn.
    """
    return TOLERANCE_RELATIVE * (n * row_gradient_bound + noise_norm)


def block_rows(n_samples, width):
    """Rows per block of a pass whose widest temporary has ``width`` columns.

    About ``_BLOCK_BYTES`` of float64 per block, and at most an eighth of the
    rows (at least 64), so that the block temporaries stay a small fraction
    of the rows' own size at small ``n`` too.
    """
    n = max(int(n_samples), 1)
    by_bytes = _BLOCK_BYTES // (8 * max(int(width), 1))
    return int(min(n, max(64, min(by_bytes, math.ceil(n / 8)))))


def certifiable_lambda(n_samples, n_coef, n_classes, row_norm):
    """The smallest ridge :func:`check_certifiable` accepts (data-independent).

    A refinement step is a Newton step with the exact (extended-precision)
    gradient and the double-precision Hessian ``H + E``; its error contracts
    by ``||H^-1 E|| / (1 - ||H^-1 E||)``. ``||H^-1|| <= 1 / lam`` and ``||H||
    <= n h R^2 + lam`` (``h = 1/4`` binary, ``1/2`` for the softmax:
    Gershgorin on ``diag(pi) - pi pi^T``), so ``kappa = 1 + n h R^2 / lam``
    bounds the condition number on every data set. ``E`` is the rounding of
    a sum of ``n`` terms in blocks of ``m`` rows (at most ``(m + n / m) u``
    times the sum of the terms' norms, itself at most ``||H||``) plus
    Cholesky's backward error (``q (q + 1) u ||H||`` for ``q`` coordinates,
    Higham, Accuracy and Stability, Thm 10.3). Requiring ``c u kappa <=
    1/4``, ``c = m + n / m + q (q + 1)``, makes each step contract by at most
    ``1/3``; this is ``lam >= n h R^2 / (1 / (4 c u) - 1)``.
    """
    n = int(n_samples)
    multinomial = n_classes > 2
    q = int(n_coef) * (int(n_classes) if multinomial else 1)
    h = 0.5 if multinomial else 0.25
    m = block_rows(n, q)
    c = m + math.ceil(n / m) + q * (q + 1)
    room = 1.0 / (4.0 * c * _DOUBLE_EPS) - 1.0
    return n * h * row_norm**2 / room if room > 0 else math.inf


def check_certifiable(n_samples, n_coef, n_classes, row_norm, lam):
    """Raise :class:`CertificateError` unless refinement provably contracts.

    Data-independent (``n``, ``p``, ``C``, ``R``, ``lam``: see
    :func:`certifiable_lambda`), so it is called before the spend is
    recorded.
    """
    floor = certifiable_lambda(n_samples, n_coef, n_classes, row_norm)
    if not lam >= floor:
        raise CertificateError(
            f"lambda={lam:.4g} is too small for the certificate's precision at "
            f"n={int(n_samples)}: the Newton system's condition number could "
            f"stall the refinement; choose alpha >= {floor:.4g}. Nothing was "
            "spent."
        )


class Rows:
    """The clipped rows, read in blocks with the intercept column appended.

    Parameters
    ----------
    X : ndarray (n, d)
        Clipped float64 features (held, not copied).
    intercept_scaling : float or None
        The constant column ``s`` appended to every row (None: no intercept).
    """

    def __init__(self, X, intercept_scaling=None):
        self.X = np.asarray(X, dtype=np.float64)
        self.scaling = intercept_scaling
        self.n = self.X.shape[0]
        self.p = self.X.shape[1] + (intercept_scaling is not None)

    def blocks(self, width=None):
        """Yield ``(slice, A)``: ``A`` the block's rows with the intercept column.

        ``A`` is a view of ``X`` without an intercept, else one buffer reused
        from block to block (use it before asking for the next one).
        """
        m = block_rows(self.n, width or self.p)
        buffer = None
        if self.scaling is not None:
            buffer = np.empty((m, self.p))
            buffer[:, -1] = self.scaling
        for start in range(0, self.n, m):
            part = slice(start, min(start + m, self.n))
            if buffer is None:
                yield part, self.X[part]
            else:
                A = buffer[: part.stop - start]
                A[:, :-1] = self.X[part]
                yield part, A


# --------------------------------------------------------------------- binary
def _binary_residual(m, y):
    # p - y without cancellation: -sigmoid(-m) for y = 1, sigmoid(m) for y = 0
    return np.where(y > 0, -_sigmoid(-m), _sigmoid(m))


def _binary_value(rows, y, lam, b, theta):
    total = 0.0
    for part, A in rows.blocks():
        m = A @ theta
        # log(1 + e^m) - y m is -log_expit(m) for y = 1 and -log_expit(-m) for 0
        total -= float(log_expit(np.where(y[part] > 0, m, -m)).sum())
    return total + float(0.5 * lam * theta @ theta + b @ theta)


def _binary_gradient(rows, y, lam, b, theta, dtype=np.float64):
    theta_ = theta.astype(dtype)
    g = lam * theta_ + b.astype(dtype)
    for part, A in rows.blocks():
        A = A.astype(dtype, copy=False)
        g += A.T @ _binary_residual(A @ theta_, y[part])
    return g


def _binary_newton_system(rows, y, lam, b, theta):
    """Value, gradient and Hessian at ``theta`` in one pass over the rows."""
    p = rows.p
    value = float(0.5 * lam * theta @ theta + b @ theta)
    g = lam * theta + b
    H = np.zeros((p, p))
    for part, A in rows.blocks():
        m = A @ theta
        yb = y[part]
        value -= float(log_expit(np.where(yb > 0, m, -m)).sum())
        g += A.T @ _binary_residual(m, yb)
        s = expit(m)
        Z = A * np.sqrt(s * (1.0 - s))[:, None]
        H += Z.T @ Z  # sum_i w_i x_i x_i^T (a symmetric rank-k update)
    H[np.diag_indices(p)] += lam
    return value, g, H


def _binary_hessian(rows, lam, theta):
    p = rows.p
    H = np.zeros((p, p))
    for _, A in rows.blocks():
        s = expit(A @ theta)
        Z = A * np.sqrt(s * (1.0 - s))[:, None]
        H += Z.T @ Z
    H[np.diag_indices(p)] += lam
    return H


def _sigmoid(m):
    if m.dtype == np.float64:
        return expit(m)
    return 1.0 / (1.0 + np.exp(-m))  # longdouble: exp overflows to inf, 1/inf = 0


def _as_rows(X):
    return X if isinstance(X, Rows) else Rows(X)


def solve_binary(X, y, lam, b, tau):
    # one BLAS thread: small dense products gain little from threads, and
    # oversubscribed OpenBLAS threads spin (as in skdp._fm.statistics)
    with _controller().limit(limits=1, user_api="blas"):
        return _solve_binary(_as_rows(X), y, lam, b, tau)


def _solve_binary(rows, y, lam, b, tau):
    """Minimize the perturbed binary logistic objective; certify ``||grad|| <= tau``.

    Parameters
    ----------
    rows : Rows
        Clipped rows and the intercept column (an ``(n, p)`` array is taken
        as rows without one).
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
        The extended-precision gradient norm at ``theta``.
    certified : bool
        ``grad_norm <= tau / 2`` (always True under :func:`check_certifiable`
        in the arguments of the Notes; never raised on).
    """
    theta = np.zeros(rows.p)
    for _ in range(_MAX_NEWTON):
        f0, g, H = _binary_newton_system(rows, y, lam, b, theta)
        if tau is not None and np.linalg.norm(g) <= 0.1 * tau:
            break
        try:
            step = linalg.cho_solve(linalg.cho_factor(H), g)
        except linalg.LinAlgError:  # rounding broke positive definiteness
            break
        theta, moved = _backtrack(
            lambda t: _binary_value(rows, y, lam, b, t),
            lambda t: _binary_gradient(rows, y, lam, b, t),
            theta,
            step,
            g,
            f0,
        )
        if not moved:
            break

    def solve(t):
        factor = linalg.cho_factor(_binary_hessian(rows, lam, t))
        return lambda g: linalg.cho_solve(factor, g)

    return _certify(
        theta,
        lambda t: _binary_gradient(rows, y, lam, b, t, np.longdouble),
        solve,
        tau,
    )


# ---------------------------------------------------------------- multinomial
def _onehot(codes, C, dtype=np.float64):
    Y = np.zeros((codes.size, C), dtype=dtype)
    Y[np.arange(codes.size), codes] = 1
    return Y


def _multinomial_value(rows, codes, lam, B, W):
    total = 0.0
    for part, A in rows.blocks(W.size):
        scores = A @ W.T
        c = codes[part]
        total += float((logsumexp(scores, axis=1) - scores[np.arange(c.size), c]).sum())
    return total + float(0.5 * lam * np.sum(W * W) + np.sum(B * W))


def _multinomial_gradient(rows, codes, lam, B, W, dtype=np.float64):
    C = W.shape[0]
    W_ = W.astype(dtype)
    G = lam * W_ + B.astype(dtype)
    for part, A in rows.blocks(W.size):
        A = A.astype(dtype, copy=False)
        scores = A @ W_.T
        scores = scores - scores.max(axis=1, keepdims=True)
        P = np.exp(scores)
        P /= P.sum(axis=1, keepdims=True)
        P -= _onehot(codes[part], C, dtype)
        G += P.T @ A
    return G


def _add_softmax_hessian(H, A, P):
    """``H += sum_i (diag(P_i) - P_i P_i^T) kron x_i x_i^T`` over a block."""
    C, p = P.shape[1], A.shape[1]
    Z = (P[:, :, None] * A[:, None, :]).reshape(len(A), C * p)
    H -= Z.T @ Z  # - sum_i (P_i kron x_i)(P_i kron x_i)^T
    for k in range(C):
        block = slice(k * p, (k + 1) * p)
        Zk = A * np.sqrt(P[:, k])[:, None]
        H[block, block] += Zk.T @ Zk  # + diag(P_i) kron x_i x_i^T


def _multinomial_hessian(rows, lam, W):
    C, p = W.shape
    H = np.zeros((C * p, C * p))
    for _, A in rows.blocks(C * p):
        _add_softmax_hessian(H, A, softmax(A @ W.T, axis=1))
    H[np.diag_indices(C * p)] += lam
    return H


def _multinomial_newton_system(rows, codes, lam, B, W):
    """Value, gradient and Hessian at ``W`` in one pass over the rows."""
    C, p = W.shape
    value = float(0.5 * lam * np.sum(W * W) + np.sum(B * W))
    G = lam * W + B
    H = np.zeros((C * p, C * p))
    for part, A in rows.blocks(C * p):
        scores = A @ W.T
        c = codes[part]
        lse = logsumexp(scores, axis=1)
        value += float((lse - scores[np.arange(c.size), c]).sum())
        P = np.exp(scores - lse[:, None])
        _add_softmax_hessian(H, A, P)
        P -= _onehot(c, C)
        G += P.T @ A
    H[np.diag_indices(C * p)] += lam
    return value, G, H


def solve_multinomial(X, codes, n_classes, lam, B, tau):
    with _controller().limit(limits=1, user_api="blas"):
        return _solve_multinomial(_as_rows(X), codes, n_classes, lam, B, tau)


def _solve_multinomial(rows, codes, n_classes, lam, B, tau):
    """Minimize the perturbed softmax objective; certify ``||grad||_F <= tau``.

    ``W`` has one row per class. ``B`` must lie in the subspace of matrices
    whose rows sum to 0 (then so does the minimizer, and ``J`` restricted to
    it is the objective the privacy analysis is about); the Hessian there is
    positive definite, and ``lam I`` makes it so on the whole space.

    Returns
    -------
    W : ndarray (C, p)
    grad_norm : float
    certified : bool
    """
    C, p = int(n_classes), rows.p
    W = np.zeros((C, p))
    for _ in range(_MAX_NEWTON):
        f0, G, H = _multinomial_newton_system(rows, codes, lam, B, W)
        if tau is not None and np.linalg.norm(G) <= 0.1 * tau:
            break
        try:
            step = linalg.cho_solve(linalg.cho_factor(H), G.ravel()).reshape(C, p)
        except linalg.LinAlgError:  # rounding broke positive definiteness
            break
        W, moved = _backtrack(
            lambda t: _multinomial_value(rows, codes, lam, B, t),
            lambda t: _multinomial_gradient(rows, codes, lam, B, t),
            W,
            step,
            G,
            f0,
        )
        if not moved:
            break

    def solve(W_):
        factor = linalg.cho_factor(_multinomial_hessian(rows, lam, W_))
        return lambda G: linalg.cho_solve(factor, G.ravel()).reshape(C, p)

    return _certify(
        W,
        lambda t: _multinomial_gradient(rows, codes, lam, B, t, np.longdouble),
        solve,
        tau,
    )


# -------------------------------------------------------------------- shared
def _backtrack(value, gradient, theta, step, grad, f0=None):
    """Armijo backtracking along ``-step``; returns (new theta, moved).

    Near the minimum the decrease ``slope / 2`` falls below the rounding of
    ``J`` itself and the Armijo test becomes a coin toss; there the full Newton
    step is taken if it shrinks the gradient (quadratic convergence region).
    """
    if f0 is None:
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
    """Check ``||grad|| <= tau / 2`` in extended precision, refining if needed.

    Returns ``(theta, norm, certified)`` and never raises: the number of
    refinement steps is bounded by ``_MAX_REFINE`` whatever the data, and if
    the certificate is still out of reach (excluded by
    :func:`check_certifiable` in the argument of the Notes) the iterate with
    the smallest gradient is returned with ``certified=False`` (zeros if no
    iterate had a finite gradient, rather than a non-finite model).
    """
    if tau is None:
        g = extended_gradient(theta)
        return theta, float(np.sqrt(np.sum(g * g))), True
    best = None
    for k in range(_MAX_REFINE + 1):
        g = extended_gradient(theta)
        norm = float(np.sqrt(np.sum(g * g)))
        if norm <= 0.5 * tau:  # half: room for the certificate's own rounding
            return theta, norm, True
        if not math.isfinite(norm):
            break
        if best is None or norm < best[1]:
            best = (theta, norm)
        if k == _MAX_REFINE:
            break
        # iterative refinement: a Newton step from the accurate gradient
        try:
            theta = theta - hessian_solve(theta)(np.asarray(g, dtype=np.float64))
        except linalg.LinAlgError:
            break
    if best is None:
        return np.zeros_like(theta), math.inf, False
    return best[0], best[1], False
