"""Differentially private linear models."""

from skdp.linear_model._fm import FMLinearRegression, FMLogisticRegression

__all__ = [
    "FMLinearRegression",
    "FMLogisticRegression",
]
