"""Inverse-Hessian-vector products: explicit Cholesky, conjugate gradient, LiSSA.

All solvers take a symmetric positive definite operator H (dimension p) and return
H^{-1} v for one or several right-hand sides v (shape (p,) or (p, m)).

Stated agreement (tested in tests/inspection/test_ihvp.py and
test_influence.py::test_solvers_agree): on a problem with condition number kappa,
``cg`` stops at ||H x - v|| <= rtol ||v||, so its normwise relative error against
``explicit`` is at most kappa * rtol (1e-8 for rtol=1e-10, kappa <= 100); full-batch
``lissa`` with ``scale >= lambda_max`` converges like (1 - lambda_min / scale)^depth,
so with depth >= 25 * kappa it agrees with the others to 1e-6 relative. Minibatch
LiSSA (``batch_size``) adds sampling noise of order sqrt(1 / (batch_size * repeats))
and is meant for models too large for the other two.
"""

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

__all__ = ["ExplicitSolver", "ConjugateGradientSolver", "LissaSolver"]


class ExplicitSolver:
    """Cholesky factorization of the dense Hessian, computed once."""

    def __init__(self, hessian):
        try:
            self._factor = cho_factor(hessian, lower=True)
        except LinAlgError as exc:
            raise ValueError(
                "The Hessian is not positive definite (singular objective, e.g. "
                "LinearRegression with collinear columns or an unpenalized model on "
                "separable data); set damping > 0."
            ) from exc
        self.n_hvp_ = 0

    def solve(self, v):
        return cho_solve(self._factor, v)


def _as_2d(v):
    v = np.asarray(v, dtype=np.float64)
    return (v[:, None], True) if v.ndim == 1 else (v, False)


class ConjugateGradientSolver:
    """Conjugate gradient on Hessian-vector products (no Hessian is formed).

    Parameters
    ----------
    hvp : callable
        ``hvp(V)`` returns H @ V for V of shape (p, m).
    dim : int
    rtol : float
        Stop when ||H x - v|| <= rtol ||v|| for every column.
    max_iter : int or None
        Default 10 * dim.
    """

    def __init__(self, hvp, dim, *, rtol=1e-10, max_iter=None):
        self.hvp, self.dim, self.rtol = hvp, dim, rtol
        self.max_iter = 10 * dim if max_iter is None else max_iter
        self.n_hvp_ = 0

    def solve(self, v):
        B, squeeze = _as_2d(v)
        X = np.zeros_like(B)
        R = B.copy()
        P = R.copy()
        rs = np.sum(R * R, axis=0)
        target = (self.rtol * np.linalg.norm(B, axis=0)) ** 2
        for _ in range(self.max_iter):
            active = rs > target
            if not np.any(active):
                break
            HP = self.hvp(P)
            self.n_hvp_ += 1
            curv = np.sum(P * HP, axis=0)
            alpha = np.where(active, rs / np.where(curv > 0, curv, 1.0), 0.0)
            X += alpha * P
            R -= alpha * HP
            rs_new = np.sum(R * R, axis=0)
            beta = np.where(active, rs_new / np.where(rs > 0, rs, 1.0), 0.0)
            P = R + beta * P
            rs = rs_new
        self.relative_residual_ = np.sqrt(rs) / np.maximum(
            np.linalg.norm(B, axis=0), 1e-300
        )
        return X[:, 0] if squeeze else X


class LissaSolver:
    """LiSSA (Agarwal, Bullins & Hazan 2017) as used by Koh & Liang (2017).

    Recursion h_0 = v, h_j = v + (I - H / scale) h_{j-1}; H^{-1} v ~= h_depth /
    scale. With ``batch_size`` each H is the Hessian of a random minibatch (rescaled
    to the full sum), and ``repeats`` independent recursions are averaged.

    Parameters
    ----------
    hvp : callable
        ``hvp(V, rows=None)``: H @ V, or the minibatch estimate on ``rows``.
    dim, n_samples : int
    scale : float or None
        Must exceed lambda_max(H) / 2 for convergence; None estimates lambda_max by
        power iteration and uses 1.05 times it.
    depth, repeats : int
    batch_size : int or None
        None: full-batch (deterministic) recursion.
    random_state : numpy Generator
    """

    def __init__(
        self,
        hvp,
        dim,
        n_samples,
        *,
        scale=None,
        depth=2000,
        repeats=1,
        batch_size=None,
        random_state=None,
    ):
        self.hvp, self.dim, self.n_samples = hvp, dim, n_samples
        self.depth, self.repeats, self.batch_size = depth, repeats, batch_size
        self.rng = random_state
        self.n_hvp_ = 0
        self.scale = self._estimate_scale() if scale is None else float(scale)

    def _estimate_scale(self, n_iter=100):
        v = np.ones((self.dim, 1)) / np.sqrt(self.dim)
        lam = 0.0
        for _ in range(n_iter):
            w = self.hvp(v)
            self.n_hvp_ += 1
            lam_new = float(np.linalg.norm(w))
            v = w / max(lam_new, 1e-300)
            if abs(lam_new - lam) <= 1e-6 * lam_new:
                break
            lam = lam_new
        return 1.05 * lam_new

    def solve(self, v):
        B, squeeze = _as_2d(v)
        total = np.zeros_like(B)
        for _ in range(self.repeats):
            h = B.copy()
            for _ in range(self.depth):
                if self.batch_size is None:
                    Hh = self.hvp(h)
                else:
                    rows = self.rng.choice(
                        self.n_samples, self.batch_size, replace=False
                    )
                    Hh = self.hvp(h, rows=rows)
                self.n_hvp_ += 1
                h = B + h - Hh / self.scale
            total += h / self.scale
        X = total / self.repeats
        return X[:, 0] if squeeze else X
