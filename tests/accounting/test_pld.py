"""The PLD accountant against dp-accounting's own computation and basic composition."""

import math
import warnings

import numpy as np
import pytest

from skdp.accounting import (
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyBudget,
    RandomizedResponseEvent,
    describe_release,
    record_spend,
    track_budget,
)
from skdp.exceptions import BudgetExceededError, ReproducibleNoiseWarning
from skdp.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponseMechanism,
    analytic_sigma,
    gaussian_delta,
)

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.pld import common, privacy_loss_distribution  # noqa: E402

NeighborRel = dp_accounting.NeighboringRelation
DELTA = 1e-5


def google_epsilon(events, count, relation=NeighborRel.ADD_OR_REMOVE_ONE):
    accountant = dp_accounting.pld.PLDAccountant(relation)
    for event in events:
        if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
            # dp_accounting 0.6 ignores ``count`` for this event: compose one by one
            for _ in range(count):
                accountant.compose(event)
        else:
            accountant.compose(event, count)
    return accountant.get_epsilon(DELTA)


def assert_exact_gaussian(epsilon, noise_multiplier, delta):
    """epsilon is the smallest with gaussian_delta(epsilon) <= delta (to 1e-9).

    (1e-9: the tracker sums noise_multiplier^-2 one release at a time, which
    rounds differently from the closed form here.)
    """
    assert gaussian_delta(noise_multiplier, epsilon) <= delta * (1 + 1e-9)
    assert gaussian_delta(noise_multiplier, epsilon * (1 - 1e-9)) > delta


@pytest.mark.parametrize("n_fits", [1, 10, 100])
def test_gaussian_fits_match_dp_accounting_and_beat_basic(n_fits):
    with track_budget(accountant="pld", delta=DELTA) as acc:
        for _ in range(n_fits):
            record_spend(PrivacyBudget(1.0, 1e-5), "fit", mechanism="gaussian")
    sigma = analytic_sigma(1.0, 1e-5, 1.0)
    expected = google_epsilon([dp_accounting.GaussianDpEvent(sigma)], n_fits)
    # Gaussians alone compose in closed form: exact, at most dp_accounting's
    # discretized (pessimistic) figure and within its discretization of it
    assert_exact_gaussian(acc.total.epsilon, sigma / n_fits**0.5, DELTA)
    assert acc.total.epsilon <= expected * (1 + 1e-12)
    assert acc.total.epsilon == pytest.approx(expected, rel=1e-6)
    assert acc.total.delta == DELTA
    assert acc.total.epsilon <= acc.basic_total.epsilon
    assert acc.basic_total.delta == pytest.approx(n_fits * 1e-5)
    if n_fits == 1:
        # the analytic Gaussian is exactly (1, 1e-5): PLD recovers it
        assert acc.total.epsilon == pytest.approx(1.0, abs=1e-3)


def test_gaussian_mechanism_describes_itself_exactly():
    mech = GaussianMechanism(0.5, 1e-6, sensitivity=3.0, calibration="classic")
    assert mech.privacy_event == GaussianEvent(mech.sigma / 3.0)
    with track_budget(accountant="pld", delta=DELTA) as acc:
        for _ in range(5):
            record_spend(mech.privacy_spent, "g", mechanism=mech)
    expected = google_epsilon([mech.privacy_event.to_dp_event()], 5)
    assert_exact_gaussian(acc.total.epsilon, mech.sigma / 3.0 / 5**0.5, DELTA)
    assert acc.total.epsilon <= expected * (1 + 1e-12)
    assert acc.total.epsilon == pytest.approx(expected, rel=1e-6)
    # classic calibration adds more noise than needed: tighter than "gaussian"
    with track_budget(accountant="pld", delta=DELTA) as generic:
        for _ in range(5):
            record_spend(mech.privacy_spent, "g", mechanism="gaussian")
    assert acc.total.epsilon < generic.total.epsilon


@pytest.mark.parametrize("n_categories", [2, 5])
def test_randomized_response_matches_dp_accounting(n_categories):
    mech = RandomizedResponseMechanism(1.0, n_categories)
    with track_budget(accountant="pld", delta=DELTA) as acc:
        for _ in range(20):
            record_spend(mech.privacy_spent, "rr", mechanism=mech)
    expected = google_epsilon(
        [mech.privacy_event.to_dp_event()], 20, NeighborRel.REPLACE_ONE
    )
    assert acc.total.epsilon == pytest.approx(expected, rel=1e-9)
    assert acc.total.epsilon < acc.basic_total.epsilon
    # the event is dp_accounting's RR with the same keep probability
    event = mech.privacy_event.to_dp_event()
    p = event.noise_parameter
    assert 1 - p + p / n_categories == pytest.approx(mech.p_keep, rel=1e-12)


def test_exact_rr_loss_distribution():
    # the loss is +eps w.p. p_keep, -eps w.p. p_change, 0 otherwise: exact delta
    eps, C = 1.0, 4
    mech = RandomizedResponseMechanism(eps, C)
    pld = mech.privacy_event._pld(1e-4)
    for target in (0.0, 0.5):
        exact = mech.p_keep - math.exp(target) * mech.p_change
        assert pld.get_delta_for_epsilon(target) == pytest.approx(exact, abs=1e-3)


def test_pure_releases_use_the_pure_dp_loss_distribution():
    # Laplace (lattice) and exponential mechanisms: their pure epsilon only
    assert LaplaceMechanism(0.5, dimension=4).privacy_event == EpsilonDeltaEvent(0.5)
    assert ExponentialMechanism(0.5).privacy_event == EpsilonDeltaEvent(0.5)
    with track_budget(accountant="pld", delta=DELTA) as acc:
        for _ in range(50):
            record_spend(PrivacyBudget(0.5), "lap", mechanism="laplace")
    pure = privacy_loss_distribution.from_privacy_parameters(
        common.DifferentialPrivacyParameters(0.5, 0.0)
    ).self_compose(50)
    assert acc.total.epsilon == pytest.approx(pure.get_epsilon_for_delta(DELTA))
    assert acc.total.epsilon < 25.0


def test_never_looser_than_basic_composition():
    # two tiny pure releases: PLD rounds each loss up to a multiple of 1e-4, so it
    # is above basic composition here, and basic composition is reported
    with track_budget(accountant="pld", delta=1e-12) as acc:
        record_spend(PrivacyBudget(0.01005), "a")
        record_spend(PrivacyBudget(0.01005), "b")
    assert acc.total == acc.basic_total == PrivacyBudget(0.0201)


def test_random_mixtures_never_above_basic_and_match_sequential_pld():
    rng = np.random.default_rng(0)
    for _ in range(5):
        events, budgets = [], []
        for _ in range(rng.integers(1, 6)):
            kind = rng.integers(3)
            eps = float(rng.uniform(0.1, 2.0))
            if kind == 0:
                budget = PrivacyBudget(eps, 1e-7)
                events.append(describe_release("gaussian", budget)[0])
            elif kind == 1:
                budget = PrivacyBudget(eps)
                events.append(RandomizedResponseEvent(eps, int(rng.integers(2, 6))))
            else:
                budget = PrivacyBudget(eps)
                events.append(EpsilonDeltaEvent(eps))
            budgets.append(budget)
        with track_budget(accountant="pld", delta=DELTA) as acc:
            for event, budget in zip(events, budgets):
                record_spend(budget, "x", mechanism=event)
        basic = sum(budgets)
        assert acc.basic_total.epsilon == pytest.approx(basic.epsilon)
        assert acc.total.epsilon <= basic.epsilon
        # dp_accounting's PLDs composed one by one, in order
        composed = events[0]._pld(1e-4)
        for event in events[1:]:
            composed = composed.compose(event._pld(1e-4))
        reference = min(composed.get_epsilon_for_delta(DELTA), basic.epsilon)
        assert acc.total.epsilon == pytest.approx(reference, rel=1e-3, abs=1e-3)


def test_laplace_event_matches_dp_accounting():
    with track_budget(accountant="pld", delta=DELTA) as acc:
        for _ in range(10):
            record_spend(PrivacyBudget(0.5), "lap", mechanism=LaplaceEvent(2.0))
    expected = google_epsilon([dp_accounting.LaplaceDpEvent(2.0)], 10)
    assert acc.total.epsilon == pytest.approx(expected, rel=1e-9)


def test_pld_cap_admits_what_dp_accounting_admits():
    budget, limit = PrivacyBudget(1.0, 1e-6), 2.0
    sigma = analytic_sigma(1.0, 1e-6, 1.0)
    allowed = 0
    while google_epsilon([dp_accounting.GaussianDpEvent(sigma)], allowed + 1) <= limit:
        allowed += 1
    assert allowed > 2  # basic composition would stop at 2
    with pytest.raises(BudgetExceededError):
        with track_budget(limit, DELTA, accountant="pld") as acc:
            for _ in range(allowed + 3):
                record_spend(budget, "fit", mechanism="gaussian")
    assert len(acc.spends) == allowed
    assert acc.total <= PrivacyBudget(limit, DELTA)


def test_non_private_release_is_infinite():
    with track_budget(accountant="pld", delta=DELTA) as acc:
        record_spend(PrivacyBudget(1.0, 1e-6), "g", mechanism="gaussian")
        record_spend(PrivacyBudget(math.inf), "exact", mechanism="gaussian")
    assert math.isinf(acc.total.epsilon)


def test_estimators_describe_their_releases():
    from skdp.linear_model import FMLinearRegression
    from skdp.preprocessing import ExponentialLabelRelease

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (50, 2))
    y = X.sum(axis=1)
    fm = FMLinearRegression(
        epsilon=1.0,
        delta=1e-6,
        mechanism="gaussian",
        bounds_X=(-1, 1),
        bounds_y=(-2, 2),
    )
    labels = rng.integers(0, 3, 50)
    elr = ExponentialLabelRelease(epsilon=2.0, classes=[0, 1, 2], random_state=0)
    with track_budget(accountant="pld", delta=DELTA) as acc:
        fm.fit(X, y)
        elr.fit_resample(X, labels)
    assert acc.events[0] == (GaussianEvent(analytic_sigma(1.0, 1e-6, 1.0)),)
    # the exponential label release is exactly RR at epsilon / 2
    assert acc.events[1] == (RandomizedResponseEvent(1.0, 3),)
    assert acc.basic_total == PrivacyBudget(2.0, 1e-6)


# ------------------------------------------------------------ incremental
def test_vectorized_epsilon_is_dp_accountings():
    from skdp.accounting._pld import _epsilon_for_delta, _event_pmfs

    for event, count in [
        (EpsilonDeltaEvent(0.5), 30),
        (RandomizedResponseEvent(0.8, 3), 12),
        (LaplaceEvent(2.0), 5),
        (GaussianEvent(3.0), 1),
    ]:
        pld = event._pld(1e-4).self_compose(count)
        (pmf, _) = _event_pmfs.__wrapped__(_SelfComposed(pld), 1e-4)
        for delta in (1e-3, 1e-5, 1e-9, 1e-12):
            expected = pld.get_epsilon_for_delta(delta)
            # the same sums in the same order; numpy's exp/log may differ by an ulp
            assert _epsilon_for_delta(pmf, delta, 1e-4) == pytest.approx(
                expected, rel=1e-10
            )


class _SelfComposed:
    """An event whose PLD is a given dp_accounting PLD (to read its arrays)."""

    def __init__(self, pld):
        self.pld = pld

    def _pld(self, interval):
        return self.pld


def test_one_composition_per_release_whatever_came_before(monkeypatch):
    # the cost of a release does not grow with the number of earlier ones: one
    # convolution into the running distribution, then one epsilon query
    from skdp.accounting import _pld

    calls = []
    compose = _pld._compose
    monkeypatch.setattr(
        _pld, "_compose", lambda *a, **k: calls.append(1) or compose(*a, **k)
    )
    limit = PrivacyBudget(4.0, DELTA)
    events = [EpsilonDeltaEvent(0.05), RandomizedResponseEvent(0.07, 2)]
    with track_budget(limit.epsilon, DELTA, accountant="pld") as capped:
        for i in range(200):
            before = len(calls)
            record_spend(PrivacyBudget(0.07), "r", mechanism=events[i % 2])
            assert len(calls) - before <= 1
    # the window keeps the running distribution within [-50, cap + 10]
    (cell,) = capped._cells
    pmf = cell.pld.remove
    assert pmf.lower * 1e-4 >= _pld.LOWER_LOSS
    assert (pmf.lower + pmf.probs.size - 1) * 1e-4 <= limit.epsilon + _pld.UPPER_MARGIN
    # and costs no tightness: the same releases without a cap (no window)
    with track_budget(accountant="pld", delta=DELTA) as free:
        for i in range(200):
            record_spend(PrivacyBudget(0.07), "r", mechanism=events[i % 2])
    assert capped.total.epsilon == pytest.approx(free.total.epsilon, rel=1e-9)
    assert capped.total <= limit


def test_incremental_composition_is_dp_accountings():
    # with no window, each step is dp_accounting's compose (same truncation)
    rng = np.random.default_rng(3)
    events = [
        EpsilonDeltaEvent(0.3, 1e-8),
        RandomizedResponseEvent(0.5, 4),
        LaplaceEvent(3.0),
        GaussianEvent(4.0),
    ]
    chosen = [events[i] for i in rng.integers(0, 4, 12)]
    reference = chosen[0]._pld(1e-4)
    for event in chosen[1:]:
        reference = reference.compose(event._pld(1e-4))
    with track_budget(accountant="pld", delta=DELTA) as acc:
        for event in chosen:
            record_spend(PrivacyBudget(1.0, 1e-8), "x", mechanism=event)
    assert acc.total.epsilon == pytest.approx(
        reference.get_epsilon_for_delta(DELTA), rel=1e-6
    )


def test_absurd_delta_gives_a_finite_total():
    # issue 22: at delta <= 1e-30 the PLD total was inf with no warning
    target = 1e-30
    sigma = analytic_sigma(1.0, 1e-5, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        with track_budget(accountant="pld", delta=target) as gaussians:
            for _ in range(10):
                record_spend(PrivacyBudget(1.0, 1e-5), "g", mechanism="gaussian")
        with track_budget(accountant="pld", delta=target) as pure:
            for _ in range(10):
                record_spend(PrivacyBudget(0.5), "p")
    # Gaussians alone: exact at any delta
    assert_exact_gaussian(gaussians.total.epsilon, sigma / 10**0.5, target)
    assert pure.total == PrivacyBudget(5.0) or pure.total.epsilon <= 5.0
    with pytest.warns(RuntimeWarning, match="cannot resolve delta"):
        with track_budget(accountant="pld", delta=target) as mixed:
            for _ in range(10):
                record_spend(PrivacyBudget(1.0, 1e-5), "g", mechanism="gaussian")
            record_spend(PrivacyBudget(0.5), "p")
            total = mixed.total
    # the fallback: Gaussians composed exactly, plus the pure release
    assert total.delta == target
    assert total.epsilon == pytest.approx(gaussians.total.epsilon + 0.5, rel=1e-12)
