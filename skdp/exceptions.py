"""Warnings and errors raised by skdp."""

__all__ = ["BudgetExceededError", "PrivacyLeakWarning"]


class PrivacyLeakWarning(RuntimeWarning):
    """The differential privacy guarantee does not cover some of the computation.

    Raised, for example, when data bounds are inferred from the data instead of being
    declared by the user: the bounds themselves then depend on the private data.
    """


class BudgetExceededError(ValueError):
    """A spend would take the tracked privacy budget past its declared limit."""
