"""How one release describes itself to an accountant.

A :class:`~skdp.accounting.PrivacyBudget` says what a release guarantees on its
own; an event says what the release *is* (which noise, how much), which is what a
privacy-loss-distribution accountant needs to compose many releases tightly. The
events are plain frozen dataclasses (no optional dependency at import time); each
maps to one of Google's ``dp_accounting`` events for readers who use that library.

Every event is stated for replace-one neighbours, the relation skdp's sensitivities
use: a noise multiplier is the noise scale divided by the largest change of the
released vector when one record is replaced.
"""

import math
from dataclasses import dataclass
from numbers import Integral, Real

from skdp.accounting._budget import PrivacyBudget

__all__ = [
    "EpsilonDeltaEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "PrivacyEvent",
    "RandomizedResponseEvent",
    "describe_release",
]


def _check_positive(name, value, allow_inf=False):
    if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(value):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    if value < 0 or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be >= 0 and finite, got {value!r}.")
    return float(value)


class PrivacyEvent:
    """Base class of the release descriptions an accountant composes."""

    def to_dp_event(self):
        """The equivalent ``dp_accounting`` event (needs ``skdp[accounting]``)."""
        raise NotImplementedError

    def _pld(self, interval):
        """Its privacy loss distribution (pessimistic discretization)."""
        raise NotImplementedError

    @property
    def is_trivial(self):
        """True if the release reveals nothing (composition can skip it)."""
        return False

    @property
    def is_non_private(self):
        """True if the release has no privacy guarantee at all."""
        return False

    def _to_wire(self):
        return [type(self).__name__, *(getattr(self, f) for f in self._fields)]


@dataclass(frozen=True)
class _NoiseMultiplierEvent(PrivacyEvent):
    # an additive-noise release known by its noise scale / sensitivity
    noise_multiplier: float
    _fields = ("noise_multiplier",)

    def __post_init__(self):
        object.__setattr__(
            self,
            "noise_multiplier",
            _check_positive("noise_multiplier", self.noise_multiplier),
        )

    @property
    def is_non_private(self):
        return self.noise_multiplier == 0


@dataclass(frozen=True)
class GaussianEvent(_NoiseMultiplierEvent):
    """One Gaussian release: noise standard deviation / L2 sensitivity.

    Parameters
    ----------
    noise_multiplier : float
        sigma / Delta_2 with Delta_2 the replace-one L2 sensitivity of the whole
        released vector. ``0`` is a non-private release.

    Notes
    -----
    With ``||f(D) - f(D')||_2 <= Delta_2`` the pair of output distributions is,
    after a rotation, ``N(0, sigma^2)`` against ``N(Delta_2, sigma^2)`` in one
    coordinate (the other coordinates cancel), so the privacy loss distribution
    is that of a one-dimensional Gaussian with shift 1 and scale
    ``noise_multiplier``, the ``GaussianDpEvent`` of dp_accounting.
    """

    def to_dp_event(self):
        import dp_accounting

        return dp_accounting.GaussianDpEvent(self.noise_multiplier)

    def _pld(self, interval):
        from dp_accounting.pld import privacy_loss_distribution

        return privacy_loss_distribution.from_gaussian_mechanism(
            self.noise_multiplier, value_discretization_interval=interval
        )


@dataclass(frozen=True)
class LaplaceEvent(_NoiseMultiplierEvent):
    """One continuous Laplace release: noise scale / L1 sensitivity.

    Parameters
    ----------
    noise_multiplier : float
        b / Delta_1 (so the release is ``1 / noise_multiplier``-DP).

    Notes
    -----
    Only for Laplace noise drawn from the continuous distribution.
    :class:`~skdp.mechanisms.LaplaceMechanism` draws on a lattice (discrete
    Laplace), whose privacy loss puts slightly more mass on its largest value than
    the continuous one: it describes itself by its pure epsilon instead (see
    :class:`EpsilonDeltaEvent`).
    """

    def to_dp_event(self):
        import dp_accounting

        return dp_accounting.LaplaceDpEvent(self.noise_multiplier)

    def _pld(self, interval):
        from dp_accounting.pld import privacy_loss_distribution

        return privacy_loss_distribution.from_laplace_mechanism(
            self.noise_multiplier, value_discretization_interval=interval
        )


@dataclass(frozen=True)
class RandomizedResponseEvent(PrivacyEvent):
    """k-ary randomized response of one record's value (keep w.p. e^eps/(C-1+e^eps)).

    Parameters
    ----------
    epsilon : float
        In [0, inf].
    n_categories : int
        C >= 1 (C = 1 releases nothing).

    Notes
    -----
    Replacing one record changes one report: the privacy loss is ``+epsilon`` with
    probability ``e^eps / (C - 1 + e^eps)``, ``-epsilon`` with probability
    ``1 / (C - 1 + e^eps)`` and ``0`` otherwise. This is dp_accounting's
    ``RandomizedResponseDpEvent`` with ``noise_parameter = C / (C - 1 + e^eps)``
    (report a uniform category with that probability, else the truth), under
    replace-one neighbours.
    """

    epsilon: float
    n_categories: int
    _fields = ("epsilon", "n_categories")

    def __post_init__(self):
        eps = _check_positive("epsilon", self.epsilon, allow_inf=True)
        C = self.n_categories
        if isinstance(C, bool) or not isinstance(C, Integral) or C < 1:
            raise ValueError(f"n_categories must be an int >= 1, got {C!r}.")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "n_categories", int(C))

    @property
    def noise_parameter(self):
        """Probability of reporting a uniformly drawn category."""
        if math.isinf(self.epsilon):
            return 0.0
        # C / (C - 1 + e^eps) without overflow for large eps
        C = self.n_categories
        return C * math.exp(-self.epsilon) / ((C - 1) * math.exp(-self.epsilon) + 1)

    @property
    def is_trivial(self):
        return self.n_categories == 1 or self.epsilon == 0

    @property
    def is_non_private(self):
        return not self.is_trivial and math.isinf(self.epsilon)

    def to_dp_event(self):
        import dp_accounting

        return dp_accounting.RandomizedResponseDpEvent(
            self.noise_parameter, self.n_categories
        )

    def _pld(self, interval):
        from dp_accounting import NeighboringRelation
        from dp_accounting.pld import privacy_loss_distribution

        return privacy_loss_distribution.from_randomized_response(
            self.noise_parameter,
            self.n_categories,
            value_discretization_interval=interval,
            neighboring_relation=NeighboringRelation.REPLACE_ONE,
        )


@dataclass(frozen=True)
class EpsilonDeltaEvent(PrivacyEvent):
    """A release known only by its (epsilon, delta) guarantee.

    Parameters
    ----------
    epsilon : float
        In [0, inf].
    delta : float, default=0.0

    Notes
    -----
    The accountant uses the worst privacy loss distribution of any
    (epsilon, delta)-DP mechanism: ``+inf`` with probability delta, ``+-epsilon``
    otherwise (Kairouz, Oh & Viswanath 2015; dp_accounting's
    ``from_privacy_parameters``). Composing it is never worse than adding the
    epsilons, and much better for many releases.
    """

    epsilon: float
    delta: float = 0.0
    _fields = ("epsilon", "delta")

    def __post_init__(self):
        budget = PrivacyBudget(self.epsilon, self.delta)  # validates
        object.__setattr__(self, "epsilon", budget.epsilon)
        object.__setattr__(self, "delta", budget.delta)

    @property
    def is_trivial(self):
        return self.epsilon == 0 and self.delta == 0

    @property
    def is_non_private(self):
        return math.isinf(self.epsilon)

    def to_dp_event(self):
        import dp_accounting

        if math.isinf(self.epsilon):
            return dp_accounting.NonPrivateDpEvent()
        if self.epsilon == 0 and self.delta == 0:
            return dp_accounting.NoOpDpEvent()
        # dp_accounting 0.6 has no (epsilon, delta) event, only its PLD
        return dp_accounting.UnsupportedDpEvent()

    def _pld(self, interval):
        from dp_accounting.pld import common, privacy_loss_distribution

        return privacy_loss_distribution.from_privacy_parameters(
            common.DifferentialPrivacyParameters(self.epsilon, self.delta),
            value_discretization_interval=interval,
        )


_EVENT_TYPES = {
    cls.__name__: cls
    for cls in (GaussianEvent, LaplaceEvent, RandomizedResponseEvent, EpsilonDeltaEvent)
}


def events_from_wire(items):
    """Rebuild events sent as plain lists (the ledger protocol carries no pickles)."""
    events = []
    for item in items:
        cls = _EVENT_TYPES.get(item[0]) if item else None
        if cls is None:
            raise ValueError(f"unknown privacy event {item!r}.")
        events.append(cls(*item[1:]))
    return tuple(events)


def describe_release(mechanism, budget):
    """The events of one release whose guarantee is ``budget``.

    Parameters
    ----------
    mechanism : None, str, PrivacyEvent, mechanism or list of these
        ``None`` or ``"laplace"``: known by its pure (epsilon, delta) only.
        ``"gaussian"``: a composition of Gaussian mechanisms whose basic guarantee
        is ``budget`` (see Notes). A :class:`PrivacyEvent`, or any object with a
        ``privacy_event`` attribute (every :mod:`skdp.mechanisms` mechanism), is
        taken as it is; a list is the composition of its items (``None`` items,
        e.g. a column with one category, release nothing).
    budget : PrivacyBudget

    Returns
    -------
    tuple of PrivacyEvent

    Notes
    -----
    ``"gaussian"`` is safe whatever the calibration: Gaussian releases compose
    into one Gaussian mechanism, and a Gaussian mechanism that is
    (epsilon, delta)-DP has a noise multiplier at least the analytic one for
    (epsilon, delta) (Balle & Wang 2018, whose calibration is exact), so the
    event ``GaussianEvent(analytic_sigma(epsilon, delta, 1))`` describes a
    mechanism at most as private as the real one.
    """
    if mechanism is None or (isinstance(mechanism, str) and mechanism == "laplace"):
        return (EpsilonDeltaEvent(budget.epsilon, budget.delta),)
    if isinstance(mechanism, str):
        if mechanism != "gaussian":
            raise ValueError(
                "mechanism must be None, 'laplace', 'gaussian', a PrivacyEvent, a "
                f"mechanism or a list of these, got {mechanism!r}."
            )
        if not 0 < budget.delta < 1 or math.isinf(budget.epsilon):
            return (EpsilonDeltaEvent(budget.epsilon, budget.delta),)
        from skdp._gaussian_calibration import analytic_sigma

        return (GaussianEvent(analytic_sigma(budget.epsilon, budget.delta, 1.0)),)
    if isinstance(mechanism, PrivacyEvent):
        return (mechanism,)
    if isinstance(mechanism, list | tuple):
        return tuple(
            event
            for item in mechanism
            if item is not None
            for event in describe_release(item, budget)
        )
    event = getattr(mechanism, "privacy_event", None)
    if isinstance(event, PrivacyEvent):
        return (event,)
    raise TypeError(
        "mechanism must be None, 'laplace', 'gaussian', a PrivacyEvent, a mechanism "
        f"with a privacy_event or a list of these, got {type(mechanism).__name__}."
    )
