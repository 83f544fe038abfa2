"""Strangers without a certificate cannot starve the participants (issue 36,
item 2): a slow-loris against a real server process on 127.0.0.1 whose
descriptors are fewer than the strangers' connections. Bounded in time; every
socket is closed and no process is left running."""

import resource
import select
import socket
import threading
import time

import numpy as np
import pytest

pytest.importorskip("grpc")
pytest.importorskip("cryptography")

from skdp.vertical import VerticalFMRegressor  # noqa: E402
from skdp.vertical.federated import load_model  # noqa: E402
from tests.vertical.federated._harness import (  # noqa: E402
    Deployment,
    kill_all,
    launch,
    wait_all,
)

#: The server's descriptors, soft and hard (``ulimit -n 256`` sets both).
LIMIT = 256
#: Idle connections from the stranger: more than the server has descriptors.
STRANGERS = 400
#: Seconds between the stranger's bytes on each connection.
DRIP = 10.0


def _lower_limit():
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


class SlowLoris:
    """``n`` TCP connections to ``port``: each sends one byte (the first byte
    of a TLS record), then one more every :data:`DRIP` seconds, and never
    completes a handshake. Records when the server closes each of them; with
    ``reconnect``, replaces each closed one with a new connection at once
    (within the 0.2 s poll)."""

    def __init__(self, port, n, budget=30.0, reconnect=False):
        self.port, self.reconnect, self.reopened = port, reconnect, 0
        self.socks, self.closed_at = [], {}
        self.started = time.monotonic()
        self._stop = threading.Event()
        limit = self.started + budget
        try:
            while len(self.socks) < n and time.monotonic() < limit:
                s = socket.socket()
                self.socks.append(s)
                s.settimeout(2.0)
                s.connect(("127.0.0.1", port))
                s.sendall(b"\x16")
                s.setblocking(False)
        except BaseException:
            self.close()
            raise
        self.connected = time.monotonic()
        self._thread = threading.Thread(target=self._hold, daemon=True)
        self._thread.start()

    def _hold(self):
        last = time.monotonic()
        while not self._stop.wait(0.2):
            open_ = [s for s in self.socks if s not in self.closed_at]
            poll = select.poll()  # not select(): descriptors may exceed 1024
            by_fd = {s.fileno(): s for s in open_}
            for fd in by_fd:
                poll.register(fd, select.POLLIN)
            for fd, _ in poll.poll(0):
                s = by_fd[fd]
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if not data:  # the server closed it
                    self.closed_at[s] = time.monotonic() - self.started
                    if self.reconnect:
                        self._reopen()
            if time.monotonic() - last >= DRIP:
                last = time.monotonic()
                for s in open_:
                    if s in self.closed_at:
                        continue
                    try:
                        s.send(b"\x03")
                    except OSError:
                        self.closed_at[s] = time.monotonic() - self.started

    def _reopen(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=1.0)
        except OSError:
            return
        self.socks.append(s)
        try:
            s.sendall(b"\x16")
            s.setblocking(False)
            self.reopened += 1
        except OSError:
            self.closed_at[s] = time.monotonic() - self.started

    def open_count(self):
        return len(self.socks) - len(self.closed_at)

    def close(self):
        self._stop.set()
        if getattr(self, "_thread", None) is not None:
            self._thread.join(5)
        for s in self.socks:
            s.close()


def _wait_listening(proc, port, seconds=60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("reconnect", [False, True], ids=["idle", "reconnecting"])
def test_idle_strangers_beyond_the_descriptor_limit_do_not_stop_a_run(
    tmp_path, reconnect
):
    """The server may hold LIMIT descriptors; STRANGERS idle connections that
    never finish a TLS handshake are opened to it before the parties start
    (``reconnecting``: each one the server closes is replaced at once). The
    two parties still reach it and the server releases the same model as the
    in-process estimator (the model a run without strangers releases), well
    within the parties' ``startup``."""
    rng = np.random.default_rng(0)
    sizes = [1, 2]
    blocks = [rng.uniform(-1, 1, (40, s)) for s in sizes]
    X = np.hstack(blocks)
    y = np.clip(0.3 * X @ rng.normal(size=3) + rng.normal(0, 0.1, 40), -1, 1)
    timeouts = {"startup": 40.0, "call": 20.0, "heartbeat": 0.5, "protocol": 120.0}
    dep = Deployment(tmp_path, blocks, y, timeouts=timeouts)
    paths = dep.write()
    port = int(dep.addresses["server"].rsplit(":", 1)[1])
    procs, loris = {}, None
    try:
        procs |= launch({"server": paths["server"]}, preexec={"server": _lower_limit})
        assert _wait_listening(procs["server"], port), "the server never listened"
        loris = SlowLoris(port, STRANGERS, reconnect=reconnect)
        assert len(loris.socks) == STRANGERS > LIMIT
        began = time.monotonic()
        procs |= launch({n: paths[n] for n in dep.names})
        out = wait_all(procs, 90)
        took = time.monotonic() - began
        held = loris.open_count()
        closed = sorted(loris.closed_at.values())
    finally:
        if loris is not None:
            loris.close()
        kill_all(procs)
    print(
        f"\n{STRANGERS} strangers against {LIMIT} descriptors: run ended "
        f"{took:.1f} s after the parties started; {held} still open then; "
        f"{len(closed)} closed by the server, at {closed[:1]}..{closed[-1:]} s; "
        f"{loris.reopened} reopened"
    )
    failed = [f"{n} exited {c}: {e[-1500:]}" for n, (c, _, e) in out.items() if c]
    assert not failed, "\n".join(failed)
    model = load_model(tmp_path / "model")
    ref = VerticalFMRegressor(
        epsilon=1.0,
        bounds_X=(-1.0, 1.0),
        bounds_y=(-1.0, 1.0),
        partition=[[0], [1, 2]],
        noise_generation="dealer",
        secure_backend="plaintext",
        random_state=0,
    ).fit(X, y)
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    assert model.intercept_ == ref.intercept_
