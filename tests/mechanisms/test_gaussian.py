import math

import numpy as np
import pytest
from scipy import stats

from skdp.mechanisms import GaussianMechanism, analytic_sigma, gaussian_delta
from skdp.utils import audit_mechanism


@pytest.mark.parametrize("epsilon, expected", [(0.1, 30.75), (1.0, 3.73), (4.0, 1.08)])
def test_analytic_sigma_reference_values(epsilon, expected):
    sigma = GaussianMechanism(epsilon, 1e-5, sensitivity=1.0).sigma
    assert round(sigma, 2) == expected


@pytest.mark.parametrize("calibration", ["analytic", "classic", "simple"])
@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.5, 0.99, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 1e-2, 0.3])
@pytest.mark.parametrize("sensitivity", [0.5, 1.0, 7.0])
def test_every_calibration_satisfies_the_exact_condition(
    calibration, epsilon, delta, sensitivity
):
    if calibration != "analytic" and epsilon >= 1:
        with pytest.raises(ValueError, match="epsilon < 1"):
            GaussianMechanism(epsilon, delta, sensitivity, calibration=calibration)
        return
    mech = GaussianMechanism(epsilon, delta, sensitivity, calibration=calibration)
    assert gaussian_delta(mech.sigma, epsilon, sensitivity) <= delta


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_analytic_sigma_is_the_smallest_valid_sigma(epsilon):
    sigma = analytic_sigma(epsilon, 1e-5)
    assert gaussian_delta(sigma * (1 - 1e-9), epsilon) > 1e-5


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 0.9])
def test_analytic_is_smaller_than_classic(epsilon):
    analytic = GaussianMechanism(epsilon, 1e-5).sigma
    classic = GaussianMechanism(epsilon, 1e-5, calibration="classic").sigma
    assert analytic < classic


def test_classic_and_simple_formulas():
    eps, delta = 0.5, 1e-6
    classic = GaussianMechanism(eps, delta, 2.0, calibration="classic").sigma
    simple = GaussianMechanism(eps, delta, 2.0, calibration="simple").sigma
    assert classic == pytest.approx(2.0 * math.sqrt(2 * math.log(1.25 / delta)) / eps)
    assert simple == pytest.approx(2.0 * math.sqrt(2 * math.log(1 / delta) + eps) / eps)


def test_noise_matches_normal_distribution_ks():
    mech = GaussianMechanism(1.0, 1e-5, sensitivity=2.0)
    noise = mech.sample_noise(20_000, random_state=0)
    assert stats.kstest(noise, stats.norm(scale=mech.sigma).cdf).pvalue > 1e-3
    assert mech.variance == pytest.approx(mech.sigma**2)


def test_randomize_keeps_shape_and_input():
    value = np.arange(6.0).reshape(2, 3)
    before = value.copy()
    out = GaussianMechanism(1.0, 1e-5).randomize(value, random_state=1)
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(value, before)
    assert not np.allclose(out, value)


def test_infinite_epsilon_adds_no_noise():
    mech = GaussianMechanism(np.inf, 1e-5)
    assert mech.sigma == 0.0
    assert mech.randomize(3.5, random_state=0) == 3.5


def test_privacy_audit_does_not_refute_claim():
    eps, delta = 1.0, 1e-5
    mech = GaussianMechanism(eps, delta, sensitivity=1.0)
    result = audit_mechanism(
        lambda x, n, rng: mech.randomize(np.full(n, x), rng),
        0.0,
        1.0,
        n_samples=200_000,
        delta=delta,
        random_state=0,
    )
    assert result.epsilon_lower_bound <= eps
    # the audit has power: it sees most of the privacy loss
    assert result.epsilon_lower_bound > 0.3 * eps


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"epsilon": 0.0, "delta": 1e-5}, ValueError, "epsilon"),
        ({"epsilon": -1.0, "delta": 1e-5}, ValueError, "epsilon"),
        ({"epsilon": float("nan"), "delta": 1e-5}, ValueError, "epsilon"),
        ({"epsilon": "1", "delta": 1e-5}, TypeError, "epsilon"),
        ({"epsilon": 1.0, "delta": 0.0}, ValueError, "delta"),
        ({"epsilon": 1.0, "delta": 1.0}, ValueError, "delta"),
        ({"epsilon": 1.0, "delta": -0.1}, ValueError, "delta"),
        (
            {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 0.0},
            ValueError,
            "sensitivity",
        ),
        (
            {"epsilon": 1.0, "delta": 1e-5, "calibration": "x"},
            ValueError,
            "calibration",
        ),
    ],
)
def test_bad_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        GaussianMechanism(**kwargs)
