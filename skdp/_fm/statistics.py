"""Sufficient statistics of the objective: exact sums over rows, mergeable.

The statistics of a quadratic FM objective are sums over rows, so they can be
computed on any split of the rows (chunks, Dask blocks, workers) and added.
Floating-point addition is not associative, so float sums of different splits
differ in their last bits, and the noisy release would differ too. Here the sums
are **exact** (:mod:`skdp._fm.exact_sums`: every clipped value truncated to a
grid of ``2^-36`` of its column's bound, the products summed exactly, the float
statistics the correctly rounded exact sums). Any split, merged in any order,
on any machine, gives bit-identical statistics, hence the same model as a fit
on all rows with the same ``random_state``.
"""

import hashlib

import numpy as np

from skdp._fm.clipping import beta_bound, clip_labels, clip_to_domain
from skdp._fm.domain import objective_constants
from skdp._fm.exact_sums import SCHEME, carry, exact_gram, exact_to_float

__all__ = [
    "FMStatistics",
    "beta_bound",
    "clip_to_domain",
    "compute_statistics",
    "fingerprint_items",
    "sufficient_statistics",
]


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
        if isinstance(v, np.ndarray) and v.dtype.kind in "biuf":
            return tuple(v.ravel().tolist())  # numbers: Python scalars at once
        if isinstance(v, list) and all(isinstance(u, np.ndarray) for u in v):
            if len({u.shape for u in v}) == 1:  # e.g. [lower, upper]
                return sum((plain(u) for u in v), ())
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
        if domain.x_scale is not None:  # only then, as above
            items.append(("x_scale", plain(domain.x_scale)))
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
    declared domain; see :mod:`skdp._fm.exact_sums`), so statistics of any
    split of the rows, merged in any order, equal those of all rows bit for bit,
    and ``fit_statistics`` on them gives exactly the model ``fit`` gives on all
    rows with the same ``random_state``. The one rounding is of each clipped
    value toward zero to the grid ``2^(E_j - 36)`` with
    ``2^(E_j - 1) <= M_j < 2^E_j`` the declared bound of its column: less than
    ``2^-35 M_j``, inside the declared domain (the guarantee is unchanged).
    Statistics merge only with statistics of the same scheme (the same skdp).

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

    def __init__(self, levels, units, n, *, n_coef, kappa, items):
        self._scheme = SCHEME
        self._levels = levels
        self._units = tuple(units)
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
        if getattr(self, "_scheme", None) != SCHEME:  # pickled by another skdp
            raise ValueError(
                "These FMStatistics were computed by another version of skdp (a "
                "different exact-sum scheme); compute them again with this one."
            )
        if self._float_gram is None:
            self._float_gram = exact_to_float(self._levels, self._units)
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
        if getattr(self, "_scheme", None) != getattr(other, "_scheme", None):
            raise ValueError(
                "Cannot merge FMStatistics computed by different versions of skdp "
                "(different exact-sum schemes); compute them again with one."
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
            carry(self._levels + other._levels),
            self._units,
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
            and getattr(self, "_scheme", None) == getattr(other, "_scheme", None)
            and self._units == other._units
            and self._n == other._n
            and np.array_equal(carry(self._levels.copy()), carry(other._levels.copy()))
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
    labels = beta(clip_labels(y, objective, domain))
    levels, units = exact_gram(np.asarray(X), labels, objective, domain)
    if items is None:
        items = fingerprint_items(objective, domain)
    return FMStatistics(
        levels,
        units,
        len(labels),
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
