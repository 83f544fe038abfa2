import numpy as np
import pytest
from scipy import stats

from skdp.mechanisms import ExponentialMechanism
from skdp.utils import audit_mechanism


def test_probabilities_closed_form():
    mech = ExponentialMechanism(2.0, sensitivity=1.0)
    u = np.array([0.0, 1.0, 3.0])
    w = np.exp(2.0 * u / 2)
    np.testing.assert_allclose(mech.probabilities(u), w / w.sum())
    mono = ExponentialMechanism(2.0, monotonic=True)
    w = np.exp(2.0 * u)
    np.testing.assert_allclose(mono.probabilities(u), w / w.sum())


def test_huge_utilities_do_not_overflow():
    mech = ExponentialMechanism(50.0)
    p = mech.probabilities([1e6, 1e6 - 1, -np.inf])
    assert np.all(np.isfinite(p)) and p[2] == 0.0
    assert p.sum() == pytest.approx(1.0)
    assert mech.select([1e6, 1e6 - 1, -np.inf], random_state=0) in (0, 1)


def test_selection_frequencies_chi_square():
    mech = ExponentialMechanism(1.0)
    u = np.array([0.0, 1.0, 2.0, 2.5])
    n = 50_000
    picks = mech.select(np.tile(u, (n, 1)), random_state=0)
    counts = np.bincount(picks, minlength=4)
    assert stats.chisquare(counts, n * mech.probabilities(u)).pvalue > 1e-4


def test_infinite_epsilon_is_argmax_with_random_ties():
    mech = ExponentialMechanism(np.inf)
    picks = mech.select(np.tile([0.0, 5.0, 5.0], (2000, 1)), random_state=0)
    assert set(np.unique(picks)) == {1, 2}


def test_privacy_audit_does_not_refute_claim():
    eps = 1.0
    mech = ExponentialMechanism(eps, sensitivity=1.0)
    # neighbours move each utility by at most 1, in opposite directions
    ua, ub = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    result = audit_mechanism(
        lambda u, n, rng: mech.select(np.tile(u, (n, 1)), rng),
        ua,
        ub,
        n_samples=200_000,
        random_state=0,
    )
    assert 0.3 * eps < result.epsilon_lower_bound <= eps


@pytest.mark.parametrize("utilities", [[], [np.nan, 1.0], [np.inf, 0.0], [-np.inf]])
def test_bad_utilities(utilities):
    with pytest.raises(ValueError, match="utilities"):
        ExponentialMechanism(1.0).probabilities(utilities)
