"""Label and feature privatization (randomized response, exponential label
release) and private per-feature ranges (:func:`private_bounds`).

Labels are not y-transformers in scikit-learn, so label privatizers follow the
sampler protocol ``fit_resample(X, y) -> (X, y_private)`` (imbalanced-learn
style) and :class:`PrivateLabelClassifier` privatizes the labels inside ``fit``.
"""

from skdp.preprocessing._exponential_label import ExponentialLabelRelease
from skdp.preprocessing._label_analysis import (
    changed_labels_log_pmf,
    label_flip_probability,
    label_survival_probability,
    recommended_epsilon,
)
from skdp.preprocessing._private_bounds import (
    PrivateBounds,
    PrivateBoundsWarning,
    private_bounds,
    schema_bounds,
)
from skdp.preprocessing._private_label import PrivateLabelClassifier
from skdp.preprocessing._randomized_response import RandomizedResponse

__all__ = [
    "ExponentialLabelRelease",
    "PrivateBounds",
    "PrivateBoundsWarning",
    "PrivateLabelClassifier",
    "RandomizedResponse",
    "changed_labels_log_pmf",
    "label_flip_probability",
    "label_survival_probability",
    "private_bounds",
    "recommended_epsilon",
    "schema_bounds",
]
