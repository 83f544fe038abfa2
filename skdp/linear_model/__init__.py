"""Differentially private linear models."""

from skdp.linear_model._fm import (
    FMLinearRegression,
    FMLogisticRegression,
    FMStatistics,
)
from skdp.linear_model._loss_correction import LossCorrectedLogisticRegression
from skdp.linear_model._symmetric_loss import SymmetricLossClassifier

__all__ = [
    "FMLinearRegression",
    "FMLogisticRegression",
    "FMStatistics",
    "LossCorrectedLogisticRegression",
    "SymmetricLossClassifier",
]
