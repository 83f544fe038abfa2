"""Which columns each party holds: validation of a vertical partition."""

import numbers

import numpy as np

from skdp.datasets import split_columns

__all__ = ["check_label_party", "check_partition"]


def _resolve_column(column, n_features, feature_names, party):
    if isinstance(column, str):
        if feature_names is None:
            raise ValueError(
                f"partition: party {party} names column {column!r}, but X has no "
                "feature names (pass a DataFrame or use integer indices)."
            )
        matches = np.flatnonzero(np.asarray(feature_names) == column)
        if matches.size == 0:
            raise ValueError(
                f"partition: party {party} names column {column!r}, which is not "
                "a feature of X."
            )
        return int(matches[0])
    if isinstance(column, bool | np.bool_) or not isinstance(column, numbers.Integral):
        raise TypeError(
            f"partition: party {party} holds {column!r}; columns must be integer "
            "indices or feature names."
        )
    if not 0 <= column < n_features:
        raise ValueError(
            f"partition: party {party} holds column {column}, outside "
            f"[0, {n_features})."
        )
    return int(column)


def check_partition(partition, n_features, n_parties=None, feature_names=None):
    """Validate a column partition and return it as a list of index arrays.

    Parameters
    ----------
    partition : None or list of lists of int or str
        Columns (indices or feature names) held by each party. ``None`` splits the
        columns into ``n_parties`` contiguous, near-equal groups.
    n_features : int
    n_parties : int or None
        Required when ``partition`` is None (then at most ``n_features``: a party
        without a column is an error); otherwise, if given, must match.
    feature_names : array-like of str or None
        Names of the columns of X, to resolve names in ``partition``.

    Returns
    -------
    list of ndarray of int
        One sorted index array per party, together a partition of
        ``range(n_features)``.

    Raises
    ------
    ValueError
        An empty party, a column held by two parties, a column held by none, an
        index out of range, an unknown name, or more parties than features.

    Examples
    --------
    >>> check_partition([[2, 0], [1]], n_features=3)
    [array([0, 2]), array([1])]
    """
    if partition is None:
        if n_parties is None:
            raise ValueError("partition: give a partition or n_parties.")
        if n_parties > n_features:
            raise ValueError(
                f"n_parties={n_parties} exceeds the number of features "
                f"(n_features={n_features}): every party needs at least one column; "
                "lower n_parties or pass an explicit partition."
            )
        return [
            np.asarray(p, dtype=np.intp) for p in split_columns(n_features, n_parties)
        ]
    if isinstance(partition, str | bytes) or not hasattr(partition, "__len__"):
        raise TypeError(
            f"partition must be a list with one list of columns per party, got "
            f"{partition!r}."
        )
    if len(partition) < 1:
        raise ValueError("partition must hold at least one party.")
    if n_parties is not None and len(partition) != n_parties:
        raise ValueError(
            f"partition has {len(partition)} parties but n_parties={n_parties}."
        )
    owner = {}
    out = []
    for k, columns in enumerate(partition):
        if isinstance(columns, str | bytes) or not hasattr(columns, "__iter__"):
            raise TypeError(
                f"partition: party {k} must hold a list of columns, got {columns!r}."
            )
        idx = [_resolve_column(c, n_features, feature_names, k) for c in columns]
        if not idx:
            raise ValueError(f"partition: party {k} holds no columns (empty party).")
        for j in idx:
            if j in owner:
                raise ValueError(
                    f"partition: column {j} is held by parties {owner[j]} and {k}; "
                    "parties must hold disjoint columns (overlapping partition)."
                )
            owner[j] = k
        out.append(np.sort(np.asarray(idx, dtype=np.intp)))
    missing = sorted(set(range(n_features)) - owner.keys())
    if missing:
        raise ValueError(
            f"partition: columns {missing[:10]} are held by no party (missing "
            "columns); every column of X must belong to exactly one party."
        )
    return out


def check_label_party(label_party, n_parties):
    """Return ``label_party`` as an int in ``[0, n_parties)``.

    Examples
    --------
    >>> check_label_party(1, 3)
    1
    """
    if isinstance(label_party, bool | np.bool_) or not isinstance(
        label_party, numbers.Integral
    ):
        raise TypeError(f"label_party must be an int, got {label_party!r}.")
    if not 0 <= label_party < n_parties:
        raise ValueError(
            f"label_party={label_party} is out of range for {n_parties} parties "
            f"(must be in [0, {n_parties - 1}])."
        )
    return int(label_party)
