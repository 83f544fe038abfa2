"""FM estimators on dask collections: statistics reduced on a real 2-worker cluster."""

import tracemalloc

import numpy as np
import pytest

from skdp.accounting import track_budget
from skdp.linear_model import FMLinearRegression, FMLogisticRegression

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")


def _data(n=3000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = X @ np.linspace(-1, 1, d) + 0.1 * rng.standard_normal(n)
    return X, y


def _linear(**kw):
    params = dict(epsilon=1.0, bounds_X=(-1.0, 1.0), bounds_y=(-3.0, 3.0))
    params.update(random_state=0, **kw)
    return FMLinearRegression(**params)


def test_same_model_from_numpy_chunks_dask_and_merged_statistics(client):
    X, y = _data()
    reference = _linear().fit(X, y)
    chunks = [(X[i : i + 700], y[i : i + 700]) for i in range(0, len(X), 700)]
    from_chunks = _linear().fit_chunks(chunks)
    from_dask = _linear().fit(da.from_array(X, chunks=(450, 5)), da.from_array(y, 450))
    est = _linear()
    merged = sum(est.statistics(Xc, yc) for Xc, yc in chunks)
    from_stats = est.fit_statistics(merged)
    for model in (from_chunks, from_dask, from_stats):
        np.testing.assert_array_equal(model.coef_, reference.coef_)
        assert model.intercept_ == reference.intercept_


def test_dask_dataframe_input_and_logistic(client):
    pd = pytest.importorskip("pandas")
    X, y = _data(seed=1)
    labels = (y > 0).astype(int)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    ddf = dd.from_pandas(frame, npartitions=4)
    dy = dd.from_pandas(pd.Series(labels), npartitions=4)
    params = dict(epsilon=1.0, bounds_X=(-1.0, 1.0), classes=[0, 1], random_state=3)
    reference = FMLogisticRegression(**params).fit(X, labels)
    model = FMLogisticRegression(**params).fit(ddf, dy)
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    np.testing.assert_array_equal(model.classes_, [0, 1])


def test_one_spend_recorded_on_the_client(client):
    X, y = _data()
    with track_budget() as tracker:
        model = _linear(epsilon=0.5).fit(da.from_array(X, 1000), da.from_array(y, 1000))
    assert len(tracker.spends) == 1
    assert tracker.total.epsilon == pytest.approx(0.5)
    assert model.privacy_spent_.epsilon == pytest.approx(0.5)


def test_declared_domain_required(client):
    X, y = _data()
    dX, dy = da.from_array(X, 1000), da.from_array(y, 1000)
    with pytest.raises(ValueError, match="bounds_X"):
        FMLinearRegression(epsilon=1.0, bounds_y=(-3, 3)).fit(dX, dy)
    with pytest.raises(ValueError, match="bounds_y"):
        FMLinearRegression(epsilon=1.0, bounds_X=(-1, 1)).fit(dX, dy)


def test_client_memory_stays_far_below_the_data(client):
    n, d = 400_000, 10  # 32 MB generated on the workers
    rng = da.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(n, d), chunks=(50_000, d))
    y = X.sum(axis=1)
    tracemalloc.start()
    try:
        _linear(bounds_y=(-10.0, 10.0)).fit(X, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * d * 8 / 10, f"client peak {peak / 2**20:.1f} MiB"


@pytest.mark.parametrize("case", ["unknown chunks", "nan", "rows"])
def test_bad_dask_input_releases_nothing(client, case):
    X, y = _data()
    dX, dy = da.from_array(X, 1000), da.from_array(y, 1000)
    if case == "unknown chunks":
        keep = dX[:, 0] > 0
        dX, dy, match = dX[keep], dy[keep], "unknown size"
    elif case == "nan":
        X = X.copy()
        X[2500, 1] = np.nan
        dX, match = da.from_array(X, 1000), "NaN"
    else:
        dy, match = dy[:-1], "different numbers of rows"
    model = _linear()
    with track_budget() as tracker, pytest.raises(ValueError, match=match):
        model.fit(dX, dy)
    assert tracker.spends == []
    assert not hasattr(model, "coef_")


def test_skdp_imports_no_dask():
    import subprocess
    import sys

    code = "import sys, skdp.linear_model; print('dask' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == "False", out.stderr


def test_grid_search_on_the_cluster_records_every_spend(client):
    import joblib
    from sklearn.model_selection import GridSearchCV

    X, y = _data(n=600)
    epsilons = [0.5, 1.0]
    with joblib.parallel_backend("dask"), track_budget() as tracker:
        search = GridSearchCV(_linear(), {"epsilon": epsilons}, cv=3, n_jobs=-1)
        search.fit(X, y)
    # 3 folds x 2 epsilons on the workers, and the refit on the client
    assert len(tracker.spends) == 3 * len(epsilons) + 1
    best = search.best_params_["epsilon"]
    assert tracker.total.epsilon == pytest.approx(3 * sum(epsilons) + best)


@pytest.mark.parametrize("scheduler", ["cluster", "threads", "sync"])
def test_many_small_blocks_give_the_in_memory_model(client, scheduler):
    # 60 blocks of 1 to 4 rows (the domain resolved once for all of them)
    import dask
    from threadpoolctl import threadpool_info

    X, y = _data(n=150, d=3, seed=2)
    sizes = np.resize([1, 2, 3, 4], 60)
    dX = da.from_array(X, chunks=(tuple(sizes), 3))
    dy = da.from_array(y, chunks=(tuple(sizes),))
    reference = _linear().fit(X, y)
    blas_before = [(i["filepath"], i["num_threads"]) for i in threadpool_info()]
    if scheduler == "cluster":
        model = _linear().fit(dX, dy)
    else:
        with dask.config.set(scheduler=scheduler):
            model = _linear().fit(dX, dy)
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    assert model.intercept_ == reference.intercept_
    # the one-thread BLAS limit of the computation is lifted afterwards
    assert [(i["filepath"], i["num_threads"]) for i in threadpool_info()] == (
        blas_before
    )


def test_small_blocks_are_grouped_and_large_ones_stay_alone():
    from skdp._fm.dask_statistics import _GROUP_BLOCKS, _GROUP_ELEMENTS, _groups

    d = 4
    big = _GROUP_ELEMENTS // d  # rows of a block at the threshold
    rows = [1] * 300 + [big, big + 5, 3, 2]
    groups = _groups(rows, d)
    assert [i for g in groups for i in g] == list(range(len(rows)))  # in order
    assert max(len(g) for g in groups) == _GROUP_BLOCKS
    assert [300] in groups and [301] in groups  # large blocks: one task each
    for g in groups:
        assert len(g) == 1 or sum(rows[i] for i in g) * d <= _GROUP_ELEMENTS
