"""Solvers for regularized empirical risks sum_j c_j l_j(M_j w + e_j b) + alpha pen(w).

Rows ``M`` (with intercept coefficients ``e``, +-1 or 0) and weights ``c`` encode the
objective (plain, balanced or pairwise risk; see ``_symmetric_loss.py``).

* Convex piecewise-linear losses l_j(z) = max_k (A_jk z + D_jk), identical rows
  merged first:
  - L1 penalty: an exact linear program solved by HiGHS (``linprog``).
  - L2 penalty: smoothing continuation (Moreau envelope, damped Newton) and an
    exact active-set finish whose KKT conditions are verified (stationarity with
    multipliers inside the subdifferentials), which certifies the global optimum.
* Smooth losses: L-BFGS(-B) on the primal (L1 by the split w = w+ - w-).
"""

import warnings

import numpy as np
from scipy import optimize, sparse
from sklearn.exceptions import ConvergenceWarning

__all__ = [
    "best_intercept",
    "merge_duplicate_rows",
    "penalty_value",
    "piecewise_objective",
    "solve_piecewise_l1",
    "solve_piecewise_l2",
    "solve_smooth",
]


def penalty_value(w, alpha, penalty):
    if penalty == "l2":
        return 0.5 * alpha * float(w @ w)
    return alpha * float(np.abs(w).sum())


def piecewise_objective(M, e, c, slopes, offsets, alpha, penalty, w, b):
    z = M @ w + e * b
    losses = np.max(z[:, None] * slopes + offsets, axis=1)
    return float(c @ losses) + penalty_value(w, alpha, penalty)


def best_intercept(scores, e, c, slopes, offsets):
    """Exact minimizer over b of sum_j c_j max_k(A_jk (s_j + e_j b) + D_jk).

    The objective is convex and piecewise linear in b: its minimum is at the kink
    where the (increasing) derivative changes sign. Rows with e_j = 0 do not depend
    on b. O(m K log(m K)).
    """
    used = e != 0
    if not np.any(used):
        return 0.0
    s, e, c = scores[used], e[used], c[used]
    A, D = slopes[used], offsets[used]
    # kinks of row j in z, then in b: b = (z - s_j) / e_j
    z_kink = (D[:, :-1] - D[:, 1:]) / (A[:, 1:] - A[:, :-1])
    b_kink = (z_kink - s[:, None]) / e[:, None]
    jump = (c * np.abs(e))[:, None] * (A[:, 1:] - A[:, :-1])
    # derivative at b -> -inf: rows with e = +1 sit on their first piece, e = -1 last
    slope_low = np.where(e > 0, A[:, 0], A[:, -1]) * e * c
    order = np.argsort(b_kink, axis=None, kind="stable")
    cum = slope_low.sum() + np.cumsum(jump.ravel()[order])
    k = int(np.searchsorted(cum, 0.0, side="left"))
    if k >= cum.size:
        raise ValueError("The intercept is unbounded for this objective.")
    return float(b_kink.ravel()[order][k])


def _segments(slopes, offsets):
    """Widths of the conjugate's segments and the kink positions (their slopes)."""
    width = slopes[:, 1:] - slopes[:, :-1]
    kinks = (offsets[:, :-1] - offsets[:, 1:]) / width
    return width, kinks


def _smoothed(z, slopes, offsets, kinks, mu):
    """Moreau envelope of max_k(A_k z + D_k) with parameter mu, and its derivative.

    env(z) = max_beta beta z - l*(beta) - mu beta^2 / 2, where l* is piecewise linear
    on [A_1, A_K] with slope kink_k on [A_k, A_k+1]; the maximizer beta(z) ramps
    linearly from A_k to A_k+1 on [kink_k + mu A_k, kink_k + mu A_k+1].
    """
    fill = np.clip((z[:, None] - kinks) / mu, slopes[:, :-1], slopes[:, 1:])
    fill -= slopes[:, :-1]
    beta = slopes[:, 0] + fill.sum(axis=1)
    conj = -offsets[:, 0] + (fill * kinks).sum(axis=1)
    return beta * z - conj - 0.5 * mu * beta**2, beta


def _crossover(M, e, c, slopes, kinks, alpha, fit_intercept, z, mu, tol):
    """Exact KKT solve for the active set suggested by the smoothed solution.

    Rows whose smoothed margin lies in a ramp zone are put on that kink
    (M_j w + e_j b = kink), the others on their piece (fixed slope). Solves
        alpha w + M_S^T nu = -G,  e_S^T nu = -g_b,  M_S w + e_S b = kink_S
    (least squares, so degenerate systems with many tied rows are fine), then
    verifies the KKT conditions: every other row on its piece, and multipliers
    nu_j / c_j in the kink's subdifferential [A_k, A_k+1] that satisfy
    stationarity (found by bounded least squares, exact for degenerate sets).
    Returns (w, b, residual) or None when the guess is wrong.
    """
    m, p = M.shape
    lo = kinks + mu * slopes[:, :-1]
    hi = kinks + mu * slopes[:, 1:]
    in_zone = (z[:, None] > lo) & (z[:, None] < hi)
    on_kink = in_zone.any(axis=1)
    k_kink = np.argmax(in_zone, axis=1)
    # the piece of a free row: number of kinks left of it
    piece = (z[:, None] >= hi).sum(axis=1)
    rows_f = ~on_kink
    slope_f = slopes[rows_f, piece[rows_f]]
    G = M[rows_f].T @ (c[rows_f] * slope_f)
    g_b = float((c[rows_f] * slope_f) @ e[rows_f]) if fit_intercept else 0.0
    S = np.flatnonzero(on_kink)
    if S.size > 4000:
        return None  # far from the optimum yet: keep smoothing
    MS, eS, kS = M[S], e[S], kinks[S, k_kink[S]]
    nb = int(fit_intercept)
    ns = S.size
    # (w, b) solves  min alpha/2 ||w||^2 + G.w + g_b b  s.t.  B theta = kink_S,
    # B = [M_S, e_S]: particular solution plus the null space of B, O(ns p^2)
    B = np.column_stack([MS, eS]) if fit_intercept else MS
    g = np.concatenate([G, [g_b] * nb])
    pen = np.r_[np.ones(p), np.zeros(nb)]
    lam, V = np.linalg.eigh(B.T @ B)
    rank_tol = 1e-10 * max(1.0, float(lam.max()) if lam.size else 1.0)
    keep = lam > rank_tol
    theta = V[:, keep] @ ((V[:, keep].T @ (B.T @ kS)) / lam[keep])
    kscale = max(1.0, float(np.abs(kinks).max()))
    if ns and float(np.abs(B @ theta - kS).max()) > tol * kscale:
        return None  # the kink equations are inconsistent
    N = V[:, ~keep]
    if N.shape[1]:
        H = alpha * (N.T * pen) @ N
        rhs_u = -N.T @ (alpha * pen * theta + g)
        u = np.linalg.lstsq(H, rhs_u, rcond=None)[0]
        gscale = max(1.0, float(np.abs(g).max()))
        if float(np.abs(H @ u - rhs_u).max()) > tol * gscale:
            return None  # unbounded along the null space: wrong active set
        theta = theta + N @ u
    w = theta[:p]
    b = float(theta[p]) if fit_intercept else 0.0
    scale = max(1.0, float(np.abs(g).max()), alpha * float(np.abs(w).max()))
    z_new = M @ w + e * b
    # free rows must stay on their piece: between the neighbouring kinks
    n_k = kinks.shape[1]
    rows = np.arange(m)
    left = np.where(piece > 0, kinks[rows, np.maximum(piece - 1, 0)], -np.inf)
    right = np.where(piece < n_k, kinks[rows, np.minimum(piece, n_k - 1)], np.inf)
    slack = tol * max(1.0, float(np.abs(kinks).max()))
    if not (
        np.all(z_new[rows_f] >= left[rows_f] - slack)
        and np.all(z_new[rows_f] <= right[rows_f] + slack)
    ):
        return None
    # multipliers: nu in [c A_k, c A_k+1] with alpha w + G + M_S^T nu = 0 and
    # g_b + e_S^T nu = 0
    target = np.concatenate([-(alpha * w + G), [-g_b] * nb])
    if ns == 0:
        residual = float(np.abs(target).max()) / scale
    else:
        A_nu = np.vstack([MS.T, eS[None]]) if fit_intercept else MS.T
        lo_nu = c[S] * slopes[S, k_kink[S]]
        hi_nu = c[S] * slopes[S, k_kink[S] + 1]
        fit = optimize.lsq_linear(
            A_nu, target, bounds=(lo_nu, hi_nu), method="bvls", tol=1e-14
        )
        residual = float(np.abs(A_nu @ fit.x - target).max()) / scale
    if residual > tol:
        return None
    return w, b, residual


def _newton_smoothed(M, e, c, slopes, offsets, kinks, alpha, fit_b, x, mu):
    """Damped Newton on the smoothed (piecewise-quadratic, C^1) objective.

    The Hessian is alpha I + sum_j (c_j / mu) [M_j, e_j]^T [M_j, e_j] over rows in a
    ramp zone (plus the intercept block); Armijo backtracking makes it globally
    convergent and on a piecewise quadratic it stops after finitely many steps in
    practice (the same argument as the finite Newton method for L2-SVMs).
    """
    m, p = M.shape
    nb = int(fit_b)

    def evaluate(x):
        z = M @ x[:p] + (e * x[p] if fit_b else 0.0)
        val, beta = _smoothed(z, slopes, offsets, kinks, mu)
        return float(c @ val) + 0.5 * alpha * float(x[:p] @ x[:p]), z, beta

    f, z, beta = evaluate(x)
    for _ in range(200):
        r = c * beta
        grad = np.concatenate([M.T @ r + alpha * x[:p], [r @ e] * nb])
        gscale = max(1.0, float(np.abs(M).max()) * float(np.abs(slopes).max()))
        if np.abs(grad).max() <= 1e-13 * gscale:
            break
        lo = kinks + mu * slopes[:, :-1]
        hi = kinks + mu * slopes[:, 1:]
        zone = np.flatnonzero(((z[:, None] > lo) & (z[:, None] < hi)).any(axis=1))
        A = np.column_stack([M[zone], e[zone]]) if fit_b else M[zone]
        H = (A.T * (c[zone] / mu)) @ A
        H[np.arange(p), np.arange(p)] += alpha
        if fit_b:
            H[p, p] += 1e-10 * max(1.0, float(H.diagonal().max()))
        try:
            d = -np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            d = -np.linalg.lstsq(H, grad, rcond=None)[0]
        step = None
        for direction in (d, -grad):
            slope = float(grad @ direction)
            if slope >= 0:
                continue
            t = 1.0
            for _ in range(80):
                f_new, z_new, beta_new = evaluate(x + t * direction)
                if f_new <= f + 1e-4 * t * slope:
                    step = t * direction
                    break
                t *= 0.5
            if step is not None:
                break
        if step is None:  # no descent possible at machine precision
            break
        converged = f - f_new <= 1e-16 * max(1.0, abs(f))
        x, f, z, beta = x + step, f_new, z_new, beta_new
        if converged:
            break
    return x, z


def merge_duplicate_rows(M, e, c, slopes, offsets):
    """Merge identical rows (same M_j, e_j and loss), adding their weights.

    sum_j c_j l_j(z_j) is unchanged; one-hot data has many duplicates, which would
    otherwise make the active-set (KKT) system degenerate and the LP larger.
    """
    key = np.column_stack([M, e, slopes, offsets])
    uniq, first, inverse = np.unique(
        key, axis=0, return_index=True, return_inverse=True
    )
    if len(uniq) == len(key):
        return M, e, c, slopes, offsets
    c_merged = np.bincount(inverse.ravel(), weights=c, minlength=len(uniq))
    return M[first], e[first], c_merged, slopes[first], offsets[first]


def solve_piecewise_l2(
    M, e, c, slopes, offsets, alpha, fit_intercept, *, tol=1e-9, theta0=None
):
    """Minimize sum_j c_j max_k(A_jk z_j + D_jk) + alpha/2 ||w||^2, z = M w + e b.

    Smoothing continuation with an exact finish: minimize the Moreau-smoothed
    objective (damped Newton, warm-started) for mu = mu0, mu0/10, ...; after each
    stage guess the active set (rows at a kink) and solve the KKT system of the
    exact problem for it. The result is returned only if the KKT conditions hold
    (stationarity with multipliers in the subdifferentials, to ``tol``), which
    certifies the global optimum of this convex problem. The smoothed objective is
    within mu max(A^2)/2 of the exact one, so later stages guess better.
    """
    M, e, c, slopes, offsets = merge_duplicate_rows(M, e, c, slopes, offsets)
    m, p = M.shape
    width, kinks = _segments(slopes, offsets)
    mu = 0.1 * (1.0 + float(np.abs(kinks).max())) / float(width.max())
    nb = int(fit_intercept)
    x = np.zeros(p + nb) if theta0 is None else np.append(theta0[0], [theta0[1]] * nb)
    for stage in range(14):
        x, z = _newton_smoothed(
            M, e, c, slopes, offsets, kinks, alpha, fit_intercept, x, mu
        )
        found = _crossover(M, e, c, slopes, kinks, alpha, fit_intercept, z, mu, tol)
        if found is not None:
            w, b, residual = found
            primal = piecewise_objective(M, e, c, slopes, offsets, alpha, "l2", w, b)
            return (
                w,
                b,
                {"primal": primal, "kkt_residual": residual, "n_iter": stage + 1},
            )
        mu /= 10.0
    warnings.warn(
        "The active-set finish did not verify the KKT conditions; returning the "
        f"smoothed solution (mu={mu * 10:.2g}), which may be suboptimal.",
        ConvergenceWarning,
        stacklevel=3,
    )
    w, b = x[:p], (float(x[p]) if fit_intercept else 0.0)
    primal = piecewise_objective(M, e, c, slopes, offsets, alpha, "l2", w, b)
    return w, b, {"primal": primal, "kkt_residual": np.nan, "n_iter": stage + 1}


def solve_piecewise_l1(M, e, c, slopes, offsets, alpha, fit_intercept):
    """Exact LP (HiGHS) for sum_j c_j max_k(A_jk z_j + D_jk) + alpha ||w||_1.

    Variables [w+, w-, b, t]: min alpha 1^T(w+ + w-) + c^T t subject to
    A_jk (M_j (w+ - w-) + e_j b) + D_jk <= t_j for all j, k.
    """
    M, e, c, slopes, offsets = merge_duplicate_rows(M, e, c, slopes, offsets)
    m, p = M.shape
    K = slopes.shape[1]
    rows = np.repeat(np.arange(m), K)
    a = slopes.ravel()
    Mr = M[rows] * a[:, None]
    eb = (e[rows] * a)[:, None] if fit_intercept else np.zeros((m * K, 1))
    T = sparse.csr_matrix((-np.ones(m * K), (np.arange(m * K), rows)), shape=(m * K, m))
    A_ub = sparse.hstack([sparse.csr_matrix(np.hstack([Mr, -Mr, eb])), T]).tocsr()
    b_ub = -offsets.ravel()
    cost = np.concatenate([np.full(2 * p, alpha), [0.0], c])
    bnds = [(0, None)] * (2 * p) + [(None, None) if fit_intercept else (0, 0)]
    bnds += [(None, None)] * m
    res = optimize.linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=bnds, method="highs")
    if res.status != 0:
        raise ValueError(f"The linear program failed: {res.message}")
    w = res.x[:p] - res.x[p : 2 * p]
    return (
        w,
        float(res.x[2 * p]),
        {"primal": float(res.fun), "gap": 0.0, "n_iter": res.nit},
    )


def solve_smooth(loss, M, e, c, alpha, penalty, fit_intercept, theta0, *, tol=1e-10):
    """L-BFGS(-B) on the primal; returns (w, b, objective)."""
    m, p = M.shape
    l1 = penalty == "l1"

    def unpack(x):
        w = x[:p] - x[p : 2 * p] if l1 else x[:p]
        return w, (x[-1] if fit_intercept else 0.0)

    def fun(x):
        w, b = unpack(x)
        z = M @ w + e * b
        val = float(c @ loss.value(z))
        r = c * loss.derivative(z)
        gw = M.T @ r
        if l1:
            val += alpha * float(x[: 2 * p].sum())
            grad = np.concatenate([gw + alpha, -gw + alpha])
        else:
            val += 0.5 * alpha * float(w @ w)
            grad = gw + alpha * w
        if fit_intercept:
            grad = np.append(grad, float(r @ e))
        return val, grad

    w0, b0 = theta0
    x0 = np.concatenate([np.maximum(w0, 0), np.maximum(-w0, 0)]) if l1 else w0.copy()
    if fit_intercept:
        x0 = np.append(x0, b0)
    bounds = None
    if l1:
        bounds = [(0, None)] * (2 * p) + [(None, None)] * int(fit_intercept)
    res = optimize.minimize(
        fun,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 15000, "ftol": tol, "gtol": 1e-10, "maxcor": 20},
    )
    w, b = unpack(res.x)
    return w, float(b), float(res.fun)
