"""A second functional-mechanism release: one private Newton step of the logistic loss.

Why
---
Every fixed quadratic surrogate of the logistic loss (the Taylor expansion at 0
included) has, at ``epsilon = inf``, the coefficients of least squares on
``y - 1/2`` up to scale: the first FM release cannot reach the logistic MLE
however large epsilon is. One Newton step of the **exact** logistic loss from
the first private solution ``w1`` (public once released) moves towards the MLE.

Objective
---------
With ``x`` the clipped, centred row with the intercept column ``s`` appended,
``p_i = sigmoid(x_i^T w1)`` and ``y_i`` in {0, 1}, the logistic loss around
``w1`` has gradient and Hessian::

    g = sum_i (p_i - y_i) x_i,      H = sum_i p_i (1 - p_i) x_i x_i^T

and the Newton step minimizes ``d^T (H / 2) d + g^T d``, i.e. ``d = -H^{-1} g``.
In the FM core's convention (minimize ``w^T A w + b^T w``) the released
statistics are ``A = H / 2`` and ``b = g``: per record the quadratic weight is
``a_i = p_i (1 - p_i) / 2`` in ``[0, 1/8]`` and the linear coefficient
``r_i = p_i - y_i`` in ``(-1, 1)``. ``w1`` is a function of the first release
only, so for the second release each ``(a_i, r_i)`` is a function of the record
alone (the sensitivity below holds for every ``w1``, so also for the one drawn).

Sensitivity (replace-one neighbours)
------------------------------------
Released vector ``(A[triu], c b)``, noise on **every** coordinate (unlike the
Taylor release, the intercept's diagonal ``s^2 sum_i a_i`` depends on the data).
Replacing record ``(x, y)`` by ``(x', y')`` changes ``A`` by
``a x x^T - a' x' x'^T`` with ``a, a'`` in ``[0, 1/8]`` (not a fixed ``kappa``)
and ``b`` by ``r x - r' x'`` with ``|r|, |r'| <= 1``. Groups, as in
:func:`~skdp._fm.sensitivity.sensitivity` (L1 adds, L2 adds in squares), each the
smaller of a range bound and a norm bound:

- feature-feature entries ``a x_j x_k``: with ``u(x) = (x_j x_k)_{j <= k}``,
  ``||a u - a' u'||_1 <= (a + a') max ||u||_1 <= 2 (1/8) max ||u||_1`` and,
  because ``a, a' >= 0`` and ``<u(x), u(x')> >= 0``,
  ``||a u - a' u'||_2 <= sqrt(2) (1/8) max ||u||_2``: the Taylor bounds with
  ``kappa = 1/8``. Each coordinate's range is ``[min(0, lo), max(0, hi)] / 8``
  (``lo, hi`` the range of ``x_j x_k``): the weight can be 0.
  (For ``H`` itself, ``kappa = 1/4``; releasing ``H / 2`` is the same mechanism
  with every number halved.)
- feature-intercept entries ``a s x_j``: coefficient in ``[0, s / 8]``:
  ``2 (s / 8) max ||x||_1`` (L1) and ``2 (s / 8) max ||x||_2`` (L2), or the ranges.
- the intercept's diagonal ``a s^2``: width ``s^2 / 8``.
- linear feature entries ``c r x_j``: ``2 c max ||x||_1`` (L1),
  ``2 c max ||x||_2`` (L2), or the ranges of ``c [-1, 1] x_j``.
- the intercept's linear entry ``c s r``: width ``2 c s``.

For ``||x||_2 <= R``, no intercept, ``c = 1``, ``d >= 2``:
``Delta_1 = (d + 1) R^2 / 8 + 2 sqrt(d) R`` and
``Delta_2 = sqrt(R^4 / 32 + 4 R^2)`` (the Taylor ones with the linear part
doubled: ``|p - y| <= 1`` against ``|1/2 - y| = 1/2``).

References
----------
Zhang, Zhang, Xiao, Yang & Winslett (2012). Functional mechanism: regression
analysis under differential privacy. VLDB.
"""

import math

import numpy as np
from scipy.special import expit

from skdp._fm.domain import triu_indices
from skdp._fm.release import (
    NoisyRelease,
    add_noise,
    lattice_granularity,
    make_mechanism,
    release_noise_std,
)
from skdp._fm.sensitivity import (
    Sensitivity,
    _linear_part,
    _quadratic_part,
    default_coef_norm,
    n_released,
    optimal_linear_weight,
    prior_eigenvalue,
)
from skdp._fm.solve import solve_noisy_quadratic
from skdp.utils import noise_generator

__all__ = [
    "WEIGHT_MAX",
    "balanced_newton_weight",
    "newton_release",
    "newton_sensitivity",
    "newton_statistics",
    "newton_step",
]

# max of p (1 - p) / 2: the per-record weight of A = H / 2
WEIGHT_MAX = 0.125


def newton_sensitivity(domain, *, linear_weight=1.0, quadratic=True, linear=True):
    """Replace-one L1 and L2 sensitivity of ``(A[triu], c g)`` (module Notes).

    Parameters
    ----------
    domain : DataDomain
    linear_weight : float
        ``c``.
    quadratic, linear : bool
        Which parts to count (both by default).

    Returns
    -------
    Sensitivity
    """
    c = float(linear_weight)
    if not c > 0:
        raise ValueError(f"linear_weight must be > 0, got {linear_weight!r}.")
    d = domain.n_features
    every = np.arange(d)
    parts = []
    if quadratic:
        pairs = [(j, k) for j in range(d) for k in range(j, d)]
        parts.append(_quadratic_part(domain, pairs, WEIGHT_MAX, weight_from_zero=True))
        if domain.fit_intercept:
            s = abs(domain.intercept_scaling)
            parts.append(_linear_part(domain, every, (0.0, WEIGHT_MAX * s)))
            parts.append((WEIGHT_MAX * s * s,) * 2)
    if linear:
        parts.append(_linear_part(domain, every, (-c, c)))
        if domain.fit_intercept:
            width = 2.0 * c * abs(domain.intercept_scaling)
            parts.append((width, width))
    l1 = sum(part[0] for part in parts)
    l2 = math.sqrt(sum(part[1] ** 2 for part in parts))
    return Sensitivity(l1=float(l1), l2=float(l2))


def augment(X, domain):
    """The clipped rows with the intercept column ``s`` appended (if any)."""
    if not domain.fit_intercept:
        return X
    return np.column_stack([X, np.full(X.shape[0], domain.intercept_scaling)])


def newton_statistics(X, y, w1, domain):
    """``(A, b) = (H / 2, g)`` of the logistic loss at ``w1`` on clipped rows.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Rows already clipped (and shifted) to ``domain``
        (:func:`~skdp._fm.statistics.clip_to_domain`).
    y : ndarray of shape (n,)
        Labels in {0, 1}.
    w1 : ndarray of shape (p,)
        The first solution in the domain's coordinates (intercept column last).
    """
    Z = augment(np.asarray(X, dtype=np.float64), domain)
    prob = expit(Z @ w1)
    weight = 0.5 * prob * (1.0 - prob)
    A = (Z * weight[:, None]).T @ Z
    b = Z.T @ (prob - np.asarray(y, dtype=np.float64))
    return A, b


def balanced_newton_weight(domain, mechanism="laplace", coef_norm=None):
    """The ``c`` minimizing ``s(c)^2 (W^2 + 1 / (4 c^2))`` for this release.

    As :func:`~skdp._fm.sensitivity.balanced_linear_weight` (the first-order
    error of the step is ``A^{-1} (E_A d + e_b / 2)``), with the sensitivities
    of :func:`newton_sensitivity` and ``W`` a data-free guess of the step's
    norm (default :func:`~skdp._fm.sensitivity.default_coef_norm`).
    """
    W = default_coef_norm("logistic_taylor", domain) if coef_norm is None else coef_norm
    quad = newton_sensitivity(domain, linear=False)
    lin = newton_sensitivity(domain, quadratic=False)
    return optimal_linear_weight(quad, lin, W, mechanism)


def newton_release(
    A, b, domain, *, epsilon, delta, mechanism, linear_weight, random_state
):
    """The second release: noise on every entry of ``A[triu]``, then on ``c b``.

    One generator: ``noise_A`` (triu order, the intercept's diagonal included)
    then ``noise_b``.

    Returns
    -------
    NoisyRelease
    """
    if isinstance(linear_weight, str):
        c = balanced_newton_weight(domain, mechanism)
    else:
        c = float(linear_weight)
    sens = newton_sensitivity(domain, linear_weight=c)
    mech = make_mechanism(epsilon, delta, sens, n_released(domain), mechanism)
    rng = noise_generator(random_state)
    p = domain.n_coef
    noise_A = np.asarray(mech.sample_noise(len(triu_indices(p)[0]), rng), float)
    noise_b = np.asarray(mech.sample_noise(p, rng), float)
    A_hat, b_hat = add_noise(
        A, b, noise_A, noise_b, linear_weight=c, granularity=lattice_granularity(mech)
    )
    std = release_noise_std(mech)
    return NoisyRelease(A_hat, b_hat, sens, c, std, std / c)


def newton_step(noisy, w1, domain, *, n, method="ridge"):
    """``w2 = w1 + d`` with ``d`` the post-processed minimizer of the release.

    The same post-processing as the first release
    (:func:`~skdp._fm.solve.solve_noisy_quadratic`: symmetrize, eigenvalues
    clipped at 0, ridge; at zero noise the exact ``-H^{-1} g``).
    """
    step = solve_noisy_quadratic(
        noisy.A,
        noisy.b,
        noise_std=noisy.noise_std,
        method=method,
        noise_std_b=noisy.noise_std_b,
        coef_norm=default_coef_norm("logistic_taylor", domain),
        prior_eig=prior_eigenvalue("logistic_taylor", domain, n),
    )
    return np.asarray(w1, dtype=np.float64) + step


def to_domain_coordinates(coef, intercept, domain):
    """The model ``(coef, intercept)`` in the user's units as ``w`` on the
    domain's (shifted, intercept-column) coordinates: the inverse of
    :func:`~skdp._fm.solve.to_user_model`."""
    coef = np.asarray(coef, dtype=np.float64)
    intercept = float(intercept)
    if domain.x_offset is not None:
        intercept = intercept + float(coef @ domain.x_offset)
    if domain.x_scale is not None:
        coef = coef * domain.x_scale
    if not domain.fit_intercept:
        return coef.copy()
    return np.append(coef, intercept / domain.intercept_scaling)
