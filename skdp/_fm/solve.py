"""Post-processing of the noisy quadratic and its closed-form minimizer."""

import math

import numpy as np
from scipy import linalg

from skdp._fm.empirical_bayes import empirical_bayes_solve, label_mean_prior
from skdp._fm.sensitivity import default_coef_norm, prior_eigenvalue

__all__ = [
    "DEFAULT_RIDGE_FACTOR",
    "empirical_bayes_solve",
    "solve_noisy_quadratic",
    "solve_coordinates",
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


#: The solves whose mean is ``method="average"`` (least squares only).
AVERAGED_METHODS = ("eb", "ridge", "trim")


def solve_release(
    A, b, objective, domain, *, noise_std, noise_std_b, n, method="ridge"
):
    """``(coef, intercept)`` from a noisy release: the one solve of every FM fit.

    ``method="eb"`` (least squares only): the posterior mean of
    :func:`~skdp._fm.empirical_bayes.empirical_bayes_solve`, the mean level's
    prior the uniform one over ``y_bounds`` (variance ``h^2 / 3`` for
    half-width ``h``). ``method="average"`` (least squares only): the mean of
    the ``"eb"``, ``"ridge"`` and ``"trim"`` solutions of the same release
    (the squared error of a linear prediction is convex in the coefficients,
    so before clipping to ``y_bounds`` the mean's test MSE is at most the mean
    of the three's; none of the three is the best on every task and no
    choice read from the release picks the better reliably). Otherwise
    post-processes and solves with :func:`solve_noisy_quadratic` (the ridge
    floor uses the data-free :func:`~skdp._fm.sensitivity.default_coef_norm`,
    the fallback for a quadratic lost in the noise the data-free
    :func:`~skdp._fm.sensitivity.prior_eigenvalue` for ``n`` rows) and maps the
    intercept column back: ``intercept = s * w[-1]``, then a shifted domain
    back to the user's units (:meth:`~skdp._fm.domain.DataDomain.to_user_units`).
    """
    if method in ("eb", "average") and objective != "squared":
        raise ValueError(
            f"postprocessing={method!r} is for least squares; use 'ridge' here."
        )
    kw = dict(noise_std=noise_std, noise_std_b=noise_std_b, n=n)
    if method == "average":
        w = np.mean(
            [
                solve_coordinates(A, b, objective, domain, m, **kw)
                for m in AVERAGED_METHODS
            ],
            axis=0,
        )
    else:
        w = solve_coordinates(A, b, objective, domain, method, **kw)
    return to_user_model(w, domain)


def solve_coordinates(A, b, objective, domain, method, *, noise_std, noise_std_b, n):
    """``w`` on the domain's coordinates for one method, before the map back to
    the user's units (see :func:`solve_release`; ``"average"`` excepted)."""
    if method == "eb" and noise_std > 0:
        return empirical_bayes_solve(
            A,
            b,
            noise_std=noise_std,
            noise_std_b=noise_std_b,
            fit_intercept=domain.fit_intercept,
            intercept_prior=label_mean_prior(domain),
        )
    return solve_noisy_quadratic(
        A,
        b,
        noise_std=noise_std,
        method="ridge" if method == "eb" else method,
        noise_std_b=noise_std_b,
        coef_norm=default_coef_norm(objective, domain),
        prior_eig=prior_eigenvalue(objective, domain, n),
    )


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
