"""The columns of a range release as real numbers, or a clear error naming
the column (complex and non-numeric input are refused before any spend)."""

import numpy as np

__all__ = ["float_columns"]


def _column_label(names, j):
    if names is not None and j < len(names):
        return f"{names[j]!r} (index {j})"
    return f"{j}"


def float_columns(X, names=None):
    """``X`` as a 2-D float64 array, or a ValueError naming the first column
    that holds complex or non-numeric values.

    Called before anything is spent: a complex value cast to float64 would
    lose its imaginary part, and a string column would fail inside numpy
    with a message that names no column.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_columns)
    names : sequence of str or None
        Column names for the messages (a DataFrame's, or given).

    Returns
    -------
    ndarray of shape (n_samples, n_columns), float64

    Raises
    ------
    ValueError
        If ``X`` is not 2-dimensional, or a column is complex or not numeric.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdp._ranges.range_columns import float_columns
    >>> df = pd.DataFrame({"x": [1.0, 2.0], "town": pd.Categorical(["a", "b"])})
    >>> float_columns(df, ["x", "town"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: X column 'town' (index 1) holds non-numeric values (dtype category, ...
    """
    values = np.asarray(X)
    if values.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got shape {values.shape}.")
    columns = [
        X.iloc[:, j] if hasattr(X, "iloc") else values[:, j]
        for j in range(values.shape[1])
    ]
    for j, column in enumerate(columns):
        column = np.asarray(column)
        if column.dtype.kind == "c" or (
            column.dtype.kind == "O"
            and any(isinstance(v, complex | np.complexfloating) for v in column)
        ):
            raise ValueError(
                f"Complex data not supported: X column {_column_label(names, j)} "
                "holds complex values; private_bounds needs real numbers."
            )
    try:
        return np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        pass
    for j, column in enumerate(columns):
        try:
            np.asarray(column, dtype=np.float64)
        except (TypeError, ValueError):
            example = next(
                (v for v in np.asarray(column, dtype=object) if not _is_real(v)), None
            )
            kind = getattr(column, "dtype", values.dtype)
            raise ValueError(
                f"X column {_column_label(names, j)} holds non-numeric values "
                f"(dtype {kind}, e.g. {example!r}); private_bounds needs numbers. "
                "Encode the column first (e.g. sklearn.preprocessing."
                "OrdinalEncoder) and, if the codes' range is public, declare it "
                "in public_bounds."
            ) from None
    raise ValueError("X must hold numbers (could not convert it to float64).")


def _is_real(value):
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True
