"""Model inspection: the test-loss cost of randomized response via influence."""

from skdp.inspection._attributes import LABEL
from skdp.inspection._ihvp import ConjugateGradientSolver, ExplicitSolver, LissaSolver
from skdp.inspection._influence import RRInfluenceEstimator
from skdp.inspection._loss_adapters import LinearLossAdapter, register_loss_adapter

__all__ = [
    "LABEL",
    "ConjugateGradientSolver",
    "ExplicitSolver",
    "LinearLossAdapter",
    "LissaSolver",
    "RRInfluenceEstimator",
    "register_loss_adapter",
]
