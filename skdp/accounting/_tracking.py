"""``track_budget`` and ``record_spend``: which ledgers a release is recorded in.

A release is recorded in the *active* ledgers of the code that makes it:

1. the ``track_budget`` blocks open in the current context (thread / task);
2. otherwise (a thread that opened no block: ``ThreadPoolExecutor``, joblib's
   threading backend, dask's threads) every block open in the process. A block
   opened in such a thread cannot know where the thread was started: it nests
   inside every block open in the process at that moment, as if opened there;
3. plus, in a process that descends from a process with open blocks and that
   received a skdp estimator pickled inside them (loky, dask ``LocalCluster``
   and ``multiprocessing`` workers), those blocks, reached through their
   process's ledger server; a process that does not descend from it (a model
   file loaded elsewhere) ignores what the pickle carries;
4. in a forked child, its parent's blocks (through the parent's server).
"""

import contextlib
import contextvars
import os
import sys
import threading
from dataclasses import dataclass

import numpy as np

from skdp.accounting import _transport
from skdp.accounting._budget import PrivacyBudget
from skdp.accounting._events import describe_release
from skdp.accounting._ledger import ACCOUNTANTS, BudgetTracker
from skdp.exceptions import BudgetExceededError

__all__ = [
    "BudgetTrackingMixin",
    "on_behalf_of",
    "on_rows",
    "record_spend",
    "track_budget",
]

_context = contextvars.ContextVar("skdp_budget_trackers", default=())
_rows_context = contextvars.ContextVar("skdp_budget_rows", default=None)
_owner_context = contextvars.ContextVar("skdp_budget_owner", default=None)
_inherited_lock = threading.Lock()
_inherited = {}  # ledger id -> RemoteLedger (from pickles or from a fork)
_STATE_KEY = "_skdp_budget_ledgers"


def _after_fork_in_child():
    global _inherited_lock
    _inherited_lock = threading.Lock()
    _inherited.update(_transport.after_fork_in_child())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _active_ledgers():
    """The ledgers a release made here is recorded in (see the module docstring)."""
    pid = os.getpid()
    ledgers = []
    for ledger in _context.get():
        if isinstance(ledger, BudgetTracker) and ledger._owner_pid != pid:
            # this context was copied by a fork: the parent's ledger, remotely
            ledger = _inherited.get(ledger.id, ledger)
            if isinstance(ledger, BudgetTracker):
                _warn_lost(ledger)
                continue
        ledgers.append(ledger)
    if not ledgers:
        ledgers = _transport.open_ledgers()
    seen = {ledger.id for ledger in ledgers}
    with _inherited_lock:
        ledgers += [h for i, h in _inherited.items() if i not in seen]
    return ledgers


def _warn_lost(ledger):
    from skdp.utils.privacy_warnings import warn_privacy_leak

    warn_privacy_leak(
        "This process was forked from one with an open track_budget block whose "
        "ledger it cannot reach: this release is not recorded there."
    )


def _handles_for_pickle():
    """Handles to every active ledger, for a pickled estimator to carry.

    They hold no secret: a ledger serves only processes descending from its own.
    """
    handles = []
    for ledger in _active_ledgers():
        if isinstance(ledger, BudgetTracker):
            ledger = _transport.RemoteLedger(ledger.id, *_transport.ensure_server())
        handles.append(ledger)
    return tuple(handles)


def _in_dask_worker():
    worker = sys.modules.get("distributed.worker")
    return worker is not None and bool(getattr(worker.Worker, "_instances", ()))


def _adopt(handles):
    """Make the handles of an unpickled estimator active, where they apply.

    In a process that descends from a handle's ledger (a worker of that
    process), the handle joins the active ledgers of the whole process until its
    block ends. Anywhere else it is dropped and changes nothing, except in a dask
    worker, which cannot tell a model file from a task sent from a block it
    cannot reach: there loading it raises ``LedgerUnreachableError``.
    """
    own = {ledger.id for ledger in _transport.open_ledgers()}
    for handle in handles:
        if not isinstance(handle, _transport.RemoteLedger) or handle.id in own:
            continue
        with _inherited_lock:
            if handle.id in _inherited:  # adopted with an earlier task
                continue
        if handle.binds_here():
            with _inherited_lock:
                _inherited.setdefault(handle.id, handle)
        elif _in_dask_worker():
            raise _transport.LedgerUnreachableError(
                "This skdp estimator was pickled inside a track_budget block of a "
                f"process this dask worker does not descend from (pid "
                f"{handle.owner.pid}, possibly on another machine): its spends "
                "could not be recorded there, so it is not loaded. Run the dask "
                "workers as a LocalCluster of that process, or pickle the "
                "estimator outside the block."
            )


class BudgetTrackingMixin:
    """Lets a pickled skdp estimator carry the active ``track_budget`` ledgers.

    Put it left of ``BaseEstimator`` in every class whose methods call
    :func:`record_spend`. When the estimator is pickled inside a ``track_budget``
    block (joblib's loky backend, dask, ``multiprocessing``), the pickle also
    holds, under the key ``"_skdp_budget_ledgers"``, one plain tuple per active
    block: ``("skdp-ledger-1", block id, socket path, machine hash, pid, start
    time)``, naming the block and the process that holds it; no key or other
    secret. Unpickled in a process that descends from that one (its workers), the
    handles become active there, so that process's releases are checked against
    the caller's limit and recorded in the caller's tracker; anywhere else they
    are dropped (see :func:`track_budget`). Outside a block nothing is added and
    the pickle is what scikit-learn's alone would be.
    """

    def __getstate__(self):
        state = super().__getstate__()
        handles = _handles_for_pickle()
        if handles and isinstance(state, dict):
            state = {**state, _STATE_KEY: tuple(h._to_state() for h in handles)}
        return state

    def __setstate__(self, state):
        if isinstance(state, dict) and _STATE_KEY in state:
            state = dict(state)
            carried = state.pop(_STATE_KEY)
            _adopt(
                handle
                for handle in map(_transport.RemoteLedger._from_state, carried)
                if handle is not None
            )
        super().__setstate__(state)


@contextlib.contextmanager
def track_budget(epsilon=None, delta=0.0, *, accountant="basic", strict=True):
    """Record every privacy spend made by skdp inside the block, wherever it runs.

    Parameters
    ----------
    epsilon : float or None, default=None
        Optional limit on the total epsilon. A release that would take the total
        past ``(epsilon, delta)`` raises :class:`~skdp.exceptions.BudgetExceededError`
        *before* its result is returned, so the over-budget output never reaches
        the caller.
    delta : float, default=0.0
        The limit's delta, and the target delta of ``accountant="pld"`` (which
        needs it in (0, 1)).
    accountant : {"basic", "pld"}, default="basic"
        ``"basic"``: sequential composition (epsilons and deltas add).
        ``"pld"``: privacy loss distributions with Google's ``dp-accounting``
        (extra ``skdp[accounting]``), composing each release as what it is
        (Gaussian, randomized response, or its pure epsilon); the total is
        ``(epsilon_pld(delta), delta)``, or the basic total where that is no
        larger, so it is never looser than basic composition.
    strict : bool, default=True
        A refused release closes the tracker: every later release in the block is
        refused too (so a search's refit fails and the search raises). And a
        refusal made inside a scikit-learn model-selection routine
        (``GridSearchCV``, ``RandomizedSearchCV``, ``cross_validate``,
        ``cross_val_score``...), which catches a failed fit into an
        ``error_score`` of NaN, makes the block raise ``BudgetExceededError`` when
        it ends, so NaN scores never pass for a result. ``strict=False`` refuses
        only the releases that would exceed the limit.

    Yields
    ------
    BudgetTracker

    Notes
    -----
    **What is one release.** Each ``fit`` of a DP estimator (each ``partial_fit``,
    each ``transform``/``fit_resample`` of a noisy transformer) is one spend, so a
    grid search over 5 values with 3 folds records 15 spends plus the refit.
    Trackers nest: a spend is recorded in (and checked against) every active one,
    including the blocks open where a thread's own block was opened (see below).

    **Disjoint rows.** Releases compose sequentially unless they say which rows
    they read: inside ``with on_rows(ids):`` (or with ``record_spend(...,
    rows=...)``), releases on disjoint rows compose by their maximum (parallel
    composition); see :func:`on_rows`.

    **Parallel work (n_jobs, joblib).** Spends are recorded wherever the release
    runs: ``GridSearchCV``, ``RandomizedSearchCV``, ``cross_validate`` and any
    joblib call with any ``n_jobs`` under the loky (default), threading and
    multiprocessing backends and a dask ``LocalCluster`` started by this
    process; plain threads (``ThreadPoolExecutor``); nested searches; a child
    forked inside the block; and any process started (directly or not) by this
    one that receives a skdp estimator pickled inside the block. The limit is
    checked atomically in the tracker's process before each release, including
    those made by workers. How: a thread with no block of its own records in
    every block open in the process, and a block it opens nests inside them (so
    two unrelated blocks open in two threads at once may both count a thread's
    spend: conservative); a skdp estimator pickled inside the block carries a
    handle (block id, socket path, owner pid) to a small ledger server of this
    process, which serves only processes the kernel reports as its descendants.

    **What a pickle made inside the block contains**, besides what
    scikit-learn's pickle holds: that handle, and no secret. Loaded in a process
    that does not descend from this one (another machine, container or session:
    a saved model), it is dropped, and the model fits, transforms and releases
    there as any other.

    **Not covered.** Estimators created in a spawned process from scratch (a
    ``multiprocessing`` or ``concurrent.futures.ProcessPoolExecutor`` worker that
    builds its own estimator rather than receiving one), processes that do not
    descend from this one (another machine, a dask worker started separately:
    a dask worker refuses to load such an estimator with
    ``LedgerUnreachableError``; Ray or Spark workers on other machines release
    unrecorded), an estimator pickled before the block was opened, and spends
    made after the block ended. A worker that holds a handle to its ancestor's
    block but cannot reach it refuses the release with
    ``LedgerUnreachableError`` rather than make it unrecorded; so does one whose
    ancestor process has ended (killed inside the block, say): it cannot tell
    that from a block that ended, and refuses every later release. Cross-process
    recording needs Linux (the kernel's peer credentials); elsewhere such a
    worker refuses too.

    Examples
    --------
    >>> from skdp.accounting import track_budget, record_spend, PrivacyBudget
    >>> with track_budget(epsilon=1.0) as acc:
    ...     _ = record_spend(PrivacyBudget(0.25), "demo")
    >>> acc.total
    PrivacyBudget(epsilon=0.25, delta=0.0)
    """
    if accountant not in ACCOUNTANTS:
        raise ValueError(
            f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}."
        )
    limit = None if epsilon is None else PrivacyBudget(epsilon, delta)
    if accountant == "pld":
        PrivacyBudget(1.0, delta)  # type and range check of delta
        if not 0 < delta < 1:
            raise ValueError(f'accountant="pld" needs delta in (0, 1), got {delta!r}.')
        from skdp.accounting._pld import check_dp_accounting

        check_dp_accounting()
    tracker = BudgetTracker(
        limit=limit,
        accountant=accountant,
        delta=delta if accountant == "pld" else 0.0,
        strict=strict,
    )
    _transport.ensure_server()  # so that forked children can reach the ledger
    # a thread that has no block of its own cannot know where it was started:
    # its block nests inside every block open in the process
    outer = _context.get() or tuple(_transport.open_ledgers())
    _transport.register(tracker)
    token = _context.set(outer + (tracker,))
    try:
        yield tracker
    except Exception as exc:
        if tracker.refusals and not isinstance(exc, BudgetExceededError):
            raise BudgetExceededError(
                f"A release in this track_budget block was refused "
                f"({tracker.refusals[0]}), then the block failed: see the cause."
            ) from exc
        raise
    else:
        if tracker.swallowed and tracker.strict:
            raise BudgetExceededError(
                f"{len(tracker.swallowed)} release(s) in this track_budget block were "
                "refused inside a scikit-learn model-selection routine, which turned "
                "the refusal into an error_score (NaN): its results are incomplete. "
                f"First refusal: {tracker.swallowed[0]}"
            )
    finally:
        _context.reset(token)
        _transport.unregister(tracker)
        with tracker._lock:
            tracker._closed = True


@dataclass(frozen=True)
class _Declared:
    """The rows declared by the ``on_rows`` blocks around a release.

    ``ids``: the innermost block's ids, in its order (a release's positions map
    through them); ``allowed``: the ids every enclosing block declared (sorted,
    unique: nested blocks intersect); ``n_rows``: the data set's number of rows
    where a boolean mask told it, else None; ``min_rows``: a lower bound on it
    (one more than the largest id declared).
    """

    ids: np.ndarray
    allowed: np.ndarray
    n_rows: int | None
    min_rows: int


def _row_ids(rows, name):
    """``(ids, mask_length)``: ``rows`` as 1-D int64 ids >= 0, and the length of
    the boolean mask it was (None for ids).
    """
    ids = np.asarray(rows)
    if ids.ndim != 1:
        raise ValueError(f"{name} must be 1-D (row ids or a mask), got {ids.ndim}-D.")
    if ids.dtype == bool:
        return np.flatnonzero(ids).astype(np.int64), ids.size
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64), None
    if not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(
            f"{name} must hold integer row ids or be a boolean mask, got dtype "
            f"{ids.dtype}."
        )
    if ids.dtype.kind == "u" and ids.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} must hold row ids below 2**63, got {ids.max()}.")
    if ids.min() < 0:
        raise ValueError(
            f"{name} must hold row ids >= 0 (or be a boolean mask), got "
            f"{ids.min()}: a negative id would name a row under a second id (-1 "
            "and n - 1 are the same row), so releases on one record would "
            "compose as if on two."
        )
    return ids.astype(np.int64), None


def _check_mask_length(name, length, n_rows, what):
    if n_rows is not None and length != n_rows:
        raise ValueError(
            f"{name} is a boolean mask of length {length}, but {what} has {n_rows} "
            "rows: a mask must have one entry per row."
        )


@contextlib.contextmanager
def on_rows(rows):
    """Declare that the releases made inside read only the given rows.

    Releases on disjoint rows compose by their maximum (parallel composition),
    in every active tracker and with both accountants: two randomized-response
    releases at epsilon = 1 on the two halves of a data set cost epsilon = 1 in
    total, not 2. Releases whose rows overlap, or that declare no rows, still add.

    Parameters
    ----------
    rows : array-like of int or of bool
        The rows' ids: their positions in the data set the block protects (the
        same numbering for every release of the block, so never negative), or a
        boolean mask over it (one entry per row: where skdp knows the number of
        rows, from a mask of an enclosing block, a mask of another length is
        refused). A release made inside that states its own ``rows`` (positions
        in the data it was given, or a mask with one entry per row the block
        declares) reads ``rows[those]``. Nested blocks intersect: the releases
        inside read only rows that every enclosing block declared (ids in the
        same numbering, not positions in the outer block's rows); a nested
        block that shares no row with the one around it is refused.

    Notes
    -----
    Replacing one record of the data set changes the data of one set of rows
    only: the releases on the other rows do not read that record (they may use
    the earlier releases' outputs, e.g. a prior fitted on labels released
    before: that is post-processing), so the pair of output distributions differs
    only through the releases that read that record, and the composition is the
    worst, not the sum, over disjoint rows. This needs the rows to be chosen
    without looking at the protected data (by position, at random), and each
    record to keep one id for the whole block: declaring one person's record
    under two ids undercounts. Releases made in other threads or in worker
    processes do not see the declaration (context variables do not follow work
    there): they count on all rows, which is conservative.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.accounting import PrivacyBudget, on_rows, record_spend, track_budget
    >>> halves = np.array_split(np.arange(100), 2)
    >>> with track_budget(epsilon=1.0) as acc:
    ...     for half in halves:
    ...         with on_rows(half):
    ...             _ = record_spend(PrivacyBudget(1.0), "stage")
    >>> acc.total
    PrivacyBudget(epsilon=1.0, delta=0.0)
    """
    outer = _rows_context.get()
    ids, mask_length = _row_ids(rows, "rows")
    unique = np.unique(ids)
    if outer is None:
        n_rows, min_rows, allowed = mask_length, 0, unique
    else:
        n_rows, min_rows = outer.n_rows, outer.min_rows
        if mask_length is not None:
            if n_rows is None and mask_length < min_rows:
                raise ValueError(
                    f"rows is a boolean mask of length {mask_length}, but the "
                    f"enclosing on_rows declared row id {min_rows - 1}: a mask "
                    "must have one entry per row of the data set."
                )
            _check_mask_length("rows", mask_length, n_rows, "the data set")
            n_rows = mask_length
        elif n_rows is not None and unique.size and unique[-1] >= n_rows:
            raise ValueError(
                f"rows must be ids of the {n_rows} rows of the data set (the "
                f"length of an enclosing on_rows mask), got {unique[-1]}."
            )
        allowed = np.intersect1d(outer.allowed, unique, assume_unique=True)
        if unique.size and not allowed.size:
            raise ValueError(
                "rows of this nested on_rows share no row with the on_rows block "
                "around it: nested blocks intersect (both must hold), and ids "
                "number the rows of the whole data set, not positions in the outer "
                "block's rows."
            )
    if unique.size:
        min_rows = max(min_rows, int(unique[-1]) + 1)
    token = _rows_context.set(_Declared(ids, allowed, n_rows, min_rows))
    try:
        yield
    finally:
        _rows_context.reset(token)


def _release_rows(rows):
    """The row ids a release reads (None: all rows), from its own and on_rows'."""
    declared = _rows_context.get()
    if rows is None:
        return None if declared is None else declared.allowed
    local, mask_length = _row_ids(rows, "rows")
    if declared is None:
        return np.unique(local)
    size = declared.ids.size
    if mask_length is not None:
        _check_mask_length("rows", mask_length, size, "the data declared by on_rows")
    if local.size and local.max() >= size:
        raise ValueError(
            f"rows must be positions in the {size} rows declared by "
            f"on_rows, got values in [{local.min()}, {local.max()}]."
        )
    ids = np.unique(declared.ids[local])
    inside = np.intersect1d(ids, declared.allowed, assume_unique=True)
    if ids.size and not inside.size:
        raise ValueError(
            "rows name only rows outside an enclosing on_rows block (nested "
            "blocks intersect): the release would read no declared row."
        )
    return inside


@contextlib.contextmanager
def on_behalf_of(owner):
    """Label the spends recorded inside as made by ``owner``.

    A meta-estimator that fits an inner estimator (one it chose, or one the user
    handed it) wraps the inner fit in this block, so that a tracker's
    ``spends`` name the estimator the user fitted, with the inner release in
    parentheses: ``"PrivateLogisticRegression (OPLogisticRegression)"``, not
    ``"OPLogisticRegression"``. Blocks nest: the outermost owner names the
    spend (the user fitted that one). A spend whose source already starts with
    the owner's name (``"PrivateBoundsEstimator.bounds"``) keeps it. Releases
    made in other threads or worker processes do not see the block (context
    variables do not follow work there): they keep their own label.

    Parameters
    ----------
    owner : str or estimator
        A name, or an estimator (its class name is used).

    Examples
    --------
    >>> from skdp.accounting import (
    ...     PrivacyBudget, on_behalf_of, record_spend, track_budget)
    >>> with track_budget() as acc:
    ...     with on_behalf_of("MyWrapper"):
    ...         _ = record_spend(PrivacyBudget(1.0), "InnerEstimator")
    >>> acc.spends
    [('MyWrapper (InnerEstimator)', PrivacyBudget(epsilon=1.0, delta=0.0))]
    """
    name = owner if isinstance(owner, str) else type(owner).__name__
    if _owner_context.get() is not None:  # an outer owner names the spends
        yield
        return
    token = _owner_context.set(name)
    try:
        yield
    finally:
        _owner_context.reset(token)


def _labelled(source):
    """``source`` as the estimator the user fitted names it (see on_behalf_of)."""
    owner = _owner_context.get()
    if owner is None or source == owner or source.startswith(owner + "."):
        return source
    return f"{owner} ({source})"


def record_spend(budget, source="skdp", *, mechanism=None, rows=None):
    """Record ``budget`` in every active tracker; raise if one would be exceeded.

    Called by every DP estimator once per release, before it stores or returns
    the released result. All trackers accept the spend or none keeps it.

    Parameters
    ----------
    budget : PrivacyBudget
        The release's own guarantee.
    source : str, default="skdp"
        Who releases (shown in ``tracker.spends`` and in error messages).
    mechanism : None, str, PrivacyEvent, mechanism or list of these, default=None
        What the release is, for ``accountant="pld"``: ``"gaussian"`` for (a
        composition of) Gaussian mechanisms, ``"laplace"`` or None for a
        release known by its pure epsilon, a :mod:`skdp.mechanisms` mechanism
        (it describes itself), a :class:`PrivacyEvent`, or a list (composition).
        See :func:`skdp.accounting.describe_release`.
    rows : None or array-like of int or bool, default=None
        The rows the release read, as positions (>= 0) in the data it was given
        (or a boolean mask over them); inside :func:`on_rows` they are mapped
        through the declared ids (a mask must then have one entry per declared
        row). None: every row (or the rows declared by :func:`on_rows`).
        Releases on disjoint rows compose by their maximum.

    Returns
    -------
    budget : PrivacyBudget
        The argument, so that ``self.privacy_spent_ = record_spend(...)`` reads well.

    Raises
    ------
    BudgetExceededError
        If an active tracker's limit would be exceeded (nothing is recorded), or
        its tracker already refused a release (``strict=True``).

    Examples
    --------
    >>> from skdp.accounting import PrivacyBudget, record_spend, track_budget
    >>> with track_budget(accountant="pld", delta=1e-5) as acc:
    ...     for _ in range(10):
    ...         _ = record_spend(PrivacyBudget(1.0, 1e-5), "fit", mechanism="gaussian")
    >>> acc.basic_total.epsilon, round(acc.total.epsilon, 2)
    (10.0, 3.62)
    """
    if not isinstance(budget, PrivacyBudget):
        raise TypeError(f"budget must be a PrivacyBudget, got {type(budget).__name__}.")
    source = _labelled(str(source))
    release_rows = _release_rows(rows)
    ledgers = _active_ledgers()
    if not ledgers:
        return budget
    events = describe_release(mechanism, budget)
    recorded = []
    try:
        for ledger in ledgers:
            token = ledger._try_record(budget, source, events, release_rows)
            if token is not None:
                recorded.append((ledger, token))
            elif isinstance(ledger, _transport.RemoteLedger):
                with _inherited_lock:  # that block has ended
                    _inherited.pop(ledger.id, None)
    except BaseException as exc:
        for ledger, token in recorded:
            with contextlib.suppress(BudgetExceededError):
                ledger._unrecord(token)
        if isinstance(exc, BudgetExceededError) and _under_model_selection():
            for ledger in ledgers:
                with contextlib.suppress(BudgetExceededError):
                    ledger._mark_swallowed(str(exc))
        raise
    return budget


def _under_model_selection():
    """Whether a scikit-learn model-selection routine is on this thread's stack.

    ``_fit_and_score`` (behind every search and ``cross_validate``) catches any
    exception from ``fit`` and records ``error_score`` instead, so a refusal made
    under it would otherwise pass silently.
    """
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("sklearn.model_selection"):
            return True
        frame = frame.f_back
    return False
