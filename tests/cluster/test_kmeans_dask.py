"""PrivateKMeans on dask input, reduced on a real 2-worker cluster.

Noise is made reproducible by skdp's explicit opt-in (``config_context(
reproducible_noise=True)`` below; the suite's conftest sets it too), so the
dask and in-memory fits draw the same noise from the same ``random_state``.
Their statistics then differ only by the order of the float sums:

* the counts are integers: equal bit for bit;
* a sum of ``m <= N`` mapped values ``|w_j| <= 1`` is within ``gamma_m m`` of
  the exact sum in any order (Higham, *Accuracy and Stability of Numerical
  Algorithms*, 2nd ed., eq. (4.4), ``gamma_m = m u / (1 - m u)``), so the two
  sums are at most ``2 gamma_N N`` apart (:func:`_sum_order`); the Laplace
  mechanism rounds each to its lattice first, which adds at most one
  lattice step ``g``;
* a centre ``clip(S~ / n~, -1, 1)`` then moves by at most that over its noisy
  count ``n~``, times the half-width in the user's units.

This holds iteration after iteration as long as every row keeps its cluster,
which the tests assert (labels and released counts equal): no row of the
continuous data lies within ~1e-9 of a boundary between two clusters.
"""

import math

import numpy as np
import pytest

from skdp.accounting import PrivacyBudget, track_budget
from skdp.cluster import PrivateKMeans, _kmeans_dask
from skdp.cluster._kmeans import (
    _assign,
    coreset_depth,
    kmeans_count_weight,
    kmeans_iterations,
    kmeans_statistics,
)
from skdp.exceptions import BudgetExceededError

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

U = np.finfo(np.float64).eps / 2  # unit roundoff
N, D, CHUNK, K = 3000, 3, 450, 3
BLOCKS = math.ceil(N / CHUNK)
LOWER, UPPER = 0.0, 1.0
HALF = (UPPER - LOWER) / 2
CENTRES = np.array([[0.2, 0.3, 0.5], [0.8, 0.7, 0.2], [0.3, 0.8, 0.8]])


@pytest.fixture(autouse=True)
def _time_limit(time_limit):
    """Every test here is bounded in time (tests/dask_cluster.py)."""


def _data(seed=0):
    """Three blobs; some rows fall outside [0, 1] (clipped by the fit)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, N)
    return CENTRES[y] + rng.normal(0, 0.08, (N, D))


def _dask(X):
    return da.from_array(X, chunks=(CHUNK, D))


def _sum_order(n, term_bound):
    """How far two float sums of the same ``n`` terms (each at most
    ``term_bound`` in magnitude) added in different orders can be apart
    (Higham (4.4): each within ``gamma_n n term_bound`` of the exact sum)."""
    gamma = n * U / (1 - n * U)
    return 2 * gamma * n * term_bound


def _unit(X):
    centre = (LOWER + UPPER) / 2
    return (np.clip(X, LOWER, UPPER) - centre) / HALF


@pytest.fixture
def releases(monkeypatch):
    """Every ``(statistic, mechanism, released vector)`` of the fits made."""
    log = []
    release = PrivateKMeans._release

    def spy(self, stats, mech, rng):
        out = release(self, stats, mech, rng)
        log.append((stats.copy(), mech, np.array(out, copy=True)))
        return out

    monkeypatch.setattr(PrivateKMeans, "_release", spy)
    return log


# --- (a) the dask fit equals the in-memory fit ------------------------------------


def _assert_same_fit(ref, model, ref_log, dask_log, epsilon):
    """The releases, centres and labels of two fits agree within the bounds
    of the module docstring."""
    assert model.n_iter_ == ref.n_iter_ and model.coreset_depth_ == ref.coreset_depth_
    assert len(dask_log) == len(ref_log) >= 2  # the coreset and the iterations
    mu = kmeans_count_weight(D)
    tol_sum = _sum_order(N, 1.0)
    counts_seen = []
    for (s_ref, mech, out_ref), (s_dask, _, out_dask) in zip(
        ref_log, dask_log, strict=True
    ):
        cells = s_ref.size // (1 + D)
        # the counts are integers and the noise the same: bit for bit
        np.testing.assert_array_equal(s_dask[:cells], s_ref[:cells])
        np.testing.assert_array_equal(out_dask[:cells], out_ref[:cells])
        # the sums: the order of summation, then one lattice step at most
        g = 0.0 if mech is None else mech.granularity
        np.testing.assert_allclose(s_dask[cells:], s_ref[cells:], rtol=0, atol=tol_sum)
        np.testing.assert_allclose(
            out_dask[cells:], out_ref[cells:], rtol=0, atol=tol_sum + g
        )
        counts_seen.append(out_ref[:cells] / mu)
    # a Lloyd centre is S~ / n~ of a cluster with n~ at least its noise
    # level: the smallest such noisy count divides the sums' difference
    lloyd = np.concatenate(counts_seen[1:])
    c_min = lloyd[lloyd >= 1].min()
    assert c_min > 100
    g = 0.0 if math.isinf(epsilon) else dask_log[-1][1].granularity
    tol_centre = HALF * ((tol_sum + g) / c_min + 4 * U)
    np.testing.assert_allclose(
        model.cluster_centers_, ref.cluster_centers_, rtol=0, atol=tol_centre
    )
    # the start: weighted k-means++ on the coreset points (noisy means of the
    # cells whose noisy count exceeds the noise level); with the same draws
    # and assignments its centres are weighted means of those points, which
    # move by at most the points' bound (plus its own roundings)
    coreset = counts_seen[0]
    s = 0.0 if math.isinf(epsilon) else math.sqrt(dask_log[0][1].variance) / mu
    c_start = coreset[coreset > s].min()
    tol_start = HALF * ((tol_sum + g) / c_start + 8 * U)
    np.testing.assert_allclose(
        model.initial_centers_, ref.initial_centers_, rtol=0, atol=tol_start
    )
    # the tolerances are far below what the data separate
    assert tol_centre < 1e-6 and tol_start < 1e-6
    # labels_: a lazy dask array, the in-memory labels once computed
    assert isinstance(model.labels_, da.Array)
    np.testing.assert_array_equal(model.labels_.compute(), ref.labels_)
    assert model.privacy_spent_ == ref.privacy_spent_


@pytest.mark.parametrize("epsilon", [1.0, np.inf])
def test_dask_fit_equals_in_memory_fit(client, releases, epsilon):
    X = _data()
    kw = dict(epsilon=epsilon, bounds_X=(LOWER, UPPER), random_state=4)
    ref = PrivateKMeans(K, **kw).fit(X)
    n_ref = len(releases)
    model = PrivateKMeans(K, **kw).fit(_dask(X))
    _assert_same_fit(ref, model, releases[:n_ref], releases[n_ref:], epsilon)


@pytest.mark.filterwarnings("ignore:Dask currently has limited support:UserWarning")
def test_dataframe_input_names_features_and_equals_in_memory(client, releases):
    pd = pytest.importorskip("pandas")
    names = ["a", "b", "c"]
    frame = pd.DataFrame(_data(seed=1), columns=names)
    kw = dict(
        epsilon=2.0,
        bounds_X={"a": (0, 1), "b": (0, 1), "c": (0, 1)},
        n_iter=3,
        random_state=2,
    )
    ref = PrivateKMeans(K, **kw).fit(frame)
    n_ref = len(releases)
    model = PrivateKMeans(K, **kw).fit(dd.from_pandas(frame, npartitions=5))
    np.testing.assert_array_equal(model.feature_names_in_, names)
    _assert_same_fit(ref, model, releases[:n_ref], releases[n_ref:], 2.0)
    np.testing.assert_array_equal(model.predict(frame[:50]), ref.predict(frame[:50]))


# --- (b) per-block statistics ---------------------------------------------------


def test_block_statistics_sum_to_the_in_memory_statistics(client):
    X = _data(seed=2)
    lower, upper = np.full(D, LOWER), np.full(D, UPPER)
    active, scale = np.ones(D, bool), np.full(D, HALF)
    W = _unit(X)
    rng = np.random.default_rng(0)
    centres = rng.uniform(-1, 1, (K, D))
    previous = rng.uniform(-1, 1, (K, D))
    from skdp._trees import apply_tree, random_structure

    feature, threshold = random_structure(-np.ones(D), np.ones(D), 4, rng)
    cases = [
        (16, ("tree", feature, threshold), None, apply_tree(W, feature, threshold)),
        (K, ("centres", centres, None), previous, _assign(W * scale, centres * scale)),
    ]
    for cells, partition, prev, labels in cases:
        reference = kmeans_statistics(W, labels, cells, 1.0)
        kw = dict(
            lower=lower, upper=upper, active=active, scale=scale,
            n_cells=cells, partition=partition, previous=prev,
        )  # fmt: skip
        parts = [
            _kmeans_dask.block_cell_stats(X[i : i + CHUNK], **kw)
            for i in range(0, N, CHUNK)
        ]
        assert len(parts) == BLOCKS
        counts, sums, changed = _kmeans_dask.merge_cell_stats(*parts)
        assert counts.dtype == np.int64
        np.testing.assert_array_equal(counts, reference[:cells])
        np.testing.assert_allclose(
            sums.ravel(), reference[cells:], rtol=0, atol=_sum_order(N, 1.0)
        )
        # the same on the cluster, and the same count of changed rows
        rows = _kmeans_dask.DaskRows(_dask(X), lower, upper, active, scale)
        got = rows.statistics(cells, partition, prev)
        np.testing.assert_array_equal(got[0], counts)
        np.testing.assert_allclose(got[1], sums, rtol=0, atol=_sum_order(N, 1.0))
        expected = 0
        if prev is not None:
            expected = int(np.sum(_assign(W * scale, prev * scale) != labels))
            assert expected > 0
        assert changed == got[2] == expected


# --- (c) validation before the spend ----------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_bad_block_raises_before_any_spend(client, releases, bad):
    X = _data()
    X[N - 5, 1] = bad  # in the last block, found on a worker
    with track_budget() as tracker:
        kept = PrivateKMeans(K, epsilon=0.5, bounds_X=(0, 1), random_state=0)
        kept.fit(_dask(_data()))
        before = list(tracker.spends)
        model = PrivateKMeans(K, epsilon=1.0, bounds_X=(0, 1), random_state=0)
        with pytest.raises(ValueError, match="NaN|infinity"):
            model.fit(_dask(X))
    assert tracker.spends == before == [("PrivateKMeans", PrivacyBudget(0.5, 0.0))]
    assert not hasattr(model, "privacy_spent_")
    assert not [a for a in vars(model) if a.endswith("_") and not a.startswith("__")]
    assert len(releases) == kept.n_iter_ + 1  # the failed fit released nothing


def test_refused_spend_runs_only_the_validation_pass(client, releases, monkeypatch):
    passes = []
    reduce_rows = _kmeans_dask.reduce_rows

    def spy(X, *args, **kw):
        passes.append(X)
        return reduce_rows(X, *args, **kw)

    monkeypatch.setattr(_kmeans_dask, "reduce_rows", spy)
    import skdp._trees_dask

    monkeypatch.setattr(skdp._trees_dask, "reduce_rows", spy)
    model = PrivateKMeans(K, epsilon=1.0, bounds_X=(0, 1), random_state=0)
    with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
        model.fit(_dask(_data()))
    assert len(passes) == 1  # the validation pass, then the refusal
    assert releases == []
    assert not hasattr(model, "privacy_spent_")


def test_dask_refusals(client):
    X = _dask(_data())
    with track_budget() as tracker:
        with pytest.raises(ValueError, match="declared bounds_X"):
            PrivateKMeans(K, epsilon=1.0).fit(X)
        with pytest.raises(ValueError, match="n_samples=2 should be >= n_clusters=3"):
            PrivateKMeans(K, bounds_X=(0, 1)).fit(X[:2])
        with pytest.raises(ValueError, match="unknown size|compute_chunk_sizes"):
            PrivateKMeans(K, bounds_X=(0, 1)).fit(X[X[:, 0] > 0.5])
    assert tracker.spends == []


# --- (d) the recorded spend ----------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.7, 3.0])
def test_recorded_spend_equals_the_guarantee(client, releases, epsilon):
    with track_budget() as tracker:
        model = PrivateKMeans(K, epsilon=epsilon, bounds_X=(0, 1)).fit(_dask(_data()))
    assert tracker.spends == [("PrivateKMeans", PrivacyBudget(epsilon, 0.0))]
    assert tracker.total == model.privacy_spent_ == PrivacyBudget(epsilon, 0.0)
    T = kmeans_iterations(N, D, K, epsilon)
    assert model.n_iter_ == T
    assert model.coreset_depth_ == coreset_depth(N, D, epsilon / (T + 1))
    # T + 1 releases at epsilon / (T + 1): epsilon in all
    assert len(releases) == T + 1
    assert math.fsum(mech.epsilon for _, mech, _ in releases) == pytest.approx(
        epsilon, rel=1e-14
    )


# --- (e) nothing of the data reaches the client ----------------------------------


def test_statistics_are_reduced_on_the_workers(client, monkeypatch, no_client_arrays):
    passes = []
    reduce_rows = _kmeans_dask.reduce_rows

    def spy(X, reduce_block, merge, **kw):
        out = reduce_rows(X, reduce_block, merge, **kw)
        passes.append((X, out))
        return out

    monkeypatch.setattr(_kmeans_dask, "reduce_rows", spy)
    import skdp._trees_dask

    monkeypatch.setattr(skdp._trees_dask, "reduce_rows", spy)
    T = 3
    with distributed.get_task_stream(client) as stream:
        model = PrivateKMeans(K, epsilon=1.0, bounds_X=(0, 1), n_iter=T).fit(
            _dask(_data())
        )
    # one validation pass, the coreset's and T Lloyd passes, all on dask input
    assert len(passes) == 1 + 1 + T
    assert all(isinstance(X, da.Array) for X, _ in passes)
    # what came back: a row count, then tables of cells x (1 + d) numbers
    assert passes[0][1] == N
    cells = 2**model.coreset_depth_
    shapes = [counts.shape for _, (counts, _, _) in passes[1:]]
    assert shapes == [(cells,)] + [(K,)] * T
    for _, (counts, sums, changed) in passes[1:]:
        # every row counted once; no convergence count when private
        assert counts.sum() == N and sums.shape == (counts.size, D) and changed == 0
    # the blocks were reduced in tasks the workers ran
    workers = set(client.scheduler_info()["workers"])
    reduced = [t for t in stream.data if "_reduce_group" in str(t["key"])]
    assert len(reduced) >= len(passes)
    assert {t["worker"] for t in reduced} <= workers
