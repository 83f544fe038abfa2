"""Linear classifiers trained with symmetric (noise-robust) losses."""

from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted

from skdp.linear_model._losses import LOSSES, make_loss
from skdp.linear_model._symmetric_solvers import (
    penalty_value,
    solve_piecewise_l1,
    solve_piecewise_l2,
    solve_smooth,
)
from skdp.utils import check_random_state
from skdp.utils.sklearn_compat import (
    RANDOM_STATE,
    Interval,
    StrOptions,
    fit_context,
    validate_data,
)

__all__ = ["SymmetricLossClassifier"]


def _risk_rows(X, y, objective, max_pairs, rng):
    """Rows M, intercept coefficients e and weights c of the empirical risk.

    The risk is sum_j c_j l(M_j w + e_j b): ``error`` uses z_i = y_i f(x_i) with
    c_i = 1/n; ``ber`` the same rows with c_i = 1/(2 n_{y_i}); ``auc`` the pairs
    z = f(x_i) - f(x_j) for i positive, j negative (the intercept cancels), all pairs
    when there are at most ``max_pairs``, else ``max_pairs`` pairs drawn uniformly
    with replacement (an unbiased estimate of the pairwise risk).
    """
    pos = y > 0
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if objective == "auc":
        ip, ineg = np.flatnonzero(pos), np.flatnonzero(~pos)
        n_pairs = n_pos * n_neg
        if n_pairs <= max_pairs:
            i, j = (g.ravel() for g in np.meshgrid(ip, ineg, indexing="ij"))
        else:
            i = ip[rng.integers(n_pos, size=max_pairs)]
            j = ineg[rng.integers(n_neg, size=max_pairs)]
        M = X[i] - X[j]
        return M, np.zeros(len(M)), np.full(len(M), 1.0 / len(M))
    M = y[:, None] * X
    if objective == "ber":
        c = np.where(pos, 0.5 / n_pos, 0.5 / n_neg)
    else:
        c = np.full(len(y), 1.0 / len(y))
    return M, y.astype(np.float64), c


def _best_threshold(scores, y, balanced):
    """Threshold minimizing the training error (or balanced error) of sign(s - t)."""
    order = np.argsort(scores, kind="stable")
    s, pos = scores[order], y[order] > 0
    n_pos, n_neg = pos.sum(), (~pos).sum()
    # cut k: the k smallest scores are predicted negative
    fn = np.concatenate([[0], np.cumsum(pos)])
    fp = n_neg - np.concatenate([[0], np.cumsum(~pos)])
    risk = 0.5 * (fn / n_pos + fp / n_neg) if balanced else (fn + fp) / len(s)
    # a cut must fall between distinct scores
    valid = np.ones(len(s) + 1, dtype=bool)
    valid[1:-1] = s[1:] > s[:-1]
    k = int(np.argmin(np.where(valid, risk, np.inf)))
    if k == 0:
        return float(s[0] - 1.0)
    if k == len(s):
        return float(s[-1] + 1.0)
    return float(0.5 * (s[k - 1] + s[k]))


def _feature_map(X, scaling):
    """Mean and matrix W such that (X - mean) @ W are the features the loss sees.

    ``"whiten"``: W = V diag(lambda)^{-1/2} over the eigenpairs of the (biased)
    covariance with lambda > 1e-12 lambda_max (directions without variance are
    dropped); ``"standardize"``: W = diag(1 / std) (constant columns dropped);
    ``None``: the identity and no centring.
    """
    d = X.shape[1]
    if scaling is None:
        return np.zeros(d), np.eye(d)
    mean = X.mean(axis=0)
    Xc = X - mean
    if scaling == "standardize":
        std = np.sqrt(np.mean(Xc**2, axis=0))
        keep = np.flatnonzero(std > 1e-12 * max(1.0, float(std.max(initial=0.0))))
        W = np.zeros((d, keep.size))
        W[keep, np.arange(keep.size)] = 1.0 / std[keep]
        return mean, W
    lam, V = np.linalg.eigh(Xc.T @ Xc / len(X))
    keep = lam > 1e-12 * max(float(lam.max(initial=0.0)), 1e-300)
    return mean, V[:, keep] / np.sqrt(lam[keep])


class SymmetricLossClassifier(ClassifierMixin, BaseEstimator):
    """Linear classifier minimizing a regularized (symmetric) margin risk.

    Learns f(x) = w^T x + b by minimizing ``risk(f) + alpha * penalty(w)`` where the
    risk is the plain, class-balanced or pairwise (AUC) empirical risk of a margin
    loss. Symmetric losses (l(z) + l(-z) constant) make the minimizer of the risk
    under symmetric label noise (randomized response, the exponential label
    mechanism) the same as under clean labels, so they suit privatized labels.
    More than two classes are handled one-vs-rest (see Notes).

    This estimator itself is not differentially private: privatize the labels
    before it, e.g. with :class:`skdp.preprocessing.PrivateLabelClassifier`.

    Parameters
    ----------
    loss : {"barrier_hinge", "sigmoid", "ramp", "unhinged", "hinge", "logistic", \
"squared"}, default="barrier_hinge"
        Margin loss l(z), z = y f(x) with y in {-1, +1}. Symmetric: barrier hinge
        (on [-r, r]), sigmoid, ramp, unhinged. For comparison: hinge, logistic,
        squared.
    objective : {"error", "ber", "auc"}, default="error"
        ``"error"``: mean of l(y_i f(x_i)). ``"ber"``: balanced risk, each class
        weighted by 1/(2 n_class). ``"auc"``: mean of l(f(x_i) - f(x_j)) over
        (positive i, negative j) pairs.
    alpha : float or "auto", default="auto"
        Regularization strength (> 0), on the coefficients of the scaled features
        (``feature_scaling``). ``"auto"``: for the barrier hinge with the L2
        penalty, the smallest alpha that keeps every training margin inside the
        symmetric region [-r, r] (see Notes); for the other losses (and the L1
        penalty) 1 / n_samples, the regularization of scikit-learn's
        ``LogisticRegression(C=1)`` on the mean loss. The value used is
        ``alpha_``. Scale: l_{b,r}(z) = r l_{b,1}(z / r), so the barrier hinge
        of width r at ``alpha`` predicts as the width-1 barrier hinge at
        ``alpha * r``.
    penalty : {"l2", "l1"}, default="l2"
        ``alpha/2 ||w||^2`` or ``alpha ||w||_1``; the intercept is not penalized.
    fit_intercept : bool, default=True
        Learn b. With ``objective="auc"``, ``loss="unhinged"`` or the barrier hinge
        at ``alpha="auto"`` the risk does not determine b; it is then the
        training-set threshold (see Notes).
    feature_scaling : {"whiten", "standardize"} or None, default="whiten"
        Features the loss sees, computed from the training features:
        ``"whiten"`` centres them and maps their covariance to the identity (the
        L2 penalty then bounds the variance of the scores, alpha/2 Var(f(x)));
        ``"standardize"`` centres and divides each by its standard deviation;
        ``None`` uses X as given (the penalty then depends on the units of X).
        ``coef_`` and ``intercept_`` are always for the original features.
    barrier_slope : float, default=200.0
        Barrier hinge slope b outside the symmetric region; must be > 1
        (renamed from ``b``).
    symmetric_width : float, default=50.0
        Barrier hinge half width r of the symmetric region [-r, r]; must be > 0
        (renamed from ``r``).
    max_pairs : int, default=20000
        Pairs used by ``objective="auc"``: all n_pos n_neg pairs if at most this
        many, else this many pairs sampled uniformly (with ``random_state``).
    n_restarts : int, default=2
        Extra random starting points for the nonconvex losses (sigmoid, ramp).
    tol : float, default=1e-9
        Relative tolerance of the KKT check that certifies the optimum of the
        piecewise-linear losses with the L2 penalty.
    random_state : int, RandomState, Generator or None, default=None
        Pair sampling and restarts.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels; for two classes ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        One row for two classes, else one row per class (one-vs-rest).
    intercept_ : ndarray of shape (1,) or (n_classes,)
    alpha_ : ndarray of shape (n_problems,)
        Regularization strength used by each binary problem.
    objective_value_ : ndarray of shape (n_problems,)
        Regularized training objective of each binary problem at its solution (in
        the scaled features, without the threshold).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when X has string feature names.

    Notes
    -----
    **Symmetry and noise.** If :math:`\\ell(z) + \\ell(-z) = K` and each label is
    flipped with probability :math:`\\rho < 1/2` independently of :math:`x` (binary
    randomized response, or the exponential label mechanism, which is RR at
    :math:`\\varepsilon/2`), the expected noisy risk is

    .. math::

        \\tilde R(f) = (1 - 2\\rho)\\, R(f) + \\rho K,

    an increasing affine function of the clean risk :math:`R`: same minimizer. For
    the balanced risk this holds for class-conditional flip rates too (as long as
    they sum to less than 1), and for the AUC risk the pairwise version of the same
    identity holds (Charoenphakdee, Lee & Sugiyama 2019). The barrier hinge

    .. math::

        \\ell(z) = \\max\\big(-b(r + z) + r,\\ \\max(b(z - r),\\ r - z)\\big)

    is symmetric only on :math:`[-r, r]` (where it equals the unhinged loss
    :math:`r - z`); the steep barrier keeps margins inside. It is convex, so
    (unlike sigmoid and ramp) the optimum can be computed.

    **Defaults on unscaled data.** With a small fixed alpha the barrier hinge
    pushes the margins of most rows onto the barriers; its risk is then linear in
    b and the class imbalance drives every score to one side (measured on
    box-encoded real data: 2.7% positive predictions against 19.8% for logistic
    regression). ``alpha="auto"`` instead takes the smallest alpha whose solution
    leaves every training margin inside :math:`[-r, r]`: there the barrier hinge is
    :math:`r - z`, so for a given threshold :math:`t` the minimizer over :math:`w` of
    the L2-regularized risk is :math:`w = m / \\alpha` with
    :math:`m = \\sum_j c_j M_j` (rows :math:`M_j = y_j x_j`, or pair differences),
    and

    .. math::

        \\alpha = \\max_j \\frac{|M_j^\\top m - e_j t|}{r}

    is the smallest value for which all margins of :math:`w = m / \\alpha`,
    :math:`b = -t / \\alpha` lie in :math:`[-r, r]` (so the solution is exact for
    the barrier hinge, not only for the unhinged loss). Predictions then do not
    depend on :math:`b`, :math:`r` or :math:`\\alpha`. With
    ``feature_scaling="whiten"``, :math:`m` is proportional to
    :math:`\\Sigma^{-1} (\\mu_+ - \\mu_-)` (Fisher's discriminant direction) for the
    error and balanced risks. Under the label-DP model the
    features are public, so scaling from the training features costs no budget.

    **Multiclass.** With C > 2 classes, one binary problem per class (class k
    against the rest, same loss, objective and scaling) and ``predict`` takes the
    class of the largest score. k-ary randomized response makes the flips of
    each one-vs-rest problem class-conditional (1 - p from class k, (1 - p)/(C - 1)
    into it), not symmetric: use ``objective="ber"`` or ``"auc"``, whose minimizers
    survive class-conditional noise with symmetric losses. The label release's
    budget does not change: the labels are released once.

    **Optimization.** Piecewise-linear convex losses (barrier hinge, hinge): with
    the L1 penalty an exact LP (HiGHS); with L2 a smoothing continuation (Moreau
    envelope, damped Newton) followed by an exact active-set (KKT) solve, accepted
    only when the KKT conditions verify, which certifies the global optimum (if no
    stage verifies, a ConvergenceWarning is raised). Unhinged with L2
    is closed-form, w = (1/alpha) sum_j c_j M_j (unbounded with L1: rejected).
    Logistic and squared: L-BFGS (smooth, convex). Nonconvex sigmoid: L-BFGS from
    zero, from the logistic solution (convex initializer) and ``n_restarts`` random
    points; the lowest objective wins. Nonconvex ramp = hinge/2 - max(0, -1 - z)/2:
    the concave-convex procedure (each step an exact piecewise-linear problem, the
    objective decreases monotonically and stops when the linearization repeats)
    started from the hinge solution and ``n_restarts`` random points.

    **Intercept by threshold.** The pairwise risk does not depend on b and the
    unhinged risk is linear in b; there b is chosen as minus the threshold on the
    training scores that minimizes the training balanced error (``"ber"``/``"auc"``)
    or error (``"error"``). Under symmetric label noise these empirical rates are
    affine in the clean ones, so the threshold remains consistent.

    **Probabilities.** Symmetric losses are not proper: their minimizers carry no
    calibrated probability, so ``predict_proba`` exists only for
    ``loss="logistic"`` with ``objective="error"`` on two classes (the sigmoid of
    the score). For probabilities under label noise use
    :class:`~skdp.linear_model.LossCorrectedLogisticRegression`.

    References
    ----------
    N. Charoenphakdee, J. Lee, M. Sugiyama. On symmetric losses for learning from
    corrupted labels. ICML 2019.
    B. van Rooyen, A. Menon, R. Williamson. Learning with symmetric label noise:
    the importance of being unhinged. NeurIPS 2015.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp.linear_model import SymmetricLossClassifier
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = SymmetricLossClassifier().fit(100 * X, y)
    >>> float(clf.score(100 * X, y)) > 0.8
    True
    """

    _parameter_constraints: dict = {
        "loss": [StrOptions(set(LOSSES))],
        "objective": [StrOptions({"error", "ber", "auc"})],
        "alpha": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "penalty": [StrOptions({"l2", "l1"})],
        "fit_intercept": ["boolean"],
        "feature_scaling": [StrOptions({"whiten", "standardize"}), None],
        "barrier_slope": [Interval(Real, 1, None, closed="neither")],
        "symmetric_width": [Interval(Real, 0, None, closed="neither")],
        "max_pairs": [Interval(Integral, 1, None, closed="left")],
        "n_restarts": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        loss="barrier_hinge",
        objective="error",
        alpha="auto",
        penalty="l2",
        fit_intercept=True,
        feature_scaling="whiten",
        barrier_slope=200.0,
        symmetric_width=50.0,
        max_pairs=20000,
        n_restarts=2,
        tol=1e-9,
        random_state=None,
    ):
        self.loss = loss
        self.objective = objective
        self.alpha = alpha
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.feature_scaling = feature_scaling
        self.barrier_slope = barrier_slope
        self.symmetric_width = symmetric_width
        self.max_pairs = max_pairs
        self.n_restarts = n_restarts
        self.tol = tol
        self.random_state = random_state

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the linear scorer (one per class beyond two classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            At least two distinct labels.

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        type_of_target(y, input_name="y", raise_unknown=True)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError(
                "SymmetricLossClassifier needs samples of at least two classes in "
                f"y; got {self.classes_.size} class(es): {self.classes_.tolist()}."
            )
        if self.loss == "unhinged" and self.penalty == "l1":
            raise ValueError(
                "loss='unhinged' needs penalty='l2': with an L1 penalty the linear "
                "risk is unbounded below or the solution is w = 0."
            )
        rng = check_random_state(self.random_state)
        mean, W = _feature_map(X, self.feature_scaling)
        Z = (X - mean) @ W
        positives = self.classes_[1:] if self.classes_.size == 2 else self.classes_
        coefs, intercepts, alphas, values = [], [], [], []
        for positive in positives:
            y_pm = np.where(y == positive, 1.0, -1.0)
            w, b_, alpha, value = self._fit_binary(Z, y_pm, rng)
            coef = W @ w
            coefs.append(coef)
            intercepts.append(b_ - mean @ coef if self.fit_intercept else 0.0)
            alphas.append(alpha)
            values.append(value)
        self.coef_ = np.vstack(coefs)
        self.intercept_ = np.asarray(intercepts, dtype=np.float64)
        self.alpha_ = np.asarray(alphas)
        self.objective_value_ = np.asarray(values)
        return self

    def _fit_binary(self, Z, y_pm, rng):
        """(w, b, alpha, objective) of one binary problem in the scaled features."""
        loss = make_loss(
            self.loss,
            barrier_slope=self.barrier_slope,
            symmetric_width=self.symmetric_width,
        )
        M, e, c = _risk_rows(Z, y_pm, self.objective, self.max_pairs, rng)
        auto = self.alpha == "auto"
        if auto and self.loss == "barrier_hinge" and self.penalty == "l2":
            # sets self._alpha to the smallest value keeping margins in [-r, r]
            w, b_ = self._inside_symmetric_region(Z, y_pm, M, e, c)
            return w, b_, self._alpha, self._objective(loss, M, e, c, w, b_)
        self._alpha = 1.0 / len(y_pm) if auto else float(self.alpha)
        fit_b = (
            self.fit_intercept and self.objective != "auc" and self.loss != "unhinged"
        )
        w, b_, value = self._solve(loss, M, e, c, fit_b, rng)
        if self.fit_intercept and not fit_b:
            b_ = -_best_threshold(Z @ w, y_pm, balanced=self.objective != "error")
        return w, (b_ if self.fit_intercept else 0.0), self._alpha, value

    def _inside_symmetric_region(self, Z, y_pm, M, e, c):
        """Barrier hinge at the smallest alpha keeping all margins in [-r, r]."""
        m = M.T @ c
        scores = Z @ m
        t = 0.0
        if self.fit_intercept:
            t = _best_threshold(scores, y_pm, balanced=self.objective != "error")
        reach = float(np.max(np.abs(M @ m - e * t), initial=0.0))
        self._alpha = reach / self.symmetric_width if reach > 0 else 1.0
        return m / self._alpha, -t / self._alpha

    def _objective(self, loss, M, e, c, w, b_):
        return float(c @ loss.value(M @ w + e * b_)) + penalty_value(
            w, self._alpha, self.penalty
        )

    def _solve_piecewise(self, M, e, c, slopes, offsets, fit_b, theta0=None):
        if self.penalty == "l1":
            w, b_, _ = solve_piecewise_l1(M, e, c, slopes, offsets, self._alpha, fit_b)
        else:
            w, b_, _ = solve_piecewise_l2(
                M,
                e,
                c,
                slopes,
                offsets,
                self._alpha,
                fit_b,
                tol=self.tol,
                theta0=theta0,
            )
        return w, b_

    def _solve(self, loss, M, e, c, fit_b, rng):
        m, p = M.shape
        zero = (np.zeros(p), 0.0)
        if loss.name == "unhinged":
            # linear risk: sum_j c_j (1 - M_j w) + alpha/2 ||w||^2 has w = M^T c / alpha
            w = M.T @ c / self._alpha
            return w, 0.0, self._objective(loss, M, e, c, w, 0.0)
        if loss.pieces is not None:
            slopes, offsets = (np.tile(a, (m, 1)) for a in loss.pieces)
            w, b_ = self._solve_piecewise(M, e, c, slopes, offsets, fit_b)
            return w, b_, self._objective(loss, M, e, c, w, b_)
        if loss.convex:
            w, b_, _ = solve_smooth(
                loss, M, e, c, self._alpha, self.penalty, fit_b, zero
            )
            return w, b_, self._objective(loss, M, e, c, w, b_)
        starts = self._starting_points(loss, M, e, c, fit_b, rng)
        best = None
        for theta0 in starts:
            if loss.name == "ramp":
                w, b_ = self._ramp_cccp(M, e, c, fit_b, theta0)
            else:
                w, b_, _ = solve_smooth(
                    loss, M, e, c, self._alpha, self.penalty, fit_b, theta0
                )
            value = self._objective(loss, M, e, c, w, b_)
            if best is None or value < best[2]:
                best = (w, b_, value)
        return best

    def _starting_points(self, loss, M, e, c, fit_b, rng):
        """Convex initializer (hinge for ramp, logistic for sigmoid), then random."""
        m, p = M.shape
        convex = make_loss("hinge" if loss.name == "ramp" else "logistic")
        if convex.pieces is not None:
            slopes, offsets = (np.tile(a, (m, 1)) for a in convex.pieces)
            w0, b0 = self._solve_piecewise(M, e, c, slopes, offsets, fit_b)
        else:
            w0, b0, _ = solve_smooth(
                convex, M, e, c, self._alpha, self.penalty, fit_b, (np.zeros(p), 0.0)
            )
        starts = [(w0, b0)]
        if loss.name == "sigmoid":
            starts.append((np.zeros(p), 0.0))
        scale = max(float(np.linalg.norm(w0)), 1.0) / np.sqrt(max(p, 1))
        for _ in range(self.n_restarts):
            starts.append((rng.normal(scale=scale, size=p), 0.0))
        return starts

    def _ramp_cccp(self, M, e, c, fit_b, theta0, max_steps=50):
        """Concave-convex procedure for ramp = hinge/2 - max(0, -1 - z)/2."""
        w, b_ = theta0
        active = None
        for _ in range(max_steps):
            z = M @ w + e * b_
            new_active = z < -1.0
            if active is not None and np.array_equal(new_active, active):
                break
            active = new_active
            # linearized concave part adds slope 1/2 on rows with z < -1
            g = 0.5 * active
            slopes = np.column_stack([-0.5 + g, g])
            offsets = np.tile([0.5, 0.0], (len(z), 1))
            w, b_ = self._solve_piecewise(M, e, c, slopes, offsets, fit_b, (w, b_))
        return w, b_

    def decision_function(self, X):
        """Scores: shape (n_samples,) for two classes (positive means
        ``classes_[1]``), else (n_samples, n_classes), one-vs-rest."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        scores = X @ self.coef_.T + self.intercept_
        return scores[:, 0] if self.classes_.size == 2 else scores

    def predict(self, X):
        """Class labels: the positive class where the score is positive (two
        classes), else the class of the largest one-vs-rest score."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def _proper(self):
        if not (self.loss == "logistic" and self.objective == "error"):
            return False
        return not hasattr(self, "classes_") or self.classes_.size == 2

    @available_if(_proper)
    def predict_proba(self, X):
        """Sigmoid of the score (only for the proper logistic loss, error risk,
        two classes)."""
        p = expit(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags
