"""Label and feature privatization: randomized response, exponential label release.

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
from skdp.preprocessing._private_label import PrivateLabelClassifier
from skdp.preprocessing._randomized_response import RandomizedResponse
from skdp.preprocessing._rr_with_prior import RandomizedResponseWithPrior

__all__ = [
    "ExponentialLabelRelease",
    "PrivateLabelClassifier",
    "RandomizedResponse",
    "RandomizedResponseWithPrior",
    "changed_labels_log_pmf",
    "label_flip_probability",
    "label_survival_probability",
    "recommended_epsilon",
]
