"""gRPC mutual TLS: pinning by CA and name, in one process (threads)."""

import numpy as np
import pytest

pytest.importorskip("grpc")
pytest.importorskip("cryptography")

from skdp.vertical._messages import Message  # noqa: E402
from skdp.vertical.federated._certs import init_ca, issue  # noqa: E402
from skdp.vertical.federated._transport import (  # noqa: E402
    Endpoint,
    Peer,
    TransportError,
)


@pytest.fixture
def pki(tmp_path):
    init_ca(tmp_path / "ca")
    for name in ["server", "alice", "mallory"]:
        issue(tmp_path / "ca", name)
    init_ca(tmp_path / "other")
    issue(tmp_path / "other", "alice")

    def pem(ca, name):
        d = tmp_path / ca
        return (
            (d / "ca.pem").read_bytes(),
            (d / f"{name}.pem").read_bytes(),
            (d / f"{name}.key").read_bytes(),
        )

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
    assert "'alice' from a certificate whose DNS names are ['localhost', 'mallory']" in (
        ep.refused.get_nowait()
    )


def test_misaddressed_and_malformed_messages_are_refused(pki, server):
    import grpc

    ep, got = server
    peer = _peer(pki, ep, "ca", "alice")
    try:
        with pytest.raises(TransportError, match="addressed to 'bob'"):
            peer.send(Message("s", "alice", "bob", "k", {}))
        with pytest.raises(grpc.RpcError) as info:
            peer._deliver(iter([b"\x80\x04pickle"]), timeout=10)
    finally:
        peer.close()
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "bad magic" in info.value.details()
    assert got == []
