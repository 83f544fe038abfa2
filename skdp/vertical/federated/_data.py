"""A party's data file: record ids, feature columns, maybe the label column.

CSV and Parquet are read with ``pyarrow`` (CSV falls back to the standard
library without it). Rows are sorted by id (compared as strings) so that every
party uses the same order. Duplicate or empty ids, missing columns, a malformed
file and non-numeric or missing values raise :class:`~._errors.DataError`
naming the file, the column and the row number (data rows counted from 1), and
never the id or the value (see :mod:`._errors`: the message reaches the
participant's log, its public part every peer).
"""

import csv
import math
import re
from dataclasses import dataclass

import numpy as np

from skdp.vertical.federated._errors import DataError

__all__ = ["DataError", "PartyData", "convert_labels", "read_party_data"]

_CSV_SHAPE = re.compile(r"Expected \d+ columns, got \d+")


def _unreadable(path, exc, kind):
    """A DataError for a file the reader rejects, without the reader's text
    when it may quote the file (pyarrow's CSV errors quote the row)."""
    detail = type(exc).__name__
    shape = _CSV_SHAPE.search(str(exc))
    if shape:
        detail = f"a row has the wrong number of fields: {shape.group(0)}"
    elif isinstance(exc, UnicodeDecodeError) or "UTF8" in str(exc):
        detail = "it is not UTF-8 text"
    elif "Empty CSV file" in str(exc):
        detail = "it is empty"
    return DataError(
        f"{path}: cannot be read as {kind} ({detail}).",
        f"its data file cannot be read as {kind}",
    )


@dataclass(frozen=True)
class PartyData:
    ids: list  # of str, sorted
    X: np.ndarray  # (n, d_k) float64, rows in id order
    y: np.ndarray | None  # raw labels (float64, or str for class names)
    rows: np.ndarray | None = None  # each row's number in the file (from 1)


def _csv_header(path):
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return next(csv.reader(f), [])
    except (UnicodeDecodeError, csv.Error) as exc:
        raise _unreadable(path, exc, "CSV") from None


def _missing(path, missing, has):
    return DataError(
        f"{path}: missing column(s) {missing}; has {has}.",
        f"its data file lacks the column(s) {missing}",
    )


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
            raise _missing(path, missing, header)
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
            try:
                table = pcsv.read_csv(path, convert_options=options)
            except (pa.ArrowException, ValueError) as exc:
                raise _unreadable(path, exc, "CSV") from None
            return _columns_from_arrow(table, columns, text)
        out = {c: [] for c in columns}
        try:
            with open(path, newline="", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    for c in columns:
                        out[c].append(row[c])
        except (UnicodeDecodeError, csv.Error) as exc:
            raise _unreadable(path, exc, "CSV") from None
        return out
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        from skdp.utils.extras import install_hint

        raise ImportError(
            f"reading Parquet needs pyarrow: {install_hint('federated')}"
        ) from exc
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's errors subclass both
        raise _unreadable(path, exc, "Parquet") from None
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise _missing(path, missing, table.column_names)
    return _columns_from_arrow(table, columns, text)


def _numbers(path, column, values, rows=None):
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
            raise DataError(
                f"{path}: column {column!r} row {i + 1 if rows is None else rows[i]} "
                "is not a finite number "
                "(the value is not shown).",
                f"column {column!r} of its data file holds a value that is not a "
                "finite number",
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


def convert_labels(path, column, values, kind, rows=None):
    """Labels as numbers (``"number"``), classes (``"class"``) or as read;
    ``rows``: each value's row number in the file, for the errors."""
    if kind == "class":
        return _classes(values)
    if kind == "number":
        return _numbers(path, column, values, rows)
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
        raise DataError(f"{path}: no rows.", "its data file has no rows")
    empty = [i + 1 for i, v in enumerate(ids) if v == ""]
    if empty:
        raise DataError(
            f"{path}: column {id_column!r} is empty in row(s) {empty[:10]}.",
            f"its id column {id_column!r} has empty ids",
        )
    order = sorted(range(len(ids)), key=ids.__getitem__)
    ids = [ids[i] for i in order]
    dup = next((j for j in range(len(ids) - 1) if ids[j] == ids[j + 1]), None)
    if dup is not None:
        rows = sorted([order[dup] + 1, order[dup + 1] + 1])
        raise DataError(
            f"{path}: rows {rows[0]} and {rows[1]} hold the same id in column "
            f"{id_column!r} (the id is not shown).",
            f"its id column {id_column!r} holds an id more than once",
        )
    X = np.column_stack([_numbers(path, c, raw[c]) for c in features])[order]
    y = None
    if label:
        y = [raw[label][i] for i in order]
        y = convert_labels(path, label, y, label_kind, rows=np.add(order, 1))
    return PartyData(ids, X, y, np.add(order, 1))
