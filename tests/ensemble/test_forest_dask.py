"""Private trees and forests on dask input, counted on a real 2-worker cluster.

Noise is made reproducible by skdp's explicit opt-in (``config_context(
reproducible_noise=True)`` below; the suite's conftest sets it too). The
statistics are integer count tables, summed over the blocks exactly, so every
comparison here is bit for bit: the tree equals its in-memory fit (the same
draws in the same order); the forest equals the in-memory release *given the
same parts*, which the test rebuilds from the draws the forest documents (the
parts' seed, the ``T`` structures, then the ``T`` noise tables).
"""

import numpy as np
import pytest

import skdp._trees_dask as trees_dask
from skdp._discrete_laplace import integer_laplace_noise
from skdp._trees import (
    apply_tree,
    leaf_class_counts,
    leaf_sensitivity,
    random_structure,
)
from skdp.accounting import PrivacyBudget, track_budget
from skdp.ensemble import PrivateRandomForestClassifier
from skdp.exceptions import BudgetExceededError
from skdp.tree import PrivateDecisionTreeClassifier
from skdp.utils import noise_generator

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

N, CHUNK, DEPTH, T = 3000, 450, 4, 5
LOWER, UPPER = np.array([0.0, -2.0]), np.array([4.0, 6.0])
CLASSES = ["no", "yes"]


@pytest.fixture(autouse=True)
def _time_limit(time_limit):
    """Every test here is bounded in time (tests/dask_cluster.py)."""


def _data(seed=0):
    """Two classes; some rows outside the declared box (clipped by the fit)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(LOWER - 0.5, UPPER + 0.5, (N, 2))
    y = np.where(X[:, 0] / 4 + (X[:, 1] + 2) / 8 > 1, "yes", "no")
    return X, y


def _dask(X, y, y_chunk=CHUNK):
    return da.from_array(X, chunks=(CHUNK, 2)), da.from_array(y, chunks=y_chunk)


def _kw(**extra):
    kw = dict(epsilon=1.0, bounds_X=(LOWER, UPPER), classes=CLASSES, max_depth=DEPTH)
    return kw | extra


def _exact_tables(X, codes, parts, structures):
    """The in-memory count table of each tree on its part of the rows."""
    X = np.clip(X, LOWER, UPPER)
    return np.stack(
        [
            leaf_class_counts(
                apply_tree(X[parts == t], feature, threshold),
                codes[parts == t],
                2**DEPTH,
                len(CLASSES),
            )
            for t, (feature, threshold) in enumerate(structures)
        ]
    )


# --- (a) the dask fit equals the in-memory fit --------------------------------------


@pytest.mark.parametrize("epsilon", [1.0, np.inf])
def test_dask_tree_equals_in_memory_tree_bit_for_bit(client, epsilon):
    X, y = _data()
    kw = _kw(random_state=3) | {"epsilon": epsilon}
    ref = PrivateDecisionTreeClassifier(**kw).fit(X, y)
    with track_budget() as tracker:
        model = PrivateDecisionTreeClassifier(**kw).fit(*_dask(X, y))
    assert len(tracker.spends) == 1
    np.testing.assert_array_equal(model.feature_, ref.feature_)
    np.testing.assert_array_equal(model.threshold_, ref.threshold_)
    np.testing.assert_array_equal(model.leaf_counts_, ref.leaf_counts_)
    np.testing.assert_array_equal(model.class_prior_, ref.class_prior_)
    assert model.privacy_spent_ == ref.privacy_spent_
    np.testing.assert_array_equal(model.predict_proba(X), ref.predict_proba(X))
    if epsilon == np.inf:  # the exact table counts every row once
        assert model.leaf_counts_.sum() == N


@pytest.mark.parametrize("epsilon", [1.0, np.inf])
def test_dask_forest_equals_in_memory_release_given_the_parts(client, epsilon):
    X, y = _data(seed=1)
    seed = 11
    # y in other blocks than X: the rows are cut at every boundary of either
    dX, dy = _dask(X, y, y_chunk=700)
    forest = PrivateRandomForestClassifier(
        T, **_kw(random_state=seed) | {"epsilon": epsilon}
    ).fit(dX, dy)
    # the documented draws, replayed from the same seed
    rng = noise_generator(seed)
    entropy = [int(v) for v in rng.integers(0, 2**63, size=2)]
    structures = [random_structure(LOWER, UPPER, DEPTH, rng) for _ in range(T)]
    for tree, (feature, threshold) in zip(forest.estimators_, structures, strict=True):
        np.testing.assert_array_equal(tree.feature_, feature)
        np.testing.assert_array_equal(tree.threshold_, threshold)
    boundaries = sorted(set(range(0, N, CHUNK)) | set(range(0, N, 700)) | {N})
    chunks = tuple(np.diff(boundaries))
    parts = trees_dask.dask_parts(chunks, entropy, T).compute().astype(np.intp)
    codes = np.searchsorted(CLASSES, y)
    exact = _exact_tables(X, codes, parts, structures)
    for tree, table in zip(forest.estimators_, exact, strict=True):
        noise = 0
        if epsilon != np.inf:
            noise = integer_laplace_noise(table.shape, epsilon, leaf_sensitivity(), rng)
        np.testing.assert_array_equal(tree.leaf_counts_, table + noise)
    # the parts: disjoint, covering, of the in-memory sizes, and every block
    # sends (nearly) 1/T of its rows to every tree
    sizes = np.bincount(parts, minlength=T)
    np.testing.assert_array_equal(
        sizes, [len(p) for p in np.array_split(np.arange(N), T)]
    )
    assert exact.sum() == N
    for start, stop in zip(boundaries[:-1], boundaries[1:], strict=True):
        per_tree = np.bincount(parts[start:stop], minlength=T)
        assert per_tree.max() - per_tree.min() <= 1
    # not the identity order: the parts are shuffled within each block
    assert not np.array_equal(parts, np.arange(N) % T)


def test_parts_do_not_depend_on_the_data(client):
    X, y = _data(seed=2)
    X2 = np.random.default_rng(5).uniform(LOWER, UPPER, (N, 2))
    tables = []
    for data in (X, X2):
        forest = PrivateRandomForestClassifier(
            T, **_kw(random_state=8) | {"epsilon": np.inf}
        ).fit(*_dask(data, y))
        tables.append([int(t.leaf_counts_.sum()) for t in forest.estimators_])
        labels = np.stack([t.leaf_counts_.sum(axis=0) for t in forest.estimators_])
        tables.append(labels.tolist())
    # same seed and blocks, other X: every tree counts the same rows (same
    # sizes, same labels per tree, y being the same)
    assert tables[0] == tables[2] and tables[1] == tables[3]


@pytest.mark.filterwarnings("ignore:Dask currently has limited support:UserWarning")
def test_dataframe_and_series_input(client):
    pd = pytest.importorskip("pandas")
    X, y = _data(seed=3)
    frame = pd.DataFrame(X, columns=["a", "b"])
    kw = _kw(random_state=4) | {"bounds_X": {"a": (0, 4), "b": (-2, 6)}}
    ref = PrivateDecisionTreeClassifier(**kw).fit(frame, y)
    model = PrivateDecisionTreeClassifier(**kw).fit(
        dd.from_pandas(frame, npartitions=4),
        dd.from_pandas(pd.Series(y), npartitions=3),
    )
    np.testing.assert_array_equal(model.feature_names_in_, ["a", "b"])
    np.testing.assert_array_equal(model.leaf_counts_, ref.leaf_counts_)
    forest = PrivateRandomForestClassifier(T, **kw).fit(
        dd.from_pandas(frame, npartitions=4),
        dd.from_pandas(pd.Series(y), npartitions=3),
    )
    np.testing.assert_array_equal(forest.estimators_[0].feature_names_in_, ["a", "b"])
    assert forest.score(frame, y) > 0.7


# --- (b) per-block statistics -------------------------------------------------------


def test_block_counts_sum_to_the_in_memory_tables(client):
    X, y = _data(seed=4)
    codes = np.searchsorted(CLASSES, y)
    rng = np.random.default_rng(0)
    structures = [random_structure(LOWER, UPPER, DEPTH, rng) for _ in range(T)]
    parts = np.concatenate(
        [
            trees_dask.block_parts(
                np.arange(i, min(i + CHUNK, N)), entropy=7, n_parts=T
            )
            for i in range(0, N, CHUNK)
        ]
    ).astype(np.intp)
    rows = np.column_stack([X, codes, parts])
    blocks = [
        trees_dask.block_leaf_counts(
            rows[i : i + CHUNK],
            lower=LOWER,
            upper=UPPER,
            structures=structures,
            n_classes=2,
        )  # fmt: skip
        for i in range(0, N, CHUNK)
    ]
    cells, counts = trees_dask.merge_sparse_counts(*blocks)
    assert counts.dtype == np.int64
    table = np.zeros(T * 2**DEPTH * 2, dtype=np.int64)
    table[cells] = counts
    exact = _exact_tables(X, codes, parts, structures)
    np.testing.assert_array_equal(table.reshape(exact.shape), exact)
    # the same on the cluster
    dX, dy = _dask(X, y)
    drows = da.concatenate(
        [dX, da.from_array(codes.astype(float), chunks=CHUNK)[:, None]], axis=1
    )
    dparts = trees_dask.dask_parts(drows.chunks[0], 7, T)
    got = trees_dask.dask_leaf_counts(drows, dparts, structures, LOWER, UPPER, 2)
    np.testing.assert_array_equal(got, exact)


# --- (c) validation before the spend ---------------------------------------------


@pytest.mark.parametrize(
    "cls", [PrivateDecisionTreeClassifier, PrivateRandomForestClassifier]
)
@pytest.mark.parametrize("where", ["nan-X", "inf-X", "unknown-label"])
def test_bad_block_raises_before_any_spend(client, monkeypatch, cls, where):
    import skdp._trees

    drawn = []
    noise = skdp._trees.integer_laplace_noise
    monkeypatch.setattr(
        skdp._trees,
        "integer_laplace_noise",
        lambda *a: drawn.append(1) or noise(*a),
    )
    X, y = _data()
    y = y.astype(object)
    match = {"nan-X": "NaN", "inf-X": "infinity", "unknown-label": "not in classes"}
    if where == "nan-X":
        X[N - 3, 0] = np.nan  # in the last block, found on a worker
    elif where == "inf-X":
        X[N - 3, 1] = np.inf
    else:
        y[N - 3] = "maybe"
    with track_budget() as tracker:
        good = cls(**_kw(epsilon=0.5)).fit(*_dask(*_data()))
        before = list(tracker.spends)
        drawn.clear()
        model = cls(**_kw())
        with pytest.raises(ValueError, match=match[where]):
            model.fit(*_dask(X, y))
    assert before == [(cls.__name__, PrivacyBudget(0.5, 0.0))]
    assert tracker.spends == before
    assert good.privacy_spent_ == PrivacyBudget(0.5, 0.0)
    assert not hasattr(model, "privacy_spent_")
    assert not [a for a in vars(model) if a.endswith("_") and not a.startswith("__")]
    assert drawn == []


@pytest.mark.parametrize(
    "cls", [PrivateDecisionTreeClassifier, PrivateRandomForestClassifier]
)
def test_refused_spend_runs_only_the_validation_pass(client, monkeypatch, cls):
    passes = []
    reduce_rows = trees_dask.reduce_rows

    def spy(X, *args, **kw):
        passes.append(X)
        return reduce_rows(X, *args, **kw)

    monkeypatch.setattr(trees_dask, "reduce_rows", spy)
    model = cls(**_kw())
    with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
        model.fit(*_dask(*_data()))
    assert len(passes) == 1  # validated, then refused: nothing counted
    assert not hasattr(model, "privacy_spent_")


def test_dask_refusals(client):
    X, y = _data()
    dX, dy = _dask(X, y)
    with track_budget() as tracker:
        with pytest.raises(ValueError, match="declared bounds_X and classes"):
            PrivateRandomForestClassifier(classes=CLASSES).fit(dX, dy)
        with pytest.raises(ValueError, match="declared bounds_X and classes"):
            PrivateDecisionTreeClassifier(bounds_X=(LOWER, UPPER)).fit(dX, dy)
        with pytest.raises(TypeError, match="y must be a dask"):
            PrivateRandomForestClassifier(**_kw()).fit(dX, y)
        with pytest.raises(ValueError, match="different numbers of rows"):
            PrivateRandomForestClassifier(**_kw()).fit(dX, dy[:-1])
    assert tracker.spends == []


# --- (d) the recorded spend ----------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.7, 2.0])
def test_recorded_spend_equals_the_guarantee(client, epsilon):
    X, y = _data()
    with track_budget() as tracker:
        forest = PrivateRandomForestClassifier(
            T, **_kw() | {"epsilon": epsilon, "max_depth": None}
        ).fit(*_dask(X, y))
    # parallel composition: one spend of epsilon for the T disjoint parts
    assert tracker.spends == [
        ("PrivateRandomForestClassifier", PrivacyBudget(epsilon, 0.0))
    ]
    assert tracker.total == forest.privacy_spent_ == PrivacyBudget(epsilon, 0.0)
    assert len(forest.estimators_) == T
    assert all(
        t.privacy_spent_ == PrivacyBudget(epsilon, 0.0) for t in forest.estimators_
    )


# --- (e) nothing of the data reaches the client ---------------------------------


@pytest.mark.parametrize(
    "cls", [PrivateDecisionTreeClassifier, PrivateRandomForestClassifier]
)
def test_tables_are_reduced_on_the_workers(client, monkeypatch, no_client_arrays, cls):
    passes = []
    reduce_rows = trees_dask.reduce_rows

    def spy(X, reduce_block, merge, **kw):
        out = reduce_rows(X, reduce_block, merge, **kw)
        passes.append((X, out))
        return out

    monkeypatch.setattr(trees_dask, "reduce_rows", spy)
    X, y = _data()
    with distributed.get_task_stream(client) as stream:
        model = cls(**_kw()).fit(*_dask(X, y))
    # a validation pass and a count pass, both on dask input
    assert len(passes) == 2
    assert all(isinstance(X, da.Array) for X, _ in passes)
    assert passes[0][1] == N
    # the count pass returned the touched cells only: at most trees x leaves x
    # classes integers, whatever N
    cells, counts = passes[1][1]
    trees = len(getattr(model, "estimators_", [model]))
    assert cells.size == counts.size <= trees * 2**DEPTH * 2
    assert counts.sum() == N
    workers = set(client.scheduler_info()["workers"])
    reduced = [t for t in stream.data if "_reduce_group" in str(t["key"])]
    assert len(reduced) >= 2
    assert {t["worker"] for t in reduced} <= workers
