"""The small CA: names in the certificates, refusals, the skdp-certs command."""

import pytest

pytest.importorskip("cryptography")

from cryptography import x509  # noqa: E402

from skdp.vertical.federated._certs import certificate_names, init_ca, issue  # noqa: E402
from skdp.vertical.federated._cli import certs_main  # noqa: E402


def test_issue_names_the_participant(tmp_path):
    init_ca(tmp_path)
    cert_path, key_path = issue(tmp_path, "bank-a", local=False)
    pem = cert_path.read_bytes()
    assert certificate_names(pem) == ["bank-a", "bank-a"]  # CN, then DNS SAN
    cert = x509.load_pem_x509_certificate(pem)
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.pem").read_bytes())
    cert.verify_directly_issued_by(ca)
    assert key_path.stat().st_mode & 0o777 == 0o600
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_refusals(tmp_path):
    init_ca(tmp_path)
    with pytest.raises(FileExistsError):
        init_ca(tmp_path)
    for bad in ["", "a b", "-x", "x" * 64, "a/b"]:
        with pytest.raises(ValueError, match="participant name"):
            issue(tmp_path, bad)


def test_cli(tmp_path, capsys):
    assert certs_main(["init-ca", str(tmp_path)]) == 0
    assert certs_main(["issue", str(tmp_path), "server", "bank"]) == 0
    assert (tmp_path / "bank.pem").exists() and (tmp_path / "server.key").exists()
    names = certificate_names((tmp_path / "bank.pem").read_bytes())
    assert {"bank", "localhost"} <= set(names)
    assert certs_main(["issue", str(tmp_path), "bad name"]) == 1
    assert "participant name" in capsys.readouterr().err
