"""skdp: differentially private machine learning, scikit-learn compatible."""

__version__ = "0.1.0"

from skdp._config import config_context, get_config, set_config
from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import (
    BudgetExceededError,
    PrivacyLeakError,
    PrivacyLeakWarning,
    ReproducibleNoiseWarning,
)

__all__ = [
    "BudgetExceededError",
    "PrivacyBudget",
    "PrivacyLeakError",
    "PrivacyLeakWarning",
    "ReproducibleNoiseWarning",
    "__version__",
    "config_context",
    "get_config",
    "set_config",
    "track_budget",
]
