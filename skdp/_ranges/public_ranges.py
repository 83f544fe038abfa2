"""Ranges that cost nothing: a DataFrame's dtypes and the user's declared ones."""

import math
import numbers

import numpy as np

__all__ = ["public_ranges", "schema_bounds"]


def schema_bounds(X, public_categories=False):
    """Ranges a pandas DataFrame's dtypes declare: ``{column index: (lo, hi)}``.

    Boolean columns give ``(0, 1)`` (a boolean can hold nothing else). A
    categorical column gives ``(min, max)`` of its categories only where the
    user declares its categories public (``public_categories``): by default
    they are data, because ``.astype("category")`` and ``pd.Categorical(x)``
    take them from the values (``[1, 2, 3, 2, 55]`` has the categories
    ``[1, 2, 3, 55]``, so their range is the data's exact range). Anything
    else, and any non-DataFrame input, gives nothing.

    Parameters
    ----------
    X : DataFrame or array-like
        The features; only a DataFrame's dtypes are read, never its values.
    public_categories : bool or sequence of str or int, default=False
        Which categorical columns have public categories (fixed by a schema or
        a codebook, not by these rows): True for all of them, or the columns'
        names or indices. A declared column must have numeric categories.
        False: none.

    Returns
    -------
    dict
        ``{column index: (lower, upper)}`` for the columns the schema bounds.

    Raises
    ------
    ValueError
        If a column declared in ``public_categories`` is not a column of ``X``,
        is not categorical, or has non-numeric categories.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdp.preprocessing import schema_bounds
    >>> df = pd.DataFrame({"owner": [True, False], "age": [31.0, 52.0],
    ...                    "rooms": pd.Categorical([2, 3], categories=[1, 2, 3, 4])})
    >>> schema_bounds(df)
    {0: (0.0, 1.0)}
    >>> schema_bounds(df, public_categories=["rooms"])
    {0: (0.0, 1.0), 2: (1.0, 4.0)}
    """
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "columns"):
        if public_categories is not False and public_categories is not None:
            if public_categories is True or len(public_categories):
                raise ValueError(
                    "public_categories declares categorical columns of a pandas "
                    "DataFrame; X is not one."
                )
        return {}
    import pandas as pd

    names = [str(c) for c in X.columns]
    if public_categories is True:
        declared = {
            j for j, t in enumerate(dtypes) if isinstance(t, pd.CategoricalDtype)
        }
    else:
        declared = _declared_categorical(public_categories, names)
    out = {}
    for j, dtype in enumerate(dtypes):
        if pd.api.types.is_bool_dtype(dtype):
            out[j] = (0.0, 1.0)
        elif j in declared:
            if not isinstance(dtype, pd.CategoricalDtype):
                raise ValueError(
                    f"public_categories names the column {names[j]!r}, which is "
                    f"not categorical (dtype {dtype})."
                )
            cats = np.asarray(dtype.categories)
            if not (cats.size and np.issubdtype(cats.dtype, np.number)):
                raise ValueError(
                    f"public_categories covers the column {names[j]!r}, whose "
                    f"categories are not numbers ({list(dtype.categories)[:5]!r}): "
                    "a range needs numeric categories; encode the column first."
                )
            out[j] = (float(cats.min()), float(cats.max()))
    return out


def _declared_categorical(public_categories, names):
    """The column indices ``public_categories`` names (none for False)."""
    if public_categories is None or public_categories is False:
        return set()
    if isinstance(public_categories, str | numbers.Integral):
        public_categories = [public_categories]
    out = set()
    for key in public_categories:
        if isinstance(key, str):
            if key not in names:
                raise ValueError(
                    f"public_categories names the column {key!r}, which is not "
                    "a column name of X."
                )
            out.add(names.index(key))
        elif isinstance(key, numbers.Integral) and not isinstance(key, bool):
            if not 0 <= int(key) < len(names):
                raise ValueError(
                    f"public_categories has column index {key}; X has "
                    f"{len(names)} columns."
                )
            out.add(int(key))
        else:
            raise TypeError(
                "public_categories must be a bool or a sequence of column names "
                f"or indices, got {key!r} in it."
            )
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
