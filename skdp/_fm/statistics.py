"""Sufficient statistics of the objective: exact sums over rows, mergeable.

The statistics of a quadratic FM objective are sums over rows, so they can be
computed on any split of the rows (chunks, Dask blocks, workers) and added.
Floating-point addition is not associative, so float sums of different splits
differ in their last bits, and the noisy release would differ too. Here the sums
are **exact**: every clipped value is written as an integer multiple of a
power-of-two grid fixed by the declared domain, the products are summed in
integer arithmetic, and the float statistics are the correctly rounded exact
sums. Any split, merged in any order, gives bit-identical statistics, hence the
same model as a fit on all rows with the same ``random_state``.

Exact accumulation
------------------
Let ``Z = [X, s 1, beta(y)]`` be the clipped rows with the intercept column and
the label term (one column per target). Column ``j`` is bounded by the domain:
``|z_j| <= M_j <= 2^E_j``. Each value is rounded once to the grid
``2^(E_j - 53)`` (an integer ``m`` with ``|m| <= 2^53``; this moves a value by
at most half a unit in the last place of the domain's bound ``M_j``, well below
float64 resolution of the data's scale) and split into three limbs of 18 bits,
``m = a_2 2^36 + a_1 2^18 + a_0``. The Gram matrix of the limbs of up to
``2^17`` rows is computed by BLAS in float64, which is exact because every
partial sum is an integer below ``2^53``; it is then accumulated in int64 in
base ``2^18`` with carries (no overflow for fewer than ``2^40`` rows). Reading
``A`` or ``b`` converts the exact integer sums to the nearest float64.
"""

import hashlib
import math

import numpy as np
from threadpoolctl import threadpool_limits

from skdp._fm.domain import objective_constants
from skdp.utils import clip_to_bounds, clip_to_norm

__all__ = [
    "FMStatistics",
    "beta_bound",
    "clip_to_domain",
    "compute_statistics",
    "fingerprint_items",
    "sufficient_statistics",
]

_LIMB = 18  # bits per limb: limb products < 2^36
_N_LIMBS = 3  # 54 bits >= the 53 of a float64 mantissa
_LEVELS = 6  # base-2^18 digits of the accumulator (levels 0..4 plus carries)
_MAX_ROWS = 2**17  # 2^17 products below 2^36 sum exactly in float64
_CHUNK_BYTES = 2**23  # bounds the memory of a chunk's clipped copy and limbs


def beta_bound(objective, domain):
    """``max |beta(y)|`` over the declared label domain."""
    if objective == "logistic_taylor":
        return 0.5
    if objective == "multinomial_taylor":
        return 1.0  # |1/C - y_c| <= 1 - 1/C
    objective_constants(objective)  # validates the name
    if domain.y_bounds is None:
        raise ValueError('The "squared" objective needs y_bounds in the domain.')
    return 2.0 * max(abs(v) for v in domain.y_bounds)


def clip_to_domain(X, y, objective, domain):
    """Copies of ``X`` and ``y`` clipped to the declared domain (inputs untouched).

    In order: the public shift (``x_offset``, ``y_offset``) is subtracted, the
    ``max_nonzero`` largest-magnitude entries of each row are kept,
    the box is applied, rows are scaled down to ``data_norm``; labels of the
    ``"squared"`` objective are clipped to ``y_bounds``.
    """
    X = np.asarray(X, dtype=np.float64)
    if domain.x_offset is not None:
        X = X - domain.x_offset  # the public shift (a copy)
    k = domain.max_nonzero
    if k is not None and k < X.shape[1]:
        small = np.argpartition(np.abs(X), X.shape[1] - k, axis=1)[:, :-k]
        X = X.copy()
        np.put_along_axis(X, small, 0.0, axis=1)
    if domain.has_box:
        X = clip_to_bounds(X, domain.lower, domain.upper)
    if domain.data_norm is not None:
        X = clip_to_norm(X, domain.data_norm)
    y = np.asarray(y, dtype=np.float64)
    if objective == "squared" and domain.y_bounds is not None:
        y = np.clip(y - domain.y_offset, *domain.y_bounds)
    return X, y


def _exponents(objective, domain, n_targets):
    """``E_j`` with ``|z_j| <= 2^E_j`` for every column of ``Z``."""
    bounds = list(domain._m)
    if domain.fit_intercept:
        bounds.append(abs(domain.intercept_scaling))
    bounds += [beta_bound(objective, domain)] * n_targets
    return np.array([math.frexp(m)[1] if m > 0 else 0 for m in bounds], np.int64)


def _limb_gram(Z, scale, exponents, L):
    """Base-2^18 digits of the exact ``Z^T Z`` (in grid units) of one chunk.

    ``Z`` is overwritten; ``L`` is a work buffer of shape ``(rows, 3 q)``.
    """
    r, q = Z.shape
    # multiplying by a power of two is exact (and faster than ldexp); a bound
    # below 2^-970 would need a scale beyond float64's range
    if np.all(np.isfinite(scale)):
        m = np.multiply(Z, scale, out=Z)
    else:
        m = np.ldexp(Z, 53 - exponents, out=Z)
    np.rint(m, out=m)
    np.clip(m, -(2.0**53), 2.0**53, out=m)  # a norm clip may overshoot by an ulp
    L = L[:r]
    a0, a1, a2 = L[:, :q], L[:, q : 2 * q], L[:, 2 * q :]
    np.multiply(m, 2.0**-_LIMB, out=a1)
    np.floor(a1, out=a1)  # t = floor(m / 2^18), held in a1 for now
    np.multiply(a1, 2.0**_LIMB, out=a0)
    np.subtract(m, a0, out=a0)  # a0 = m - 2^18 t in [0, 2^18)
    np.multiply(a1, 2.0**-_LIMB, out=a2)
    np.floor(a2, out=a2)  # a2 = floor(t / 2^18)
    np.multiply(a2, 2.0**_LIMB, out=m)
    np.subtract(a1, m, out=a1)  # a1 = t - 2^18 a2 in [0, 2^18)
    G = (L.T @ L).astype(np.int64)  # exact: integer partial sums below 2^53
    levels = np.zeros((_LEVELS, q, q), np.int64)
    for a in range(_N_LIMBS):
        for b in range(_N_LIMBS):
            levels[a + b] += G[a * q : (a + 1) * q, b * q : (b + 1) * q]
    return levels


def _carry(levels):
    """Normalize digits to [0, 2^18) (the top one keeps the sign and the rest)."""
    levels = levels.copy()
    for s in range(_LEVELS - 1):
        carry = levels[s] >> _LIMB  # arithmetic shift: floor division
        levels[s] -= carry << _LIMB
        levels[s + 1] += carry
    return levels


def _exact_to_float(levels, exponents):
    """The float64 nearest to each exact sum (grid units scaled back)."""
    total = levels[0].astype(object)
    for s in range(1, _LEVELS):
        total = total + levels[s].astype(object) * (1 << (_LIMB * s))
    # int -> float is correctly rounded; the power-of-two scaling is exact
    values = np.array([float(v) for v in total.ravel()]).reshape(total.shape)
    scale = exponents[:, None] + exponents[None, :] - 106
    return np.ldexp(values, scale)


def fingerprint_items(objective, domain, **extra):
    """Everything two statistics must share to be merged, as ``(name, value)``.

    ``extra`` adds estimator-level items (``classes``, ``feature_names``, ...).
    Values are plain Python scalars and tuples (floats compared exactly).
    """

    def plain(v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, np.generic):
            return v.item()
        return tuple(plain(u) for u in np.asarray(v, dtype=object).ravel())

    items = [
        ("objective", objective),
        ("n_features", domain.n_features),
        ("fit_intercept", domain.fit_intercept),
        ("intercept_scaling", domain.intercept_scaling),
        (
            "bounds_X",
            None if not domain.has_box else plain([domain.lower, domain.upper]),
        ),
        ("data_norm", domain.data_norm),
        ("max_nonzero", domain.max_nonzero),
        ("bounds_y", plain(domain.y_bounds) if objective == "squared" else None),
    ]
    if domain.is_shifted:  # only then, so unshifted fingerprints do not move
        items += [
            ("x_offset", None if domain.x_offset is None else plain(domain.x_offset)),
            ("y_offset", domain.y_offset),
        ]
    items += [(name, plain(value)) for name, value in sorted(extra.items())]
    return tuple(items)


class FMStatistics:
    """Mergeable sufficient statistics of a functional-mechanism objective.

    Returned by ``statistics(X, y)`` of :class:`~skdp.linear_model.FMLinearRegression`
    and :class:`~skdp.linear_model.FMLogisticRegression`; consumed by their
    ``fit_statistics``. Computing them spends no privacy budget (nothing is
    released); they are as sensitive as the data and must not be published.

    ``a + b`` merges the statistics of two disjoint sets of rows; ``sum([...])``
    works too. Merging statistics of different objectives or declared domains
    raises ValueError naming what differs.

    Attributes
    ----------
    A : ndarray of shape (p, p)
        The quadratic coefficients ``kappa sum_i x~_i x~_i^T`` (``x~`` the clipped
        row with the intercept column, ``p = n_features + fit_intercept``).
    b : ndarray of shape (p,) or (p, n_targets)
        The linear coefficients ``sum_i x~_i beta(y_i)``.
    n : int
        Number of rows.
    n_features : int
    fingerprint : str
        Short digest of :attr:`domain`.
    domain : dict
        The objective, declared domain and everything else a merge must match.

    Notes
    -----
    **Exact.** The sums are exact (integer accumulation on a grid fixed by the
    declared domain; see :mod:`skdp._fm.statistics`), so statistics of any
    split of the rows, merged in any order, equal those of all rows bit for bit,
    and ``fit_statistics`` on them gives exactly the model ``fit`` gives on all
    rows with the same ``random_state``. The one rounding is of each clipped
    value to the grid ``2^(E_j - 53)`` with ``2^(E_j - 1) < M_j <= 2^E_j`` the
    declared bound of its column: at most half an ulp of ``M_j``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model import FMLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.uniform(-1, 1, (100, 3)), rng.uniform(-1, 1, 100)
    >>> reg = FMLinearRegression(bounds_X=(-1, 1), bounds_y=(-1, 1))
    >>> stats = reg.statistics(X[:60], y[:60]) + reg.statistics(X[60:], y[60:])
    >>> stats == reg.statistics(X, y)
    True
    >>> stats.n, stats.A.shape
    (100, (4, 4))
    """

    def __init__(self, levels, exponents, n, *, n_coef, kappa, items):
        self._levels = levels
        self._exponents = exponents
        self._n = int(n)
        self._n_coef = int(n_coef)
        self._kappa = float(kappa)
        self._items = tuple(items)
        self._float_gram = None  # the rounded exact sums, computed once

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_float_gram"] = None
        return state

    # ------------------------------------------------------------------ values
    @property
    def n(self):
        return self._n

    @property
    def n_features(self):
        return dict(self._items)["n_features"]

    @property
    def domain(self):
        return dict(self._items)

    @property
    def fingerprint(self):
        return hashlib.sha256(repr(self._items).encode()).hexdigest()[:16]

    def _gram(self):
        if self._float_gram is None:
            self._float_gram = _exact_to_float(self._levels, self._exponents)
        return self._float_gram.copy()

    @property
    def A(self):
        p = self._n_coef
        return self._kappa * self._gram()[:p, :p]

    @property
    def b(self):
        p = self._n_coef
        b = self._gram()[:p, p:]
        return b[:, 0] if b.shape[1] == 1 else b

    # ----------------------------------------------------------------- merging
    def _check_mergeable(self, other):
        if not isinstance(other, FMStatistics):
            raise TypeError(
                f"can only merge FMStatistics with FMStatistics, got "
                f"{type(other).__name__}."
            )
        if self._items != other._items:
            mine, theirs = dict(self._items), dict(other._items)
            diff = [
                f"{name} ({mine.get(name)!r} vs {theirs.get(name)!r})"
                for name in dict.fromkeys([*mine, *theirs])
                if mine.get(name) != theirs.get(name)
            ]
            raise ValueError(
                "Cannot merge FMStatistics of different objectives or declared "
                "domains: " + ", ".join(diff) + " differ."
            )
        if self._levels.shape != other._levels.shape:
            raise ValueError(
                "Cannot merge FMStatistics with different numbers of targets "
                f"(b of shape {self.b.shape} vs {other.b.shape})."
            )

    def __add__(self, other):
        self._check_mergeable(other)
        return FMStatistics(
            _carry(self._levels + other._levels),
            self._exponents,
            self._n + other._n,
            n_coef=self._n_coef,
            kappa=self._kappa,
            items=self._items,
        )

    def __radd__(self, other):
        if isinstance(other, int) and other == 0:  # sum([...]) starts from 0
            return self
        return NotImplemented

    def __eq__(self, other):
        if not isinstance(other, FMStatistics):
            return NotImplemented
        return (
            self._items == other._items
            and self._n == other._n
            and np.array_equal(self._levels, other._levels)
        )

    __hash__ = None

    def __repr__(self):
        d = self.domain
        return (
            f"FMStatistics(objective={d['objective']!r}, n={self._n}, "
            f"n_features={d['n_features']}, fingerprint={self.fingerprint!r})"
        )


def compute_statistics(X, y, objective, domain, *, items=None):
    """:class:`FMStatistics` of rows ``(X, y)``, clipped to ``domain`` first.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Validated; not modified.
    y : ndarray of shape (n_samples,) or (n_samples, n_targets)
        Labels (for ``"logistic_taylor"`` encoded in {0, 1}).
    objective : {"squared", "logistic_taylor"}
    domain : DataDomain
    items : tuple or None
        The fingerprint items (default :func:`fingerprint_items` of the domain).
    """
    kappa, beta = objective_constants(objective)
    X = np.asarray(X)
    y = np.asarray(y)
    n, d = X.shape
    n_targets = 1 if y.ndim == 1 else y.shape[1]
    exponents = _exponents(objective, domain, n_targets)
    q = exponents.size
    levels = np.zeros((_LEVELS, q, q), np.int64)
    rows = max(1, min(_MAX_ROWS, n, _CHUNK_BYTES // (8 * _N_LIMBS * q)))
    with np.errstate(over="ignore"):  # inf: _limb_gram then uses ldexp
        scale = np.ldexp(1.0, 53 - exponents)
    Z = np.empty((rows, q))
    L = np.empty((rows, _N_LIMBS * q))
    p = domain.n_coef
    # one BLAS thread (as sklearn's KMeans does): tall-skinny Gram products gain
    # little from threads, and oversubscribed OpenBLAS threads spin
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, n, rows):
            Xc, yc = clip_to_domain(
                X[start : start + rows], y[start : start + rows], objective, domain
            )
            r = Xc.shape[0]
            Zc = Z[:r]
            Zc[:, :d] = Xc
            if domain.fit_intercept:
                Zc[:, d] = domain.intercept_scaling
            Zc[:, p:] = beta(yc).reshape(r, n_targets)
            levels = _carry(levels + _limb_gram(Zc, scale, exponents, L))
    if items is None:
        items = fingerprint_items(objective, domain)
    return FMStatistics(
        levels,
        exponents,
        n,
        n_coef=domain.n_coef,
        kappa=kappa,
        items=items,
    )


def sufficient_statistics(
    X, y, objective, *, fit_intercept=False, intercept_scaling=1.0
):
    """``(A, b)`` of one chunk: the objective's quadratic and linear coefficients.

    The data must already lie in the declared domain (clipped) and, for
    ``"logistic_taylor"``, ``y`` must be encoded in {0, 1}. Statistics of chunks
    add up: the statistics of a dataset are the sum over any partition of its rows.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    objective : {"squared", "logistic_taylor"}
    fit_intercept : bool
        Append the constant column ``intercept_scaling`` (as the last coefficient)
        without materializing it.
    intercept_scaling : float
        Value ``s`` of the constant column.

    Returns
    -------
    A : ndarray of shape (p, p), symmetric
    b : ndarray of shape (p,)
        ``p = n_features + fit_intercept``.
    """
    kappa, beta = objective_constants(objective)
    X = np.asarray(X, dtype=np.float64)
    beta_y = beta(np.asarray(y, dtype=np.float64))
    gram = X.T @ X
    b_feat = X.T @ beta_y
    if not fit_intercept:
        return kappa * gram, b_feat
    s = float(intercept_scaling)
    n, d = X.shape
    A = np.empty((d + 1, d + 1))
    A[:d, :d] = gram
    A[:d, d] = A[d, :d] = s * X.sum(axis=0)
    A[d, d] = s * s * n
    b = np.append(b_feat, s * beta_y.sum())
    return kappa * A, b
