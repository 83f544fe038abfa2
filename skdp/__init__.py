"""skdp: differentially private machine learning, scikit-learn compatible."""

__version__ = "0.1.0"

from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning

__all__ = [
    "BudgetExceededError",
    "PrivacyBudget",
    "PrivacyLeakWarning",
    "__version__",
    "track_budget",
]
