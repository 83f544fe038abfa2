"""Privacy budgets and an optional context manager that records spends.

Composition is basic sequential composition: the epsilons add and the deltas add.
It is always valid, never tight; tighter accountants (advanced composition, RDP)
are out of scope for now.
"""

import contextlib
import contextvars
import math
from dataclasses import dataclass, field
from numbers import Real

from skdp.exceptions import BudgetExceededError

__all__ = ["BudgetTracker", "PrivacyBudget", "record_spend", "track_budget"]


@dataclass(frozen=True, order=False)
class PrivacyBudget:
    """An (epsilon, delta) differential privacy guarantee.

    Parameters
    ----------
    epsilon : float
        In [0, inf]. ``0`` is a release that reveals nothing; ``inf`` no privacy.
    delta : float, default=0.0
        In [0, 1).

    Notes
    -----
    ``a + b`` is sequential composition (epsilons and deltas add). ``a <= b`` means
    that ``a`` is at least as private as ``b`` in both coordinates; the order is
    partial, so ``a <= b`` and ``b <= a`` can both be False.

    Examples
    --------
    >>> from skdp.accounting import PrivacyBudget
    >>> PrivacyBudget(0.5) + PrivacyBudget(1.0, 1e-6)
    PrivacyBudget(epsilon=1.5, delta=1e-06)
    >>> PrivacyBudget(1.0) <= PrivacyBudget(2.0, 1e-5)
    True
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self):
        eps, delta = self.epsilon, self.delta
        for name, value in (("epsilon", eps), ("delta", delta)):
            if isinstance(value, bool) or not isinstance(value, Real):
                raise TypeError(
                    f"PrivacyBudget {name} must be a real number, got {value!r}."
                )
        if math.isnan(eps) or eps < 0:
            raise ValueError(f"PrivacyBudget epsilon must be in [0, inf], got {eps!r}.")
        if math.isnan(delta) or not 0 <= delta < 1:
            raise ValueError(f"PrivacyBudget delta must be in [0, 1), got {delta!r}.")
        object.__setattr__(self, "epsilon", float(eps))
        object.__setattr__(self, "delta", float(delta))

    def __add__(self, other):
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return PrivacyBudget(
            self.epsilon + other.epsilon,
            min(self.delta + other.delta, math.nextafter(1, 0)),
        )

    def __radd__(self, other):
        # sum([...]) starts from 0
        if other == 0:
            return self
        return NotImplemented

    def __le__(self, other):
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return self.epsilon <= other.epsilon and self.delta <= other.delta

    def __ge__(self, other):
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return other <= self

    def __lt__(self, other):
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return self <= other and self != other

    def __gt__(self, other):
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return other < self


@dataclass
class BudgetTracker:
    """Spends recorded inside one :func:`track_budget` block.

    Attributes
    ----------
    limit : PrivacyBudget or None
    spends : list of (source, PrivacyBudget)
    """

    limit: PrivacyBudget | None = None
    spends: list = field(default_factory=list)

    @property
    def total(self):
        """Sequential composition of every recorded spend."""
        return sum((b for _, b in self.spends), PrivacyBudget(0.0))

    @property
    def remaining(self):
        """What is left of the limit (None without a limit)."""
        if self.limit is None:
            return None
        total = self.total
        return PrivacyBudget(
            max(self.limit.epsilon - total.epsilon, 0.0),
            max(self.limit.delta - total.delta, 0.0),
        )

    def _record(self, budget, source):
        if self.limit is not None and not (self.total + budget) <= self.limit:
            raise BudgetExceededError(
                f"{source} would spend {budget}, taking the total to "
                f"{self.total + budget}, past the limit {self.limit}."
            )
        self.spends.append((source, budget))


_active_trackers = contextvars.ContextVar("skdp_budget_trackers", default=())


@contextlib.contextmanager
def track_budget(epsilon=None, delta=0.0):
    """Record every privacy spend made by skdp inside the block.

    Parameters
    ----------
    epsilon, delta : float or None
        Optional limit. A release that would take the total past it raises
        :class:`~skdp.exceptions.BudgetExceededError` *before* its result is
        returned, so the over-budget output never reaches the caller.

    Yields
    ------
    BudgetTracker

    Notes
    -----
    Trackers nest: a spend is recorded in (and checked against) every active one.
    Each ``fit`` of a DP estimator (and each ``transform`` of a noisy transformer)
    is one spend, so a grid search over 5 values with 3 folds records 15 spends plus
    the refit. The total is basic sequential composition, valid for any data overlap.

    Examples
    --------
    >>> from skdp.accounting import track_budget, record_spend, PrivacyBudget
    >>> with track_budget(epsilon=1.0) as acc:
    ...     _ = record_spend(PrivacyBudget(0.25), "demo")
    >>> acc.total
    PrivacyBudget(epsilon=0.25, delta=0.0)
    """
    limit = None if epsilon is None else PrivacyBudget(epsilon, delta)
    tracker = BudgetTracker(limit=limit)
    token = _active_trackers.set(_active_trackers.get() + (tracker,))
    try:
        yield tracker
    finally:
        _active_trackers.reset(token)


def record_spend(budget, source="skdp"):
    """Record ``budget`` in every active tracker; raise if one would be exceeded.

    Called by every DP estimator at the end of ``fit`` before it stores the released
    model. All trackers are checked before any is updated.
    """
    if not isinstance(budget, PrivacyBudget):
        raise TypeError(f"budget must be a PrivacyBudget, got {type(budget).__name__}.")
    trackers = _active_trackers.get()
    for tracker in trackers:
        if tracker.limit is not None and not (tracker.total + budget) <= tracker.limit:
            tracker._record(budget, source)  # raises with the message
    for tracker in trackers:
        tracker.spends.append((source, budget))
    return budget
