"""Logistic regression with forward or backward loss correction for noisy labels."""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from skdp.linear_model._backward_check import check_backward_fit
from skdp.linear_model._corrected_objective import (
    CorrectedObjective,
    ForwardLoss,
    SoftTargetLoss,
    minimize_objective,
)
from skdp.mechanisms import project_to_simplex
from skdp.utils.privacy_warnings import external_stacklevel
from skdp.utils.sklearn_compat import Interval, StrOptions, fit_context, validate_data

__all__ = ["LossCorrectedLogisticRegression", "corrected_log_loss"]


def check_transition_matrix(T, n_classes, correction):
    """Validate a row-stochastic (n_classes, n_classes) matrix; return it as float."""
    T = np.asarray(T, dtype=np.float64)
    if T.shape != (n_classes, n_classes):
        raise ValueError(
            f"transition_matrix must have shape ({n_classes}, {n_classes}) (one row "
            f"and one column per class), got {T.shape}."
        )
    if not np.all(np.isfinite(T)) or np.any(T < 0):
        raise ValueError("transition_matrix must have finite, non-negative entries.")
    if not np.allclose(T.sum(axis=1), 1.0, rtol=0, atol=1e-8):
        raise ValueError(
            "transition_matrix must be row-stochastic: T[i, j] = P(observed j | "
            f"true i), rows summing to 1; got row sums {T.sum(axis=1)}."
        )
    if correction == "backward" and np.linalg.cond(T) > 1e12:
        raise ValueError(
            "correction='backward' needs an invertible transition_matrix; this one "
            "is singular (use correction='forward')."
        )
    return T


def check_sample_weight(sample_weight, n_samples):
    """Non-negative finite weights of shape (n_samples,); ones for None."""
    if sample_weight is None:
        return np.ones(n_samples)
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim == 0:
        return np.full(n_samples, float(w))
    if w.shape != (n_samples,):
        raise ValueError(
            f"sample_weight must have shape ({n_samples},), got {w.shape}."
        )
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("sample_weight must be finite and non-negative.")
    if not w.sum() > 0:
        raise ValueError("sample_weight must not be all zero: nothing to fit.")
    return w


def check_label_likelihood(label_likelihood, n_samples, n_classes):
    """Validate per-row likelihoods of the released labels; return them as float."""
    L = np.asarray(label_likelihood, dtype=np.float64)
    if L.shape != (n_samples, n_classes):
        raise ValueError(
            f"label_likelihood must have shape ({n_samples}, {n_classes}) (one row "
            "per sample, one column per class of classes_), got "
            f"{L.shape}."
        )
    if not np.all(np.isfinite(L)) or np.any(L < 0) or np.any(L > 1):
        raise ValueError(
            "label_likelihood must hold probabilities: finite entries in [0, 1] "
            "(label_likelihood[i, k] = P(released label of row i | true class k))."
        )
    if np.any(L.max(axis=1) <= 0):
        bad = np.flatnonzero(L.max(axis=1) <= 0)[:5].tolist()
        raise ValueError(
            "label_likelihood has rows that are zero for every class (rows "
            f"{bad}): no true class could have released that label."
        )
    return L


def _rows_of(label_likelihood, T, y_codes):
    """Whether every row i of ``label_likelihood`` is column y_i of ``T``."""
    return np.allclose(label_likelihood, T[:, y_codes].T, rtol=1e-9, atol=0)


#: Smallest corrected class count after the backward correction's projection,
#: in units of an average row (S / n_eff); see ``bounded_backward_targets``.
BACKWARD_MIN_COUNT = 0.5
#: Largest standard error of the corrected class frequencies at which the
#: backward correction still projects negative counts instead of refusing.
BACKWARD_MAX_SE = 0.5


def bounded_backward_targets(targets, sample_weight):
    """Backward targets whose implied class counts are positive, or an error.

    The backward risk of the intercepts alone is S logsumexp(b) - c^T b with
    c = sum_i s_i a_i the corrected class counts (S = sum c = sum s_i):
    bounded below iff c >= 0, attained iff c > 0. If some count is <= 0 (with
    n_eff = S^2 / sum s_i^2, the number of rows for unit weights):

    - if the corrected class frequencies c/S have a standard error
      sqrt(max_k Var_k / n_eff) (Var_k the weighted variance of a_ik over the
      rows) of ``BACKWARD_MAX_SE`` or more, their +-1 standard error interval is
      wider than [0, 1]: the labels say nothing about the class frequencies,
      and the fit is refused (ValueError);
    - otherwise c/S is projected (Euclidean) onto
      {pi : sum pi = 1, pi_k >= 1 / (2 n_eff)}, i.e. every count at least
      ``BACKWARD_MIN_COUNT`` = 1/2 of an average row S / n_eff (the
      pseudo-count of the Krichevsky-Trofimov estimator), and every row gets
      the same shift (c' - c) / S, which keeps rows summing to 1, makes the
      counts c' and changes no centred statistic sum_i s_i a_i (x_i - x_bar):
      the coefficients keep their unbiased linear term, the intercepts fit c'.

    Both rules depend on the weights only through their relative sizes.
    """
    counts = sample_weight @ targets
    total = float(counts.sum())
    n_eff = total**2 / float(sample_weight @ sample_weight)
    if counts.min() > 0:
        return targets
    rounded = np.round(counts, 1).tolist()
    freq = counts / total
    variance = sample_weight @ (targets - freq) ** 2 / total
    standard_error = float(np.sqrt(variance.max() / n_eff))
    if standard_error >= BACKWARD_MAX_SE:
        raise ValueError(
            "correction='backward' cannot fit these labels: the corrected class "
            f"counts sum_i w_i (T^-1)[y_i] are {rounded}, negative (or zero) "
            "where the backward risk has no minimum, and the corrected class "
            f"frequencies have a standard error of {standard_error:.2f} (>= "
            f"{BACKWARD_MAX_SE}): the label noise swamps the labels at this "
            "epsilon and sample size. Spend more epsilon, use more rows or "
            "fewer classes."
        )
    floor = min(BACKWARD_MIN_COUNT / n_eff, 1.0 / counts.size)  # a frequency
    share = 1.0 - counts.size * floor
    if share > 0:
        projected = total * (floor + share * project_to_simplex((freq - floor) / share))
    else:  # fewer than n_classes / 2 rows in all
        projected = np.full(counts.size, total / counts.size)
    warnings.warn(
        f"The backward-corrected class counts sum_i w_i (T^-1)[y_i] are {rounded}: "
        "some are negative (or zero), where the backward risk is unbounded "
        "below (or has no minimum) and its intercepts diverge. They were "
        "projected onto "
        f"{np.round(projected, 1).tolist()} (standard error of the corrected "
        f"class frequencies: {standard_error:.2f}); classes left near zero are "
        "rarely predicted. Spend more epsilon or use more rows if you can.",
        UserWarning,
        stacklevel=external_stacklevel(),
    )
    return targets + (projected - counts) / total


def _warn_if_outside_noise_range(y_codes, sample_weight, T):
    """Warn when the observed label frequencies are not T^T pi for any pi >= 0.

    Then the forward likelihood is maximized at the boundary: the classes with
    negative estimated frequency get probabilities near 0, and with two classes
    the coefficients get no gradient and the penalty shrinks them. It is
    exactly the case where the backward correction's class counts go negative,
    so that correction is no remedy.
    """
    observed = np.bincount(y_codes, weights=sample_weight, minlength=len(T))
    observed = observed / observed.sum()
    try:
        clean = np.linalg.solve(T.T, observed)
    except np.linalg.LinAlgError:
        return
    if np.all(clean >= 0):
        return
    warnings.warn(
        "The released label frequencies "
        f"{np.round(observed, 3).tolist()} lie outside what transition_matrix "
        f"can produce from any class distribution (clean estimate "
        f"{np.round(clean, 3).tolist()}): the forward-corrected likelihood is "
        "maximized at the boundary, where the classes with a negative estimate "
        "get probabilities near 0 (with two classes the coefficients shrink "
        "towards zero). The labels carry too little information at this "
        "epsilon and sample size for any correction (the backward correction "
        "has negative class counts in exactly this case): spend more epsilon "
        "or use more rows if you can.",
        UserWarning,
        stacklevel=external_stacklevel(),
    )


def corrected_log_loss(Z, y_codes, T=None, correction="forward"):
    """Per-sample corrected cross-entropy and its gradient in the logits.

    Parameters
    ----------
    Z : ndarray of shape (n_samples, n_classes)
        Logits; p = softmax(Z) models the clean class probabilities.
    y_codes : ndarray of int of shape (n_samples,)
        Observed (noisy) labels as positions in the class list.
    T : ndarray of shape (n_classes, n_classes) or None
        T[i, j] = P(observed j | true i). None: no correction.
    correction : {"forward", "backward"}

    Returns
    -------
    loss : ndarray of shape (n_samples,)
    grad : ndarray of shape (n_samples, n_classes)
        d loss_i / d Z_i.

    Notes
    -----
    Forward: -log (T^T p)_{y~} = -log sum_k p_k T[k, y~]; with
    g_k = d/dp_k = -T[k, y~] / q, q = (T^T p)_{y~}, the softmax chain rule gives
    d/dZ_m = p_m (g_m - sum_k p_k g_k) = p_m (1 - T[m, y~] / q).
    Backward: sum_k (T^{-1})[y~, k] (-log p_k) = logsumexp(Z) - a^T Z with
    a = row y~ of T^{-1}; its rows sum to 1 because T's do, so the loss is
    convex in Z (gradient p - a).
    """
    Z = np.asarray(Z, dtype=np.float64)
    y_codes = np.asarray(y_codes, dtype=np.intp)
    if T is None:
        loss = SoftTargetLoss(np.eye(Z.shape[1])[y_codes])
    elif correction == "backward":
        loss = SoftTargetLoss(np.linalg.inv(T)[y_codes])
    else:
        loss = ForwardLoss(np.asarray(T, dtype=np.float64)[:, y_codes].T)
    return loss.value_grad(Z, binary=False)


class LossCorrectedLogisticRegression(ClassifierMixin, BaseEstimator):
    """Logistic regression trained on noisy labels with a known noise matrix.

    Minimizes ``sum_i s_i loss(x_i, y~_i) + ||W||^2 / (2 C)`` (the objective of
    scikit-learn's ``LogisticRegression``, sample weights s_i) where ``loss`` is
    the cross-entropy corrected for labels observed through the transition
    matrix T (T[i, j] = P(observed class j | true class i)), e.g. the
    ``label_matrix_`` of :class:`~skdp.preprocessing.RandomizedResponse` or
    :class:`~skdp.preprocessing.ExponentialLabelRelease`, or (forward
    correction) through per-row likelihoods ``label_likelihood`` when rows went
    through different mechanisms.
    :class:`~skdp.preprocessing.PrivateLabelClassifier` passes the matrix and
    the per-row likelihoods in automatically. ``predict_proba`` estimates the
    clean class probabilities.

    This estimator itself is not differentially private: it post-processes
    labels released by a label-DP mechanism.

    Parameters
    ----------
    correction : {"forward", "backward"} or None, default="forward"
        ``"forward"`` (Patrini et al. 2017): the model's clean probabilities p(x)
        are pushed through the noise, loss = -log (T^T p(x))_{y~}. ``"backward"``:
        loss = sum_k (T^{-1})[y~, k] (-log p_k(x)), unbiased for the clean loss.
        ``None``: plain logistic regression (the noisy labels taken as clean).
    transition_matrix : array-like of shape (n_classes, n_classes) or None, \
default=None
        Row-stochastic T, rows and columns ordered as ``classes_``. ``None``: the
        identity (no noise), which gives plain logistic regression, unless
        ``fit`` receives ``label_likelihood``.
    classes : array-like or None, default=None
        The label domain, in the order of the rows of ``transition_matrix``.
        ``None``: the sorted labels present in ``y`` (a noisy release may miss a
        class; declare ``classes`` when it matters).
    C : float, default=1.0
        Inverse regularization strength, as in scikit-learn's LogisticRegression.
    fit_intercept : bool, default=True
    max_iter : int, default=1000
        Largest number of iterations (L-BFGS and Newton steps together).
    tol : float, default=1e-8
        Gradient tolerance: the fit stops once the largest entry of the
        gradient of the objective divided by the total sample weight is at
        most ``tol``, after one more Newton step when Newton is used (see
        Notes).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    transition_matrix_ : ndarray of shape (n_classes, n_classes) or None
        The matrix used (the identity when none was given; None when only
        ``label_likelihood`` was given).
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        One row for two classes (logit of ``classes_[1]``), else one per class
        (multinomial).
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_iter_ : int
        L-BFGS iterations plus Newton steps.
    corrected_train_accuracy_ : float
        Backward correction only: sum_i s_i (T^{-1})[y~_i, pred_i] / S, the
        corrected (unbiased for predictions fixed in advance) clean accuracy
        of the model's predictions on the training rows. In-sample, hence
        optimistic: the predictions were fitted to these released labels (it
        can exceed 1 at small epsilon). See Notes.
    corrected_loo_accuracy_ : float
        Backward correction only: the same estimate with each row predicted by
        the approximate leave-one-out fit (one Newton step without the row),
        whose prediction does not depend on the row's released label: nearly
        unbiased for the clean accuracy of the fitting procedure. NaN where
        the Hessian is too large to build (more than 1000 parameters or 2e9
        multiply-adds); the warning then uses the in-sample estimate.
    corrected_majority_accuracy_ : float
        Backward correction only: the same estimate for the best constant
        prediction, max_k sum_i s_i (T^{-1})[y~_i, k] / S (the largest
        corrected class frequency).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string feature names.

    Notes
    -----
    **Backward correction is unbiased.** With l the vector of clean losses
    (-log p_k(x))_k and labels drawn as P(y~ = j | y) = T[y, j],
    E[sum_k (T^{-1})[y~, k] l_k] = sum_j T[y, j] sum_k (T^{-1})[j, k] l_k =
    (T T^{-1} l)_y = l_y: the expected corrected loss equals the clean loss for
    every model, so the expected risk and its minimizer are the clean ones. The
    corrected loss is logsumexp(z) - a^T z with sum_k a_k = 1 (rows of T^{-1}
    sum to 1), convex in the logits. Each term is unbounded below when a has
    negative entries (always, for randomized response); the penalty bounds the
    coefficients, but not the unpenalized intercepts: the objective is
    bounded below iff the corrected class counts c = sum_i s_i a_i are
    non-negative (the intercept part is S logsumexp(b) - c^T b, S = sum_k c_k)
    and has a minimizer iff they are positive. It is strictly convex in the
    coefficients, not in the intercepts (a common shift of the multinomial
    intercepts changes nothing; they are reported centred).

    **When the corrected counts go negative** (many classes, small epsilon,
    few rows: the counts' noise grows like 1 / (p - q)), the minimizer does not
    exist: the intercepts of the negative classes run to -inf. ``fit`` then
    warns and projects c/S onto the class distributions with every count at
    least half a row (the Krichevsky-Trofimov pseudo-count), shifting
    every row's a by the same vector: the coefficients keep their unbiased
    centred statistic, the intercepts fit the projected counts. If the
    corrected class frequencies c/S have a standard error of 1/2 or more (their
    +-1 standard error interval is wider than [0, 1]: the labels say nothing
    about the class frequencies), ``fit`` refuses with a ValueError instead.
    Measured on digits (10 classes, 1,257 training rows, randomized response,
    30 splits): at eps = 0.1 every fit is refused (standard error 0.81); at
    eps = 0.5 every fit is projected and all beat the majority class (mean
    accuracy 0.25); at eps = 1, 11 of 30 are projected, all beat it.
    A backward fit whose model predicts one class on every training row
    (possible on small data even with positive counts) warns as well.

    **Is the fitted model better than the majority class?** After every
    backward fit, from what the fit has (X, the released labels, T: label-DP
    post-processing, no privacy cost): for a prediction k of a row of true
    class y the clean indicator is l(y) = 1{k == y}, l = e_k, and with
    P(y~ = j | y) = T[y, j],
    E[(T^{-1} l)[y~] | y] = sum_j T[y, j] (T^{-1} l)_j = (T T^{-1} l)_y = l(y):
    (T^{-1})[y~_i, k] is unbiased for 1{k == y_i} for every true class, so
    the weighted mean over the rows is unbiased for the clean accuracy of
    predictions that do not depend on the released labels. The fitted
    model's own predictions do (they were fitted to them), which makes the
    in-sample estimate ``corrected_train_accuracy_`` optimistic: measured
    1.1-1.8 (impossible values) for models below the majority class at
    eps = 0.1. Each row is therefore predicted by the approximate
    leave-one-out fit (one Newton step from the fit without the row; the
    Hessian of the backward loss, Cov_p, does not depend on the targets),
    giving ``corrected_loo_accuracy_``, and compared with
    ``corrected_majority_accuracy_`` (the best constant, chosen on the same
    rows, which biases the comparison towards warning). The per-row
    differences d_i = (T^{-1})[y~_i, pred_i] - (T^{-1})[y~_i, m] are
    independent given the features (each released label is drawn
    independently), so sum_i s_i d_i / S has standard error
    sqrt(sum_i s_i^2 (d_i - d_bar)^2) / S. ``fit`` warns when the gain is at
    most ``MIN_GAIN_IN_SE`` = 2 standard errors: a one-sided test at about
    2.3% (normal approximation) that the model beats the constant; 2 rather
    than a larger multiple because a missed useless model is the silent
    failure this check exists to prevent, and a false alarm only advises
    more epsilon. At small epsilon the test has little power: many fits that
    do beat the majority class on test data are warned too (measured in
    ``benchmarks/bench_label_learning.py``, backward table). It also warns
    when one class gets at least ``NEAR_ONE_CLASS_SHARE`` = 99% of the
    training rows while its corrected frequency is below 99%: such a model
    differs from a constant on at most 1% of the rows, so it gains at most
    0.01 accuracy over it, and on new data it may be one class outright
    (measured: fgl at eps = 4, one class on 99.3% of the training rows,
    below the majority class on test data). The diagnostic only reads the
    fitted coefficients: what is fitted does not depend on it.

    **Forward correction is consistent.** If the model's p(x) is the clean
    posterior, T^T p(x) is the posterior of the noisy label, and the forward
    loss is the log loss of that (a proper loss): its population minimizer
    over a well-specified model is the clean posterior when T is invertible
    (Patrini et al. 2017, Theorem 2). Its curvature in the logits is
    Cov_p - Cov_r (r = the posterior of the clean class given the released
    label): not convex in general. It is bounded below (by 0), so it cannot
    diverge; but when the released label frequencies are not T^T pi for any
    class distribution pi (frequent at eps = 0.1 with a few hundred rows;
    exactly the case where the backward counts go negative), its infimum lies
    at the boundary: the classes with negative estimated frequency get
    probabilities near 0 (their intercepts fall until the gradient is below
    ``tol``) and, with two classes, the coefficients shrink. ``fit`` then
    warns; no correction is reliable there.

    **Per-row likelihoods.** With ``label_likelihood`` L the forward loss of
    row i is -log sum_k p_k(x_i) L[i, k]: the log likelihood of the released
    label under the mechanism that row went through (e.g. a release in stages
    with different priors or epsilons). With L[i] = T[:, y~_i] it is the
    matrix fit, computed the same way. The backward correction needs T^{-1}
    of one shared matrix and is not defined for per-row noise.

    **Solver.** L-BFGS on the objective divided by S, with analytic
    gradients, until the largest gradient entry is below 1e-2 where a Hessian
    costs at most 50 gradient evaluations (few coefficients per class), else
    1e-4 (or ``tol``, if larger); then Newton steps with the exact Hessian
    (Cholesky, Armijo backtracking; a multiple of the identity is added where
    the forward loss's Hessian is not positive definite), stopping one step
    after the gradient is below ``tol``. The error after that step is
    O(tol^2), i.e. rounding: fits that differ only in the order of sums
    (sample weights against repeated rows, another BLAS or thread count)
    agree to about 1e-11 rather than to the tolerance. Newton is skipped where
    the Hessian is large (more than 1000 parameters, or more than 2e9
    multiply-adds to build it); L-BFGS then runs to ``tol``. The switch point
    changes the speed, not the result.

    **Privacy.** Under label DP the noise matrix is public (it depends only on
    epsilon and the label domain), so using it costs nothing. The exponential
    mechanism on the label vector at eps is k-ary randomized response at eps/2,
    whose matrix is ``ExponentialLabelRelease.label_matrix_``.

    References
    ----------
    G. Patrini, A. Rozza, A. Krishna Menon, R. Nock, L. Qu. Making deep neural
    networks robust to label noise: a loss correction approach. CVPR 2017.
    N. Natarajan, I. S. Dhillon, P. Ravikumar, A. Tewari. Learning with noisy
    labels. NeurIPS 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from skdp.linear_model import LossCorrectedLogisticRegression
    >>> from skdp.preprocessing import RandomizedResponse
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> rr = RandomizedResponse(epsilon=1.0, classes=[0, 1], random_state=0)
    >>> _, y_noisy = rr.fit_resample(X, y)
    >>> clf = LossCorrectedLogisticRegression(
    ...     transition_matrix=rr.label_matrix_, classes=[0, 1]
    ... ).fit(X, y_noisy)
    >>> float(clf.score(X, y)) > 0.85
    True
    """

    # requested by default, so that PrivateLabelClassifier's routing delivers a
    # sampler's per-row likelihoods (also through a Pipeline) without a
    # set_fit_request call
    __metadata_request__fit = {"label_likelihood": True}

    _parameter_constraints: dict = {
        "correction": [StrOptions({"forward", "backward"}), None],
        "transition_matrix": ["array-like", None],
        "classes": ["array-like", None],
        "C": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        *,
        correction="forward",
        transition_matrix=None,
        classes=None,
        C=1.0,
        fit_intercept=True,
        max_iter=1000,
        tol=1e-8,
    ):
        self.correction = correction
        self.transition_matrix = transition_matrix
        self.classes = classes
        self.C = C
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, label_likelihood=None):
        """Fit on the noisy labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Observed (noisy) labels, from ``classes`` when declared.
        sample_weight : array-like of shape (n_samples,) or None
            Weight of each sample's loss.
        label_likelihood : array-like of shape (n_samples, n_classes) or None
            Per-row noise likelihoods: ``label_likelihood[i, k]`` = P(released
            label of row i = ``y[i]`` | true class ``classes_[k]``) under the
            mechanism row i went through (e.g. a sampler's
            ``label_likelihood_``). The forward correction uses row i in place
            of ``transition_matrix[:, y_i]`` (``transition_matrix`` may then be
            None). The backward correction needs one matrix for every row: it
            accepts only rows equal to ``transition_matrix[:, y_i]``.
            ``correction=None`` ignores it.

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        sample_weight = check_sample_weight(sample_weight, len(X))
        self.classes_, y_codes = self._encode(y)
        n_classes = self.classes_.size
        if label_likelihood is not None:
            label_likelihood = check_label_likelihood(
                label_likelihood, len(X), n_classes
            )
        if self.transition_matrix is None:
            has_matrix = False
            T = None if label_likelihood is not None else np.eye(n_classes)
        else:
            has_matrix = True
            T = check_transition_matrix(
                self.transition_matrix, n_classes, self.correction
            )
        self.transition_matrix_ = T
        loss = self._loss(y_codes, sample_weight, T, has_matrix, label_likelihood)
        binary = n_classes == 2
        n_out = 1 if binary else n_classes
        objective = CorrectedObjective(
            X,
            sample_weight,
            loss,
            n_out=n_out,
            fit_intercept=self.fit_intercept,
            C=self.C,
        )
        theta, self.n_iter_ = minimize_objective(
            objective,
            np.zeros(objective.n_params),
            tol=self.tol,
            max_iter=self.max_iter,
        )
        theta_flat = theta.copy()
        theta = theta.reshape(n_out, objective.D)
        if self.fit_intercept:
            self.coef_ = theta[:, :-1].copy()
            intercept = theta[:, -1]
            # softmax: only differences of intercepts matter; report them centred
            self.intercept_ = intercept if binary else intercept - intercept.mean()
        else:
            self.coef_ = theta.copy()
            self.intercept_ = np.zeros(n_out)
        if self.correction == "backward":
            check_backward_fit(self, X, y_codes, sample_weight, objective, theta_flat)
        return self

    def _loss(self, y_codes, sample_weight, T, has_matrix, label_likelihood):
        """The per-row loss of the chosen correction (warns where it must)."""
        n_classes = self.classes_.size
        if self.correction is None:
            return SoftTargetLoss(np.eye(n_classes)[y_codes])
        if self.correction == "backward":
            if label_likelihood is not None and not (
                has_matrix and _rows_of(label_likelihood, T, y_codes)
            ):
                raise ValueError(
                    "correction='backward' is defined for one transition_matrix "
                    "shared by every row (it inverts it); label_likelihood has "
                    "rows that are not transition_matrix[:, y_i] (per-row noise, "
                    "or no transition_matrix given). Use correction='forward', "
                    "which takes per-row likelihoods."
                )
            targets = np.linalg.inv(T)[y_codes]
            return SoftTargetLoss(bounded_backward_targets(targets, sample_weight))
        from_matrix = has_matrix or label_likelihood is None
        if label_likelihood is None:
            label_likelihood = T[:, y_codes].T
        elif from_matrix:
            from_matrix = _rows_of(label_likelihood, T, y_codes)
        if from_matrix:  # the noise range is that of one matrix
            _warn_if_outside_noise_range(y_codes, sample_weight, T)
        return ForwardLoss(label_likelihood)

    def _encode(self, y):
        if self.classes is None:
            classes, codes = np.unique(y, return_inverse=True)
        else:
            classes = np.asarray(self.classes)
            if np.unique(classes).size != classes.size:
                raise ValueError(f"classes must be distinct, got {classes.tolist()}.")
            order = np.argsort(classes, kind="stable")
            pos = np.searchsorted(classes[order], y)
            pos = np.clip(pos, 0, classes.size - 1)
            found = classes[order][pos] == y
            if not np.all(found):
                raise ValueError(
                    "y contains labels outside the declared classes "
                    f"{classes.tolist()}: {np.unique(y[~found])[:5].tolist()}."
                )
            codes = order[pos]
        if classes.size < 2:
            raise ValueError(
                "LossCorrectedLogisticRegression needs at least two classes; got "
                f"{classes.size} class(es): {classes.tolist()}."
            )
        return classes, codes

    def decision_function(self, X):
        """Logit of ``classes_[1]`` (two classes) or the class logits."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Z = X @ self.coef_.T + self.intercept_
        return Z[:, 0] if self.classes_.size == 2 else Z

    def predict_proba(self, X):
        """Estimated clean class probabilities, columns ordered as ``classes_``."""
        Z = self.decision_function(X)
        if Z.ndim == 1:
            Z = np.column_stack([np.zeros(len(Z)), Z])
        return softmax(Z, axis=1)

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """The class of largest estimated clean probability."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]
