"""gRPC with mutual TLS between named participants.

Every participant runs one gRPC server (its *endpoint*) with two methods on raw
bytes (generic handlers, no generated code):

``/skdp.Federated/Deliver`` (client streaming)
    an encoded message (a serialized protocol-buffers ``skdp.wire.Message``,
    :mod:`skdp.vertical.federated._wire`) in chunks of at
    most :data:`CHUNK_BYTES`, answered with an empty acknowledgement once it is
    queued;
``/skdp.Federated/Ping``
    liveness: the caller's name in, the endpoint's name out.

**Names are DNS SANs.** Both directions authenticate with certificates of the
configured CA (``grpc.ssl_server_credentials(..., require_client_auth=True)``
and ``grpc.ssl_channel_credentials(ca, key, cert)``). A server takes the caller's
names from the DNS subject-alternative names of its verified certificate
(``peer_dns`` in gRPC's auth context); the subject CN is never a name. A client
points gRPC's host-name check at the peer's *expected name* with
``grpc.ssl_target_name_override``; :func:`~._tls.check_peer_name` makes the same
check at startup without gRPC's CN fallback (see :mod:`._tls`). A certificate
from another CA fails the TLS handshake in both directions.

**Authentication before buffering.** gRPC reads a whole message before a
handler runs, so no message may be large: the endpoint accepts messages of at
most :data:`CHUNK_BYTES` (``grpc.max_receive_message_length``), and a
protocol message travels as a stream of such chunks. The ``Deliver`` handler
runs when the call starts, before any chunk is read, and refuses
(``PERMISSION_DENIED``) a caller whose certificate names no expected participant:
such a caller makes the endpoint hold at most one chunk plus gRPC's flow-control
window. An expected participant may have at most ``max_message_bytes`` in flight
(``RESOURCE_EXHAUSTED`` beyond); once a frame is complete, its sender must be a
name the caller's certificate carries (``authorize``). ``Ping`` requests are at
most :data:`MAX_PING_BYTES`.

**Liveness.** Channels and the server send HTTP/2 keepalive pings every
``keepalive[0]`` seconds, with or without calls in flight, and close a connection
whose peer has not acknowledged one within ``keepalive[1]`` seconds: a frozen
peer (SIGSTOP, a hung VM, a half-open link) fails every call on that connection
with ``UNAVAILABLE``, even a send blocked in flow control, which a deadline alone
does not end. As a second guard, every call is waited for in slices
(:meth:`Peer.send`): it is cancelled once its deadline has passed by
:data:`WATCHDOG_GRACE` seconds or as soon as ``stop()`` gives a reason.

**Strangers before authentication.** A caller without a certificate of the
CA cannot finish the TLS handshake, so all a stranger can hold is a connection
whose handshake never ends (a slow-loris: one byte every few seconds). Two
limits act before any authentication (gRPC's C core owns the listening
socket; these are its own server options):

- a *handshake deadline* (``handshake_timeout``, ``grpc.server_handshake_timeout_ms``,
  gRPC's default is 120 s): a connection that has not completed the TLS
  handshake and the HTTP/2 preface within it is closed;
- a *connection cap* (``max_connections``, ``grpc.max_allowed_incoming_connections``):
  a connection accepted beyond it is closed at once. By default
  (:func:`connection_cap`) the cap leaves :data:`RESERVED_DESCRIPTORS`
  descriptors (plus four per peer) of the process's ``RLIMIT_NOFILE`` to the
  process itself, so strangers never exhaust its descriptors: its own
  channels, its startup handshakes and its output files always find one, and
  the listening socket keeps accepting (a full descriptor table would leave
  every later connection, a participant's too, in the kernel's backlog).

So strangers can delay a participant's first connection by at most the
handshake deadline once they stop opening connections; a participant's
established connection is never affected. :func:`raise_descriptor_limit`
(called by the console scripts) raises the soft ``RLIMIT_NOFILE`` to the hard
limit first.

**One listener per port.** The endpoint turns gRPC's ``SO_REUSEPORT`` off
(``grpc.so_reuseport = 0``), so a second process cannot bind the same port and
share its calls; a failed bind raises :class:`ListenError` naming the address.
"""

import errno
import queue
import resource
import socket
import threading
import time
from concurrent import futures

from skdp.vertical.federated._tls import dns_names
from skdp.vertical.federated._wire import decode_message, encode_message

__all__ = [
    "CHUNK_BYTES",
    "Endpoint",
    "ListenError",
    "Peer",
    "TransportError",
    "connection_cap",
    "peer_names",
    "raise_descriptor_limit",
]

SERVICE = "skdp.Federated"
DEFAULT_MAX_MESSAGE_BYTES = 2**30
#: Largest gRPC message an endpoint reads before authenticating: a frame is
#: streamed in chunks of this size (1 MiB: large enough that the per-chunk
#: overhead is negligible, small enough to bound what a stranger can make an
#: endpoint hold).
CHUNK_BYTES = 2**20
#: Largest ``Ping`` request (a participant name).
MAX_PING_BYTES = 256
#: Largest answer a client reads (an empty acknowledgement or a name).
_MAX_ANSWER_BYTES = 64 * 2**10
#: Seconds past a call's deadline before the watchdog cancels it.
WATCHDOG_GRACE = 1.0
#: Smallest keepalive interval (the server accepts pings at twice this rate).
_MIN_KEEPALIVE_MS = 1000
#: Seconds a connection may take for its TLS handshake (and HTTP/2 preface)
#: before the endpoint closes it.
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
#: Descriptors the default connection cap leaves to the process itself (its
#: channels, startup handshakes, files and gRPC's own), besides four per peer.
RESERVED_DESCRIPTORS = 64
#: Smallest connection cap (a process with very few descriptors).
_MIN_CONNECTIONS = 16


def raise_descriptor_limit():
    """Raise this process's soft ``RLIMIT_NOFILE`` to its hard limit (at most
    2**20 when the hard limit is unlimited); the soft limit afterwards.

    A soft limit below the hard one (1024 on many systems) would make the
    connection cap needlessly small. Never raises: a limit it cannot change is
    left as it is.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = 2**20 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def connection_cap(n_peers=0):
    """Incoming connections an endpoint accepts at once by default: the soft
    ``RLIMIT_NOFILE`` less :data:`RESERVED_DESCRIPTORS` and four per peer (at
    least 16; at most 2**20)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        soft = 2**20
    cap = soft - RESERVED_DESCRIPTORS - 4 * int(n_peers)
    return int(min(max(_MIN_CONNECTIONS, cap), 2**20))


class TransportError(RuntimeError):
    """A call to a peer failed (unreachable, refused, TLS, timeout).

    ``code`` is the gRPC status name (``"UNAVAILABLE"``, ...) or None,
    ``detail`` the peer's or gRPC's own text.
    """

    def __init__(self, message, code=None, detail=""):
        super().__init__(message)
        self.code = code
        self.detail = detail


class ListenError(TransportError):
    """The endpoint cannot listen on its address (port in use, not local)."""


def _keepalive_options(keepalive):
    interval, timeout = keepalive
    return [
        ("grpc.keepalive_time_ms", max(_MIN_KEEPALIVE_MS, int(interval * 1000))),
        ("grpc.keepalive_timeout_ms", max(1000, int(timeout * 1000))),
        ("grpc.keepalive_permit_without_calls", 1),
        # keep pinging while a send is blocked (no data frames go out then)
        ("grpc.http2.max_pings_without_data", 0),
    ]


def peer_names(context):
    """The DNS subject-alternative names of the caller's verified certificate.

    Never the subject CN, never IP or other SAN types. gRPC's auth context has
    them as ``peer_dns``; older gRPC versions without it: parsed from the
    certificate (``x509_pem_cert``) with ``cryptography``.
    """
    auth = context.auth_context()
    if "peer_dns" in auth:
        return [n.decode() for n in auth["peer_dns"]]
    pem = auth.get("x509_pem_cert", [b""])[0]
    return dns_names(pem) if pem else []


def _bind_problem(address):
    """Why ``address`` cannot be bound, from the operating system."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((host, int(port)))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return f"port {port} is already in use (another process listens on it)"
        return f"{exc.strerror or exc}"
    return "gRPC could not bind it"


class Endpoint:
    """This participant's gRPC server.

    Parameters
    ----------
    name : str
        This participant's name (a DNS SAN of its certificate).
    address : str
        ``host:port`` to listen on (port 0: any free port, see ``port``).
    ca, cert, key : bytes
        PEM: the CA certificate, this participant's certificate and key.
    authorize : callable
        ``authorize(sender, certificate_names) -> bool``: may a caller whose
        certificate has the DNS names ``certificate_names`` send as ``sender``?
    admits : callable
        ``admits(certificate_names) -> bool``: is the caller an expected
        participant at all? Asked before a single chunk is read.
    on_message : callable
        ``on_message(message, nbytes)`` for each accepted message (called on a
        gRPC thread; it must only queue).
    max_message_bytes : int
        Largest frame, and most bytes one caller may have in flight.
    is_local : callable or None
        ``is_local(receiver)``: is ``receiver`` hosted here (default: equals
        ``name``)? Messages for anyone else are refused.
    keepalive : (float, float)
        Seconds between keepalive pings, and until an unanswered one closes the
        connection.
    max_workers : int
        Threads serving calls (a ``Deliver`` holds one while it streams).
    handshake_timeout : float
        Seconds a connection may take to complete its TLS handshake before it
        is closed (a stranger that stalls it holds a descriptor no longer).
    max_connections : int or None
        Incoming connections held at once, any further one is closed at once;
        None: :func:`connection_cap` with ``n_peers``.
    n_peers : int
        Peers of this participant (for the default ``max_connections``).

    Raises
    ------
    ListenError
        The address cannot be bound (the message says why: port in use, ...).
    """

    def __init__(
        self,
        name,
        address,
        ca,
        cert,
        key,
        authorize,
        on_message,
        max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
        is_local=None,
        *,
        admits=None,
        keepalive=(2.0, 20.0),
        max_workers=8,
        handshake_timeout=DEFAULT_HANDSHAKE_TIMEOUT,
        max_connections=None,
        n_peers=0,
    ):
        import grpc

        self.name = name
        self.handshake_timeout = float(handshake_timeout)
        self.max_connections = (
            connection_cap(n_peers) if max_connections is None else int(max_connections)
        )
        self._authorize = authorize
        self._admits = admits or (lambda names: bool(names))
        self._is_local = is_local or (lambda receiver: receiver == name)
        self._on_message = on_message
        self._max = int(max_message_bytes)
        self._inflight = {}  # certificate names -> bytes buffered now
        self._lock = threading.Lock()
        self.failure = None  # set: every call is answered ABORTED with it
        self.failure_seen_by = set()  # DNS names of callers answered so
        self.refused = queue.SimpleQueue()  # reasons of refused calls
        handler = grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "Deliver": grpc.stream_unary_rpc_method_handler(self._deliver),
                "Ping": grpc.unary_unary_rpc_method_handler(self._ping),
            },
        )
        options = _keepalive_options(keepalive) + [
            ("grpc.so_reuseport", 0),
            ("grpc.max_receive_message_length", CHUNK_BYTES),
            ("grpc.max_send_message_length", _MAX_ANSWER_BYTES),
            # clients ping every _MIN_KEEPALIVE_MS or slower, but gRPC's BDP
            # probes are pings too: never close a connection for its pings
            # (a caller already holds a certificate of the CA)
            ("grpc.http2.min_recv_ping_interval_without_data_ms", 500),
            ("grpc.http2.max_ping_strikes", 0),
            # before authentication: a stranger's stalled handshake is closed
            # after handshake_timeout, and never more than max_connections
            # connections hold descriptors (see the module docstring)
            (
                "grpc.server_handshake_timeout_ms",
                max(1, int(self.handshake_timeout * 1000)),
            ),
            ("grpc.max_allowed_incoming_connections", self.max_connections),
        ]
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers),
            handlers=[handler],
            options=options,
            maximum_concurrent_rpcs=4 * max_workers,
        )
        creds = grpc.ssl_server_credentials(
            [(key, cert)], root_certificates=ca, require_client_auth=True
        )
        try:
            self.port = self._server.add_secure_port(address, creds)
        except RuntimeError:
            self.port = 0
        if self.port == 0:
            raise ListenError(f"cannot listen on {address}: {_bind_problem(address)}.")

    def start(self):
        self._server.start()
        return self

    def stop(self, grace=None, wait=5.0):
        """Stop serving (calls in flight are cancelled after ``grace`` s);
        wait at most ``grace + wait`` s for it."""
        self._server.stop(grace).wait((grace or 0) + wait)

    def _refuse(self, context, code, reason):
        self.refused.put(reason)
        context.abort(code, reason)

    def _authenticate(self, context, claimed, names):
        import grpc

        if not self._authorize(claimed, names):
            self._refuse(
                context,
                grpc.StatusCode.PERMISSION_DENIED,
                f"{self.name}: refused a call as {claimed!r:.80} from a certificate "
                f"whose DNS names are {sorted(set(names))}",
            )

    def _check_failed(self, context, names):
        import grpc

        if self.failure is not None:
            self.failure_seen_by.update(names)
            context.abort(grpc.StatusCode.ABORTED, self.failure)

    def _deliver(self, chunks, context):
        import grpc

        names = peer_names(context)
        if not self._admits(names):  # before a single chunk is read
            self._refuse(
                context,
                grpc.StatusCode.PERMISSION_DENIED,
                f"{self.name}: refused a call from a certificate whose DNS names "
                f"{sorted(set(names))} do not name exactly one expected participant",
            )
        self._check_failed(context, names)
        caller = tuple(sorted(set(names)))
        frame = bytearray()
        try:
            for chunk in chunks:
                with self._lock:
                    held = self._inflight.get(caller, 0) + len(chunk)
                    if held <= self._max:
                        self._inflight[caller] = held
                if held > self._max:
                    self._refuse(
                        context,
                        grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"{self.name}: more than max_message_bytes "
                        f"({self._max}) in flight from {list(caller)}",
                    )
                frame += chunk
        finally:
            with self._lock:
                left = self._inflight.get(caller, 0) - len(frame)
                if left > 0:
                    self._inflight[caller] = left
                else:
                    self._inflight.pop(caller, None)
        try:
            message = decode_message(memoryview(frame), self._max)
        except ValueError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{self.name}: {exc}")
        self._authenticate(context, message.sender, names)
        if not self._is_local(message.receiver):
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{self.name}: message addressed to {message.receiver!r}",
            )
        self._on_message(message, len(frame))
        return b""

    def _ping(self, request, context):
        import grpc

        names = peer_names(context)
        if len(request) > MAX_PING_BYTES:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "ping request too long")
        self._authenticate(context, request.decode(errors="replace"), names)
        self._check_failed(context, names)
        return self.name.encode()


def _chunks(data):
    for start in range(0, len(data), CHUNK_BYTES):
        yield data[start : start + CHUNK_BYTES]


class Peer:
    """A channel to one named peer, pinned to its expected certificate name.

    Parameters
    ----------
    own_name : str
    name : str
        The peer's expected name (must be a DNS SAN of its certificate).
    address : str
        ``host:port``.
    ca, cert, key : bytes
        PEM: the CA certificate, this participant's certificate and key.
    timeout : float
        Deadline of every call, in seconds (a send: plus 1 s per 5 MB).
    max_message_bytes : int
    keepalive : (float, float)
        As for :class:`Endpoint`.
    """

    def __init__(
        self,
        own_name,
        name,
        address,
        ca,
        cert,
        key,
        timeout,
        max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
        *,
        keepalive=(2.0, 20.0),
    ):
        import grpc

        self.own_name, self.name, self.address = own_name, name, address
        self.timeout = float(timeout)
        self._max = int(max_message_bytes)
        creds = grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=key, certificate_chain=cert
        )
        options = _keepalive_options(keepalive) + [
            ("grpc.max_send_message_length", CHUNK_BYTES),
            ("grpc.max_receive_message_length", _MAX_ANSWER_BYTES),
            ("grpc.ssl_target_name_override", name),
            ("grpc.default_authority", name),
            # peers start in any order: retry a refused connection quickly
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1000),
        ]
        self._channel = grpc.secure_channel(address, creds, options=options)
        self._deliver = self._channel.stream_unary(f"/{SERVICE}/Deliver")
        self._ping = self._channel.unary_unary(f"/{SERVICE}/Ping")
        self.bytes_sent = 0
        self.messages_sent = 0
        self._lock = threading.Lock()

    def _error(self, exc, what):
        import grpc

        if isinstance(exc, grpc.RpcError):
            code = exc.code()
            name = code.name if code else "error"
            return TransportError(
                f"{what} {self.name!r} at {self.address} failed: "
                f"{name}: {exc.details()}",
                code=name,
                detail=exc.details() or "",
            )
        return TransportError(f"{what} {self.name!r} at {self.address} failed: {exc}")

    def _wait(self, future, seconds, stop, what):
        """The call's answer; cancel it past its deadline or when ``stop()``
        gives a reason (the watchdog: no call blocks for ever)."""
        import grpc

        limit = time.monotonic() + seconds + WATCHDOG_GRACE
        while True:
            try:
                return future.result(timeout=0.25)
            except grpc.FutureTimeoutError:
                reason = stop() if stop is not None else None
                if reason is None and time.monotonic() < limit:
                    continue
                future.cancel()
                if reason is None:
                    reason = f"no answer within {seconds:.3g} s"
                raise TransportError(
                    f"{what} {self.name!r} at {self.address} stopped: {reason}",
                    code="CANCELLED",
                ) from None
            except grpc.FutureCancelledError:
                raise TransportError(
                    f"{what} {self.name!r} at {self.address} was cancelled",
                    code="CANCELLED",
                ) from None
            except grpc.RpcError as exc:
                raise self._error(exc, what) from None

    def send(self, message, timeout=None, stop=None):
        """Deliver ``message``; raise :class:`TransportError` on any failure.

        ``stop()`` (optional) is asked while the call is in flight; a reason it
        returns cancels the call.
        """
        data = encode_message(message)
        if len(data) > self._max:
            raise TransportError(
                f"a {message.kind!r} message of {len(data)} bytes exceeds "
                f"max_message_bytes ({self._max})",
                code="RESOURCE_EXHAUSTED",
            )
        # the deadline grows with the size: 1 s more per 5 MB
        seconds = (timeout or self.timeout) + len(data) / 5e6
        future = self._deliver.future(_chunks(data), timeout=seconds)
        self._wait(future, seconds, stop, "sending to")
        with self._lock:
            self.bytes_sent += len(data)
            self.messages_sent += 1
        return len(data)

    def ping(self, timeout=None, wait_for_ready=False, stop=None):
        """The peer's name if it answers, else raise :class:`TransportError`."""
        seconds = timeout or self.timeout
        future = self._ping.future(
            self.own_name.encode(), timeout=seconds, wait_for_ready=wait_for_ready
        )
        return self._wait(future, seconds, stop, "reaching").decode(errors="replace")

    def close(self):
        self._channel.close()
