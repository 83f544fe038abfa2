"""Private random trees and forests: exact sensitivity and pmf, spends, audit."""

import itertools
import math
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp._trees import (
    LEAF_SIGNAL,
    MAX_DEPTH,
    TREE_LEAF_SIGNAL,
    apply_tree,
    auto_depth,
    leaf_class_counts,
    leaf_frequencies,
    leaf_proba,
    leaf_sensitivity,
    pooled_prior,
    random_structure,
    release_leaf_counts,
)
from skdp.accounting import PrivacyBudget, track_budget
from skdp.ensemble import PrivateRandomForestClassifier
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.tree import PrivateDecisionTreeClassifier
from skdp.utils import audit_mechanism

LOWER, UPPER = np.array([0.0, -2.0]), np.array([4.0, 6.0])


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(LOWER, UPPER, (n, 2))
    y = np.where(X[:, 0] / 4 + (X[:, 1] + 2) / 8 > 1, "yes", "no")
    return X, y


# --- exact: structure, sensitivity, noise ---------------------------------------


def test_structure_reads_no_data_and_splits_inside_the_cells():
    feature, threshold = random_structure(LOWER, UPPER, 6, np.random.default_rng(0))
    lo = {0: LOWER.copy()}
    hi = {0: UPPER.copy()}
    for i in range(2**6 - 1):
        f, t = feature[i], threshold[i]
        assert lo[i][f] <= t <= hi[i][f]
        lo[2 * i + 1], hi[2 * i + 1] = lo[i], hi[i].copy()
        hi[2 * i + 1][f] = t
        lo[2 * i + 2], hi[2 * i + 2] = lo[i].copy(), hi[i]
        lo[2 * i + 2][f] = t
    # the fitted structure is the same whatever the data (same seed)
    X, y = _data()
    kw = {"bounds_X": (LOWER, UPPER), "classes": ["no", "yes"], "max_depth": 6}
    a = PrivateDecisionTreeClassifier(random_state=3, **kw).fit(X, y)
    b = PrivateDecisionTreeClassifier(random_state=3, **kw).fit(X[::-1] * 0.5, y)
    np.testing.assert_array_equal(a.feature_, b.feature_)
    np.testing.assert_array_equal(a.threshold_, b.threshold_)


def test_zero_width_features_are_never_split_on():
    feature, _ = random_structure(
        np.array([0.0, 1.0, 0.0]), np.array([1.0, 1.0, 1.0]), 5,
        np.random.default_rng(0),
    )  # fmt: skip
    assert set(feature.tolist()) == {0, 2}


def test_leaf_table_sensitivity_equals_brute_force():
    # tiny data (n = 3, 2 features, 2 classes) on a depth-2 tree; the last row
    # is replaced by every (x, class) on a grid that holds every leaf
    feature, threshold = random_structure(LOWER, UPPER, 2, np.random.default_rng(1))
    base_X = np.array([[1.0, 0.0], [3.0, 5.0]])
    base_y = np.array([0, 1])
    tables = []
    for a, b, c in itertools.product(
        np.linspace(0, 4, 9), np.linspace(-2, 6, 9), (0, 1)
    ):
        X = np.vstack([base_X, [a, b]])
        leaves = apply_tree(X, feature, threshold)
        tables.append(leaf_class_counts(leaves, np.append(base_y, c), 4, 2).ravel())
    tables = np.array(tables)
    worst = max(np.abs(tables - t).sum(axis=1).max() for t in tables)
    assert worst == leaf_sensitivity() == 2


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_worst_pair_log_ratio_is_exactly_epsilon(epsilon):
    # the release is a product of discrete Laplace pmfs exp(-eps |k| / 2); for
    # tables a, b differing by -1 and +1 in two cells the largest log ratio
    # over all outputs is exactly epsilon (computed over a window of outputs)
    def log_pmf(k):
        return -epsilon * np.abs(k) / leaf_sensitivity()

    a = np.array([5, 3])  # the two cells that move
    b = np.array([4, 4])
    out = np.array(list(itertools.product(range(-5, 15), repeat=2)))
    ratio = (log_pmf(out - a) - log_pmf(out - b)).sum(axis=1)
    assert ratio.max() == pytest.approx(epsilon, rel=1e-12)


def test_released_noise_has_the_discrete_laplace_pmf():
    eps, n = 1.0, 400_000
    noise = release_leaf_counts(
        np.zeros((n, 1), dtype=np.int64), eps, np.random.default_rng(0)
    ).ravel()
    r = math.exp(-eps / leaf_sensitivity())
    for k in range(-3, 4):
        p = (1 - r) / (1 + r) * r ** abs(k)
        got = np.mean(noise == k)
        assert abs(got - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_audit_tree_release_on_the_worst_pair():
    # one row moves from (leaf 0, class 0) to (leaf 1, class 1) of a 2 x 2 table
    eps = 1.0
    base = np.array([[3, 1], [0, 2]])
    moved = base + np.array([[-1, 0], [0, 1]])

    def release(table, n, rng):
        return release_leaf_counts(np.tile(table.ravel(), (n, 1)), eps, rng)

    def llr(out):
        def log_pmf(t):
            return -eps * np.abs(out - t.ravel()).sum(axis=1) / leaf_sensitivity()

        return log_pmf(base) - log_pmf(moved)

    res = audit_mechanism(
        release, base, moved, n_samples=200_000, statistic=llr, random_state=1
    )
    assert res.epsilon_lower_bound <= eps
    assert res.epsilon_lower_bound > 0.6  # not vacuous


def test_auto_depth_follows_the_stated_rule():
    for n, eps, trees in [(30_000, 1.0, 10), (2000, 0.5, 1), (10**6, 5.0, 30)]:
        noise = 2 * math.sqrt(2) / eps
        depth = auto_depth(n, eps, trees)
        assert n / 2**depth >= LEAF_SIGNAL * math.sqrt(trees) * noise
        assert n / 2 ** (depth + 1) < LEAF_SIGNAL * math.sqrt(trees) * noise
    assert auto_depth(10, 0.01) == 1
    # the single tree aims at TREE_LEAF_SIGNAL rows per noise s.d.
    tree = PrivateDecisionTreeClassifier(epsilon=1.0, bounds_X=(0, 1), classes=[0, 1])
    X = np.random.default_rng(0).uniform(size=(2000, 2))
    depth = tree.fit(X, X[:, 0] > 0.5).max_depth_
    assert depth == auto_depth(2000, 1.0, leaf_signal=TREE_LEAF_SIGNAL)
    assert 2000 / 2**depth >= TREE_LEAF_SIGNAL * 2 * math.sqrt(2)
    assert 2000 / 2 ** (depth + 1) < TREE_LEAF_SIGNAL * 2 * math.sqrt(2)
    assert auto_depth(10, np.inf) == MAX_DEPTH


def test_leaf_probabilities_shrink_to_the_pooled_prior():
    counts = np.array([[0, 0], [-3, 1], [40, 60]])
    prior = pooled_prior([counts])
    np.testing.assert_allclose(prior, [37 / 98, 61 / 98])  # unclipped sums
    a = 0.5 * 2 * math.sqrt(2) / 0.5
    np.testing.assert_allclose(
        leaf_proba(counts, prior, 0.5),
        [prior, (np.array([0, 1]) + a * prior) / (1 + a), (counts[2] + a * prior)
         / (100 + a)],
    )  # fmt: skip
    np.testing.assert_allclose(
        leaf_proba(counts, prior, np.inf), [prior, [0, 1], [0.4, 0.6]]
    )
    assert np.allclose(pooled_prior([np.array([[-5, -1]])]), 0.5)


def test_forest_votes_are_the_mean_of_unshrunk_leaf_frequencies():
    X, y = make_classification(300, 4, random_state=0)
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    forest = PrivateRandomForestClassifier(
        4, epsilon=0.5, bounds_X=(0, 1), classes=[0, 1], random_state=0
    ).fit(X, y)
    prior = forest.class_prior_
    expected = np.zeros((len(X), 2))
    for tree in forest.estimators_:
        counts = np.maximum(tree.leaf_counts_[tree.apply(X)], 0)
        total = counts.sum(axis=1, keepdims=True)
        expected += np.where(total > 0, counts / np.maximum(total, 1), prior)
    np.testing.assert_allclose(forest.predict_proba(X), expected / 4)
    # a noise-only leaf votes its own frequencies, a leaf with no positive
    # count the prior: nothing is pulled towards the majority class
    np.testing.assert_allclose(
        leaf_frequencies(np.array([[3, -2], [-1, 0], [1, 3]]), prior),
        [[1, 0], prior, [0.25, 0.75]],
    )


# --- spends ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls", [PrivateDecisionTreeClassifier, PrivateRandomForestClassifier]
)
def test_recorded_spend_equals_the_guarantee(cls):
    X, y = _data()
    with track_budget() as acc:
        est = cls(epsilon=0.7, bounds_X=(LOWER, UPPER), classes=["no", "yes"]).fit(X, y)
    assert est.privacy_spent_ == PrivacyBudget(0.7, 0.0)
    assert acc.total == PrivacyBudget(0.7, 0.0)
    assert len(acc.spends) == 1


def test_forest_parts_are_disjoint_and_cover_every_row():
    # at epsilon = inf the tables are exact: together they count every row once
    X, y = _data(1001)
    forest = PrivateRandomForestClassifier(
        7, epsilon=np.inf, bounds_X=(LOWER, UPPER), classes=["no", "yes"],
        random_state=0,
    ).fit(X, y)  # fmt: skip
    totals = sum(t.leaf_counts_.sum(axis=0) for t in forest.estimators_)
    np.testing.assert_array_equal(totals, [np.sum(y == "no"), np.sum(y == "yes")])
    sizes = sorted(int(t.leaf_counts_.sum()) for t in forest.estimators_)
    assert sizes == [143] * 7


@pytest.mark.parametrize(
    "cls", [PrivateDecisionTreeClassifier, PrivateRandomForestClassifier]
)
def test_cap_refuses_before_any_draw(cls, monkeypatch):
    import skdp._trees

    drawn = []
    monkeypatch.setattr(
        skdp._trees, "integer_laplace_noise", lambda *a: drawn.append(1) or 1 / 0
    )
    X, y = _data(500)
    est = cls(epsilon=1.0, bounds_X=(LOWER, UPPER), classes=["no", "yes"])
    with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
        est.fit(X, y)
    assert drawn == []
    assert not hasattr(est, "privacy_spent_")


@pytest.mark.parametrize(
    "cls", [PrivateDecisionTreeClassifier, PrivateRandomForestClassifier]
)
def test_bad_input_raises_before_anything_is_recorded(cls):
    X, y = _data(200)
    with track_budget() as acc, pytest.raises(ValueError, match="not in classes"):
        cls(bounds_X=(LOWER, UPPER), classes=["no"]).fit(X, y)
    assert acc.spends == []


# --- epsilon = inf and behaviour ----------------------------------------------------


def test_infinite_epsilon_tree_gives_the_leaf_frequencies():
    X, y = _data()
    tree = PrivateDecisionTreeClassifier(
        epsilon=np.inf, bounds_X=(LOWER, UPPER), classes=["no", "yes"], max_depth=4,
        random_state=0,
    ).fit(X, y)  # fmt: skip
    leaves = tree.apply(X)
    counts = np.array([[np.sum(y == c) for c in ("no", "yes")]])
    np.testing.assert_allclose(tree.class_prior_, counts[0] / counts.sum())
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        expected = np.mean(y[rows] == "yes")
        np.testing.assert_allclose(tree.predict_proba(X[rows])[:, 1], expected)


@pytest.mark.parametrize(
    "cls, floor",
    [(PrivateDecisionTreeClassifier, 0.8), (PrivateRandomForestClassifier, 0.9)],
)
def test_learns_a_clear_boundary_at_epsilon_one(cls, floor):
    X, y = _data(20_000)
    X_test, y_test = _data(5000, seed=1)
    est = cls(
        epsilon=1.0, bounds_X=(LOWER, UPPER), classes=["no", "yes"], random_state=0
    ).fit(X, y)
    assert est.score(X_test, y_test) > floor
    proba = est.predict_proba(X_test)
    assert np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize(
    "cls", [PrivateDecisionTreeClassifier, PrivateRandomForestClassifier]
)
def test_inputs_unchanged_same_seed_same_model_different_seeds_differ(cls):
    X, y = _data(2000)
    before = X.copy()
    kw = {"bounds_X": (LOWER, UPPER), "classes": ["no", "yes"]}
    probas = [cls(random_state=s, **kw).fit(X, y).predict_proba(X) for s in (5, 5, 6)]
    np.testing.assert_array_equal(X, before)
    np.testing.assert_array_equal(probas[0], probas[1])
    assert not np.array_equal(probas[0], probas[2])


@pytest.mark.parametrize(
    "cls", [PrivateDecisionTreeClassifier, PrivateRandomForestClassifier]
)
def test_undeclared_bounds_and_classes_warn_and_declared_do_not(cls):
    X, y = _data(300)
    with pytest.warns(PrivacyLeakWarning) as record:
        cls().fit(X, y)
    text = " ".join(str(w.message) for w in record)
    assert "bounds_X" in text and "classes" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        cls(bounds_X=(LOWER, UPPER), classes=["no", "yes"]).fit(X, y)


def test_forest_bounds_forms_give_the_same_forest():
    pd = pytest.importorskip("pandas")
    X, y = _data(500)
    frame = pd.DataFrame(X, columns=["p", "q"])
    forms = [
        (LOWER, UPPER),
        [(0.0, 4.0), (-2.0, 6.0)],
        {"q": (-2.0, 6.0), "p": (0.0, 4.0)},
        {1: (-2.0, 6.0), 0: (0.0, 4.0)},
    ]
    probas = [
        PrivateRandomForestClassifier(bounds_X=f, classes=["no", "yes"], random_state=1)
        .fit(frame, y)
        .predict_proba(frame)
        for f in forms
    ]
    for p in probas[1:]:
        np.testing.assert_array_equal(p, probas[0])


@pytest.mark.parametrize(
    "cls, name",
    [
        (PrivateDecisionTreeClassifier, "privatedecisiontreeclassifier"),
        (PrivateRandomForestClassifier, "privaterandomforestclassifier"),
    ],
)
def test_pipeline_and_grid_search_over_epsilon(cls, name):
    X, y = _data(600)
    pipe = make_pipeline(
        FunctionTransformer(),
        cls(bounds_X=(LOWER, UPPER), classes=["no", "yes"], random_state=0),
    )
    with track_budget() as acc:
        search = GridSearchCV(pipe, {f"{name}__epsilon": [0.5, 5.0]}, cv=2).fit(X, y)
    assert len(acc.spends) == 5  # 2 candidates x 2 folds + the refit
    assert search.best_params_[f"{name}__epsilon"] in (0.5, 5.0)
    assert search.predict(X).shape == (600,)
