"""The random trees' (leaf x class) count tables on dask input, reduced on the workers.

skdp-internal: used by :class:`skdp.tree.PrivateDecisionTreeClassifier` and
:class:`skdp.ensemble.PrivateRandomForestClassifier` (and the validation pass by
:class:`skdp.cluster.PrivateKMeans`). Each fit on dask input makes

1. a **validation pass** (before anything is recorded or drawn): every block of
   ``X`` is checked on its worker (2-D, finite, the declared number of
   columns) and every block of ``y`` too (labels in ``classes``); only the
   number of rows checked comes back;
2. after the spend is recorded and the data-free structures drawn, a **count
   pass**: each block becomes the (tree, leaf, class) counts of its rows, kept
   sparse (the cells it touches), summed on the workers; only the summed
   tables (integers: exact in any order) come back.
"""

import functools

import numpy as np
from sklearn.utils import check_array

from skdp._trees import apply_tree, resolve_classes
from skdp.utils.dask_rows import (
    block_codes,
    dask_labels,
    dask_shape,
    reduce_rows,
)

__all__ = [
    "block_leaf_counts",
    "block_parts",
    "block_rows",
    "dask_leaf_counts",
    "dask_parts",
    "dask_tree_inputs",
    "merge_sparse_counts",
    "validation_pass",
]


def block_rows(block, *, n_features):
    """One block checked on its worker (2-D, finite, ``n_features`` columns):
    its number of rows."""
    block = check_array(block, dtype=np.float64, ensure_min_samples=0)
    if block.shape[1] != n_features:
        raise ValueError(
            f"a block of X has {block.shape[1]} columns, expected {n_features}."
        )
    return block.shape[0]


def _add(*parts):
    return sum(parts)


def validation_pass(rows, n, n_features):
    """Check every block of the dask array ``rows`` on the workers: raises the
    first block's ``ValueError`` (NaN, infinity, a label not in ``classes``,
    a wrong shape). Nothing but the count of checked rows comes back."""
    checked = reduce_rows(
        rows, functools.partial(block_rows, n_features=n_features), _add
    )
    if int(checked) != n:
        raise ValueError(f"the blocks of X hold {int(checked)} rows, expected {n}.")


def dask_tree_inputs(estimator, X, y):
    """:func:`skdp._trees.validated_fit_inputs` for dask ``X`` and ``y``.

    Returns ``(rows, n, classes, lower, upper)``: ``rows`` the dask array
    ``[X | class code]`` in whole-row blocks, validated by a full pass on the
    workers (nothing is recorded or drawn here).
    """
    import dask.array as da

    from skdp.utils import check_bounds

    n, d, blocks = dask_shape(estimator, X)
    y = dask_labels(y, n)
    name = type(estimator).__name__
    if estimator.bounds_X is None or estimator.classes is None:
        raise ValueError(
            f"{name} on dask input needs declared bounds_X and classes: reading "
            "them off the data would leak them."
        )
    classes = resolve_classes(estimator.classes, np.zeros(0), True)
    lower, upper = check_bounds(
        estimator.bounds_X,
        d,
        name="bounds_X",
        feature_names=getattr(estimator, "feature_names_in_", None),
    )
    codes = y.map_blocks(
        functools.partial(block_codes, classes=classes), dtype=np.float64
    )
    rows = da.concatenate([blocks, codes[:, None]], axis=1)  # dask aligns the rows
    validation_pass(rows, n, d + 1)
    return rows, n, classes, lower, upper


def block_parts(positions, *, entropy, n_parts):
    """The part (tree) of each row of one block, from the block's own stream.

    ``positions`` are the rows' indices in the whole array. The block's
    generator is ``SeedSequence(entropy, spawn_key=(first position,))``: one
    independent stream per block, a function of the seed and of the public
    block layout only. The block's rows get the labels ``position mod
    n_parts`` (so the parts have the sizes of ``np.array_split(range(n),
    n_parts)``) in an order drawn from that stream.
    """
    positions = np.asarray(positions)
    if positions.size == 0:
        return np.zeros(0)
    seed = np.random.SeedSequence(entropy, spawn_key=(int(positions[0]),))
    rng = np.random.default_rng(seed)
    return rng.permutation(positions % n_parts).astype(np.float64)


def dask_parts(chunks, entropy, n_parts):
    """The part of every row, a dask array in blocks of ``chunks`` (lazy)."""
    import dask.array as da

    n = int(sum(chunks))
    positions = da.arange(n, chunks=(tuple(chunks),), dtype=np.int64)
    return positions.map_blocks(
        functools.partial(block_parts, entropy=entropy, n_parts=n_parts),
        dtype=np.float64,
    )


def block_leaf_counts(block, *, lower, upper, structures, n_classes):
    """The (tree, leaf, class) counts of one block of ``[X | code (| part)]``
    rows (a last column of parts only with more than one structure), sparse:
    ``(flat cell indices, counts)``, both int64. ``X`` is clipped to the box
    first, as in memory."""
    block = np.asarray(block, dtype=np.float64)
    d = lower.size
    X = np.clip(block[:, :d], lower, upper)
    codes = block[:, d].astype(np.intp)
    parts = block[:, d + 1].astype(np.intp) if len(structures) > 1 else None
    n_leaves = structures[0][0].size + 1
    flat = []
    for t, (feature, threshold) in enumerate(structures):
        rows = slice(None) if parts is None else parts == t
        leaves = apply_tree(X[rows], feature, threshold)
        flat.append((t * n_leaves + leaves) * n_classes + codes[rows])
    keys, counts = np.unique(np.concatenate(flat), return_counts=True)
    return keys.astype(np.int64), counts.astype(np.int64)


def merge_sparse_counts(*parts):
    """The sum of sparse count tables (exact: integers)."""
    keys = np.concatenate([p[0] for p in parts])
    counts = np.concatenate([p[1] for p in parts])
    cells, where = np.unique(keys, return_inverse=True)
    total = np.zeros(cells.size, dtype=np.int64)
    np.add.at(total, where, counts)
    return cells, total


def dask_leaf_counts(rows, parts, structures, lower, upper, n_classes):
    """The exact count tables, shape ``(n_trees, n_leaves, n_classes)`` int64,
    of the validated dask ``rows`` (``[X | code]``), reduced on the workers;
    ``parts`` (a dask array of each row's tree) when there is more than one
    structure."""
    import dask.array as da

    if parts is not None:
        rows = da.concatenate([rows, parts[:, None]], axis=1)
    reduce_block = functools.partial(
        block_leaf_counts,
        lower=lower,
        upper=upper,
        structures=structures,
        n_classes=n_classes,
    )
    cells, counts = reduce_rows(rows, reduce_block, merge_sparse_counts)
    n_leaves = structures[0][0].size + 1
    tables = np.zeros(len(structures) * n_leaves * n_classes, dtype=np.int64)
    tables[cells] = counts
    return tables.reshape(len(structures), n_leaves, n_classes)
