"""PrivateGaussianNB: exact sensitivities and weights, spends, audit, parity."""

import itertools
import math
import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.mechanisms import GaussianMechanism, LaplaceMechanism
from skdp.naive_bayes import PrivateGaussianNB
from skdp.naive_bayes._gaussian_nb import (
    CLASS_SPREAD,
    nb_error_proxy,
    nb_release_weights,
    nb_sensitivity,
    nb_statistics,
)
from skdp.utils import audit_mechanism

LOWER = np.array([0.0, -2.0, 5.0])
UPPER = np.array([4.0, 6.0, 7.0])
CLASSES = ["a", "b", "c"]


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.choice(CLASSES, size=n, p=[0.5, 0.3, 0.2])
    shift = {"a": 0.0, "b": 1.0, "c": -0.8}
    centre = (LOWER + UPPER) / 2
    X = np.array([centre + shift[c] for c in y])
    X = X + rng.normal(0, 0.4, size=X.shape) * (UPPER - LOWER) / 4
    return np.clip(X, LOWER, UPPER), y


# --- exact: sensitivities by brute force -------------------------------------


@pytest.mark.parametrize(
    "weights", [None, (0.1, 0.5), (2.0, 3.0)], ids=["chosen", "small", "large"]
)
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_sensitivity_equals_brute_force_over_neighbouring_rows(weights, norm):
    # tiny data (n = 3, d = 2, K = 2) in [-1, 1] units; the last row is
    # replaced by every (w, k) with w on a grid holding the maximizers (the
    # ends for a class change; a = 1, b = -1 or -1/(2 lambda) within a class)
    mu, lam = nb_release_weights(2, norm) if weights is None else weights
    values = np.unique(
        np.concatenate([np.linspace(-1, 1, 9), [-1 / (2 * lam), 1 / (2 * lam)]])
    )
    base_w = np.array([[0.2, -0.5], [0.9, 0.1]])
    base_k = np.array([0, 1])
    stats = []
    for w0, w1, k in itertools.product(values, values, (0, 1)):
        W = np.vstack([base_w, [w0, w1]])
        stats.append(nb_statistics(W, np.append(base_k, k), 2, mu, lam))
    stats = np.array(stats)
    worst = 0.0
    for i in range(len(stats)):
        diff = stats - stats[i]
        if norm == "l1":
            worst = max(worst, np.abs(diff).sum(axis=1).max())
        else:
            worst = max(worst, np.sqrt((diff**2).sum(axis=1)).max())
    # attained (the grid holds the maximizers) and never exceeded; 1e-12: the
    # rounding of sums of 3 rows
    assert worst == pytest.approx(nb_sensitivity(2, mu, lam, norm), rel=1e-12)


def test_sensitivity_closed_forms_and_which_case_dominates():
    # class change: 2 mu + 2 d (1 + lambda); sqrt(2 mu^2 + 2 d (1 + lambda^2))
    assert nb_sensitivity(5, 0.7, 1.6) == pytest.approx(2 * 0.7 + 10 * 2.6)
    assert nb_sensitivity(5, 0.7, 1.2, "l2") == pytest.approx(
        math.sqrt(2 * 0.49 + 10 * (1 + 1.44))
    )
    # within a class with small weights (L2): 2 sqrt(d), the scaler's bound
    assert nb_sensitivity(5, 0.1, 0.5, "l2") == pytest.approx(2 * math.sqrt(5))
    # no varying feature: the counts alone
    assert nb_sensitivity(0, 0.5, 1.0) == pytest.approx(1.0)
    assert nb_sensitivity(0, 0.5, 1.0, "l2") == pytest.approx(math.sqrt(0.5))


# --- exact: the weights minimise the stated proxy --------------------------------


@pytest.mark.parametrize("d", [1, 4, 10, 100])
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_weights_minimise_the_error_proxy(d, norm):
    mu, lam = nb_release_weights(d, norm)
    best = nb_error_proxy(d, mu, lam, norm)
    for f_mu, f_lam in itertools.product([0.9, 1.0, 1.1], repeat=2):
        if (f_mu, f_lam) != (1.0, 1.0):
            assert nb_error_proxy(d, mu * f_mu, lam * f_lam, norm) > best
    if norm == "l1":
        s2 = CLASS_SPREAD**2
        a, b = 1 / s2, 1 / (2 * s2**2)
        assert lam == pytest.approx(4.5 ** (1 / 3), rel=1e-12)
        assert mu == pytest.approx(
            ((1 + lam) * (1 + d / 2) / (a + b / lam**2)) ** (1 / 3), rel=1e-12
        )


@pytest.mark.parametrize("d, ratio", [(1, 1.55), (10, 2.41), (100, 2.60)])
def test_joint_laplace_equals_the_best_split_and_beats_thirds(d, ratio):
    # separate Laplace releases at epsilon parts (e_c, e_1, e_2) of
    # sensitivities 2 (counts), 2d (sums), 2d (sums of squares, class change);
    # proxy weights of their noise variances: 1 + d/2, d a, d b
    s2 = CLASS_SPREAD**2
    w = np.array([1 + d / 2, d / s2, d / (2 * s2**2)])
    sens = np.array([2.0, 2.0 * d, 2.0 * d])

    def separate(parts):
        return float(np.sum(w * (sens / parts) ** 2))

    mu, lam = nb_release_weights(d, "l1")
    joint = nb_error_proxy(d, mu, lam, "l1")  # per unit epsilon
    best_split = np.array([mu, d, d * lam]) / (mu + d + d * lam)
    assert separate(best_split) == pytest.approx(joint, rel=1e-12)
    assert separate(np.full(3, 1 / 3)) / joint == pytest.approx(ratio, abs=0.01)


# --- the estimator's release ------------------------------------------------------


def test_estimator_uses_the_derived_sensitivity():
    X, y = _data()
    for delta, cls in ((0.0, LaplaceMechanism), (1e-6, GaussianMechanism)):
        est = PrivateGaussianNB(
            delta=delta, bounds_X=(LOWER, UPPER), classes=CLASSES, random_state=0
        ).fit(X, y)
        norm = "l2" if delta else "l1"
        mu, lam = nb_release_weights(3, norm)
        assert (est.count_weight_, est.moment_weight_) == (mu, lam)
        assert est.sensitivity_ == nb_sensitivity(3, mu, lam, norm)
        mech = est._mechanism(3, 3, 3)[0]
        assert isinstance(mech, cls)
        scale = mech.sigma if delta else mech.scale
        assert est.noise_scale_ == scale


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_recorded_spend_equals_the_guarantee(delta):
    X, y = _data()
    with track_budget() as acc:
        est = PrivateGaussianNB(
            epsilon=0.7, delta=delta, bounds_X=(LOWER, UPPER), classes=CLASSES
        ).fit(X, y)
    assert est.privacy_spent_ == PrivacyBudget(0.7, delta)
    assert acc.total == PrivacyBudget(0.7, delta)
    assert len(acc.spends) == 1


def test_cap_refuses_before_any_draw(monkeypatch):
    drawn = []
    for cls in (LaplaceMechanism, GaussianMechanism):
        monkeypatch.setattr(
            cls, "randomize", lambda self, *a, **k: drawn.append(1) or 1 / 0
        )
    X, y = _data()
    est = PrivateGaussianNB(epsilon=1.0, bounds_X=(LOWER, UPPER), classes=CLASSES)
    with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
        est.fit(X, y)
    assert drawn == []
    assert not hasattr(est, "privacy_spent_") and not hasattr(est, "theta_")


@pytest.mark.parametrize(
    "params, match",
    [
        ({"classes": ["a", "b"]}, "not in classes"),
        ({"priors": [0.5, 0.5]}, "Number of priors"),
        ({"priors": [0.5, 0.4, 0.2]}, "sum of the priors"),
        ({"bounds_X": (1.0, 0.0)}, "lower < upper"),
    ],
)
def test_bad_input_raises_before_anything_is_recorded(params, match):
    X, y = _data(200)
    kw = {"bounds_X": (LOWER, UPPER), "classes": CLASSES, **params}
    with track_budget() as acc, pytest.raises(ValueError, match=match):
        PrivateGaussianNB(**kw).fit(X, y)
    assert acc.spends == []


def test_audit_laplace_release_on_the_worst_pair():
    # d = 1, K = 2: a row at the top of class 0 replaced by the bottom of
    # class 1 (the class-change maximizer); log-likelihood-ratio statistic
    mu, lam = nb_release_weights(1, "l1")
    est = PrivateGaussianNB(epsilon=1.0, bounds_X=(-1.0, 1.0), classes=[0, 1])
    mech = est._mechanism(1, 2, 1)[0]
    base = np.array([[0.0]]), np.array([0])

    def stats(row):
        W = np.vstack([base[0], [[row[0]]]])
        return nb_statistics(W, np.append(base[1], row[1]), 2, mu, lam)

    f_a, f_b = stats((1.0, 0)), stats((-1.0, 1))
    assert np.abs(f_a - f_b).sum() == pytest.approx(mech.sensitivity, rel=1e-12)

    def release(row, n, rng):
        return mech.randomize(np.tile(stats(row), (n, 1)), random_state=rng)

    def llr(out):
        return (np.abs(out - f_b).sum(axis=1) - np.abs(out - f_a).sum(axis=1)) / (
            mech.scale
        )

    res = audit_mechanism(
        release, (1.0, 0), (-1.0, 1), n_samples=200_000, statistic=llr, random_state=3
    )
    assert res.epsilon_lower_bound <= 1.0
    # power: the audit is not vacuous (0.76 with this seed; the LLR of six
    # Laplace coordinates reaches epsilon only where all six are in their
    # tails, so the bound stays further below the claim than for one)
    assert res.epsilon_lower_bound > 0.5


# --- epsilon = inf: scikit-learn's GaussianNB ---------------------------------------


def test_infinite_epsilon_equals_sklearn_on_clipped_data():
    X, y = _data()
    X_out = X.copy()
    X_out[:5] += 100.0  # outside: clipped, as the private fits do
    est = PrivateGaussianNB(
        epsilon=np.inf, bounds_X=(LOWER, UPPER), classes=CLASSES
    ).fit(X_out, y)
    ref = GaussianNB().fit(np.clip(X_out, LOWER, UPPER), y)
    assert est.privacy_spent_ == PrivacyBudget(np.inf, 0.0)
    np.testing.assert_allclose(est.theta_, ref.theta_, rtol=1e-12)
    np.testing.assert_allclose(est.var_, ref.var_, rtol=1e-12)
    np.testing.assert_allclose(est.class_prior_, ref.class_prior_, rtol=1e-12)
    assert est.epsilon_ == pytest.approx(ref.epsilon_, rel=1e-12)
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), atol=1e-12)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))


# --- behaviour ------------------------------------------------------------------


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_means_within_noise_tolerance_and_counts_sum_to_n(delta):
    X, y = _data(20_000)
    est = PrivateGaussianNB(
        epsilon=1.0, delta=delta, bounds_X=(LOWER, UPPER), classes=CLASSES,
        random_state=4,
    ).fit(X, y)  # fmt: skip
    ref = GaussianNB().fit(X, y)
    assert est.class_count_.sum() == pytest.approx(20_000, rel=1e-12)
    # the mean error is at most the noise of S1 / c plus the count's share;
    # 6 standard deviations of the noise (in the user's units) per coordinate
    half = (UPPER - LOWER) / 2
    sd = est.noise_scale_ * (math.sqrt(2) if delta == 0 else 1.0)
    tol = 6 * sd * (1 + 1 / est.count_weight_) / ref.class_count_[:, None] * half
    assert np.all(np.abs(est.theta_ - ref.theta_) <= tol)


def test_variances_floored_at_a_public_positive_value():
    # one row per class: the noise dominates; variances stay positive
    X = np.array([[0.0, 0.0], [1.0, 1.0]])
    est = PrivateGaussianNB(
        epsilon=0.1, bounds_X=(0.0, 1.0), classes=[0, 1], random_state=0
    ).fit(X, [0, 1])
    assert np.all(est.var_ >= est.variance_floor_ + est.epsilon_)
    assert np.all(est.variance_floor_ > 0)
    assert np.all(est.var_ <= 0.25 + est.epsilon_)  # half-width^2
    assert np.all((est.theta_ >= 0) & (est.theta_ <= 1))
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_inputs_unchanged_same_seed_same_model_different_seeds_differ():
    X, y = _data()
    before = X.copy()
    kw = {"bounds_X": (LOWER, UPPER), "classes": CLASSES}
    a = PrivateGaussianNB(random_state=5, **kw).fit(X, y)
    b = PrivateGaussianNB(random_state=5, **kw).fit(X, y)
    c = PrivateGaussianNB(random_state=6, **kw).fit(X, y)
    np.testing.assert_array_equal(X, before)
    np.testing.assert_array_equal(a.theta_, b.theta_)
    assert not np.array_equal(a.theta_, c.theta_)


def test_declared_class_absent_from_y_gets_a_model():
    X, y = _data(500)
    keep = y != "c"
    est = PrivateGaussianNB(
        bounds_X=(LOWER, UPPER), classes=CLASSES, random_state=0
    ).fit(X[keep], y[keep])
    assert list(est.classes_) == CLASSES
    assert est.theta_.shape == (3, 3) and np.all(est.class_count_ > 0)
    assert set(est.predict(X)) <= set(CLASSES)


def test_priors_are_used_as_given():
    X, y = _data(500)
    est = PrivateGaussianNB(
        bounds_X=(LOWER, UPPER), classes=CLASSES, priors=[0.2, 0.3, 0.5]
    ).fit(X, y)
    np.testing.assert_array_equal(est.class_prior_, [0.2, 0.3, 0.5])


def test_undeclared_bounds_and_classes_warn_and_declared_do_not():
    X, y = _data(300)
    with pytest.warns(PrivacyLeakWarning) as record:
        PrivateGaussianNB().fit(X, y)
    text = " ".join(str(w.message) for w in record)
    assert "bounds_X" in text and "classes" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        PrivateGaussianNB(bounds_X=(LOWER, UPPER), classes=CLASSES).fit(X, y)


def test_bounds_forms_give_the_same_release():
    pd = pytest.importorskip("pandas")
    X, y = _data(500)
    frame = pd.DataFrame(X, columns=["p", "q", "r"])
    forms = [
        (LOWER, UPPER),
        [tuple(pair) for pair in zip(LOWER, UPPER)],
        {"r": (5.0, 7.0), "p": (0.0, 4.0), "q": (-2.0, 6.0)},
        {0: (0.0, 4.0), 1: (-2.0, 6.0), 2: (5.0, 7.0)},
    ]
    fits = [
        PrivateGaussianNB(bounds_X=form, classes=CLASSES, random_state=1).fit(frame, y)
        for form in forms
    ]
    for est in fits[1:]:
        np.testing.assert_array_equal(est.theta_, fits[0].theta_)


def test_pipeline_and_grid_search_over_epsilon():
    X, y = _data(600)
    pipe = make_pipeline(
        FunctionTransformer(),
        PrivateGaussianNB(bounds_X=(LOWER, UPPER), classes=CLASSES, random_state=0),
    )
    with track_budget() as acc:
        search = GridSearchCV(
            pipe, {"privategaussiannb__epsilon": [0.5, 5.0]}, cv=2
        ).fit(X, y)
    # 2 candidates x 2 folds + the refit, each one release
    assert len(acc.spends) == 5
    assert search.best_params_["privategaussiannb__epsilon"] in (0.5, 5.0)
    assert search.predict(X).shape == (600,)
