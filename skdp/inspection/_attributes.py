"""Perturbable categorical attributes: parsing the ``attributes`` specs and queries.

An attribute is one raw input column holding category values, or a one-hot block of
columns; the label is the reserved attribute ``"label"``. This module turns the
user's specs into category codes per training row, and checks the ``groups`` and
``perturb`` arguments of a query.
"""

import numbers

import numpy as np

from skdp.utils import check_epsilon

__all__ = [
    "LABEL",
    "CategoricalAttribute",
    "drop_single_axes",
    "parse_attribute",
    "parse_groups",
    "parse_perturb",
]

#: The reserved attribute name of the target.
LABEL = "label"


class CategoricalAttribute:
    """A categorical attribute of the raw input: one column or a one-hot block.

    ``categories`` are the values the attribute can take; ``codes`` (n,) index
    them for the training rows. For a one-hot block of m columns, category j < m
    sets column j to 1, and category m (present when some training row has no 1 in
    the block, e.g. ``OneHotEncoder(drop="first")``) sets them all to 0.
    """

    def __init__(self, name, columns, categories, codes, one_hot):
        self.name, self.columns, self.categories = name, columns, categories
        self.codes, self.one_hot = codes, one_hot

    @property
    def n_categories(self):
        return len(self.categories)


def _column_position(X, column, name, column_names=None):
    if isinstance(column, str):
        cols = getattr(X, "columns", column_names)
        if cols is None or column not in list(cols):
            raise ValueError(
                f"attributes[{name!r}] names column {column!r}, which X does not have."
            )
        return list(cols).index(column)
    if isinstance(column, numbers.Integral) and not isinstance(column, bool):
        if not 0 <= column < X.shape[1]:
            raise ValueError(
                f"attributes[{name!r}]: column {column} out of range for "
                f"{X.shape[1]} columns."
            )
        return int(column)
    raise TypeError(
        f"attributes[{name!r}]: a column must be an int or a column name, got "
        f"{column!r}."
    )


def _get_column(X, pos):
    if hasattr(X, "iloc"):
        return np.asarray(X.iloc[:, pos])
    return np.asarray(X)[:, pos]


def parse_attribute(X, name, spec, column_names=None):
    """Parse one ``attributes`` entry of :class:`RRInfluenceEstimator` against the
    raw training input ``X`` (see the class docstring for the accepted specs)."""
    if name == LABEL:
        raise ValueError(f"{LABEL!r} is reserved for the label; rename the attribute.")
    categories = None
    if isinstance(spec, dict):
        unknown = set(spec) - {"column", "columns", "categories"}
        if unknown or ("column" in spec) == ("columns" in spec):
            raise ValueError(
                f"attributes[{name!r}] as a dict needs exactly one of 'column' or "
                f"'columns' and optionally 'categories', got keys {sorted(spec)}."
            )
        categories = spec.get("categories")
        spec = spec.get("column", spec.get("columns"))
    if isinstance(spec, list | tuple | np.ndarray):
        cols = [_column_position(X, c, name, column_names) for c in spec]
        block = np.column_stack([_get_column(X, c) for c in cols])
        try:
            block = block.astype(np.float64)
        except (TypeError, ValueError):
            block = None
        if block is None or not np.all((block == 0) | (block == 1)):
            raise ValueError(
                f"attribute {name!r} is not categorical: one-hot columns {cols} "
                "must hold only 0 and 1."
            )
        sums = block.sum(axis=1)
        if np.any(sums > 1):
            raise ValueError(
                f"attribute {name!r} is not categorical: a row has more than one 1 "
                f"in one-hot columns {cols}."
            )
        has_reference = bool(np.any(sums == 0))
        codes = np.where(sums == 0, len(cols), block.argmax(axis=1))
        n_cat = len(cols) + has_reference
        if n_cat < 2:
            raise ValueError(f"attribute {name!r} needs at least 2 categories.")
        return CategoricalAttribute(
            name, cols, np.arange(n_cat), codes.astype(np.intp), True
        )

    pos = _column_position(X, spec, name, column_names)
    values = _get_column(X, pos)
    if values.dtype.kind == "f" or values.dtype == object:
        numeric = values.dtype.kind == "f" or all(
            isinstance(v, numbers.Real) for v in values
        )
        if numeric:
            as_float = values.astype(np.float64)
            if not np.all(np.isfinite(as_float)) or np.any(
                as_float != np.round(as_float)
            ):
                raise ValueError(
                    f"attribute {name!r} is not categorical: column {spec!r} holds "
                    "non-integer numbers (use integer codes or a one-hot block)."
                )
    if categories is None:
        try:
            categories = np.unique(values)
        except TypeError as exc:
            raise ValueError(
                f"attribute {name!r}: column {spec!r} mixes value types (missing "
                "values?); drop them or pass 'categories'."
            ) from exc
    categories = np.asarray(categories)
    lookup = {v: i for i, v in enumerate(categories.tolist())}
    try:
        codes = np.array([lookup[v] for v in values.tolist()], dtype=np.intp)
    except KeyError as exc:
        raise ValueError(
            f"attribute {name!r}: value {exc.args[0]!r} is not among its categories."
        ) from None
    if len(categories) < 2:
        raise ValueError(f"attribute {name!r} needs at least 2 categories.")
    return CategoricalAttribute(name, [pos], categories, codes, False)


def parse_groups(groups, n):
    """Training groups as a 2-D boolean array (n_groups, n) and whether a single
    group was given (its axis is then dropped from the results)."""

    def one(g, i):
        g = np.asarray(g)
        if g.dtype == bool:
            if g.shape != (n,):
                raise ValueError(
                    f"groups[{i}]: a boolean mask must have shape ({n},), got "
                    f"{g.shape}."
                )
            mask = g
        else:
            if g.size and g.dtype.kind not in "iu":
                raise TypeError(f"groups[{i}] must be a boolean mask or indices.")
            idx = g.astype(np.intp).ravel()
            if idx.size and (idx.min() < -n or idx.max() >= n):
                raise ValueError(f"groups[{i}] has indices out of range.")
            mask = np.zeros(n, dtype=bool)
            mask[idx] = True
        if not mask.any():
            raise ValueError(f"groups[{i}] is empty: a group needs at least 1 row.")
        return mask

    if isinstance(groups, list | tuple):
        if len(groups) == 0:
            raise ValueError("groups is empty.")
        return np.array([one(g, i) for i, g in enumerate(groups)]), False
    arr = np.asarray(groups)
    if arr.ndim == 2 and arr.dtype == bool:
        return np.array([one(g, i) for i, g in enumerate(arr)]), False
    return one(arr, 0)[None, :], True


def parse_perturb(perturb, state, correction):
    """``{name: epsilon(s)}`` as (names, eps of shape (F, E), all-scalar flag).

    ``state`` is the fitted :class:`~skdp.inspection._perturbation.PerturbationModel`
    (its declared attributes, label categories and encoded labels).
    """
    if not isinstance(perturb, dict) or not perturb:
        raise TypeError(
            "perturb must be a non-empty dict {attribute or 'label': epsilon(s)}."
        )
    names, eps_list = [], []
    for name, eps in perturb.items():
        if name != LABEL and name not in state.attributes:
            raise ValueError(
                f"Unknown attribute {name!r}; declared: "
                f"{sorted(state.attributes) + [LABEL]}."
            )
        if name == LABEL and len(state.label_categories) < 2:
            raise ValueError("The label needs at least 2 categories for RR.")
        if name == LABEL and not state.adapter.is_classifier:
            y = state.y_enc
            if np.any(y != np.round(y)):
                raise ValueError(
                    "The label is not categorical (a regressor's target must "
                    "hold integer values to be perturbed by RR)."
                )
        arr = np.atleast_1d(np.asarray(eps, dtype=np.float64))
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"epsilon for {name!r} must be a scalar or 1-D array.")
        for e in arr:
            check_epsilon(float(e), name=f"epsilon for {name!r}")
        names.append(name)
        eps_list.append(arr)
    scalar = all(np.ndim(e) == 0 for e in perturb.values())
    try:
        eps = np.array(np.broadcast_arrays(*eps_list))
    except ValueError as exc:
        raise ValueError("epsilon arrays in perturb must have equal length.") from exc
    if correction == "forward" and LABEL not in names:
        raise ValueError("correction='forward' needs the label among perturb.")
    return names, eps, scalar


def drop_single_axes(a, single_group, scalar_eps):
    """Drop the group axis of a (n_groups, E) result if one group was given, and
    the epsilon axis if every epsilon was a scalar."""
    if scalar_eps:
        a = a[:, 0]
    if single_group:
        a = a[0]
    return a
