"""A small local server through which worker processes record spends in a ledger.

Each process that opens a ``track_budget`` block starts (once) a listener on a
Unix socket in a private directory (mode 0700). There is no key: the listener
serves only processes that the kernel reports (``SO_PEERCRED``, then the parent
chain in ``/proc``) as descendants of its own process (loky, ``multiprocessing``
and dask ``LocalCluster`` workers, forked children), and a client talks only to
the process its handle names (the same check, the other way). A handle
(:class:`RemoteLedger`: ledger id, socket path, owner process) therefore grants
nothing to a process that holds a copy of it without descending from the owner,
such as one that loads a model saved to disk inside the block.

Protocol: one request per connection, a 4-byte length then JSON (the ledger
never unpickles anything a worker sends); requests ``record`` (returns a random
token), ``unrecord`` (needs that token, which only the recorder has) and
``swallowed``. Each connection is served in its own thread with a timeout;
anything malformed, oversized or slow closes that connection only, and the
accept loop survives any exception.
"""

import atexit
import base64
import contextlib
import errno
import json
import os
import shutil
import socket
import struct
import tempfile
import threading
import time
from dataclasses import dataclass

import numpy as np

from skdp.accounting import _process
from skdp.accounting._budget import PrivacyBudget
from skdp.accounting._events import events_from_wire
from skdp.exceptions import BudgetExceededError

__all__ = ["LedgerUnreachableError", "RemoteLedger", "ensure_server"]

# Timeouts (seconds). A request is a few hundred bytes and a record takes
# milliseconds, so these only bound what a stuck or hostile peer can hold.
CONNECT_TIMEOUT = 10.0  # client: reaching the listener
REQUEST_TIMEOUT = 10.0  # server: a connected peer must send its request by then
REPLY_TIMEOUT = 60.0  # client: the ledger may wait for its lock behind other records
MAX_REQUEST_BYTES = 1 << 25  # 32 MiB: room for MAX_WIRE_ROWS ids in base64
MAX_REPLY_BYTES = 1 << 20
MAX_WIRE_ROWS = 1 << 21  # more row ids than this travel as "all rows" (conservative)
_HEADER = struct.Struct("!I")
# accept() errors that say nothing about the listener: wait and go on
_TRANSIENT = {
    errno.EAGAIN,
    errno.ECONNABORTED,
    errno.EMFILE,
    errno.ENFILE,
    errno.ENOBUFS,
    errno.ENOMEM,
    errno.EPERM,
    errno.EPROTO,
}

_state_lock = threading.Lock()
_server = None  # _Listener of this process
_ledgers = {}  # ledger id -> BudgetTracker open in this process


class LedgerUnreachableError(BudgetExceededError):
    """A release was refused because its tracker could not be reached.

    Raised in a worker process that holds a handle to a ``track_budget`` block of
    an ancestor process (it came with a pickled estimator or a fork) but cannot
    reach it, and when a dask worker receives an estimator pickled inside a block
    of a process it does not descend from (another machine, or a worker started
    separately): the spend could not be recorded, so the release does not happen.
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


@dataclass(frozen=True)
class _Listener:
    path: str
    owner: _process.ProcessId
    sock: socket.socket
    directory: str
    thread: threading.Thread


def ensure_server():
    """``(path, owner)`` of this process's listener (started if needed).

    Where the platform cannot verify peers (see :mod:`._process`) there is no
    listener and the path is empty: workers holding the handle refuse.
    """
    global _server
    if not _process.SUPPORTED:
        return "", _process.identity()
    with _state_lock:
        if _server is None or not _server.thread.is_alive():
            if _server is None:
                directory = tempfile.mkdtemp(prefix="skdp-ledger-")  # mode 0700
                path = os.path.join(directory, "ledger")
            else:  # cannot happen; if it did, serve the same path again, so
                # that handles already given out still find their ledgers
                directory, path = _server.directory, _server.path
                with contextlib.suppress(OSError):
                    _server.sock.close()
                    os.unlink(path)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(path)
            sock.listen(128)
            owner = _process.identity()
            thread = threading.Thread(
                target=_accept_loop,
                args=(sock, owner),
                name="skdp-budget-ledger",
                daemon=True,
            )
            replaced, _server = _server, _Listener(path, owner, sock, directory, thread)
            thread.start()
            if replaced is None:
                atexit.register(_remove_files)
        return _server.path, _server.owner


def _remove_files():
    listener = _server
    if listener is not None and listener.owner.pid == os.getpid():  # not a fork
        with contextlib.suppress(OSError):
            listener.sock.close()
        shutil.rmtree(listener.directory, ignore_errors=True)


def _accept_loop(listener, owner):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError as exc:
            if exc.errno in _TRANSIENT and listener.fileno() != -1:
                time.sleep(0.01)  # e.g. out of file descriptors: back off, go on
                continue
            return  # the listener itself is closed or broken: ensure_server replaces it
        except Exception:  # noqa: BLE001 - nothing a peer does may stop the loop
            continue
        try:
            threading.Thread(
                target=_serve,
                args=(conn, owner),
                name="skdp-budget-ledger-conn",
                daemon=True,
            ).start()
        except Exception:  # noqa: BLE001 - e.g. no thread left: drop this peer
            conn.close()


def _serve(conn, owner):
    """Serve one request; any failure closes this connection only."""
    with conn:
        try:
            conn.settimeout(REQUEST_TIMEOUT)
            if not _process.descends_from(owner, _process.peer_pid(conn)):
                return  # not one of this process's workers: say nothing
            deadline = time.monotonic() + REQUEST_TIMEOUT  # for the whole request
            reply = _handle(_read_message(conn, MAX_REQUEST_BYTES, deadline))
            _write_message(conn, reply)
        except Exception:  # noqa: BLE001 - malformed, oversized, slow or gone
            return


def _read_exact(sock, size, deadline=None):
    chunks = []
    while size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("request not received in time")
            sock.settimeout(remaining)
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise EOFError("connection closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_message(sock, limit, deadline=None):
    (size,) = _HEADER.unpack(_read_exact(sock, _HEADER.size, deadline))
    if size > limit:
        raise ValueError(f"message of {size} bytes, over the limit {limit}")
    return json.loads(_read_exact(sock, size, deadline).decode("utf-8"))


def _write_message(sock, obj):
    body = json.dumps(obj).encode("utf-8")
    sock.sendall(_HEADER.pack(len(body)) + body)


def _expect(value, kind, name):
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TypeError(f"{name}: expected {kind}, got {type(value).__name__}")
    return value


def rows_to_wire(rows):
    if rows is None or rows.size > MAX_WIRE_ROWS:
        return None
    return base64.b64encode(rows.astype("<i8").tobytes()).decode("ascii")


def rows_from_wire(value):
    if value is None:
        return None
    raw = base64.b64decode(_expect(value, str, "rows"), validate=True)
    if len(raw) % 8:
        raise ValueError("rows: not a whole number of int64")
    ids = np.unique(np.frombuffer(raw, dtype="<i8").astype(np.int64))
    if ids.size and ids[0] < 0:
        raise ValueError("rows: negative row id")
    return ids


def _handle(request):
    """Apply one request to a ledger of this process (raises if malformed)."""
    _expect(request, dict, "request")
    op = _expect(request["op"], str, "op")
    if op not in ("record", "unrecord", "swallowed"):
        raise ValueError(f"unknown op {op!r}")
    ledger_id = _expect(request["ledger"], str, "ledger")
    with _state_lock:
        ledger = _ledgers.get(ledger_id)
    if ledger is None:
        return {"status": "closed"}
    if op == "record":
        epsilon, delta = _expect(request["budget"], list, "budget")
        budget = PrivacyBudget(_expect(epsilon, float | int, "epsilon"), delta)
        source = _expect(request["source"], str, "source")[:1000]
        events = events_from_wire(_expect(request["events"], list, "events"))
        rows = rows_from_wire(request.get("rows"))
        try:
            token = ledger._try_record(budget, source, events, rows)
        except BudgetExceededError as exc:
            return {"status": "refused", "message": str(exc)}
        return (
            {"status": "closed"} if token is None else {"status": "ok", "token": token}
        )
    if op == "unrecord":
        ledger._unrecord(_expect(request["token"], str, "token"))
        return {"status": "ok"}
    ledger._mark_swallowed(_expect(request["message"], str, "message")[:1000])
    return {"status": "ok"}


def after_fork_in_child():
    """A forked child owns no listener and no open ledger: its parent does."""
    global _state_lock, _server, _ledgers
    parent_server, parent_ledgers = _server, _ledgers
    _state_lock = threading.Lock()
    _server, _ledgers = None, {}
    if parent_server is None:
        return {}
    with contextlib.suppress(OSError):
        parent_server.sock.close()  # the child's copy of the parent's listener
    return {
        ledger_id: RemoteLedger(ledger_id, parent_server.path, parent_server.owner)
        for ledger_id in parent_ledgers
    }


@dataclass(frozen=True)
class RemoteLedger:
    """Handle on a ledger that lives in an ancestor process (same machine).

    Holds no secret: the ledger serves only descendants of its process (checked
    by the kernel), so a copy of the handle in a file is useless elsewhere.

    Parameters
    ----------
    id : str
        The ledger (one ``track_budget`` block).
    path : str
        The owner's Unix socket.
    owner : ProcessId
        The process the ledger lives in. If it has ended, the handle refuses
        every release (:class:`LedgerUnreachableError`): a killed owner's block
        never ended, and an ended process cannot say which happened.
    """

    id: str
    path: str
    owner: _process.ProcessId

    _STATE_TAG = "skdp-ledger-1"

    def _to_state(self):
        """Plain data for a pickle (no class of this module needed to read it)."""
        owner = self.owner
        return (
            self._STATE_TAG,
            self.id,
            self.path,
            owner.machine,
            owner.pid,
            owner.start,
        )

    @classmethod
    def _from_state(cls, state):
        """The handle a pickle carried, or None if it is not one (e.g. older)."""
        try:
            tag, ledger_id, path, machine, pid, start = state
        except (TypeError, ValueError):
            return None
        if tag != cls._STATE_TAG or not all(
            isinstance(value, str) for value in (ledger_id, path, machine)
        ):
            return None
        if not all(type(value) is int for value in (pid, start)):
            return None
        return cls(ledger_id, path, _process.ProcessId(machine, pid, start))

    def binds_here(self):
        """Whether this process works for the handle's block (descends from it)."""
        return _process.descends_from(self.owner)

    def _request(self, request):
        """Send one request and return the owner's reply.

        A block that ended while its process lives answers ``closed`` (the
        caller then drops the handle). A process that has ended cannot tell a
        block that ended from one it was killed inside, so a handle whose owner
        is gone refuses every request with :class:`LedgerUnreachableError`, as
        does an owner that cannot be reached.
        """
        source = request.get("source", "a release")
        if not self.path:
            raise LedgerUnreachableError(
                f"{source} refused: recording the "
                "spends of worker processes in a track_budget block needs Linux "
                "(kernel peer credentials). Use joblib's threading backend, or "
                "release outside the block."
            )
        if _process.identity(self.owner.pid) != self.owner:
            raise self._owner_gone(source)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(CONNECT_TIMEOUT)
                sock.connect(self.path)
                server = _process.peer_pid(sock)
                if _process.identity(server) != self.owner:
                    raise ConnectionError(f"the socket is served by pid {server}")
                sock.settimeout(REPLY_TIMEOUT)
                _write_message(sock, request)
                return _read_message(sock, MAX_REPLY_BYTES)
        except (OSError, EOFError, ValueError) as exc:
            if _process.identity(self.owner.pid) != self.owner:
                raise self._owner_gone(source) from exc  # ended while we asked
            raise LedgerUnreachableError(
                f"{source} refused: its track_budget "
                f"ledger in process {self.owner.pid} cannot be reached ({exc!r}), "
                "so the spend could not be recorded."
            ) from exc

    def _owner_gone(self, source):
        return LedgerUnreachableError(
            f"{source} refused: process {self.owner.pid}, which held its "
            "track_budget ledger, has ended (this worker cannot tell whether it "
            "closed the block first or was killed inside it), so the spend can "
            "be neither recorded nor checked against the block's limit."
        )

    def _try_record(self, budget, source, events, rows=None):
        reply = self._request(
            {
                "op": "record",
                "ledger": self.id,
                "budget": [budget.epsilon, budget.delta],
                "source": source,
                "events": [event._to_wire() for event in events],
                "rows": rows_to_wire(rows),
            }
        )
        status = reply.get("status") if isinstance(reply, dict) else None
        if status == "ok" and isinstance(reply.get("token"), str):
            return reply["token"]
        if status == "closed":
            return None
        if status == "refused":
            raise BudgetExceededError(str(reply.get("message")))
        raise BudgetExceededError(
            f"{source} refused: the ledger answered {reply!r} to its spend."
        )

    def _unrecord(self, token):
        self._request({"op": "unrecord", "ledger": self.id, "token": token})

    def _mark_swallowed(self, message):
        self._request({"op": "swallowed", "ledger": self.id, "message": message})
