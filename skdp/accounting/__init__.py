"""Privacy budgets, composition, and tracking of every spend made inside a block.

:func:`track_budget` records every release made by skdp inside a ``with`` block,
wherever it runs (threads, joblib/dask workers on the same machine), enforces an
optional limit before each release, and composes either by basic sequential
composition or, with ``accountant="pld"``, with privacy loss distributions from
Google's ``dp-accounting`` (extra ``skdp[accounting]``); releases on disjoint
rows (:func:`on_rows`) compose by their maximum.
"""

from skdp.accounting._budget import PrivacyBudget
from skdp.accounting._events import (
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    RandomizedResponseEvent,
    describe_release,
)
from skdp.accounting._ledger import BudgetTracker
from skdp.accounting._objective_perturbation import ObjectivePerturbationEvent
from skdp.accounting._tracking import (
    BudgetTrackingMixin,
    on_behalf_of,
    on_rows,
    record_spend,
    track_budget,
)
from skdp.accounting._transport import LedgerUnreachableError

__all__ = [
    "BudgetTracker",
    "BudgetTrackingMixin",
    "EpsilonDeltaEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "LedgerUnreachableError",
    "ObjectivePerturbationEvent",
    "PrivacyBudget",
    "PrivacyEvent",
    "RandomizedResponseEvent",
    "describe_release",
    "on_behalf_of",
    "on_rows",
    "record_spend",
    "track_budget",
]
