"""Histograms and count_nonzero of dask input: counted on the workers, equal
to the in-memory release (counts are integers: exact in any order, so with the
same seed the released values are equal, not close), a bad block fails before
any spend, and an undeclared range is refused."""

import numpy as np
import pytest

from skdp import tools
from skdp.accounting import track_budget

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

N, CHUNK = 3000, 450
RANGE = (0.0, 10.0)


@pytest.fixture(autouse=True)
def _time_limit(time_limit):
    """Every test here is bounded (tests/dask_cluster.py)."""


def _data():
    X = np.random.default_rng(4).uniform(-1, 11, (N, 2))  # some outside RANGE
    X[::7, 1] = 0.0  # zeros for count_nonzero
    return X


@pytest.mark.parametrize("epsilon", [1.0, np.inf])
def test_histogram_dask_equals_in_memory(client, no_client_arrays, epsilon):
    X = _data()
    kw = dict(bins=7, range=RANGE, epsilon=epsilon, random_state=5)
    ref, ref_edges = tools.histogram(X, **kw)
    with track_budget() as tracker:
        got, edges = tools.histogram(da.from_array(X, chunks=(CHUNK, 2)), **kw)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(edges, ref_edges)
    assert len(tracker.spends) == 1  # E = 2 values per record, as in memory
    if np.isinf(epsilon):  # numpy's own counts of the values inside the bins
        np.testing.assert_array_equal(got, np.histogram(X, 7, RANGE)[0])


def test_histogramdd_and_2d_dask_equal_in_memory(client, no_client_arrays):
    X = _data()
    ranges = [RANGE, (-1.0, 11.0)]
    kw = dict(bins=(3, 4), range=ranges, epsilon=2.0, random_state=6)
    ref, ref_edges = tools.histogramdd(X, **kw)
    got, edges = tools.histogramdd(da.from_array(X, chunks=(CHUNK, 2)), **kw)
    np.testing.assert_array_equal(got, ref)
    for e, r in zip(edges, ref_edges, strict=True):
        np.testing.assert_array_equal(e, r)
    dx = da.from_array(X[:, 0], chunks=CHUNK)
    dy = da.from_array(X[:, 1], chunks=CHUNK * 2)  # other blocks: rechunked
    got2, xe, ye = tools.histogram2d(dx, dy, **kw)
    ref2, _, _ = tools.histogram2d(X[:, 0], X[:, 1], **kw)
    np.testing.assert_array_equal(got2, ref2)


@pytest.mark.parametrize("axis", [None, 0])
def test_count_nonzero_dask_equals_in_memory(client, no_client_arrays, axis):
    X = _data()
    kw = dict(epsilon=1.0, axis=axis, random_state=8)
    ref = tools.count_nonzero(X, **kw)
    got = tools.count_nonzero(da.from_array(X, chunks=(CHUNK, 2)), **kw)
    # the released count is an integer: rint of a noisy sum whose float order
    # differs by at most ~N u; equal unless a sum sits on a half-integer
    np.testing.assert_array_equal(got, ref)
    exact = tools.count_nonzero(
        da.from_array(X, chunks=(CHUNK, 2)), epsilon=np.inf, axis=axis
    )
    np.testing.assert_array_equal(exact, np.count_nonzero(X, axis=axis))


@pytest.mark.parametrize(
    "call",
    [
        lambda d: tools.histogram(d, bins=4, range=RANGE),
        lambda d: tools.histogramdd(d, bins=2, range=[RANGE, RANGE]),
        lambda d: tools.count_nonzero(d),
    ],
)
def test_a_nan_block_fails_before_any_spend(client, call):
    X = _data()
    X[2500, 1] = np.nan  # in the sixth block, found on a worker
    with track_budget() as tracker, pytest.raises(ValueError, match="finite"):
        call(da.from_array(X, chunks=(CHUNK, 2)))
    assert tracker.spends == []


def test_an_undeclared_range_is_refused_before_any_pass(client, no_client_arrays):
    dX = da.from_array(_data(), chunks=(CHUNK, 2))
    with track_budget() as tracker:
        with pytest.raises(ValueError, match="declare range"):
            tools.histogram(dX, bins=4)
        with pytest.raises(ValueError, match="declare range"):
            tools.histogramdd(dX, bins=2)
        with pytest.raises(ValueError, match="chooses the bins from the data"):
            tools.histogram(dX, bins="auto")
        with pytest.raises(TypeError, match="compute it first for the quantiles"):
            tools.median(dX, bounds=RANGE)
    assert tracker.spends == []
    edges = np.array([0.0, 2.5, 10.0])  # explicit edges need no range
    hist, got_edges = tools.histogram(dX, bins=edges, epsilon=np.inf)
    np.testing.assert_array_equal(hist, np.histogram(_data(), edges)[0])
    np.testing.assert_array_equal(got_edges, edges)
