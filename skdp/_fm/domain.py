"""The objectives and the declared data domain the guarantee is stated for."""

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "OBJECTIVES",
    "DataDomain",
    "objective_constants",
    "symmetric_from_triu",
    "triu_indices",
]

OBJECTIVES = ("squared", "logistic_taylor", "multinomial_taylor")


def _multinomial_beta(Y):
    """``1/C - Y`` for ``Y`` the one-hot of the first ``C - 1`` classes."""
    Y = np.asarray(Y, dtype=np.float64)
    return 1.0 / (Y.shape[1] + 1) - Y


def objective_constants(objective):
    """``(kappa, beta)`` with ``A = kappa X^T X`` and ``b = X^T beta(y)``.

    ``beta`` is a vectorized function of the (encoded) labels. For
    ``"multinomial_taylor"`` (:mod:`skdp._fm.multinomial`) the labels are the
    one-hot columns of the first ``C - 1`` classes, shape (n, C - 1).
    """
    if objective == "squared":
        return 1.0, lambda y: -2.0 * y
    if objective == "logistic_taylor":
        return 0.125, lambda y: 0.5 - y
    if objective == "multinomial_taylor":
        return 0.125, _multinomial_beta
    raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}.")


def triu_indices(n_coef):
    """Row-major upper-triangle indices (diagonal included): the order of noise_A."""
    return np.triu_indices(n_coef)


def symmetric_from_triu(values, n_coef):
    """The symmetric matrix whose upper triangle (triu order) is ``values``."""
    rows, cols = triu_indices(n_coef)
    out = np.zeros((n_coef, n_coef))
    out[rows, cols] = values
    out[cols, rows] = values
    return out


@dataclass(frozen=True)
class DataDomain:
    """The declared data domain the privacy guarantee is stated for.

    Parameters
    ----------
    n_features : int
        Number of features ``d`` (without the intercept column).
    lower, upper : array-like of shape (d,) or None
        Per-feature box ``lower_j <= x_j <= upper_j`` (both or neither).
    data_norm : float or None
        Bound ``R`` on the L2 norm of the feature part of every row.
    y_bounds : (float, float) or None
        Label bounds for ``"squared"`` (ignored for ``"logistic_taylor"``, whose
        encoded labels are in {0, 1}).
    fit_intercept : bool
        Whether a constant column is appended (last coefficient).
    intercept_scaling : float
        The constant column's value ``s``.
    max_nonzero : int or None
        At most this many non-zero features per row (e.g. the number of columns
        before one-hot encoding). Then ``||x||_1 <= sqrt(k) ||x||_2``, which
        shrinks the L1 sensitivity from order ``d`` to order ``k``.
    x_offset : array-like of shape (d,) or None
        A public shift: a user's row ``x`` enters the objective as
        ``x - x_offset``, and everything above (box, norm) describes the shifted
        rows. None means no shift.
    x_scale : array-like of shape (d,) or None
        A public scale (positive): a user's row enters as ``(x - x_offset) /
        x_scale`` (the box then describes the scaled rows). None: no scale.
    user_box : (ndarray, ndarray) or None
        The declared box in the user's units, for reporting (``bounds_``)
        when the box above is shifted and scaled; not part of the domain's
        identity.
    y_offset : float
        The same for labels of the ``"squared"`` objective: ``y - y_offset``
        lies in ``y_bounds``.

    Notes
    -----
    At least one of the box and the norm must be given. When both are given (or
    ``max_nonzero``) the box must contain 0 in every coordinate (so that scaling a
    row down to the norm, or zeroing entries, keeps it in the box).

    **Centring.** With an intercept, shifting every row by a constant vector
    ``m`` and every label by ``t`` is a reparametrization: the model
    ``(x - m)^T w + b' + t`` is the model ``x^T w + b`` with
    ``b = b' + t - m^T w``, so the minimizer over ``(w, b)`` of any objective of
    the residuals or margins is the same. The estimators (central, and the
    vertical ones party by party; :func:`skdp._fm.centring.centred_domain`)
    shift a box ``[l, u]`` (declared alone) to its midpoint and ``y_bounds`` to
    theirs
    (public, data-independent: no privacy cost), which shrinks every
    ``max |x_j|`` from ``max(|l_j|, |u_j|)`` to ``(u_j - l_j) / 2`` and
    ``max |y|`` likewise, hence the sensitivity whenever a range excludes 0.

    **Scaling.** A box declared alone is also mapped to ``[-1, 1]``: every
    row enters as ``(x - m) / h`` with ``h`` the half-widths (``x_scale``), a
    public per-feature map, so the model ``((x - m) / h)^T w' + b`` is ``x^T
    w + b`` with ``w = w' / h``. It gives every feature the same part of the
    sensitivity, so a feature with a wide range does not drown the others in
    noise, and the fit is bit for bit the one on the columns mapped to
    ``[-1, 1]`` by hand (up to the float grid of the map back).
    """

    n_features: int
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    data_norm: float | None = None
    y_bounds: tuple | None = None
    fit_intercept: bool = False
    intercept_scaling: float = 1.0
    max_nonzero: int | None = None
    x_offset: np.ndarray | None = None
    y_offset: float = 0.0
    x_scale: np.ndarray | None = None
    user_box: tuple | None = field(default=None, compare=False, repr=False)
    _m: np.ndarray = field(init=False, repr=False, compare=False)
    _lo: np.ndarray = field(init=False, repr=False, compare=False)
    _hi: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        d = int(self.n_features)
        object.__setattr__(self, "n_features", d)
        if (self.lower is None) != (self.upper is None):
            raise ValueError("Give both lower and upper, or neither.")
        if self.lower is None and self.data_norm is None:
            raise ValueError("The domain needs a box (lower, upper) or a data_norm.")
        lo = np.full(d, -np.inf)
        hi = np.full(d, np.inf)
        if self.lower is not None:
            lower = np.broadcast_to(np.asarray(self.lower, float), (d,)).copy()
            upper = np.broadcast_to(np.asarray(self.upper, float), (d,)).copy()
            if np.any(lower > upper):
                raise ValueError("Every lower bound must be <= its upper bound.")
            object.__setattr__(self, "lower", lower)
            object.__setattr__(self, "upper", upper)
            lo, hi = lower, upper
        if self.data_norm is not None:
            R = float(self.data_norm)
            if not R >= 0:
                raise ValueError(f"data_norm must be >= 0, got {self.data_norm!r}.")
            object.__setattr__(self, "data_norm", R)
            if self.lower is not None and np.any((lo > 0) | (hi < 0)):
                raise ValueError(
                    "When both bounds and data_norm are declared, the bounds must "
                    "contain 0 for every feature."
                )
            lo, hi = np.maximum(lo, -R), np.minimum(hi, R)
        if self.max_nonzero is not None:
            k = int(self.max_nonzero)
            if k < 1 or k != self.max_nonzero:
                raise ValueError(
                    f"max_nonzero must be an int >= 1, got {self.max_nonzero!r}."
                )
            if self.lower is not None and np.any((lo > 0) | (hi < 0)):
                raise ValueError(
                    "When max_nonzero is declared, the bounds must contain 0 for "
                    "every feature."
                )
            object.__setattr__(self, "max_nonzero", min(k, d))
        if self.y_bounds is not None:
            yl, yu = (float(v) for v in self.y_bounds)
            if yl > yu:
                raise ValueError("y_bounds must have lower <= upper.")
            object.__setattr__(self, "y_bounds", (yl, yu))
        object.__setattr__(self, "intercept_scaling", float(self.intercept_scaling))
        if self.x_offset is not None:
            offset = np.broadcast_to(np.asarray(self.x_offset, float), (d,)).copy()
            if not np.all(np.isfinite(offset)):
                raise ValueError("x_offset must be finite.")
            object.__setattr__(self, "x_offset", offset)
        if self.x_scale is not None:
            scale = np.broadcast_to(np.asarray(self.x_scale, float), (d,)).copy()
            if not np.all(np.isfinite(scale) & (scale > 0)):
                raise ValueError("x_scale must be finite and positive.")
            object.__setattr__(self, "x_scale", scale)
        if not np.isfinite(self.y_offset):
            raise ValueError("y_offset must be finite.")
        object.__setattr__(self, "y_offset", float(self.y_offset))
        object.__setattr__(self, "_lo", lo)
        object.__setattr__(self, "_hi", hi)
        object.__setattr__(self, "_m", np.maximum(np.abs(lo), np.abs(hi)))

    @property
    def n_coef(self):
        """Number of coefficients ``p = d + fit_intercept``."""
        return self.n_features + int(self.fit_intercept)

    @property
    def is_shifted(self):
        """True if rows or labels are shifted or scaled (:attr:`x_offset`,
        :attr:`x_scale`, :attr:`y_offset`)."""
        return (
            self.x_offset is not None
            or self.x_scale is not None
            or self.y_offset != 0.0
        )

    def to_user_units(self, coef, intercept):
        """``(coef, intercept)`` of the shifted model mapped to the user's units.

        ``coef`` of shape (d,) or (k, d) (one row per output), ``intercept`` a
        float or shape (k,): ``coef / x_scale`` and ``intercept + y_offset -
        coef @ x_offset`` (with the mapped ``coef``).
        """
        if self.x_scale is not None:
            coef = np.asarray(coef) / self.x_scale
        intercept = intercept + self.y_offset
        if self.x_offset is not None:
            intercept = intercept - np.asarray(coef) @ self.x_offset
        return coef, intercept

    @property
    def has_box(self):
        return self.lower is not None

    @property
    def feature_intervals(self):
        """``(lo, hi)``: the range of each feature inside box and ball."""
        return self._lo, self._hi
