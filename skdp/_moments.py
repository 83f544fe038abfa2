"""The weighted release of sums and sums of squares on [-1, 1] (skdp-internal).

Shared by :class:`~skdp.preprocessing.PrivateStandardScaler`,
:class:`~skdp.naive_bayes.PrivateGaussianNB` and :mod:`skdp.tools`: the weight
``lambda`` of the sums of squares and the sensitivity of one value's
``(w, lambda w^2)``, derived once here.
"""

import math

import numpy as np

__all__ = ["MOMENT_WEIGHT", "Moments", "chan_merge", "moment_sensitivity"]

#: Weight ``lambda`` of the sums of squares in the released vector
#: ``(sum w, lambda sum w^2)`` of the features mapped to [-1, 1] (see the Notes
#: of :class:`PrivateStandardScaler`).
MOMENT_WEIGHT = math.sqrt(2.0)


def moment_sensitivity(n_features, *, weight=MOMENT_WEIGHT, norm="l1", with_std=True):
    """Sensitivity of ``(sum_i w_i, weight * sum_i w_i**2)`` for rows in [-1, 1]^d.

    Replace-one neighbours (``n`` public): one row ``a`` is replaced by ``b``,
    both in ``[-1, 1]^d``.

    Parameters
    ----------
    n_features : int
        Number of features that can vary (a feature with a zero-width range is
        constant and contributes nothing).
    weight : float, default=MOMENT_WEIGHT
        ``lambda``, the weight of the sums of squares.
    norm : {"l1", "l2"}, default="l1"
        Which sensitivity: L1 (Laplace) or L2 (Gaussian).
    with_std : bool, default=True
        False: the sums only (sensitivity ``2`` per feature in both norms).

    Returns
    -------
    float

    Notes
    -----
    Per feature, with ``t = |a - b|`` and ``s = |a + b|`` (``s + t <= 2`` on
    [-1, 1]), the change is ``(a - b, lambda (a^2 - b^2))``, of sizes ``t`` and
    ``lambda s t``. Both grow with ``s``, so ``s = 2 - t``:

    - L1: ``g(t) = t (1 + lambda (2 - t))``, maximal at ``t* = 1 + 1/(2 lambda)``
      if ``t* < 2`` (``lambda > 1/2``), giving ``(1 + 2 lambda)^2 / (4 lambda)``,
      else at ``t = 2``, giving ``2``;
    - L2 squared: ``h(t) = t^2 (1 + lambda^2 (2 - t)^2)``, with
      ``h'(t) = 2 t (1 + 2 lambda^2 (2 - t)(1 - t))``; ``(2 - t)(1 - t) >= -1/4``
      on [0, 2], so for ``lambda <= sqrt(2)`` ``h`` increases and its maximum is
      ``h(2) = 4``; beyond, it is found numerically on a fine grid refined by a
      bounded scalar search.

    The features of a row vary independently over the box, so the vector's L1
    sensitivity is the sum, and its squared L2 sensitivity the sum, of the
    per-feature maxima: ``d g*`` and ``sqrt(d h*)``.
    """
    d = max(int(n_features), 1)
    lam = float(weight)
    if not with_std:
        return 2.0 * d if norm == "l1" else 2.0 * math.sqrt(d)
    if norm == "l1":
        per = 2.0 if lam <= 0.5 else (1 + 2 * lam) ** 2 / (4 * lam)
        return d * per
    if lam <= math.sqrt(2.0):
        return 2.0 * math.sqrt(d)
    from scipy.optimize import minimize_scalar

    def neg(t):
        return -(t**2) * (1 + lam**2 * (2 - t) ** 2)

    grid = np.linspace(0, 2, 2001)
    start = grid[np.argmin(neg(grid))]
    lo, hi = max(start - 1e-3, 0.0), min(start + 1e-3, 2.0)
    res = minimize_scalar(neg, bounds=(lo, hi), method="bounded")
    return math.sqrt(d * max(-res.fun, -neg(start), 4.0))


class Moments:
    """Mergeable moments of rows clipped to the declared ranges.

    ``n`` rows; ``sums``: the released statistic (e.g.
    :func:`skdp.preprocessing._private_scaler.moment_statistics`)
    (None when not computed); ``mean`` and ``m2``: the exact mean and centred
    sum of squares per feature (for ``epsilon=inf``; None otherwise). ``+``
    merges disjoint rows: the sums add, the mean and ``m2`` by Chan, Golub &
    LeVeque's pairwise update (numerically stable, like numpy's two passes).
    """

    __slots__ = ("n", "sums", "mean", "m2")

    def __init__(self, n, sums=None, mean=None, m2=None):
        self.n = n
        self.sums = sums
        self.mean = mean
        self.m2 = m2

    def __add__(self, other):
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        sums = None if self.sums is None else self.sums + other.sums
        mean, m2 = chan_merge(self, other)
        return Moments(self.n + other.n, sums, mean, m2)


def chan_merge(a, b, *, outer=False):
    """``(mean, m2)`` of the union of the disjoint rows of ``a`` and ``b``
    (objects with ``n``, ``mean``, ``m2``; ``m2`` the centred sum of squares,
    or of cross-products with ``outer=True``): Chan, Golub & LeVeque's
    pairwise update. ``(None, None)`` without means; ``m2`` None without."""
    if a.mean is None:
        return None, None
    n = a.n + b.n
    delta = b.mean - a.mean
    mean = a.mean + delta * (b.n / n)
    if a.m2 is None:
        return mean, None
    spread = np.outer(delta, delta) if outer else delta**2
    return mean, a.m2 + b.m2 + spread * (a.n * b.n / n)
