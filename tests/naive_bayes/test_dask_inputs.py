"""Sum-statistic estimators on dask input, reduced on a real 2-worker cluster.

The dask fit must equal the in-memory fit with the same ``random_state`` (the
suite opts in to reproducible noise, ``conftest.py``): integer counts bit for
bit; float sums up to the order of summation, with tolerances derived from the
floating-point error bound of a sum (Higham, *Accuracy and Stability of
Numerical Algorithms*, 2nd ed., eq. (4.4)), never from a measured difference.
"""

import math

import numpy as np
import pytest

from skdp.accounting import track_budget
from skdp.naive_bayes import PrivateGaussianNB

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")


U = np.finfo(np.float64).eps / 2  # unit roundoff
N, D, CHUNK = 3000, 4, 450
BLOCKS = math.ceil(N / CHUNK)
LOWER, UPPER = -1.0, 1.0
CLASSES = [0, 1, 2]


@pytest.fixture(autouse=True)
def _time_limit(time_limit):
    """Every test here is bounded in time (tests/dask_cluster.py)."""


def _data(seed=0):
    """Three classes with different means; some rows outside [-1, 1] (clipped)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, N)
    X = rng.standard_normal((N, D)) * 0.4 + (y[:, None] - 1) * 0.5
    return X, y


def _sum_order(n, term_bound):
    """How far two float sums of the same ``n`` terms (each at most
    ``term_bound`` in magnitude), added in different orders, can be apart:
    each is within ``gamma_n n term_bound`` of the exact sum (Higham (4.4),
    ``gamma_n = n u / (1 - n u)``, one more rounding for a product term)."""
    gamma = (n + 1) * U / (1 - (n + 1) * U)
    return 2 * gamma * n * term_bound


def _lattice(model):
    """The Laplace lattice step (one step at most when a sum next to a rounding
    boundary moves); 0 for Gaussian noise."""
    if model.delta > 0:
        return 0.0
    return model.sensitivity_ / model.epsilon * 2.0**-30


# --- PrivateGaussianNB ----------------------------------------------------------


@pytest.mark.parametrize("epsilon, delta", [(1.0, 0.0), (1.0, 1e-8), (np.inf, 0.0)])
def test_gaussian_nb_dask_equals_in_memory(client, epsilon, delta):
    X, y = _data()
    kw = dict(
        epsilon=epsilon,
        delta=delta,
        bounds_X=(LOWER, UPPER),
        classes=CLASSES,
        random_state=5,
    )
    ref = PrivateGaussianNB(**kw).fit(X, y)
    with track_budget() as tracker:
        model = PrivateGaussianNB(**kw).fit(
            da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, chunks=CHUNK)
        )
    assert len(tracker.spends) == 1
    assert model.privacy_spent_ == ref.privacy_spent_
    assert model.n_features_in_ == D
    np.testing.assert_array_equal(model.classes_, ref.classes_)
    # the counts are integers (exact in any order) and their noise is the same
    np.testing.assert_array_equal(model.class_count_, ref.class_count_)
    np.testing.assert_array_equal(model.class_prior_, ref.class_prior_)
    half = (UPPER - LOWER) / 2
    if math.isinf(epsilon):
        # per class: the mean of at most n values |x| <= 1 at once (numpy) or
        # per block merged by Chan's update (a few roundings per merge); the
        # variance: centred squares (<= 4) likewise, plus the mean's error^2
        tol_mean = 2 * (N + 6 * BLOCKS) * U
        tol_var = 2 * ((N + 6 * BLOCKS + 3) * U * 4 + tol_mean**2)
        tol_var += 1e-9 * tol_var  # epsilon_: var_smoothing times a variance
    else:
        # the released sums (S1, lambda S2), |w| <= 1, differ by the order of
        # summation (and lambda's product); Laplace rounds each to its lattice
        lam = model.moment_weight_
        assert lam == ref.moment_weight_
        tol_sum = _sum_order(N, 1.0) * lam + _lattice(model) + 4 * U * N * lam
        c = ref.class_count_.min()  # the divisor of the class's sums
        tol_m = tol_sum / c + 4 * U  # m = S1 / c, clipped to [-1, 1]
        tol_mean = half * tol_m
        # v = S2 / (lambda c) - m^2 clipped (1-Lipschitz) to bounds moving with m^2
        tol_var = half**2 * (tol_sum / (lam * c) + 4 * tol_m)
        np.testing.assert_array_equal(model.variance_floor_, ref.variance_floor_)
    assert model.epsilon_ == pytest.approx(ref.epsilon_, rel=1e-9, abs=0)
    np.testing.assert_allclose(model.theta_, ref.theta_, rtol=4 * U, atol=tol_mean)
    np.testing.assert_allclose(model.var_, ref.var_, rtol=4 * U, atol=tol_var)
    # the tolerances are far below what the data separates
    assert np.max(np.abs(np.diff(ref.theta_, axis=0))) > 1e6 * np.max(tol_mean)


@pytest.mark.filterwarnings("ignore:Dask currently has limited support:UserWarning")
def test_gaussian_nb_dataframe_series_string_labels(client):
    pd = pytest.importorskip("pandas")
    X, y = _data(seed=1)
    names = [f"x{j}" for j in range(D)]
    labels = np.array(["a", "b", "c"])[y]
    frame = pd.DataFrame(X, columns=names)
    kw = dict(epsilon=2.0, bounds_X=(LOWER, UPPER), classes=["a", "b", "c"])
    ref = PrivateGaussianNB(random_state=7, **kw).fit(frame, labels)
    # y in blocks that do not match X's: dask aligns them (sizes are known)
    model = PrivateGaussianNB(random_state=7, **kw).fit(
        dd.from_pandas(frame, npartitions=5),
        dd.from_pandas(pd.Series(labels), npartitions=3),
    )
    np.testing.assert_array_equal(model.feature_names_in_, names)
    np.testing.assert_array_equal(model.classes_, ["a", "b", "c"])
    np.testing.assert_array_equal(model.class_count_, ref.class_count_)
    tol = _sum_order(N, 1.0) * model.moment_weight_ + _lattice(model)
    c = ref.class_count_.min()
    np.testing.assert_allclose(model.theta_, ref.theta_, atol=2 * tol / c + 8 * U)
    np.testing.assert_array_equal(model.predict(frame[:50]), ref.predict(frame[:50]))


@pytest.mark.parametrize("where", ["nan-X", "unknown-label"])
def test_gaussian_nb_bad_block_releases_nothing(client, where):
    X, y = _data()
    y = y.astype(np.float64)
    if where == "nan-X":
        X[2500, 1] = np.nan  # in the sixth block, found on a worker
        match = "NaN|finite"
    else:
        y[2500] = 7.0
        match = "not in classes"
    model = PrivateGaussianNB(epsilon=1.0, bounds_X=(LOWER, UPPER), classes=CLASSES)
    with track_budget() as tracker, pytest.raises(ValueError, match=match):
        model.fit(da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, chunks=CHUNK))
    assert tracker.spends == []
    assert not [a for a in vars(model) if a.endswith("_") and not a.startswith("__")]


def test_gaussian_nb_dask_refusals(client):
    X, y = _data()
    dX, dy = da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, chunks=CHUNK)
    kw = dict(epsilon=1.0, bounds_X=(LOWER, UPPER), classes=CLASSES)
    with track_budget() as tracker:
        with pytest.raises(TypeError, match="y must be a dask"):
            PrivateGaussianNB(**kw).fit(dX, y)
        with pytest.raises(TypeError, match="X must be a dask"):
            PrivateGaussianNB(**kw).fit(X, dy)
        with pytest.raises(ValueError, match="different numbers of rows"):
            PrivateGaussianNB(**kw).fit(dX, dy[:-1])
        with pytest.raises(ValueError, match="bounds_X and classes"):
            PrivateGaussianNB(epsilon=1.0, classes=CLASSES).fit(dX, dy)
        with pytest.raises(ValueError, match="bounds_X and classes"):
            PrivateGaussianNB(epsilon=1.0, bounds_X=(LOWER, UPPER)).fit(dX, dy)
    assert tracker.spends == []


# --- skdp.tools: sum, mean, var, std ------------------------------------------

TOOLS_LOWER, TOOLS_UPPER = 0.0, 10.0


def _tools_data(seed=4):
    return np.random.default_rng(seed).normal(5, 3, (N, D))  # some rows clipped


def _tools_tolerance(name, m, epsilon, sensitivity):
    """How far the dask and in-memory results of ``name`` may be apart, for
    outputs reducing ``m`` elements in ``[0, 10]`` (centre ``c = 5``,
    half-width ``r = 5``)."""
    from skdp.tools._moments import MOMENT_WEIGHT as lam

    r, top = (TOOLS_UPPER - TOOLS_LOWER) / 2, TOOLS_UPPER
    if math.isinf(epsilon):
        # sum: the same m values <= 10 in another order; mean and var: at once
        # (numpy) or per block merged by Chan's update (as for the scaler);
        # centred squares <= 10^2
        if name == "sum":
            return _sum_order(m, top)
        tol_mean = 2 * (m + 6 * BLOCKS) * U * top
        if name == "mean":
            return tol_mean
        return 2 * ((m + 6 * BLOCKS + 3) * U * top**2 + tol_mean**2)
    # the released sums of w (and lambda w^2), |w| <= 1, in another order;
    # Laplace rounds each to its lattice (one step at most)
    lattice = sensitivity / epsilon * 2.0**-30
    tol_s = _sum_order(m, lam) + lattice + 4 * U * m * lam
    if name == "sum":  # m c + r clip(S1~, -m, m)
        return r * tol_s + 4 * U * m * top
    tol_m = tol_s / m + 4 * U  # clip(S1~ / m, -1, 1)
    if name == "mean":
        return r * tol_m
    # v = clip(S2~ / m - m1^2, 0, 1 - m1^2), |m1| <= 1; var = r^2 v
    return r**2 * (tol_s / (lam * m) + 4 * tol_m)


@pytest.mark.parametrize("epsilon", [1.0, np.inf])
@pytest.mark.parametrize("axis", [None, 0])
@pytest.mark.parametrize("name", ["sum", "mean", "var", "std"])
def test_tools_dask_equals_in_memory(client, name, axis, epsilon):
    from skdp import tools
    from skdp.tools._moments import moments_sensitivity

    X = _tools_data()
    func = getattr(tools, name)
    kw = dict(
        epsilon=epsilon,
        bounds=(TOOLS_LOWER, TOOLS_UPPER),
        axis=axis,
        keepdims=True,
        random_state=3,
    )
    ref = func(X, **kw)
    with track_budget() as tracker:
        got = func(da.from_array(X, chunks=(CHUNK, D)), **kw)
    assert len(tracker.spends) == 1
    assert np.shape(got) == np.shape(ref)
    m = N * D if axis is None else N
    sens = moments_sensitivity(D, with_squares=name in ("var", "std"))
    if name == "std":  # compared as variances (the square root is monotone)
        tol = _tools_tolerance("var", m, epsilon, sens)
        np.testing.assert_allclose(got**2, ref**2, rtol=8 * U, atol=tol)
    else:
        tol = _tools_tolerance(name, m, epsilon, sens)
        np.testing.assert_allclose(got, ref, rtol=4 * U, atol=tol)
    # the tolerance is far below the statistic's own scale
    assert tol < 1e-6 * np.min(np.abs(ref))


def test_tools_dask_one_dimensional(client):
    from skdp import tools

    x = _tools_data()[:, 0]
    kw = dict(epsilon=1.0, bounds=(TOOLS_LOWER, TOOLS_UPPER), random_state=9)
    ref = tools.mean(x, **kw)
    got = tools.mean(da.from_array(x, chunks=CHUNK), **kw)
    assert isinstance(got, float)
    sens = 2.0
    assert got == pytest.approx(ref, rel=0, abs=_tools_tolerance("mean", N, 1.0, sens))


@pytest.mark.parametrize("name", ["sum", "mean", "var", "std"])
def test_tools_nan_block_releases_nothing(client, name):
    from skdp import tools

    X = _tools_data()
    X[2500, 1] = np.nan  # in the sixth block, found on a worker
    with track_budget() as tracker, pytest.raises(ValueError, match="finite"):
        getattr(tools, name)(
            da.from_array(X, chunks=(CHUNK, D)), bounds=(TOOLS_LOWER, TOOLS_UPPER)
        )
    assert tracker.spends == []


def test_tools_dask_refusals(client):
    from skdp import tools

    dX = da.from_array(_tools_data(), chunks=(CHUNK, D))
    with track_budget() as tracker:
        with pytest.raises(ValueError, match="declared bounds"):
            tools.mean(dX)
        with pytest.raises(ValueError, match="axis must reduce the rows"):
            tools.sum(dX, bounds=(0, 10), axis=1)
        with pytest.raises(TypeError, match="dask collection"):
            tools.median(dX, bounds=(0, 10))
    assert tracker.spends == []
