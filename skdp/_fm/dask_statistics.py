"""Functional-mechanism statistics of dask collections, computed where the data is.

The FM needs only sums over records, so a dask array or dataframe is reduced block
by block on the workers (each block validated and clipped to the declared domain
by a clone of the estimator), the partial statistics are tree-summed on the
workers, and only the final statistics (a few kilobytes) reach the client, where
the single release is made and the spend recorded. Nothing of the data reaches the
client. skdp imports dask only when it is given a dask collection.

Fixed costs are paid once per fit, not per block: the parameters, the declared
domain and the fingerprint are resolved here, and BLAS is limited to one thread
here for the duration of the computation (not with the synchronous scheduler);
each block only validates and reduces its rows.
"""

import sys

import numpy as np
from sklearn.base import clone
from threadpoolctl import threadpool_limits

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


# blocks with fewer elements than this are reduced together, consecutive ones
# in one task (at most _GROUP_BLOCKS of them): a task's scheduling and the
# transfer of its result cost far more than reducing a small block (measured in
# benchmarks/bench_statistics_speed.py), and moving a few small blocks to one
# worker costs little; larger blocks stay where they are, one task each
_GROUP_ELEMENTS = 2**16
_GROUP_BLOCKS = 128


def _groups(rows, n_features):
    """Consecutive block indices, grouped while a group stays small."""
    groups, size = [], 0
    for i, r in enumerate(rows):
        elements = r * n_features
        if not groups or size + elements > _GROUP_ELEMENTS:
            groups.append([])
            size = 0
        elif len(groups[-1]) == _GROUP_BLOCKS:
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += elements
    return groups


def _blocks_statistics(template, domain, items, *blocks):
    """The summed statistics of blocks ``X_1, y_1, X_2, y_2, ...``: each block's
    rows validated, the domain resolved once on the client."""
    parts = []
    for X, y in zip(blocks[::2], blocks[1::2]):
        X, y = template._statistics_rows(X, y)
        parts.append(template._block_statistics(X, y, domain, items))
    return _merge(*parts)


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
    reduce_blocks = dask.delayed(_blocks_statistics, pure=True)
    plan = [dask.delayed(template), dask.delayed(domain), dask.delayed(items)]
    blocks = list(zip(X.to_delayed().ravel(), y.to_delayed().ravel()))
    parts = [
        reduce_blocks(*plan, *(part for i in group for part in blocks[i]))
        for group in _groups(X.chunks[0], X.shape[1])
    ]
    while len(parts) > 1:
        parts = [
            dask.delayed(_merge)(*parts[i : i + split_every])
            for i in range(0, len(parts), split_every)
        ]
    if dask.base.get_scheduler(collections=parts) is dask.local.get_sync:
        (stats,) = dask.compute(parts[0])
    else:
        # once per fit: dask runs blocks in parallel, and BLAS threads inside
        # them only oversubscribe the cores (measured: 15x slower with the
        # threaded scheduler); distributed's worker processes already start
        # with one BLAS thread
        with threadpool_limits(limits=1, user_api="blas"):
            (stats,) = dask.compute(parts[0])
    return stats
