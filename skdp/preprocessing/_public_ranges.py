"""Ranges that cost nothing: a DataFrame's dtypes and the user's declared ones."""

import math
import numbers

import numpy as np

__all__ = ["public_ranges", "schema_bounds"]


def schema_bounds(X):
    """Ranges a pandas DataFrame's dtypes declare: ``{column index: (lo, hi)}``.

    Boolean columns give ``(0, 1)``; categorical columns with numeric
    categories give ``(min, max)`` of the declared categories (the dtype's
    category list is the schema, whichever of them occur). Anything else, and
    any non-DataFrame input, gives nothing.

    Parameters
    ----------
    X : DataFrame or array-like
        The features; only a DataFrame's dtypes are read, never its values.

    Returns
    -------
    dict
        ``{column index: (lower, upper)}`` for the columns the schema bounds.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdp.preprocessing import schema_bounds
    >>> df = pd.DataFrame({"owner": [True, False], "age": [31.0, 52.0],
    ...                    "rooms": pd.Categorical([2, 3], categories=[1, 2, 3, 4])})
    >>> schema_bounds(df)
    {0: (0.0, 1.0), 2: (1.0, 4.0)}
    """
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "columns"):
        return {}
    import pandas as pd

    out = {}
    for j, dtype in enumerate(dtypes):
        if pd.api.types.is_bool_dtype(dtype):
            out[j] = (0.0, 1.0)
        elif isinstance(dtype, pd.CategoricalDtype):
            cats = np.asarray(dtype.categories)
            if cats.size and np.issubdtype(cats.dtype, np.number):
                out[j] = (float(cats.min()), float(cats.max()))
    return out


def public_ranges(public_bounds, n_columns, names, name="public_bounds"):
    """``{index: (lo, hi)}`` from a dict of ranges keyed by index or name."""
    if public_bounds is None:
        return {}
    if not isinstance(public_bounds, dict):
        raise TypeError(
            f"{name} must be a dict {{feature: (lower, upper)}}, got "
            f"{type(public_bounds).__name__}."
        )
    out = {}
    for key, value in public_bounds.items():
        if isinstance(key, str):
            if names is None or key not in list(names):
                raise ValueError(
                    f"{name} names the feature {key!r}, which is not a "
                    "column name of X."
                )
            j = list(names).index(key)
        elif isinstance(key, numbers.Integral) and not isinstance(key, bool):
            j = int(key)
            if not 0 <= j < n_columns:
                raise ValueError(
                    f"{name} has feature index {j}; X has {n_columns} features."
                )
        else:
            raise TypeError(
                f"{name} keys must be feature indices or names, got {key!r}."
            )
        try:
            lo, hi = (float(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name}[{key!r}] must be a pair (lower, upper) of numbers, "
                f"got {value!r}."
            ) from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(
                f"{name}[{key!r}] must be finite with lower < upper (a range of "
                f"width 0 clips every value to one constant), got {value!r}."
            )
        out[j] = (lo, hi)
    return out
