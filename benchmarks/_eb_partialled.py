"""The first empirical-Bayes rule for FM least squares, a benchmark baseline.

``FMLinearRegression(postprocessing="eb")`` as first written (commit c05b6a1,
not released): the intercept partialled out with the noisy intercept column,
the g-prior's ``g`` by marginal likelihood on the centred statistics, no
ridge floor, the intercept from ``r_i`` alone and shrunk towards the label
range's midpoint. Kept here so that the benchmark shows the current rule
(:func:`skdp._fm.empirical_bayes.empirical_bayes_solve`) against both rules
it replaces: it lost to the plain ridge where the features' means sit far
from their ranges' midpoints (the mean then lives in ``X^T y`` too) and on
collinear features at large ``n * epsilon`` (diamonds: 40x OLS at eps 2).
"""

import numpy as np

from skdp._fm import release
from skdp._fm.empirical_bayes import label_mean_prior
from skdp._fm.solve import to_user_model

__all__ = ["partialled_eb_model"]


def partialled_eb_model(est, X, y):
    """``(coef, intercept)`` from the release ``est.fit(X, y)`` makes (same
    statistics, same noise: declared domain, the same ``random_state``),
    solved by :func:`partialled_eb_solve`."""
    stats = est.statistics(X, y)
    domain = est._resolve_domain(X.shape[1])
    noisy = release(
        stats.A,
        stats.b,
        "squared",
        domain,
        epsilon=est.epsilon,
        delta=est.delta,
        mechanism=est.mechanism,
        linear_weight=est.linear_weight,
        random_state=est.random_state,
    )
    w = partialled_eb_solve(
        noisy.A,
        noisy.b,
        noise_std=noisy.noise_std,
        noise_std_b=noisy.noise_std_b,
        fit_intercept=domain.fit_intercept,
        intercept_prior=label_mean_prior(domain),
    )
    return to_user_model(w, domain)


def partialled_eb_solve(
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
