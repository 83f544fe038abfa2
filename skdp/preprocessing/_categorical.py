"""Categories, codes and labels shared by the randomized-release samplers.

Randomized response works on integer codes 0..C-1; these helpers map arbitrary
category values (ints, floats, strings, pandas categoricals) to codes and back,
chunk by chunk so that large columns stay in cache.
"""

import numbers

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from skdp.utils.privacy_warnings import warn_privacy_leak

# Values per block: small enough for the L2 cache, large enough to amortize calls.
CHUNK_SIZE = 1 << 16


def is_dataframe(X):
    return hasattr(X, "iloc") and hasattr(X, "columns") and hasattr(X, "dtypes")


def is_series(y):
    return hasattr(y, "iloc") and hasattr(y, "index") and not hasattr(y, "columns")


def column_values(X, position):
    """Column ``position`` of a DataFrame or 2-D array as a 1-D numpy array."""
    if is_dataframe(X):
        return np.asarray(X.iloc[:, position])
    return X[:, position]


def check_no_missing(values, name):
    """Raise ValueError if ``values`` holds NaN, inf or None."""
    if values.dtype.kind == "f":
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name} contains NaN or infinity.")
    elif values.dtype.kind == "O":
        missing = np.fromiter(
            (
                v is None or (isinstance(v, float) and not np.isfinite(v))
                for v in values
            ),
            dtype=bool,
            count=values.size,
        )
        if missing.any():
            raise ValueError(f"{name} contains NaN, infinity or None.")


def unique_values(values, name):
    """Sorted distinct values; TypeError if they are not comparable."""
    try:
        return np.unique(values)
    except TypeError as exc:
        kinds = sorted({type(v).__name__ for v in values})
        raise TypeError(
            f"{name} must hold uniformly strings or numbers (argument must be a "
            f"string or a number); got types {kinds}."
        ) from exc


def check_declared_categories(categories, name):
    """A declared category list as a 1-D array of distinct values."""
    if isinstance(categories, str) or not hasattr(categories, "__len__"):
        raise TypeError(f"{name} must be an array-like of values, got {categories!r}.")
    cats = np.asarray(categories)
    if cats.ndim != 1 or cats.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D list, got shape {cats.shape}."
        )
    check_no_missing(cats, name)
    if unique_values(cats, name).size != cats.size:
        raise ValueError(f"{name} must not contain duplicates, got {cats.tolist()}.")
    return cats


class CategoryCodec:
    """Maps the values of one column to codes ``0..C-1`` (in declared order) and back.

    Integer columns whose categories are exactly ``0..C-1`` take a fast path
    without a search.
    """

    def __init__(self, categories):
        self.categories = categories
        self.n_categories = categories.size
        self._sorter = np.argsort(categories, kind="stable")
        self._sorted = categories[self._sorter]
        self.identity = categories.dtype.kind in "iu" and np.array_equal(
            categories, np.arange(self.n_categories)
        )
        self.code_dtype = np.min_scalar_type(max(self.n_categories - 1, 0))

    def encode(self, values, name):
        """Codes of ``values``; ValueError naming the unknown values if any."""
        if self.identity and values.dtype.kind in "iu":
            if values.size and (values.min() < 0 or values.max() >= self.n_categories):
                bad = values[(values < 0) | (values >= self.n_categories)]
                self._raise_unknown(bad, name)
            return values.astype(self.code_dtype)
        try:
            pos = np.searchsorted(self._sorted, values)
        except TypeError as exc:
            raise TypeError(
                f"{name} holds values that cannot be compared with its categories "
                f"{self.categories.tolist()}."
            ) from exc
        pos = np.minimum(pos, self.n_categories - 1)
        found = self._sorted[pos] == values
        if not np.all(found):
            self._raise_unknown(values[~np.asarray(found, dtype=bool)], name)
        return self._sorter[pos].astype(self.code_dtype)

    def decode(self, codes, dtype):
        if self.identity and dtype.kind in "iu":
            return codes.astype(dtype)
        return self.categories[codes]

    def _raise_unknown(self, bad, name):
        shown = unique_values(bad, name)[:10].tolist()
        raise ValueError(
            f"{name} contains values that are not among its categories "
            f"{self.categories.tolist()}: {shown}. Declare every possible value "
            "in `categories`/`classes`; randomized response cannot release a "
            "value outside the declared domain."
        )


def infer_categories(values, name, param):
    """Categories taken from the data, with a PrivacyLeakWarning."""
    warn_privacy_leak(
        f"The categories of {name} were not declared, so they are taken from the "
        "data: the set of values present is released without noise and is not "
        f"covered by the privacy guarantee. Declare `{param}` to get the guarantee."
    )
    return unique_values(values, name)


def check_labels(y, classes):
    """Validate labels and return ``(y_1d, classes_, codec)``.

    ``classes`` None infers the label set from ``y`` (PrivacyLeakWarning).
    """
    y = column_or_1d(y, warn=True)
    check_no_missing(y, "y")
    if classes is None:
        # with declared classes the encoder rejects anything else, and this
        # O(n log n) check would dominate the release time at n = 10^7
        check_classification_targets(y)
        classes_ = infer_categories(y, "y", "classes")
    else:
        classes_ = check_declared_categories(classes, "classes")
    if classes_.size < 2:
        raise ValueError(
            f"Label privacy needs at least 2 classes, got {classes_.size} class: "
            f"{classes_.tolist()}."
        )
    return y, classes_, CategoryCodec(classes_)


def check_encodable(values, codec, name):
    """Raise ``codec``'s error for any of ``values`` outside its categories.

    Block by block, nothing kept: a release checks its values with this before
    it records its spend, so that it cannot fail half way through its draws.
    """
    for start in range(0, values.size, CHUNK_SIZE):
        codec.encode(values[start : start + CHUNK_SIZE], name)


def map_chunks(values, func, out=None):
    """Apply ``func`` to consecutive blocks of ``values`` (1-D).

    Results are written into ``out`` (a new array of the first block's dtype if
    None), so no block list is concatenated.
    """
    for start in range(0, values.size, CHUNK_SIZE):
        block = func(values[start : start + CHUNK_SIZE])
        if out is None:
            out = np.empty(values.size, dtype=block.dtype)
        out[start : start + block.size] = block
    if out is None:  # empty input
        out = func(values)
    return out


def as_output_labels(y_orig, y_new):
    """Return ``y_new`` in the container of the caller's ``y`` (Series or array)."""
    if is_series(y_orig):
        import pandas as pd

        dtype = y_orig.dtype if isinstance(y_orig.dtype, pd.CategoricalDtype) else None
        return pd.Series(y_new, index=y_orig.index, name=y_orig.name, dtype=dtype)
    return y_new


def is_real_scalar(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
