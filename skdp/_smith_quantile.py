"""Smith's (2011) exponential-mechanism quantile: the law of the interval it
draws. One place for :func:`skdp.tools.quantile` and the private Theil-Sen
regressor's medians (a core module, below both subpackages)."""

import numpy as np
from scipy import special

__all__ = ["interval_log_probabilities", "sample_quantile"]


def _intervals(sorted_x, lower, upper):
    """The ``m + 1`` intervals ``[z_i, z_{i+1}]`` of ``z = (lower, x, upper)``."""
    z = np.concatenate([[lower], sorted_x, [upper]])
    return z[:-1], np.diff(z)


def interval_log_probabilities(x, q, epsilon, lower, upper, sensitivity=1):
    """Log-probabilities of the intervals the mechanism picks, and their ends.

    Parameters
    ----------
    x : array-like of shape (m,)
        Values (clipped to ``[lower, upper]`` here).
    q : float
        Quantile level in [0, 1].
    epsilon : float
        In (0, inf).
    lower, upper : float
    sensitivity : int, default=1
        How many of the ``m`` values one record holds.

    Returns
    -------
    log_p : ndarray of shape (m + 1,)
        ``log P(interval i)``; ``-inf`` for an interval of length 0.
    left, length : ndarray of shape (m + 1,)
        Where each interval starts and its length. The output is uniform in
        the interval drawn, so its density at ``t`` in interval ``i`` is
        ``exp(log_p[i]) / length[i]``.
    """
    x = np.sort(np.clip(np.asarray(x, dtype=np.float64).ravel(), lower, upper))
    left, length = _intervals(x, lower, upper)
    utility = -np.abs(np.arange(x.size + 1) - q * x.size)
    with np.errstate(divide="ignore"):
        logw = np.log(length) + epsilon * utility / (2.0 * sensitivity)
    return logw - special.logsumexp(logw), left, length


def sample_quantile(x, q, epsilon, lower, upper, sensitivity, rng):
    """One draw of the mechanism: an interval by its law (Gumbel-max), then a
    point uniformly inside it."""
    log_p, left, length = interval_log_probabilities(
        x, q, epsilon, lower, upper, sensitivity
    )
    i = int(np.argmax(log_p + rng.gumbel(size=log_p.size)))
    return float(left[i] + rng.random() * length[i])
