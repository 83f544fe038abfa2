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

from sklearn.base import clone
from threadpoolctl import threadpool_limits

from skdp.utils.dask_rows import (
    GROUP_BLOCKS,
    GROUP_ELEMENTS,
    as_row_blocks,
    is_dask_collection,
    row_groups,
)

__all__ = ["dask_statistics", "is_dask_collection"]


# the helpers are shared with the private transformers (skdp.utils.dask_rows)
_as_row_blocks = as_row_blocks
_groups = row_groups
_GROUP_ELEMENTS = GROUP_ELEMENTS
_GROUP_BLOCKS = GROUP_BLOCKS


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
