"""One participant on the network: its endpoint, its peers, its inbox, aborts.

A :class:`Node` delivers messages between named participants over
:mod:`~skdp.vertical.federated._transport` and turns every failure into one
:class:`FederatedError` whose message names the cause:

- startup: every peer must answer within ``timeouts.startup`` (a TLS failure, a
  wrong CA or a wrong name fails at once, with gRPC's reason);
- every call has a deadline (``timeouts.call`` plus one second per 5 MB);
- liveness: a background thread pings the peers it watches every
  ``timeouts.heartbeat`` seconds; a peer that stops answering fails the run;
- an ``"abort"`` message from any peer fails the run with the peer's cause;
- the whole run is bounded by ``timeouts.protocol``.

On failure the node sends an abort (with the cause) to every peer it knows and
stops its endpoint; nothing is released.

Messages on the wire carry *role* names (``"server"``, ``"party 0"``, ...) or
participant names; ``hosts`` maps each to the participant (certificate name) that
may send as it, and every delivered message's sender is checked against the
caller's certificate.
"""

import queue
import threading
import time
from collections import deque

from skdp.vertical._messages import ABORT, Message, ProtocolError
from skdp.vertical.federated._transport import Endpoint, Peer, TransportError

__all__ = ["FederatedError", "Node"]

CONTROL = "runtime"  # step of runtime messages: done, released
_FATAL_TLS = (
    "handshake",
    "hostname verification",
    "certificate",
    "permission_denied",
    "ssl",
    "tls",
)


class FederatedError(ProtocolError):
    """The federated run failed or was aborted; nothing was released."""


class Node:
    """A participant: endpoint, pinned channels to its peers, inbox.

    Parameters
    ----------
    name : str
        This participant's (certificate) name.
    listen : str
    peers : dict
        ``{participant name: address}``.
    pem : tuple of bytes
        ``(ca, cert, key)``.
    timeouts : Timeouts
    max_message_bytes : int
    """

    def __init__(self, name, listen, peers, pem, timeouts, max_message_bytes):
        self.name = name
        self.timeouts = timeouts
        self.hosts = {name: name, **{p: p for p in peers}}  # sender -> participant
        self._inbox = queue.Queue()
        self._pending = deque()
        self._abort = None  # (sender, cause)
        self._stopped = threading.Event()
        self._watched = set()
        self._lock = threading.Lock()
        self.bytes_received = 0
        self.messages_received = 0
        self.deadline = time.monotonic() + timeouts.protocol
        ca, cert, key = pem
        self.endpoint = Endpoint(
            name,
            listen,
            ca,
            cert,
            key,
            self._authorized,
            self._on_message,
            max_message_bytes,
            is_local=lambda receiver: self.hosts.get(receiver) == self.name,
        )
        self.peers = {
            p: Peer(name, p, addr, ca, cert, key, timeouts.call, max_message_bytes)
            for p, addr in peers.items()
        }
        self.endpoint.start()

    # ---------------------------------------------------------- receiving
    def _authorized(self, sender, cert_names):
        host = self.hosts.get(sender)
        return host is not None and host in cert_names and host != self.name

    def _on_message(self, message, nbytes):
        with self._lock:
            self.bytes_received += nbytes
            self.messages_received += 1
        if message.step == ABORT:
            if self._abort is None:
                cause = message.payload.get("cause", "no cause given")
                self._abort = (self.hosts.get(message.sender, message.sender), cause)
            self._inbox.put(None)  # wake the main loop
            return
        self._inbox.put(message)

    def next_message(self, match=lambda m: True, timeout=None):
        """The first queued message with ``match(message)``; others wait.

        Raises :class:`FederatedError` on an abort, a failed peer or a timeout.
        """
        for i, message in enumerate(self._pending):
            if match(message):
                del self._pending[i]
                return message
        limit = self.deadline if timeout is None else time.monotonic() + timeout
        limit = min(limit, self.deadline)
        while True:
            self.check()
            left = limit - time.monotonic()
            if left <= 0:
                raise FederatedError(
                    f"{self.name}: timed out waiting for the other participants."
                )
            try:
                message = self._inbox.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if message is None:
                continue
            if match(message):
                return message
            self._pending.append(message)

    def check(self):
        """Raise if a peer aborted or the liveness thread found a failure."""
        if self._abort is not None:
            sender, cause = self._abort
            raise FederatedError(f"{sender} aborted the run: {cause}")

    # ---------------------------------------------------------- sending
    def send(self, message, to=None):
        """Deliver ``message`` to participant ``to`` (default: its receiver's host)."""
        self.check()
        to = to or self.hosts.get(message.receiver)
        if to not in self.peers:
            raise FederatedError(
                f"{self.name}: no peer hosts {message.receiver!r} (message "
                f"{message.kind!r}, step {message.step!r})."
            )
        peer = self.peers[to]
        try:
            return peer.send(message)
        except (TransportError, ValueError) as exc:
            raise FederatedError(f"{self.name}: {exc}") from None

    # ---------------------------------------------------------- startup / liveness
    def wait_for_peers(self, names=None):
        """Block until every peer in ``names`` answers a ping (pinned TLS)."""
        names = list(self.peers if names is None else names)
        limit = time.monotonic() + self.timeouts.startup
        waiting = set(names)
        last = {}
        while waiting:
            self.check()
            for p in sorted(waiting):
                try:
                    answer = self.peers[p].ping(timeout=min(5.0, self.timeouts.call))
                except TransportError as exc:
                    text = str(exc)
                    last[p] = text
                    if any(w in text.lower() for w in _FATAL_TLS):
                        raise FederatedError(
                            f"{self.name}: cannot authenticate {p}: {text}"
                        ) from None
                    continue
                if answer != p:
                    raise FederatedError(
                        f"{self.name}: {p} answered as {answer!r}; refusing."
                    )
                waiting.discard(p)
            if waiting and time.monotonic() > limit:
                raise FederatedError(
                    f"{self.name}: no answer within {self.timeouts.startup:g} s from "
                    + "; ".join(f"{p} ({last.get(p, 'no reply')})" for p in waiting)
                )
            if waiting:
                time.sleep(0.2)

    def watch(self, names):
        """Ping ``names`` in the background; a lost peer fails the run."""
        self._watched = set(names)
        threading.Thread(target=self._heartbeat, daemon=True).start()

    def unwatch(self, name=None):
        if name is None:
            self._watched = set()
        else:
            self._watched.discard(name)

    def _heartbeat(self):
        while not self._stopped.wait(self.timeouts.heartbeat):
            for p in sorted(self._watched):
                try:
                    self.peers[p].ping(timeout=self.timeouts.call)
                except TransportError as exc:
                    # a peer that aborted tells everyone why before it exits: give
                    # its abort message a moment to arrive, so the run fails with
                    # the real cause rather than with "lost contact"
                    if self._stopped.wait(min(2.0, self.timeouts.call)):
                        return
                    if p in self._watched and self._abort is None:
                        self._abort = (self.name, f"lost contact with {p}: {exc}")
                        self._inbox.put(None)
                    return

    # ---------------------------------------------------------- shutdown
    def abort_all(self, cause):
        """Tell every peer the run is aborted (best effort, in parallel)."""
        origin = self._abort[0] if self._abort else None
        threads = []
        for p, peer in self.peers.items():
            if p == origin:
                continue
            msg = Message(ABORT, self.name, p, "abort", {"cause": str(cause)})

            def send(peer=peer, msg=msg):
                try:
                    peer.send(msg, timeout=3.0)
                except Exception:  # a dead peer cannot be told
                    pass

            t = threading.Thread(target=send, daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join(4.0)

    def close(self):
        self._stopped.set()
        self.endpoint.stop(grace=0.5)
        for peer in self.peers.values():
            peer.close()

    def traffic(self):
        """``{"sent": bytes, "received": bytes, "messages_sent", ...}``."""
        return {
            "sent": sum(p.bytes_sent for p in self.peers.values()),
            "received": self.bytes_received,
            "messages_sent": sum(p.messages_sent for p in self.peers.values()),
            "messages_received": self.messages_received,
            "sent_to": {p: peer.bytes_sent for p, peer in self.peers.items()},
        }
