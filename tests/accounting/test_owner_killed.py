"""A worker whose ledger owner was killed refuses its releases (issue 40).

Real processes: the test starts an owner (multiprocessing, spawn) that opens a
capped ``track_budget`` block and spawns a worker with a skdp estimator pickled
inside it (so the worker holds the block's handle); the worker releases twice
(recorded), the owner is killed with SIGKILL, and every later release of the
worker must raise ``LedgerUnreachableError`` (on 0380120 the worker took the
dead owner for a block that ended and went on releasing, unrecorded, past the
cap). Every wait is bounded and the test ends every process it started.
"""

import json
import multiprocessing
import os
import shutil
import signal
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from skdp.accounting import _process

pytestmark = [
    pytest.mark.skipif(
        not _process.SUPPORTED, reason="the ledger server needs Linux peer credentials"
    ),
    pytest.mark.usefixtures("time_bound"),
]
TIME_LIMIT = 240  # seconds for the test (time_bound); each wait is shorter
CAP = 2.0
EPSILON = 0.5  # per release: 2 before the kill, 6 after (3.0 in all, over CAP)
AFTER = 6


def _note(directory, line):
    with open(Path(directory) / "log", "a") as f:
        f.write(line + "\n")


def _worker(rr, directory):
    """Release twice, wait for the owner's death, then try AFTER more times."""
    from skdp.exceptions import BudgetExceededError

    warnings.simplefilter("ignore")  # the reproducible-noise warning, per release
    directory = Path(directory)
    (directory / "worker.pid").write_text(str(os.getpid()))
    X, y = np.zeros((20, 1)), np.arange(20) % 2
    deadline = time.monotonic() + 180

    def release(phase):
        try:
            rr.fit_resample(X, y)
        except BudgetExceededError as exc:
            _note(directory, f"{phase} {type(exc).__name__}")
        else:
            _note(directory, f"{phase} released")

    for _ in range(2):
        release("before")
    (directory / "ready").touch()
    while not (directory / "killed").exists():
        if time.monotonic() > deadline:
            _note(directory, "timeout")
            return
        time.sleep(0.02)
    for _ in range(AFTER):
        release("after")
    (directory / "done").touch()


def _owner(directory):
    """Hold a capped block open, with a worker that got the estimator inside it."""
    from skdp.accounting import _transport, track_budget
    from skdp.preprocessing import RandomizedResponse

    directory = Path(directory)
    ctx = multiprocessing.get_context("spawn")
    deadline = time.monotonic() + 180
    with track_budget(epsilon=CAP) as acc:
        socket_path, _ = _transport.ensure_server()
        (directory / "server").write_text(os.path.dirname(socket_path))
        rr = RandomizedResponse(epsilon=EPSILON, classes=[0, 1])
        worker = ctx.Process(target=_worker, args=(rr, str(directory)))
        worker.start()  # pickles rr inside the block: it carries the handle
        while not (directory / "ready").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        (directory / "recorded").write_text(
            json.dumps([len(acc.spends), acc.total.epsilon])
        )
        while time.monotonic() < deadline:  # until killed
            time.sleep(0.1)


def _wait_for(path, seconds, what):
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{what} not reached in {seconds} s"
        time.sleep(0.05)


def _running(ident):
    """Whether the process ``ident`` still runs (not ended, not a zombie)."""
    if ident is None or _process.identity(ident.pid) != ident:
        return False
    try:
        stat = Path(f"/proc/{ident.pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] != b"Z"


def _end(ident):
    """End a process of this test (the worker is an orphan once its owner died)."""
    deadline = time.monotonic() + 30
    while _running(ident) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _running(ident):
        os.kill(ident.pid, signal.SIGKILL)


def test_workers_of_a_killed_owner_refuse_every_release(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    owner = ctx.Process(target=_owner, args=(str(tmp_path),))
    owner.start()
    worker = None
    try:
        _wait_for(tmp_path / "recorded", 150, "the worker's first releases")
        worker = _process.identity(int((tmp_path / "worker.pid").read_text()))
        # the handle was live: both releases were recorded in the owner's block
        assert json.loads((tmp_path / "recorded").read_text()) == [2, 2 * EPSILON]
        assert _running(worker)
        os.kill(owner.pid, signal.SIGKILL)
        owner.join(30)
        assert owner.exitcode == -signal.SIGKILL
        (tmp_path / "killed").touch()
        _wait_for(tmp_path / "done", 60, "the worker's releases after the kill")
        log = (tmp_path / "log").read_text().splitlines()
        assert (
            log == ["before released"] * 2 + ["after LedgerUnreachableError"] * AFTER
        ), log
    finally:
        if owner.is_alive():
            owner.kill()
            owner.join(30)
        _end(worker)
        if (tmp_path / "server").exists():  # the killed owner's socket directory
            shutil.rmtree((tmp_path / "server").read_text(), ignore_errors=True)
    assert not owner.is_alive() and not _running(worker)
