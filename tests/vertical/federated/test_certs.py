"""The small CA: names in the certificates, refusals, the skdp-certs command."""

import os

import pytest

pytest.importorskip("cryptography")

from cryptography import x509  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

from skdp.vertical.federated._certs import init_ca, issue  # noqa: E402
from skdp.vertical.federated._cli import certs_main  # noqa: E402
from skdp.vertical.federated._tls import dns_names  # noqa: E402


def test_issue_names_the_participant(tmp_path):
    init_ca(tmp_path)
    cert_path, key_path = issue(tmp_path, "bank-a", local=False)
    pem = cert_path.read_bytes()
    assert dns_names(pem) == ["bank-a"]  # the name its peers pin
    cert = x509.load_pem_x509_certificate(pem)
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert [a.value for a in cn] == ["bank-a"]  # for people; never read
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
    names = dns_names((tmp_path / "bank.pem").read_bytes())
    assert {"bank", "localhost"} <= set(names)
    assert certs_main(["issue", str(tmp_path), "bad name"]) == 1
    assert "participant name" in capsys.readouterr().err


def test_keys_are_private_new_files_and_never_replaced_by_accident(tmp_path):
    """A pre-existing world-writable key file is refused, not reused with its
    mode; with overwrite it is replaced by a new 0600 file (another inode), even
    under umask 0; no temporary file is left behind."""
    init_ca(tmp_path)
    key = tmp_path / "bank.key"
    key.write_text("old")
    key.chmod(0o666)
    with pytest.raises(FileExistsError, match="not overwriting"):
        issue(tmp_path, "bank")
    assert key.read_text() == "old" and not (tmp_path / "bank.pem").exists()
    old_inode = key.stat().st_ino
    previous = os.umask(0)
    try:
        issue(tmp_path, "bank", overwrite=True)
    finally:
        os.umask(previous)
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_ino != old_inode
    assert b"PRIVATE KEY" in key.read_bytes()
    assert (tmp_path / "bank.pem").stat().st_mode & 0o777 == 0o644
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(FileExistsError):  # re-issuing needs overwrite again
        issue(tmp_path, "bank")


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("dangling", [False, True], ids=["to_file", "dangling"])
def test_a_symlinked_key_path_is_refused(tmp_path, overwrite, dangling):
    """The key would be written wherever the link points: refused, whatever
    ``overwrite`` says; the link's target is untouched."""
    init_ca(tmp_path / "ca")
    target = tmp_path / "elsewhere.txt"
    if not dangling:
        target.write_text("not a key")
        target.chmod(0o644)
    (tmp_path / "ca" / "bank.key").symlink_to(target)
    with pytest.raises(FileExistsError, match="symbolic link"):
        issue(tmp_path / "ca", "bank", overwrite=overwrite)
    if dangling:
        assert not target.exists()
    else:
        assert target.read_text() == "not a key"
        assert target.stat().st_mode & 0o777 == 0o644


def test_init_ca_refuses_an_existing_or_linked_ca(tmp_path):
    (tmp_path / "ca.pem").symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileExistsError, match="not overwriting a CA"):
        init_ca(tmp_path)
    assert not (tmp_path / "ca.key").exists()


def test_cli_force(tmp_path, capsys):
    assert certs_main(["init-ca", str(tmp_path)]) == 0
    assert certs_main(["issue", str(tmp_path), "bank"]) == 0
    before = (tmp_path / "bank.key").read_bytes()
    assert certs_main(["issue", str(tmp_path), "bank"]) == 1
    assert "issue --force replaces it" in capsys.readouterr().err
    assert (tmp_path / "bank.key").read_bytes() == before
    assert certs_main(["issue", str(tmp_path), "bank", "--force"]) == 0
    assert (tmp_path / "bank.key").read_bytes() != before
