"""A small local server through which other processes record spends in a ledger.

Each process that opens a ``track_budget`` block starts (once) a listener on the
loopback interface, authenticated with a random key (``multiprocessing.connection``
does an HMAC challenge with it). A :class:`RemoteLedger` handle (address, key,
ledger id) travels inside the pickled estimator to a worker process, which sends
``record`` requests to it. Requests and replies are JSON: the ledger never
unpickles anything a worker sends.
"""

import json
import os
import secrets
import socket
import threading
from dataclasses import dataclass, field
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Listener

from skdp.accounting._budget import PrivacyBudget
from skdp.accounting._events import events_from_wire
from skdp.exceptions import BudgetExceededError

__all__ = ["LedgerUnreachableError", "RemoteLedger", "ensure_server"]

_state_lock = threading.Lock()
_server = None  # (address, authkey) of this process's listener
_ledgers = {}  # ledger id -> BudgetTracker open in this process
_connections = {}  # (address, pid) -> (connection, lock)


class LedgerUnreachableError(BudgetExceededError):
    """A release was refused because its tracker could not be reached.

    Raised in a worker process that holds a handle to a ``track_budget`` block of
    another process (it came with a pickled estimator) but cannot connect to it,
    e.g. a dask worker on another machine: the spend could not be recorded, so
    the release does not happen.
    """


def register(ledger):
    with _state_lock:
        _ledgers[ledger.id] = ledger


def unregister(ledger):
    with _state_lock:
        _ledgers.pop(ledger.id, None)


def open_ledgers():
    with _state_lock:
        return list(_ledgers.values())


def server_address():
    """``(address, authkey)`` of this process's listener (started if needed)."""
    global _server
    with _state_lock:
        if _server is None:
            authkey = secrets.token_bytes(32)
            listener = Listener(("127.0.0.1", 0), authkey=authkey)
            thread = threading.Thread(
                target=_accept_loop,
                args=(listener,),
                name="skdp-budget-ledger",
                daemon=True,
            )
            thread.start()
            _server = (listener.address, authkey)
        return _server


ensure_server = server_address


def _accept_loop(listener):
    while True:
        try:
            conn = listener.accept()
        except (OSError, AuthenticationError):  # a failed handshake: ignore the peer
            continue
        threading.Thread(
            target=_serve, args=(conn,), name="skdp-budget-ledger-conn", daemon=True
        ).start()


def _serve(conn):
    with conn:
        while True:
            try:
                request = json.loads(conn.recv_bytes())
            except (EOFError, OSError):
                return
            try:
                reply = _handle(request)
            except Exception as exc:  # a malformed request: answer, keep serving
                reply = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
            conn.send_bytes(json.dumps(reply).encode())


def _handle(request):
    with _state_lock:
        ledger = _ledgers.get(request["ledger"])
    if ledger is None:
        return {"status": "closed"}
    if request["op"] == "unrecord":
        ledger._unrecord(request["token"])
        return {"status": "ok", "token": None}
    if request["op"] == "swallowed":
        ledger._mark_swallowed(request["message"])
        return {"status": "ok", "token": None}
    budget = PrivacyBudget(*request["budget"])
    events = events_from_wire(request["events"])
    try:
        token = ledger._try_record(budget, request["source"], events)
    except BudgetExceededError as exc:
        return {"status": "refused", "message": str(exc)}
    if token is None:
        return {"status": "closed"}
    return {"status": "ok", "token": token}


def after_fork_in_child():
    """A forked child owns no listener and no open ledger: its parent does."""
    global _state_lock, _server, _ledgers, _connections
    parent_server, parent_ledgers = _server, _ledgers
    _state_lock = threading.Lock()
    _server, _ledgers, _connections = None, {}, {}
    if parent_server is None:
        return {}
    address, authkey = parent_server
    return {
        ledger_id: RemoteLedger(ledger_id, tuple(address), authkey, pid=os.getppid())
        for ledger_id in parent_ledgers
    }


@dataclass(frozen=True)
class RemoteLedger:
    """Handle on a ledger that lives in another process (same machine).

    Parameters
    ----------
    id : str
    address : (host, port)
    authkey : bytes
    host : str
        Machine the ledger lives on, for the error message of an unreachable one.
    pid : int
        Process the ledger lives in: if it has ended, so has the block.
    """

    id: str
    address: tuple
    authkey: bytes = field(repr=False)
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)

    def _owner_is_gone(self):
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)  # signal 0: existence check only
        except ProcessLookupError:
            return True
        except OSError:  # exists, owned by someone else
            return False
        return False

    def _request(self, request):
        key = (tuple(self.address), os.getpid())
        with _state_lock:
            entry = _connections.get(key)
        try:
            if entry is None:
                entry = (
                    Client(tuple(self.address), authkey=self.authkey),
                    threading.Lock(),
                )
                with _state_lock:
                    entry = _connections.setdefault(key, entry)
            conn, lock = entry
            with lock:
                conn.send_bytes(json.dumps(request).encode())
                return json.loads(conn.recv_bytes())
        except (OSError, EOFError) as exc:
            with _state_lock:
                _connections.pop(key, None)
            if self._owner_is_gone():
                # e.g. a model pickled inside a block, loaded after that session
                return {"status": "closed"}
            where = (
                ""
                if self.host == socket.gethostname()
                else f" (it lives on {self.host!r}, this is {socket.gethostname()!r})"
            )
            raise LedgerUnreachableError(
                f"{request.get('source', 'a release')} refused: its track_budget "
                f"ledger at {self.address}{where} cannot be reached ({exc!r}), so "
                "the spend could not be recorded. skdp reaches ledgers of other "
                "processes on the same machine only."
            ) from exc

    def _try_record(self, budget, source, events):
        reply = self._request(
            {
                "op": "record",
                "ledger": self.id,
                "budget": [budget.epsilon, budget.delta],
                "source": source,
                "events": [event._to_wire() for event in events],
            }
        )
        status = reply.get("status")
        if status == "ok":
            return reply["token"]
        if status == "closed":
            return None
        if status == "refused":
            raise BudgetExceededError(reply["message"])
        raise BudgetExceededError(
            f"{source} refused: the ledger answered {reply!r} to its spend."
        )

    def _unrecord(self, token):
        self._request({"op": "unrecord", "ledger": self.id, "token": token})

    def _mark_swallowed(self, message):
        self._request({"op": "swallowed", "ledger": self.id, "message": message})
