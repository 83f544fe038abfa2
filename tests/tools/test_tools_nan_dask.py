"""nansum/nanmean/nanvar/nanstd of dask input, reduced on a real 2-worker cluster.

The dask release must equal the in-memory one with the same ``random_state``
(the suite's reproducible-noise opt-in) up to the order of the float sums:
the counts of present values are integers, exact in any order, so their noisy
values are equal; the sums of ``w`` (and ``w^2``), ``|w| <= 1``, differ by at
most ``2 (m - 1) u m`` between two summation orders (Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., eq. (4.4), for each order), plus
one lattice step of the Laplace mechanism's rounding. Nothing of the data is
computed in this process, a block holding inf fails before any spend.
"""

import math

import numpy as np
import pytest

from skdp import tools
from skdp._moments import MOMENT_WEIGHT as LAM
from skdp.accounting import track_budget
from skdp.mechanisms import LaplaceMechanism
from skdp.tools._nan_moments import nan_moments_sensitivity

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

U = np.finfo(np.float64).eps / 2  # unit roundoff
N, D, CHUNK = 3000, 2, 450
BLOCKS = math.ceil(N / CHUNK)
LOWER, UPPER = 0.0, 10.0
R = (UPPER - LOWER) / 2


@pytest.fixture(autouse=True)
def _time_limit(time_limit):
    """Every test here is bounded (tests/dask_cluster.py)."""


def _data():
    rng = np.random.default_rng(21)
    X = rng.normal(5, 3, (N, D))  # some values outside (0, 10): clipped
    X[rng.uniform(size=(N, D)) < 0.2] = np.nan
    X[:CHUNK, 1] = np.nan  # a whole block without present values in column 1
    return X


def _tolerance(name, m, n_present, epsilon, squares):
    """How far the dask and in-memory results may be apart (see the module
    docstring), for outputs of ``m`` elements, ``n_present`` of them present."""
    if math.isinf(epsilon):
        # exact: the sums of <= m clipped values <= 10 in two orders; the
        # means and centred squares at once (numpy) or per block merged by
        # Chan's update (as for the plain functions' dask tests)
        top = UPPER
        if name == "nansum":
            return 2 * m * m * U * top
        tol_mean = 2 * (m + 6 * BLOCKS) * U * top
        if name == "nanmean":
            return tol_mean
        return 2 * ((m + 6 * BLOCKS + 3) * U * top**2 + tol_mean**2)
    # a record is a row of D elements for both axes; the lattice step
    # depends on the sensitivity and epsilon only
    mech = LaplaceMechanism(epsilon, nan_moments_sensitivity(D, squares))
    tol_s = 2 * m * m * U * LAM + mech.granularity  # S1~ or lambda S2~
    if name == "nansum":  # N^ c + r clip(S1~, -N^, N^), N^ equal
        return R * tol_s + 4 * U * m * UPPER
    tol_m = tol_s / n_present + 4 * U  # clip(S1~ / N^, -1, 1)
    if name == "nanmean":
        return R * tol_m
    # v = clip(S2~ / N^ - m1^2, 0, 1 - m1^2), |m1| <= 1; var = r^2 v
    return R**2 * (tol_s / (LAM * n_present) + 4 * tol_m)


@pytest.mark.parametrize("epsilon", [1.0, np.inf])
@pytest.mark.parametrize("axis", [None, 0])
@pytest.mark.parametrize("name", ["nansum", "nanmean", "nanvar", "nanstd"])
def test_dask_equals_in_memory(client, no_client_arrays, name, axis, epsilon):
    X = _data()
    func = getattr(tools, name)
    kw = dict(
        epsilon=epsilon, bounds=(LOWER, UPPER), axis=axis, keepdims=True, random_state=3
    )
    ref = func(X, **kw)
    with track_budget() as tracker:
        got = func(da.from_array(X, chunks=(CHUNK, D)), **kw)
    assert len(tracker.spends) == 1
    assert np.shape(got) == np.shape(ref)
    m = N * D if axis is None else N
    n_present = np.sum(~np.isnan(X), axis=axis).min()
    squares = name in ("nanvar", "nanstd")
    if name == "nanstd":  # compared as variances
        tol = _tolerance("nanvar", m, n_present, epsilon, squares)
        np.testing.assert_allclose(got**2, ref**2, rtol=8 * U, atol=tol)
    else:
        tol = _tolerance(name, m, n_present, epsilon, squares)
        np.testing.assert_allclose(got, ref, rtol=4 * U, atol=tol)
    assert tol < 1e-6 * np.min(np.abs(ref))  # far below the statistic's scale
    if np.isinf(epsilon):  # numpy's own nan* of the clipped data
        np_func = getattr(np, name)
        exact = np_func(np.clip(X, LOWER, UPPER), axis=axis, keepdims=True)
        np.testing.assert_allclose(got, exact, rtol=1e-9)


def test_dask_all_nan_column_gets_the_fallback(client, no_client_arrays):
    X = _data()
    X[:, 1] = np.nan
    dX = da.from_array(X, chunks=(CHUNK, D))
    kw = dict(bounds=(LOWER, UPPER), axis=0)
    mean = tools.nanmean(dX, np.inf, **kw)
    var = tools.nanvar(dX, np.inf, **kw)
    assert mean[1] == (LOWER + UPPER) / 2 and var[1] == 0.0
    np.testing.assert_allclose(mean[0], np.nanmean(np.clip(X[:, 0], 0, 10)))
    got = tools.nanmean(dX, 1.0, random_state=4, **kw)
    ref = tools.nanmean(X, 1.0, random_state=4, **kw)
    assert got[1] == ref[1]  # S1 = N = 0 exactly: the same noisy values
    tol = _tolerance("nanmean", N, np.sum(~np.isnan(X[:, 0])), 1.0, False)
    assert got[0] == pytest.approx(ref[0], rel=4 * U, abs=tol)


@pytest.mark.parametrize("name", ["nansum", "nanmean", "nanvar", "nanstd"])
def test_an_inf_block_fails_before_any_spend(client, name):
    X = _data()
    X[2500, 1] = np.inf  # in the sixth block, found on a worker
    with track_budget() as tracker, pytest.raises(ValueError, match="inf"):
        getattr(tools, name)(da.from_array(X, chunks=(CHUNK, D)), bounds=(0, 10))
    assert tracker.spends == []


def test_dask_refusals_record_nothing(client, no_client_arrays):
    dX = da.from_array(_data(), chunks=(CHUNK, D))
    with track_budget() as tracker:
        with pytest.raises(ValueError, match="declared bounds"):
            tools.nanmean(dX)
        with pytest.raises(ValueError, match="axis must reduce the rows"):
            tools.nansum(dX, bounds=(0, 10), axis=1)
    assert tracker.spends == []
