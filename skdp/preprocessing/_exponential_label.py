"""Exponential mechanism over the whole label vector (Hamming agreement score)."""

import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_consistent_length, check_is_fitted

from skdp.accounting import (
    BudgetTrackingMixin,
    PrivacyBudget,
    RandomizedResponseEvent,
    record_spend,
)
from skdp.mechanisms import RandomizedResponseMechanism
from skdp.preprocessing._categorical import as_output_labels, check_labels
from skdp.preprocessing._label_analysis import (
    _log_weights,
    _logsumexp,
    label_flip_probability,
)
from skdp.preprocessing._label_base import validate_features
from skdp.utils import check_epsilon, noise_generator
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.sklearn_compat import (
    RANDOM_STATE,
    Interval,
    fit_context,
)

# Half-width of the k window in standard deviations, plus a margin for small n:
# the binomial mass outside it is below exp(-300), zero in float64.
_WINDOW_SDS, _WINDOW_MARGIN = 40.0, 300.0


def sample_changed_count(n, epsilon, n_classes, rng):
    """Draw k ~ P(k) ∝ C(n, k) (C - 1)^k exp(eps (n - k) / 2) in log space.

    Only the window where the log-concave P(k) is not negligible is evaluated, so
    this costs O(sqrt(n)); the weights are normalized with ``logsumexp`` and k is
    drawn by inversion with one uniform.
    """
    if math.isinf(epsilon):
        return 0
    p = label_flip_probability(epsilon, n_classes)
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    half = _WINDOW_SDS * sd + _WINDOW_MARGIN
    lo, hi = max(0, math.floor(mean - half)), min(n, math.ceil(mean + half))
    logw = _log_weights(np.arange(lo, hi + 1), n, epsilon, n_classes)
    cdf = np.cumsum(np.exp(logw - _logsumexp(logw)))
    k = lo + int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
    return min(k, hi)


def uniform_subset_mask(n, k, rng):
    """Boolean mask of a uniformly random k-subset of range(n), in O(n).

    Bernoulli(k/n) draws give an exchangeable mask of size about k; the surplus
    (or deficit) is then removed (added) at uniformly chosen positions. Every
    step treats positions symmetrically and the result always has size k, so its
    law is invariant under permutations, i.e. uniform over k-subsets.
    """
    if k == 0:
        return np.zeros(n, dtype=bool)
    if k == n:
        return np.ones(n, dtype=bool)
    mask = rng.random(n) < k / n
    surplus = int(np.count_nonzero(mask)) - k
    if surplus:
        pool = np.flatnonzero(mask if surplus > 0 else ~mask)
        mask[pool[rng.choice(pool.size, abs(surplus), replace=False)]] = surplus < 0
    return mask


def two_step_release(codes, n_classes, epsilon, rng):
    """The exponential mechanism's label vector, sampled in two steps.

    1. k, the number of changed labels, from its exact law (log space);
    2. a uniform k-subset of positions, each moved to one of the other C - 1
       classes uniformly.
    All label vectors at Hamming distance k have the same score, so given k the
    mechanism's output is uniform over them: this is exactly the exponential
    mechanism. ``codes`` is not modified.
    """
    n = codes.size
    out = codes.copy()
    k = sample_changed_count(n, epsilon, n_classes, rng)
    if k == 0:
        return out
    changed = np.flatnonzero(uniform_subset_mask(n, k, rng))
    if n_classes == 2:
        out[changed] = 1 - out[changed]
    else:
        offset = rng.integers(1, n_classes, size=k)
        out[changed] = (out[changed].astype(np.int64) + offset) % n_classes
    return out


class ExponentialLabelRelease(BudgetTrackingMixin, BaseEstimator):
    r"""Release a label vector with the exponential mechanism (agreement score).

    The released vector y~ is drawn with probability proportional to
    exp(epsilon q(y, y~) / 2), where q counts the positions where y~ agrees with
    the true labels (sensitivity 1), over all C^n label vectors. Sampling uses the
    two-step method in log space (number of changes, then positions and
    replacement labels) in O(n) time. Sampler protocol: ``fit_resample(X, y)``
    returns ``(X, y_released)`` with ``X`` untouched.

    Parameters
    ----------
    epsilon : float, default=1.0
        The exponential mechanism's parameter, in (0, inf]. **The guarantee
        actually provided is epsilon / 2** (see Notes); ``privacy_spent_`` reports
        it. ``inf`` releases the labels unchanged.
    classes : array-like or None, default=None
        Label domain. ``None`` infers it from ``y`` with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of the noise (one generator per call).
        Seeds the noise only under the reproducible-noise opt-in
        (:func:`skdp.set_config`); by default, fresh OS entropy.

    Attributes
    ----------
    classes_ : ndarray
        Label domain; codes used by ``label_matrix_`` are positions in it.
    flip_probability_ : float
        Probability that a label is released as another class,
        (C - 1) / (C - 1 + e^(epsilon/2)).
    label_matrix_ : ndarray of shape (n_classes, n_classes)
        Per-label distortion matrix (that of k-ary randomized response at
        epsilon / 2), for forward loss correction.
    label_likelihood_ : ndarray of shape (n_samples, n_classes)
        ``label_matrix_[:, y_released_i]`` for each row released by the last
        ``fit_resample``: P(released label of row i | true class k) (computed
        on access).
    privacy_spent_ : PrivacyBudget
        ``PrivacyBudget(epsilon / 2)``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    **The exact guarantee.** With the score :math:`q(y, \tilde y) = \sum_i
    [\tilde y_i = y_i]` (the number of agreements), the weight factorizes over
    records and the normalizer does not depend on :math:`y`:

    .. math::

        e^{\varepsilon q / 2} = \prod_i e^{\varepsilon [\tilde y_i = y_i] / 2},
        \qquad
        Z = \sum_{\tilde y} e^{\varepsilon q / 2}
          = \left(e^{\varepsilon/2} + C - 1\right)^n.

    Hence :math:`P[\tilde y \mid y] = \prod_i P_{RR}[\tilde y_i \mid y_i]`, where
    :math:`P_{RR}` is k-ary randomized response with parameter :math:`\varepsilon/2`:
    keep with probability :math:`e^{\varepsilon/2} / (C - 1 + e^{\varepsilon/2})`,
    else another class uniformly. For two label vectors :math:`y, y'` that differ
    in one entry (label differential privacy, replace-one neighbours, features
    public) every output satisfies :math:`P[\tilde y \mid y] / P[\tilde y \mid y']
    \le e^{\varepsilon/2}`, with equality for some outputs. So this release is
    exactly :math:`(\varepsilon/2)`-label-DP, and even
    :math:`(\varepsilon/2)`-locally-DP for each label; the generic
    exponential-mechanism bound (:math:`\varepsilon`) is loose by a factor 2 because
    its normalizer term never moves here. ``privacy_spent_`` is
    ``PrivacyBudget(epsilon / 2)``. For a target guarantee eps_t pass
    ``epsilon = 2 eps_t``; the released vector then has the same law as
    ``RandomizedResponse(epsilon=eps_t)``. Because of the factorization, the
    guarantee does not depend on whether the records are independent.

    **Two-step sampler.** The number of changed labels :math:`k` has

    .. math::

        P(k) = \binom{n}{k} (C - 1)^k e^{\varepsilon (n - k) / 2} / Z,

    i.e. :math:`\mathrm{Binomial}(n, p_{\text{flip}})` with
    :math:`p_{\text{flip}} = (C - 1) / (C - 1 + e^{\varepsilon/2})` (the
    :math:`\varepsilon/2` factor is the one Bi &
    Suppakitpaisarn (2022) say is misprinted in their reference [9]). It is drawn
    from log weights
    (``gammaln``, ``logsumexp``) restricted to the window where the mass is not
    below exp(-300); given k, the output is uniform over the C(n, k) (C - 1)^k
    vectors at distance k: a uniform k-subset of positions (O(n)), each moved to
    a uniformly chosen other class. Exact probabilities and the survival tables
    of Bi & Suppakitpaisarn (2022) are in :func:`changed_labels_log_pmf`,
    :func:`label_survival_probability` and :func:`recommended_epsilon`.

    References
    ----------
    F. McSherry, K. Talwar, "Mechanism design via differential privacy",
    FOCS 2007. B. Ghazi et al., "Deep learning with label differential privacy",
    NeurIPS 2021. J. Bi, V. Suppakitpaisarn, "Performances of symmetric loss
    for private data from exponential mechanism", arXiv:2210.04132, 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import ExponentialLabelRelease
    >>> X, y = np.zeros((6, 1)), np.array([0, 1, 2, 0, 1, 2])
    >>> elr = ExponentialLabelRelease(epsilon=4.0, classes=[0, 1, 2], random_state=0)
    >>> X_out, y_released = elr.fit_resample(X, y)
    >>> X_out is X, y_released.shape, elr.privacy_spent_.epsilon
    (True, (6,), 2.0)
    >>> round(elr.flip_probability_, 4)
    0.213
    """

    # the noise description fit_resample always sets (PrivateLabelClassifier
    # checks before the release that its learner will get one)
    _noise_description = ("label_matrix_", "label_likelihood_")

    _parameter_constraints: dict = {
        "epsilon": [Interval(numbers.Real, 0, np.inf, closed="right")],
        "classes": [None, "array-like"],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, *, epsilon=1.0, classes=None, random_state=None):
        self.epsilon = epsilon
        self.classes = classes
        self.random_state = random_state

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Validate the data and compute the release's distribution.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
            Not read beyond its shape.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        self._fit(X, y)
        return self

    @atomic_fit
    def fit_resample(self, X, y):
        """Release the labels.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
            Returned unchanged (the same object).
        y : array-like of shape (n_samples,)

        Returns
        -------
        X : the input X
        y_released : ndarray (or Series if ``y`` is one) of shape (n_samples,)
            Labels from ``classes_`` (dtype of ``classes_``, or of ``y`` when
            the labels are the integer codes 0..C-1).
        """
        self._validate_params()
        y_values, codec = self._fit(X, y)
        codes = codec.encode(y_values, "y")
        # validated, then the spend is recorded (and a cap enforced), then drawn
        record_spend(
            self.privacy_spent_,
            f"{type(self).__name__}.fit_resample",
            mechanism=RandomizedResponseEvent(self.epsilon_ / 2, self.classes_.size),
        )
        rng = noise_generator(self.random_state)
        released = two_step_release(codes, self.classes_.size, self.epsilon_, rng)
        y_new = codec.decode(released, y_values.dtype)
        self._released_codes = released.astype(
            np.min_scalar_type(self.classes_.size - 1), copy=False
        )
        return X, as_output_labels(y, y_new)

    @property
    def label_likelihood_(self):
        """Per-row noise likelihoods of the last ``fit_resample``:
        ``label_matrix_[:, code of y_released[i]]`` for row i, shape
        (n_samples, n_classes)."""
        check_is_fitted(self, "_released_codes")
        return self.label_matrix_[:, self._released_codes].T

    def _fit(self, X, y):
        X_checked = validate_features(self, X)
        y_values, self.classes_, codec = check_labels(y, self.classes)
        check_consistent_length(X_checked, y_values)
        self.epsilon_ = check_epsilon(self.epsilon)
        C = self.classes_.size
        self.flip_probability_ = label_flip_probability(self.epsilon_, C)
        self.label_matrix_ = RandomizedResponseMechanism(self.epsilon_ / 2, C).matrix
        self.privacy_spent_ = PrivacyBudget(self.epsilon_ / 2)
        return y_values, codec

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        # X passes through unread: any content is accepted
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags
