"""Randomized response with a prior (Ghazi et al. 2021), released in stages."""

import math
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn import get_config
from sklearn.base import BaseEstimator, clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import check_consistent_length

from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.preprocessing._categorical import as_output_labels, check_labels
from skdp.preprocessing._label_base import (
    LIKELIHOOD,
    NoReleaseFitMixin,
    likelihood_param,
    validate_features,
)
from skdp.utils import check_epsilon, noise_generator
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.release_order import check_inner_accepts
from skdp.utils.sklearn_compat import (
    RANDOM_STATE,
    HasMethods,
    Interval,
    validate_params_deep,
)

__all__ = [
    "RandomizedResponseWithPrior",
    "rr_with_prior_matrix",
    "rr_with_prior_release",
    "top_k_sets",
]


def _check_priors(prior):
    prior = np.asarray(prior, dtype=np.float64)
    if prior.ndim != 2 or prior.shape[1] < 2:
        raise ValueError(
            f"prior must have shape (n_samples, n_classes >= 2), got {prior.shape}."
        )
    if not np.all(np.isfinite(prior)) or np.any(prior < 0):
        raise ValueError("prior must hold finite, non-negative probabilities.")
    total = prior.sum(axis=1, keepdims=True)
    if np.any(total <= 0):
        raise ValueError("every row of prior must have a positive sum.")
    return prior / total


def _keep_and_other(epsilon, k):
    """P(keep the true label) and P(each other member) for RR on a set of size k.

    Written with e^-eps so that large epsilon stays finite.
    """
    k = np.asarray(k, dtype=np.float64)
    if math.isinf(epsilon):
        return np.ones_like(k), np.zeros_like(k)
    damp = math.exp(-epsilon)
    denom = 1.0 + (k - 1.0) * damp
    return 1.0 / denom, damp / denom


def top_k_sets(prior, epsilon):
    """The release set of RR-with-prior for each row of ``prior``.

    For each row the classes are ranked by decreasing prior (ties by class
    index) and k maximizes (e^eps / (e^eps + k - 1)) * (sum of the k largest
    prior entries) (Ghazi et al. 2021, Algorithm 1); ties between values of k
    go to the largest k.

    Parameters
    ----------
    prior : array-like of shape (n_samples, n_classes)
        Non-negative rows (normalized here).
    epsilon : float
        In (0, inf).

    Returns
    -------
    order : ndarray of shape (n_samples, n_classes)
        Class codes by decreasing prior; the set is ``order[i, :k[i]]``.
    k : ndarray of int of shape (n_samples,)
    """
    prior = _check_priors(prior)
    n_classes = prior.shape[1]
    order = np.argsort(-prior, axis=1, kind="stable")
    top_mass = np.cumsum(np.take_along_axis(prior, order, axis=1), axis=1)
    keep, _ = _keep_and_other(epsilon, np.arange(1, n_classes + 1))
    objective = top_mass * keep
    # largest maximizing k: argmax over the reversed columns
    k = n_classes - np.argmax(objective[:, ::-1], axis=1)
    return order, k


def _likelihood(order, k, released, epsilon):
    """P(released label | true class c) for every row and class c."""
    n, n_classes = order.shape
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(n_classes)[None, :], axis=1)
    in_set = ranks < k[:, None]
    keep, other = _keep_and_other(epsilon, k)
    out = np.where(in_set, other[:, None], 1.0 / k[:, None])
    out[np.arange(n), released] = keep
    return out


def rr_with_prior_release(codes, prior, epsilon, rng):
    """Release integer labels with RR-with-prior, one prior row per label.

    Each label y with release set S (size k, from :func:`top_k_sets`) is
    reported as y with probability e^eps / (e^eps + k - 1) and as each other
    member of S with probability 1 / (e^eps + k - 1) when y is in S, and
    uniformly from S otherwise. One uniform draw per label.

    Parameters
    ----------
    codes : ndarray of int of shape (n_samples,)
        True labels as codes 0..K-1 (not modified).
    prior : array-like of shape (n_samples, K)
    epsilon : float
        In (0, inf]; ``inf`` releases ``codes`` unchanged.
    rng : numpy.random.Generator or RandomState

    Returns
    -------
    released : ndarray of int of shape (n_samples,)
    likelihood : ndarray of shape (n_samples, K)
        ``likelihood[i, c]`` = P(released[i] | true class c) under row i's
        mechanism.
    set_size : ndarray of int of shape (n_samples,)
        The size k of each row's release set.
    """
    codes = np.asarray(codes, dtype=np.int64)
    prior = _check_priors(prior)
    n, n_classes = prior.shape
    if math.isinf(epsilon):
        likelihood = np.zeros((n, n_classes))
        likelihood[np.arange(n), codes] = 1.0
        return codes.copy(), likelihood, np.ones(n, dtype=np.int64)
    order, k = top_k_sets(prior, epsilon)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(n_classes)[None, :], axis=1)
    rank = ranks[np.arange(n), codes]
    keep, other_each = _keep_and_other(epsilon, k)
    change = (k - 1) * other_each  # 1 - keep, without cancellation
    u = rng.random(n)
    in_set = rank < k
    # in the set: below `keep` report the truth; otherwise the remainder of u
    # picks one of the k - 1 other members (positions skip the true one)
    spread = np.where(change > 0, (k - 1) / np.where(change > 0, change, 1.0), 0.0)
    other = np.floor((u - keep) * spread).astype(np.int64)
    other = np.clip(other, 0, np.maximum(k - 2, 0))
    other += other >= rank
    # outside the set: uniform over its k members
    uniform = np.minimum(np.floor(u * k).astype(np.int64), k - 1)
    position = np.where(in_set, np.where(u < keep, rank, other), uniform)
    released = order[np.arange(n), position]
    return released, _likelihood(order, k, released, epsilon), k


def rr_with_prior_matrix(prior, epsilon):
    """The exact channel of RR-with-prior for one prior vector.

    Parameters
    ----------
    prior : array-like of shape (K,)
    epsilon : float
        In (0, inf].

    Returns
    -------
    ndarray of shape (K, K)
        ``M[y, v]`` = P(report v | true label y); rows sum to 1.
    """
    prior = _check_priors(np.atleast_2d(prior))
    n_classes = prior.shape[1]
    if math.isinf(epsilon):
        return np.eye(n_classes)
    order, k = top_k_sets(prior, epsilon)
    released = np.arange(n_classes)
    # row v of the likelihood of "released v" is column v of the channel
    likelihood = _likelihood(
        np.repeat(order, n_classes, axis=0),
        np.repeat(k, n_classes),
        released,
        epsilon,
    )
    in_set = np.zeros(n_classes, dtype=bool)
    in_set[order[0, : k[0]]] = True
    likelihood[~in_set] = 0.0  # a class outside the set is never reported
    return likelihood.T


def _stage_sizes(n, shares):
    """Rows per stage: floor of the shares, the remainder to the first stages."""
    sizes = np.floor(np.asarray(shares) * n).astype(np.int64)
    sizes[: n - sizes.sum()] += 1
    return sizes


class RandomizedResponseWithPrior(
    NoReleaseFitMixin, BudgetTrackingMixin, BaseEstimator
):
    """Multi-stage randomized response with a learned prior (label DP).

    The rows are split at random into stages. The labels of the first stage
    are released by k-ary randomized response. Before each later stage a clone
    of ``prior_estimator`` is fitted on the features and *released* labels of
    all earlier stages, and its ``predict_proba`` on the stage's rows is each
    row's prior p: the label is then released from the set of the k most
    likely classes, k maximizing (e^eps / (e^eps + k - 1)) * (sum of the top-k
    prior), by randomized response within that set (Ghazi et al. 2021,
    "RR-with-prior" and multi-stage training LP-MST). A good prior shrinks the
    set to the plausible classes, so a label is reported correctly far more
    often than under plain RR at the same epsilon. Sampler protocol:
    ``fit_resample(X, y)`` returns ``(X, y_released)``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Label-DP guarantee of the whole release, in (0, inf]. ``inf`` releases
        the labels unchanged.
    prior_estimator : classifier with ``predict_proba`` or None, default=None
        Fitted (as a clone, on label codes 0..K-1) before every stage but the
        first. ``None``: ``make_pipeline(StandardScaler(),
        LogisticRegression(C=1.0, max_iter=1000))`` (the scaler does not centre
        sparse ``X``), a well-calibrated default for tabular features in any
        units; standardizing reads the features only, which label DP does not
        protect. If it takes
        ``label_likelihood`` (the rule of :class:`PrivateLabelClassifier`: its
        ``fit`` has the parameter, or the last step of a ``Pipeline``'s does, or
        its metadata routing requests it), it receives the training rows' rows
        of ``label_likelihood_`` (per-row forward correction), and its
        ``classes`` parameter, if left at None, is set to the codes ``0..K-1``.
    stage_shares : array-like of float, default=(0.5, 0.5)
        Fraction of the rows in each stage (positive, summing to 1). The
        default, two equal stages (LP-2ST), was the best or within noise of
        the best of (0.5, 0.5), (0.3, 0.7) and four equal stages on six
        multi-class tasks at eps 0.1-4 (5 seeds each, measured with logistic
        regression after the release): the prior needs enough first-stage rows
        to be better than uniform when labels are noisy.
    classes : array-like or None, default=None
        Label domain. ``None`` infers it from ``y`` with a
        :class:`~skdp.exceptions.PrivacyLeakWarning` (the set of labels present
        is released without noise).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of the stage split and of the noise (one generator per call).
        Seeds the noise only under the reproducible-noise opt-in
        (:func:`skdp.set_config`); by default, fresh OS entropy.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Label domain; column order of ``prior_`` and ``label_likelihood_``.
    stage_ : ndarray of int of shape (n_samples,)
        Stage of each row (0 = plain randomized response).
    prior_ : ndarray of shape (n_samples, n_classes)
        The prior each row's label was released with (uniform in stage 0).
    set_size_ : ndarray of int of shape (n_samples,)
        Size k of each row's release set.
    label_likelihood_ : ndarray of shape (n_samples, n_classes)
        ``label_likelihood_[i, c]`` = P(released label of row i = the label it
        released | true class ``classes_[c]``) under the mechanism row i went
        through; each row's own column of its noise channel, for a per-row
        forward loss correction (e.g.
        ``LossCorrectedLogisticRegression.fit(X, y, label_likelihood=...)``).
    prior_estimators_ : list of estimator
        The fitted prior estimator of each stage after the first.
    privacy_spent_ : PrivacyBudget
        ``PrivacyBudget(epsilon)``: one guarantee for the whole release.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    **One row.** Fix a prior p (from anything but the row's own label), its set
    S of size k and p_keep = e^eps / (e^eps + k - 1). For a report v in S,
    P[v | y] is p_keep if y = v, 1 / (e^eps + k - 1) if y is another member of
    S, and 1 / k if y is not in S; a report outside S has probability 0 for
    every y. Since e^eps >= 1, 1 / k >= 1 / (e^eps + k - 1), so for any two
    labels y, y' the ratio P[v | y] / P[v | y'] is at most
    p_keep * (e^eps + k - 1) = e^eps: the release of one label is
    eps-label-DP for *every* prior (Ghazi et al. 2021, Lemma 1). This is tested
    exactly by enumerating priors and label pairs.

    **The whole release: parallel composition.** The stage split is drawn from
    the random state alone (never from the labels), and the prior of a row in
    stage t is a function of the public features and of the labels *released*
    in stages 0..t-1 (the estimator is fitted on those). Let y and y' differ in
    the label of one row i, in stage s, and let o = (o_0, ..., o_T) be any
    output. By the chain rule, P[o | y] = prod_t P[o_t | y_t, prior_t(o_<t)],
    where y_t are the stage's true labels. For t != s the factor is the same
    under y and y' (same labels, same earlier outputs hence same priors), and
    within stage s every row other than i is released independently with the
    same prior, so P[o | y] / P[o | y'] = P[o_i | y_i] / P[o_i | y'_i] <= e^eps.
    Hence the whole multi-stage release is eps-label-DP, not T eps: the stages
    touch disjoint rows (parallel composition; adaptivity is covered because
    each stage's mechanism depends only on earlier outputs). One spend of
    ``epsilon`` is recorded. A test enumerates every output of a two-stage
    release on small data and checks this ratio exactly.

    **Likelihood columns.** ``label_likelihood_`` is computed from the same
    prior and set as the release, so a learner can correct each row for the
    noise it actually received; a uniform prior gives the columns of k-ary
    randomized response.

    The prior estimator post-processes released labels and public features; a
    DP estimator used as prior estimator records its own spends on top (the
    features are public under label DP, so that is conservative).

    References
    ----------
    B. Ghazi, N. Golowich, R. Kumar, P. Manurangsi, C. Zhang, "Deep learning
    with label differential privacy", NeurIPS 2021.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from skdp.preprocessing import RandomizedResponseWithPrior
    >>> X, y = load_digits(return_X_y=True)
    >>> rrp = RandomizedResponseWithPrior(
    ...     epsilon=1.0, classes=list(range(10)), random_state=0
    ... )
    >>> X_out, y_released = rrp.fit_resample(X / 16, y)
    >>> X_out.shape, y_released.shape, rrp.privacy_spent_.epsilon
    ((1797, 64), (1797,), 1.0)
    >>> rrp.label_likelihood_.shape
    (1797, 10)
    """

    # the noise description fit_resample always sets (PrivateLabelClassifier
    # checks before the release that its learner will get one)
    _noise_description = ("label_likelihood_",)

    _parameter_constraints: dict = {
        "epsilon": [Interval(numbers.Real, 0, np.inf, closed="right")],
        "prior_estimator": [None, HasMethods(["fit", "predict_proba"])],
        "stage_shares": ["array-like"],
        "classes": [None, "array-like"],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        prior_estimator=None,
        stage_shares=(0.5, 0.5),
        classes=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.prior_estimator = prior_estimator
        self.stage_shares = stage_shares
        self.classes = classes
        self.random_state = random_state

    @atomic_fit
    def fit_resample(self, X, y):
        """Release the labels, stage by stage.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
            Public features, read by the prior estimator; returned unchanged
            (the same object).
        y : array-like of shape (n_samples,)

        Returns
        -------
        X : the input X
        y_released : ndarray (or Series if ``y`` is one) of shape (n_samples,)
            Labels from ``classes_``.
        """
        self._validate_params()
        epsilon = check_epsilon(self.epsilon)
        shares = self._check_shares()
        X_checked, y_values, codec = self._check_inputs(X, y)
        codes = codec.encode(y_values, "y").astype(np.int64)
        n, n_classes = codes.size, self.classes_.size
        if shares.size > 1 and not math.isinf(epsilon):
            # the prior estimator's own checks, before the spend (it is
            # fitted only after the first stage's release)
            prior_estimator = self._prior_template(X_checked)
            validate_params_deep(clone(prior_estimator))
            check_inner_accepts(prior_estimator, X_checked, n_classes)
        self.privacy_spent_ = PrivacyBudget(epsilon)
        # the spend is recorded (and a cap enforced) before anything is drawn
        record_spend(self.privacy_spent_, f"{type(self).__name__}.fit_resample")

        rng = noise_generator(self.random_state)
        stage = np.repeat(np.arange(shares.size), _stage_sizes(n, shares))
        stage = stage[rng.permutation(n)]
        released = np.empty(n, dtype=np.int64)
        prior = np.full((n, n_classes), 1.0 / n_classes)
        likelihood = np.empty((n, n_classes))
        set_size = np.empty(n, dtype=np.int64)
        estimators = []
        for t in range(shares.size):
            rows = np.flatnonzero(stage == t)
            if rows.size == 0:
                continue
            seen = np.flatnonzero(stage < t)
            if t > 0 and not math.isinf(epsilon):
                estimator = self._fit_prior(X_checked, released, likelihood, seen)
                estimators.append(estimator)
                if estimator is not None:
                    prior[rows] = self._predict_prior(estimator, X_checked, rows)
            released[rows], likelihood[rows], set_size[rows] = rr_with_prior_release(
                codes[rows], prior[rows], epsilon, rng
            )
        self.stage_ = stage
        self.prior_ = prior
        self.set_size_ = set_size
        self.label_likelihood_ = likelihood
        self.prior_estimators_ = estimators
        y_new = codec.decode(released.astype(codec.code_dtype), y_values.dtype)
        return X, as_output_labels(y, y_new)

    def _check_inputs(self, X, y):
        # the prior estimator validates the feature values it reads
        X_checked = validate_features(self, X)
        y_values, self.classes_, codec = check_labels(y, self.classes)
        check_consistent_length(X_checked, y_values)
        return X_checked, y_values, codec

    def _check_shares(self):
        shares = np.asarray(self.stage_shares, dtype=np.float64)
        if (
            shares.ndim != 1
            or shares.size == 0
            or not np.all(np.isfinite(shares))
            or np.any(shares <= 0)
            or not math.isclose(shares.sum(), 1.0, abs_tol=1e-9)
        ):
            raise ValueError(
                "stage_shares must be a 1-D list of positive fractions summing "
                f"to 1, got {self.stage_shares!r}."
            )
        return shares / shares.sum()

    def _prior_template(self, X=None):
        """The prior estimator (unfitted; cloned before each fit).

        The default standardizes the features first (centred unless ``X`` is
        sparse): on features in their raw units (pixel values 0-16, incomes)
        lbfgs otherwise stops at ``max_iter`` with a ConvergenceWarning. The
        scaler reads only features, which label DP does not protect.
        """
        if self.prior_estimator is None:
            return make_pipeline(
                StandardScaler(with_mean=not sp.issparse(X)),
                LogisticRegression(C=1.0, max_iter=1000),
            )
        return self.prior_estimator

    def _fit_prior(self, X, released, likelihood, seen):
        """The prior estimator fitted on earlier stages (None: too few labels)."""
        if np.unique(released[seen]).size < 2:
            return None  # a classifier needs two classes; keep the uniform prior
        estimator = clone(self._prior_template(X))
        fit_params = {}
        param = likelihood_param(estimator, get_config()["enable_metadata_routing"])
        if param is not None:
            fit_params[param] = likelihood[seen]
            # the likelihood has a column per code 0..K-1, present or not: the
            # learner taking it (the last step of a Pipeline) must know them
            owner = likelihood_param(estimator, False) or param
            classes_key = owner[: -len(LIKELIHOOD)] + "classes"
            if estimator.get_params(deep=True).get(classes_key, False) is None:
                estimator.set_params(**{classes_key: np.arange(self.classes_.size)})
        estimator.fit(_safe_indexing(X, seen), released[seen], **fit_params)
        return estimator

    def _predict_prior(self, estimator, X, rows):
        proba = np.asarray(estimator.predict_proba(_safe_indexing(X, rows)))
        known = np.asarray(estimator.classes_)
        if proba.shape != (rows.size, known.size):
            raise ValueError(
                "prior_estimator.predict_proba returned shape "
                f"{proba.shape}, expected ({rows.size}, {known.size})."
            )
        prior = np.zeros((rows.size, self.classes_.size))
        prior[:, known.astype(np.int64)] = proba
        if not np.all(np.isfinite(prior)) or np.any(prior < 0):
            raise ValueError(
                "prior_estimator.predict_proba returned negative or non-finite "
                "probabilities."
            )
        bad = prior.sum(axis=1) <= 0
        prior[bad] = 1.0  # no information: uniform
        return prior / prior.sum(axis=1, keepdims=True)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        # X is read by the prior estimator only (which validates it): the
        # sampler itself accepts any content, as the prior estimator may
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags
