"""Empirical-Bayes solve of a noisy least-squares release (post-processing)."""

import math

import numpy as np

__all__ = ["EB_RIDGE_FLOOR", "empirical_bayes_solve", "label_mean_prior"]

# The smallest ridge the solve uses on the features, in units of the expected
# spectral norm of the noise matrix (2 sqrt(p) * noise std; see
# solve.DEFAULT_RIDGE_FACTOR, 0.5 for the plain ridge). The eigenvalues of the
# noisy covariance are known only to about that size, so a smaller ridge
# divides by noise in the weakest directions: without this floor the
# marginal likelihood, which takes the released covariance as exact, chose
# ridges 100x smaller on diamonds (9 collinear features, n * eps >= 19,000)
# and the test MSE grew with epsilon (40x OLS at eps = 2). Measured over the
# eight real regressions of benchmarks/bench_small_data.py at eps 0.1-5
# (5 seeds): floor factors 0.1 / 0.25 / 0.5 gave a geometric mean of the
# test MSE over the better of the plain ridge and the first empirical-Bayes
# rule of 1.066 / 1.009 / 1.025.
EB_RIDGE_FLOOR = 0.25

# The signal strength g is searched on 121 points over 12 decades around the
# moment estimate (and g = 0): the likelihood is flat on a finer scale.
_GRID = np.logspace(-6.0, 6.0, 121)


def label_mean_prior(domain):
    """The prior variance of the mean level in the intercept coefficient's
    units: ``h^2 / (3 s^2)``, a mean uniform over labels centred in
    ``[-h, h]`` (intercept column ``s``); None without an intercept or label
    range."""
    if not domain.fit_intercept or domain.y_bounds is None:
        return None
    h = 0.5 * (domain.y_bounds[1] - domain.y_bounds[0])
    return h * h / (3.0 * domain.intercept_scaling**2)


def empirical_bayes_solve(
    A,
    b,
    *,
    noise_std,
    noise_std_b,
    fit_intercept,
    intercept_prior=None,
    ridge_floor=EB_RIDGE_FLOOR,
):
    """The posterior mean of the least-squares model given a noisy release.

    Post-processing only (no privacy cost): it reads the released ``A`` and
    ``b``, their noise scales and public quantities (the label range).

    Parameters
    ----------
    A : ndarray of shape (p, p)
        The released quadratic ``X^T X`` with noise (symmetrized again).
    b : ndarray of shape (p,)
        The released linear part ``-2 X^T y`` with noise.
    noise_std, noise_std_b : float
        Noise standard deviations of an entry of ``A`` and of ``b``.
    fit_intercept : bool
        Whether the last coordinate is the intercept column (value ``s``; its
        diagonal entry ``n s^2`` is released exactly).
    intercept_prior : float or None
        Prior variance ``v0`` of the mean level ``m`` (see Notes), in the
        intercept coefficient's units; :func:`~skdp._fm.solve.solve_release`
        gives ``h^2 / (3 s^2)``, the variance of a uniform mean over labels
        centred in ``[-h, h]``. None: a vague prior (``10^6`` times the
        estimate's own noise variance).
    ridge_floor : float
        The smallest feature ridge, in units of ``2 sqrt(p) noise_std``
        (:data:`EB_RIDGE_FLOOR`).

    Returns
    -------
    w : ndarray of shape (p,)

    Notes
    -----
    **Model.** Write ``r = -b / 2`` (``X^T y`` plus noise). Given the exact
    statistics the least-squares model solves ``A w = r``; the release gives
    ``r = A w + e`` with ``e = eta - E w`` (``eta`` the noise on ``r``, ``E``
    that on ``A``), treated as independent Gaussian with variance
    ``s^2 = sigma_r^2 + sigma_A^2 ||w||^2``. With the intercept last,
    reparametrize ``w`` by the features ``w_f`` and the mean level
    ``m = w_i + a^T w_f / a_ii`` (``a`` the intercept column, ``a_ii = n
    s^2``): the prediction at the features' mean is ``s m``, and
    ``r_f = C w_f + a m + e_f``, ``r_i = a_ii m + e_i`` with
    ``C = A_ff - a a^T / a_ii`` (the noisy covariance about the mean,
    eigenvalues clipped at 0: ``C = V diag(c) V^T``).

    **Priors.** Zellner's g-prior on the features, ``w_f = V u`` with
    ``u_k ~ N(0, g / c_k)`` (it does not depend on the features' units: a
    feature of small spread may need a large coefficient), and
    ``m ~ N(0, v0)`` (the label range's midpoint is 0). Then ``r`` is
    Gaussian with covariance ``K(g) = V diag(g c) V^T (+) 0 + v0 u u^T +
    diag(s^2(g))`` with ``u = (a, a_ii)``, ``s^2(g) = sigma_r^2 + sigma_A^2
    (g q / mean(c) + (r_i / a_ii)^2)`` on the entries of ``r_f`` (``g sum
    1 / c_k >= g q / mean(c)`` bounds the prior ``||w_f||^2``, ``r_i / a_ii``
    estimates ``w_i``, on which the noisy intercept column acts) and without
    the last term on ``r_i`` (the intercept's diagonal is exact). The released
    ``a`` is itself noisy: taken as exact, an entry that is mostly noise would
    pull the mean towards 0 (errors in variables), so ``u`` uses each ``a_j``
    shrunk by its reliability, ``a_j max(0, 1 - sigma_A^2 / a_j^2)``
    (regression calibration).

    **Fit.** The signal strength ``g >= 0`` maximizes the marginal likelihood
    of ``r`` (a 1-d search; ``g = 0`` is the mean-only model), capped so that
    the implied feature ridge ``s^2(g) / g`` is at least ``ridge_floor * 2
    sqrt(p) sigma_A`` (see :data:`EB_RIDGE_FLOOR`). The solution is the
    posterior mean, ``w_f = g V V^T x_f`` and ``m = v0 u^T x`` with
    ``x = K^{-1} r``; in the eigenbasis ``w_f`` is the ridge
    ``z_k / (c_k + s^2 / g)`` of the part of ``r_f`` the mean does not
    explain, so the fit degrades to the mean-only model when the noise leaves
    nothing of the signal. Unlike partialling the intercept out with the
    noisy ``a`` (which estimates the mean from ``r_i`` alone), the mean level
    uses every entry of ``r``: each feature whose mean is away from the
    centre of its range carries the labels' mean in ``r_f = a m + ...``.
    ``K`` is diagonal plus rank one in the basis ``(V, 1)``, so each
    likelihood costs ``O(p)`` after one eigendecomposition.
    """
    model = _GPriorModel(A, b, noise_std, noise_std_b, fit_intercept, intercept_prior)
    if not model.base > 0:  # no noise on the release: least squares
        return np.linalg.lstsq(model.A, model.r, rcond=None)[0]
    return model.posterior_mean(model.signal_strength(ridge_floor))


class _GPriorModel:
    """The release in the basis ``(V, 1)`` where ``K(g)`` is diagonal plus
    rank one (see :func:`empirical_bayes_solve`, Notes)."""

    def __init__(self, A, b, noise_std, noise_std_b, fit_intercept, intercept_prior):
        A = np.asarray(A, dtype=np.float64)
        self.A = A = 0.5 * (A + A.T)
        self.r = r = -0.5 * np.asarray(b, dtype=np.float64)
        self.p = p = r.shape[0]
        self.var_A = float(noise_std) ** 2
        var_r = 0.25 * float(noise_std_b) ** 2
        self.fit_intercept = fit_intercept
        self.q = q = p - 1 if fit_intercept else p
        if fit_intercept:
            self.a_ii = A[-1, -1]
            # the intercept column a is itself noisy: taken as exact, an entry
            # that is mostly noise pulls the mean towards 0 (errors in
            # variables), so each a_j is shrunk by its reliability
            # (regression calibration)
            a = A[:q, -1]
            a2 = np.maximum(a**2, np.finfo(float).tiny)
            self.a = a * np.maximum(0.0, 1.0 - self.var_A / a2)
            C = A[:q, :q] - np.outer(self.a, self.a) / self.a_ii
            w_i = r[-1] / self.a_ii  # the intercept's plug-in estimate
        else:
            self.a_ii, self.a, C, w_i = None, np.zeros(0), A, 0.0
        evals, self.V = np.linalg.eigh(C)
        c = np.maximum(evals, 0.0)
        self.mean_c = float(c.mean()) if q else 0.0
        if not self.mean_c > 0:  # nothing of the features survived
            c, self.mean_c = np.zeros(q), 0.0
        self.c = c
        # s^2 at g = 0 of an entry of r_f (the noisy intercept column acts on
        # w_i) and of r_i (A's intercept diagonal is exact)
        self.base = var_r + self.var_A * w_i**2
        self.base_i = var_r
        # d s^2 / d g: the noise of C acting on the prior ||w_f||^2
        self.kappa = self.var_A * q / self.mean_c if self.mean_c > 0 else 0.0
        # the part of r_f the mean does not explain, for the moment estimate
        r_c = r[:q] - self.a * w_i if fit_intercept else r
        self.z2 = float(r_c @ r_c)
        self.r_rot = self.V.T @ r[:q]
        if fit_intercept:
            if intercept_prior is None:  # vague: far wider than its noise
                self.v0 = 1e6 * (w_i**2 + self.base / self.a_ii**2)
            else:
                self.v0 = float(intercept_prior)
            self.r_rot = np.append(self.r_rot, r[-1])
            self.u_rot = np.append(self.V.T @ self.a, self.a_ii)
            self.curvature = np.append(c, 0.0)
            self.offset = np.append(np.full(q, self.base), self.base_i)
        else:
            self.v0, self.u_rot, self.curvature = 0.0, np.zeros(p), c
            self.offset = np.full(p, self.base)

    def noise(self, g):
        """The variances of ``e`` (entries of ``r_f``, then ``r_i``); those of
        ``r_f`` are equal, so the same in the basis ``(V, 1)``."""
        return self.offset + self.kappa * g

    def _diagonal(self, g):
        return g * self.curvature + self.noise(g)

    def log_likelihood(self, g):
        """``log N(r; 0, K(g))`` up to a constant (determinant lemma and
        Sherman-Morrison on the diagonal plus rank one)."""
        D = self._diagonal(g)
        Dr, Du = self.r_rot / D, self.u_rot / D
        gain = 1.0 + self.v0 * float(self.u_rot @ Du)
        quad = float(self.r_rot @ Dr) - self.v0 * float(self.u_rot @ Dr) ** 2 / gain
        return -0.5 * (float(np.sum(np.log(D))) + math.log(gain) + quad)

    def signal_strength(self, ridge_floor=EB_RIDGE_FLOOR):
        """The ``g >= 0`` of largest likelihood, on the grid :data:`_GRID`
        around the moment estimate, capped by the ridge floor; 0 if the
        mean-only model is at least as likely."""
        if not (self.mean_c > 0 and self.z2 > 0):
            return 0.0
        centre = max(self.z2 - self.q * self.base, 1e-12 * self.z2) / self.c.sum()
        grid = centre * _GRID
        floor = ridge_floor * 2.0 * math.sqrt(self.p * self.var_A)
        if floor > self.kappa:  # s^2(g) / g >= floor <=> g <= base / (floor - kappa)
            g_max = self.base / (floor - self.kappa)
            grid = np.append(grid[grid < g_max], g_max)
        values = [self.log_likelihood(g) for g in grid]
        best = int(np.argmax(values))
        if values[best] > self.log_likelihood(0.0):
            return float(grid[best])
        return 0.0

    def posterior_mean(self, g):
        """``w`` given ``g``: ``w_f = g V x'_f``, ``m = v0 u'^T x'``,
        ``x' = K'^{-1} r'``."""
        D = self._diagonal(g)
        Dr, Du = self.r_rot / D, self.u_rot / D
        shrink = self.v0 * float(self.u_rot @ Dr) / (1.0 + self.v0 * (self.u_rot @ Du))
        x = Dr - Du * shrink
        w_f = self.V @ (g * x[: self.q])
        if not self.fit_intercept:
            return w_f
        m = self.v0 * float(self.u_rot @ x)
        return np.append(w_f, m - (self.a @ w_f) / self.a_ii)
