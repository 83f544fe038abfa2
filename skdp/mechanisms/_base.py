"""What every mechanism shares: its guarantee and a readable repr."""

from skdp.accounting import EpsilonDeltaEvent, PrivacyBudget


class Mechanism:
    """Base class: subclasses set ``epsilon`` and ``delta`` and implement sampling."""

    epsilon: float
    delta: float = 0.0

    @property
    def privacy_spent(self):
        """The :class:`~skdp.accounting.PrivacyBudget` one call provides."""
        return PrivacyBudget(self.epsilon, self.delta)

    @property
    def privacy_event(self):
        """What one call is, for a PLD accountant (:mod:`skdp.accounting`).

        By default its (epsilon, delta) guarantee alone; mechanisms whose privacy
        loss is known exactly (Gaussian, randomized response) say more.
        """
        return EpsilonDeltaEvent(self.epsilon, self.delta)

    def _repr_params(self):
        return {"epsilon": self.epsilon}

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self._repr_params().items())
        return f"{type(self).__name__}({params})"
