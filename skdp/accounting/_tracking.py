"""``track_budget`` and ``record_spend``: which ledgers a release is recorded in.

A release is recorded in the *active* ledgers of the code that makes it:

1. the ``track_budget`` blocks open in the current context (thread / task);
2. otherwise (a thread that opened no block: ``ThreadPoolExecutor``, joblib's
   threading backend, dask's threads) every block open in the process;
3. plus, in a process that received a pickled skdp estimator (loky, dask and
   ``multiprocessing`` workers), the blocks that were active where it was
   pickled, reached through their process's ledger server;
4. in a forked child, its parent's blocks (through the parent's server).
"""

import contextlib
import contextvars
import os
import sys
import threading

from skdp.accounting import _transport
from skdp.accounting._budget import PrivacyBudget
from skdp.accounting._events import describe_release
from skdp.accounting._ledger import ACCOUNTANTS, BudgetTracker
from skdp.exceptions import BudgetExceededError

__all__ = ["BudgetTrackingMixin", "record_spend", "track_budget"]

_context = contextvars.ContextVar("skdp_budget_trackers", default=())
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
    """Handles to every active ledger, for a pickled estimator to carry."""
    handles = []
    for ledger in _active_ledgers():
        if isinstance(ledger, BudgetTracker):
            address, authkey = _transport.server_address()
            ledger = _transport.RemoteLedger(ledger.id, tuple(address), authkey)
        handles.append(ledger)
    return tuple(handles)


def _adopt(handles):
    own = {ledger.id for ledger in _transport.open_ledgers()}
    with _inherited_lock:
        for handle in handles:
            if isinstance(handle, _transport.RemoteLedger) and handle.id not in own:
                _inherited.setdefault(handle.id, handle)


class BudgetTrackingMixin:
    """Lets a pickled skdp estimator carry the active ``track_budget`` ledgers.

    Put it left of ``BaseEstimator`` in every class whose methods call
    :func:`record_spend`. When the estimator is pickled inside a ``track_budget``
    block (joblib's loky backend, dask, ``multiprocessing``), the pickle carries
    handles to the block's ledgers; unpickling it in another process makes them
    active there, so that process's releases are checked against the caller's
    limit and recorded in the caller's tracker. Outside a block nothing is added
    and the pickle is what scikit-learn's alone would be.
    """

    def __getstate__(self):
        state = super().__getstate__()
        handles = _handles_for_pickle()
        if handles and isinstance(state, dict):
            state = {**state, _STATE_KEY: handles}
        return state

    def __setstate__(self, state):
        if isinstance(state, dict) and _STATE_KEY in state:
            state = dict(state)
            _adopt(state.pop(_STATE_KEY))
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
    Trackers nest: a spend is recorded in (and checked against) every active one.

    **Parallel work (n_jobs, joblib).** Spends are recorded wherever the release
    runs: ``GridSearchCV``, ``RandomizedSearchCV``, ``cross_validate`` and any
    joblib call with any ``n_jobs`` under the loky (default), threading and
    multiprocessing backends and dask's ``distributed`` on the same machine; plain
    threads (``ThreadPoolExecutor``); nested searches; a child forked inside the
    block; and any process that receives a skdp estimator pickled inside the block.
    The limit is checked atomically in the tracker's process before each release,
    including those made by workers. How: threads that opened no block of their
    own record in every block open in the process (so two unrelated blocks open
    in two threads at once both count a thread's spend: conservative); a skdp
    estimator pickled inside the block carries the address of a small ledger
    server (loopback interface, random key) that its process started, and workers
    record through it.

    **Not covered.** Estimators created in a spawned process from scratch (a
    ``multiprocessing`` or ``concurrent.futures.ProcessPoolExecutor`` worker that
    builds its own estimator rather than receiving one), other machines (a dask
    worker on another host raises ``LedgerUnreachableError`` and releases
    nothing), an estimator pickled before the block was opened, and spends made
    after the block ended. Whenever a process holds a handle to a block it cannot
    reach (a worker, a forked child), its release is refused with
    ``LedgerUnreachableError`` rather than made unrecorded.

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
    _transport.server_address()  # so that forked children can reach the ledger
    _transport.register(tracker)
    token = _context.set(_context.get() + (tracker,))
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


def record_spend(budget, source="skdp", *, mechanism=None):
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
    ledgers = _active_ledgers()
    if not ledgers:
        return budget
    events = describe_release(mechanism, budget)
    recorded = []
    try:
        for ledger in ledgers:
            token = ledger._try_record(budget, source, events)
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
