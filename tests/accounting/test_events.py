"""Release descriptions: validation, wire format, composition of lists."""

import math

import pytest

from skdp.accounting import (
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyBudget,
    RandomizedResponseEvent,
    describe_release,
)
from skdp.accounting._events import events_from_wire
from skdp.mechanisms import (
    GaussianMechanism,
    RandomizedResponseMechanism,
    analytic_sigma,
)


@pytest.mark.parametrize(
    "event",
    [
        GaussianEvent(2.5),
        LaplaceEvent(0.5),
        RandomizedResponseEvent(1.0, 3),
        RandomizedResponseEvent(math.inf, 2),
        EpsilonDeltaEvent(0.3, 1e-7),
    ],
)
def test_wire_round_trip(event):
    assert events_from_wire([event._to_wire()]) == (event,)


def test_unknown_wire_event():
    with pytest.raises(ValueError, match="unknown privacy event"):
        events_from_wire([["PickleEvent", 1]])


@pytest.mark.parametrize(
    "make, exc",
    [
        (lambda: GaussianEvent(-1.0), ValueError),
        (lambda: GaussianEvent(math.inf), ValueError),
        (lambda: GaussianEvent("1"), TypeError),
        (lambda: RandomizedResponseEvent(1.0, 0), ValueError),
        (lambda: RandomizedResponseEvent(-1.0, 2), ValueError),
        (lambda: EpsilonDeltaEvent(1.0, 1.0), ValueError),
    ],
)
def test_bad_events(make, exc):
    with pytest.raises(exc):
        make()


def test_trivial_and_non_private():
    assert RandomizedResponseEvent(5.0, 1).is_trivial
    assert RandomizedResponseEvent(0.0, 4).is_trivial
    assert RandomizedResponseEvent(math.inf, 4).is_non_private
    assert GaussianEvent(0.0).is_non_private
    assert EpsilonDeltaEvent(0.0).is_trivial
    assert EpsilonDeltaEvent(math.inf).is_non_private


@pytest.mark.parametrize("eps, C", [(0.5, 2), (3.0, 7), (800.0, 3)])
def test_rr_noise_parameter_gives_the_mechanism_matrix(eps, C):
    event = RandomizedResponseEvent(eps, C)
    mech = RandomizedResponseMechanism(eps, C)
    p = event.noise_parameter
    assert 1 - p + p / C == pytest.approx(mech.p_keep, rel=1e-12)
    assert p / C == pytest.approx(mech.p_change, rel=1e-12, abs=1e-300)


def test_describe_release():
    budget = PrivacyBudget(1.0, 1e-6)
    assert describe_release(None, budget) == (EpsilonDeltaEvent(1.0, 1e-6),)
    assert describe_release("laplace", PrivacyBudget(1.0)) == (EpsilonDeltaEvent(1.0),)
    sigma = analytic_sigma(1.0, 1e-6, 1.0)
    assert describe_release("gaussian", budget) == (GaussianEvent(sigma),)
    # "gaussian" without a delta cannot be a Gaussian: its pure guarantee
    assert describe_release("gaussian", PrivacyBudget(1.0)) == (EpsilonDeltaEvent(1.0),)
    mech = GaussianMechanism(1.0, 1e-6, sensitivity=2.0)
    rr = RandomizedResponseMechanism(1.0, 3)
    assert describe_release([mech, None, [rr]], budget) == (
        GaussianEvent(mech.sigma / 2.0),
        RandomizedResponseEvent(1.0, 3),
    )
