"""ExponentialLabelRelease: exact law, stability, RR(eps/2) equivalence, audit, API."""

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import special, stats

from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import PrivacyLeakWarning, ReproducibleNoiseWarning
from skdp.preprocessing import (
    ExponentialLabelRelease,
    RandomizedResponse,
    changed_labels_log_pmf,
    label_flip_probability,
)
from skdp.preprocessing._exponential_label import (
    sample_changed_count,
    two_step_release,
    uniform_subset_mask,
)
from skdp.utils import audit_mechanism


def _brute_force_law(y, n_classes, epsilon):
    """P[y~] ∝ exp(eps q(y, y~) / 2) over all C^n label vectors."""
    outputs = np.array(list(itertools.product(range(n_classes), repeat=y.size)))
    log_w = epsilon * (outputs == y).sum(axis=1) / 2
    return outputs, np.exp(log_w - special.logsumexp(log_w))


def _two_step_law(outputs, y, n_classes, epsilon):
    """The sampler's law: P(k) from its log pmf, uniform within distance k."""
    n = y.size
    log_pk = changed_labels_log_pmf(n, epsilon, n_classes)
    k = (outputs != y).sum(axis=1)
    log_count = (
        special.gammaln(n + 1)
        - special.gammaln(k + 1)
        - special.gammaln(n - k + 1)
        + k * math.log(n_classes - 1)
    )
    return np.exp(log_pk[k] - log_count)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("n", range(1, 7))
@pytest.mark.parametrize("epsilon", [0.3, 2.0, 9.0])
def test_two_step_law_equals_brute_force_enumeration(n, n_classes, epsilon):
    rng = np.random.default_rng(n * 10 + n_classes)
    y = rng.integers(0, n_classes, size=n)
    outputs, brute = _brute_force_law(y, n_classes, epsilon)
    two_step = _two_step_law(outputs, y, n_classes, epsilon)
    np.testing.assert_allclose(two_step, brute, rtol=1e-10, atol=0)


@pytest.mark.parametrize(("n", "n_classes", "epsilon"), [(4, 3, 1.0), (5, 2, 3.0)])
def test_sampler_draws_follow_brute_force_law(n, n_classes, epsilon):
    rng = np.random.default_rng(0)
    y = np.arange(n) % n_classes
    outputs, brute = _brute_force_law(y, n_classes, epsilon)
    n_draws = 6_000
    index = {tuple(o): i for i, o in enumerate(outputs)}
    counts = np.zeros(len(outputs))
    codes = y.astype(np.uint8)
    for _ in range(n_draws):
        counts[index[tuple(two_step_release(codes, n_classes, epsilon, rng))]] += 1
    expected = brute * n_draws
    # pool outcomes with small expectation so the chi-square approximation holds
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    p_value = stats.chisquare(obs, exp).pvalue
    assert p_value > 1e-4


def test_changed_count_draws_follow_log_pmf():
    rng = np.random.default_rng(1)
    n, C, eps = 50, 3, 1.5
    draws = np.array([sample_changed_count(n, eps, C, rng) for _ in range(10_000)])
    pmf = np.exp(changed_labels_log_pmf(n, eps, C))
    counts = np.bincount(draws, minlength=n + 1)
    keep = pmf * draws.size >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(pmf[keep], pmf[~keep].sum()) * draws.size
    assert stats.chisquare(obs, exp).pvalue > 1e-4


def _assert_k_distribution_stable_at_ten_million(epsilon, n_classes):
    n = 10**7
    log_pmf = changed_labels_log_pmf(n, epsilon, n_classes)
    assert log_pmf.shape == (n + 1,)
    assert np.all(np.isfinite(log_pmf))
    assert abs(special.logsumexp(log_pmf)) < 1e-8
    p = label_flip_probability(epsilon, n_classes)
    mode = int(np.argmax(log_pmf))
    assert abs(mode - n * p) <= 1 + math.sqrt(n * p * (1 - p)) * 1e-3
    # cross-check against scipy's binomial around the mode (absolute log error)
    ks = np.clip(mode + np.array([-1000, -10, 0, 10, 1000]), 0, n)
    np.testing.assert_allclose(
        log_pmf[ks], stats.binom.logpmf(ks, n, p), rtol=0, atol=1e-6
    )
    k = sample_changed_count(n, epsilon, n_classes, np.random.default_rng(0))
    assert 0 <= k <= n and np.isfinite(log_pmf[k])
    # P[no change] = (1 - p)^n, tiny deviations from 0 in log space must survive
    np.testing.assert_allclose(log_pmf[0], n * math.log1p(-p), rtol=1e-6)


@pytest.mark.parametrize(("epsilon", "n_classes"), [(1e-3, 2), (50.0, 10)])
def test_k_distribution_stable_at_ten_million(epsilon, n_classes):
    _assert_k_distribution_stable_at_ten_million(epsilon, n_classes)


@pytest.mark.slow
@pytest.mark.parametrize("n_classes", [2, 3, 10, 100])
@pytest.mark.parametrize("epsilon", [1e-6, 1e-3, 0.1, 1.0, 5.0, 20.0, 35.0, 50.0])
def test_k_distribution_stable_at_ten_million_sweep(epsilon, n_classes):
    _assert_k_distribution_stable_at_ten_million(epsilon, n_classes)


def test_k_distribution_infinite_epsilon():
    inf_pmf = changed_labels_log_pmf(5, np.inf, 3)
    assert inf_pmf[0] == 0.0 and np.all(inf_pmf[1:] == -np.inf)


def test_window_sampler_matches_full_pmf_mass():
    # the O(sqrt n) window must hold all the mass representable in float64
    for n, eps, C in [(10**5, 0.01, 2), (10**5, 5.0, 7), (10**5, 40.0, 2)]:
        log_pmf = changed_labels_log_pmf(n, eps, C)
        p = label_flip_probability(eps, C)
        half = 40 * math.sqrt(n * p * (1 - p)) + 300
        lo, hi = max(0, math.floor(n * p - half)), min(n, math.ceil(n * p + half))
        outside = np.r_[log_pmf[:lo], log_pmf[hi + 1 :]]
        assert outside.size == 0 or special.logsumexp(outside) < -300


@pytest.mark.parametrize(("n", "k"), [(5, 2), (6, 3)])
def test_uniform_subset_mask_is_uniform(n, k):
    rng = np.random.default_rng(2)
    subsets = {s: i for i, s in enumerate(itertools.combinations(range(n), k))}
    counts = np.zeros(len(subsets))
    for _ in range(10_000):
        mask = uniform_subset_mask(n, k, rng)
        assert mask.sum() == k
        counts[subsets[tuple(np.flatnonzero(mask))]] += 1
    assert stats.chisquare(counts).pvalue > 1e-4


def test_uniform_subset_mask_sizes():
    rng = np.random.default_rng(3)
    for n in [1, 2, 7, 1000]:
        for k in {0, 1, n // 2, n - 1, n}:
            assert uniform_subset_mask(n, k, rng).sum() == k


def test_equivalent_to_randomized_response_at_half_epsilon_exactly():
    n, C, eps = 40, 4, 3.0
    rr_flip = label_flip_probability(eps / 2, C, mechanism="randomized_response")
    assert label_flip_probability(eps, C) == pytest.approx(rr_flip, rel=1e-14)
    np.testing.assert_allclose(
        np.exp(changed_labels_log_pmf(n, eps, C)),
        stats.binom.pmf(np.arange(n + 1), n, rr_flip),
        rtol=1e-9,
        atol=1e-300,
    )
    y = np.arange(n) % C
    elr = ExponentialLabelRelease(epsilon=eps, classes=np.arange(C)).fit(
        np.zeros((n, 1)), y
    )
    rr = RandomizedResponse(epsilon=eps / 2, classes=np.arange(C))
    rr.fit_resample(np.zeros((n, 1)), y)
    np.testing.assert_allclose(elr.label_matrix_, rr.label_matrix_, rtol=1e-14)
    assert elr.privacy_spent_ == rr.privacy_spent_


def test_equivalent_to_randomized_response_at_half_epsilon_statistically():
    n, C, eps, reps = 600, 3, 2.0, 100
    y = np.arange(n) % C
    X = np.zeros((n, 1))
    rng = np.random.default_rng(4)
    elr = ExponentialLabelRelease(epsilon=eps, classes=[0, 1, 2], random_state=rng)
    rr = RandomizedResponse(epsilon=eps / 2, classes=[0, 1, 2], random_state=rng)
    P = rr.fit_resample(X, y) and rr.label_matrix_
    transitions = {"elr": np.zeros((C, C)), "rr": np.zeros((C, C))}
    flips_per_position = np.zeros(n)
    for _ in range(reps):
        y_elr = elr.fit_resample(X, y)[1]
        y_rr = rr.fit_resample(X, y)[1]
        np.add.at(transitions["elr"], (y, y_elr), 1)
        np.add.at(transitions["rr"], (y, y_rr), 1)
        flips_per_position += y_elr != y
    n_from = np.bincount(y, minlength=C)[:, None] * reps
    sd = np.sqrt(n_from * P * (1 - P))
    for name, counts in transitions.items():
        assert np.all(np.abs(counts - n_from * P) <= 5 * sd), name
    assert np.all(np.abs(transitions["elr"] - transitions["rr"]) <= 5 * np.sqrt(2) * sd)
    # every position is changed with the same probability (uniform positions)
    p = elr.flip_probability_
    chi2 = np.sum((flips_per_position - reps * p) ** 2 / (reps * p * (1 - p)))
    assert stats.chi2.sf(chi2, df=n) > 1e-4


def test_empirical_privacy_audit_supports_half_epsilon():
    eps, n, C = 3.0, 3, 2
    y_a = np.zeros(n, dtype=np.uint8)
    y_b = y_a.copy()
    y_b[0] = 1

    def mechanism(y, n_samples, rng):
        return np.array([two_step_release(y, C, eps, rng)[0] for _ in range(n_samples)])

    result = audit_mechanism(mechanism, y_a, y_b, n_samples=8_000, random_state=0)
    claimed = ExponentialLabelRelease(epsilon=eps, classes=[0, 1])
    claimed.fit(np.zeros((n, 1)), [0, 1, 1])
    assert result.epsilon_lower_bound <= claimed.privacy_spent_.epsilon == eps / 2
    # the audit has the power to see most of the eps/2 actually spent
    assert result.epsilon_lower_bound > 0.6 * eps / 2


def test_sampler_protocol_shapes_dtypes_and_inputs_untouched():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    X_copy = X.copy()
    for y in [
        rng.integers(0, 3, size=300),
        rng.choice(np.array(["cat", "dog", "emu"]), size=300),
        rng.integers(0, 2, size=300).astype(np.float64),
    ]:
        y_copy = y.copy()
        classes = np.unique(y)
        elr = ExponentialLabelRelease(epsilon=1.0, classes=classes, random_state=0)
        X_out, y_out = elr.fit_resample(X, y)
        assert X_out is X and np.array_equal(X, X_copy)
        assert np.array_equal(y, y_copy)
        assert y_out.shape == y.shape and y_out.dtype == y.dtype
        assert set(np.unique(y_out)) <= set(classes)
        assert np.any(y_out != y)  # 300 labels at flip probability 0.25


def test_series_in_series_out():
    pd = pytest.importorskip("pandas")
    y = pd.Series(["a", "b"] * 50, index=np.arange(100) + 7, name="target")
    _, y_out = ExponentialLabelRelease(classes=["a", "b"], random_state=0).fit_resample(
        pd.DataFrame({"x": np.arange(100)}), y
    )
    assert isinstance(y_out, pd.Series)
    assert y_out.name == "target" and y_out.index.equals(y.index)


def test_infinite_epsilon_and_seeds():
    y = np.arange(1000) % 4
    X = np.zeros((1000, 1))
    _, same = ExponentialLabelRelease(epsilon=np.inf, classes=range(4)).fit_resample(
        X, y
    )
    assert np.array_equal(same, y)
    a = ExponentialLabelRelease(epsilon=1.0, classes=range(4), random_state=1)
    b = ExponentialLabelRelease(epsilon=1.0, classes=range(4), random_state=1)
    c = ExponentialLabelRelease(epsilon=1.0, classes=range(4), random_state=2)
    y_a, y_b, y_c = (m.fit_resample(X, y)[1] for m in (a, b, c))
    assert np.array_equal(y_a, y_b) and not np.array_equal(y_a, y_c)


def test_privacy_spent_is_half_epsilon_and_recorded():
    X, y = np.zeros((10, 1)), np.arange(10) % 2
    elr = ExponentialLabelRelease(epsilon=3.0, classes=[0, 1], random_state=0)
    with track_budget() as acc:
        elr.fit_resample(X, y)
        elr.fit_resample(X, y)
    assert elr.privacy_spent_ == PrivacyBudget(1.5)
    assert acc.total == PrivacyBudget(3.0)
    assert [s for s, _ in acc.spends] == ["ExponentialLabelRelease.fit_resample"] * 2


def test_inferred_classes_warn_declared_do_not():
    X, y = np.zeros((10, 1)), np.arange(10) % 2
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        ExponentialLabelRelease(random_state=0).fit_resample(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        ExponentialLabelRelease(classes=[0, 1], random_state=0).fit_resample(X, y)


@pytest.mark.filterwarnings("ignore::skdp.exceptions.PrivacyLeakWarning")
@pytest.mark.parametrize(
    ("y", "classes", "error", "match"),
    [
        (np.zeros(6), None, ValueError, "at least 2 classes"),
        (np.array([0, 1, np.nan, 1, 0, 1]), [0, 1], ValueError, "NaN"),
        (np.array([0, 1, 2, 1, 0, 1]), [0, 1], ValueError, "not among"),
        (np.array([0, 1, 0, 1, 0, 1]), [0, 1, 1], ValueError, "duplicates"),
        (np.array([0, 1, 0, 1, 0]), [0, 1], ValueError, "inconsistent"),
        (np.linspace(0, 1, 6), None, ValueError, "Unknown label type"),
    ],
)
def test_bad_labels(y, classes, error, match):
    with pytest.raises(error, match=match):
        ExponentialLabelRelease(classes=classes).fit_resample(np.zeros((6, 1)), y)


@pytest.mark.parametrize("epsilon", [0.0, -1.0, np.nan, "1"])
def test_bad_epsilon(epsilon):
    with pytest.raises((ValueError, TypeError), match="epsilon"):
        ExponentialLabelRelease(epsilon=epsilon).fit_resample(
            np.zeros((4, 1)), [0, 1, 0, 1]
        )


def test_label_likelihood_is_the_matrix_column_of_each_released_label():
    y = np.arange(200) % 4
    elr = ExponentialLabelRelease(epsilon=2.0, classes=[0, 1, 2, 3], random_state=0)
    assert not hasattr(elr, "label_likelihood_")
    _, y_released = elr.fit_resample(np.zeros((200, 1)), y)
    np.testing.assert_array_equal(
        elr.label_likelihood_, elr.label_matrix_[:, y_released].T
    )
