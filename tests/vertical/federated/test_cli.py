"""Console scripts: exit status 2 and a message naming the key for bad configs."""

import pytest

from skdp.vertical.federated._cli import party_main, server_main


def test_bad_config_exits_2(tmp_path, capsys):
    (tmp_path / "p.toml").write_text('name = "bank"\nlisten = "x"\n')
    assert party_main(["--config", str(tmp_path / "p.toml")]) == 2
    assert "key 'listen' must be 'host:port'" in capsys.readouterr().err
    assert server_main(["--config", str(tmp_path / "missing.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_config_is_required():
    with pytest.raises(SystemExit) as info:
        party_main([])
    assert info.value.code == 2


# Run a console script's entry point (as the installed ``skdp-*`` wrapper does:
# ``sys.exit(<kind>_main())`` with the command line in sys.argv) in a fresh
# interpreter in which importing one package fails, as in an environment without
# the "federated" extra: a finder first on sys.meta_path refuses the package (and
# anything under it) before the entry point runs.
_WITHOUT = """
import sys

blocked, kind = sys.argv[1], sys.argv[2]


class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name == blocked or name.startswith(blocked + "."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Blocked())
for module in [m for m in sys.modules if m.split(".")[0] == blocked]:
    del sys.modules[module]
from skdp.vertical.federated import _cli

sys.argv = [f"skdp-{kind}", *sys.argv[3:]]
sys.exit(getattr(_cli, f"{kind}_main")())
"""


def _run_without(blocked, kind, argv, cwd):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT, blocked, kind, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
    )


def _assert_install_hint(proc, prog, needs):
    assert proc.returncode == 2, proc.stderr
    assert f"{prog}: needs {needs}" in proc.stderr, proc.stderr
    assert '"federated" extra: pip install' in proc.stderr
    assert 'pip install ".[federated]"' in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", [["init-ca"], ["issue", "--", "bank"]])
def test_certs_without_the_extra_prints_the_install_hint(tmp_path, command):
    """skdp-certs without cryptography: exit 2 and the "federated" extra's
    install commands (as skdp-party), no traceback, no file written."""
    out = tmp_path / "ca"
    proc = _run_without(
        "cryptography", "certs", [command[0], str(out), *command[1:]], tmp_path
    )
    _assert_install_hint(proc, "skdp-certs", "cryptography")
    assert not out.exists()


@pytest.mark.parametrize("kind", ["party", "server"])
@pytest.mark.parametrize("blocked", ["grpc", "cryptography"])
def test_party_and_server_without_the_extra_print_the_install_hint(
    tmp_path, kind, blocked
):
    """gRPC and cryptography are checked before the config is read (reading
    its TLS files needs cryptography)."""
    config = tmp_path / f"{kind}.toml"
    config.write_text("")
    proc = _run_without(blocked, kind, ["--config", str(config)], tmp_path)
    _assert_install_hint(proc, f"skdp-{kind}", blocked)


def _configs(tmp_path):
    import numpy as np

    from tests.vertical.federated._harness import Deployment

    blocks = [np.zeros((10, 1)), np.zeros((10, 1))]
    dep = Deployment(tmp_path, blocks, np.zeros(10))
    dep.server["model"]["backend"] = "bfv"
    return dep


@pytest.mark.parametrize("kind", ["party", "server"])
def test_bfv_without_tenseal_prints_the_install_hint(tmp_path, kind):
    """A server whose model.backend is "bfv", or a party whose policy accepts
    it, stops at once (exit 2) naming TenSEAL, before it listens: not mid-run
    with an ImportError."""
    pytest.importorskip("cryptography")
    paths = _configs(tmp_path).write()
    config = paths["server" if kind == "server" else "org-0"]
    proc = _run_without("tenseal", kind, ["--config", str(config)], tmp_path)
    why = 'model.backend = "bfv"' if kind == "server" else "policy.backends accepts"
    _assert_install_hint(proc, f"skdp-{kind}", f"tenseal ({why}")


def test_parquet_without_pyarrow_prints_the_install_hint(tmp_path):
    pytest.importorskip("cryptography")
    dep = _configs(tmp_path)
    dep.parties[1]["data"]["path"] = "org-1.parquet"
    dep.parties[1]["policy"]["backends"] = ["plaintext"]
    (tmp_path / "org-1.parquet").write_bytes(b"")
    paths = dep.write()
    proc = _run_without("pyarrow", "party", ["--config", str(paths["org-1"])], tmp_path)
    _assert_install_hint(proc, "skdp-party", "pyarrow (data.path is a Parquet file)")
