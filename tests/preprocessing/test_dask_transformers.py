"""Private scalers and PCA on dask collections, reduced on a real 2-worker cluster.

The dask fit must equal the in-memory fit with the same ``random_state`` (the
suite opts in to reproducible noise, ``conftest.py``):

- PrivateMinMaxScaler reads a column only through counts of rows below public
  points (sums of integers, exact in any order): bit for bit.
- PrivateStandardScaler and PrivatePCA release float sums (moments, the Gram
  matrix) whose value depends on the order of summation: equal up to the
  rounding of the sums, with tolerances derived below from the floating-point
  error bounds (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd
  ed., eq. (4.4) and section 4.2; Weyl's and Davis & Kahan's perturbation
  bounds for the eigen-decomposition), never from a measured difference.
"""

import math

import numpy as np
import pytest

from skdp.accounting import track_budget
from skdp.decomposition import PrivatePCA
from skdp.exceptions import BudgetExceededError
from skdp.preprocessing import PrivateMinMaxScaler, PrivateStandardScaler
from skdp.preprocessing._private_scaler import MOMENT_WEIGHT

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")


U = np.finfo(np.float64).eps / 2  # unit roundoff
N, D, CHUNK = 3000, 4, 450
BLOCKS = math.ceil(N / CHUNK)


@pytest.fixture(autouse=True)
def _time_limit(time_limit):
    """Every test here is bounded in time (tests/dask_cluster.py)."""


# Three directions of decreasing variance inside the box [-1, 1]^4 (PCA needs
# separated eigenvalues for its components to be compared), some rows outside
# it (they are clipped).
LOWER, UPPER = -1.0, 1.0


def _data(seed=0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((D, D)))
    X = rng.standard_normal((N, D)) * [0.5, 0.3, 0.15, 0.05] @ Q.T + 0.1
    return X


def _dask(X):
    return da.from_array(X, chunks=(CHUNK, D))


def _sum_order(n, term_bound):
    """How far two float sums of the same ``n`` terms (each at most
    ``term_bound`` in magnitude), added in different orders, can be apart.

    Any order of summation (recursive, pairwise, blocked, BLAS with or without
    fused multiply-adds for products) computes ``sum t_i`` within
    ``gamma_n sum |t_i| <= gamma_n n term_bound`` of the exact sum,
    ``gamma_n = n u / (1 - n u)`` (Higham (4.4), with one more rounding for a
    product term); two such sums are within twice that.
    """
    gamma = n * U / (1 - n * U)
    return 2 * gamma * n * term_bound


def _lattice(model):
    """The Laplace lattice step (skdp.mechanisms.LaplaceMechanism: a power of
    two at most ``2^-30 sensitivity / epsilon``); 0 for Gaussian noise."""
    if model.delta > 0:
        return 0.0
    return model.sensitivity_ / model.epsilon * 2.0**-30


# --- PrivateStandardScaler ------------------------------------------------------


@pytest.mark.parametrize("epsilon, delta", [(1.0, 0.0), (1.0, 1e-8), (np.inf, 0.0)])
def test_standard_scaler_dask_equals_in_memory(client, epsilon, delta):
    X = _data()
    kw = dict(epsilon=epsilon, delta=delta, bounds_X=(LOWER, UPPER), random_state=5)
    ref = PrivateStandardScaler(**kw).fit(X)
    with track_budget() as tracker:
        model = PrivateStandardScaler(**kw).fit(_dask(X))
    assert len(tracker.spends) == 1
    assert model.privacy_spent_ == ref.privacy_spent_
    assert model.n_samples_seen_ == N and model.n_features_in_ == D
    np.testing.assert_array_equal(model.variance_floor_, ref.variance_floor_)
    half = (UPPER - LOWER) / 2
    if math.isinf(epsilon):
        # mean: the sum of n values |x| <= 1, divided by n, either at once
        # (numpy) or per block merged by Chan's update (a few roundings of
        # values <= 1 per merge); variance: the centred squares (<= 4) summed
        # likewise, plus the square of the mean's error
        tol_mean = 2 * (N + 6 * BLOCKS) * U
        tol_var = 2 * ((N + 6 * BLOCKS + 3) * U * 4 + tol_mean**2)
    else:
        # the released vector (sum w, lambda sum w^2), |w| <= 1: the two sums
        # differ by the order of summation; Laplace rounds each to its lattice,
        # so a sum next to a rounding boundary may move one step; the noise
        # drawn is the same
        lam = MOMENT_WEIGHT
        tol_sum = _sum_order(N, 1.0) * lam + _lattice(model) + 4 * U * N * lam
        tol_m = tol_sum / N + 4 * U  # m = S1 / n, clipped to [-1, 1]
        tol_mean = half * tol_m
        # v = S2 / (lambda n) - m^2, clipped (1-Lipschitz) to bounds that move
        # with m^2; |m| <= 1
        tol_var = half**2 * (tol_sum / (lam * N) + 4 * tol_m)
    np.testing.assert_allclose(model.mean_, ref.mean_, rtol=4 * U, atol=tol_mean)
    np.testing.assert_allclose(model.var_, ref.var_, rtol=4 * U, atol=tol_var)


def test_standard_scaler_dataframe_names_and_dict_bounds(client):
    pd = pytest.importorskip("pandas")
    X = _data(seed=1)
    names = [f"x{j}" for j in range(D)]
    frame = pd.DataFrame(X, columns=names)
    bounds = {name: (LOWER, UPPER) for name in names}
    kw = dict(epsilon=2.0, bounds_X=bounds, random_state=7)
    ref = PrivateStandardScaler(**kw).fit(frame)
    model = PrivateStandardScaler(**kw).fit(dd.from_pandas(frame, npartitions=5))
    np.testing.assert_array_equal(model.feature_names_in_, names)
    tol = _sum_order(N, 1.0) * MOMENT_WEIGHT + _lattice(model)
    np.testing.assert_allclose(model.mean_, ref.mean_, atol=2 * tol / N + 8 * U)
    out = model.set_output(transform="pandas").transform(frame)
    assert list(out.columns) == names


# --- PrivatePCA ---------------------------------------------------------------


def _pca_tolerances(model, gram_tol):
    """Tolerances of ``mean_``, the eigenvalues and each component of a PCA
    whose released Gram matrix entries may differ by ``gram_tol[j, k]``.

    ``mu = column / (s n)``; ``C = (G - n mu mu^T) / (n - 1)``: the entrywise
    difference ``dC`` follows, and ``eta = ||dC||_F + 2 d^2 u ||C||_2`` bounds
    the difference of the matrices whose exact eigen-decompositions the two
    computed ones are (``eigh`` is backward stable: its result is exact for a
    matrix within ``p(d) u ||C||`` of its input; ``p(d) = d^2`` is generous for
    ``d = 4``). Weyl: eigenvalues move by at most ``eta``; Davis & Kahan: the
    ``i``-th eigenvector turns by ``sin(theta) <= eta / (gap_i - eta)``, hence
    moves by at most ``sqrt(2) sin(theta)`` (signs aligned).
    """
    n, d = N, D
    s = model.intercept_scale_
    lam = model.explained_variance_  # all d components are kept
    assert lam.size == d and np.all(np.diff(lam) < 0) and lam[-1] > 0
    col_tol = gram_tol[:d, d] if s > 0 else np.zeros(d)
    mu = model.mean_ - (LOWER + UPPER) / 2 if s > 0 else np.zeros(d)
    dmu = col_tol / (s * n) + 4 * U * (1 + np.abs(mu)) if s > 0 else np.zeros(d)
    dnmm = n * (
        np.outer(dmu, np.abs(mu)) + np.outer(np.abs(mu), dmu) + np.outer(dmu, dmu)
    )
    dC = (gram_tol[:d, :d] + dnmm) / (n - 1) + 8 * U * lam[0]
    eta = np.linalg.norm(dC) + 2 * d**2 * U * lam[0]
    gaps = np.array([np.min(np.abs(np.delete(lam, i) - lam[i])) for i in range(d)])
    assert np.all(gaps > 2 * eta)
    return np.max(dmu), eta, np.sqrt(2) * eta / (gaps - eta)


def _assert_pca_close(model, ref, gram_tol):
    tol_mu, tol_lam, tol_vec = _pca_tolerances(ref, gram_tol)
    np.testing.assert_allclose(model.mean_, ref.mean_, rtol=0, atol=tol_mu)
    np.testing.assert_allclose(
        model.explained_variance_, ref.explained_variance_, rtol=0, atol=tol_lam
    )
    for i in range(D):  # the sign convention is not what is compared here
        a, b = model.components_[i], ref.components_[i]
        b = b if a @ b >= 0 else -b
        assert np.linalg.norm(a - b) <= tol_vec[i]


@pytest.mark.parametrize(
    "epsilon, delta, domain",
    [
        (1.0, 0.0, {"bounds_X": (LOWER, UPPER)}),
        (1.0, 1e-8, {"data_norm": 1.5}),
        (np.inf, 0.0, {"bounds_X": (LOWER, UPPER)}),
    ],
)
def test_pca_dask_equals_in_memory(client, epsilon, delta, domain):
    X = _data(seed=2)
    kw = dict(epsilon=epsilon, delta=delta, random_state=11, **domain)
    ref = PrivatePCA(**kw).fit(X)
    with track_budget() as tracker:
        model = PrivatePCA(**kw).fit(_dask(X))
    assert len(tracker.spends) == 1
    assert model.privacy_spent_ == ref.privacy_spent_
    assert model.intercept_scale_ == ref.intercept_scale_
    # |z_j| <= r_j: the box's half-width about its midpoint, or the row norm
    r = np.full(D, ref.row_norm_ if "data_norm" in domain else (UPPER - LOWER) / 2)
    s = ref.intercept_scale_
    r_aug = np.append(r, s)
    if math.isinf(epsilon):
        # no Gram: the centred cross-products (|z - mu| <= 2 r) summed at
        # once or per block and merged by Chan's update, as for the scaler;
        # their covariance difference is handed over as a Gram difference
        # times (n - 1) / (n - 1)
        outer = np.outer(2 * r_aug, 2 * r_aug)
        gram_tol = 2 * (N + 6 * BLOCKS + 3) * U * N * outer
        gram_tol[:D, D] = 2 * (N + 6 * BLOCKS) * U * s * N * r  # the mean
    else:
        # entries sum n products |z_j z_k| <= r_j r_k (the column: s z_j);
        # Laplace rounds each entry to its lattice (one step at most)
        gram_tol = _sum_order(N, 1.0) * np.outer(r_aug, r_aug) + _lattice(model)
        gram_tol += 4 * U * N * np.outer(r_aug, r_aug)  # adding the noise
    _assert_pca_close(model, ref, gram_tol)


# --- PrivateMinMaxScaler: counts, bit for bit ---------------------------------


@pytest.mark.filterwarnings("ignore::skdp.preprocessing.PrivateBoundsWarning")
@pytest.mark.parametrize(
    "kw",
    [
        {"epsilon": 1.0, "bounds_X": (-10, 10)},  # looseness test, pair inside
        {"epsilon": 1.0},  # the pair over the public grid
        {"epsilon": 0.25},  # n * eps_c = 187 < 256: median and half-width
        {"epsilon": np.inf, "bounds_X": (-0.5, 0.5)},  # exact extremes, clipped
    ],
)
def test_minmax_dask_equals_in_memory_bit_for_bit(client, kw):
    X = _data(seed=3)
    ref = PrivateMinMaxScaler(random_state=13, **kw).fit(X)
    with track_budget() as tracker:
        model = PrivateMinMaxScaler(random_state=13, **kw).fit(_dask(X))
    assert len(tracker.spends) == 1
    assert model.privacy_spent_ == ref.privacy_spent_
    for attr in ("data_min_", "data_max_", "scale_", "min_"):
        np.testing.assert_array_equal(getattr(model, attr), getattr(ref, attr))
    if ref.privacy_result_ is not None:
        for attr in ("quantile_level", "loose_fraction", "epsilon_per_column"):
            np.testing.assert_array_equal(
                getattr(model.privacy_result_, attr), getattr(ref.privacy_result_, attr)
            )


# --- what is refused, and that it releases nothing ----------------------------


def test_domain_must_be_declared_for_dask(client):
    dX = _dask(_data())
    with pytest.raises(ValueError, match="bounds_X"):
        PrivateStandardScaler(epsilon=1.0).fit(dX)
    with pytest.raises(ValueError, match="bounds_X or data_norm"):
        PrivatePCA(2, epsilon=1.0).fit(dX)


@pytest.mark.parametrize(
    "make",
    [
        lambda: PrivateStandardScaler(epsilon=1.0, bounds_X=(LOWER, UPPER)),
        lambda: PrivatePCA(2, epsilon=1.0, bounds_X=(LOWER, UPPER)),
        lambda: PrivateMinMaxScaler(epsilon=1.0, bounds_X=(LOWER, UPPER)),
        lambda: PrivateMinMaxScaler(epsilon=1.0),
    ],
    ids=["scaler", "pca", "minmax-envelope", "minmax-grid"],
)
def test_nan_in_one_block_releases_nothing(client, make):
    X = _data()
    X[2500, 1] = np.nan  # in the sixth block, found on a worker
    model = make()
    with track_budget() as tracker, pytest.raises(ValueError, match="NaN|finite"):
        model.fit(_dask(X))
    assert tracker.spends == []
    assert not [a for a in vars(model) if a.endswith("_") and not a.startswith("__")]


def test_refused_spend_releases_nothing(client):
    dX = _dask(_data())
    model = PrivatePCA(2, epsilon=1.0, bounds_X=(LOWER, UPPER))
    with pytest.raises(BudgetExceededError), track_budget(0.5):
        model.fit(dX)
    assert not hasattr(model, "components_")
