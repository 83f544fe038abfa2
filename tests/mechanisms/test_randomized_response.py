import math

import numpy as np
import pytest

from skdp.mechanisms import RandomizedResponseMechanism, project_to_simplex
from skdp.utils import audit_mechanism


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0, 50.0, 800.0])
@pytest.mark.parametrize("n_categories", [2, 3, 10])
def test_matrix_rows_sum_to_one_and_ratio_is_exp_eps(epsilon, n_categories):
    mech = RandomizedResponseMechanism(epsilon, n_categories)
    P = mech.matrix
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    # e^eps / (C - 1 + e^eps), written so that it stays finite at epsilon = 800
    expected = 1 / ((n_categories - 1) * math.exp(-epsilon) + 1)
    assert mech.p_keep == pytest.approx(expected, rel=1e-12)
    if epsilon < 700:  # beyond, e^-eps underflows and p_change is exactly 0
        assert mech.p_keep / mech.p_change == pytest.approx(
            math.exp(epsilon), rel=1e-12
        )
    off = P[~np.eye(n_categories, dtype=bool)]
    assert np.all(off == mech.p_change)


def test_output_frequencies_within_five_sigma():
    mech = RandomizedResponseMechanism(1.0, 4)
    n = 200_000
    out = mech.randomize(np.full(n, 2), random_state=0)
    freq = np.bincount(out, minlength=4) / n
    expected = mech.matrix[2]
    sigma = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(freq - expected) < 5 * sigma)


def test_frequency_estimator_unbiased_and_projection():
    mech = RandomizedResponseMechanism(0.5, 3)
    rng = np.random.default_rng(0)
    truth = np.array([0.7, 0.3, 0.0])
    n, reps = 2000, 400
    codes = rng.choice(3, size=n, p=truth)
    true_freq = np.bincount(codes, minlength=3) / n
    estimates = np.array(
        [mech.estimate_frequencies(mech.randomize(codes, rng)) for _ in range(reps)]
    )
    se = estimates.std(axis=0, ddof=1) / math.sqrt(reps)
    # the closed-form variance matches the spread over repetitions (5 sigma of a
    # sample variance from `reps` draws: relative error ~ sqrt(2 / reps))
    predicted = mech.frequency_variance(true_freq, n)
    tol = 5 * math.sqrt(2 / reps)
    np.testing.assert_allclose(estimates.var(axis=0, ddof=1), predicted, rtol=tol)
    assert np.all(np.abs(estimates.mean(axis=0) - true_freq) < 5 * se)
    # raw estimates leave the simplex sometimes, projected ones never
    assert (estimates < 0).any()
    projected = mech.estimate_frequencies(mech.randomize(codes, rng), project=True)
    assert np.all(projected >= 0) and projected.sum() == pytest.approx(1.0)


def test_projection_onto_simplex_known_values():
    np.testing.assert_allclose(project_to_simplex([0.5, 0.5]), [0.5, 0.5])
    np.testing.assert_allclose(project_to_simplex([1.2, -0.2]), [1.0, 0.0])
    np.testing.assert_allclose(project_to_simplex([0.6, 0.6, -0.4]), [0.5, 0.5, 0.0])


def test_counts_and_codes_give_same_estimate():
    mech = RandomizedResponseMechanism(1.0, 3)
    codes = np.array([0, 0, 1, 2, 2, 2])
    np.testing.assert_allclose(
        mech.estimate_frequencies(codes),
        mech.estimate_frequencies(counts=[2, 1, 3]),
    )


def test_infinite_epsilon_identity_and_input_untouched():
    codes = np.array([0, 1, 2, 1])
    before = codes.copy()
    out = RandomizedResponseMechanism(np.inf, 3).randomize(codes, random_state=0)
    np.testing.assert_array_equal(out, codes)
    RandomizedResponseMechanism(1.0, 3).randomize(codes, random_state=0)
    np.testing.assert_array_equal(codes, before)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_privacy_audit_does_not_refute_claim(epsilon):
    mech = RandomizedResponseMechanism(epsilon, 3)
    result = audit_mechanism(
        lambda u, n, rng: mech.randomize(np.full(n, u), rng),
        0,
        1,
        n_samples=200_000,
        random_state=0,
    )
    assert 0.5 * epsilon < result.epsilon_lower_bound <= epsilon


@pytest.mark.parametrize(
    "codes, exc", [([0, 3], ValueError), ([-1], ValueError), (["a"], TypeError)]
)
def test_bad_codes(codes, exc):
    with pytest.raises(exc, match="codes"):
        RandomizedResponseMechanism(1.0, 3).randomize(codes)


@pytest.mark.parametrize("n_categories", [1, 2.5, "3", True])
def test_bad_n_categories(n_categories):
    with pytest.raises(ValueError, match="n_categories"):
        RandomizedResponseMechanism(1.0, n_categories)
