"""Sums over the rows of a dask collection, computed where the data is.

The private transformers (:class:`~skdp.preprocessing.PrivateStandardScaler`,
:class:`~skdp.preprocessing.PrivateMinMaxScaler`,
:class:`~skdp.decomposition.PrivatePCA`) release functions of mergeable
per-row statistics (sums, counts, extremes), as the FM estimators do
(:mod:`skdp._fm.dask_statistics`). Given a dask array or dataframe, each block
of rows is validated and reduced on the workers, the partial results are
tree-merged there, and only the merged statistic (a few kilobytes) reaches the
client, where the single release is made and the spend recorded. Nothing of the
data reaches the client. skdp imports dask only when it is given a dask
collection.
"""

import sys

import numpy as np
from threadpoolctl import threadpool_limits

__all__ = [
    "as_row_blocks",
    "block_codes",
    "dask_feature_names",
    "dask_labels",
    "dask_shape",
    "is_dask_collection",
    "reduce_rows",
    "row_groups",
]


def is_dask_collection(obj):
    """True for a dask array, dataframe or series (never imports dask itself)."""
    dask = sys.modules.get("dask")  # a dask collection implies dask is imported
    return dask is not None and dask.is_dask_collection(obj)


def dask_feature_names(X):
    """Column names of a dask dataframe as scikit-learn reads them, or None."""
    if not hasattr(X, "columns"):
        return None
    import pandas as pd  # a dask dataframe implies pandas

    from skdp.utils.sklearn_compat import get_feature_names

    # scikit-learn's rule (all strings, else None; mixed types refused), read
    # off an empty pandas frame with the same columns
    return get_feature_names(pd.DataFrame(columns=list(X.columns)))


def as_row_blocks(data, name):
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
# in one task (at most GROUP_BLOCKS of them): a task's scheduling and the
# transfer of its result cost far more than reducing a small block (measured in
# benchmarks/bench_statistics_speed.py), and moving a few small blocks to one
# worker costs little; larger blocks stay where they are, one task each
GROUP_ELEMENTS = 2**16
GROUP_BLOCKS = 128


def row_groups(rows, n_features):
    """Consecutive block indices, grouped while a group stays small."""
    groups, size = [], 0
    for i, r in enumerate(rows):
        elements = r * n_features
        if not groups or size + elements > GROUP_ELEMENTS:
            groups.append([])
            size = 0
        elif len(groups[-1]) == GROUP_BLOCKS:
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += elements
    return groups


def _reduce_group(reduce_block, merge, *blocks):
    parts = [reduce_block(block) for block in blocks]
    return merge(*parts)


def reduce_rows(X, reduce_block, merge, *, split_every=8):
    """``merge`` of ``reduce_block(block)`` over the row blocks of dask ``X``.

    Parameters
    ----------
    X : dask array or dataframe of shape (n_samples, n_features)
    reduce_block : callable
        ``ndarray (rows, n_features) -> partial``; runs on the workers, so it
        must be picklable (a module-level function or a ``functools.partial``
        of one) and must validate its block (a block that fails raises on the
        worker, and the error reaches the caller before anything is released).
    merge : callable
        ``(*partials) -> partial``, associative; runs on the workers.
    split_every : int, default=8
        Fan-in of the tree reduction.

    Returns
    -------
    partial
        The merged statistic, the only thing brought to this process.
    """
    import dask

    X = as_row_blocks(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}.")
    blocks = X.to_delayed().ravel()
    reduce_group = dask.delayed(_reduce_group, pure=True)
    fn, mg = dask.delayed(reduce_block), dask.delayed(merge)
    parts = [
        reduce_group(fn, mg, *(blocks[i] for i in group))
        for group in row_groups(X.chunks[0], X.shape[1])
    ]
    while len(parts) > 1:
        parts = [
            dask.delayed(merge)(*parts[i : i + split_every])
            for i in range(0, len(parts), split_every)
        ]
    if dask.base.get_scheduler(collections=parts) is dask.local.get_sync:
        (out,) = dask.compute(parts[0])
    else:
        # BLAS threads inside parallel blocks only oversubscribe the cores
        # (see skdp._fm.dask_statistics)
        with threadpool_limits(limits=1, user_api="blas"):
            (out,) = dask.compute(parts[0])
    return out


def dask_shape(estimator, X, *, ensure_min_samples=1):
    """``(n, d, blocks)`` of a dask collection: its size (counted from its
    block sizes; nothing is computed but a dataframe's partition lengths) and
    the dask array of whole-row blocks to reduce, with ``n_features_in_`` and
    ``feature_names_in_`` set on ``estimator`` as ``validate_data`` sets them."""
    names = dask_feature_names(X)
    blocks = as_row_blocks(X, "X")
    if blocks.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {blocks.shape}.")
    n, d = int(sum(blocks.chunks[0])), int(blocks.shape[1])
    if n < ensure_min_samples:
        raise ValueError(
            f"Found array with {n} sample(s) (dask input) while a minimum of "
            f"{ensure_min_samples} is required."
        )
    if d < 1:
        raise ValueError("Found array with 0 feature(s) (dask input).")
    estimator.n_features_in_ = d
    estimator.__dict__.pop("feature_names_in_", None)
    if names is not None:
        estimator.feature_names_in_ = names
    return n, d, blocks


def dask_labels(y, n):
    """``y`` as a 1-D dask array of ``n`` labels in blocks of known size."""
    y = as_row_blocks(y, "y")
    if y.ndim == 2:
        if y.shape[1] != 1:
            raise ValueError(f"y must be 1-D, got shape {y.shape}.")
        y = y[:, 0]
    if y.shape[0] != n:
        raise ValueError(
            f"X and y have different numbers of rows: {n} and {y.shape[0]}."
        )
    return y


def block_codes(y, *, classes):
    """Class indices (as floats) of one block of labels, checked on its
    worker: a label outside the declared ``classes`` raises there."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    unknown = ~np.isin(y, classes)
    if np.any(unknown):
        raise ValueError(
            f"y contains labels not in classes {classes.tolist()}: "
            f"{np.unique(y[unknown])[:5].tolist()}."
        )
    return np.searchsorted(classes, y).astype(np.float64)
