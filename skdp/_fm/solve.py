"""Post-processing of the noisy quadratic and its closed-form minimizer."""

import math

import numpy as np
from scipy import linalg

from skdp._fm.sensitivity import default_coef_norm, prior_eigenvalue

__all__ = [
    "DEFAULT_RIDGE_FACTOR",
    "empirical_bayes_solve",
    "solve_noisy_quadratic",
    "solve_release",
    "to_user_model",
]

# Ridge added by solve_noisy_quadratic, in units of the expected spectral norm of
# the noise matrix (2 sqrt(p) * noise std). Measured on the synthetic linear task
# (d in {5, 20, 50}, eps in {0.1, 1, 10}, both mechanisms) against factors 0.25,
# 1, 2, spectral trimming and no post-processing: 0.5 was best or within ~10% of
# the best in most cells; factors >= 1 lose up to 35% at moderate noise, 0.25 and
# "none" blow up at high noise.
DEFAULT_RIDGE_FACTOR = 0.5


def solve_noisy_quadratic(
    A,
    b,
    *,
    noise_std=0.0,
    method="ridge",
    ridge_factor=DEFAULT_RIDGE_FACTOR,
    noise_std_b=None,
    coef_norm=None,
    prior_eig=None,
):
    """Minimize ``w^T A w + b^T w`` after making the noisy quadratic well posed.

    Parameters
    ----------
    A : ndarray (p, p)
        Symmetric (it is symmetrized again, harmlessly).
    b : ndarray (p,) or (p, k)
        One linear part, or ``k`` of them solved with the same ``A`` and ridge.
    noise_std : float
        Standard deviation of the noise on each released entry of ``A``.
        0 means an exact (noise-free) release: the exact minimizer is returned
        (minimum-norm least squares if ``A`` is singular).
    method : {"ridge", "trim", "none"}
        ``"ridge"``: project ``A`` onto the positive semi-definite cone
        (eigenvalues clipped at 0) and add ``lambda I`` with
        ``lambda = ridge_factor * 2 sqrt(p) * noise_std``, the expected spectral
        norm of the symmetric noise matrix. ``"trim"``: drop the eigen-directions
        with eigenvalue below that ``lambda`` and solve in the rest (``w`` has no
        component there). ``"none"``: solve as is (for comparison).
    ridge_factor : float
    noise_std_b, coef_norm : float or None
        Standard deviation of the noise on ``b`` (``noise_std / c``) and a guess
        ``W`` of ``||w||`` (:func:`default_coef_norm`). When both are given, the
        ridge is at least the bias-variance optimum for an isotropic quadratic,
        ``p (noise_std^2 + noise_std_b^2 / (4 W^2)) / a`` with ``a`` the mean
        eigenvalue of the projected ``A``: when the noise swamps the signal the
        fit shrinks towards 0 (never much worse than predicting 0) instead of
        fitting noise. In the synthetic benchmark this changes only the cells
        where the signal is lost (d = 50, eps = 0.1).
    prior_eig : float or None
        A data-free guess ``a_0`` of the mean eigenvalue of ``A``
        (:func:`~skdp._fm.sensitivity.prior_eigenvalue`). Used only when the
        noise has left nothing of the quadratic (no positive eigenvalue, or a
        ridge that overflows): ``A`` is then replaced by ``a_0 I`` and the
        ridge computed for it, which gives ``w = -b / (2 (a_0 + lambda))``,
        the shrunk direction of the noisy linear term (for least squares, of
        the correlations ``X^T y``) instead of exactly 0.

    Returns
    -------
    w : ndarray (p,)

    Notes
    -----
    Everything here is post-processing of the release, so it costs no privacy.
    The noisy ``A`` is often indefinite; the unregularized minimizer then does not
    exist and the stationary point has huge coefficients (what diffprivlib returns).
    """
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    A = 0.5 * (A + A.T)
    p = b.shape[0]
    if noise_std == 0 or method == "none":
        return linalg.lstsq(A, -0.5 * b, lapack_driver="gelsd")[0]
    lam = ridge_factor * 2.0 * math.sqrt(p) * noise_std
    evals, evecs = np.linalg.eigh(A)
    variance = None
    if noise_std_b is not None and coef_norm is not None:
        variance = p * (noise_std**2 + noise_std_b**2 / (4.0 * coef_norm**2))
    if prior_eig is not None and _swamped(evals, variance):
        # any orthonormal basis diagonalizes the isotropic a_0 I: keep evecs
        evals = np.full(p, float(prior_eig))
    if variance is not None:
        mean_eig = max(float(np.maximum(evals, 0.0).mean()), np.finfo(float).tiny)
        lam = max(lam, variance / mean_eig)
    if method == "ridge":
        evals = np.maximum(evals, 0.0) + lam
        keep = np.ones(p, bool)
    elif method == "trim":
        keep = evals > lam
    else:
        raise ValueError(f"method must be 'ridge', 'trim' or 'none', got {method!r}.")
    V = evecs[:, keep]
    # b of shape (p, k) solves k linear parts with the same post-processing
    scale = evals[keep] if b.ndim == 1 else evals[keep][:, None]
    return -0.5 * (V @ ((V.T @ b) / scale))


def _swamped(evals, variance):
    """True when nothing of the quadratic survived the noise."""
    mean_eig = float(np.maximum(evals, 0.0).mean())
    if not mean_eig > 0:
        return True
    return variance is not None and not math.isfinite(float(variance) / mean_eig)


def empirical_bayes_solve(
    A, b, *, noise_std, noise_std_b, fit_intercept, intercept_prior=None
):
    """Minimize the noisy ``w^T A w + b^T w`` with a ridge chosen from the release.

    Post-processing only (no privacy cost): the ridge is set from the
    released ``A`` and ``b``, the noise scales and public quantities.

    Parameters
    ----------
    A : ndarray (p, p)
        The released quadratic (symmetrized again, harmlessly).
    b : ndarray (p,)
    noise_std, noise_std_b : float
        Noise standard deviations of an entry of ``A`` and of ``b``.
    fit_intercept : bool
        Whether the last coordinate is the intercept column (its diagonal
        entry is exact: ``s^2 n`` is released without noise).
    intercept_prior : float or None
        A public prior variance ``v0`` of the intercept coefficient ``w_i``
        (see Notes; :func:`solve_release` gives ``h^2 / (3 s^2)`` for labels
        centred in ``[-h, h]`` and an intercept column of value ``s``). None:
        the intercept is not shrunk.

    Returns
    -------
    w : ndarray (p,)

    Notes
    -----
    Write ``r = -b / 2`` (``X^T y`` for least squares), so the exact minimizer
    solves ``A w = r``. With the intercept last, partial it out:
    ``C = A_ff - a a^T / a_ii`` and ``r_c = r_f - a r_i / a_ii`` (``a`` the
    intercept column, ``a_ii`` exact): the noisy covariance and
    cross-covariance of the ``q`` features about their mean. In the
    eigenbasis ``C = V diag(c_k) V^T`` (eigenvalues clipped at 0),
    ``z = V^T r_c = c_k u_k + eta_k``, ``u = V^T w_f``. Zellner's g-prior
    ``u_k ~ N(0, g / c_k)`` (the prior that does not depend on the units of
    the features: a feature of small spread may need a large coefficient) and
    noise ``eta ~ N(0, s^2 I)`` with ``s^2 = sigma_b^2 / 4 + sigma_A^2
    (r_i / a_ii)^2 + sigma_A^2 q g / mean(c)`` (the noise on ``r``, that of
    the intercept column acting on ``r_i / a_ii``, and that of ``C`` acting
    on ``u``, whose
    prior squared norm ``g sum 1 / c_k`` is bounded below by ``g q / mean(c)``,
    used because the sum is dominated by the noisiest directions) give
    ``z_k ~ N(0, c_k g + s^2)``. The signal strength ``g`` (the explained sum
    of squares per feature) maximizes this marginal likelihood (a 1-d search
    over a log grid, and ``g = 0``), and the posterior mean is the ridge
    ``u_k = z_k / (c_k + s^2 / g)``: when the noise leaves little of the
    signal (``g`` small against ``s^2``) the fit degrades towards the
    intercept-only model (``g = 0``) instead of fitting noise. The intercept
    follows from the features, ``w_i = (r_i - a^T w_f) / a_ii``; with
    ``intercept_prior = v0`` it is shrunk towards 0 (the centre of the label
    range) by the posterior factor ``v0 / (v0 + v)`` against its noise
    variance ``v = (sigma_b^2 / 4 + sigma_A^2 ||w_f||^2) / a_ii^2``. The labels'
    own noise is left out (the model is that of the privacy noise), so
    without privacy noise the solve is least squares.
    """
    A = np.asarray(A, dtype=np.float64)
    A = 0.5 * (A + A.T)
    r = -0.5 * np.asarray(b, dtype=np.float64)
    p = r.shape[0]
    noise_r = 0.25 * float(noise_std_b) ** 2
    noise_A = float(noise_std) ** 2
    q = p - 1 if fit_intercept else p
    noise_rc = noise_r
    if fit_intercept:
        a_ii = A[-1, -1]
        a = A[:q, -1]
        C = A[:q, :q] - np.outer(a, a) / a_ii
        rc = r[:q] - a * (r[-1] / a_ii)
        # the noisy intercept column carries its noise into r_c
        noise_rc = noise_r + noise_A * (r[-1] / a_ii) ** 2
    else:
        C, rc = A, r
    w_f = np.zeros(q)
    if q:
        evals, V = np.linalg.eigh(0.5 * (C + C.T))
        c = np.maximum(evals, 0.0)
        z = V.T @ rc
        g, s2 = _signal_strength(c, z, noise_rc, noise_A * q)
        if g > 0:
            w_f = V @ (z / (c + s2 / g))
    if not fit_intercept:
        return w_f
    w_i = (r[-1] - a @ w_f) / a_ii
    if intercept_prior is not None and noise_r > 0:
        v0 = float(intercept_prior)
        v = (noise_r + noise_A * float(w_f @ w_f)) / a_ii**2
        w_i *= v0 / (v0 + v)
    return np.append(w_f, w_i)


def _signal_strength(c, z, noise_r, noise_A_q):
    """``(g, s^2)``: the g-prior's ``g >= 0`` maximizing the marginal likelihood
    of ``z`` (see :func:`empirical_bayes_solve`), on a log grid of 121 points
    over 12 decades around the moment estimate ``(||z||^2 - q s_r^2) /
    sum(c)``, and 0."""
    mean_c = float(c.mean())
    if not mean_c > 0 or not np.any(z != 0):
        return 0.0, noise_r

    def noise(g):
        return noise_r + noise_A_q * g / mean_c

    def nll(g):
        v = c * g + noise(g)
        return float(np.sum(np.log(v) + z * z / v))

    zz = float(z @ z)
    center = max(zz - z.size * noise_r, 1e-12 * zz) / float(c.sum())
    grid = center * np.logspace(-6, 6, 121)
    values = [nll(g) for g in grid]
    best = int(np.argmin(values))
    if noise(0.0) > 0 and nll(0.0) <= values[best]:
        return 0.0, noise_r
    g = float(grid[best])
    return g, noise(g)


def solve_release(
    A, b, objective, domain, *, noise_std, noise_std_b, n, method="ridge"
):
    """``(coef, intercept)`` from a noisy release: the one solve of every FM fit.

    Post-processes and solves with :func:`solve_noisy_quadratic` (the ridge
    floor uses the data-free :func:`~skdp._fm.sensitivity.default_coef_norm`,
    the fallback for a quadratic lost in the noise the data-free
    :func:`~skdp._fm.sensitivity.prior_eigenvalue` for ``n`` rows) and maps the
    intercept column back: ``intercept = s * w[-1]``, then a shifted domain
    back to the user's units (:meth:`~skdp._fm.domain.DataDomain.to_user_units`).
    """
    if method == "eb" and noise_std > 0:
        if objective != "squared":
            raise ValueError(
                "postprocessing='eb' is for least squares; use 'ridge' here."
            )
        prior = None
        if domain.fit_intercept and domain.y_bounds is not None:
            h = 0.5 * (domain.y_bounds[1] - domain.y_bounds[0])
            prior = h * h / (3.0 * domain.intercept_scaling**2)
        w = empirical_bayes_solve(
            A,
            b,
            noise_std=noise_std,
            noise_std_b=noise_std_b,
            fit_intercept=domain.fit_intercept,
            intercept_prior=prior,
        )
        return to_user_model(w, domain)
    w = solve_noisy_quadratic(
        A,
        b,
        noise_std=noise_std,
        method="ridge" if method == "eb" else method,
        noise_std_b=noise_std_b,
        coef_norm=default_coef_norm(objective, domain),
        prior_eig=prior_eigenvalue(objective, domain, n),
    )
    return to_user_model(w, domain)


def to_user_model(w, domain):
    """``(coef, intercept)`` in the user's units from ``w`` on the domain's
    coordinates: ``intercept = s * w[-1]``, then a shifted domain mapped back
    (:meth:`~skdp._fm.domain.DataDomain.to_user_units`)."""
    if domain.fit_intercept:
        coef, intercept = w[:-1], float(w[-1] * domain.intercept_scaling)
    else:
        coef, intercept = w, 0.0
    if domain.is_shifted:
        coef, intercept = domain.to_user_units(coef, intercept)
    return coef, float(intercept)
