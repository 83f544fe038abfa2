import numpy as np
import pytest

from skdp.utils import empirical_epsilon


def test_identical_distributions_give_near_zero():
    rng = np.random.default_rng(0)
    result = empirical_epsilon(rng.normal(size=50_000), rng.normal(size=50_000))
    assert result.epsilon_lower_bound < 0.1


def test_known_discrete_ratio_is_bounded_not_exceeded():
    # P_a = (0.75, 0.25), P_b = (0.25, 0.75): true epsilon = ln 3
    rng = np.random.default_rng(1)
    a = rng.random(100_000) < 0.25
    b = rng.random(100_000) < 0.75
    result = empirical_epsilon(a, b)
    assert 0.9 * np.log(3) < result.epsilon_lower_bound <= np.log(3)


def test_delta_is_subtracted():
    rng = np.random.default_rng(2)
    a = rng.random(100_000) < 0.25
    b = rng.random(100_000) < 0.75
    assert (
        empirical_epsilon(a, b, delta=0.2).epsilon_lower_bound
        < empirical_epsilon(a, b).epsilon_lower_bound
    )


def test_bound_holds_at_stated_confidence_over_repetitions():
    """The lower bound exceeds the true epsilon in at most ~5% of repetitions."""
    true_eps = np.log(3)
    exceed = 0
    rng = np.random.default_rng(3)
    for _ in range(40):
        a = rng.random(5_000) < 0.25
        b = rng.random(5_000) < 0.75
        exceed += (
            empirical_epsilon(a, b, random_state=rng).epsilon_lower_bound > true_eps
        )
    assert exceed <= 6  # binomial(40, 0.05): P[X > 6] < 0.01


@pytest.mark.parametrize("confidence", [0.9, 0.99])
def test_higher_confidence_gives_lower_bound(confidence):
    rng = np.random.default_rng(4)
    a = rng.laplace(0, 1, 20_000)
    b = rng.laplace(1, 1, 20_000)
    loose = empirical_epsilon(a, b, confidence=0.5).epsilon_lower_bound
    assert empirical_epsilon(a, b, confidence=confidence).epsilon_lower_bound <= loose
