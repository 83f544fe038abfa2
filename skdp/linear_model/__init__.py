"""Differentially private linear models."""

from skdp.linear_model._fm import FMStatistics
from skdp.linear_model._fm_linear import FMLinearRegression
from skdp.linear_model._fm_logistic import FMLogisticRegression
from skdp.linear_model._loss_correction import LossCorrectedLogisticRegression
from skdp.linear_model._objective_perturbation import OPLogisticRegression
from skdp.linear_model._private_logistic import PrivateLogisticRegression
from skdp.linear_model._symmetric_loss import SymmetricLossClassifier
from skdp.linear_model._theil_sen import PrivateTheilSenRegressor

__all__ = [
    "FMLinearRegression",
    "FMLogisticRegression",
    "FMStatistics",
    "LossCorrectedLogisticRegression",
    "OPLogisticRegression",
    "PrivateLogisticRegression",
    "PrivateTheilSenRegressor",
    "SymmetricLossClassifier",
]
