"""Validation, random state and privacy-audit helpers."""

from skdp.utils._audit import AuditResult, audit_mechanism, empirical_epsilon
from skdp.utils._random import (
    check_random_state,
    noise_generator,
    release_generator,
)
from skdp.utils._validation import (
    check_bounds,
    check_classes,
    check_data_norm,
    check_delta,
    check_epsilon,
    check_int,
    check_labels_in,
    check_sensitivity,
    clip_to_bounds,
    clip_to_norm,
    feature_bounds,
    infer_bounds,
    infer_data_norm,
)

__all__ = [
    "AuditResult",
    "audit_mechanism",
    "check_bounds",
    "check_classes",
    "check_data_norm",
    "check_delta",
    "check_epsilon",
    "check_int",
    "check_labels_in",
    "check_random_state",
    "check_sensitivity",
    "clip_to_bounds",
    "clip_to_norm",
    "empirical_epsilon",
    "feature_bounds",
    "infer_bounds",
    "infer_data_norm",
    "noise_generator",
    "release_generator",
]
