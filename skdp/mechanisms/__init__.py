"""Differential privacy primitives (no estimator API)."""

from skdp._gaussian_calibration import analytic_sigma, gaussian_delta
from skdp.mechanisms._exponential import ExponentialMechanism
from skdp.mechanisms._gaussian import GaussianMechanism
from skdp.mechanisms._laplace import LaplaceMechanism
from skdp.mechanisms._randomized_response import (
    RandomizedResponseMechanism,
    project_to_simplex,
)

__all__ = [
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "RandomizedResponseMechanism",
    "analytic_sigma",
    "gaussian_delta",
    "project_to_simplex",
]
