"""An (epsilon, delta) guarantee and its basic sequential composition."""

import math
from dataclasses import dataclass
from numbers import Real

__all__ = ["PrivacyBudget"]


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
    partial, so ``a <= b`` and ``b <= a`` can both be False. The repr rounds
    each value to 12 significant digits (composition leaves float dust such as
    ``1.6000000000000003e-05``); the attributes hold the exact values.

    Examples
    --------
    >>> from skdp.accounting import PrivacyBudget
    >>> PrivacyBudget(0.5) + PrivacyBudget(1.0, 1e-6)
    PrivacyBudget(epsilon=1.5, delta=1e-06)
    >>> PrivacyBudget(1.0) <= PrivacyBudget(2.0, 1e-5)
    True
    >>> sum([PrivacyBudget(1.925, 1e-6)] * 16)   # shown to 12 significant digits
    PrivacyBudget(epsilon=30.8, delta=1.6e-05)
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

    def __repr__(self):
        # 12 significant digits: composition leaves float dust (0.1 + 0.2 reads
        # 0.30000000000000004, 16 * 1e-6 reads 1.6000000000000003e-05); the
        # stored values are exact, only their display is rounded
        def show(x):
            short = float(f"{x:.12g}")
            return repr(x if short == 1.0 != x else short)  # delta < 1 stays < 1

        return f"PrivacyBudget(epsilon={show(self.epsilon)}, delta={show(self.delta)})"

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
