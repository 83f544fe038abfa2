"""The objective a fitted linear model minimizes, on fixed training inputs.

Parameters are handled flattened: ``theta`` of shape (K, D) is ``theta.ravel()`` of
length p = K * D (intercept in the last column of each row).
"""

import numpy as np
from scipy.linalg import LinAlgError, cholesky, solve_triangular
from scipy.optimize import minimize

__all__ = ["LinearObjective", "add_intercept_column"]


def add_intercept_column(X, fit_intercept):
    X = np.asarray(X, dtype=np.float64)
    if not fit_intercept:
        return X
    return np.hstack([X, np.ones((X.shape[0], 1))])


class LinearObjective:
    """``J(theta) = sum_i c_i loss(x1_i theta^T, y_i) + 0.5 sum pen theta^2``.

    Parameters
    ----------
    X1 : ndarray (n, D)
        Model inputs with the intercept column.
    y : ndarray (n,)
        Encoded labels (class codes or real values).
    c : ndarray (n,)
        Row weights.
    adapter : LinearLossAdapter
    """

    def __init__(self, X1, y, c, adapter):
        self.X1, self.y, self.c, self.adapter = X1, y, c, adapter
        self.K = adapter.n_outputs
        self.D = X1.shape[1]
        self.p = self.K * self.D
        n_features = self.D - int(adapter.fit_intercept)
        self.pen = adapter.penalty(n_features).ravel()

    # ----- values and gradients --------------------------------------------------
    def theta2d(self, theta):
        return np.asarray(theta).reshape(self.K, self.D)

    def scores(self, X1, theta):
        return X1 @ self.theta2d(theta).T

    def rows_value_grad(self, X1, y, c, theta, T=None):
        """Weighted loss sum and gradient over the given rows (T: forward matrix)."""
        Z = self.scores(X1, theta)
        if T is None:
            loss, R = self.adapter.loss(Z, y), self.adapter.residual(Z, y)
        else:
            loss = self.adapter.forward_loss(Z, y, T)[0]
            R = self.adapter.forward_residual(Z, y, T)[0]
        return float(c @ loss), ((R * c[:, None]).T @ X1).ravel()

    def value_grad(self, theta):
        val, grad = self.rows_value_grad(self.X1, self.y, self.c, theta)
        return val + 0.5 * float(self.pen @ theta**2), grad + self.pen * theta

    # ----- second order ----------------------------------------------------------
    def curvature_weights(self, theta):
        """c_i * d^2 loss / dz^2, shape (n, K, K)."""
        return (
            self.adapter.curvature(self.scores(self.X1, theta)) * self.c[:, None, None]
        )

    def null_shift(self):
        """Softmax scores: the Hessian has null directions u_j = 1_K (x) e_j / sqrt(K)
        that every gradient is orthogonal to; adding sum_j u_j u_j^T makes it
        invertible without changing H^{-1} g for any such gradient g."""
        if not self.adapter.sum_zero_scores:
            return None
        return np.kron(np.ones((self.K, self.K)) / self.K, np.eye(self.D))

    def hessian(self, theta, damping=0.0, loss_only=False):
        """Dense Hessian; ``loss_only`` leaves out penalty, damping and null shift."""
        A = self.curvature_weights(theta)
        H = np.empty((self.K, self.D, self.K, self.D))
        for k in range(self.K):
            for m in range(k, self.K):
                block = self.X1.T @ (self.X1 * A[:, k, m][:, None])
                H[k, :, m, :] = block
                H[m, :, k, :] = block.T
        H = H.reshape(self.p, self.p)
        if loss_only:
            return H
        H[np.diag_indices(self.p)] += self.pen + damping
        shift = self.null_shift()
        if shift is not None:
            H += shift
        return H

    def make_hvp(self, theta, damping=0.0):
        """Return hvp(V, rows=None): H @ V for V of shape (p, m), matrix-free."""
        A = self.curvature_weights(theta)
        X1, K, D, n = self.X1, self.K, self.D, self.X1.shape[0]
        pen = self.pen[:, None]
        sumzero = self.adapter.sum_zero_scores

        def hvp(V, rows=None):
            V = np.asarray(V, dtype=np.float64)
            squeeze = V.ndim == 1
            V2 = V[:, None] if squeeze else V
            Vr = V2.T.reshape(-1, K, D)  # (m, K, D)
            Xs, As, scale = (
                (X1, A, 1.0) if rows is None else (X1[rows], A[rows], n / len(rows))
            )
            ZV = np.einsum("nd,mkd->nmk", Xs, Vr)
            T = np.einsum("nkl,nml->nmk", As, ZV)
            out = scale * np.einsum("nd,nmk->mkd", Xs, T).reshape(-1, K * D).T
            out += (pen + damping) * V2
            if sumzero:
                mean_k = Vr.mean(axis=1, keepdims=True)  # (m, 1, D)
                out += np.broadcast_to(mean_k, Vr.shape).reshape(-1, K * D).T
            return out[:, 0] if squeeze else out

        return hvp

    # ----- refitting -------------------------------------------------------------
    def minimize(self, theta0, chol_lower, parts=None, *, gtol=1e-10, max_iter=1000):
        """Minimize sum over ``parts`` of weighted losses + the penalty.

        ``parts`` is a list of (X1, y, c, T) row blocks (T: forward-correction
        matrix or None); default: the training rows. Preconditioned L-BFGS:
        theta = theta0 + L^{-T} v with L L^T ~ the Hessian at the solution, so the
        problem in v has a near-identity Hessian and converges in a few iterations
        to the exact minimizer (not to the influence approximation).
        """
        if parts is None:
            parts = [(self.X1, self.y, self.c, None)]

        def fun(v):
            theta = theta0 + solve_triangular(chol_lower, v, lower=True, trans="T")
            val = 0.5 * float(self.pen @ theta**2)
            grad = self.pen * theta
            for X1, y, c, T in parts:
                v_part, g_part = self.rows_value_grad(X1, y, c, theta, T)
                val += v_part
                grad += g_part
            return val, solve_triangular(chol_lower, grad, lower=True)

        res = minimize(
            fun,
            np.zeros(self.p),
            jac=True,
            method="L-BFGS-B",
            options={"gtol": gtol, "ftol": 1e-15, "maxiter": max_iter, "maxcor": 20},
        )
        theta = theta0 + solve_triangular(chol_lower, res.x, lower=True, trans="T")
        return theta, res


def safe_cholesky(H):
    """Lower Cholesky factor, or None if H is not positive definite."""
    try:
        return cholesky(H, lower=True)
    except LinAlgError:
        return None
