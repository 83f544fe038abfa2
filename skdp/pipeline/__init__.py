"""Privacy of whole pipelines: :func:`check_privacy` reports, step by step, what a
fitted pipeline released (private with its budget, data-independent, or fitted on
the data without privacy) and the composed total; :func:`make_private_pipeline`
builds a :class:`PrivatePipeline`, which refuses a step that would leak before
anything is fitted and hands each private step's output domain to the next."""

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
from skdp.pipeline._private_pipeline import PrivatePipeline, make_private_pipeline

__all__ = [
    "DATA_INDEPENDENT",
    "LABEL_PRIVATE",
    "NOT_FITTED",
    "NOT_PRIVATE",
    "PRIVATE",
    "PrivacyReport",
    "PrivatePipeline",
    "StepPrivacy",
    "check_privacy",
    "make_private_pipeline",
]
