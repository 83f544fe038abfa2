"""Privacy of whole pipelines: :func:`check_privacy` reports, step by step, what a
fitted pipeline released (private with its budget, data-independent, or fitted on
the data without privacy) and the composed total."""

from skdp.pipeline._check import (
    DATA_INDEPENDENT,
    LABEL_PRIVATE,
    NOT_FITTED,
    NOT_PRIVATE,
    PRIVATE,
    PrivacyReport,
    StepPrivacy,
    check_privacy,
)

__all__ = [
    "DATA_INDEPENDENT",
    "LABEL_PRIVATE",
    "NOT_FITTED",
    "NOT_PRIVATE",
    "PRIVATE",
    "PrivacyReport",
    "StepPrivacy",
    "check_privacy",
]
