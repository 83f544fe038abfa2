"""The FM in three steps: statistics (mergeable, exact) -> fit_statistics."""

import pickle
from fractions import Fraction

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skdp._fm import DataDomain
from skdp._fm.statistics import clip_to_domain, compute_statistics
from skdp.accounting import PrivacyBudget, track_budget
from skdp.datasets import make_private_classification, make_private_regression
from skdp.exceptions import BudgetExceededError
from skdp.linear_model import FMLinearRegression, FMLogisticRegression, FMStatistics

DOMAINS = [
    dict(bounds_X=(-1, 1)),
    dict(data_norm=1.0),
    dict(data_norm=1.0, max_nonzero=2),
    dict(bounds_X=(-0.5, 2)),  # a box that excludes nothing but is off-centre
]
MECHANISMS = [dict(mechanism="laplace"), dict(mechanism="gaussian", delta=1e-6)]


def _data(kind, n=500, seed=0):
    if kind == "linear":
        X, y, _ = make_private_regression(n, 4, random_state=seed)
        return X * 1.3, y  # some rows outside the domain: clipping is exercised
    X, y, _ = make_private_classification(n, 4, random_state=seed)
    return X * 1.3, np.where(y == 1, "yes", "no")


def _estimator(kind, **params):
    if kind == "linear":
        return FMLinearRegression(bounds_y=(-1, 1), **params)
    return FMLogisticRegression(classes=["no", "yes"], **params)


@pytest.mark.parametrize("kind", ["linear", "logistic"])
@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_merged_statistics_of_any_split_fit_exactly_like_fit(
    kind, domain, mechanism, fit_intercept
):
    X, y = _data(kind)
    est = _estimator(
        kind,
        epsilon=1.0,
        random_state=4,
        fit_intercept=fit_intercept,
        **domain,
        **mechanism,
    )
    whole = est.statistics(X, y)
    reference = est.fit(X, y)
    ref_coef, ref_intercept = reference.coef_.copy(), reference.intercept_
    rng = np.random.default_rng(0)
    for _ in range(3):
        # random row order, random number and sizes of blocks (empty ones too)
        order = rng.permutation(len(X))
        cuts = np.sort(rng.integers(0, len(X), size=rng.integers(1, 8)))
        blocks = np.split(order, cuts)
        parts = [est.statistics(X[idx], y[idx]) for idx in blocks]
        rng.shuffle(parts)
        merged = sum(parts)
        assert merged == whole
        np.testing.assert_array_equal(merged.A, whole.A)
        np.testing.assert_array_equal(merged.b, whole.b)
        fitted = _estimator(
            kind,
            epsilon=1.0,
            random_state=4,
            fit_intercept=fit_intercept,
            **domain,
            **mechanism,
        ).fit_statistics(merged)
        np.testing.assert_array_equal(fitted.coef_, ref_coef)
        assert fitted.intercept_ == ref_intercept
        assert fitted.privacy_spent_ == reference.privacy_spent_
        assert fitted.n_samples_seen_ == len(X)


def test_fit_chunks_and_fit_statistics_equal_fit_bit_for_bit():
    X, y = _data("linear", n=700)
    est = _estimator("linear", epsilon=0.5, data_norm=1.0, random_state=1)
    ref = est.fit(X, y).coef_.copy()
    chunks = [(X[i : i + 97], y[i : i + 97]) for i in range(0, len(X), 97)]
    np.testing.assert_array_equal(est.fit_chunks(chunks).coef_, ref)


def test_statistics_are_the_exact_sums():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (60, 3)) * rng.uniform(0, 1, (60, 1)) ** 4
    y = rng.uniform(-2, 2, 60)
    dom = DataDomain(
        3,
        lower=-1,
        upper=1,
        y_bounds=(-1.5, 1.5),
        fit_intercept=True,
        intercept_scaling=0.75,
    )
    stats = compute_statistics(X, y, "squared", dom)
    Xc, yc = clip_to_domain(X, y, "squared", dom)
    Z = np.hstack([Xc, (-2 * yc)[:, None]])
    # the documented grid: 2^(E - 36) with 2^(E - 1) <= bound < 2^E (bounds 1
    # and 3: E = 1 and 2), values truncated toward zero; the intercept is exact
    E = np.array([1, 1, 1, 2])
    Zq = np.ldexp(np.trunc(np.ldexp(Z, 36 - E)), E - 36)
    assert np.all(np.abs(Zq - Z) < np.ldexp(1.0, E - 36))
    assert np.all(np.abs(Zq) <= np.abs(Z))
    Zq = np.insert(Zq, 3, 0.75, axis=1)
    exact = np.array(
        [
            [
                float(sum(Fraction(a) * Fraction(b) for a, b in zip(zi, zj)))
                for zj in Zq.T
            ]
            for zi in Zq.T
        ]
    )
    np.testing.assert_array_equal(stats.A, exact[:4, :4])
    np.testing.assert_array_equal(stats.b, exact[:4, 4])
    assert stats.n == 60


def test_statistics_object_is_small_picklable_and_sums():
    X, y = _data("linear", n=50)
    est = _estimator("linear", data_norm=1.0)
    a, b = est.statistics(X[:20], y[:20]), est.statistics(X[20:], y[20:])
    assert isinstance(a, FMStatistics)
    assert pickle.loads(pickle.dumps(a)) == a
    assert sum([a, b]) == a + b == b + a == est.statistics(X, y)
    assert len(repr(a)) < 120 and "n=20" in repr(a)
    assert a.fingerprint == b.fingerprint and len(a.fingerprint) == 16
    assert a.domain["data_norm"] == 1.0 and a.domain["objective"] == "squared"


def test_statistics_spend_nothing_and_set_no_attribute():
    X, y = _data("logistic", n=50)
    est = _estimator("logistic", data_norm=1.0)
    before = dict(vars(est))
    with track_budget() as acc:
        est.statistics(X, y)
    assert acc.spends == []
    assert vars(est) == before
    with pytest.raises(NotFittedError):
        check_is_fitted(est)


@pytest.mark.parametrize(
    "first, second, what",
    [
        (dict(data_norm=1.0), dict(data_norm=2.0), "data_norm"),
        (dict(data_norm=1.0), dict(bounds_X=(-1, 1)), "bounds_X"),
        (
            dict(data_norm=1.0),
            dict(data_norm=1.0, fit_intercept=False),
            "fit_intercept",
        ),
        (dict(data_norm=1.0), dict(data_norm=1.0, bounds_y=(-2, 2)), "bounds_y"),
    ],
)
def test_mismatched_statistics_refuse_to_merge(first, second, what):
    X, y = _data("linear", n=40)
    a = FMLinearRegression(**{"bounds_y": (-1, 1), **first}).statistics(X, y)
    b = FMLinearRegression(**{"bounds_y": (-1, 1), **second}).statistics(X, y)
    with pytest.raises(ValueError, match=what):
        a + b
    with pytest.raises(ValueError, match=what):
        FMLinearRegression(**{"bounds_y": (-1, 1), **second}).fit_statistics(a)


def test_mismatched_objectives_and_classes_refuse_to_merge():
    X, y = _data("logistic", n=40)
    lin = FMLinearRegression(data_norm=1.0, bounds_y=(0, 1))
    a = lin.statistics(X, (y == "yes").astype(float))
    b = FMLogisticRegression(data_norm=1.0, classes=["no", "yes"]).statistics(X, y)
    c = FMLogisticRegression(data_norm=1.0, classes=["yes", "zzz"]).statistics(
        X[y == "yes"], y[y == "yes"]
    )
    with pytest.raises(ValueError, match="objective"):
        a + b
    with pytest.raises(ValueError, match="classes"):
        b + c
    with pytest.raises(TypeError, match="FMStatistics"):
        b + 1


@pytest.mark.parametrize(
    "est, message",
    [
        (FMLinearRegression(bounds_y=(-1, 1)), "bounds_X and/or data_norm"),
        (FMLinearRegression(data_norm=1.0), "bounds_y"),
        (FMLogisticRegression(bounds_X=(-1, 1)), "classes"),
        (FMLogisticRegression(), "bounds_X and/or data_norm, classes"),
    ],
)
def test_statistics_need_a_declared_domain(est, message):
    X, y = _data("logistic", n=20)
    y = (y == "yes").astype(float)
    with pytest.raises(ValueError, match=message):
        est.statistics(X, y)


def test_fit_statistics_checks_and_leaves_no_model_on_refusal():
    X, y = _data("linear", n=60)
    est = _estimator("linear", data_norm=1.0, epsilon=1.0)
    stats = est.statistics(X, y)
    with pytest.raises(TypeError, match="FMStatistics"):
        est.fit_statistics((stats.A, stats.b))
    with pytest.raises(ValueError, match="at least 2 samples"):
        est.fit_statistics(est.statistics(X[:1], y[:1]))
    with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
        est.fit_statistics(stats)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    with track_budget() as acc:
        est.fit_statistics(stats)
    assert acc.spends == [("FMLinearRegression", PrivacyBudget(1.0))]


def test_statistics_carry_feature_names():
    pd = pytest.importorskip("pandas")
    X, y = _data("linear", n=40)
    df = pd.DataFrame(X, columns=list("abcd"))
    est = _estimator("linear", data_norm=1.0, random_state=0)
    stats = est.statistics(df[:15], y[:15]) + est.statistics(df[15:], y[15:])
    est.fit_statistics(stats)
    assert list(est.feature_names_in_) == list("abcd")
    with pytest.raises(ValueError, match="feature_names"):
        stats + est.statistics(X, y)


def test_refused_partial_fit_keeps_the_earlier_release():
    X, y = _data("linear", n=80)
    est = _estimator("linear", data_norm=1.0, epsilon=1.0, random_state=0)
    with pytest.raises(NotFittedError):
        with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
            est.partial_fit(X[:40], y[:40])
        check_is_fitted(est)
    est.partial_fit(X[:40], y[:40])
    coef, state = est.coef_.copy(), est._stats
    with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
        est.partial_fit(X[40:], y[40:])
    np.testing.assert_array_equal(est.coef_, coef)
    assert est._stats is state and est.n_samples_seen_ == 40
    assert est.privacy_spent_ == PrivacyBudget(1.0)


def test_linear_sums_may_have_several_targets():
    # b of shape (p, k): what a multinomial objective needs, merged exactly too
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (40, 3))
    Y = rng.integers(0, 2, (40, 2)).astype(float)
    dom = DataDomain(3, lower=-1, upper=1, fit_intercept=True)
    whole = compute_statistics(X, Y, "logistic_taylor", dom)
    parts = compute_statistics(X[:13], Y[:13], "logistic_taylor", dom)
    parts = parts + compute_statistics(X[13:], Y[13:], "logistic_taylor", dom)
    assert parts == whole and whole.b.shape == (4, 2)
    Xa = np.column_stack([X, np.ones(40)])
    # each x moves by < 2^-35 on the grid (bound 1): |b error| < 40 * 0.5 * 2^-35
    np.testing.assert_allclose(whole.b, Xa.T @ (0.5 - Y), rtol=0, atol=20 * 2.0**-35)
    one = compute_statistics(X, Y[:, 0], "logistic_taylor", dom)
    np.testing.assert_array_equal(one.b, whole.b[:, 0])
    with pytest.raises(ValueError, match="targets"):
        one + whole
