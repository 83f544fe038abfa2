"""A party's data file: record ids, feature columns, maybe the label column.

CSV and Parquet are read with ``pyarrow`` (CSV falls back to the standard
library without it). Rows are sorted
by id (compared as strings) so that every party uses the same order; duplicate or
empty ids, missing columns and non-numeric or missing values raise ValueError
naming the file, column and row.
"""

import csv
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["PartyData", "convert_labels", "read_party_data"]


@dataclass(frozen=True)
class PartyData:
    ids: list  # of str, sorted
    X: np.ndarray  # (n, d_k) float64, rows in id order
    y: np.ndarray | None  # raw labels (float64, or str for class names)


def _csv_header(path):
    with open(path, newline="", encoding="utf-8") as f:
        return next(csv.reader(f), [])


def _columns_from_arrow(table, columns, text):
    """Numeric columns without nulls as float arrays, the others as lists (the
    id column and ``text`` columns as strings)."""
    import pyarrow.types as pt

    out = {}
    for c in columns:
        col = table.column(c)
        kind = col.type
        if (
            c not in text
            and col.null_count == 0
            and (pt.is_integer(kind) or pt.is_floating(kind))
        ):
            out[c] = col.to_numpy().astype(np.float64)
        else:
            out[c] = col.to_pylist()
    return out


def _read_columns(path, columns, text):
    if path.suffix.lower() == ".csv":
        header = _csv_header(path)
        missing = [c for c in columns if c not in header]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}; has {header}.")
        try:  # the fast reader (the federated extra installs it)
            import pyarrow as pa
            import pyarrow.csv as pcsv
        except ImportError:
            pcsv = None
        if pcsv is not None:
            options = pcsv.ConvertOptions(
                include_columns=list(columns),
                column_types={c: pa.string() for c in text},
                strings_can_be_null=False,
            )
            return _columns_from_arrow(
                pcsv.read_csv(path, convert_options=options), columns, text
            )
        with open(path, newline="", encoding="utf-8") as f:
            out = {c: [] for c in columns}
            for row in csv.DictReader(f):
                for c in columns:
                    out[c].append(row[c])
        return out
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        from skdp.utils.extras import install_hint

        raise ImportError(
            f"reading Parquet needs pyarrow: {install_hint('federated')}"
        ) from exc
    table = pq.read_table(path)
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {missing}; has {table.column_names}."
        )
    return _columns_from_arrow(table, columns, text)


def _numbers(path, column, values):
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size == 0:
            return values
        values = values.tolist()  # the loop below names the first bad row
    out = np.empty(len(values))
    for i, v in enumerate(values):
        try:
            x = float(v)
        except (TypeError, ValueError):
            x = math.nan
        if not math.isfinite(x):
            raise ValueError(
                f"{path}: column {column!r} row {i + 1} is not a finite number ({v!r})."
            )
        out[i] = x
    return out


def _classes(values):
    """Class labels: integers if every label is an integer, else strings."""
    try:
        numbers = np.asarray([float(v) for v in values])
    except (TypeError, ValueError):
        return np.asarray([str(v) for v in values])
    if np.all(np.isfinite(numbers)) and np.all(numbers == np.round(numbers)):
        return numbers.astype(np.int64)
    return np.asarray([str(v) for v in values])


def convert_labels(path, column, values, kind):
    """Labels as numbers (``"number"``), classes (``"class"``) or as read."""
    if kind == "class":
        return _classes(values)
    if kind == "number":
        return _numbers(path, column, values)
    return np.asarray(["" if v is None else str(v) for v in values])


def read_party_data(path, id_column, features, label=None, label_kind="number"):
    """Read, check and sort a party's file.

    Parameters
    ----------
    path : pathlib.Path
    id_column : str
    features : sequence of str
    label : str or None
    label_kind : {"number", "class", "raw"}
        ``"class"``: integers if every label is one, else strings; ``"raw"``:
        the strings as read (convert later with :func:`convert_labels`).
    """
    columns = [id_column, *features] + ([label] if label else [])
    raw = _read_columns(path, columns, text=[id_column] + ([label] if label else []))
    ids = ["" if v is None else str(v) for v in raw[id_column]]
    if not ids:
        raise ValueError(f"{path}: no rows.")
    if any(i == "" for i in ids):
        raise ValueError(f"{path}: column {id_column!r} has empty ids.")
    order = sorted(range(len(ids)), key=ids.__getitem__)
    ids = [ids[i] for i in order]
    dup = next((a for a, b in zip(ids, ids[1:]) if a == b), None)
    if dup is not None:
        raise ValueError(f"{path}: id {dup!r} appears more than once in {id_column!r}.")
    X = np.column_stack([_numbers(path, c, raw[c]) for c in features])[order]
    y = None
    if label:
        y = convert_labels(path, label, [raw[label][i] for i in order], label_kind)
    return PartyData(ids, X, y)
