"""The ledger of one ``track_budget`` block: spends, events, limit, refusals."""

import itertools
import math
import os
import secrets
import threading

from skdp.accounting._budget import PrivacyBudget
from skdp.exceptions import BudgetExceededError

__all__ = ["BudgetTracker"]

ACCOUNTANTS = ("basic", "pld")


class BudgetTracker:
    """Spends recorded inside one :func:`~skdp.accounting.track_budget` block.

    Made by :func:`~skdp.accounting.track_budget`; thread-safe (releases from
    threads and worker processes are checked and recorded under one lock).

    Attributes
    ----------
    limit : PrivacyBudget or None
        The cap; a release that would take :attr:`total` past it is refused.
    accountant : {"basic", "pld"}
    delta : float
        Target delta of the ``"pld"`` accountant (0 for ``"basic"``).
    strict : bool
        Whether a refusal closes the tracker (see :func:`track_budget`).
    spends : list of (source, PrivacyBudget)
        Every recorded release, in the order they were recorded.
    events : list of tuple of PrivacyEvent
        What each release was (same order as ``spends``).
    refusals : list of str
        Messages of the refused releases.
    swallowed : list of str
        Messages of the refusals made inside a scikit-learn model-selection
        routine, which catches them (``error_score``): the block raises at its end.
    """

    def __init__(self, limit=None, accountant="basic", delta=0.0, strict=True):
        if accountant not in ACCOUNTANTS:
            raise ValueError(
                f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}."
            )
        if limit is not None and not isinstance(limit, PrivacyBudget):
            raise TypeError(f"limit must be a PrivacyBudget or None, got {limit!r}.")
        self.limit = limit
        self.accountant = accountant
        self.delta = float(delta)
        self.strict = bool(strict)
        self.refusals = []
        self.swallowed = []
        self.id = secrets.token_hex(16)
        self._entries = {}  # token -> (source, budget, events); dicts keep order
        self._tokens = itertools.count()
        self._lock = threading.RLock()
        self._owner_pid = os.getpid()
        self._closed = False
        self._cached = None  # (n_entries version, total)
        self._version = 0

    def __repr__(self):
        return (
            f"BudgetTracker(accountant={self.accountant!r}, limit={self.limit}, "
            f"n_spends={len(self._entries)}, total={self.total})"
        )

    @property
    def spends(self):
        with self._lock:
            return [(source, budget) for source, budget, _ in self._entries.values()]

    @property
    def events(self):
        with self._lock:
            return [events for _, _, events in self._entries.values()]

    @property
    def basic_total(self):
        """Sequential composition of every recorded spend (epsilons, deltas add)."""
        with self._lock:
            return self._basic(self._entries.values())

    @property
    def total(self):
        """The tracker's total: :attr:`basic_total`, or the tighter PLD total.

        With ``accountant="pld"``: ``basic_total`` if it is no larger in both
        coordinates than ``(epsilon_pld(delta), delta)``, else
        ``PrivacyBudget(epsilon_pld(delta), delta)``; never looser than basic
        composition at the target delta.
        """
        with self._lock:
            if self._cached is None or self._cached[0] != self._version:
                self._cached = (self._version, self._total(self._entries.values()))
            return self._cached[1]

    @property
    def remaining(self):
        """What is left of the limit (None without a limit)."""
        if self.limit is None:
            return None
        total = self.total
        return PrivacyBudget(
            max(self.limit.epsilon - total.epsilon, 0.0),
            max(self.limit.delta - total.delta, 0.0),
        )

    # ---------------------------------------------------------------- internals
    @staticmethod
    def _basic(entries):
        return sum((budget for _, budget, _ in entries), PrivacyBudget(0.0))

    def _total(self, entries):
        entries = list(entries)
        basic = self._basic(entries)
        if self.accountant == "basic" or not entries or math.isinf(basic.epsilon):
            return basic
        from skdp.accounting._pld import pld_epsilon

        eps = pld_epsilon((e for _, _, events in entries for e in events), self.delta)
        if basic.delta <= self.delta and basic.epsilon <= eps:
            return basic
        return PrivacyBudget(eps, self.delta)

    def _try_record(self, budget, source, events):
        """Check against the limit and record atomically; return a token."""
        with self._lock:
            if self._closed:
                return None
            if self.refusals and self.strict:
                raise BudgetExceededError(
                    f"{source} refused: this track_budget block already refused a "
                    f"release ({self.refusals[0]}) and releases nothing more "
                    "(strict=True)."
                )
            entry = (source, budget, tuple(events))
            if self.limit is not None:
                new_total = self._total([*self._entries.values(), entry])
                if not new_total <= self.limit:
                    message = (
                        f"{source} would spend {budget}, taking the total to "
                        f"{new_total}, past the limit {self.limit}"
                    )
                    self.refusals.append(message)
                    raise BudgetExceededError(message + ".")
            token = next(self._tokens)
            self._entries[token] = entry
            self._version += 1
            return token

    def _mark_swallowed(self, message):
        with self._lock:
            self.swallowed.append(message)

    def _unrecord(self, token):
        """Take back a spend whose release another tracker refused."""
        with self._lock:
            if self._entries.pop(token, None) is not None:
                self._version += 1
