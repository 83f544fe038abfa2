"""Exact analysis of label release: the number of changed labels and its tail.

Both label mechanisms change each label independently with the same probability
(see :class:`~skdp.preprocessing.ExponentialLabelRelease`), so the number of
changed labels is binomial and every quantity here is an exact binomial
probability, computed in log space or with the regularized incomplete beta
function (no normal approximation, no concentration bound).
"""

import math
import numbers

import numpy as np
from scipy import special, stats

from skdp.utils import check_epsilon, check_int

__all__ = [
    "changed_labels_log_pmf",
    "label_flip_probability",
    "label_survival_probability",
    "recommended_epsilon",
]

_MECHANISMS = ("exponential", "randomized_response")


def _check_fraction(value, name, *, open_interval):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    ok = 0 < value < 1 if open_interval else 0 <= value <= 1
    if not ok:
        bounds = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must be in {bounds}, got {value!r}.")
    return value


def _per_label_epsilon(epsilon, mechanism):
    epsilon = check_epsilon(epsilon)
    if mechanism not in _MECHANISMS:
        raise ValueError(f"mechanism must be one of {_MECHANISMS}, got {mechanism!r}.")
    return epsilon / 2 if mechanism == "exponential" else epsilon


def label_flip_probability(epsilon, n_classes=2, *, mechanism="exponential"):
    """Probability that one label is released as a different class.

    Parameters
    ----------
    epsilon : float
        The ``epsilon`` parameter of the mechanism, in (0, inf].
    n_classes : int, default=2
    mechanism : {"exponential", "randomized_response"}
        ``"exponential"``: :class:`~skdp.preprocessing.ExponentialLabelRelease`,
        which changes a label with probability (C - 1) / (C - 1 + e^(eps/2));
        ``"randomized_response"``: k-ary RR at ``epsilon``,
        (C - 1) / (C - 1 + e^eps).

    Returns
    -------
    float

    Examples
    --------
    >>> from skdp.preprocessing import label_flip_probability
    >>> round(label_flip_probability(2.0, 2), 4)
    0.2689
    >>> round(label_flip_probability(1.0, 2, mechanism="randomized_response"), 4)
    0.2689
    """
    eps = _per_label_epsilon(epsilon, mechanism)
    C = check_int(n_classes, "n_classes", 2)
    if math.isinf(eps):
        return 0.0
    # (C-1)/(C-1+e^eps) written with e^-eps so that large eps does not overflow
    odds = (C - 1) * math.exp(-eps)
    return odds / (1.0 + odds)


def _logsumexp(log_w):
    """log(sum(exp(log_w))) with the maximum shifted out.

    scipy's ``logsumexp`` costs about 1 ms of overhead per call, which dominates
    the sampler for small n.
    """
    top = np.max(log_w)
    return top + math.log(np.sum(np.exp(log_w - top)))


def _log_weights(k, n, epsilon, n_classes, log_factorials=None):
    """Unnormalized log P(k changes): log C(n, k) + k log(C - 1) - k eps / 2.

    This is the exponential mechanism's weight exp(eps q / 2) with q = n - k,
    summed over the C(n, k) (C - 1)^k label vectors at Hamming distance k; the
    constant eps n / 2 is dropped.
    """
    k = np.asarray(k, dtype=np.float64)
    if log_factorials is None:
        log_k, log_rest = special.gammaln(k + 1), special.gammaln(n - k + 1)
    else:  # k = 0..n: log (n - k)! is log k! reversed, saving one gammaln pass
        log_k, log_rest = log_factorials, log_factorials[::-1]
    log_binom = special.gammaln(n + 1.0) - log_k - log_rest
    return log_binom + k * math.log(n_classes - 1) - k * (epsilon / 2.0)


def changed_labels_log_pmf(n, epsilon, n_classes=2):
    """log P[k labels changed], k = 0..n, for the exponential label mechanism.

    Computed with ``gammaln`` and ``logsumexp`` in log space, so it stays finite
    for n = 10^7 and any epsilon (no factorial or exponential is ever formed).

    Parameters
    ----------
    n : int
        Number of labels.
    epsilon : float
        ``ExponentialLabelRelease`` parameter, in (0, inf].
    n_classes : int, default=2

    Returns
    -------
    ndarray of shape (n + 1,)
        Log-probabilities; entries can be ``-inf`` only for ``epsilon=inf``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import changed_labels_log_pmf
    >>> np.exp(changed_labels_log_pmf(2, 2.0, 2)).round(4)
    array([0.5344, 0.3932, 0.0723])
    """
    n = check_int(n, "n", 1)
    eps = check_epsilon(epsilon)
    C = check_int(n_classes, "n_classes", 2)
    if math.isinf(eps):
        out = np.full(n + 1, -np.inf)
        out[0] = 0.0
        return out
    k = np.arange(n + 1, dtype=np.float64)
    logw = _log_weights(k, n, eps, C, log_factorials=special.gammaln(k + 1))
    return logw - _logsumexp(logw)


def _min_survivors(n, fraction):
    # ceil(fraction * n) without float noise such as 0.3 * 10 = 3.0000000000000004
    return min(n, max(0, math.ceil(round(fraction * n, 9))))


def label_survival_probability(
    n, epsilon, n_classes=2, fraction=0.5, *, mechanism="exponential"
):
    """P[at least ``fraction`` of the n labels are released unchanged].

    The "success probability" of Bi & Suppakitpaisarn (2022),
    sum_{i >= n/2} P[q = i] (q = number of agreements), for any fraction: with
    k ~ Binomial(n, p_flip) changes it equals P[k <= n - ceil(fraction n)], an
    exact binomial CDF.

    Parameters
    ----------
    n : int
        Number of labels.
    epsilon : float
        Mechanism parameter, in (0, inf].
    n_classes : int, default=2
    fraction : float in [0, 1], default=0.5
    mechanism : {"exponential", "randomized_response"}, default="exponential"
        See :func:`label_flip_probability`.

    Returns
    -------
    float

    Examples
    --------
    >>> from skdp.preprocessing import label_survival_probability
    >>> round(label_survival_probability(100, 1.0, 2, 0.5), 4)
    0.9953
    """
    n = check_int(n, "n", 1)
    fraction = _check_fraction(fraction, "fraction", open_interval=False)
    p_flip = label_flip_probability(epsilon, n_classes, mechanism=mechanism)
    max_changes = n - _min_survivors(n, fraction)
    return float(stats.binom.cdf(max_changes, n, p_flip))


def recommended_epsilon(
    n, target, n_classes=2, fraction=0.5, *, mechanism="exponential"
):
    """Smallest epsilon whose survival probability reaches ``target``.

    The "recommended budget" tables of Bi & Suppakitpaisarn (2022), computed
    exactly: the survival
    probability increases continuously with epsilon, so bisection on the exact
    binomial CDF finds the threshold to 1e-12 relative precision; the returned
    value always satisfies ``label_survival_probability(...) >= target``.

    Parameters
    ----------
    n : int
        Number of labels released together (the rows of the data set), at
        least 1.
    target : float in (0, 1)
        The probability wanted that at least ``fraction`` of the ``n`` labels
        come out unchanged, e.g. 0.99.
    n_classes : int, default=2
        Number of classes the labels take (at least 2).
    fraction : float in [0, 1], default=0.5
        Share of the ``n`` labels that must survive unchanged: the release
        "succeeds" when at least ``ceil(fraction * n)`` labels are unchanged.
        0.5 is the paper's majority criterion (at least half of the labels
        right); 1.0 asks for every label, 0.0 is met by any release.
    mechanism : {"exponential", "randomized_response"}, default="exponential"
        The label release whose ``epsilon`` parameter is returned: that of
        :class:`~skdp.preprocessing.ExponentialLabelRelease` or of
        :class:`~skdp.preprocessing.RandomizedResponse` (see
        :func:`label_flip_probability`).

    Returns
    -------
    float
        The mechanism's ``epsilon`` parameter. 0.0 if any epsilon > 0 reaches the
        target. For ``"exponential"`` the guarantee actually provided is half of
        it (see :class:`~skdp.preprocessing.ExponentialLabelRelease`).

    Examples
    --------
    >>> from skdp.preprocessing import recommended_epsilon, label_survival_probability
    >>> eps = recommended_epsilon(100, 0.99, 2, 0.5)
    >>> round(eps, 3), label_survival_probability(100, eps, 2, 0.5) >= 0.99
    (0.892, True)
    """
    target = _check_fraction(target, "target", open_interval=True)

    def survival(eps):
        return label_survival_probability(
            n, eps, n_classes, fraction, mechanism=mechanism
        )

    tiny = 1e-300
    if survival(tiny) >= target:
        return 0.0
    lo, hi = tiny, 1.0
    while survival(hi) < target:
        lo, hi = hi, 2 * hi
        if hi > 1e6:  # unreachable: survival -> 1 as eps -> inf
            raise ValueError(f"target {target} cannot be reached.")
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        if survival(mid) >= target:
            hi = mid
        else:
            lo = mid
    return hi
