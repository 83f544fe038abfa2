"""The multinomial (softmax) logistic objective in one functional-mechanism release.

Objective
---------
For a record ``(x, y)`` with ``y`` one of ``C`` classes (one-hot ``y_c``) and
scores ``z_c = x^T w_c`` (``x`` with the intercept column), the softmax loss
``L(z) = log sum_c e^{z_c} - sum_c y_c z_c`` has, at ``z = 0``, gradient
``1/C - y_c`` and Hessian ``H = (I - 1 1^T / C) / C`` (``diag(p) - p p^T`` at
``p = 1/C``). Its order-2 Taylor expansion is::

    log C + sum_c (1/C - y_c) z_c + z^T H z / 2

The loss and its expansion are unchanged by adding one vector to every
``w_c`` (``H 1 = 0`` and ``sum_c (1/C - y_c) = 0``), so we fix the last class's
``w_C = 0`` without loss. Summed over records, with ``W = [w_1 .. w_{C-1}]``::

    F(W) = (1 / 2C) tr(W^T G W K) + tr(B^T W),   K = I_{C-1} - 1 1^T / C,
    G = sum_i x_i x_i^T,   B = sum_i x_i (1/C - y_i[:C-1])^T   (p x (C - 1))

The **only** data-dependent quadratic statistic is ``G``, the same Gram matrix
as in the binary case, released once as ``A = G / 8``; the linear statistics are
the ``C - 1`` columns of ``B`` (the last one is ``-sum`` of the others and is
not released). The minimizer is ``W = -C G^{-1} B K^{-1}`` with
``K^{-1} = I + 1 1^T``; with ``A = G / 8`` this is ``(C / 4)`` times the binary
solve ``-A^{-1} b' / 2`` applied to each column ``b'`` of ``B (I + 1 1^T)``.
For ``C = 2`` everything reduces to the binary Taylor objective
(``b = X^T (1/2 - y)``), and so does the sensitivity below.

Sensitivity (replace-one neighbours)
------------------------------------
Released vector: ``(A[triu], c B)`` (``c`` the linear weight). The quadratic
part is the binary one (:func:`~skdp._fm.sensitivity.sensitivity` with
``kappa = 1/8``). For the linear part let ``beta = 1/C - y[:C-1]``:

- ``||beta||_1 <= (C - 1)/C + (C - 2)/C = (2C - 3)/C`` (for ``y`` not the last
  class; ``(C - 1)/C`` for the last one) and
  ``||beta||_2^2 <= (1 - 1/C)^2 + (C - 2)/C^2 = (C^2 - C - 1)/C^2``.
- Feature rows: ``x beta^T - x' beta'^T`` has
  ``||.||_1 <= max||x||_1 (||beta||_1 + ||beta'||_1) <= 2 M_1 (2C - 3)/C`` and
  ``||.||_F <= 2 M_2 sqrt(C^2 - C - 1)/C`` (``M_1``, ``M_2`` the largest L1 and
  L2 row norms the domain allows, as in the binary case). Both are attained on
  a domain symmetric about 0 (``x' = -x``, same label, not the last class), so
  they cannot be improved there; the per-coordinate range bound
  ``sum_{j, c} width(beta_c x_j)`` is used when smaller.
- Intercept row ``s beta``: ``s ||beta - beta'||`` with ``beta - beta' =
  e_b - e_a`` restricted to the first ``C - 1`` classes: at most ``2 s`` (L1)
  and ``sqrt(2) s`` (L2) for ``C >= 3``.

- Rows restricted to a set ``J`` (``lin_mask``; a vertical group): the same
  bounds with ``M_1(J)``, ``M_2(J)``. Rows whose ``x`` is held fixed while only
  the label changes (``label_only_mask``; a vertical label party's view of
  another party's rows): ``c x_J (beta - beta')^T``, like the intercept row,
  exactly ``c ||x_J||_1 ||beta - beta'||_1 <= 2 c M_1(J)`` and
  ``sqrt(2) c M_2(J)`` for ``C >= 3``.

The joint L1 sensitivity of the linear statistics of all classes is therefore
``2 c ((2C - 3)/C M_1 + s) < 4 c (M_1 + s/2)``: it does not grow with ``C``,
while one-vs-rest must split the budget ``C`` ways. The parts add (L1) or add in
squares (L2), as in :func:`~skdp._fm.sensitivity.sensitivity`.

References
----------
Zhang, Zhang, Xiao, Yang & Winslett (2012). Functional mechanism: regression
analysis under differential privacy. VLDB.
"""

import math

import numpy as np

from skdp._fm.domain import symmetric_from_triu, triu_indices
from skdp._fm.release import (
    NoisyRelease,
    lattice_granularity,
    make_mechanism,
    release_noise_std,
)
from skdp._fm.sensitivity import (
    Sensitivity,
    _interval_product,
    _max_l1_in_domain,
    default_coef_norm,
    max_l2_in_domain,
    optimal_linear_weight,
    prior_eigenvalue,
    sensitivity,
)
from skdp._fm.solve import solve_noisy_quadratic
from skdp.utils import noise_generator

__all__ = [
    "balanced_multinomial_weight",
    "multinomial_n_released",
    "multinomial_sensitivity",
    "release_multinomial",
    "solve_multinomial",
]


def _check_classes(n_classes):
    C = int(n_classes)
    if C < 2 or C != n_classes:
        raise ValueError(f"n_classes must be an int >= 2, got {n_classes!r}.")
    return C


def _record_rows_part(domain, C, c, idx):
    """(L1, L2) of the feature rows ``idx`` of ``c B`` for a record neighbour
    (``x`` and the label both change): ``2 c (2C - 3)/C M_1`` and
    ``2 c sqrt(C^2 - C - 1)/C M_2`` over ``idx``, or the range bound."""
    idx = np.asarray(idx, dtype=np.intp)
    if idx.size == 0:
        return 0.0, 0.0
    lo, hi = domain.feature_intervals
    plo, phi = _interval_product(
        (np.full(idx.size, 1.0 / C - 1.0), np.full(idx.size, 1.0 / C)),
        (lo[idx], hi[idx]),
    )
    ranges = np.tile(c * (phi - plo), C - 1)
    l1 = 2.0 * c * (2 * C - 3) / C * _max_l1_in_domain(domain, idx)
    l2 = 2.0 * c * math.sqrt(C * C - C - 1) / C * max_l2_in_domain(domain, idx)
    return min(l1, float(ranges.sum())), min(l2, float(np.sqrt(np.sum(ranges**2))))


def _label_change_factors(C):
    """Largest ``||beta(y) - beta(y')||_1`` and ``||.||_2`` over the released
    ``C - 1`` columns: ``e_b - e_a`` restricted to them (2 and sqrt(2) for
    ``C >= 3``; 1 and 1 for ``C = 2``)."""
    return (2.0 if C > 2 else 1.0), math.sqrt(min(C - 1, 2))


def _label_rows_part(domain, C, c, idx):
    """(L1, L2) of the feature rows ``idx`` of ``c B`` when only the label
    changes (``x`` fixed): ``c x (beta - beta')^T``, exactly
    ``c ||x||_1 ||beta - beta'||_1 <= 2 c M_1`` and ``sqrt(2) c M_2``."""
    idx = np.asarray(idx, dtype=np.intp)
    if idx.size == 0:
        return 0.0, 0.0
    f1, f2 = _label_change_factors(C)
    return (
        c * f1 * _max_l1_in_domain(domain, idx),
        c * f2 * max_l2_in_domain(domain, idx),
    )


def _linear_parts(domain, C, c, lin_mask=None, label_only_mask=None):
    """(L1, L2) parts of the rows of ``c B`` selected by ``lin_mask`` (record
    neighbours; default all rows) and ``label_only_mask`` (only the label
    changes; default none). The intercept row ``c s beta`` is a label-only row
    whatever the neighbour (its ``x`` is the public ``s``)."""
    d, p = domain.n_features, domain.n_coef
    lm = np.ones(p, bool) if lin_mask is None else np.asarray(lin_mask, bool)
    om = np.zeros(p, bool)
    if label_only_mask is not None:
        om = np.asarray(label_only_mask, bool)
    if lm.shape != (p,) or om.shape != (p,):
        raise ValueError(f"lin_mask and label_only_mask must have shape ({p},).")
    if np.any(lm & om):
        raise ValueError("a row is either a record row or a label-only row.")
    parts = [_record_rows_part(domain, C, c, np.flatnonzero(lm[:d]))]
    if label_only_mask is not None:
        parts.append(_label_rows_part(domain, C, c, np.flatnonzero(om[:d])))
    if domain.fit_intercept and (lm[d] or om[d]):
        s = abs(domain.intercept_scaling)
        f1, f2 = _label_change_factors(C)
        parts.append((c * s * f1, c * s * f2))
    return parts


def multinomial_sensitivity(
    domain,
    n_classes,
    *,
    linear_weight=1.0,
    linear=True,
    quadratic=True,
    quad_mask=None,
    lin_mask=None,
    label_only_mask=None,
):
    """Replace-one L1 and L2 sensitivity of ``(A[triu], c B)`` (module Notes).

    Parameters
    ----------
    domain : DataDomain
    n_classes : int
        ``C >= 2``; ``C = 2`` gives exactly the binary Taylor sensitivity.
    linear_weight : float
        ``c``.
    linear, quadratic : bool
        Which parts to count (both by default).
    quad_mask : bool array of shape (p, p) or None
        Which entries of ``A`` to count (as in
        :func:`~skdp._fm.sensitivity.sensitivity`); default all.
    lin_mask : bool array of shape (p,) or None
        Which rows of ``B`` to count, all ``C - 1`` columns of each, for a
        neighbour that may change the row's ``x`` and the label; default all.
    label_only_mask : bool array of shape (p,) or None
        Rows of ``B`` (disjoint from ``lin_mask``) whose ``x`` is held fixed
        and only the label changes: a vertical label party's view of another
        party's rows (module Notes). Default none.

    Returns
    -------
    Sensitivity
    """
    C = _check_classes(n_classes)
    c = float(linear_weight)
    if not c > 0:
        raise ValueError(f"linear_weight must be > 0, got {linear_weight!r}.")
    parts = []
    if quadratic:
        p = domain.n_coef
        quad = sensitivity(
            "logistic_taylor", domain, quad_mask=quad_mask, lin_mask=np.zeros(p, bool)
        )
        parts.append((quad.l1, quad.l2))
    if linear:
        parts += _linear_parts(domain, C, c, lin_mask, label_only_mask)
    return Sensitivity(
        l1=float(sum(a for a, _ in parts)),
        l2=float(math.sqrt(sum(b * b for _, b in parts))),
    )


def multinomial_n_released(domain, n_classes):
    """Released coordinates: ``p (p + 1) / 2 + p (C - 1)``."""
    p = domain.n_coef
    return p * (p + 1) // 2 + p * (_check_classes(n_classes) - 1)


def balanced_multinomial_weight(domain, n_classes, mechanism="laplace"):
    """The data-free ``c`` of :func:`~skdp._fm.sensitivity.balanced_linear_weight`
    for the multinomial release (same cost ``s(c)^2 (W^2 + 1 / (4 c^2))``)."""
    C = _check_classes(n_classes)
    W = default_coef_norm("logistic_taylor", domain)
    quad = multinomial_sensitivity(domain, C, linear=False)
    lin = multinomial_sensitivity(domain, C, quadratic=False)
    return optimal_linear_weight(quad, lin, W, mechanism)


def release_multinomial(
    A, B, domain, n_classes, *, epsilon, delta, mechanism, linear_weight, random_state
):
    """The one noisy release of ``(A, B)``: ``A[triu]`` then ``c B`` (row-major).

    One generator; ``noise_A`` (triu order, the intercept's diagonal set to 0:
    ``A[-1, -1] = s^2 n / 8`` is public) is drawn first, then ``noise_B``
    (``p (C - 1)`` entries, row-major). Laplace values are rounded to the
    mechanism's lattice first, as in :func:`~skdp._fm.release.add_noise`.

    Returns
    -------
    NoisyRelease
        ``b`` is the noisy ``B`` of shape (p, C - 1).
    """
    C = _check_classes(n_classes)
    if isinstance(linear_weight, str) and linear_weight == "auto":
        c = balanced_multinomial_weight(domain, C, mechanism)
    else:
        c = float(linear_weight)
    sens = multinomial_sensitivity(domain, C, linear_weight=c)
    mech = make_mechanism(
        epsilon, delta, sens, multinomial_n_released(domain, C), mechanism
    )
    rng = noise_generator(random_state)
    p = domain.n_coef
    noise_A = np.asarray(mech.sample_noise(p * (p + 1) // 2, rng), dtype=np.float64)
    noise_B = np.asarray(mech.sample_noise(p * (C - 1), rng), dtype=np.float64)
    if domain.fit_intercept:
        noise_A[-1] = 0.0
    upper = np.asarray(A, dtype=np.float64)[triu_indices(p)]
    lin = c * np.asarray(B, dtype=np.float64).reshape(p, C - 1)
    g = lattice_granularity(mech)
    if g > 0:
        upper = np.round(upper / g) * g
        lin = np.round(lin / g) * g
    A_hat = symmetric_from_triu(upper + noise_A, p)
    B_hat = (lin + noise_B.reshape(p, C - 1)) / c
    std = release_noise_std(mech)
    return NoisyRelease(A_hat, B_hat, sens, c, std, std / c)


def solve_multinomial(
    A, B, domain, n_classes, *, noise_std, noise_std_b, n=None, method="ridge"
):
    """``(coef, intercept)`` of shape (C, d) and (C,) from a (noisy) release.

    ``W = (C / 4) solve(A, B (I + 1 1^T))`` with the binary post-processing
    (:func:`~skdp._fm.solve.solve_noisy_quadratic`, one ridge for all
    columns), ``w_C = 0`` appended, then every class's scores centred across
    classes (a shift common to all classes changes no probability) and the
    domain's public shift mapped back to the user's units. ``n`` (public) gives
    the solve's data-free fallback when the noise swamps the quadratic
    (:func:`~skdp._fm.sensitivity.prior_eigenvalue`).
    """
    C = _check_classes(n_classes)
    B = np.asarray(B, dtype=np.float64).reshape(-1, C - 1)
    Bt = B + B.sum(axis=1, keepdims=True)  # B (I + 1 1^T)
    # the solve returns (4 / C) W: its data-free size guess, and the noise on
    # each column of B (I + 1 1^T) (2 e_c + sum of the other C - 2)
    W = solve_noisy_quadratic(
        A,
        Bt,
        noise_std=noise_std,
        method=method,
        noise_std_b=noise_std_b * math.sqrt(C + 2),
        coef_norm=4.0 / C * default_coef_norm("logistic_taylor", domain),
        prior_eig=None if n is None else prior_eigenvalue("logistic_taylor", domain, n),
    )
    W = (C / 4.0) * np.hstack([W, np.zeros((W.shape[0], 1))])
    W = W - W.mean(axis=1, keepdims=True)
    if domain.fit_intercept:
        coef, intercept = W[:-1].T.copy(), W[-1] * domain.intercept_scaling
    else:
        coef, intercept = W.T.copy(), np.zeros(C)
    if domain.is_shifted:
        coef, intercept = domain.to_user_units(coef, intercept)
    return coef, np.asarray(intercept, dtype=np.float64)
