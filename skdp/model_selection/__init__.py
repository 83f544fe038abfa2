"""Private hyperparameter selection: the choice itself is differentially private."""

from skdp.model_selection._search import PrivateGridSearchCV, PrivateRandomizedSearchCV

__all__ = ["PrivateGridSearchCV", "PrivateRandomizedSearchCV"]
