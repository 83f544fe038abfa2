"""The statistics of the private Theil-Sen regressor: the data-free pairing,
Kendall's numerators (the feature choice's utility) and the pair lines'
predictions at the two cut points."""

import numpy as np
from scipy import stats

__all__ = ["CUTS", "cut_predictions", "kendall_numerators", "pair_rows"]

# where the pair lines are read, on a feature mapped from its declared range to
# [0, 1] (Alabi et al. 2022: the 25% and 75% points of the range)
CUTS = (0.25, 0.75)


def pair_rows(n, rng):
    """``floor(n / 2)`` disjoint pairs of row indices from a uniform random
    permutation: drawn before the data are read, so a replaced row is in one
    pair whatever the others are (the odd row out, if any, is unused)."""
    order = rng.permutation(n)
    m = n // 2
    return order[: 2 * m].reshape(m, 2)


def _sign_products_sum(x, y):
    """``sum_{i<k} sign(x_i - x_k) sign(y_i - y_k)`` by brute force."""
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    return int(np.sum(np.triu(dx * dy, 1)))


def _ties(v):
    """``sum t (t - 1) / 2`` over the groups of equal values of ``v``."""
    _, counts = np.unique(v, return_counts=True)
    return float(np.sum(counts * (counts - 1) / 2.0))


def kendall_numerators(X, y, brute_force_below=2000):
    """``S_j = sum_{i<k} sign(X_ij - X_kj) sign(y_i - y_k)`` for every column.

    Integers. Below ``brute_force_below`` rows by the definition (``O(n^2)``
    per column); above it from scipy's ``O(n log n)`` tau-b, ``S = tau_b
    sqrt((n0 - n1)(n0 - n2))`` with ``n0 = n (n - 1) / 2`` and ``n1, n2`` the
    tied pairs of ``x`` and ``y``, rounded to the integer it is (exact while
    ``n0 < 2^52``; the tests compare both ways on data with ties).
    """
    n, d = X.shape
    if n < brute_force_below:
        return np.array([_sign_products_sum(X[:, j], y) for j in range(d)])
    n0 = n * (n - 1) / 2.0
    n2 = _ties(y)
    out = np.zeros(d, dtype=np.int64)
    for j in range(d):
        n1 = _ties(X[:, j])
        if n1 == n0 or n2 == n0:  # a constant column or label: every pair ties
            continue
        tau = stats.kendalltau(X[:, j], y, variant="b").statistic
        out[j] = int(round(tau * np.sqrt((n0 - n1) * (n0 - n2))))
    return out


def cut_predictions(x, y, pairs):
    """For each pair, the value at each cut of the line through its two points.

    ``x`` is the chosen feature mapped to [0, 1]. A pair with equal ``x`` has
    no line and gives no value (as in OpenDP; a replaced row then adds or
    removes one value of each cut, which moves the median's rank utility
    ``|r(t) - m / 2|`` by at most 1/2: the sensitivity 1 holds). Returns an
    array of shape ``(2, n_lines)``.
    """
    xa, xb = x[pairs[:, 0]], x[pairs[:, 1]]
    ya, yb = y[pairs[:, 0]], y[pairs[:, 1]]
    keep = xb != xa
    xa, xb, ya, yb = xa[keep], xb[keep], ya[keep], yb[keep]
    slope = (yb - ya) / (xb - xa)
    return np.stack([ya + slope * (c - xa) for c in CUTS])
