"""Objective and solver of LossCorrectedLogisticRegression.

The fit minimizes ``(sum_i s_i loss_i + ||W||^2 / (2 C)) / S`` (S = sum_i s_i; the
division changes no minimizer and makes the tolerance independent of n) over
``Theta`` of shape (n_out, p + 1) whose row k is ``[W_k, b_k]``. Two per-row
losses of the logits z_i cover every correction:

- soft targets a_i (rows summing to 1): ``logsumexp(z_i) - a_i . z_i``; one-hot
  a_i is the plain log loss, a_i = (T^{-1})[y~_i] the backward correction;
- likelihoods L_i (L_ik = P(released label of row i | true class k)):
  ``-log sum_k p_k(z_i) L_ik``, the forward correction.

With p = softmax(z) the gradients in z are p - a and p - r, where
r = softmax(z + log L) is the posterior of the clean class given the released
label; the curvatures are Cov_p = diag(p) - p p^T and Cov_p - Cov_r (the forward
loss is not convex in general). Two classes use one logit, z = [0, z1].
"""

import numpy as np
from scipy import optimize
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.special import expit

# Newton polishing with an explicit Hessian when it is small: at most this many
# parameters (an 8 MB Hessian, a Cholesky of <= 0.4 GFLOP) ...
NEWTON_MAX_PARAMS = 1000
# ... and at most this many multiply-adds to build it (about a second on one core);
# above either limit L-BFGS alone runs to the tolerance.
NEWTON_MAX_FLOPS = 2e9
# L-BFGS hands over to Newton once the largest gradient entry is below this:
# early where a Hessian costs at most CHEAP_HESSIAN gradient evaluations, late
# (when a few Newton steps remain) where it costs more. Only the speed depends on
# it, not the result. Measured (CPU s per fit, RR eps 1, one BLAS thread):
# switching at 1e-2 instead of 1e-4 took Adult backward 0.44 -> 0.27 and
# diamonds-cut backward 3.3 -> 0.57 (Hessian = 24 and 15 gradients), but digits
# forward 0.37 -> 1.16 (Hessian = 179 gradients).
NEWTON_SWITCH_GTOL = {True: 1e-2, False: 1e-4}
CHEAP_HESSIAN = 50


def _lse_softmax(Z):
    """Row-wise logsumexp and softmax (Z has no +inf; -inf entries are allowed)."""
    m = Z.max(axis=1, keepdims=True)
    E = np.exp(Z - m)
    s = E.sum(axis=1, keepdims=True)
    return np.log(s[:, 0]) + m[:, 0], E / s


class SoftTargetLoss:
    """``logsumexp(z) - a . z`` with targets a (n, K) whose rows sum to 1."""

    def __init__(self, targets):
        self.targets = np.asarray(targets, dtype=np.float64)

    def value_grad(self, Z, binary):
        """Per-row loss (n,) and d loss / d z (n, n_out)."""
        if binary:
            z, a1 = Z[:, 0], self.targets[:, 1]
            return np.logaddexp(0.0, z) - a1 * z, (expit(z) - a1)[:, None]
        lse, P = _lse_softmax(Z)
        return lse - np.einsum("nk,nk->n", self.targets, Z), P - self.targets

    def curvature(self, Z, binary):
        """d^2 loss / dz^2: (n,) for one logit, else the pair (P, None)."""
        if binary:
            s = expit(Z[:, 0])
            return s * (1.0 - s)
        return _lse_softmax(Z)[1], None


class ForwardLoss:
    """``-log sum_k p_k(z) L_k`` with per-row likelihoods L (n, K)."""

    def __init__(self, likelihood):
        with np.errstate(divide="ignore"):
            self.log_lik = np.log(np.asarray(likelihood, dtype=np.float64))

    def value_grad(self, Z, binary):
        if binary:
            z = Z[:, 0]
            a = z + self.log_lik[:, 1]  # log(L_1 e^z)
            log_num = np.logaddexp(self.log_lik[:, 0], a)  # log(L_0 + L_1 e^z)
            r = np.exp(a - log_num)
            return np.logaddexp(0.0, z) - log_num, (expit(z) - r)[:, None]
        lse, P = _lse_softmax(Z)
        lse_post, R = _lse_softmax(Z + self.log_lik)
        return lse - lse_post, P - R

    def curvature(self, Z, binary):
        if binary:
            z = Z[:, 0]
            s = expit(z)
            r = expit(z + self.log_lik[:, 1] - self.log_lik[:, 0])
            return s * (1.0 - s) - r * (1.0 - r)
        return _lse_softmax(Z)[1], _lse_softmax(Z + self.log_lik)[1]


def _covariance_weights(P, k, m):
    """Entry (k, m) of diag(p) - p p^T for every row."""
    w = -P[:, k] * P[:, m]
    if k == m:
        w += P[:, k]
    return w


class CorrectedObjective:
    """The scaled, penalized objective over theta = Theta.ravel()."""

    def __init__(self, X, sample_weight, loss, *, n_out, fit_intercept, C):
        # the intercept is handled apart from X: no (n, p + 1) copy of the data
        self.X, self.fit_intercept = X, fit_intercept
        self.sw = sample_weight
        self.scale = 1.0 / float(sample_weight.sum())
        self.loss = loss
        self.n_out, self.p = n_out, X.shape[1]
        self.D = self.p + int(fit_intercept)
        self.binary = n_out == 1
        pen = np.zeros((n_out, self.D))
        pen[:, : self.p] = 1.0 / C
        self.pen = pen.ravel()
        self.n_params = n_out * self.D
        # softmax logits: adding a constant to every intercept changes nothing
        self.null_intercepts = fit_intercept and not self.binary

    def logits(self, theta):
        Theta = theta.reshape(self.n_out, self.D)
        Z = self.X @ Theta[:, : self.p].T
        if self.fit_intercept:
            Z += Theta[:, self.p]
        return Z

    def __call__(self, theta):
        """Objective value and gradient."""
        loss, G = self.loss.value_grad(self.logits(theta), self.binary)
        G *= self.sw[:, None]
        value = float(self.sw @ loss) + 0.5 * float(self.pen @ theta**2)
        grad = np.empty((self.n_out, self.D))
        grad[:, : self.p] = G.T @ self.X
        if self.fit_intercept:
            grad[:, self.p] = G.sum(axis=0)
        grad = grad.ravel() + self.pen * theta
        return value * self.scale, grad * self.scale

    def _block(self, w):
        """sum_i w_i x1_i x1_i^T with x1 = [x, 1] (the 1 only with an intercept)."""
        X, p = self.X, self.p
        block = np.empty((self.D, self.D))
        block[:p, :p] = X.T @ (X * w[:, None])
        if self.fit_intercept:
            block[:p, p] = block[p, :p] = w @ X
            block[p, p] = w.sum()
        return block

    def hessian(self, theta):
        """Dense Hessian; the intercepts' null direction (softmax) is shifted to
        a positive eigenvalue, which leaves H^{-1} g unchanged for every gradient
        (gradients are orthogonal to it)."""
        D, K = self.D, self.n_out
        curv = self.loss.curvature(self.logits(theta), self.binary)
        if self.binary:
            H = self._block(self.sw * curv)
        else:
            P, R = curv
            H = np.empty((K, D, K, D))
            for k in range(K):
                for m in range(k, K):
                    w = _covariance_weights(P, k, m)
                    if R is not None:
                        w -= _covariance_weights(R, k, m)
                    block = self._block(self.sw * w)
                    H[k, :, m, :] = block
                    H[m, :, k, :] = block.T
            H = H.reshape(self.n_params, self.n_params)
        H[np.diag_indices(self.n_params)] += self.pen
        H *= self.scale
        if self.null_intercepts:
            u = np.zeros((K, D))
            u[:, -1] = 1.0 / np.sqrt(K)
            u = u.ravel()
            H += np.outer(u, u) * np.abs(np.diag(H)).max()
        return H

    def hessian_cost_in_gradients(self):
        """Cost of a Hessian (n D^2 K (K + 1) / 2 multiply-adds) over that of a
        gradient (2 n D K)."""
        return self.D * (self.n_out + 1) / 4

    def newton_affordable(self):
        n = self.X.shape[0]
        flops = n * self.D**2 * self.n_out * (self.n_out + 1) / 2
        return self.n_params <= NEWTON_MAX_PARAMS and flops <= NEWTON_MAX_FLOPS


def minimize_objective(objective, theta0, *, tol, max_iter):
    """L-BFGS, then Newton polishing when the Hessian is affordable.

    Returns (theta, n_iter). Newton stops one step after the largest gradient
    entry is below ``tol``: its error is then O(tol^2), i.e. rounding, so two
    fits of the same objective (weights vs repeated rows, another BLAS) agree to
    rounding rather than to the tolerance. Where the Hessian is not positive
    definite (the forward loss away from a minimum) a multiple of the
    identity is added; if the line search still fails, L-BFGS runs to ``tol``.
    """
    newton = objective.newton_affordable()
    cheap = objective.hessian_cost_in_gradients() <= CHEAP_HESSIAN
    gtol = max(tol, NEWTON_SWITCH_GTOL[cheap]) if newton else tol
    res = optimize.minimize(
        objective,
        theta0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": gtol, "ftol": 0.0, "maxcor": 20},
    )
    theta, n_iter = res.x, int(res.nit)
    if not newton:
        return theta, n_iter
    theta, n_newton, converged = _newton(objective, theta, tol, max_iter - n_iter)
    n_iter += n_newton
    if not converged and n_iter < max_iter:
        # the line search failed (no descent found): L-BFGS to tol
        res = optimize.minimize(
            objective,
            theta,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter - n_iter, "gtol": tol, "ftol": 0.0},
        )
        theta, n_iter = res.x, n_iter + int(res.nit)
    return theta, n_iter


def _newton(objective, theta, tol, max_steps):
    """Damped Newton; returns (theta, steps, converged)."""
    value, grad = objective(theta)
    for step in range(max(max_steps, 0)):
        last = np.abs(grad).max() <= tol
        factor = _shifted_cholesky(objective.hessian(theta))
        if factor is None:
            return theta, step, False
        direction = -cho_solve(factor, grad)
        slope = float(grad @ direction)
        if not slope < 0:
            return theta, step, last
        t = 1.0
        while True:
            new_theta = theta + t * direction
            new_value, new_grad = objective(new_theta)
            # Armijo, or near the optimum (values equal up to rounding) a full
            # step that shrinks the gradient
            flat = new_value <= value + 1e-10 * (1.0 + abs(value))
            if new_value <= value + 1e-4 * t * slope or (
                t == 1.0 and flat and np.abs(new_grad).max() < np.abs(grad).max()
            ):
                break
            t *= 0.5
            if t < 1e-10:
                return theta, step, last
        theta, value, grad = new_theta, new_value, new_grad
        if last:
            return theta, step + 1, True
    return theta, max(max_steps, 0), np.abs(grad).max() <= tol


def _shifted_cholesky(H):
    """Cholesky factor of H + tau I for the smallest tau in 0, 1e-4 s, 1e-3 s,
    ..., 10 s (s = the largest diagonal entry) that is positive definite (Nocedal &
    Wright, Numerical Optimization, Algorithm 3.3): the plain Newton step where
    H is positive definite (near a strict minimum, and always for the convex
    losses), a descent step between Newton and gradient steps elsewhere (the
    forward loss is not convex). None if no shift up to 10 s works."""
    scale = float(np.abs(np.diag(H)).max())
    for tau in [0.0] + [scale * 10.0**k for k in range(-4, 2)]:
        try:
            return cho_factor(H + tau * np.eye(len(H)) if tau else H)
        except LinAlgError:
            continue
    return None


def approximate_loo_logits(objective, theta):
    """Logits of every row under the fit without that row (one Newton step).

    The objective F = sum_j s_j loss_j(z_j) + penalty is at its minimum theta;
    leaving row i out moves the gradient by -s_i J_i^T g_i (g_i = d loss_i /
    d z_i, J_i = d z_i / d theta), and one Newton step of the objective
    without row i, whose Hessian is H - s_i J_i^T W_i J_i (W_i = d^2 loss_i /
    d z_i^2), gives z_i + s_i M_i (I - s_i W_i M_i)^{-1} g_i with
    M_i = J_i H^{-1} J_i^T (Woodbury): the approximate leave-one-out of
    generalized linear models (exact for a quadratic loss). The softmax null
    direction shifts every logit of a row alike, which changes no prediction.

    For a :class:`SoftTargetLoss` (W_i = Cov_p, whatever the targets).
    Returns None where the Hessian is too large to build
    (``newton_affordable``) or singular.
    """
    if not objective.newton_affordable():
        return None
    K, D = objective.n_out, objective.D
    Z = objective.logits(theta)
    _, G = objective.loss.value_grad(Z, objective.binary)
    try:
        H_inv = np.linalg.inv(objective.hessian(theta) / objective.scale)
    except LinAlgError:
        return None
    H_inv = H_inv.reshape(K, D, K, D)
    X1 = objective.X
    if objective.fit_intercept:
        X1 = np.column_stack([X1, np.ones(len(X1))])
    M = np.empty((len(X1), K, K))
    for k in range(K):
        for m in range(k, K):
            M[:, k, m] = M[:, m, k] = np.einsum(
                "nd,de,ne->n", X1, H_inv[k, :, m, :], X1, optimize=True
            )
    if objective.binary:
        W = objective.loss.curvature(Z, True)[:, None, None]
    else:
        P = objective.loss.curvature(Z, False)[0]
        W = P[:, :, None] * np.eye(K) - P[:, :, None] * P[:, None, :]
    s = objective.sw[:, None, None]
    system = np.eye(K) - s * W @ M
    try:
        step = np.linalg.solve(system, G[:, :, None])
    except LinAlgError:
        # a row of leverage 1 (its leave-one-out fit undetermined in some
        # direction): the pseudo-inverse gives the smallest step
        step = np.linalg.pinv(system) @ G[:, :, None]
    return Z + (s * M @ step)[:, :, 0]
