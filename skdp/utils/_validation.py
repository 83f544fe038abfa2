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


BOUNDS_FORMS = (
    "a tuple (lower, upper) of scalars or arrays of length n_features; a list (or "
    "array) of (lower, upper) pairs, one per feature; or a dict "
    "{feature: (lower, upper)} naming every feature once, by column name (X a "
    "DataFrame) or by integer index"
)


def _refuse(exc, name, message):
    return exc(f"{name}: {message} Accepted forms of {name}: {BOUNDS_FORMS}.")


def _pair(value, name, key):
    """``(lo, hi)`` floats of one feature's entry ``value``."""
    try:
        if isinstance(value, str | bytes | dict):
            raise TypeError
        lo, hi = value
    except (TypeError, ValueError):
        raise _refuse(
            TypeError,
            name,
            f"the entry for feature {key!r} must be a pair (lower, upper), "
            f"got {value!r}.",
        ) from None
    try:
        return float(lo), float(hi)
    except (TypeError, ValueError):
        raise _refuse(
            TypeError,
            name,
            f"the entry for feature {key!r} must hold numbers, got {value!r}.",
        ) from None


def _dict_bounds(bounds, n_features, name, feature_names):
    """``(lower, upper)`` arrays from ``{feature: (lo, hi)}``."""
    names = None if feature_names is None else [str(f) for f in feature_names]
    if names is not None and len(names) != n_features:
        names = None
    lower = np.full(n_features, np.nan)
    upper = np.full(n_features, np.nan)
    seen = {}
    for key, value in bounds.items():
        if isinstance(key, str):
            if names is None:
                raise _refuse(
                    ValueError,
                    name,
                    f"keyed by the column name {key!r}, but X has no column "
                    "names (fit on a NumPy array, not a DataFrame). Fit on a "
                    "DataFrame with these column names, or key the dict by "
                    "integer feature index, or give a list of (lower, upper) "
                    "pairs in column order.",
                )
            if key not in names:
                raise ValueError(
                    f"{name} names the feature {key!r}, which is not a column "
                    f"name of X (columns: {names})."
                )
            j = names.index(key)
        elif isinstance(key, numbers.Integral) and not isinstance(key, bool | np.bool_):
            j = int(key)
            if not 0 <= j < n_features:
                raise ValueError(
                    f"{name} has feature index {j}; X has {n_features} features "
                    f"(indices 0 to {n_features - 1})."
                )
        else:
            raise _refuse(
                TypeError,
                name,
                f"dict keys must be column names (str) or feature indices "
                f"(int), got {key!r}.",
            )
        if j in seen:
            raise ValueError(
                f"{name} gives feature {j} twice (as {seen[j]!r} and {key!r}); "
                "name every feature exactly once."
            )
        seen[j] = key
        lower[j], upper[j] = _pair(value, name, key)
    missing = [j for j in range(n_features) if j not in seen]
    if missing:
        labels = [names[j] if names is not None else j for j in missing[:10]]
        raise ValueError(
            f"{name} has no range for the features {labels}"
            + (" (and more)" if len(missing) > 10 else "")
            + "; a dict must name every feature of X exactly once."
        )
    return lower, upper


def _as_pairs(bounds, n_features):
    """``bounds`` as a float array of shape ``(n_features, 2)``, or None."""
    try:
        arr = np.asarray(bounds, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return arr if arr.shape == (n_features, 2) else None


def _bounds_arrays(bounds, n_features, name="bounds", feature_names=None):
    """``(lower, upper)`` float arrays (scalars or length ``n_features``) from
    any accepted form of ``bounds``; not yet broadcast or checked."""
    if isinstance(bounds, dict):
        return _dict_bounds(bounds, n_features, name, feature_names)
    if isinstance(bounds, str | bytes) or not isinstance(
        bounds, tuple | list | np.ndarray
    ):
        raise _refuse(TypeError, name, f"got {bounds!r}.")
    pairs = None
    if not (isinstance(bounds, tuple) and len(bounds) == 2):
        pairs = _as_pairs(bounds, n_features)
    if pairs is not None:
        return pairs[:, 0].copy(), pairs[:, 1].copy()
    if len(bounds) != 2 or (
        not isinstance(bounds, tuple) and _as_pairs(bounds, 2) is not None
    ):  # (a list of 2 pairs for another number of features)
        if _as_pairs(bounds, len(bounds)) is None:
            raise _refuse(TypeError, name, f"got {bounds!r}.")
        raise _refuse(
            ValueError,
            name,
            f"got {len(bounds)} (lower, upper) pairs for {n_features} features.",
        )
    try:
        lower = np.asarray(bounds[0], dtype=np.float64)
        upper = np.asarray(bounds[1], dtype=np.float64)
    except (TypeError, ValueError):
        raise _refuse(TypeError, name, f"must hold numbers, got {bounds!r}.") from None
    return lower, upper


def check_bounds(bounds, n_features, name="bounds", min_width=0.0, feature_names=None):
    """Validate per-feature ``bounds`` in any accepted form; ``(lower, upper)``.

    The one place where every ``bounds_X``-like parameter is read, so each
    estimator accepts the same forms. Nothing is written back to the parameter.

    Parameters
    ----------
    bounds : tuple, list, ndarray or dict
        One of

        - ``(lower, upper)``: a tuple of two scalars or array-likes of length
          ``n_features`` (a scalar applies to every feature);
        - a list or array of ``n_features`` pairs ``[(lo_0, hi_0), (lo_1,
          hi_1), ...]``, one per feature in column order (shape
          ``(n_features, 2)``);
        - a dict ``{feature: (lo, hi)}`` naming every feature exactly once,
          by column name (``feature_names`` must be given: X a DataFrame) or
          by integer index ``0 <= j < n_features``.

        A **tuple** of length 2 is always ``(lower, upper)``; a **list** or
        array of shape ``(n_features, 2)`` is one pair per feature (with 2
        features, ``([0, 1], [2, 3])`` is lower ``[0, 1]`` and upper
        ``[2, 3]``, while ``[(0, 1), (2, 3)]`` is ``[0, 1]`` and ``[2, 3]``).
        A list of length 2 of any other shape is ``(lower, upper)``.
    n_features : int
    name : str
        Parameter name used in error messages.
    min_width : float
        Each ``upper - lower`` must also be >= this.
    feature_names : sequence of str or None
        The column names of X (``feature_names_in_``), for a dict keyed by name.

    Returns
    -------
    lower, upper : ndarray of shape (n_features,), float64

    Raises
    ------
    TypeError
        If ``bounds`` has none of the forms above (the message lists them).
    ValueError
        If a bound is not finite, the number of features differs, a dict
        names an unknown feature, misses one or names one twice, or
        ``lower >= upper`` for some feature: a range of width 0
        (``bounds=(1, 1)``) would clip every value to one constant, so it is
        refused like an inverted one.

    Examples
    --------
    >>> from skdp.utils import check_bounds
    >>> check_bounds((0, [1, 2]), 2)
    (array([0., 0.]), array([1., 2.]))
    >>> check_bounds([(0, 1), (0, 2)], 2)
    (array([0., 0.]), array([1., 2.]))
    >>> check_bounds({"b": (0, 2), "a": (0, 1)}, 2, feature_names=["a", "b"])
    (array([0., 0.]), array([1., 2.]))
    >>> check_bounds((1, 1), 1, name="bounds_y")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: bounds_y must have lower < upper for every feature (a range of ...
    """
    lower, upper = _bounds_arrays(bounds, n_features, name, feature_names)
    out = []
    for side, arr in (("lower", lower), ("upper", upper)):
        if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != n_features):
            raise _refuse(
                ValueError,
                name,
                f"the {side} bound must be a scalar or have length {n_features}, "
                f"got shape {arr.shape}.",
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} {side} bound must be finite, got {arr!r}.")
        out.append(np.broadcast_to(arr, (n_features,)).astype(np.float64))
    lower, upper = out
    bad = np.flatnonzero(~(upper > lower) | (upper - lower < min_width))[:5]
    if bad.size:
        hint = ""
        pairs = _as_pairs(bounds, n_features) if n_features == 2 else None
        if isinstance(bounds, tuple) and pairs is not None:
            if np.all(pairs[:, 1] > pairs[:, 0]):
                hint = (
                    " A tuple of two sequences is read as (lower, upper); for "
                    "one (lower, upper) pair per feature give a list "
                    "[(lo_0, hi_0), (lo_1, hi_1)]."
                )
        elif pairs is not None and np.all(pairs[1] > pairs[0]):
            hint = (
                " A list of two pairs is read as one (lower, upper) pair per "
                "feature; for lower and upper arrays give a tuple "
                "([lo_0, lo_1], [hi_0, hi_1])."
            )
        raise ValueError(
            f"{name} must have lower < upper for every feature (a range of width "
            f"0 clips every value to one constant); violated at indices "
            f"{bad.tolist()}.{hint}"
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


def feature_bounds(estimator, X, n_features):
    """The ranges of an estimator's ``bounds_X``: declared, or read off the data.

    Parameters
    ----------
    estimator : estimator with a ``bounds_X`` parameter
        ``bounds_X`` in any form of :func:`check_bounds` (a dict is keyed by
        the estimator's ``feature_names_in_`` when it has them), or None.
    X : array-like of shape (n_samples, n_features)
        Read only when ``bounds_X`` is None (:func:`infer_bounds`, with its
        :class:`~skdp.exceptions.PrivacyLeakWarning`).
    n_features : int

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
    """
    if estimator.bounds_X is None:
        return infer_bounds(X, name="bounds_X")
    return check_bounds(
        estimator.bounds_X,
        n_features,
        name="bounds_X",
        feature_names=getattr(estimator, "feature_names_in_", None),
    )


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


def check_classes(classes, name="classes"):
    """A declared class set: sorted unique labels, refused if empty, not 1-d,
    repeated or of a target type scikit-learn does not know.

    Parameters
    ----------
    classes : array-like of shape (n_classes,)
    name : str, default="classes"
        The parameter's name, for the messages.

    Returns
    -------
    ndarray of shape (n_classes,)
    """
    from sklearn.utils.multiclass import type_of_target

    declared = np.asarray(classes)
    if declared.ndim != 1 or declared.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array-like, got {classes!r}.")
    found = np.unique(declared)
    if found.size != declared.size:
        raise ValueError(f"{name} has repeated labels: {classes!r}.")
    type_of_target(found, input_name=name, raise_unknown=True)
    return found


def check_labels_in(y, classes, name="classes"):
    """Refuse labels of ``y`` outside ``classes`` (naming up to five of them)."""
    unknown = ~np.isin(y, classes)
    if np.any(unknown):
        raise ValueError(
            f"y contains labels not in {name} {np.asarray(classes).tolist()}: "
            f"{np.unique(y[unknown])[:5].tolist()}."
        )
