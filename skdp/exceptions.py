"""Warnings and errors raised by skdp."""

__all__ = [
    "BudgetExceededError",
    "PrivacyLeakError",
    "PrivacyLeakWarning",
    "ReproducibleNoiseWarning",
]


class PrivacyLeakWarning(RuntimeWarning):
    """The differential privacy guarantee does not cover some of the computation.

    Raised, for example, when data bounds are inferred from the data instead of being
    declared by the user: the bounds themselves then depend on the private data.
    """


class ReproducibleNoiseWarning(PrivacyLeakWarning):
    """A release drew its noise from a seed: anyone who knows the seed knows the noise.

    Issued on every release made while reproducible noise is switched on
    (``skdp.set_config(reproducible_noise=True)`` or the environment variable
    ``SKDP_REPRODUCIBLE_NOISE=1``) with a ``random_state`` other than ``None``.
    Such a release is reproducible (tests, papers) and is not differentially
    private against whoever can learn the seed.
    """


class BudgetExceededError(ValueError):
    """A spend would take the tracked privacy budget past its declared limit."""


class PrivacyLeakError(ValueError):
    """A step would be fitted on the data without privacy, and nothing allows it.

    Raised by :class:`~skdp.pipeline.PrivatePipeline` before anything is fitted
    (and nothing spent) for every step that would leak; the message names the
    steps. List a step in the pipeline's ``allow=`` to fit it anyway.
    """
