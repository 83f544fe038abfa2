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
