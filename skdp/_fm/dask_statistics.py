"""Functional-mechanism statistics of dask collections, computed where the data is.

The FM needs only sums over records, so a dask array or dataframe is reduced block
by block on the workers (each block validated and clipped to the declared domain
by a clone of the estimator), the partial statistics are tree-summed on the
workers, and only the final statistics (a few kilobytes) reach the client, where
the single release is made and the spend recorded. Nothing of the data reaches the
client. skdp imports dask only when it is given a dask collection.
"""

import sys

import numpy as np
from sklearn.base import clone

__all__ = ["dask_statistics", "is_dask_collection"]


def is_dask_collection(obj):
    """True for a dask array, dataframe or series (never imports dask itself)."""
    dask = sys.modules.get("dask")  # a dask collection implies dask is imported
    return dask is not None and dask.is_dask_collection(obj)


def _as_row_blocks(data, name):
    """A dask array split into blocks of whole rows, with known block sizes."""
    import dask.array as da

    if hasattr(data, "to_dask_array"):  # dataframe or series
        # lengths=True counts each partition's rows on the workers (only the
        # counts reach the client), so blocks of X and y can be matched.
        data = data.to_dask_array(lengths=True)
    if not isinstance(data, da.Array):
        raise TypeError(
            f"{name} must be a dask array, dataframe or series when the other input "
            f"is one; got {type(data).__name__}."
        )
    if data.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D or 2-D, got {data.ndim} dimensions.")
    if any(np.isnan(size) for size in data.chunks[0]):
        raise ValueError(
            f"{name} has blocks of unknown size (e.g. after boolean indexing); call "
            f"{name}.compute_chunk_sizes() first (it counts rows on the workers)."
        )
    if data.ndim == 2 and len(data.chunks[1]) > 1:
        data = data.rechunk({1: -1})  # every block holds whole rows
    return data


def _block_statistics(template, domain, items, X, y):
    """One block's statistics: its rows validated, the domain resolved once."""
    X, y = template._statistics_rows(X, y)
    return template._block_statistics(X, y, domain, items)


def _merge(*parts):
    return sum(parts[1:], parts[0])


def dask_statistics(estimator, X, y, *, split_every=8):
    """The estimator's FM statistics of dask ``X`` and ``y``, reduced on the workers.

    Parameters
    ----------
    estimator : FM estimator
        Supplies the objective and the declared domain; it is cloned, never fitted.
    X : dask array or dataframe of shape (n_samples, n_features)
    y : dask array or series of shape (n_samples,)
    split_every : int, default=8
        Fan-in of the tree reduction.

    Returns
    -------
    FMStatistics
        The same statistics ``estimator.statistics`` gives on the whole data.
    """
    import dask

    X = _as_row_blocks(X, "X")
    y = _as_row_blocks(y, "y")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}.")
    if X.shape[0] != y.shape[0]:
        raise ValueError(
            f"X and y have different numbers of rows: {X.shape[0]} and {y.shape[0]}."
        )
    if y.chunks[0] != X.chunks[0]:
        y = y.rechunk({0: X.chunks[0]})  # same rows in matching blocks (on workers)
    template = clone(estimator)
    # the parameters, the declared domain and the fingerprint once, here: each
    # block then only validates and reduces its rows (no per-block fixed cost)
    template._validate_params()
    domain = template._declared_domain(X.shape[1])
    items = template._fingerprint_items(domain)
    block = dask.delayed(_block_statistics, pure=True)
    plan = [dask.delayed(template), dask.delayed(domain), dask.delayed(items)]
    parts = [
        block(*plan, xb, yb)
        for xb, yb in zip(X.to_delayed().ravel(), y.to_delayed().ravel())
    ]
    while len(parts) > 1:
        parts = [
            dask.delayed(_merge)(*parts[i : i + split_every])
            for i in range(0, len(parts), split_every)
        ]
    (stats,) = dask.compute(parts[0])
    return stats
