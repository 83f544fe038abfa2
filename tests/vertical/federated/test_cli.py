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


# Run in a fresh interpreter in which importing cryptography fails, as in an
# environment without the "federated" extra: a finder first on sys.meta_path
# refuses the package (and anything under it) before the entry point runs.
_WITHOUT_CRYPTOGRAPHY = """
import sys


class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name == "cryptography" or name.startswith("cryptography."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Blocked())
for module in [m for m in sys.modules if m.split(".")[0] == "cryptography"]:
    del sys.modules[module]
from skdp.vertical.federated._cli import certs_main

sys.exit(certs_main(sys.argv[1:]))
"""


@pytest.mark.parametrize("command", [["init-ca"], ["issue", "--", "bank"]])
def test_certs_without_the_extra_prints_the_install_hint(tmp_path, command):
    """skdp-certs without cryptography: exit 2 and the "federated" extra's
    install commands (as skdp-party), no traceback, no file written."""
    import os
    import subprocess
    import sys

    out = tmp_path / "ca"
    argv = [command[0], str(out), *command[1:]]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-c", _WITHOUT_CRYPTOGRAPHY, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert "skdp-certs: needs cryptography" in proc.stderr
    assert '"federated" extra: pip install' in proc.stderr
    assert 'pip install ".[federated]"' in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()
