"""Who a failed participant keeps waiting for (``Node.abort_all``): the rule,
with the network replaced by a stub so that two aborts can be made to cross
deterministically (CI once saw org-0 wait out its whole ``startup`` for a server
that had told it, and exited, while org-0 was failing on its own)."""

import queue
import threading
import time
from collections import deque
from types import SimpleNamespace

import pytest

pytest.importorskip("grpc")

from skdp.vertical._messages import ABORT, Message  # noqa: E402
from skdp.vertical.federated._node import Node  # noqa: E402

STARTUP = 30.0  # what the node would wait for a peer never told


def _node(name, peers):
    """A Node with its state but no sockets: ``_tell`` is replaced per test."""
    node = Node.__new__(Node)
    node.name = name
    node.hosts = {name: name, **{p: p for p in peers}}
    node.peers = {p: None for p in peers}
    node._inbox = queue.Queue()
    node._pending = deque()
    node._abort = None
    node._stopped = threading.Event()
    node._lock = threading.Lock()
    node.reached, node.unreachable, node.aborted_by = set(), set(), set()
    node.bytes_received = node.messages_received = 0
    node.startup_deadline = time.monotonic() + STARTUP
    node.endpoint = SimpleNamespace(failure=None, failure_seen_by=set())
    return node


def _abort_from(sender, receiver):
    return Message(ABORT, sender, receiver, "abort", {"cause": f"{sender} failed"})


def test_a_peer_whose_abort_crosses_ours_is_not_waited_for():
    """org-0 fails; its first tell cannot reach the server (not listening yet);
    the server's own abort then arrives: org-0 stops waiting within a poll."""
    node = _node("org-0", ["server", "org-1"])
    node.unreachable.add("org-1")  # its certificate failed the check
    calls = []

    def tell(peers, cause):
        calls.append(set(peers))
        if len(calls) == 1:  # the abort from the server arrives meanwhile
            node._on_message(_abort_from("server", "org-0"), 10)
        return set()  # nobody reached: the server has exited

    node._tell = tell
    lines = []
    started = time.monotonic()
    node.abort_all("org-0: bad certificate of org-1", log=lines.append)
    assert time.monotonic() - started < 5.0  # not STARTUP
    assert "server" in node.aborted_by
    assert lines == []  # nobody is late: no 'staying reachable' line


def test_a_peer_that_never_spoke_is_still_waited_for():
    """Without the crossed abort the rule is unchanged: the late server is
    retried (and the line says so) until it answers ABORTED."""
    node = _node("org-0", ["server"])
    calls = []

    def tell(peers, cause):
        calls.append(set(peers))
        if len(calls) == 3:  # the server comes up and is told
            return {"server"}
        return set()

    node._tell = tell
    lines = []
    node.abort_all("org-0: bad data", log=lines.append)
    assert len(calls) == 3
    assert len(lines) == 1 and "to tell server (not reached yet)" in lines[0]


def test_an_abort_received_before_the_failure_makes_it_a_relay():
    """The abort came first: this node relays it, tries once, never waits."""
    node = _node("org-0", ["server", "org-1"])
    node._on_message(_abort_from("org-1", "org-0"), 10)
    calls = []
    node._tell = lambda peers, cause: calls.append(set(peers)) or set()
    started = time.monotonic()
    node.abort_all("org-1 failed", log=lambda line: None)
    assert calls == [{"server"}]  # the origin is not told its own abort
    assert time.monotonic() - started < 5.0
