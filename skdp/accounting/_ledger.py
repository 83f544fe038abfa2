"""The ledger of one ``track_budget`` block: spends, events, limit, refusals.

Parallel composition: a release may state the rows (records) it read. The
ledger keeps the rows in *cells*, sets of rows that every recorded release either
read entirely or not at all, plus one cell for the rows no release named (every
release that states no rows reads all rows, named or not). A cell's releases
compose sequentially; cells compose by their maximum, since replacing one record
changes the data of exactly one cell and the releases on other cells do not read
it (they may depend on its outputs: that is post-processing).
"""

import math
import os
import secrets
import threading
import warnings

import numpy as np

from skdp.accounting._budget import PrivacyBudget
from skdp.accounting._events import GaussianEvent
from skdp.exceptions import BudgetExceededError

__all__ = ["BudgetTracker"]

ACCOUNTANTS = ("basic", "pld")
# Above this many cells, a release that would split cells is counted on every
# row instead (conservative), so that a ledger's cost stays bounded.
MAX_CELLS = 1024


class _Cell:
    """Rows that every recorded release read entirely or not at all.

    ``rows`` is a sorted array of row ids, or None for the rows no release named.
    ``basic`` is the sequential composition of the cell's releases; ``pld`` their
    PLD state (``accountant="pld"``), with ``gaussian`` and ``rest`` the
    closed-form fallback: the releases made only of Gaussian events (sum of
    noise_multiplier^-2) and the others' basic composition.
    """

    __slots__ = ("rows", "basic", "pld", "gaussian", "rest", "_epsilon", "_delta")

    def __init__(self, rows, basic, pld=None, gaussian=0.0, rest=None):
        self.rows = rows
        self.basic = basic
        self.pld = pld
        self.gaussian = gaussian
        self.rest = PrivacyBudget(0.0) if rest is None else rest
        self._epsilon = {}  # delta -> (PLD, fallback) epsilon; a cell never changes
        self._delta = {}  # epsilon -> PLD delta

    def with_rows(self, rows):
        return _Cell(rows, self.basic, self.pld, self.gaussian, self.rest)

    def add(self, budget, events):
        pld, gaussian, rest = self.pld, self.gaussian, self.rest
        if pld is not None:
            pld = pld.add_events(events)
            if events and all(isinstance(event, GaussianEvent) for event in events):
                gaussian += sum(event.noise_multiplier**-2 for event in events)
            else:
                rest = rest + budget
        return _Cell(self.rows, self.basic + budget, pld, gaussian, rest)

    def pld_delta(self, epsilon):
        if epsilon not in self._delta:
            self._delta[epsilon] = self.pld.delta(epsilon)
        return self._delta[epsilon]

    def pld_epsilon(self, delta):
        """(PLD epsilon, closed-form fallback epsilon) at ``delta``."""
        if delta not in self._epsilon:
            from skdp.accounting._pld import gaussian_epsilon

            pld = self.pld.epsilon(delta)
            fallback = math.inf
            if self.rest.delta < delta:
                leftover = delta - self.rest.delta
                fallback = self.rest.epsilon + (
                    gaussian_epsilon(self.gaussian**-0.5, leftover)
                    if self.gaussian > 0
                    else 0.0
                )
            self._epsilon[delta] = (pld, fallback)
        return self._epsilon[delta]


def _split(cells, budget, events, rows):
    """The cells after one more release that read ``rows`` (None: all rows)."""
    if rows is None:
        return [cell.add(budget, events) for cell in cells]
    out, remaining, unnamed = [], rows, None
    for cell in cells:
        if cell.rows is None:
            unnamed = cell
            continue
        inside = np.intersect1d(cell.rows, rows, assume_unique=True)
        if inside.size == 0:
            out.append(cell)
            continue
        remaining = np.setdiff1d(remaining, inside, assume_unique=True)
        if inside.size < cell.rows.size:
            outside = np.setdiff1d(cell.rows, inside, assume_unique=True)
            out.append(cell.with_rows(outside))
        out.append(cell.with_rows(inside).add(budget, events))
    out.append(unnamed)
    if remaining.size:
        out.append(unnamed.with_rows(remaining).add(budget, events))
    if len(out) > MAX_CELLS:
        return _split(cells, budget, events, None)
    return out


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
    rows : list of ndarray or None
        The rows each release stated it read (None: all rows).
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
        self._entries = {}  # token -> (source, budget, events, rows); keeps order
        self._lock = threading.RLock()
        self._owner_pid = os.getpid()
        self._closed = False
        self._warned = False
        self._cells = self._replay([])

    def __repr__(self):
        return (
            f"BudgetTracker(accountant={self.accountant!r}, limit={self.limit}, "
            f"n_spends={len(self._entries)}, total={self.total})"
        )

    @property
    def spends(self):
        with self._lock:
            return [(entry[0], entry[1]) for entry in self._entries.values()]

    @property
    def events(self):
        with self._lock:
            return [entry[2] for entry in self._entries.values()]

    @property
    def rows(self):
        with self._lock:
            return [entry[3] for entry in self._entries.values()]

    @property
    def basic_total(self):
        """Basic composition of every recorded spend.

        Sequential (epsilons and deltas add) for releases on common rows,
        parallel (the maximum) across releases on disjoint rows.
        """
        with self._lock:
            return self._combine([cell.basic for cell in self._cells])

    @property
    def total(self):
        """The tracker's total: :attr:`basic_total`, or the tighter PLD total.

        With ``accountant="pld"``, per cell of rows: its basic composition if that
        is no larger in both coordinates than ``(epsilon_pld(delta), delta)``,
        else ``PrivacyBudget(epsilon_pld(delta), delta)``; never looser than
        basic composition at the target delta. Cells combine by their maximum.
        """
        with self._lock:
            return self._total(self._cells)

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
    def _combine(budgets):
        return PrivacyBudget(
            max(budget.epsilon for budget in budgets),
            max(budget.delta for budget in budgets),
        )

    def _replay(self, entries):
        """Cells of ``entries`` recorded in order, from none."""
        pld = None
        if self.accountant == "pld":
            from skdp.accounting._pld import TAIL_MASS, UPPER_MARGIN, PLDState

            capped = self.limit is not None and not math.isinf(self.limit.epsilon)
            upper = self.limit.epsilon + UPPER_MARGIN if capped else None
            # trimmed tails go to +inf: keep them far below the target delta
            tail = min(TAIL_MASS, 1e-6 * self.delta)
            pld = PLDState(upper_loss=upper, tail_mass=tail)
        cells = [_Cell(None, PrivacyBudget(0.0), pld)]
        for _, budget, events, rows in entries:
            cells = _split(cells, budget, events, rows)
        return cells

    def _total(self, cells):
        if self.accountant == "basic":
            return self._combine([cell.basic for cell in cells])
        return self._combine([self._cell_total(cell) for cell in cells])

    def _within_limit(self, cells):
        """Whether ``self._total(cells) <= self.limit``, computed cheaply.

        A cell's total is within the limit iff its basic composition is, or its
        PLD epsilon at the target delta is at most the cap's epsilon, that is
        ``delta_pld(cap) <= delta``: this reads only the losses above the cap.
        Within 1e-9 of the boundary the epsilon itself decides (so the reported
        total never exceeds the cap by rounding).
        """
        for cell in cells:
            if cell.basic <= self.limit:
                continue
            if (
                self.accountant == "basic"
                or math.isinf(self.limit.epsilon)
                or self.delta > self.limit.delta  # no PLD total can fit then
            ):
                return False
            if cell.pld_delta(self.limit.epsilon) > self.delta * (1 - 1e-9):
                # near or past the cap (or an absurd delta): the total decides
                if not self._cell_total(cell) <= self.limit:
                    return False
        return True

    def _cell_total(self, cell):
        basic = cell.basic
        if math.isinf(basic.epsilon):
            return basic
        pld, fallback = cell.pld_epsilon(self.delta)
        if math.isinf(pld) and not math.isinf(fallback) and not self._warned:
            self._warned = True
            warnings.warn(
                f"The PLD accountant cannot resolve delta={self.delta:g} (its "
                "discretized distributions carry more numerical tail mass than "
                "that): this tracker's total composes the Gaussian releases "
                "exactly and the others by adding their (epsilon, delta).",
                RuntimeWarning,
                stacklevel=2,
            )
        eps = min(pld, fallback)
        if basic.delta <= self.delta and basic.epsilon <= eps:
            return basic
        return PrivacyBudget(eps, self.delta)

    def _try_record(self, budget, source, events, rows=None):
        """Check against the limit and record atomically; return a random token."""
        with self._lock:
            if self._closed:
                return None
            if self.refusals and self.strict:
                raise BudgetExceededError(
                    f"{source} refused: this track_budget block already refused a "
                    f"release ({self.refusals[0]}) and releases nothing more "
                    "(strict=True)."
                )
            events = tuple(events)
            cells = _split(self._cells, budget, events, rows)
            if self.limit is not None and not self._within_limit(cells):
                message = (
                    f"{source} would spend {budget}, taking the total to "
                    f"{self._total(cells)}, past the limit {self.limit}"
                )
                self.refusals.append(message)
                raise BudgetExceededError(message + ".")
            token = secrets.token_hex(16)
            self._entries[token] = (source, budget, events, rows)
            self._cells = cells
            return token

    def _mark_swallowed(self, message):
        with self._lock:
            self.swallowed.append(message)

    def _unrecord(self, token):
        """Take back a spend whose release another tracker refused.

        Only the recorder holds the (random) token.
        """
        with self._lock:
            if self._entries.pop(token, None) is not None:
                self._cells = self._replay(list(self._entries.values()))
