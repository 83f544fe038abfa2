"""One participant on the network: its endpoint, its peers, its inbox, aborts.

A :class:`Node` delivers messages between named participants over
:mod:`~skdp.vertical.federated._transport` and turns every failure into one
:class:`FederatedError` whose message names the cause:

- startup: every peer must answer within ``timeouts.startup``; before its first
  ping, each peer's certificate is checked for its expected DNS name, and for
  naming no other participant (:func:`~._tls.check_peer_name`). A TLS failure,
  a wrong CA, a wrong name or a certificate naming two participants fails at
  once with the reason, and so does a peer that answers that the run
  was aborted (with the peer's cause);
- every call has a deadline (``timeouts.call`` plus one second per 5 MB) and a
  watchdog: a send is cancelled as soon as the run is aborted or past the
  protocol deadline, and a connection whose peer stops acknowledging keepalive
  pings for ``timeouts.call`` seconds fails its calls (a frozen peer);
- liveness: a background thread pings the peers it watches every
  ``timeouts.heartbeat`` seconds; a peer that stops answering fails the run;
- an ``"abort"`` message from any peer fails the run with the peer's cause;
- the whole run is bounded by ``timeouts.protocol``.

On failure the node answers every further call with the cause (``ABORTED``),
sends an abort (with the cause) to every peer it knows, and stops its endpoint;
nothing is released. A failure *before every peer has answered* (a bad data
file, a refused certificate) keeps the endpoint up and retries the peers not yet
told until ``timeouts.startup`` (counted from the node's start) has passed, so
that a peer started later learns the cause at its first contact instead of
waiting out ``startup``.

Messages on the wire carry *role* names (``"server"``, ``"party 0"``, ...) or
participant names; ``hosts`` maps each to the participant (certificate name) that
may send as it, and every delivered message's sender is checked against the
caller's certificate, which must name exactly one participant: the one hosting
the sender.
"""

import queue
import re
import socket
import ssl
import sys
import threading
import time
from collections import deque

from skdp.vertical._messages import ABORT, Message, ProtocolError
from skdp.vertical.federated._tls import (
    IdentityError,
    check_peer_name,
    named_participants,
)
from skdp.vertical.federated._transport import Endpoint, Peer, TransportError

__all__ = ["FederatedError", "Node"]

CONTROL = "runtime"  # step of runtime messages: done, released
# a ping answered with one of these fails the startup at once; anything else
# (a peer not up yet, a slow handshake on a loaded machine) is retried: TLS
# problems were found by the handshake check before the first ping
_FATAL_CODES = ("PERMISSION_DENIED", "ABORTED", "INVALID_ARGUMENT")
#: Seconds the aborts may take to reach the peers, all together (an abort is
#: small: a live peer acknowledges it at once; a frozen one never does, and
#: must not hold the others up).
ABORT_SECONDS = 2.0
#: Seconds a failed heartbeat waits for the peer's own abort message (so that a
#: peer that aborted and exited is reported with its cause, not as lost).
ABORT_GRACE = 1.0


#: OpenSSL's reasons for a reply that is no TLS at all (an HTTP or plaintext
#: gRPC server, SSH, ...): the peer's address leads to another program
_NOT_TLS = {
    "WRONG_VERSION_NUMBER",
    "PACKET_LENGTH_TOO_LONG",
    "RECORD_LAYER_FAILURE",
    "UNKNOWN_PROTOCOL",
    "HTTP_REQUEST",
    "HTTPS_PROXY_REQUEST",
}
_ORIGIN = re.compile(r"^[^\s:]+ aborted the run: ")


def abort_text(sender, cause):
    """How this participant reports ``sender``'s abort with ``cause``.

    The cause names its origin once: a relayed abort (``"bank aborted the run:
    ..."`` passed on by the server) is shown as it is, and a cause that starts
    with the sender's own name (``"server: no answer ..."``) loses the repeat.

    Examples
    --------
    >>> abort_text("server", "server: no answer within 60 s from bank")
    'server aborted the run: no answer within 60 s from bank'
    >>> abort_text("server", "bank aborted the run: its config has an error")
    'bank aborted the run: its config has an error'
    """
    cause = str(cause)
    if _ORIGIN.match(cause):
        return cause
    if cause.startswith(f"{sender}: "):
        cause = cause[len(sender) + 2 :]
    return f"{sender} aborted the run: {cause}"


def _unreachable(exc, address, timeout):
    """Why a TCP connection to ``address`` failed, in words (``exc``: the
    ``OSError`` of the connection or of the first handshake read)."""
    if isinstance(exc, ConnectionRefusedError):
        return f"nothing listens at {address} (connection refused)"
    if isinstance(exc, socket.gaierror):
        return f"the host of {address} cannot be resolved ({exc.strerror or exc})"
    if isinstance(exc, TimeoutError | socket.timeout):
        return (
            f"no reply from {address} within {timeout:g} s (a wrong host, a "
            "firewall that drops the packets, or a machine too busy to answer)"
        )
    if isinstance(exc, ConnectionResetError) and "before its TLS" in str(exc):
        return (
            f"{address} closed the connection before its TLS handshake (its "
            "connection cap is full, or what listens there is no skdp "
            "participant)"
        )
    return f"cannot connect to {address} ({exc.strerror or exc})"


class FederatedError(ProtocolError):
    """The federated run failed or was aborted; nothing was released.

    ``public`` (optional): the text the peers receive when it differs from the
    message (which may name this participant's own files, see :mod:`._errors`).
    """

    def __init__(self, message, public=None):
        super().__init__(message)
        self.public = public


class Node:
    """A participant: endpoint, pinned channels to its peers, inbox.

    Parameters
    ----------
    name : str
        This participant's (certificate) name.
    listen : str
    peers : dict
        ``{participant name: address}``.
    tls : TLSConfig
        Paths of the CA certificate, this participant's certificate and key.
    timeouts : Timeouts
    max_message_bytes : int

    Raises
    ------
    ListenError
        The listen address cannot be bound.
    """

    def __init__(self, name, listen, peers, tls, timeouts, max_message_bytes):
        self.name = name
        self.timeouts = timeouts
        self.tls = tls
        self.hosts = {name: name, **{p: p for p in peers}}  # sender -> participant
        self._inbox = queue.Queue()
        self._pending = deque()
        self._abort = None  # (sender, cause)
        self._stopped = threading.Event()
        self._watched = set()
        self._lock = threading.Lock()
        self.reached = set()  # peers that answered a ping
        self.unreachable = set()  # peers whose TLS handshake check failed
        self.aborted_by = set()  # peers that sent an abort: they know already
        self.bytes_received = 0
        self.messages_received = 0
        started = time.monotonic()
        self.deadline = started + timeouts.protocol
        self.startup_deadline = started + timeouts.startup
        ca, cert, key = tls.read()
        self._ca = ca
        keepalive = (timeouts.heartbeat, timeouts.call)
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
            admits=self._admits,
            keepalive=keepalive,
            max_workers=max(8, 2 * len(peers) + 4),
            handshake_timeout=timeouts.handshake,
            n_peers=len(peers),
        )
        self.peers = {
            p: Peer(
                name,
                p,
                addr,
                ca,
                cert,
                key,
                timeouts.call,
                max_message_bytes,
                keepalive=keepalive,
            )
            for p, addr in peers.items()
        }
        self.endpoint.start()

    # ---------------------------------------------------------- receiving
    @property
    def participants(self):
        """Every participant this node knows (itself included)."""
        return set(self.hosts.values())

    def _authorized(self, sender, cert_names):
        """The caller may send as ``sender``: its certificate names exactly one
        participant, the one hosting ``sender`` (not this node)."""
        host = self.hosts.get(sender)
        named = named_participants(cert_names, self.participants)
        return host is not None and named == [host] and host != self.name

    def _admits(self, cert_names):
        """A caller is admitted only with a certificate that names exactly one
        participant, another than this node."""
        named = named_participants(cert_names, self.participants)
        return len(named) == 1 and named[0] != self.name

    def _on_message(self, message, nbytes):
        with self._lock:
            self.bytes_received += nbytes
            self.messages_received += 1
        if message.step == ABORT:
            sender = self.hosts.get(message.sender, message.sender)
            self.aborted_by.add(sender)
            if self._abort is None:
                cause = message.payload.get("cause", "no cause given")
                self._abort = (sender, cause)
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

    def _stop_reason(self):
        """Why a call in flight must stop now (an abort, the deadline), or None."""
        if self._abort is not None:
            return self._abort_message()
        if time.monotonic() > self.deadline:
            return f"the run exceeded timeouts.protocol ({self.timeouts.protocol:g} s)"
        return None

    def _abort_message(self):
        sender, cause = self._abort
        if sender == self.name:  # found here (the liveness thread): no abort
            return f"{self.name}: {cause}"
        return abort_text(sender, cause)

    def check(self):
        """Raise if a peer aborted or the liveness thread found a failure."""
        if self._abort is not None:
            raise FederatedError(self._abort_message())

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
            return peer.send(message, stop=self._stop_reason)
        except (TransportError, ValueError) as exc:
            self.check()  # an abort that stopped the send is the cause
            raise FederatedError(f"{self.name}: {exc}") from None

    # ---------------------------------------------------------- startup / liveness
    def _check_name(self, p, refusals, reasons):
        """The peer's certificate names ``p`` as a DNS SAN (one TLS handshake);
        False while it does not accept connections yet (``reasons[p]`` then
        says why). ``refusals[p]`` counts handshakes the peer ended: three in a
        row mean it refuses this participant's certificate (once may be a peer
        shutting down), or, for a reply that is no TLS, that another program
        listens at the peer's address."""
        peer = self.peers[p]
        timeout = min(15.0, self.timeouts.call)  # a loaded machine is slow
        try:
            check_peer_name(
                peer.address,
                p,
                self._ca,
                self.tls.cert,
                self.tls.key,
                timeout=timeout,
                participants=self.participants,
            )
        except IdentityError as exc:
            self.unreachable.add(p)  # not p's alone: no retries to it
            raise FederatedError(f"{self.name}: refusing {p}: {exc}") from None
        except ssl.SSLCertVerificationError as exc:
            self.unreachable.add(p)  # no abort can reach it either
            raise FederatedError(
                f"{self.name}: cannot authenticate {p} at {peer.address}: "
                f"{exc.verify_message} (its certificate must come from this "
                f"participant's CA and carry {p!r} as a DNS subject alternative "
                "name; the subject CN does not count)"
            ) from None
        except ssl.SSLError as exc:
            refusals[p] = refusals.get(p, 0) + 1
            not_tls = exc.reason in _NOT_TLS
            reasons[p] = (
                f"what listens at {peer.address} does not speak TLS ({exc.reason})"
                if not_tls
                else f"{peer.address} ended the TLS handshake ({exc.reason})"
            )
            if refusals[p] < 3:
                return False
            self.unreachable.add(p)
            if not_tls:
                raise FederatedError(
                    f"{self.name}: cannot reach {p}: what listens at "
                    f"{peer.address} does not speak TLS ({exc.reason}): another "
                    f"program (or an old process run without TLS), not {p}'s "
                    "skdp participant, holds that port. Stop it, or correct "
                    f"{p}'s address in {self.name}'s config"
                ) from None
            raise FederatedError(
                f"{self.name}: {p} at {peer.address} ended the TLS handshake "
                f"({exc.reason}): it does not accept this participant's "
                "certificate (issued by another CA, expired, not yet valid, or "
                "without the name as a DNS subject alternative name)"
            ) from None
        except OSError as exc:
            reasons[p] = _unreachable(exc, peer.address, timeout)
            return False
        refusals.pop(p, None)
        return True

    def wait_for_peers(self, names=None, programs=None):
        """Block until every peer in ``names`` answers a ping (pinned TLS).

        ``programs``: ``{peer: "skdp-party" or "skdp-server"}``, for the
        message naming what to start when a peer never answers."""
        names = list(self.peers if names is None else names)
        limit = time.monotonic() + self.timeouts.startup
        waiting = set(names)
        checked, refusals = set(), {}
        last = {}
        while waiting:
            self.check()
            for p in sorted(waiting):
                if p not in checked:
                    if not self._check_name(p, refusals, last):
                        continue
                    checked.add(p)
                try:
                    answer = self.peers[p].ping(timeout=min(5.0, self.timeouts.call))
                except TransportError as exc:
                    text = str(exc)
                    last[p] = text
                    if exc.code == "ABORTED":  # relayed like an abort message
                        self._check_earlier_run(p, exc.detail)
                        self._abort = (p, exc.detail)
                        self.check()
                    if exc.code in _FATAL_CODES:
                        raise FederatedError(
                            f"{self.name}: cannot authenticate {p}: {text}"
                        ) from None
                    continue
                if answer != p:
                    raise FederatedError(
                        f"{self.name}: {p} answered as {answer!r}; refusing."
                    )
                waiting.discard(p)
                self.reached.add(p)
            if waiting and time.monotonic() > limit:
                raise FederatedError(
                    f"{self.name}: no answer within {self.timeouts.startup:g} s "
                    "(timeouts.startup) from "
                    + "; ".join(
                        f"{p}: {last.get(p, 'no reply')}" for p in sorted(waiting)
                    )
                    + self._start_hint(waiting, last, programs or {})
                )
            if waiting:
                time.sleep(0.2)

    def _check_earlier_run(self, p, cause):
        """A peer that answers at startup that *this* participant aborted its
        run is still ending an earlier run (this participant was restarted):
        say so, rather than blame this run on it."""
        prefix = f"{self.name} aborted the run: "
        if str(cause).startswith(prefix):
            raise FederatedError(
                f"{self.name}: {p} is still ending an earlier run, which "
                f"{self.name} aborted ({str(cause)[len(prefix) :]}); start {p} "
                f"again once it has exited, then {self.name}"
            )

    @staticmethod
    def _start_hint(waiting, last, programs):
        """What to do about peers that never accepted a connection."""
        down = sorted(p for p in waiting if "nothing listens" in last.get(p, ""))
        if not down:
            return ""
        groups = {}
        for p in down:
            groups.setdefault(programs.get(p, "the participant"), []).append(p)
        who = "; ".join(
            f"{program} for {' and '.join(names)}" for program, names in groups.items()
        )
        return (
            f". Start {who}: a participant listens only while it runs (it "
            "exits after every run, released or aborted), and one whose "
            "config has an error stops before it listens (exit status 2; its "
            "own output names the key)"
        )

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
                    if self._stopped.wait(min(ABORT_GRACE, self.timeouts.call)):
                        return
                    if p in self._watched and self._abort is None:
                        self._abort = (self.name, f"lost contact with {p}: {exc}")
                        self._inbox.put(None)
                    return

    # ---------------------------------------------------------- shutdown
    def _tell(self, peers, cause):
        """Send the abort to ``peers`` in parallel; the set of those reached."""
        told = set()
        threads = []
        for p in peers:
            msg = Message(ABORT, self.name, p, "abort", {"cause": str(cause)})

            def send(p=p, msg=msg):
                try:
                    self.peers[p].send(msg, timeout=ABORT_SECONDS)
                    told.add(p)
                except TransportError as exc:
                    if exc.code == "ABORTED":  # it has failed already: it knows
                        told.add(p)
                except Exception:  # a dead peer cannot be told
                    pass

            t = threading.Thread(target=send, daemon=True)
            t.start()
            threads.append(t)
        limit = time.monotonic() + ABORT_SECONDS
        for t in threads:
            t.join(max(0.0, limit - time.monotonic()))
        return set(told)

    def abort_all(self, cause, log=None, headline=None):
        """Tell every peer the run is aborted, with ``cause`` (public text).

        From now on the endpoint answers every call with ``ABORTED: cause``.
        When the failure started here (not an abort relayed from a peer), peers
        that never answered a ping (the failure came during startup) are
        retried until ``timeouts.startup`` has passed, the endpoint staying up
        meanwhile; ``log(line)`` (default: stderr) says so once. A relaying
        participant tries once: the origin, which knows every participant,
        keeps telling the late ones. ``headline``: what that line says
        happened (default: the run was aborted, with the cause).
        """
        self.endpoint.failure = str(cause)
        origin = self._abort[0] if self._abort else None
        pending = set(self.peers) - {origin}
        pending -= self._tell(pending, cause)
        # a peer whose own abort arrived while this one failed (the two crossed)
        # knows the run is over and may have exited: never wait for it
        late = pending - self.reached - self.unreachable - self.aborted_by
        relayed = origin is not None and origin != self.name
        if relayed or not late or time.monotonic() >= self.startup_deadline:
            return
        left = self.startup_deadline - time.monotonic()
        log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        log(
            f"{self.name}: {headline or f'run aborted ({cause})'}; staying "
            f"reachable up to "
            f"{left:.0f} s to tell {', '.join(sorted(late))} (not reached yet)"
        )
        while late and time.monotonic() < self.startup_deadline:
            if self._stopped.wait(0.5):
                return
            late -= self.endpoint.failure_seen_by  # answered ABORTED meanwhile
            late -= self.aborted_by
            late -= self._tell(late, cause)

    def close(self):
        """Stop the endpoint and the channels, in about a second at most (a
        call stuck on a frozen peer can hold a channel's close much longer:
        the channels close in the background)."""
        self._stopped.set()
        closing = threading.Thread(
            target=lambda: [peer.close() for peer in self.peers.values()], daemon=True
        )
        closing.start()
        self.endpoint.stop(grace=0.2, wait=0.8)
        closing.join(0.2)

    def traffic(self):
        """``{"sent": bytes, "received": bytes, "messages_sent", ...}``."""
        return {
            "sent": sum(p.bytes_sent for p in self.peers.values()),
            "received": self.bytes_received,
            "messages_sent": sum(p.messages_sent for p in self.peers.values()),
            "messages_received": self.messages_received,
            "sent_to": {p: peer.bytes_sent for p, peer in self.peers.items()},
        }
