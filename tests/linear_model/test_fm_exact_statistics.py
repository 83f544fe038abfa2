"""The exact-sum scheme of skdp._fm.exact_sums at its edges.

The scheme (module docstring of :mod:`skdp._fm.exact_sums`): values clipped to
their range with the ends moved inwards to the grid ``2^(E - 36)``, truncated
toward zero, split into two 18-bit limbs whose three Gram matrices are exact
in float64 over blocks of at most ``2^15`` rows. Every test compares with sums
computed here in Python integers from the documented grid.
"""

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest

import skdp._fm.exact_sums as exact_sums
from skdp._fm import DataDomain
from skdp._fm.statistics import clip_to_domain, compute_statistics
from skdp.linear_model import FMLinearRegression, FMLogisticRegression

BLOCK = 2**15  # the documented exactness bound (rows per float64 block)


def _grid_integers(Z, bounds):
    """The documented grid: integers ``m = trunc(z / 2^(E - 36))``, and E."""
    E = np.array([math.frexp(b)[1] for b in bounds])
    return np.trunc(np.ldexp(Z, 36 - E)).astype(np.int64), E


def _exact(M, E, scales=None):
    """Correctly rounded ``sum_i m_ij m_ik 2^(E_j + E_k - 72)`` (times scales)."""
    Mo = M.astype(object)
    G = Mo.T.dot(Mo)  # Python integers: exact
    q = M.shape[1]
    scales = [1] * q if scales is None else scales
    out = np.empty((q, q))
    for j in range(q):
        for k in range(q):
            unit = Fraction(2) ** int(E[j] + E[k] - 72) * Fraction(
                scales[j] * scales[k]
            )
            value = Fraction(int(G[j, k])) * unit
            try:
                out[j, k] = float(value)
            except OverflowError:  # beyond float64: the nearest is infinity
                out[j, k] = math.inf if value > 0 else -math.inf
    return out


def _largest_rows(n, d, bound, seed=0):
    """Rows at or near the largest grid value of ``bound`` (both signs)."""
    rng = np.random.default_rng(seed)
    X = bound * rng.choice([-1.0, 1.0], size=(n, d))
    X[:, 1:] *= 1 - rng.integers(0, 2**20, size=(n, d - 1)) * 2.0**-36
    return X


# a bound just below a power of two: the largest values have m = 2^36 - 1, whose
# limbs t = l = 2^18 - 1 and t + l = 2^19 - 2 are the largest the bound allows
TOP = np.nextafter(1.0, 0.0)


@pytest.mark.parametrize("n", [BLOCK, BLOCK + 1, 2 * BLOCK + 3])
def test_largest_values_in_full_blocks_sum_exactly(n):
    X = _largest_rows(n, 3, TOP)
    y = np.where(np.arange(n) % 3 == 0, -1.0, 1.0) * TOP / 2  # beta = -2y: +-TOP
    dom = DataDomain(3, lower=-TOP, upper=TOP, y_bounds=(-TOP / 2, TOP / 2))
    stats = compute_statistics(X, y, "squared", dom)
    M, E = _grid_integers(np.column_stack([X, -2 * y]), [TOP] * 4)
    assert np.abs(M).max() == 2**36 - 1  # the edge is reached
    exact = _exact(M, E)
    np.testing.assert_array_equal(stats.A, exact[:3, :3])
    np.testing.assert_array_equal(stats.b, exact[:3, 3])
    # any split, any order: the same digits
    cuts = [0, 1, BLOCK - 1, BLOCK, n]
    parts = [
        compute_statistics(X[a:b], y[a:b], "squared", dom)
        for a, b in zip(cuts, cuts[1:])
    ]
    assert sum(parts[::-1]) == stats


def test_float_blocks_above_the_bound_would_not_be_exact():
    # the bound is tight: 2^15 + 1 rows of the largest t + l overflow 2^53
    largest = (2**19 - 2) ** 2
    assert BLOCK * largest < 2**53 < (BLOCK + 1) * largest


def test_chunk_and_block_sizes_do_not_change_the_digits(monkeypatch):
    X = _largest_rows(3000, 4, TOP, seed=1)
    y = np.linspace(-1, 1, 3000)
    dom = DataDomain(4, data_norm=1.5, y_bounds=(-1, 1), fit_intercept=True)
    reference = compute_statistics(X, y, "squared", dom)
    # chunks of 1 row, 7 rows, 341 rows; float blocks; carries every k flushes
    for chunk_bytes, block, carry in [
        (8, BLOCK, 128),
        (8 * 7 * 6, 64, 1),
        (2**14, 2**10, 3),
    ]:
        monkeypatch.setattr(exact_sums, "_CHUNK_BYTES", chunk_bytes)
        monkeypatch.setattr(exact_sums, "_BLOCK_ROWS", block)
        monkeypatch.setattr(exact_sums, "_CARRY_EVERY", carry)
        stats = compute_statistics(X, y, "squared", dom)
        assert stats == reference
        np.testing.assert_array_equal(stats.A, reference.A)


def test_negative_values_and_a_range_that_excludes_zero():
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 4, (200, 2))
    y = rng.uniform(-1, 4, 200)
    dom = DataDomain(2, lower=[0.3, -2.7], upper=[2.7, -0.3], y_bounds=(0.3, 2.7))
    stats = compute_statistics(X, y, "squared", dom)
    Xc, yc = clip_to_domain(X, y, "squared", dom)
    Z = np.column_stack([Xc, -2 * yc])
    bounds = [2.7, 2.7, 5.4]
    E = np.array([math.frexp(b)[1] for b in bounds])
    g = np.ldexp(1.0, E - 36)
    # the documented map: ends moved inwards to the grid, truncation toward zero
    lo = np.ceil(np.array([0.3, -2.7, -5.4]) / g) * g
    hi = np.floor(np.array([2.7, -0.3, -0.6]) / g) * g
    Zq = np.trunc(np.clip(Z, lo, hi) / g) * g
    assert np.all((Zq >= [0.3, -2.7, -5.4]) & (Zq <= [2.7, -0.3, -0.6]))
    assert np.any(Zq != Z)  # the grid moved some values
    M, E = _grid_integers(Zq, bounds)
    exact = _exact(M, E)
    np.testing.assert_array_equal(stats.A, exact[:2, :2])
    np.testing.assert_array_equal(stats.b, exact[:2, 2])


def test_a_range_without_a_grid_point_is_refused():
    dom = DataDomain(1, lower=0.3, upper=0.3, y_bounds=(-1, 1))
    with pytest.raises(ValueError, match="feature 0 holds no point"):
        compute_statistics(np.ones((2, 1)), np.zeros(2), "squared", dom)


def test_truncation_never_moves_a_value_away_from_zero():
    # rows on the sphere stay in the ball: |x'_j| <= |x_j| for every entry
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 5))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    dom = DataDomain(5, data_norm=1.0, y_bounds=(-1, 1))
    for x in X:
        A = compute_statistics(x[None], [0.0], "squared", dom).A
        assert np.all(np.diag(A) <= x**2) and np.sum(np.diag(A)) <= 1.0


def test_intercept_column_is_exact_in_units_of_its_scaling():
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (30, 2))
    s = 0.1  # not a power of two, not on any grid
    dom = DataDomain(
        2, lower=-1, upper=1, y_bounds=(-1, 1), fit_intercept=True, intercept_scaling=s
    )
    stats = compute_statistics(X, np.zeros(30), "squared", dom)
    M, E = _grid_integers(X, [1.0, 1.0])
    M = np.column_stack([M, np.ones(30, np.int64)])
    E = np.append(E, 36)  # m = 1 in units of s
    exact = _exact(M, E, scales=[1, 1, Fraction(s)])
    np.testing.assert_array_equal(stats.A, exact)
    assert stats.A[2, 2] == float(30 * Fraction(s) ** 2)


@pytest.mark.parametrize("bound", [1e-300, 1e300, 2.0**-1000])
def test_extreme_bounds_sum_exactly(bound):
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (40, 2)) * bound
    y = rng.uniform(-1, 1, 40)
    dom = DataDomain(2, lower=-bound, upper=bound, y_bounds=(-1, 1))
    stats = compute_statistics(X, y, "squared", dom)
    M, E = _grid_integers(np.column_stack([X, -2 * y]), [bound, bound, 2.0])
    exact = _exact(M, E)
    np.testing.assert_array_equal(stats.A, exact[:2, :2])
    np.testing.assert_array_equal(stats.b, exact[:2, 2])


@pytest.mark.parametrize(
    "dtype", [np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_]
)
def test_every_numeric_dtype_gives_the_float64_statistics(dtype):
    rng = np.random.default_rng(6)
    X = (rng.uniform(0, 3, (120, 3)) ** 3).astype(dtype)
    y = rng.uniform(-2, 2, 120)
    X64 = X.astype(np.float64)
    est = FMLinearRegression(
        epsilon=1.0, bounds_X=(0, 9), bounds_y=(-1, 1), random_state=0
    )
    assert est.statistics(X, y) == est.statistics(X64, y)
    # non-contiguous layouts of the same rows too
    assert est.statistics(np.asfortranarray(X), y) == est.statistics(X64, y)
    assert est.statistics(X[::2], y[::2]) == est.statistics(X64[::2], y[::2])
    np.testing.assert_array_equal(est.fit(X, y).coef_, est.fit(X64, y).coef_)


def test_labels_of_any_numeric_dtype():
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, (80, 3))
    y = rng.integers(0, 2, 80)
    est = FMLogisticRegression(data_norm=1.0, classes=[0, 1])
    reference = est.statistics(X, y.astype(np.float64))
    for labels in (y, y.astype(np.int8), y.astype(bool).astype(np.uint8)):
        assert est.statistics(X, labels) == reference


def test_non_finite_rows_are_refused():
    X = np.ones((3, 2))
    X[1, 1] = np.nan
    dom = DataDomain(2, lower=-1, upper=1, y_bounds=(-1, 1))
    with pytest.raises(ValueError, match="finite"):
        compute_statistics(X, np.zeros(3), "squared", dom)
    est = FMLinearRegression(bounds_X=(-1, 1), bounds_y=(-1, 1))
    for bad in (np.nan, np.inf):
        X[1, 1] = bad
        with pytest.raises(ValueError, match="NaN|infinity"):
            est.statistics(X, np.zeros(3))


def test_partial_fit_accumulates_the_exact_statistics():
    rng = np.random.default_rng(8)
    X, y = rng.uniform(-1, 1, (90, 3)), rng.uniform(-1, 1, 90)
    est = FMLinearRegression(bounds_X=(-1, 1), bounds_y=(-1, 1), random_state=0)
    for i in range(0, 90, 25):
        est.partial_fit(X[i : i + 25], y[i : i + 25])
    assert est._stats == est.statistics(X, y)


def test_statistics_of_another_scheme_are_refused():
    est = FMLinearRegression(bounds_X=(-1, 1), bounds_y=(-1, 1))
    X, y = np.zeros((2, 2)), np.zeros(2)
    old = pickle.loads(pickle.dumps(est.statistics(X, y)))
    old._scheme = "3x18-bit limbs, 53-bit grid"  # as an older skdp pickled it
    with pytest.raises(ValueError, match="another version of skdp"):
        _ = old.A
    with pytest.raises(ValueError, match="different versions of skdp"):
        old + est.statistics(X, y)


def test_statistics_follow_every_change_of_the_parameters():
    # statistics() reuses the domain of equal parameter values (a cache keyed
    # by value): a changed parameter, even an array changed in place, is seen
    rng = np.random.default_rng(9)
    X, y = rng.uniform(-1, 1, (50, 3)), rng.uniform(-1, 1, 50)
    upper = np.ones(3)
    est = FMLinearRegression(bounds_X=(-np.ones(3), upper), bounds_y=(-1, 1))
    first = est.statistics(X, y)
    upper[:] = 0.5
    half = FMLinearRegression(bounds_X=(-np.ones(3), np.full(3, 0.5)), bounds_y=(-1, 1))
    assert est.statistics(X, y) == half.statistics(X, y) != first
    est.set_params(bounds_X=(-1, 1), data_norm=0.7)
    norm = FMLinearRegression(bounds_X=(-1, 1), data_norm=0.7, bounds_y=(-1, 1))
    assert est.statistics(X, y) == norm.statistics(X, y)
    est.set_params(bounds_y=(-1, 1, 2))
    with pytest.raises(TypeError, match="bounds_y"):
        est.statistics(X, y)
    est.set_params(bounds_y=(-1, 1), epsilon=-1.0)
    with pytest.raises(ValueError, match="epsilon"):
        est.statistics(X, y)
