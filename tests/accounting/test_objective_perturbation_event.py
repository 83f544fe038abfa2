"""The objective-perturbation privacy profile: quadrature, PLD and composition."""

import math

import numpy as np
import pytest
from scipy import integrate, optimize, special, stats

from skdp.accounting import (
    ObjectivePerturbationEvent,
    PrivacyBudget,
    record_spend,
    track_budget,
)
from skdp.accounting._events import events_from_wire
from skdp.accounting._objective_perturbation import _gaussian_profile

EVENTS = [
    ObjectivePerturbationEvent(0.05, 4.0, 2, 2),
    ObjectivePerturbationEvent(0.3, 1.2, 2, 2, 1000.0),
    ObjectivePerturbationEvent(0.6, 0.45, 18, 18, 1000.0),
    ObjectivePerturbationEvent(0.0, 0.9, 4, 4, 30.0),
]


def _loss_density_delta(event, epsilon):
    """E[(1 - e^(eps - l))_+] integrated against the density of l, independently
    of the class's integration by parts and quadrature: the density of T is the
    derivative of its active survival branch (K phi(a), or the chi density),
    integrated piecewise with scipy's adaptive quadrature between the branch
    switches; an output Gaussian of multiplier m enters by its own profile."""
    K, k, mu = event.tail_terms, event.chi_df, event.mu
    m = event.output_noise_multiplier

    def union(a):
        return K * special.ndtr(-a)

    def chi_sf(a):
        return special.gammaincc(0.5 * k, 0.5 * a * a)

    def chi_pdf(a):  # the chi density with k degrees of freedom
        log = (k - 1) * math.log(a) - 0.5 * a * a - (0.5 * k - 1) * math.log(2)
        return math.exp(log - special.gammaln(0.5 * k)) if a > 0 else 0.0

    def value(a):
        loss = event.jacobian_epsilon + 0.5 * mu * mu + mu * a
        if math.isfinite(m):
            return _gaussian_profile(epsilon - loss, m)
        return max(-math.expm1(epsilon - loss), 0.0)

    def density(a):
        if min(union(a), chi_sf(a)) >= 1.0:
            return 0.0
        if union(a) <= chi_sf(a):
            return K * math.exp(-0.5 * a * a) / math.sqrt(2 * math.pi)
        return chi_pdf(a)

    # branch switches: union = 1, union = chi (found on a grid, then refined)
    grid = np.linspace(1e-9, 39.0, 3901)

    def log_gap(a):
        return math.log(K) + stats.norm.logsf(a) - stats.chi.logsf(a, k)

    gap = log_gap(grid)
    points = [
        optimize.brentq(log_gap, grid[i], grid[i + 1])
        for i in np.flatnonzero(np.diff(np.sign(gap)) != 0)
    ]
    if K > 1:
        points.append(stats.norm.isf(1.0 / K))
    kappa = epsilon - event.jacobian_epsilon - 0.5 * mu * mu
    if kappa > 0:  # where the integrand starts (or, m < inf, rises steeply)
        width = 1.0 / (m * mu) if math.isfinite(m) else 0.0
        points += [kappa / mu + j * width for j in (-16, -4, -1, 0, 1, 4, 16)]
    edges = sorted({0.0, 40.0, *[p for p in points if 0.0 < p < 40.0]})
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        total += integrate.quad(
            lambda a: value(a) * density(a),
            lo,
            hi,
            epsabs=0,
            epsrel=1e-10,
            limit=400,
        )[0]
    atom = 1.0 - min(1.0, K * 0.5)  # P(T = 0) = 1 - S_T(0+)
    return total + atom * value(0.0)


@pytest.mark.parametrize("event", EVENTS[:3], ids=range(3))
@pytest.mark.parametrize("epsilon", [0.2, 1.0, 3.0])
def test_profile_matches_numerical_integration_of_the_privacy_loss(event, epsilon):
    expected = _loss_density_delta(event, epsilon)
    assert event.delta(epsilon) == pytest.approx(expected, rel=1e-6, abs=1e-15)


def test_profile_is_a_valid_hockey_stick_curve():
    # non-increasing in epsilon, 1 - e^eps below 0, and at least the Gaussian
    # mechanism with the same mu (T >= 0: the OP loss dominates it)
    event = EVENTS[1]
    eps = np.linspace(-2.0, 8.0, 41)
    values = np.array([event.delta(e) for e in eps])
    assert np.all(np.diff(values) <= 1e-15)
    assert np.all(values >= -np.expm1(np.minimum(eps, 0.0)) - 1e-12)
    gauss = [_gaussian_profile(e, event.noise_multiplier) for e in eps]
    assert np.all(values >= np.array(gauss) - 1e-12)


def test_no_jacobian_and_no_tail_is_a_one_sided_half_normal():
    # K = 1 and a chi bound that never binds: T is |Z| conditioned... exactly the
    # one-sided union term, i.e. P(T > a) = Phi(-a) for a >= 0 and the loss is
    # mu^2 / 2 + mu max(Z, 0): a closed form to compare with
    event = ObjectivePerturbationEvent(0.0, 1.0, 1, 200)
    mu, eps = 1.0, 0.7
    # E[(1 - e^(eps - mu^2/2 - mu Z))_+ ; Z > 0] + P(Z <= 0) (1 - e^(eps - mu^2/2))_+
    kappa = eps - 0.5
    z0 = max(kappa / mu, 0.0)
    closed = special.ndtr(-z0) - math.exp(kappa + 0.5 * mu * mu) * special.ndtr(
        -z0 - mu
    )
    closed += 0.5 * max(-math.expm1(kappa), 0.0)
    assert event.delta(eps) == pytest.approx(closed, rel=1e-9)


def test_pld_is_pessimistic_and_close():
    pytest.importorskip("dp_accounting")
    event = EVENTS[1]
    pld = event._pld(1e-4)
    for eps in (0.5, 1.0, 2.0, 4.0):
        exact = event.delta(eps)
        approx = float(pld.get_delta_for_epsilon(eps))
        assert exact <= approx <= exact * 1.01 + 1e-12


def test_pld_accountant_composes_op_releases():
    pytest.importorskip("dp_accounting")
    from skdp.linear_model._op_calibration import (
        OPProblem,
        _gaussian_event,
        gaussian_sigma,
    )

    # a calibrated release: (1, 1e-6)-DP on its own
    problem = OPProblem(5000, 10, 2, 1.5, 2.0)
    sigma = gaussian_sigma(problem, 1.0, 1e-6, 5.0)
    event = _gaussian_event(problem, 5.0, sigma)
    assert event.delta(1.0) <= 1e-6
    with track_budget(accountant="pld", delta=1e-5) as acc:
        for _ in range(5):
            record_spend(PrivacyBudget(1.0, 1e-6), "op", mechanism=event)
    assert acc.events == [(event,)] * 5
    composed = event._pld(1e-4).self_compose(5).get_epsilon_for_delta(1e-5)
    assert acc.total.epsilon == pytest.approx(composed, rel=1e-9)
    assert acc.total.delta == 1e-5
    # tighter than adding the epsilons, and no tighter than the exact profile
    # of one release allows: 5 releases cost more than one
    assert event._pld(1e-4).get_epsilon_for_delta(1e-5) < acc.total.epsilon < 5.0


def test_wire_round_trip():
    for event in EVENTS:
        assert events_from_wire([event._to_wire()]) == (event,)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"jacobian_epsilon": -0.1},
        {"noise_multiplier": math.inf},
        {"tail_terms": 0},
        {"chi_df": 1.5},
        {"output_noise_multiplier": 0.0},
    ],
)
def test_bad_parameters_raise(kwargs):
    params = {
        "jacobian_epsilon": 0.1,
        "noise_multiplier": 1.0,
        "tail_terms": 2,
        "chi_df": 2,
        **kwargs,
    }
    with pytest.raises((ValueError, TypeError)):
        ObjectivePerturbationEvent(**params)
