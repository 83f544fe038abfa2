"""gRPC mutual TLS: pinning by CA and DNS name (never the CN), authentication
before buffering, one listener per port, and calls that end when a peer freezes.
Endpoints in this process (threads) or, where memory or a frozen process is
measured, in a process of their own; each test bounds its time."""

import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("grpc")
pytest.importorskip("cryptography")

from skdp.vertical._messages import Message  # noqa: E402
from skdp.vertical.federated._certs import init_ca, issue  # noqa: E402
from skdp.vertical.federated._transport import (  # noqa: E402
    CHUNK_BYTES,
    Endpoint,
    ListenError,
    Peer,
    TransportError,
)
from tests.vertical.federated._harness import (  # noqa: E402
    ROOT,
    env,
    issue_certificate,
)


@pytest.fixture
def pki(tmp_path):
    init_ca(tmp_path / "ca")
    for name in ["server", "alice", "mallory"]:
        issue(tmp_path / "ca", name)
    init_ca(tmp_path / "other")
    issue(tmp_path / "other", "alice")
    # right CA, odd names: the name only as CN; a CN that differs from the SAN
    issue_certificate(tmp_path / "ca", "cn-alice", "alice")
    issue_certificate(tmp_path / "ca", "cn-alice-san-mallory", "alice", ["mallory"])
    issue_certificate(tmp_path / "ca", "cn-server", "server")
    issue_certificate(tmp_path / "ca", "cn-server-san-mallory", "server", ["mallory"])

    def pem(ca, name):
        d = tmp_path / ca
        return (
            (d / "ca.pem").read_bytes(),
            (d / f"{name}.pem").read_bytes(),
            (d / f"{name}.key").read_bytes(),
        )

    pem.directory = tmp_path
    return pem


@pytest.fixture
def server(pki):
    got = []
    ca, cert, key = pki("ca", "server")
    ep = Endpoint(
        "server",
        "127.0.0.1:0",
        ca,
        cert,
        key,
        authorize=lambda sender, names: sender == "alice" and "alice" in names,
        on_message=lambda m, n: got.append((m, n)),
    ).start()
    try:
        yield ep, got
    finally:
        ep.stop()


def _peer(pki, ep, ca_dir, own_cert, expected="server", own_name="alice"):
    ca, cert, key = pki(ca_dir, own_cert)
    return Peer(own_name, expected, f"127.0.0.1:{ep.port}", ca, cert, key, timeout=10)


def test_pinned_peers_talk(pki, server):
    ep, got = server
    peer = _peer(pki, ep, "ca", "alice")
    try:
        assert peer.ping() == "server"
        msg = Message("plan", "alice", "server", "x", {"a": np.arange(3.0)})
        nbytes = peer.send(msg)
    finally:
        peer.close()
    assert len(got) == 1 and got[0][1] == nbytes == peer.bytes_sent
    np.testing.assert_array_equal(got[0][0].payload["a"], [0.0, 1.0, 2.0])


@pytest.mark.parametrize(
    "ca_dir, expected, error",
    [
        pytest.param("ca", "mallory", "Hostname Verification", id="wrong_name"),
        pytest.param("other", "server", "CERTIFICATE_VERIFY_FAILED", id="other_ca"),
    ],
)
def test_server_not_pinned_by_the_peer_is_refused(pki, server, ca_dir, expected, error):
    ep, _ = server
    peer = _peer(pki, ep, ca_dir, "alice", expected=expected)
    try:
        with pytest.raises(TransportError, match=error):
            peer.ping()
    finally:
        peer.close()


def test_client_of_another_ca_is_refused(pki, server):
    ep, got = server
    # trusts the right CA but presents a certificate of another CA
    ca, _, _ = pki("ca", "alice")
    _, cert, key = pki("other", "alice")
    peer = Peer("alice", "server", f"127.0.0.1:{ep.port}", ca, cert, key, timeout=10)
    try:
        with pytest.raises(TransportError, match="UNAVAILABLE"):
            peer.send(Message("s", "alice", "server", "k", {}))
    finally:
        peer.close()
    assert got == []


def test_impersonation_is_refused(pki, server):
    """mallory holds a valid certificate of the CA but claims to be alice."""
    ep, got = server
    peer = _peer(pki, ep, "ca", "mallory")
    try:
        with pytest.raises(TransportError, match="PERMISSION_DENIED"):
            peer.send(Message("s", "alice", "server", "k", {}))
        with pytest.raises(TransportError, match="from a certificate whose DNS"):
            peer.ping()
    finally:
        peer.close()
    assert got == []
    refused = ep.refused.get_nowait()
    assert "'alice' from a certificate whose DNS names are" in refused
    assert "['localhost', 'mallory']" in refused


def test_misaddressed_and_malformed_messages_are_refused(pki, server):
    import grpc

    ep, got = server
    peer = _peer(pki, ep, "ca", "alice")
    try:
        with pytest.raises(TransportError, match="addressed to 'bob'"):
            peer.send(Message("s", "alice", "bob", "k", {}))
        with pytest.raises(grpc.RpcError) as info:
            peer._deliver(iter([b"\x80\x04pickle"]), timeout=10)
        # a peer running an skdp that speaks the JSON frame (wire version 1)
        head = b'{"step":"s","sender":"alice","receiver":"server","kind":"k"}'
        with pytest.raises(grpc.RpcError) as old:
            peer._deliver(iter([b"SKDPMSG1\0\0\0\x3b" + head]), timeout=10)
    finally:
        peer.close()
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not an skdp message frame" in info.value.details()
    assert old.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "server: wire version mismatch: got 1" in old.value.details()
    assert got == []


# ------------------------------------------------------------ names: DNS SAN only
@pytest.mark.parametrize(
    "cert", ["cn-alice", "cn-alice-san-mallory"], ids=["cn_only", "cn_mismatched"]
)
def test_the_cn_is_never_the_callers_name(pki, server, cert):
    """A certificate of the right CA whose CN says alice (and no SAN, or the SAN
    mallory) is refused as alice: pings and messages, before any chunk."""
    ep, got = server
    peer = _peer(pki, ep, "ca", cert)
    try:
        with pytest.raises(TransportError, match="PERMISSION_DENIED"):
            peer.ping()
        with pytest.raises(TransportError, match="PERMISSION_DENIED"):
            peer.send(Message("s", "alice", "server", "refuse", {"cause": "forged"}))
    finally:
        peer.close()
    assert got == []


@pytest.mark.parametrize(
    "cert", ["cn-server", "cn-server-san-mallory"], ids=["cn_only", "cn_mismatched"]
)
def test_a_server_named_only_by_its_cn_is_refused(pki, cert):
    """The client side: a peer listening with a CN-only or CN-mismatched
    certificate is refused as ``server`` by the startup handshake check
    (``check_peer_name``), which never falls back to the CN."""
    import ssl

    from skdp.vertical.federated._tls import check_peer_name

    ca, cert_pem, key_pem = pki("ca", cert)
    ep = Endpoint(
        "server", "127.0.0.1:0", ca, cert_pem, key_pem, lambda s, n: True, print
    ).start()
    try:
        alice = _paths(pki, "alice")
        with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
            check_peer_name(f"127.0.0.1:{ep.port}", "server", ca, *alice, timeout=10)
    finally:
        ep.stop()


def _paths(pki, name):
    """Certificate and key paths of ``name`` under the ``ca`` directory."""
    base = pki.directory / "ca"
    return base / f"{name}.pem", base / f"{name}.key"


# ------------------------------------------------------------ one listener per port
def test_a_bound_port_is_not_shared(pki, server):
    ep, _ = server
    ca, cert, key = pki("ca", "server")
    with pytest.raises(ListenError, match=f"port {ep.port} is already in use"):
        Endpoint("server", f"127.0.0.1:{ep.port}", ca, cert, key, lambda s, n: 1, print)


# ------------------------------------------------------------ authentication first
def _endpoint_process(directory):
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.vertical.federated._endpoint", str(directory)],
        cwd=ROOT,
        env=env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    port = int(proc.stdout.readline())

    def status():
        proc.stdin.write("?\n")
        proc.stdin.flush()
        peak, count = proc.stdout.readline().split()
        return int(peak), int(count)

    return proc, port, status


def _stop(proc):
    proc.kill()
    proc.wait(timeout=10)
    proc.stdin.close()
    proc.stdout.close()


def test_a_stranger_cannot_make_the_endpoint_buffer(pki):
    """mallory holds a certificate of the CA but is no expected participant. A
    64 MB frame streamed to Deliver is refused before its first chunk is read,
    and so is the same frame as one gRPC message (else the endpoint's message
    size limit, one chunk, refuses it as its length prefix arrives): the endpoint's
    peak memory grows by less than 16 MiB (a chunk, the HTTP/2 window, thread
    stacks). The same frame from alice is buffered in full (the measure sees
    what a frame costs)."""
    import grpc

    proc, port, status = _endpoint_process(pki.directory / "ca")
    frame = Message("s", "alice", "server", "k", {"blob": os.urandom(64 * 2**20)})
    mallory, alice = (_peer_at(pki, port, who) for who in ("mallory", "alice"))
    try:
        base, _ = status()
        with pytest.raises(TransportError, match="PERMISSION_DENIED"):
            mallory.send(frame)
        ca, cert, key = pki("ca", "mallory")
        raw = grpc.secure_channel(
            f"127.0.0.1:{port}",
            grpc.ssl_channel_credentials(ca, key, cert),
            options=[
                ("grpc.ssl_target_name_override", "server"),
                ("grpc.max_send_message_length", 2**30),
            ],
        )
        from skdp.vertical.federated._wire import encode_message

        with pytest.raises(grpc.RpcError) as info:
            raw.unary_unary("/skdp.Federated/Deliver")(
                encode_message(frame), timeout=60
            )
        raw.close()
        # refused as the call starts, or as the too large message's length arrives
        assert info.value.code() in (
            grpc.StatusCode.PERMISSION_DENIED,
            grpc.StatusCode.RESOURCE_EXHAUSTED,
        )
        after_mallory, accepted = status()
        assert accepted == 0
        assert after_mallory - base < 16 * 2**20, (base, after_mallory)
        alice.send(frame)
        after_alice, accepted = status()
        assert accepted == 1 and after_alice - after_mallory > 64 * 2**20
    finally:
        mallory.close()
        alice.close()
        _stop(proc)


def _peer_at(pki, port, who, keepalive=(1.0, 5.0), timeout=60):
    ca, cert, key = pki("ca", who)
    return Peer(
        who,
        "server",
        f"127.0.0.1:{port}",
        ca,
        cert,
        key,
        timeout=timeout,
        keepalive=keepalive,
    )


def test_frames_travel_in_chunks_and_too_large_ones_are_refused(pki, server):
    ep, got = server
    peer = _peer(pki, ep, "ca", "alice")
    small = Peer(
        "alice",
        "server",
        f"127.0.0.1:{ep.port}",
        *pki("ca", "alice"),
        timeout=10,
        max_message_bytes=2 * CHUNK_BYTES,
    )
    try:
        blob = os.urandom(3 * CHUNK_BYTES + 17)  # four chunks
        peer.send(Message("s", "alice", "server", "k", {"blob": blob}))
        assert got[-1][0].payload["blob"] == blob
        with pytest.raises(TransportError, match="exceeds max_message_bytes"):
            small.send(Message("s", "alice", "server", "k", {"blob": blob}))
    finally:
        peer.close()
        small.close()


# ------------------------------------------------------------ a frozen peer
def _in_thread(fn, seconds):
    """``fn()``'s exception (or None), failing the test if it runs longer than
    ``seconds`` (it would block for ever without keepalive and watchdog)."""
    out = []

    def run():
        try:
            fn()
            out.append(None)
        except Exception as exc:  # returned for the assertions
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"the call still blocked after {seconds} s"
    return out[0]


def test_a_send_to_a_frozen_peer_ends(pki):
    """The endpoint's process is stopped (SIGSTOP) with its connection open; a
    32 MB send fills the TCP and HTTP/2 buffers and blocks in flow control.
    Keepalive (1 s pings, 3 s to answer) closes the connection: UNAVAILABLE.
    With keepalive too slow to matter, the watchdog cancels the send as soon as
    ``stop()`` gives a reason."""
    proc, port, status = _endpoint_process(pki.directory / "ca")
    frame = Message("s", "alice", "server", "k", {"blob": os.urandom(32 * 2**20)})
    kept = _peer_at(pki, port, "alice", keepalive=(1.0, 3.0), timeout=30)
    told = _peer_at(pki, port, "alice", keepalive=(60.0, 60.0), timeout=30)
    try:
        assert kept.ping() == "server" and told.ping() == "server"  # connected
        os.kill(proc.pid, signal.SIGSTOP)
        exc = _in_thread(lambda: kept.send(frame), 30)
        assert isinstance(exc, TransportError) and exc.code == "UNAVAILABLE", exc
        reason = threading.Event()
        threading.Timer(2.0, reason.set).start()
        exc = _in_thread(
            lambda: told.send(
                frame, stop=lambda: "aborted" if reason.is_set() else None
            ),
            30,
        )
        assert isinstance(exc, TransportError) and "stopped: aborted" in str(exc)
    finally:
        _stop(proc)  # SIGKILL ends a stopped process
        kept.close()
        told.close()


# ------------------------------------------------ one participant per certificate
@pytest.fixture
def two_names(tmp_path):
    """bank, server and telco of one CA, and a right-CA certificate whose DNS
    SANs name two participants: telco and server."""
    d = tmp_path / "pki"
    init_ca(d)
    for name in ["bank", "server", "telco"]:
        issue(d, name)
    issue_certificate(d, "telco-server", "telco", ["telco", "server"])
    return d


def _files(d, name):
    return tuple((d / f"{name}{ext}").read_bytes() for ext in (".pem", ".key"))


def _node(d, name, peers):
    from skdp.vertical.federated._config import Timeouts, TLSConfig
    from skdp.vertical.federated._node import Node

    tls = TLSConfig(d / "ca.pem", d / f"{name}.pem", d / f"{name}.key")
    timeouts = Timeouts(call=5.0, startup=10.0, protocol=60.0, heartbeat=1.0)
    return Node(name, "127.0.0.1:0", peers, tls, timeouts, 2**20)


def test_a_certificate_naming_two_participants_speaks_as_neither(two_names):
    """The forged abort of issue 36: a certificate naming telco and server sent
    an abort as server, accepted by bank. bank now refuses every call from it,
    as either name, before reading a chunk; the real server's abort still
    arrives."""
    from skdp.vertical._messages import ABORT

    d = two_names
    node = _node(d, "bank", {"server": "127.0.0.1:9", "telco": "127.0.0.1:9"})
    address = f"127.0.0.1:{node.endpoint.port}"
    ca = (d / "ca.pem").read_bytes()
    forged = Peer("telco", "bank", address, ca, *_files(d, "telco-server"), timeout=10)
    server = Peer("server", "bank", address, ca, *_files(d, "server"), timeout=10)
    try:
        for sender in ["server", "telco"]:
            abort = Message(ABORT, sender, "bank", "abort", {"cause": "forged"})
            with pytest.raises(TransportError, match="PERMISSION_DENIED"):
                forged.send(abort)
        with pytest.raises(TransportError, match="PERMISSION_DENIED"):
            forged.ping()
        assert node._abort is None
        refused = node.endpoint.refused.get_nowait()
        assert "['server', 'telco'] do not name exactly one expected" in refused
        server.send(Message(ABORT, "server", "bank", "abort", {"cause": "real"}))
        assert node._abort == ("server", "real")
    finally:
        forged.close()
        server.close()
        node.close()


def test_a_peer_whose_certificate_names_two_participants_is_refused(two_names):
    """The client side: bank's startup handshake with "server" refuses a peer
    whose certificate (of the right CA, valid for "server") also names telco,
    at once and without retrying it."""
    from skdp.vertical.federated._node import FederatedError

    d = two_names
    ca = (d / "ca.pem").read_bytes()
    impostor = Endpoint(
        "server",
        "127.0.0.1:0",
        ca,
        *_files(d, "telco-server"),
        lambda s, n: True,
        lambda m, n: None,
    ).start()
    address = f"127.0.0.1:{impostor.port}"
    node = _node(d, "bank", {"server": address, "telco": "127.0.0.1:9"})
    try:
        with pytest.raises(FederatedError) as info:
            node.wait_for_peers(["server"])
        assert "server" in node.unreachable and "server" not in node.reached
    finally:
        node.close()
        impostor.stop()
    assert (
        f"bank: refusing server: the certificate of server at {address} names 2 "
        "participants (server, telco); a participant's certificate must name "
        "exactly one"
    ) in str(info.value)


def test_a_participant_refuses_its_own_certificate_naming_two(two_names):
    from types import SimpleNamespace

    from skdp.vertical.federated._config import TLSConfig
    from skdp.vertical.federated._node import FederatedError
    from skdp.vertical.federated._runtime import _check_certificate

    d = two_names
    tls = TLSConfig(d / "ca.pem", d / "telco-server.pem", d / "telco-server.key")
    config = SimpleNamespace(name="telco", tls=tls)
    with pytest.raises(FederatedError, match="its certificate also names server"):
        _check_certificate(config, ["server", "bank"])
    # the same certificate in a run without a participant named server is fine
    _check_certificate(config, ["bank"])
    honest = SimpleNamespace(
        name="telco", tls=TLSConfig(d / "ca.pem", d / "telco.pem", d / "telco.key")
    )
    _check_certificate(honest, ["server", "bank"])


# ------------------------------------------------------------ before authentication
def _stranger(port):
    """A connection that sends one byte of a TLS record and then stalls."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"\x16")
    return s


def _closed_within(sock, seconds):
    """True once the endpoint has closed ``sock`` (within ``seconds``), False
    if it still holds it then; the endpoint must send nothing."""
    sock.settimeout(seconds)
    try:
        data = sock.recv(1)
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    assert data == b"", data
    return True


def _stall_endpoint(pki, **kw):
    ca, cert, key = pki("ca", "server")
    return Endpoint(
        "server",
        "127.0.0.1:0",
        ca,
        cert,
        key,
        authorize=lambda sender, names: sender == "alice" and "alice" in names,
        on_message=lambda m, n: None,
        **kw,
    ).start()


def test_a_stalled_handshake_is_closed_at_the_handshake_deadline(pki):
    """A stranger that never completes its TLS handshake is closed after
    ``handshake_timeout`` (gRPC's own default would hold it 120 s), having
    been sent nothing; a participant connecting meanwhile is served."""
    ep = _stall_endpoint(pki, handshake_timeout=1.0)
    socks = []
    try:
        socks = [_stranger(ep.port) for _ in range(3)]
        assert not _closed_within(socks[0], 0.3)  # held while its deadline runs
        peer = _peer(pki, ep, "ca", "alice")
        assert peer.ping() == "server"
        peer.close()
        assert all(_closed_within(s, 15.0) for s in socks)
    finally:
        for s in socks:
            s.close()
        ep.stop()


def test_connections_beyond_the_cap_are_closed_at_once_and_look_so(pki):
    """With ``max_connections`` strangers stalled, a further connection is
    closed at once without a byte: the startup check calls that "not accepting
    connections" (an ``OSError``, retried), never a refused certificate (an
    ``ssl.SSLError``, fatal after three). Once the strangers' handshake
    deadline has passed, a participant gets in."""
    from skdp.vertical.federated._tls import check_peer_name

    ep = _stall_endpoint(pki, handshake_timeout=2.0, max_connections=4)
    assert ep.max_connections == 4
    socks = []
    cert, key = _paths(pki, "alice")
    ca = pki("ca", "alice")[0]
    address = f"127.0.0.1:{ep.port}"
    try:
        socks = [_stranger(ep.port) for _ in range(4)]
        time.sleep(0.3)  # let the endpoint accept them
        extra = _stranger(ep.port)
        socks.append(extra)
        assert _closed_within(extra, 5.0)
        with pytest.raises(OSError) as info:
            check_peer_name(address, "server", ca, cert, key, timeout=5.0)
        assert not isinstance(info.value, ssl.SSLError), info.value
        assert all(_closed_within(s, 15.0) for s in socks[:4])
        assert check_peer_name(address, "server", ca, cert, key, timeout=5.0) is None
        peer = _peer(pki, ep, "ca", "alice")
        assert peer.ping() == "server"
        peer.close()
    finally:
        for s in socks:
            s.close()
        ep.stop()


def test_the_default_cap_leaves_descriptors_to_the_process(monkeypatch):
    import resource

    from skdp.vertical.federated import _transport

    monkeypatch.setattr(resource, "getrlimit", lambda which: (1024, 4096))
    assert _transport.connection_cap() == 1024 - _transport.RESERVED_DESCRIPTORS
    assert _transport.connection_cap(3) == 1024 - _transport.RESERVED_DESCRIPTORS - 12
    monkeypatch.setattr(resource, "getrlimit", lambda which: (40, 40))
    assert _transport.connection_cap(3) == 16


def test_the_console_scripts_raise_the_soft_descriptor_limit():
    """``raise_descriptor_limit`` in a child whose soft limit is below its hard
    one (as ``ulimit -Sn 256``): the soft limit becomes the hard one."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip("the hard descriptor limit is too low to lower the soft one")
    code = (
        "import resource\n"
        "from skdp.vertical.federated._transport import raise_descriptor_limit\n"
        "before = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "print(before[0], raise_descriptor_limit(), before[1])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard)),
    )
    before, after, limit = out.stdout.split()
    assert int(before) == 256
    expected = 2**20 if int(limit) == resource.RLIM_INFINITY else int(limit)
    assert int(after) == expected
