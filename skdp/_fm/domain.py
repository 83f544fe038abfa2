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

OBJECTIVES = ("squared", "logistic_taylor")


def objective_constants(objective):
    """``(kappa, beta)`` with ``A = kappa X^T X`` and ``b = X^T beta(y)``.

    ``beta`` is a vectorized function of the (encoded) labels.
    """
    if objective == "squared":
        return 1.0, lambda y: -2.0 * y
    if objective == "logistic_taylor":
        return 0.125, lambda y: 0.5 - y
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

    Notes
    -----
    At least one of the box and the norm must be given. When both are given (or
    ``max_nonzero``) the box must contain 0 in every coordinate (so that scaling a
    row down to the norm, or zeroing entries, keeps it in the box).
    """

    n_features: int
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    data_norm: float | None = None
    y_bounds: tuple | None = None
    fit_intercept: bool = False
    intercept_scaling: float = 1.0
    max_nonzero: int | None = None
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
        object.__setattr__(self, "_lo", lo)
        object.__setattr__(self, "_hi", hi)
        object.__setattr__(self, "_m", np.maximum(np.abs(lo), np.abs(hi)))

    @property
    def n_coef(self):
        """Number of coefficients ``p = d + fit_intercept``."""
        return self.n_features + int(self.fit_intercept)

    @property
    def has_box(self):
        return self.lower is not None

    @property
    def feature_intervals(self):
        """``(lo, hi)``: the range of each feature inside box and ball."""
        return self._lo, self._hi
