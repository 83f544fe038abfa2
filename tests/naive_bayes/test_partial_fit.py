"""PrivateGaussianNB.partial_fit: one release per batch, added to running totals.

The suite runs with reproducible noise opted in (``conftest.py``), so a seed
drives the noise and a release can be recomputed by hand: the bit-for-bit
assertions below compare computations skdp itself guarantees identical (the
same operations in the same order in one process).
"""

import warnings

import numpy as np
import pytest

from skdp.accounting import PrivacyBudget, on_rows, track_budget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.naive_bayes import PrivateGaussianNB
from skdp.naive_bayes._gaussian_nb import nb_statistics
from skdp.naive_bayes._nb_partial import project_counts
from skdp.utils import noise_generator

LOWER = np.array([0.0, -2.0, 5.0])
UPPER = np.array([4.0, 6.0, 7.0])
CLASSES = ["a", "b", "c"]


def _data(n=900, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.choice(CLASSES, size=n, p=[0.5, 0.3, 0.2])
    shift = {"a": 0.0, "b": 1.0, "c": -0.8}
    centre = (LOWER + UPPER) / 2
    X = np.array([centre + shift[c] for c in y])
    X = X + rng.normal(0, 0.5, size=X.shape) * (UPPER - LOWER) / 4
    X[:7] += 50.0  # outside the declared ranges: clipped
    return X, y


def _batches(X, y, sizes=(250, 400, 250)):
    edges = np.cumsum((0,) + sizes)
    return [(X[a:b], y[a:b]) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _nb(**kw):
    params = {"epsilon": 1.0, "bounds_X": (LOWER, UPPER), "classes": CLASSES}
    return PrivateGaussianNB(**{**params, **kw})


def _model(est):
    return {
        name: np.copy(getattr(est, name))
        for name in ("class_count_", "class_prior_", "theta_", "var_", "epsilon_")
    } | {"privacy_spent_": est.privacy_spent_, "totals": np.copy(est._running[0])}


def _assert_same_model(a, b):
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


# --- epsilon = inf: the fit on all rows ------------------------------------------


def test_infinite_epsilon_partial_fit_equals_fit_on_all_rows():
    X, y = _data()
    # the first batch lacks class "c": declared, it still gets its moments later
    y = y.copy()
    y[:250][y[:250] == "c"] = "a"
    full = _nb(epsilon=np.inf).fit(X, y)
    stream = _nb(epsilon=np.inf)
    for Xb, yb in _batches(X, y):
        stream.partial_fit(Xb, yb)
    assert stream.privacy_spent_ == PrivacyBudget(np.inf, 0.0)
    np.testing.assert_array_equal(stream.class_count_, full.class_count_)
    np.testing.assert_array_equal(stream.class_prior_, full.class_prior_)
    # Chan's pairwise update against numpy's two passes over one array: both
    # backward stable, a few roundings of values of size ~1 apart (var_smoothing
    # 1e-9 times the largest variance is added to both)
    np.testing.assert_allclose(stream.theta_, full.theta_, rtol=1e-12)
    np.testing.assert_allclose(stream.var_, full.var_, rtol=1e-10)
    assert stream.epsilon_ == pytest.approx(full.epsilon_, rel=1e-10)
    np.testing.assert_array_equal(stream.predict(X), full.predict(X))


# --- private: the totals are the sum of the per-batch releases ---------------------


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_running_totals_are_the_sum_of_the_per_batch_releases(delta):
    X, y = _data()
    gen_seed = 11
    est = _nb(delta=delta, random_state=np.random.default_rng(gen_seed))
    for Xb, yb in _batches(X, y):
        est.partial_fit(Xb, yb)
    # the same releases by hand, from the same generator (draws in order)
    gen = np.random.default_rng(gen_seed)
    centre, half = (LOWER + UPPER) / 2, (UPPER - LOWER) / 2
    mech, mu, lam = est._mechanism(3, 3, 3)
    total = None
    for Xb, yb in _batches(X, y):
        W = (np.clip(Xb, LOWER, UPPER) - centre) / half
        stats = nb_statistics(W, np.searchsorted(CLASSES, yb), 3, mu, lam)
        release = mech.randomize(stats, random_state=noise_generator(gen))
        total = release if total is None else total + release
    totals, n, variance, releases, weights = est._running
    np.testing.assert_array_equal(totals, total)
    assert (n, releases, weights) == (900, 3, (mu, lam))
    assert variance == pytest.approx(3 * mech.variance, rel=1e-15)
    # the model is fit's post-processing of the totals (n = all rows)
    counts = project_counts(total[:3] / mu, 900)
    np.testing.assert_array_equal(est.class_count_, counts)
    m = np.clip(total[3:12].reshape(3, 3) / counts[:, None], -1, 1)
    np.testing.assert_allclose(est.theta_, centre + half * m, rtol=1e-15)
    floor = np.minimum(np.sqrt(3 * mech.variance) / lam / counts[:, None], 1.0)
    np.testing.assert_allclose(est.variance_floor_, half**2 * floor, rtol=1e-14)
    assert np.all(est.var_ >= est.variance_floor_)


def test_first_release_is_fits_and_an_int_seed_does_not_repeat_its_noise():
    X, y = _data(300)
    one = _nb(random_state=3).partial_fit(X, y)
    fitted = _nb(random_state=3).fit(X, y)
    np.testing.assert_array_equal(one._running[0], fitted._running[0])
    np.testing.assert_array_equal(one.theta_, fitted.theta_)
    # the same batch twice: equal noise would make the totals twice the first
    # release, and the two releases' difference the exact difference of sums
    twice = _nb(random_state=3).partial_fit(X, y).partial_fit(X, y)
    assert not np.allclose(twice._running[0], 2 * fitted._running[0])


# --- accounting ------------------------------------------------------------------


@pytest.mark.parametrize("delta", [0.0, 1e-7])
def test_each_call_records_its_spend_and_privacy_spent_is_the_sum(delta):
    X, y = _data()
    est = _nb(epsilon=0.5, delta=delta, random_state=0)
    with track_budget() as acc:
        for k, (Xb, yb) in enumerate(_batches(X, y), start=1):
            est.partial_fit(Xb, yb)
            assert est.privacy_spent_.epsilon == pytest.approx(0.5 * k, rel=1e-15)
            assert est.privacy_spent_.delta == pytest.approx(delta * k, rel=1e-15)
    assert (
        acc.spends == [("PrivateGaussianNB.partial_fit", PrivacyBudget(0.5, delta))] * 3
    )
    assert acc.total.epsilon == pytest.approx(1.5)


def test_disjoint_batches_declared_to_the_ledger_compose_in_parallel():
    # the estimator records the sum; the ledger, told the rows, the maximum
    X, y = _data()
    est = _nb(random_state=0)
    start = 0
    with track_budget() as acc:
        for Xb, yb in _batches(X, y):
            with on_rows(np.arange(start, start + len(yb))):
                est.partial_fit(Xb, yb)
            start += len(yb)
    assert est.privacy_spent_ == PrivacyBudget(3.0, 0.0)
    assert acc.total == PrivacyBudget(1.0, 0.0)


def test_a_refused_call_draws_nothing_and_keeps_the_model():
    X, y = _data()
    (X1, y1), (X2, y2), _ = _batches(X, y)
    gen = np.random.default_rng(5)
    est = _nb(random_state=gen)
    with pytest.raises(BudgetExceededError):
        with track_budget(epsilon=1.5) as acc:
            est.partial_fit(X1, y1)
            before, state = _model(est), gen.bit_generator.state
            est.partial_fit(X2, y2)
    assert len(acc.spends) == 1
    assert gen.bit_generator.state == state
    _assert_same_model(_model(est), before)


# --- bad batches ------------------------------------------------------------------


def _with_nan(X, y):
    X = X.copy()
    X[3, 1] = np.nan
    return (X, y), {}


BAD = {
    "NaN": (_with_nan, "Input X contains NaN"),
    "n_features": (
        lambda X, y: ((X[:, :2], y), {}),
        "X has 2 features, but PrivateGaussianNB is expecting 3",
    ),
    "label outside": (
        lambda X, y: ((X, np.where(np.arange(len(y)) == 4, "d", y)), {}),
        r"labels not in classes_ \['a', 'b', 'c'\]: \['d'\]",
    ),
    "classes argument": (
        lambda X, y: ((X, y), {"classes": ["a", "b"]}),
        r"classes=\['a', 'b'\] differs from classes_=\['a', 'b', 'c'\]",
    ),
}


@pytest.mark.parametrize("bad", BAD, ids=list(BAD))
def test_a_bad_batch_raises_records_nothing_and_keeps_the_model(bad):
    X, y = _data()
    (X1, y1), (X2, y2), (X3, y3) = _batches(X, y)
    make_bad, match = BAD[bad]
    est = _nb(random_state=8).partial_fit(X1, y1)
    before = _model(est)
    args, kwargs = make_bad(X2, y2)
    with track_budget() as acc:
        with pytest.raises(ValueError, match=match):
            est.partial_fit(*args, **kwargs)
    assert acc.spends == []
    _assert_same_model(_model(est), before)
    # and the stream goes on as if the bad batch had never come
    est.partial_fit(X3, y3)
    clean = _nb(random_state=8).partial_fit(X1, y1).partial_fit(X3, y3)
    _assert_same_model(_model(est), _model(clean))


def test_first_call_classes_argument_must_equal_the_declared_classes():
    X, y = _data(100)
    with track_budget() as acc:
        with pytest.raises(ValueError, match=r"classes=\['a', 'c'\] differs from the "):
            _nb().partial_fit(X, y, classes=["a", "c"])
    assert acc.spends == []
    # equal (in any order) is accepted
    assert _nb().partial_fit(X, y, classes=["c", "b", "a"]).classes_.tolist() == CLASSES


def test_undeclared_classes_warn_and_the_classes_argument_declares_them():
    X, y = _data(100)
    with pytest.warns(PrivacyLeakWarning, match="classes was not declared"):
        est = _nb(classes=None).partial_fit(X, y)
    assert est.classes_.tolist() == sorted(set(y))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        est = _nb(classes=None).partial_fit(X, y, classes=CLASSES + ["z"])
    assert est.classes_.tolist() == CLASSES + ["z"]
    assert est.class_count_.shape == (4,)


def test_inputs_are_not_modified():
    X, y = _data()
    X_before, y_before = X.copy(), y.copy()
    est = _nb(random_state=0)
    for Xb, yb in _batches(X, y):
        est.partial_fit(Xb, yb)
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(y, y_before)


def test_fit_starts_new_totals_and_partial_fit_after_fit_adds_to_them():
    X, y = _data()
    (X1, y1), (X2, y2), (X3, y3) = _batches(X, y)
    est = _nb(random_state=2).partial_fit(X1, y1).partial_fit(X2, y2)
    est.fit(X3, y3)
    _assert_same_model(_model(est), _model(_nb(random_state=2).fit(X3, y3)))
    assert est.privacy_spent_ == PrivacyBudget(1.0, 0.0)
    est.partial_fit(X1, y1)
    assert est.privacy_spent_ == PrivacyBudget(2.0, 0.0)
    assert est.class_count_.sum() == pytest.approx(len(y3) + len(y1), rel=1e-12)
    assert est._running.releases == 2


def test_a_failed_fit_leaves_no_totals_behind():
    X, y = _data()
    (X1, y1), (X2, y2), _ = _batches(X, y)
    est = _nb(random_state=6).partial_fit(X1, y1)
    with pytest.raises(ValueError, match="Input X contains NaN"):
        est.fit(_with_nan(X2, y2)[0][0], y2)
    est.partial_fit(X2, y2)  # starts anew: one release, on X2 only
    _assert_same_model(_model(est), _model(_nb(random_state=6).partial_fit(X2, y2)))


def test_changed_release_weights_are_refused_before_the_spend():
    X, y = _data()
    (X1, y1), (X2, y2), _ = _batches(X, y)
    est = _nb(random_state=0).partial_fit(X1, y1)
    est.set_params(delta=1e-6)  # Gaussian weights: not addable to Laplace ones
    with track_budget() as acc:
        with pytest.raises(ValueError, match="release weights"):
            est.partial_fit(X2, y2)
    assert acc.spends == []


def test_dask_input_is_refused_with_a_type_error():
    da = pytest.importorskip("dask.array")
    X, y = _data(100)
    with track_budget() as acc:
        with pytest.raises(TypeError, match="partial_fit takes in-memory batches"):
            _nb().partial_fit(da.from_array(X, chunks=50), y)
    assert acc.spends == []
