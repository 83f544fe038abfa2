"""PrivateKMeans: exact sensitivities and weights, spends, audit, exact Lloyd."""

import itertools
import math
import warnings

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp._trees import apply_tree, random_structure
from skdp.accounting import PrivacyBudget, track_budget
from skdp.cluster import PrivateKMeans
from skdp.cluster._kmeans import (
    AUTO_ITERATIONS,
    CENTRE_SPREAD,
    _assign,
    coreset_depth,
    kmeans_count_weight,
    kmeans_iterations,
    kmeans_sensitivity,
    kmeans_statistics,
)
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.mechanisms import LaplaceMechanism
from skdp.utils import audit_mechanism

CENTRES = np.array([[0.2, 0.3], [0.8, 0.7], [0.3, 0.8]])


def _blobs(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = np.clip(CENTRES[y] + rng.normal(0, 0.05, (n, 2)), 0, 1)
    return X, y


# --- exact: sensitivity by brute force ----------------------------------------


def _worst_l1(labels_of, mu):
    """Largest L1 change of the released vector when the last of 3 rows is
    replaced, over a grid of rows in [-1, 1]^2 holding the corners."""
    base = np.array([[0.2, -0.5], [0.9, 0.1]])
    grid = np.linspace(-1, 1, 9)
    stats = []
    for a, b in itertools.product(grid, grid):
        W = np.vstack([base, [a, b]])
        labels, k = labels_of(W)
        stats.append(kmeans_statistics(W, labels, k, mu))
    stats = np.array(stats)
    return max(np.abs(stats - s).sum(axis=1).max() for s in stats)


@pytest.mark.parametrize("mu", [None, 0.1, 3.0], ids=["chosen", "small", "large"])
def test_lloyd_release_sensitivity_equals_brute_force(mu):
    # cells: the nearest of 3 public centres (in [-1, 1] units)
    mu = kmeans_count_weight(2) if mu is None else mu
    centres = np.array([[-0.5, -0.5], [0.5, 0.5], [-0.5, 0.6]])

    def labels_of(W):
        return _assign(W, centres), 3

    # attained (the corners change cluster) and never exceeded
    assert _worst_l1(labels_of, mu) == pytest.approx(
        kmeans_sensitivity(2, mu), rel=1e-12
    )


def test_coreset_release_sensitivity_equals_brute_force():
    # cells: the leaves of a data-free random tree of depth 3
    mu = kmeans_count_weight(2)
    feature, threshold = random_structure(
        -np.ones(2), np.ones(2), 3, np.random.default_rng(4)
    )

    def labels_of(W):
        return apply_tree(W, feature, threshold), 8

    assert _worst_l1(labels_of, mu) == pytest.approx(
        kmeans_sensitivity(2, mu), rel=1e-12
    )


def test_count_weight_minimises_the_centre_error():
    for d in (1, 2, 6, 64):
        mu = kmeans_count_weight(d)
        assert mu**3 == pytest.approx(CENTRE_SPREAD**2 * d, rel=1e-12)

        def err(m, d=d):
            return (m + d) ** 2 * (1 + CENTRE_SPREAD**2 / m**2)

        assert err(mu) < min(err(0.9 * mu), err(1.1 * mu))


def test_iterations_and_coreset_depth_follow_the_stated_rules():
    # the largest T whose per-iteration noise stays within 0.01 half-width
    n, d, k, eps = 30_000, 6, 5, 1.0
    mu = kmeans_count_weight(d)
    sigma = (
        (math.sqrt(2) * kmeans_sensitivity(d, mu) * math.sqrt(1 + 0.45**2 / mu**2))
        * k
        / (n * eps)
    )
    assert kmeans_iterations(n, d, k, eps) == min(
        max(math.floor(0.01 / sigma), AUTO_ITERATIONS[0]), AUTO_ITERATIONS[1]
    )
    assert kmeans_iterations(100, d, k, 0.1) == AUTO_ITERATIONS[0]
    assert kmeans_iterations(10**7, d, k, 10.0) == AUTO_ITERATIONS[1]
    # coreset: n 2^-D >= 4 count-noise sd
    sd = math.sqrt(2) * kmeans_sensitivity(d, mu) / (mu * 0.25)
    depth = coreset_depth(n, d, 0.25)
    assert n / 2**depth >= 4 * sd > n / 2 ** (depth + 1)


# --- the estimator's releases and spends ----------------------------------------


def test_estimator_plans_t_plus_one_releases_at_equal_shares():
    X, _ = _blobs()
    est = PrivateKMeans(3, epsilon=0.8, bounds_X=(0, 1), random_state=0)
    T, depth, mu, start, step = est._plan(X.shape[0], 2)
    assert T == kmeans_iterations(X.shape[0], 2, 3, 0.8)
    for mech, cells in ((start, 2**depth), (step, 3)):
        assert isinstance(mech, LaplaceMechanism)
        assert mech.epsilon == pytest.approx(0.8 / (T + 1), rel=1e-15)
        assert mech.sensitivity == kmeans_sensitivity(2, mu)
        assert mech.dimension == cells * 3
    est.fit(X)
    assert est.n_iter_ == T and est.coreset_depth_ == depth


def test_recorded_spend_equals_the_guarantee():
    X, _ = _blobs()
    with track_budget() as acc:
        est = PrivateKMeans(3, epsilon=0.7, bounds_X=(0, 1), n_iter=4).fit(X)
    assert est.privacy_spent_ == PrivacyBudget(0.7, 0.0)
    assert acc.total == PrivacyBudget(0.7, 0.0)
    assert len(acc.spends) == 1


def test_cap_refuses_before_any_draw(monkeypatch):
    drawn = []
    monkeypatch.setattr(
        LaplaceMechanism, "randomize", lambda *a, **k: drawn.append(1) or 1 / 0
    )
    X, _ = _blobs(500)
    est = PrivateKMeans(3, epsilon=1.0, bounds_X=(0, 1))
    with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
        est.fit(X)
    assert drawn == []
    assert not hasattr(est, "privacy_spent_")
    assert not hasattr(est, "cluster_centers_")


@pytest.mark.parametrize(
    "params, X, match",
    [
        ({"n_clusters": 5}, np.zeros((4, 2)), "n_samples=4 should be >= n_clusters=5"),
        ({"bounds_X": (1.0, 0.0)}, np.zeros((10, 2)), "lower < upper"),
    ],
)
def test_bad_input_raises_before_anything_is_recorded(params, X, match):
    kw = {"bounds_X": (0, 1), **params}
    with track_budget() as acc, pytest.raises(ValueError, match=match):
        PrivateKMeans(**kw).fit(X)
    assert acc.spends == []


def test_audit_one_lloyd_release_on_the_worst_pair():
    # d = 1, k = 2 clusters of public centres -1/2 and 1/2: the row at +1
    # (cluster 1) replaced by the row at -1 (cluster 0) moves both counts and
    # both sums: the L1 change is the sensitivity
    mu = kmeans_count_weight(1)
    mech = LaplaceMechanism(1.0, kmeans_sensitivity(1, mu), dimension=4)
    centres = np.array([[-0.5], [0.5]])
    base = np.array([[0.1], [0.7]])

    def stats(w):
        W = np.vstack([base, [[w]]])
        return kmeans_statistics(W, _assign(W, centres), 2, mu)

    f_a, f_b = stats(1.0), stats(-1.0)
    assert np.abs(f_a - f_b).sum() == pytest.approx(mech.sensitivity, rel=1e-12)

    def release(w, n, rng):
        return mech.randomize(np.tile(stats(w), (n, 1)), random_state=rng)

    def llr(out):
        return (np.abs(out - f_b).sum(axis=1) - np.abs(out - f_a).sum(axis=1)) / (
            mech.scale
        )

    res = audit_mechanism(
        release, 1.0, -1.0, n_samples=200_000, statistic=llr, random_state=3
    )
    assert res.epsilon_lower_bound <= 1.0
    assert res.epsilon_lower_bound > 0.5  # not vacuous


# --- epsilon = inf: scikit-learn's Lloyd from the same start ------------------------


def test_infinite_epsilon_is_lloyd_from_the_released_start():
    X, _ = _blobs(3000)
    X_out = X.copy()
    X_out[:5] += 3.0  # outside: clipped
    est = PrivateKMeans(3, epsilon=np.inf, bounds_X=(0, 1), random_state=2).fit(X_out)
    ref = KMeans(
        3, init=est.initial_centers_, n_init=1, tol=0.0, algorithm="lloyd"
    ).fit(np.clip(X_out, 0, 1))
    assert est.privacy_spent_ == PrivacyBudget(np.inf, 0.0)
    # sums in another order: rounding only
    np.testing.assert_allclose(est.cluster_centers_, ref.cluster_centers_, atol=1e-12)
    np.testing.assert_array_equal(est.labels_, ref.labels_)
    assert est.score(X) == pytest.approx(ref.score(X), rel=1e-9)


# --- behaviour ---------------------------------------------------------------------


def test_recovers_separated_clusters_at_epsilon_one():
    X, y = _blobs(20_000)
    est = PrivateKMeans(3, epsilon=1.0, bounds_X=(0, 1), random_state=1).fit(X)
    got = est.cluster_centers_[np.argsort(est.cluster_centers_[:, 0])]
    want = CENTRES[np.argsort(CENTRES[:, 0])]
    # per-coordinate noise about 0.01 half-width (the T rule): 0.02 = 4 sd
    np.testing.assert_allclose(got, want, atol=0.02)
    assert adjusted_rand_score(y, est.predict(X)) > 0.95


def test_labels_are_the_predictions_on_the_training_rows():
    X, _ = _blobs(2000)
    est = PrivateKMeans(3, bounds_X=(0, 1), random_state=0)
    labels = est.fit_predict(X)
    np.testing.assert_array_equal(labels, est.predict(X))
    dist = est.transform(X)
    assert dist.shape == (2000, 3)
    assert est.score(X) == pytest.approx(-np.sum(dist.min(axis=1) ** 2), rel=1e-9)
    assert not hasattr(est, "inertia_")


def test_inputs_unchanged_same_seed_same_model_different_seeds_differ():
    X, _ = _blobs(2000)
    before = X.copy()
    a = PrivateKMeans(3, bounds_X=(0, 1), random_state=5).fit(X)
    b = PrivateKMeans(3, bounds_X=(0, 1), random_state=5).fit(X)
    c = PrivateKMeans(3, bounds_X=(0, 1), random_state=6).fit(X)
    np.testing.assert_array_equal(X, before)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert not np.array_equal(a.cluster_centers_, c.cluster_centers_)


def test_undeclared_bounds_warn_and_declared_do_not():
    X, _ = _blobs(300)
    with pytest.warns(PrivacyLeakWarning, match="bounds_X"):
        PrivateKMeans(3).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        PrivateKMeans(3, bounds_X=(0, 1)).fit(X)


def test_zero_width_feature_and_centres_inside_the_box():
    X, _ = _blobs(1000)
    X = np.column_stack([X, np.full(1000, 5.0)])
    X[0, :2], X[1, :2] = 0.0, 1.0  # the inferred box is [0, 1]^2 x {5}
    with pytest.warns(PrivacyLeakWarning):
        est = PrivateKMeans(3, epsilon=0.1, random_state=0).fit(X)
    assert np.all(est.cluster_centers_[:, 2] == 5.0)
    inside = est.cluster_centers_[:, :2]
    assert np.all((inside >= 0) & (inside <= 1))


def test_pipeline_and_grid_search_over_epsilon():
    X, _ = _blobs(900)
    pipe = make_pipeline(
        FunctionTransformer(), PrivateKMeans(3, bounds_X=(0, 1), random_state=0)
    )
    with track_budget() as acc:
        search = GridSearchCV(pipe, {"privatekmeans__epsilon": [0.5, 5.0]}, cv=2)
        search.fit(X)
    # 2 candidates x 2 folds + the refit, each one fit
    assert len(acc.spends) == 5
    assert search.best_params_["privatekmeans__epsilon"] in (0.5, 5.0)
    assert search.predict(X).shape == (900,)
