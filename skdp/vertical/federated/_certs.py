"""A small certificate authority for tests and small deployments.

Built on the ``cryptography`` package (no hand-written cryptography): an ECDSA
P-256 CA and, per participant, a key and a certificate signed by the CA whose
DNS subject-alternative name is the participant's name (the name its peers pin;
see :mod:`skdp.vertical.federated._transport`; the subject CN carries the name
too, for people reading the certificate, but no participant reads it). For
tests on one machine the certificate also lists ``localhost`` and ``127.0.0.1``.

An organisation with its own PKI does not need this module: it issues each
participant a certificate whose DNS SAN is the participant's name, from a CA (or
intermediate) that every participant lists as ``ca_cert`` in its config, and
points ``cert``/``key`` at the PEM files.

Files: ``DIR/ca.pem`` and ``DIR/ca.key`` (keep the CA key offline), and
``DIR/NAME.pem`` / ``DIR/NAME.key`` per participant.

**How files are written** (:func:`_write`): each file is written to a fresh
temporary file in the same directory, created with ``O_CREAT | O_EXCL |
O_NOFOLLOW`` and mode 0600 for keys (0644 for certificates), flushed to disk,
and then moved into place in one step: with ``os.link`` (which fails if the name
exists, so nothing is ever overwritten by accident) or, when overwriting was
asked for, ``os.replace``. A key is therefore never readable by others, not
even for a moment; a symbolic link at the target is refused (the key would be
written wherever the link points); an existing key is kept unless
``overwrite=True`` (``skdp-certs issue --force``); a crash leaves the old file
or the new one, never half a key.
"""

import datetime
import ipaddress
import os
import secrets
from pathlib import Path

__all__ = ["init_ca", "issue"]

_DAY = datetime.timedelta(days=1)


def _refuse_existing(path, overwrite):
    """Raise unless ``path`` may be (over)written: never a symlink, an existing
    file only with ``overwrite``."""
    if path.is_symlink():
        raise FileExistsError(
            f"{path} is a symbolic link; refusing to write a key or certificate "
            "through it (remove the link or choose another directory)."
        )
    if path.exists() and (not overwrite or not path.is_file()):
        hint = "" if overwrite else " (issue --force replaces it)"
        raise FileExistsError(f"{path} exists; not overwriting it{hint}.")


def _write(path, data, private=False, overwrite=False):
    """Write ``data`` to ``path`` atomically; keys with mode 0600."""
    path = Path(path)
    _refuse_existing(path, overwrite)
    mode = 0o600 if private else 0o644
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)  # whatever the umask
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if overwrite:
            _refuse_existing(path, overwrite)  # not turned into a link meanwhile
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if the name exists
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _key_pem(key):
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _check_name(name):
    if (
        not isinstance(name, str)
        or not name
        or len(name) > 63
        or not all(c.isalnum() or c in "-." for c in name)
        or name[0] in "-."
    ):
        raise ValueError(
            "a participant name must be 1-63 characters of letters, digits, '-' "
            f"and '.' (it becomes a DNS name in the certificate), got {name!r}."
        )
    return name


def init_ca(directory, name="skdp test CA", days=30):
    """Create ``ca.pem`` and ``ca.key`` in ``directory``; return the cert path.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> init_ca(d).name
    'ca.pem'
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for f in ("ca.key", "ca.pem"):
        if (directory / f).exists() or (directory / f).is_symlink():
            raise FileExistsError(f"{directory / f} exists; not overwriting a CA.")
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + days * _DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    _write(directory / "ca.key", _key_pem(key), private=True)
    return _write(directory / "ca.pem", cert.public_bytes(serialization.Encoding.PEM))


def issue(directory, name, days=30, local=True, overwrite=False):
    """Issue ``NAME.pem``/``NAME.key`` signed by the CA in ``directory``.

    Parameters
    ----------
    directory : path
        Holds ``ca.pem`` and ``ca.key`` (from :func:`init_ca`).
    name : str
        The participant's name: its DNS SAN, the name its peers pin (also the
        subject CN, which no skdp participant reads).
    days : int
        Validity.
    local : bool
        Also list ``localhost`` and ``127.0.0.1`` (tests on one machine).
    overwrite : bool, default=False
        Replace an existing ``NAME.key``/``NAME.pem``; without it an existing
        file is an error (``FileExistsError``). A symbolic link is refused
        either way.

    Returns
    -------
    (cert_path, key_path)
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    name = _check_name(name)
    directory = Path(directory)
    for f in (f"{name}.key", f"{name}.pem"):  # before anything is generated
        _refuse_existing(directory / f, overwrite)
    ca_cert = x509.load_pem_x509_certificate((directory / "ca.pem").read_bytes())
    ca_key = serialization.load_pem_private_key(
        (directory / "ca.key").read_bytes(), password=None
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName(name)]
    if local:
        sans += [
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        ]
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + days * _DAY)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key_path = _write(
        directory / f"{name}.key", _key_pem(key), private=True, overwrite=overwrite
    )
    cert_path = _write(
        directory / f"{name}.pem",
        cert.public_bytes(serialization.Encoding.PEM),
        overwrite=overwrite,
    )
    return cert_path, key_path
