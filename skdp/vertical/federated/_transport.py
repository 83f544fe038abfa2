"""gRPC with mutual TLS between named participants.

Every participant runs one gRPC server (its *endpoint*) with two unary methods on
raw bytes (generic handlers, no generated code):

``/skdp.Federated/Deliver``
    an encoded message (:mod:`skdp.vertical.federated._wire`), answered with an
    empty acknowledgement once it is queued;
``/skdp.Federated/Ping``
    liveness, answered with the endpoint's name.

**Pinning.** Both directions authenticate with certificates of the configured CA
(``grpc.ssl_server_credentials(..., require_client_auth=True)`` and
``grpc.ssl_channel_credentials(ca, key, cert)``). A client checks the server's
name through gRPC's host-name verification, pointed at the peer's *expected name*
with the ``grpc.ssl_target_name_override`` channel option (the address may be an
IP; the certificate must carry the name as a DNS SAN). A server checks the
client's name from the authenticated TLS session (``context.auth_context()``):
the caller's certificate must name the message's sender, and the sender must be a
configured peer; otherwise the call is refused with ``PERMISSION_DENIED``. A
certificate from another CA fails the TLS handshake in both directions.

Every call has a deadline; the message size limits are raised to fit BFV
ciphertexts (``max_message_bytes``, default 1 GiB).
"""

import queue
import threading
from concurrent import futures

from skdp.vertical.federated._wire import decode_message, encode_message

__all__ = ["Endpoint", "Peer", "TransportError"]

SERVICE = "skdp.Federated"
DEFAULT_MAX_MESSAGE_BYTES = 2**30


class TransportError(RuntimeError):
    """A call to a peer failed (unreachable, refused, TLS, timeout)."""


def _options(max_message_bytes):
    return [
        ("grpc.max_send_message_length", int(max_message_bytes)),
        ("grpc.max_receive_message_length", int(max_message_bytes)),
    ]


def peer_names(context):
    """Names the caller's client certificate was verified for (SAN, else CN)."""
    auth = context.auth_context()
    names = [n.decode() for n in auth.get("x509_subject_alternative_name", [])]
    names += [n.decode() for n in auth.get("x509_common_name", [])]
    return names


class Endpoint:
    """This participant's gRPC server.

    Parameters
    ----------
    name : str
        This participant's name (its certificate's).
    address : str
        ``host:port`` to listen on (port 0: any free port, see ``port``).
    ca, cert, key : bytes
        PEM: the CA certificate, this participant's certificate and key.
    authorize : callable
        ``authorize(sender, certificate_names) -> bool``: may a caller whose
        certificate names ``certificate_names`` send as ``sender``?
    on_message : callable
        ``on_message(message, nbytes)`` for each accepted message (called on a
        gRPC thread; it must only queue).
    max_message_bytes : int
    is_local : callable or None
        ``is_local(receiver)``: is ``receiver`` hosted here (default: equals
        ``name``)? Messages for anyone else are refused.
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
    ):
        import grpc

        self.name = name
        self._authorize = authorize
        self._is_local = is_local or (lambda receiver: receiver == name)
        self._on_message = on_message
        self._max = int(max_message_bytes)
        self.refused = queue.SimpleQueue()  # reasons of refused calls
        handler = grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "Deliver": grpc.unary_unary_rpc_method_handler(self._deliver),
                "Ping": grpc.unary_unary_rpc_method_handler(self._ping),
            },
        )
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=4),
            handlers=[handler],
            options=_options(max_message_bytes),
        )
        creds = grpc.ssl_server_credentials(
            [(key, cert)], root_certificates=ca, require_client_auth=True
        )
        self.port = self._server.add_secure_port(address, creds)
        if self.port == 0:
            raise TransportError(f"{name}: cannot listen on {address}.")

    def start(self):
        self._server.start()
        return self

    def stop(self, grace=None):
        self._server.stop(grace).wait()

    def _authenticate(self, context, claimed):
        import grpc

        names = peer_names(context)
        if self._authorize(claimed, names):
            return
        reason = (
            f"{self.name}: refused a call as {claimed!r} from a certificate for "
            f"{sorted(set(names))}"
        )
        self.refused.put(reason)
        context.abort(grpc.StatusCode.PERMISSION_DENIED, reason)

    def _deliver(self, request, context):
        import grpc

        try:
            message = decode_message(request, self._max)
        except ValueError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{self.name}: {exc}")
        self._authenticate(context, message.sender)
        if not self._is_local(message.receiver):
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{self.name}: message addressed to {message.receiver!r}",
            )
        self._on_message(message, len(request))
        return b""

    def _ping(self, request, context):
        self._authenticate(context, request.decode(errors="replace"))
        return self.name.encode()


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
        Deadline of every call, in seconds.
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
    ):
        import grpc

        self.own_name, self.name, self.address = own_name, name, address
        self.timeout = float(timeout)
        creds = grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=key, certificate_chain=cert
        )
        options = _options(max_message_bytes) + [
            ("grpc.ssl_target_name_override", name),
            ("grpc.default_authority", name),
            # peers start in any order: retry a refused connection quickly
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1000),
        ]
        self._channel = grpc.secure_channel(address, creds, options=options)
        self._deliver = self._channel.unary_unary(f"/{SERVICE}/Deliver")
        self._ping = self._channel.unary_unary(f"/{SERVICE}/Ping")
        self.bytes_sent = 0
        self.messages_sent = 0
        self._lock = threading.Lock()

    def _error(self, exc, what):
        import grpc

        if isinstance(exc, grpc.RpcError):
            code = exc.code()
            detail = exc.details()
            return TransportError(
                f"{what} {self.name!r} at {self.address} failed: "
                f"{code.name if code else 'error'}: {detail}"
            )
        return TransportError(f"{what} {self.name!r} at {self.address} failed: {exc}")

    def send(self, message, timeout=None):
        """Deliver ``message``; raise :class:`TransportError` on any failure."""
        import grpc

        data = encode_message(message)
        try:
            # the deadline grows with the size: 1 s more per 5 MB
            self._deliver(data, timeout=(timeout or self.timeout) + len(data) / 5e6)
        except grpc.RpcError as exc:
            raise self._error(exc, "sending to") from None
        with self._lock:
            self.bytes_sent += len(data)
            self.messages_sent += 1
        return len(data)

    def ping(self, timeout=None, wait_for_ready=False):
        """The peer's name if it answers, else raise :class:`TransportError`."""
        import grpc

        try:
            answer = self._ping(
                self.own_name.encode(),
                timeout=timeout or self.timeout,
                wait_for_ready=wait_for_ready,
            )
        except grpc.RpcError as exc:
            raise self._error(exc, "reaching") from None
        return answer.decode(errors="replace")

    def close(self):
        self._channel.close()
