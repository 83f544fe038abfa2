"""Label and feature privatization (randomized response, exponential label
release, RR-with-prior, label-private regression) and private per-feature ranges
(:func:`private_bounds`, :class:`PrivateBoundsEstimator`).

Labels are not y-transformers in scikit-learn, so label privatizers follow the
sampler protocol ``fit_resample(X, y) -> (X, y_private)`` (imbalanced-learn
style) and :class:`PrivateLabelClassifier` / :class:`PrivateLabelRegressor`
privatize the labels inside ``fit``. :class:`PrivateStandardScaler` releases
per-feature means and variances, :class:`PrivateMinMaxScaler` per-feature ranges.
"""

from skdp._ranges.private_bounds import (
    PrivateBounds,
    PrivateBoundsWarning,
    private_bounds,
    schema_bounds,
)
from skdp.preprocessing._exponential_label import ExponentialLabelRelease
from skdp.preprocessing._label_analysis import (
    changed_labels_log_pmf,
    label_flip_probability,
    label_survival_probability,
    recommended_epsilon,
)
from skdp.preprocessing._private_bounds_estimator import PrivateBoundsEstimator
from skdp.preprocessing._private_label import PrivateLabelClassifier
from skdp.preprocessing._private_label_regression import PrivateLabelRegressor
from skdp.preprocessing._private_minmax import PrivateMinMaxScaler
from skdp.preprocessing._private_scaler import PrivateStandardScaler
from skdp.preprocessing._randomized_response import RandomizedResponse
from skdp.preprocessing._regression_label_release import RegressionLabelRelease
from skdp.preprocessing._rr_with_prior import RandomizedResponseWithPrior

__all__ = [
    "ExponentialLabelRelease",
    "PrivateBounds",
    "PrivateBoundsEstimator",
    "PrivateBoundsWarning",
    "PrivateLabelClassifier",
    "PrivateLabelRegressor",
    "PrivateMinMaxScaler",
    "PrivateStandardScaler",
    "RandomizedResponse",
    "RandomizedResponseWithPrior",
    "RegressionLabelRelease",
    "changed_labels_log_pmf",
    "label_flip_probability",
    "label_survival_probability",
    "private_bounds",
    "recommended_epsilon",
    "schema_bounds",
]
