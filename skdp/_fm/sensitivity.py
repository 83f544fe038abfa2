"""Replace-one sensitivity of the released coefficients, and data-free tuning."""

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from skdp._fm.domain import objective_constants

__all__ = [
    "Sensitivity",
    "balanced_linear_weight",
    "default_coef_norm",
    "max_l2_in_domain",
    "n_released",
    "prior_eigenvalue",
    "sensitivity",
]


@dataclass(frozen=True)
class Sensitivity:
    """Replace-one sensitivity of the released vector: ``l1`` and ``l2`` norms."""

    l1: float
    l2: float


def _interval_product(a, b):
    """Interval of the product of intervals ``a = (lo, hi)`` and ``b`` (arrays)."""
    cands = np.stack([a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]])
    return cands.min(axis=0), cands.max(axis=0)


def _beta_interval(objective, domain):
    if objective == "logistic_taylor":
        return -0.5, 0.5
    if domain.y_bounds is None:
        raise ValueError('The "squared" objective needs y_bounds in the domain.')
    yl, yu = domain.y_bounds
    return -2.0 * yu, -2.0 * yl


def _max_l1_in_domain(domain, idx):
    """max sum_{j in idx} |x_j| over the domain (exact, by water-filling)."""
    m = _top_k(domain, domain._m[idx])
    if m.size == 0:
        return 0.0
    if domain.data_norm is None:
        return float(m.sum())
    R = domain.data_norm
    if np.sum(m**2) <= R * R:
        return float(m.sum())
    # a_j = min(m_j, t) with sum a_j^2 = R^2: bisection on the water level t
    lo_t, hi_t = 0.0, float(m.max())
    for _ in range(200):
        t = 0.5 * (lo_t + hi_t)
        if np.sum(np.minimum(m, t) ** 2) > R * R:
            hi_t = t
        else:
            lo_t = t
    return float(np.minimum(m, lo_t).sum())


def _top_k(domain, m):
    """The ``max_nonzero`` largest entries of ``m`` (all if no sparsity bound)."""
    k = domain.max_nonzero
    if k is None or k >= m.size:
        return m
    return np.sort(m)[::-1][:k]


def max_l2_in_domain(domain, idx):
    m = _top_k(domain, domain._m[idx])
    r = math.sqrt(float(np.sum(m**2)))
    if domain.data_norm is not None:
        r = min(r, domain.data_norm)
    return r


def _pair_matrix(j_idx, k_idx, d):
    """Symmetric matrix with 1 on selected diagonals, 1/2 on selected off-diagonals."""
    M = np.zeros((d, d))
    M[j_idx, k_idx] = 0.5
    M[k_idx, j_idx] = 0.5
    diag = j_idx[j_idx == k_idx]
    M[diag, diag] = 1.0
    return M


def _is_principal(pairs, d):
    """True if ``pairs`` is every (j, k), j <= k, with j, k in some index set J."""
    if not pairs:
        return True
    J = sorted({j for pair in pairs for j in pair})
    return len(pairs) == len(J) * (len(J) + 1) // 2


def _quadratic_part(domain, pairs, kappa, *, weight_from_zero=False):
    """(L1, L2) bounds for the feature-feature entries ``kappa x_j x_k``.

    ``weight_from_zero``: the entries are ``a x_j x_k`` with a per-record weight
    ``a`` anywhere in ``[0, kappa]`` (the Newton round's ``p (1 - p) / 2``):
    each coordinate's range then also contains 0; the norm bounds hold as they
    are (``||a u - a' u'||_1 <= (a + a') max ||u||_1`` and, for ``a, a' >= 0``
    and ``<u, u'> >= 0``, ``||a u - a' u'||_2^2 <= a^2 ||u||^2 + a'^2 ||u'||^2``).
    """
    if not pairs:
        return 0.0, 0.0
    d = domain.n_features
    j_idx = np.array([p[0] for p in pairs])
    k_idx = np.array([p[1] for p in pairs])
    lo, hi = domain.feature_intervals
    m = domain._m
    # coordinate ranges: the product interval, or [min x^2, max x^2] on the diagonal
    plo, phi = _interval_product((lo[j_idx], hi[j_idx]), (lo[k_idx], hi[k_idx]))
    sq_lo = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(lo**2, hi**2))
    diag = j_idx == k_idx
    plo = np.where(diag, sq_lo[j_idx], plo)
    if weight_from_zero:
        plo, phi = np.minimum(plo, 0.0), np.maximum(phi, 0.0)
    ranges = kappa * (phi - plo)
    # max sum |x_j x_k| and max sum (x_j x_k)^2 over the domain
    max_abs = float(np.sum(m[j_idx] * m[k_idx]))
    max_sq = float(np.sum((m[j_idx] * m[k_idx]) ** 2))
    # any S: sum_S |x_j x_k| <= (||x||_1^2 + ||x||_2^2) / 2, sum_S (x_j x_k)^2
    # <= ||x||_2^4, with the largest norms the domain allows (sparsity included)
    every = np.arange(d)
    l1max, l2max = _max_l1_in_domain(domain, every), max_l2_in_domain(domain, every)
    max_abs = min(max_abs, 0.5 * (l1max**2 + l2max**2))
    max_sq = min(max_sq, l2max**4)
    if domain.data_norm is not None:
        R2 = domain.data_norm**2
        M = _pair_matrix(j_idx, k_idx, d)
        lam = float(np.linalg.eigvalsh(M)[-1])
        # Perron: max of |x|^T M |x| on the ball is R^2 lambda_max(M) (M >= 0)
        max_abs = min(max_abs, R2 * lam)
        # with z_j = x_j^2 on the simplex of radius R^2, sum_S z_j z_k = z^T M z
        # <= R^4 min(max entry, lambda_max)
        max_sq = min(max_sq, R2 * R2 * min(float(M.max()), lam))
    l1 = min(2.0 * kappa * max_abs, float(ranges.sum()))
    # principal sets: <u(x), u(x')> >= 0, so ||u - u'||^2 <= ||u||^2 + ||u'||^2
    factor = math.sqrt(2.0) if _is_principal(pairs, d) else 2.0
    l2 = min(factor * kappa * math.sqrt(max_sq), float(np.sqrt(np.sum(ranges**2))))
    return l1, l2


def _linear_part(domain, idx, coef_interval):
    """(L1, L2) bounds for entries ``a x_j`` with ``a`` in ``coef_interval``."""
    if len(idx) == 0:
        return 0.0, 0.0
    idx = np.asarray(idx)
    lo, hi = domain.feature_intervals
    a_lo, a_hi = coef_interval
    plo, phi = _interval_product(
        (np.full(idx.size, a_lo), np.full(idx.size, a_hi)), (lo[idx], hi[idx])
    )
    ranges = phi - plo
    a_max = max(abs(a_lo), abs(a_hi))
    l1 = min(2.0 * a_max * _max_l1_in_domain(domain, idx), float(ranges.sum()))
    l2 = min(
        2.0 * a_max * max_l2_in_domain(domain, idx), float(np.sqrt(np.sum(ranges**2)))
    )
    return l1, l2


def sensitivity(objective, domain, *, linear_weight=1.0, quad_mask=None, lin_mask=None):
    """Replace-one L1 and L2 sensitivity of (a subset of) the released vector.

    Parameters
    ----------
    objective : {"squared", "logistic_taylor"}
    domain : DataDomain
    linear_weight : float
        ``c``: the linear part is released as ``c * b``.
    quad_mask : bool array of shape (p, p) or None
        Which entries of ``A`` to count (``(j, k)`` or ``(k, j)`` set selects the
        upper-triangle entry). Default all. For a vertical partition, a party's
        block is ``quad_mask[np.ix_(cols, cols)] = True`` and a cross block between
        parties ``cols_k x cols_l``.
    lin_mask : bool array of shape (p,) or None
        Which entries of ``b`` to count. Default all.

    Returns
    -------
    Sensitivity
        ``l1`` for the Laplace mechanism, ``l2`` for the Gaussian mechanism.

    Notes
    -----
    Coordinates split into disjoint groups and the bound is the sum (L1) or root
    sum of squares (L2) of per-group bounds, each the smaller of two valid bounds:
    the *range bound* (for every coordinate, the width of its range over the
    domain: no two records differ by more) and the *norm bound*
    ``||v(t) - v(t')|| <= 2 max_t ||v(t)||``. With ``kappa, beta`` as in the module
    docstring, ``m_j = max |x_j|`` over the domain and ``R`` the row-norm bound:

    - feature-feature entries ``kappa x_j x_k`` over a set ``S`` of pairs:
      ``max sum_S |x_j x_k|`` is ``sum_S m_j m_k`` under a box (attained at a
      corner) and ``R^2 lambda_max(M_S)`` under the norm (Perron-Frobenius for the
      non-negative matrix ``M_S`` with 1 on selected diagonals and 1/2 on selected
      off-diagonals; for all pairs ``lambda_max = (d + 1) / 2``, i.e.
      ``(||x||_1^2 + ||x||_2^2) / 2 <= (d + 1) R^2 / 2`` at the uniform row).
      For L2, ``sum_S (x_j x_k)^2 <= R^4`` (for all pairs it is
      ``(||x||^4 + sum x_j^4) / 2``); when ``S`` is all pairs of an index set the
      cross term ``<u(x), u(x')> = ((x.x')^2 + sum x_j^2 x'_j^2) / 2 >= 0``, so the
      difference norm is ``<= sqrt(2) max ||u||`` instead of ``2 max ||u||``.
    - feature-intercept entries ``kappa s x_j`` and linear entries
      ``c beta(y) x_j``: ``max sum |x_j|`` by water-filling on box and ball
      (``sqrt(d) R`` under the norm alone), ``max ||x||_2 = min(R, ||m||_2)``.
    - the intercept's linear entry ``c s beta(y)``: the width of ``beta``'s range
      times ``c s``; the intercept's diagonal ``kappa s^2 n`` has sensitivity 0.

    Worked cases (``R = 1``, ``|y| <= 1``, ``c = 1``, no intercept, ``d >= 2``):
    squared ``L1 = (d + 1) + 4 sqrt(d)``, ``L2 = sqrt(2 + 16)``; logistic
    ``L1 = (d + 1) / 8 + sqrt(d)``, ``L2 = sqrt(2 / 64 + 1)``. (Zhang et al.'s
    ``2 (d + 2 sqrt(d))`` counts the monomial coefficients ``2 A_jk`` instead.)
    With ``max_nonzero = k``, ``max ||x||_1`` is the water-filling over the ``k``
    largest ``m_j`` (``sqrt(k) R`` under the norm), and every quadratic set obeys
    ``sum_S |x_j x_k| <= (||x||_1^2 + ||x||_2^2) / 2 <= (k + 1) R^2 / 2``.
    Each bound is exact for its group under a box alone or a norm alone; with both,
    or for a subset, it is valid but may not be tight.
    """
    kappa, _ = objective_constants(objective)
    b_lo, b_hi = _beta_interval(objective, domain)
    c = float(linear_weight)
    if not c > 0:
        raise ValueError(f"linear_weight must be > 0, got {linear_weight!r}.")
    d, p = domain.n_features, domain.n_coef
    qm = np.ones((p, p), bool) if quad_mask is None else np.asarray(quad_mask, bool)
    lm = np.ones(p, bool) if lin_mask is None else np.asarray(lin_mask, bool)
    if qm.shape != (p, p) or lm.shape != (p,):
        raise ValueError(f"quad_mask must be ({p}, {p}) and lin_mask ({p},).")
    qm = np.triu(qm | qm.T)
    pairs = [(int(j), int(k)) for j, k in zip(*np.nonzero(qm[:d, :d]))]
    parts = [_quadratic_part(domain, pairs, kappa)]
    parts.append(_linear_part(domain, np.flatnonzero(lm[:d]), (c * b_lo, c * b_hi)))
    if domain.fit_intercept:
        s = domain.intercept_scaling
        col = np.flatnonzero(qm[:d, d])
        parts.append(_linear_part(domain, col, (kappa * s, kappa * s)))
        if lm[d]:
            width = c * abs(s) * (b_hi - b_lo)
            parts.append((width, width))
    l1 = sum(part[0] for part in parts)
    l2 = math.sqrt(sum(part[1] ** 2 for part in parts))
    return Sensitivity(l1=float(l1), l2=float(l2))


def n_released(domain):
    """Number of released noisy coordinates: ``p (p + 1) / 2 + p``."""
    p = domain.n_coef
    return p * (p + 1) // 2 + p


def prior_eigenvalue(objective, domain, n):
    """A data-free guess of the mean eigenvalue of ``A`` for ``n`` rows.

    ``A = kappa sum_i x~_i x~_i^T`` has trace ``kappa sum_i ||x~_i||^2 <= kappa
    n (R^2 + s^2)`` (``R`` the largest row norm the domain allows, ``s`` the
    intercept column's value if any), so its mean eigenvalue is at most
    ``kappa n (R^2 + s^2) / p``; this returns that bound. ``n`` is public
    (replace-one neighbours), so it costs no privacy. Used only as the fallback
    of :func:`~skdp._fm.solve.solve_noisy_quadratic` when the noise has left
    nothing of the quadratic; the upper bound errs towards shrinking.
    """
    kappa, _ = objective_constants(objective)
    R = max_l2_in_domain(domain, np.arange(domain.n_features))
    s2 = domain.intercept_scaling**2 if domain.fit_intercept else 0.0
    value = kappa * max(int(n), 1) * (R * R + s2) / domain.n_coef
    return value if value > 0 else 1.0


def default_coef_norm(objective, domain):
    """A data-free guess of ``||w||``: the output scale over the row-norm bound.

    ``max |y| / R`` for ``"squared"`` (a fit with ``x^T w ~ y``) and ``4 / R`` for
    ``"logistic_taylor"`` (log-odds of about 4 at the edge of the domain), with
    ``R`` the largest row norm the domain allows.
    """
    R = max_l2_in_domain(domain, np.arange(domain.n_features))
    if R <= 0:
        return 1.0
    if objective == "squared":
        scale = max(abs(v) for v in domain.y_bounds) if domain.y_bounds else 1.0
        return max(scale, 1e-12) / R
    objective_constants(objective)  # validates the name
    return 4.0 / R


def balanced_linear_weight(objective, domain, mechanism="laplace", coef_norm=None):
    """The ``c`` minimizing the expected error of ``w`` from the noise, heuristically.

    To first order the solution error is ``A^{-1} (E_A w + e_b / 2)``, whose size
    grows like ``sigma(c)^2 (||w||^2 + 1 / (4 c^2))`` with ``sigma(c)``
    proportional to the sensitivity at ``c``. This minimizes that over ``c`` for a
    guess ``coef_norm`` of ``||w||`` (default :func:`default_coef_norm`). It uses
    only the declared domain, never the data, so it costs no privacy.

    The sensitivity is ``Q + c L`` (L1) or ``sqrt(Q^2 + c^2 L^2)`` (L2) with the
    quadratic part ``Q`` and linear part ``L`` computed once.
    """
    if coef_norm is None:
        coef_norm = default_coef_norm(objective, domain)
    p = domain.n_coef
    quad = sensitivity(objective, domain, lin_mask=np.zeros(p, bool))
    lin = sensitivity(objective, domain, quad_mask=np.zeros((p, p), bool))
    return optimal_linear_weight(quad, lin, coef_norm, mechanism)


def optimal_linear_weight(quad, lin, coef_norm, mechanism="laplace"):
    """The ``c`` minimizing ``s(c)^2 (coef_norm^2 + 1 / (4 c^2))``.

    ``s(c) = Q + c L`` (Laplace, L1) or ``sqrt(Q^2 + c^2 L^2)`` (Gaussian, L2)
    with ``Q``, ``L`` the quadratic and linear parts' :class:`Sensitivity`. A grid
    over ``[1e-3, 1e3]`` (log scale) brackets the minimum, then a bounded search
    refines it. Shared by every FM release that weighs its linear block.
    """

    def cost(log_c):
        c = math.exp(log_c)
        if mechanism == "laplace":
            s = quad.l1 + c * lin.l1
        else:
            s = math.hypot(quad.l2, c * lin.l2)
        return s * s * (coef_norm**2 + 0.25 / (c * c))

    grid = np.linspace(math.log(1e-3), math.log(1e3), 121)
    best = grid[int(np.argmin([cost(g) for g in grid]))]
    step = grid[1] - grid[0]
    res = optimize.minimize_scalar(
        cost,
        bounds=(best - step, best + step),
        method="bounded",
        options={"xatol": 1e-6},
    )
    return float(math.exp(res.x if res.fun <= cost(best) else best))


def release_cost(objective, domain, mechanism="laplace", linear_weight="auto"):
    """The data-free error proxy ``s(c)^2 (W^2 + 1 / (4 c^2))`` of a release.

    ``s(c)`` is the L1 (Laplace) or L2 (Gaussian) sensitivity at the linear
    weight ``c`` (``"auto"``: :func:`balanced_linear_weight`) and ``W`` the
    :func:`default_coef_norm`: the quantity :func:`balanced_linear_weight`
    minimizes over ``c``, used to choose between valid descriptions of the same
    declared domain (e.g. a centred box versus a norm ball). The multinomial
    objective is costed as the binary one (same quadratic part).
    """
    if objective == "multinomial_taylor":
        objective = "logistic_taylor"
    if isinstance(linear_weight, str):
        c = balanced_linear_weight(objective, domain, mechanism)
    else:
        c = float(linear_weight)
    sens = sensitivity(objective, domain, linear_weight=c)
    s = sens.l1 if mechanism == "laplace" else sens.l2
    W = default_coef_norm(objective, domain)
    return s * s * (W * W + 0.25 / (c * c))
