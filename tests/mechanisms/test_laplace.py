import math

import numpy as np
import pytest
from scipy import stats

from skdp.mechanisms import LaplaceMechanism
from skdp.utils import audit_mechanism


def test_scale_includes_lattice_rounding():
    mech = LaplaceMechanism(0.5, sensitivity=3.0)
    assert mech.scale == (3.0 + mech.granularity) / 0.5
    assert 0 < mech.granularity <= mech.scale * 2.0**-29
    # a power of two, so lattice sums are exact in floating point
    assert math.log2(mech.granularity) == int(math.log2(mech.granularity))


def test_scale_pays_one_lattice_step_per_coordinate():
    """Rounding each of p coordinates can add p/2 steps to each side's L1 distance."""
    one = LaplaceMechanism(0.5, sensitivity=3.0)
    many = LaplaceMechanism(0.5, sensitivity=3.0, dimension=1000)
    assert many.granularity == one.granularity
    assert many.scale == (3.0 + 1000 * many.granularity) / 0.5
    assert many.scale > one.scale
    with pytest.raises(ValueError, match="dimension"):
        LaplaceMechanism(1.0, dimension=0)


def test_noise_matches_laplace_distribution_ks():
    mech = LaplaceMechanism(1.0, sensitivity=2.0)
    noise = mech.sample_noise(20_000, random_state=0)
    assert stats.kstest(noise, stats.laplace(scale=mech.scale).cdf).pvalue > 1e-3


def test_variance_close_to_continuous_and_to_sample():
    mech = LaplaceMechanism(2.0, sensitivity=1.0)
    assert mech.variance == pytest.approx(2 * mech.scale**2, rel=1e-9)
    n = 200_000
    sample_var = mech.sample_noise(n, random_state=3).var()
    # Var of the sample variance of a Laplace: (mu4 - sigma^4)/n, mu4 = 24 b^4
    se = math.sqrt((24 * mech.scale**4 - mech.variance**2) / n)
    assert abs(sample_var - mech.variance) < 5 * se


def test_outputs_lie_on_the_lattice_whatever_the_input():
    mech = LaplaceMechanism(1.0)
    for value in (0.0, 0.1, 1 / 3, -7.77):
        out = mech.randomize(np.full(1000, value), random_state=0)
        steps = out / mech.granularity
        np.testing.assert_array_equal(steps, np.round(steps))


def test_same_seed_same_noise_and_input_untouched():
    value = np.linspace(-1, 1, 50)
    before = value.copy()
    mech = LaplaceMechanism(1.0)
    a = mech.randomize(value, random_state=42)
    b = mech.randomize(value, random_state=42)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(value, before)
    assert not np.array_equal(a, mech.randomize(value, random_state=43))


def test_infinite_epsilon_is_identity():
    mech = LaplaceMechanism(np.inf)
    assert mech.randomize(0.123456789, random_state=0) == 0.123456789


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_privacy_audit_does_not_refute_claim(epsilon):
    mech = LaplaceMechanism(epsilon, sensitivity=1.0)
    result = audit_mechanism(
        lambda x, n, rng: mech.randomize(np.full(n, x), rng),
        0.0,
        1.0,
        n_samples=200_000,
        random_state=1,
    )
    assert result.epsilon_lower_bound <= epsilon
    assert result.epsilon_lower_bound > 0.5 * epsilon  # the audit has power


def test_audit_catches_a_miscalibrated_mechanism():
    """Half the noise claimed as epsilon=1 must be refuted: the audit can fail."""
    broken = LaplaceMechanism(2.0, sensitivity=1.0)
    result = audit_mechanism(
        lambda x, n, rng: broken.randomize(np.full(n, x), rng),
        0.0,
        1.0,
        n_samples=200_000,
        random_state=2,
    )
    assert result.epsilon_lower_bound > 1.0


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"epsilon": 0}, ValueError),
        ({"epsilon": -0.1}, ValueError),
        ({"epsilon": float("nan")}, ValueError),
        ({"epsilon": "one"}, TypeError),
        ({"epsilon": True}, TypeError),
        ({"epsilon": 1.0, "sensitivity": -1}, ValueError),
        ({"epsilon": 1.0, "sensitivity": float("inf")}, ValueError),
    ],
)
def test_bad_parameters(kwargs, exc):
    name = "sensitivity" if "sensitivity" in kwargs else "epsilon"
    with pytest.raises(exc, match=name):
        LaplaceMechanism(**kwargs)


def test_non_finite_value_rejected():
    with pytest.raises(ValueError, match="finite"):
        LaplaceMechanism(1.0).randomize([1.0, np.nan])
