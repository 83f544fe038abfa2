"""AdaSSP (Wang 2018): adaptive sufficient-statistics perturbation, a baseline.

Written from the paper (Algorithm 2) for the benchmarks; not part of skdp's API.

Algorithm (rows ``||x||_2 <= R``, labels ``|y| <= B``, ``p`` coefficients)::

    lam_min_hat = max(lam_min(X^T X) + s_lam Z - s_lam sqrt(log(6 / delta)), 0)
    lam         = max(0, sqrt(p log(2 p^2 / rho)) s_XX - lam_min_hat)
    XX_hat      = X^T X + s_XX Z_sym          (i.i.d. upper triangle, mirrored)
    Xy_hat      = X^T y + s_Xy z
    w           = (XX_hat + lam I)^{-1} Xy_hat

Privacy. The three releases (``lam_min``, ``X^T X``, ``X^T y``) are each a
Gaussian mechanism at ``(epsilon / 3, delta / 3)``, so by basic composition the
output is ``(epsilon, delta)``-DP; everything after them is post-processing. We
calibrate each with the analytic Gaussian mechanism (Balle & Wang 2018) and the
*replace-one* L2 sensitivities, the neighbouring relation skdp's functional
mechanism is stated for (Wang states AdaSSP for add/remove-one neighbours, whose
sensitivities are smaller; the comparison with FM must use one relation):

- ``lam_min``: ``X^T X`` changes by ``x x^T - x' x'^T``, whose eigenvalues lie in
  ``[-R^2, R^2]``; by Weyl's inequality ``|Delta lam_min| <= R^2``.
- ``X^T X`` (upper triangle incl. diagonal, the released vector):
  ``u(x) = (x_j x_k)_{j <= k}`` has ``||u||^2 = (||x||^4 + sum x_j^4) / 2 <= R^4``
  and ``<u(x), u(x')> >= 0``, so ``||u(x) - u(x')|| <= sqrt(2) R^2``.
- ``X^T y``: ``||x y - x' y'|| <= 2 R B``.

Noise scale in the paper: ``sqrt(log(6 / delta)) / (epsilon / 3)`` times the
add/remove sensitivity; here ``s = analytic_sigma(epsilon / 3, delta / 3, sens)``.
The tail shift of ``lam_min`` and the ridge rule keep the paper's form with our
``s``. Domain: features are centred at the midpoints of their declared ranges
(public) and a constant column ``c`` is appended for the intercept, so
``R^2 = sum_j h_j^2 + c^2`` with ``h_j`` the half-widths and ``c = max h_j``;
labels are centred at their declared midpoint, ``B`` = half-width. With only a
row-norm bound ``data_norm`` declared (``bounds_X=None``), rows are scaled down
to it and ``c = data_norm`` (every ``|x_j| <= data_norm``).

Without an intercept (``fit_intercept=False``) nothing is centred (a shift
could not be undone) and no column is appended: ``R`` is the smaller of
``data_norm`` and the radius ``||max(|lower|, |upper|)||_2`` of the uncentred
box, and ``B = max(|y_lower|, |y_upper|)``. This is Wang's Algorithm 2 exactly
as stated (no intercept, ``||x|| <= R``, ``|y| <= B``); the three sensitivities
above hold with these ``R`` and ``B``.

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression: optimal
and adaptive prediction & estimation in unbounded domain. UAI.

Balle, B. & Wang, Y.-X. (2018). Improving the Gaussian mechanism for differential
privacy: analytical calibration and optimal denoising. ICML.

Examples
--------
At ``epsilon = inf`` AdaSSP is ordinary least squares (with intercept):

>>> import numpy as np
>>> from sklearn.linear_model import LinearRegression
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(0, 1, (200, 3)); y = np.clip(1 + X @ [1., -2., .5], -1, 3)
>>> m = AdaSSP(np.inf, 1e-6, bounds_X=(0, 1), bounds_y=(-1, 3)).fit(X, y)
>>> ols = LinearRegression().fit(X, y)
>>> bool(np.allclose(m.coef_, ols.coef_) and np.isclose(m.intercept_, ols.intercept_))
True
"""

import math

import numpy as np

from skdp.mechanisms import analytic_sigma


class AdaSSP:
    """AdaSSP linear regression on a declared box (see the module docstring).

    Parameters
    ----------
    epsilon, delta : float
        Total budget; ``epsilon = inf`` gives OLS.
    bounds_X : (lower, upper) or None
        Declared feature box (scalars or arrays); data are clipped to it.
        ``None`` when only ``data_norm`` is declared (the box is then
        ``[-data_norm, data_norm]`` per coordinate).
    bounds_y : (lower, upper)
        Declared label range; labels are clipped to it.
    data_norm : float or None
        A declared bound on ``||x||_2`` of the (clipped, uncentred) rows, e.g.
        ``sqrt(k)`` for ``k`` one-hot blocks in ``[0, 1]``. When given and smaller
        than the centred box's radius, X is not centred and ``R^2`` is
        ``data_norm^2 + c^2`` with ``c = max |x_j|`` (centring would destroy the
        sparsity the norm bound comes from); rows are scaled down to it.
    fit_intercept : bool
        ``False`` fits ``y ~ X w`` without centring or a constant column (Wang's
        setting); ``intercept_`` is then 0.
    rho : float
        Failure probability of the ridge rule (the paper's default 0.05).
    random_state : int or None
    """

    def __init__(
        self,
        epsilon,
        delta,
        *,
        bounds_X,
        bounds_y,
        data_norm=None,
        fit_intercept=True,
        rho=0.05,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds_X = bounds_X
        self.bounds_y = bounds_y
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.rho = rho
        self.random_state = random_state

    def _design(self, X):
        """Released rows (with the intercept column if any), shift, c and radius."""
        if self.bounds_X is None:
            if self.data_norm is None:
                raise ValueError("AdaSSP needs bounds_X or data_norm.")
            bounds = (-self.data_norm, self.data_norm)
        else:
            bounds = self.bounds_X
        lo, hi = (np.broadcast_to(np.asarray(b, float), X.shape[1:]) for b in bounds)
        Z = np.clip(X, lo, hi)
        if not self.fit_intercept:
            # no intercept to absorb a shift: rows as declared, no constant column
            radius = math.sqrt(float(np.sum(np.maximum(np.abs(lo), np.abs(hi)) ** 2)))
            if self.data_norm is not None and self.data_norm < radius:
                norms = np.maximum(np.linalg.norm(Z, axis=1) / self.data_norm, 1.0)
                Z, radius = Z / norms[:, None], self.data_norm
            return Z, np.zeros_like(lo), 0.0, radius
        mid, half = (lo + hi) / 2, (hi - lo) / 2
        centred_radius = math.sqrt(float(np.sum(half**2)))
        if self.data_norm is not None and self.data_norm < centred_radius:
            norms = np.maximum(np.linalg.norm(Z, axis=1) / self.data_norm, 1.0)
            Z = Z / norms[:, None]
            mid = np.zeros_like(mid)
            c = float(max(np.abs(lo).max(), np.abs(hi).max(), 1e-12))
            radius = self.data_norm
        else:
            Z = Z - mid
            c = float(max(half.max(), 1e-12))
            radius = centred_radius
        R = math.sqrt(radius**2 + c * c)
        return np.hstack([Z, np.full((X.shape[0], 1), c)]), mid, c, R

    def fit(self, X, y):
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        Z, mid, c, R = self._design(X)
        ylo, yhi = (float(v) for v in self.bounds_y)
        if self.fit_intercept:
            y_mid, B = (ylo + yhi) / 2, (yhi - ylo) / 2
        else:
            y_mid, B = 0.0, max(abs(ylo), abs(yhi))
        t = np.clip(y, ylo, yhi) - y_mid
        p = Z.shape[1]
        XX, Xy = Z.T @ Z, Z.T @ t
        if math.isinf(self.epsilon):
            w = np.linalg.lstsq(XX, Xy, rcond=None)[0]
        else:
            rng = np.random.default_rng(self.random_state)
            e3, d3 = self.epsilon / 3, self.delta / 3
            self.sensitivities_ = (R * R, math.sqrt(2) * R * R, 2 * R * B)
            s_lam, s_XX, s_Xy = (analytic_sigma(e3, d3, s) for s in self.sensitivities_)
            self.sigmas_ = (s_lam, s_XX, s_Xy)
            lam_min = float(np.linalg.eigvalsh(XX)[0])
            lam_hat = max(
                lam_min
                + s_lam * rng.standard_normal()
                - s_lam * math.sqrt(math.log(6 / self.delta)),
                0.0,
            )
            lam = max(
                0.0, math.sqrt(p * math.log(2 * p * p / self.rho)) * s_XX - lam_hat
            )
            E = np.zeros((p, p))
            iu = np.triu_indices(p)
            E[iu] = rng.standard_normal(iu[0].size) * s_XX
            E = E + np.triu(E, 1).T
            xy_hat = Xy + s_Xy * rng.standard_normal(p)
            w = np.linalg.lstsq(XX + E + lam * np.eye(p), xy_hat, rcond=None)[0]
        if not self.fit_intercept:
            self.coef_, self.intercept_ = w, 0.0
            return self
        self.coef_ = w[:-1]
        self.intercept_ = float(w[-1] * c + y_mid - mid @ w[:-1])
        return self

    def predict(self, X):
        return np.asarray(X, dtype=float) @ self.coef_ + self.intercept_


class AdaSSPClassifier(AdaSSP):
    """AdaSSP least squares on ``2 y - 1`` in ``[-1, 1]``; predicts the sign.

    The linear-probability counterpart of FM's Taylor logistic regression (whose
    eps = inf solution is least squares on ``y - 1/2`` up to scale), so that the
    classification tables can show AdaSSP too. Labels are public-range by
    construction (``bounds_y = (-1, 1)``).
    """

    def __init__(
        self,
        epsilon,
        delta,
        *,
        bounds_X,
        data_norm=None,
        fit_intercept=True,
        rho=0.05,
        random_state=None,
    ):
        super().__init__(
            epsilon,
            delta,
            bounds_X=bounds_X,
            bounds_y=(-1.0, 1.0),
            data_norm=data_norm,
            fit_intercept=fit_intercept,
            rho=rho,
            random_state=random_state,
        )

    def fit(self, X, y):
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        if self.classes_.size != 2:
            raise ValueError("AdaSSPClassifier is binary.")
        return super().fit(X, np.where(y == self.classes_[1], 1.0, -1.0))

    def predict(self, X):
        return self.classes_[(super().predict(X) > 0).astype(int)]

    def score(self, X, y):
        return float(np.mean(self.predict(X) == np.asarray(y)))
