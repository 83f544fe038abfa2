"""Checks for privacy parameters, data bounds and norms, and clipping."""

import math
import numbers

import numpy as np

from skdp.utils.privacy_warnings import warn_privacy_leak

__all__ = [
    "check_bounds",
    "check_data_norm",
    "check_delta",
    "check_epsilon",
    "check_int",
    "check_sensitivity",
    "clip_to_bounds",
    "clip_to_norm",
    "infer_bounds",
    "infer_data_norm",
]


def _check_real(value, name):
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must not be NaN.")
    return value


def check_epsilon(epsilon, name="epsilon", allow_inf=True):
    """Return ``epsilon`` as a float in (0, inf] (or (0, inf) if not ``allow_inf``)."""
    epsilon = _check_real(epsilon, name)
    if epsilon <= 0 or (not allow_inf and math.isinf(epsilon)):
        upper = "inf]" if allow_inf else "inf)"
        raise ValueError(f"{name} must be in (0, {upper}, got {epsilon!r}.")
    return epsilon


def check_delta(delta, name="delta", allow_zero=True):
    """Return ``delta`` as a float in [0, 1) (or (0, 1) if not ``allow_zero``)."""
    delta = _check_real(delta, name)
    if not (0 <= delta < 1) or (delta == 0 and not allow_zero):
        lower = "[0" if allow_zero else "(0"
        raise ValueError(f"{name} must be in {lower}, 1), got {delta!r}.")
    return delta


def check_int(value, name, minimum):
    """Return ``value`` as an int >= ``minimum`` (booleans are refused).

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        Parameter name for the error message.
    minimum : int
        Smallest accepted value.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If ``value`` is not an integer (``numbers.Integral``, not a bool) or is
        below ``minimum``.

    Examples
    --------
    >>> from skdp.utils import check_int
    >>> check_int(3, "n_categories", 2)
    3
    """
    if (
        isinstance(value, bool | np.bool_)
        or not isinstance(value, numbers.Integral)
        or value < minimum
    ):
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return int(value)


def check_sensitivity(sensitivity, name="sensitivity"):
    """Return ``sensitivity`` as a finite float > 0."""
    sensitivity = _check_real(sensitivity, name)
    if not (0 < sensitivity < math.inf):
        raise ValueError(f"{name} must be a finite number > 0, got {sensitivity!r}.")
    return sensitivity


def check_data_norm(data_norm, name="data_norm"):
    """Return ``data_norm`` (an L2 row-norm bound) as a finite float > 0."""
    return check_sensitivity(data_norm, name)


def check_bounds(bounds, n_features, name="bounds", min_width=0.0):
    """Validate ``bounds = (lower, upper)`` and broadcast to ``n_features``.

    Parameters
    ----------
    bounds : tuple (lower, upper)
        Scalars or array-likes of length ``n_features``.
    n_features : int
    name : str
        Parameter name used in error messages.
    min_width : float
        Each ``upper - lower`` must also be >= this.

    Returns
    -------
    lower, upper : ndarray of shape (n_features,), float64

    Raises
    ------
    ValueError
        If a bound is not finite, has the wrong length, or ``lower >= upper``
        for some feature: a range of width 0 (``bounds=(1, 1)``) would clip
        every value to one constant, so it is refused like an inverted one.

    Examples
    --------
    >>> from skdp.utils import check_bounds
    >>> check_bounds((0, [1, 2]), 2)
    (array([0., 0.]), array([1., 2.]))
    >>> check_bounds((1, 1), 1, name="bounds_y")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: bounds_y must have lower < upper for every feature (a range of ...
    """
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise TypeError(f"{name} must be a tuple (lower, upper), got {bounds!r}.")
    try:
        lower = np.asarray(bounds[0], dtype=np.float64)
        upper = np.asarray(bounds[1], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must hold numbers, got {bounds!r}.") from exc
    out = []
    for side, arr in (("lower", lower), ("upper", upper)):
        if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != n_features):
            raise ValueError(
                f"{name} {side} bound must be a scalar or have length {n_features}, "
                f"got shape {arr.shape}."
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} {side} bound must be finite, got {arr!r}.")
        out.append(np.broadcast_to(arr, (n_features,)).astype(np.float64))
    lower, upper = out
    bad = np.flatnonzero(~(upper > lower) | (upper - lower < min_width))[:5]
    if bad.size:
        raise ValueError(
            f"{name} must have lower < upper for every feature (a range of width "
            f"0 clips every value to one constant); violated at indices "
            f"{bad.tolist()}."
        )
    return lower, upper


def clip_to_bounds(X, lower, upper):
    """Return a clipped copy of ``X`` (columns to ``[lower_j, upper_j]``)."""
    return np.clip(np.asarray(X, dtype=np.float64), lower, upper)


def clip_to_norm(X, data_norm, copy=True):
    """Rows of ``X`` scaled down to L2 norm <= ``data_norm``.

    Returns a copy unless ``copy=False`` and ``X`` is already a float64 array the
    caller owns (then it is scaled in place).
    """
    X = np.array(X, dtype=np.float64) if copy else np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))  # row norms without a temporary
    too_long = norms > data_norm  # only these rows are scaled (never divide by ~0)
    X[too_long] *= (data_norm / norms[too_long])[:, None]
    return X


def infer_bounds(X, name="bounds"):
    """Bounds taken from the data's min and max, with a :class:`PrivacyLeakWarning`."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    warn_privacy_leak(
        f"{name} were not declared, so they are taken from the data: the result "
        f"leaks the data's range and is not differentially private. Declare {name} "
        "to get the guarantee."
    )
    lower, upper = X.min(axis=0), X.max(axis=0)
    return lower, upper


def infer_data_norm(X, name="data_norm"):
    """The largest row L2 norm of ``X``, with a :class:`PrivacyLeakWarning`."""
    X = np.asarray(X, dtype=np.float64)
    warn_privacy_leak(
        f"{name} was not declared, so it is taken from the data: the result leaks "
        f"the largest row norm and is not differentially private. Declare {name} "
        "to get the guarantee."
    )
    norm = float(np.linalg.norm(X, axis=1).max()) if X.size else 0.0
    return norm if norm > 0 else 1.0
