"""Histogram counts of a dask array, reduced on the workers.

The bins are public (edges from ``bins`` and a declared ``range``, never from
the data); each block of rows is checked (finite) and binned on its worker,
the per-block count arrays are summed there (tree reduction), and only the
counts come back. A bad block raises there, before anything is spent.
"""

import functools
import numbers

import numpy as np

from skdp.utils.dask_rows import as_row_blocks, reduce_rows

__all__ = ["dask_histogram_counts", "public_edges"]


def public_edges(bins, ranges, name="range"):
    """The bin edges of each dimension, from ``bins`` and ``ranges`` alone.

    ``bins`` and ``ranges`` hold one entry per dimension (a number of bins
    or the edges; a ``(lower, upper)`` or None). On dask input a number of
    bins needs a declared range: numpy would read it off the data (a leak,
    and a pass over the data before the release).
    """
    needs_range = any(
        isinstance(b, numbers.Integral) and r is None
        for b, r in zip(bins, ranges, strict=True)
    )
    if needs_range:
        raise ValueError(
            f"On dask input, declare {name}=(lower, upper) (one per dimension) or "
            "give the bin edges: reading the range off the data would leak it."
        )
    return [
        np.histogram_bin_edges(np.empty(0), bins=b, range=r)
        for b, r in zip(bins, ranges, strict=True)
    ]


def _block_counts(block, *, edges, per_row, name):
    """The counts of one block of rows (every value of a row when
    ``per_row`` is None, else its ``per_row`` columns as one point)."""
    values = np.asarray(block, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"{name} must be finite (no NaN or inf): drop or impute missing values "
            "first; how many are missing is itself data."
        )
    points = values.reshape(-1, 1) if per_row is None else values
    return np.histogramdd(points, bins=list(edges))[0].astype(np.int64)


def _sum(*parts):
    return functools.reduce(np.add, parts)


def dask_histogram_counts(data, edges, *, all_values, name):
    """``(counts, values per record)`` of dask ``data`` in the cells of ``edges``.

    ``all_values``: every value is binned on one axis (:func:`histogram`);
    else each row is one point of ``len(edges)`` dimensions
    (:func:`histogramdd`).
    """
    blocks = as_row_blocks(data, name)
    if blocks.size == 0:
        raise ValueError(f"{name} must not be empty.")
    per_record = blocks.size // blocks.shape[0]
    if blocks.ndim == 1:
        blocks = blocks[:, None]
    if not all_values and blocks.shape[1] != len(edges):
        raise ValueError(
            f"{name} has {blocks.shape[1]} columns but the bins have "
            f"{len(edges)} dimensions."
        )
    reduce_block = functools.partial(
        _block_counts,
        edges=tuple(edges),
        per_row=None if all_values else len(edges),
        name=name,
    )
    return reduce_rows(blocks, reduce_block, _sum), per_record
