"""Checks of a participant's TLS material and of its peers' names.

Two libraries do the work, no certificate logic is written here:

- ``cryptography`` parses the PEM files when a config is loaded
  (:func:`read_tls_material`): the CA file must hold certificates, ``cert`` a
  certificate (and its chain), ``key`` an unencrypted private key that belongs to
  the certificate. A key file that holds a certificate, an encrypted key or a
  key of another certificate is a :class:`~._config.ConfigError` naming the key.
- the standard library's ``ssl`` (OpenSSL) checks trust, as a peer's TLS stack
  will: :func:`check_own_certificate` runs a TLS handshake in memory between
  this participant's certificate (as server and as client) and its own CA, with
  the participant's name as the expected host name and
  ``hostname_checks_common_name = False``; :func:`check_peer_name` makes one
  real handshake with a peer before the gRPC channel is used, with the peer's
  expected name, likewise. The subject CN is never a name: only a DNS
  subject-alternative name is.

gRPC's own host-name check (used on every later connection) still accepts a
certificate *without any* subject-alternative name by its CN (RFC 6125's legacy
rule, with no option to turn it off in gRPC Python); the handshake check at
startup refuses such a peer, and a CA that never issues SAN-less certificates
(``skdp-certs`` never does) leaves no gap at all. The receiving side of every
call checks the caller's DNS SANs only (``peer_dns`` of gRPC's auth context).

**One participant per certificate.** A certificate of the CA that carries the
names of two participants (say ``telco`` and ``server``) would let its holder
speak as either. Every participant refuses such a certificate: as a caller's
(the endpoint admits a call only from a certificate naming exactly one expected
participant, and only as that one), as a peer's at the startup handshake
(:func:`check_peer_name` with ``participants``) and as its own at start-up.
"""

import socket
import ssl

__all__ = [
    "IdentityError",
    "TLSMaterialError",
    "check_own_certificate",
    "check_peer_name",
    "dns_names",
    "named_participants",
    "read_tls_material",
]


class TLSMaterialError(ValueError):
    """A TLS file is not what its config key says (``key`` names the key)."""

    def __init__(self, key, message):
        super().__init__(message)
        self.key = key


class IdentityError(ValueError):
    """A certificate names more than one participant of the run: whoever holds
    its key could speak as each of them, so it is no one's certificate.

    ``names``: the participants it names."""

    def __init__(self, message, names):
        super().__init__(message)
        self.names = list(names)


def named_participants(cert_names, participants):
    """The participants (sorted) among a certificate's DNS names. A valid
    participant certificate names exactly one: its owner (other names, such
    as ``localhost``, are no participant and do not count)."""
    return sorted(set(cert_names) & set(participants))


def dns_names(pem):
    """The DNS subject-alternative names of a PEM certificate: the only names
    a participant has (never the subject CN, nor IP or other SAN types)."""
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(pem)
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    return ext.value.get_values_for_type(x509.DNSName)


def _certificates(pem):
    from cryptography import x509

    if b"-----BEGIN CERTIFICATE-----" not in pem:
        return []
    return x509.load_pem_x509_certificates(pem)


def read_tls_material(ca_path, cert_path, key_path):
    """Parse the three PEM files; raise :class:`TLSMaterialError` naming the key
    (``ca_cert``, ``cert``, ``key``) of the first one that is unusable."""
    from cryptography.hazmat.primitives import serialization

    def read(key, path):
        try:
            return path.read_bytes()
        except OSError as exc:
            raise TLSMaterialError(key, f"cannot be read ({exc.strerror})") from None

    pems = {k: read(k, p) for k, p in [("ca_cert", ca_path), ("cert", cert_path)]}
    pems["key"] = read("key", key_path)
    for key in ("ca_cert", "cert"):
        try:
            certs = _certificates(pems[key])
        except ValueError:
            certs = None
        if not certs:
            what = "a private key" if b"PRIVATE KEY-----" in pems[key] else "none"
            raise TLSMaterialError(
                key, f"must hold PEM certificate(s), it holds {what}"
            )
    if (
        b"-----BEGIN CERTIFICATE-----" in pems["key"]
        and b"PRIVATE KEY" not in (pems["key"])
    ):
        raise TLSMaterialError(
            "key", "holds a certificate, not a private key (swapped with tls.cert?)"
        )
    try:
        private = serialization.load_pem_private_key(pems["key"], password=None)
    except TypeError:
        raise TLSMaterialError(
            "key", "is encrypted; give an unencrypted PEM private key"
        ) from None
    except ValueError:
        raise TLSMaterialError("key", "is not a PEM private key") from None
    leaf = _certificates(pems["cert"])[0]
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    if private.public_key().public_bytes(der, spki) != leaf.public_key().public_bytes(
        der, spki
    ):
        raise TLSMaterialError("key", "does not belong to the certificate in tls.cert")
    return pems["ca_cert"], pems["cert"], pems["key"]


def _client_context(ca_pem, cert_path, key_path):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(cadata=ca_pem.decode("ascii"))
    ctx.load_cert_chain(cert_path, key_path)
    ctx.hostname_checks_common_name = False  # a name is a DNS SAN, never the CN
    return ctx


def check_own_certificate(name, ca_path, cert_path, key_path):
    """None if this participant's certificate is trusted by its CA for ``name``
    (as a TLS server and client, now), else the reason (a string).

    A handshake in memory between two ``ssl`` contexts: a server context with the
    certificate that requires a client certificate of the CA, and a client
    context with the same certificate that expects the DNS name ``name``.
    """
    ca_pem = ca_path.read_bytes()
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_path, key_path)
    server.load_verify_locations(cadata=ca_pem.decode("ascii"))
    server.verify_mode = ssl.CERT_REQUIRED
    client = _client_context(ca_pem, cert_path, key_path)
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    c = client.wrap_bio(c_in, c_out, server_hostname=name)
    s = server.wrap_bio(s_in, s_out, server_side=True)
    done = {c: False, s: False}
    for _ in range(20):  # a handshake takes a few round trips
        for end in (c, s):
            if done[end]:
                continue
            try:
                end.do_handshake()
                done[end] = True
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLCertVerificationError as exc:
                who = "as a TLS server" if end is c else "as a TLS client"
                return f"its certificate is not valid {who}: {exc.verify_message}"
            except ssl.SSLError as exc:
                return f"the TLS check of its certificate failed: {exc.reason}"
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return None
    return "the TLS check of its certificate did not complete"  # pragma: no cover


def _handshake(sock, ctx, name, address):
    """A TLS handshake over ``sock`` through memory buffers, so that a peer
    that closes before sending anything (``ConnectionResetError``) is told
    apart from one that ends the handshake (``ssl.SSLError``); the peer's
    certificate (``getpeercert()``)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname=name)
    received = 0
    while True:
        try:
            tls.do_handshake()
            done = True
        except ssl.SSLWantReadError:
            done = False
        pending = outgoing.read()
        if pending:
            sock.sendall(pending)
        if done:
            return tls.getpeercert() or {}
        data = sock.recv(65536)
        if not data:
            if not received:
                raise ConnectionResetError(
                    f"{address} closed the connection before its TLS handshake"
                )
            incoming.write_eof()
        else:
            received += len(data)
            incoming.write(data)


def check_peer_name(
    address, name, ca_pem, cert_path, key_path, timeout, participants=()
):
    """One TLS handshake with the peer at ``address`` expecting the DNS name
    ``name``; returns None when it passed.

    ``participants``: every participant of the run; a peer certificate that
    names any of them besides ``name`` raises :class:`IdentityError` (one
    participant per certificate).

    Raises ``OSError`` when the peer does not accept connections (yet),
    including a peer that closes the connection before it has sent a single
    byte of its handshake (it has no room for one more connection now, see
    :mod:`._transport`), and ``ssl.SSLError`` when the handshake fails:
    ``ssl.SSLCertVerificationError`` when the peer's certificate is not valid
    for ``name`` (expired, another CA, the name only as CN or not at all),
    another ``ssl.SSLError`` when the peer refuses this participant's
    certificate (TLS 1.2 is used, so the refusal arrives during the handshake,
    after the peer's first handshake bytes, with the peer's reason).
    """
    host, _, port = address.rpartition(":")
    ctx = _client_context(ca_pem, cert_path, key_path)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["h2"])
    with socket.create_connection((host.strip("[]"), int(port)), timeout) as sock:
        cert = _handshake(sock, ctx, name, address)
    names = [v for k, v in cert.get("subjectAltName", ()) if k == "DNS"]
    named = named_participants(names, set(participants) | {name})
    if len(named) > 1:
        raise IdentityError(
            f"the certificate of {name} at {address} names {len(named)} "
            f"participants ({', '.join(named)}); a participant's certificate must "
            "name exactly one",
            named,
        )
    return None
