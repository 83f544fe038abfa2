"""The ledger as a trust boundary: saved models, file holders, local attackers.

Real processes: a writer that saves models inside an open block, loaders and
attackers that are not its descendants (siblings, another PID namespace and host
name via ``unshare``), attackers on the pytest process's own ledger socket.
Every test bounds its time (SIGALRM, subprocess timeouts) and ends the
processes it started.
"""

import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV

from skdp.accounting import (
    LedgerUnreachableError,
    PrivacyBudget,
    _process,
    _tracking,
    _transport,
    record_spend,
    track_budget,
)
from skdp.accounting._ledger import BudgetTracker
from skdp.exceptions import BudgetExceededError
from skdp.linear_model import FMLinearRegression

pytestmark = [
    pytest.mark.skipif(
        not _process.SUPPORTED, reason="the ledger server needs Linux peer credentials"
    ),
    pytest.mark.usefixtures("time_bound"),
]
TIME_LIMIT = 150  # seconds a test (time_bound)

ROOT = str(Path(__file__).resolve().parents[2])
ENV = {**os.environ, "PYTHONPATH": ROOT}
EPSILONS = [0.5, 1.0]
CV = 3

COMMON = """
import json, sys
import numpy as np
from skdp.linear_model import FMLinearRegression
from skdp.preprocessing import RandomizedResponse
rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, (200, 3))
y = X.sum(axis=1)
codes = rng.integers(0, 2, (200, 1))

def fm(epsilon=1.0):
    return FMLinearRegression(
        epsilon=epsilon, bounds_X=(-1, 1), bounds_y=(-3, 3), random_state=0
    )

def rr():
    return RandomizedResponse(epsilon=0.5, columns=[0], categories=[[0, 1]])
"""

# Saves a fitted model and a fitted randomized-response transformer inside a
# capped block, then obeys commands on stdin while the block stays open.
WRITER = (
    COMMON
    + """
import joblib
from skdp.accounting import track_budget
from skdp.exceptions import BudgetExceededError

with track_budget(epsilon=float(sys.argv[2]), strict=False) as acc:
    joblib.dump({"fm": fm().fit(X, y), "rr": rr().fit(codes)}, sys.argv[1])
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "fit":
            try:
                fm().fit(X, y)
                print("fitted", flush=True)
            except BudgetExceededError:
                print("refused", flush=True)
        elif line.strip() == "report":
            report = {"n": len(acc.spends), "epsilon": acc.total.epsilon}
            print(json.dumps(report), flush=True)
        else:
            break
"""
)

# Loads the saved objects and uses them in and out of its own blocks.
LOADER = (
    COMMON
    + """
import socket
import joblib
from skdp.accounting import _tracking, track_budget

saved = joblib.load(sys.argv[1])
model, transformer = saved["fm"], saved["rr"]
out = {"host": socket.gethostname(), "adopted": len(_tracking._inherited)}
out["predict"] = model.predict(X[:2]).tolist()
model.fit(X, y)  # outside any block
transformer.transform(codes)
with track_budget(epsilon=1.75) as mine:
    model.fit(X, y)  # epsilon 1
    transformer.transform(codes)  # epsilon 0.5
    fm(0.25).fit(X, y)
    try:
        fm(0.25).fit(X, y)  # past this process's own cap
        out["capped"] = False
    except Exception as exc:
        out["capped"] = type(exc).__name__
out["mine"] = [src for src, _ in mine.spends]
out["mine_epsilon"] = mine.total.epsilon
out["adopted_after"] = len(_tracking._inherited)
print(json.dumps(out), flush=True)
"""
)

# Holds a copy of the saved file and attacks the writer's ledger with it.
ATTACKER = (
    COMMON
    + """
import secrets, socket, struct
import joblib
from skdp.accounting import PrivacyBudget, _tracking
from skdp.exceptions import BudgetExceededError

carried = []
adopt = _tracking._adopt
_tracking._adopt = lambda handles: carried.extend(handles) or adopt(carried)
saved = joblib.load(sys.argv[1])
handle = carried[0]
out = {"binds": handle.binds_here(), "adopted": len(_tracking._inherited)}

def raw(request):
    # speak the protocol directly; the ledger says nothing to a non-descendant
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(handle.path)
        body = json.dumps(request).encode()
        try:
            sock.sendall(struct.pack("!I", len(body)) + body)
            return sock.recv(65536).decode() or "closed"
        except OSError as exc:
            return type(exc).__name__

replies = set()
for token in [str(t) for t in range(50)] + [secrets.token_hex(16) for _ in range(50)]:
    replies.add(raw({"op": "unrecord", "ledger": handle.id, "token": token}))
record = {"op": "record", "ledger": handle.id, "budget": [-5.0, 0.0],
          "source": "forged", "events": [], "rows": None}
replies.add(raw(record))
replies.add(raw({"op": "read", "ledger": handle.id}))
out["raw_replies"] = sorted(replies)
for name, call in [
    ("record", lambda: handle._try_record(PrivacyBudget(0.0), "forged", ())),
    ("unrecord", lambda: handle._unrecord("0")),
]:
    try:
        call()
        out[name] = "accepted"
    except BudgetExceededError as exc:
        out[name] = type(exc).__name__
saved["fm"].fit(X, y)  # and its own releases are its own
print(json.dumps(out), flush=True)
"""
)


@contextlib.contextmanager
def writer(directory, cap):
    """A writer process with an open capped block and a saved model."""
    path = directory / "model.joblib"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(cap)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"

        def ask(command):
            proc.stdin.write(command + "\n")
            proc.stdin.flush()
            return proc.stdout.readline().strip()

        yield path, ask
        ask("exit")
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


@pytest.fixture(scope="module")
def open_writer(tmp_path_factory):
    """One writer for the module: its block (cap 3) stays open throughout."""
    with writer(tmp_path_factory.mktemp("writer"), cap=3.0) as (path, ask):
        yield path, ask


def run_script(script, *args, prefix=()):
    done = subprocess.run(
        [*prefix, sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def unshare_prefix():
    """Run in a new user, PID and UTS namespace with another host name."""
    if shutil.which("unshare") is None:
        return None
    cmd = ["unshare", "--user", "--map-root-user", "--uts", "--pid", "--fork"]
    probe = subprocess.run([*cmd, "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        return None
    return [*cmd, "--mount-proc", "sh", "-c", 'hostname elsewhere && exec "$@"', "sh"]


def assert_loaded_normally(out):
    assert out["adopted"] == 0 and out["adopted_after"] == 0
    assert len(out["predict"]) == 2
    fits = ["FMLinearRegression", "RandomizedResponse.transform"]
    assert out["mine"] == [fits[0], fits[1], fits[0]]
    assert out["mine_epsilon"] == pytest.approx(1.75)
    assert out["capped"] == "BudgetExceededError"


# ------------------------------------------------------------- saved models
def test_saved_model_releases_normally_while_its_writer_is_open(open_writer):
    path, ask = open_writer
    before = json.loads(ask("report"))
    assert_loaded_normally(run_script(LOADER, path))
    assert json.loads(ask("report")) == before


def test_saved_model_releases_normally_on_another_host_and_pid_namespace(
    open_writer,
):
    prefix = unshare_prefix()
    if prefix is None:
        pytest.skip("unshare into user/PID/UTS namespaces is not available")
    path, ask = open_writer
    before = json.loads(ask("report"))
    out = run_script(LOADER, path, prefix=prefix)
    assert out["host"] == "elsewhere"
    assert_loaded_normally(out)
    assert json.loads(ask("report")) == before


def test_saved_model_releases_normally_once_its_writer_is_gone(tmp_path):
    with writer(tmp_path, cap=1.0) as (path, _):
        pass  # the writer has exited
    assert_loaded_normally(run_script(LOADER, path))


def test_a_saved_model_in_this_process_adds_no_ledger(tmp_path):
    # loaded back in its own process (not a worker of it): nothing is adopted
    import joblib

    with track_budget():
        joblib.dump(FMLinearRegression(), tmp_path / "m.joblib")
    state = joblib.load(tmp_path / "m.joblib").__dict__
    assert _tracking._STATE_KEY not in state
    assert not _tracking._inherited


def test_what_a_pickle_made_inside_a_block_holds():
    with track_budget() as acc:
        state = FMLinearRegression().__getstate__()
    (carried,) = state[_tracking._STATE_KEY]
    tag, ledger_id, path, machine, pid, start = carried
    assert (tag, ledger_id, pid) == ("skdp-ledger-1", acc.id, os.getpid())
    assert path == _transport.ensure_server()[0] and os.path.isabs(path)
    assert len(machine) == 32 and isinstance(start, int)
    # plain data only, and nothing a secret could hide in
    assert all(type(v) in (str, int) for v in carried)
    assert (os.stat(os.path.dirname(path)).st_mode & 0o777) == 0o700


# ---------------------------------------------------------- file holders
def test_a_file_holder_cannot_unrecord_forge_or_read(open_writer):
    path, ask = open_writer
    before = json.loads(ask("report"))
    out = run_script(ATTACKER, path)
    assert json.loads(ask("report")) == before
    assert out["binds"] is False and out["adopted"] == 0
    # not one answer, to any request: the ledger closes the connection at once
    assert set(out["raw_replies"]) <= {
        "closed",
        "BrokenPipeError",
        "ConnectionResetError",
    }
    assert out["record"] == out["unrecord"] == "LedgerUnreachableError"
    # the owner's cap (3, with fits of epsilon 1) holds exactly as before
    while ask("fit") == "fitted":
        pass
    assert json.loads(ask("report")) == {"n": 3, "epsilon": 3.0}


def test_a_worker_cannot_unrecord_what_it_did_not_record():
    # a descendant can talk to the ledger; guessing tokens still does nothing
    tracker = BudgetTracker(limit=PrivacyBudget(2.0))
    tokens = {tracker._try_record(PrivacyBudget(1.0), "a", ()) for _ in range(2)}
    assert len(tokens) == 2 and all(len(t) == 32 for t in tokens)
    for guess in [*map(str, range(50)), "0" * 32]:
        tracker._unrecord(guess)
    assert tracker.total == PrivacyBudget(2.0)


# ----------------------------------------------------- local attackers
def fm():
    return FMLinearRegression(bounds_X=(-1, 1), bounds_y=(-2, 2), random_state=0)


# Connects and closes, stalls with no request and with half a header, sends
# garbage, an oversized header and invalid UTF-8; keeps the stalled connections
# open until told to stop (a file appears) or 100 s pass.
LOCAL_ATTACKER = """
import os, socket, struct, sys, time
path, ready, stop, detached = sys.argv[1:5]
deadline = time.monotonic() + 10
while detached == "1" and time.monotonic() < deadline:
    with open(f"/proc/{os.getppid()}/comm") as f:  # wait until sh has exited
        if f.read().strip() != "sh":
            break
    time.sleep(0.01)

def connect():
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return sock

def send(sock, payload):
    try:
        sock.sendall(payload)
    except OSError:  # an outsider may be hung up on before it writes (EPIPE)
        pass

for _ in range(20):
    connect().close()
stalled = [connect() for _ in range(8)]
stalled.append(connect()); send(stalled[-1], b"\\x00\\x00")
for payload in [b"\\x00\\x00\\x00\\x05}{{{{", struct.pack("!I", 2**31) + b"x",
                b"\\x00\\x00\\x00\\x02\\xff\\xfe", b"\\x00\\x00\\x00\\x04null"]:
    sock = connect(); send(sock, payload); stalled.append(sock)
open(ready, "w").close()
deadline = time.monotonic() + 100
while not os.path.exists(stop) and time.monotonic() < deadline:
    time.sleep(0.05)
"""


def start_attacker(tmp_path, detached):
    path, _ = _transport.ensure_server()
    ready, stop = tmp_path / "ready", tmp_path / "stop"
    argv = [sys.executable, "-c", LOCAL_ATTACKER, path, str(ready), str(stop)]
    argv.append("1" if detached else "0")
    if detached:
        # orphaned at once (re-parented to init): not a descendant of this process
        out = subprocess.run(
            ["sh", "-c", '"$@" >/dev/null 2>&1 & echo $!', "sh", *argv],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        pid, proc = int(out.stdout), None
    else:
        proc = subprocess.Popen(argv)
        pid = proc.pid
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert time.monotonic() < deadline, "the attacker did not start"
        time.sleep(0.05)
    return pid, proc, stop


def stop_attacker(pid, proc, stop):
    stop.touch()
    if proc is not None:
        try:
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        return
    deadline = time.monotonic() + 30
    while _process.identity(pid) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    if _process.identity(pid) is not None:  # our own orphan, by its pid
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("detached", [True, False], ids=["outsider", "descendant"])
def test_attackers_on_the_socket_do_not_stop_a_search(
    tmp_path, monkeypatch, detached, data
):
    # stalls outlast the search (long timeout): the listener must serve around them
    monkeypatch.setattr(_transport, "REQUEST_TIMEOUT", 600.0)
    X, y = data
    pid, proc, stop = start_attacker(tmp_path, detached)
    assert _process.descends_from(_process.identity(), pid) is not detached
    try:
        with track_budget() as acc:
            search = GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=CV, n_jobs=2)
            search.fit(X, y)
        assert not stop.exists()  # the stalled connections were still held
    finally:
        stop_attacker(pid, proc, stop)
    assert len(acc.spends) == CV * len(EPSILONS) + 1
    total = CV * sum(EPSILONS) + search.best_params_["epsilon"]
    assert acc.total.epsilon == pytest.approx(total)
    with warnings.catch_warnings():  # and caps still hold
        warnings.simplefilter("ignore", FitFailedWarning)
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(BudgetExceededError):
            with track_budget(epsilon=2.0) as capped:
                GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=CV, n_jobs=2).fit(X, y)
    assert capped.total.epsilon <= 2.0


def test_a_stalled_connection_is_closed_after_the_request_timeout(monkeypatch):
    monkeypatch.setattr(_transport, "REQUEST_TIMEOUT", 0.5)
    path, _ = _transport.ensure_server()
    # this process is not its own descendant: use a child to pass the peer check
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, sys, time\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
            "s.settimeout(60)\n"
            "print(repr(s.recv(10)), flush=True)",
            path,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "b''"  # closed by the ledger
    finally:
        child.kill()
        child.wait(30)


def test_a_client_does_not_wait_forever_for_a_stuck_ledger(tmp_path, monkeypatch):
    # a listener in this process that accepts and never answers
    monkeypatch.setattr(_transport, "REPLY_TIMEOUT", 0.5)
    path = str(tmp_path / "stuck")
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.bind(path)
    stuck.listen(1)
    handle = _transport.RemoteLedger("2" * 32, path, _process.identity())
    try:
        with pytest.raises(LedgerUnreachableError, match="timed out"):
            handle._try_record(PrivacyBudget(1.0), "x", ())
    finally:
        stuck.close()


def test_malformed_requests_get_no_answer_and_the_ledger_serves_on(monkeypatch):
    # _handle raises on anything malformed, which closes that connection only
    for request in [
        None,
        [],
        {"op": "record"},
        {"op": "record", "ledger": 3},
        {"op": "drop", "ledger": "x"},
    ]:
        with pytest.raises((TypeError, KeyError, ValueError)):
            _transport._handle(request)
    with track_budget() as acc:
        bad = {
            "op": "record",
            "ledger": acc.id,
            "source": "s",
            "events": [["PickleEvent", 1]],
        }
        for budget in ([1.0], ["1", 0.0], [1.0, 2.0], [True, 0.0], "x"):
            with pytest.raises((TypeError, ValueError)):
                _transport._handle({**bad, "budget": budget})
        with pytest.raises(ValueError, match="unknown privacy event"):
            _transport._handle({**bad, "budget": [1.0, 0.0]})
        ok = _transport._handle({**bad, "budget": [1.0, 0.0], "events": []})
        assert ok["status"] == "ok"
        assert _transport._handle({"op": "unrecord", "ledger": acc.id, "token": "0"})
    assert len(acc.spends) == 1


def test_oversized_messages_are_refused_before_they_are_read():
    left, right = socket.socketpair()
    with left, right:
        left.sendall(struct.pack("!I", _transport.MAX_REQUEST_BYTES + 1))
        with pytest.raises(ValueError, match="over the limit"):
            _transport._read_message(right, _transport.MAX_REQUEST_BYTES)


def test_a_worker_on_an_unsupported_platform_refuses(monkeypatch):
    # no peer credentials: no server; a worker recognizing its parent's handle
    # (through psutil or its direct parent) refuses instead of recording
    monkeypatch.setattr(_process, "SUPPORTED", False)
    owner = _process.identity(os.getppid())
    handle = _transport.RemoteLedger("3" * 32, *_transport.ensure_server()[:1], owner)
    assert handle.path == "" and handle.binds_here()
    assert not _transport.RemoteLedger("4" * 32, "", _process.identity()).binds_here()
    _tracking._adopt((handle,))
    try:
        with pytest.raises(LedgerUnreachableError, match="needs Linux"):
            record_spend(PrivacyBudget(1.0), "x")
    finally:
        _tracking._inherited.pop(handle.id, None)


def test_the_accept_loop_survives_any_exception(monkeypatch):
    # accept() failing (out of descriptors, anything else), a thread that
    # cannot start: the loop serves on, and ends only when its socket is broken
    served = []

    class Conn:
        def close(self):
            served.append("dropped")

    class Listener:
        def __init__(self):
            self.steps = [
                OSError(24, "Too many open files"),
                RuntimeError("anything"),
                (Conn(), None),  # the thread cannot start: dropped
                (Conn(), None),  # served
            ]

        def accept(self):
            if not self.steps:
                raise OSError(9, "closed")
            step = self.steps.pop(0)
            if isinstance(step, BaseException):
                raise step
            return step

        def fileno(self):
            return -1 if not self.steps else 3

    starts = []

    class Thread:
        def __init__(self, target, args, **kwargs):
            self.args = args

        def start(self):
            starts.append(self.args)
            if len(starts) == 1:
                raise RuntimeError("can't start new thread")
            served.append("served")

    monkeypatch.setattr(_transport.threading, "Thread", Thread)
    monkeypatch.setattr(_transport.time, "sleep", lambda s: None)
    _transport._accept_loop(Listener(), _process.identity())
    assert served == ["dropped", "served"]


def test_a_dead_listener_is_replaced(data):
    path, owner = _transport.ensure_server()
    listener = _transport._server
    assert listener.thread.is_alive() and owner == _process.identity()
    listener.sock.shutdown(socket.SHUT_RDWR)  # broken: the loop ends
    listener.sock.close()
    listener.thread.join(10)
    assert not listener.thread.is_alive()
    # a new listener on the same path: handles given out still find it
    assert _transport.ensure_server() == (path, owner)
    assert _transport._server is not listener and _transport._server.thread.is_alive()
    with track_budget() as acc:  # and workers reach the new one
        joblib_fit = GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=CV, n_jobs=2)
        joblib_fit.fit(*data)
    assert len(acc.spends) == CV * len(EPSILONS) + 1


def test_a_request_trickled_byte_by_byte_meets_one_deadline():
    left, right = socket.socketpair()
    with left, right:
        left.sendall(b"\x00\x00")  # half a header, then nothing
        with pytest.raises(TimeoutError):
            _transport._read_message(right, 100, time.monotonic() + 0.2)


def test_the_most_row_ids_sent_fit_in_one_request():
    rows = np.arange(_transport.MAX_WIRE_ROWS, dtype=np.int64)
    encoded = _transport.rows_to_wire(rows)
    assert len(encoded) < _transport.MAX_REQUEST_BYTES - 10_000
    assert np.array_equal(_transport.rows_from_wire(encoded), rows)
    assert _transport.rows_to_wire(np.arange(rows.size + 1)) is None  # all rows
