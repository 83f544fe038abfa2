"""Party and server configs: valid files parse, bad ones name the key; policy."""

import copy
import os
from pathlib import Path

import pytest

from skdp.vertical.federated._config import (
    ConfigError,
    Policy,
    PolicyError,
    load_party_config,
    load_server_config,
)
from tests.vertical.federated._harness import make_certs, write_toml

pytest.importorskip("cryptography")

PARTY = {
    "name": "bank",
    "listen": "0.0.0.0:7001",
    "tls": {"ca_cert": "ca.pem", "cert": "bank.pem", "key": "bank.key"},
    "peers": {"server": "10.0.0.1:7000", "insurer": "10.0.0.2:7002"},
    "data": {
        "path": "bank.csv",
        "id_column": "id",
        "features": ["age", "income"],
        "label": "y",
        "label_bounds": [0, 10],
    },
    "domain": {"bounds": {"age": [0, 1], "income": [-1, 1]}},
    "policy": {"max_epsilon": 1.0, "backends": ["bfv"], "min_samples": 100},
}

SERVER = {
    "name": "server",
    "listen": "0.0.0.0:7000",
    "output": "out/model",
    "tls": {"ca_cert": "ca.pem", "cert": "bank.pem", "key": "bank.key"},
    "model": {"objective": "linear", "epsilon": 0.5, "backend": "bfv"},
    "parties": [
        {"name": "bank", "address": "10.0.0.3:7001", "label": True},
        {"name": "insurer", "address": "10.0.0.2:7002"},
    ],
}


@pytest.fixture
def files(tmp_path):
    make_certs(tmp_path, ["bank"])  # real TLS files: loading parses them
    (tmp_path / "bank.csv").write_text("x")
    return tmp_path


def _party(files, table):
    return load_party_config(write_toml(files / "party.toml", table))


def _server(files, table):
    return load_server_config(write_toml(files / "server.toml", table))


def test_valid_configs(files):
    p = _party(files, PARTY)
    assert p.name == "bank" and p.server == "server"
    assert p.tls.ca_cert == files / "ca.pem"  # relative to the config file
    assert p.bounds == {"age": (0.0, 1.0), "income": (-1.0, 1.0)}
    assert p.label_bounds == (0.0, 10.0)
    assert p.policy == Policy(max_epsilon=1.0, backends=("bfv",), min_samples=100)
    s = _server(files, SERVER)
    assert [q.name for q in s.parties] == ["bank", "insurer"]
    assert s.label_party == "bank" and s.epsilon == 0.5
    assert s.noise_generation == "threshold" and s.budget == "top-down"
    assert s.request()["parties"] == ["bank", "insurer"]


def _broken(table, path, value=None, delete=False):
    t = copy.deepcopy(table)
    *head, last = path
    node = t
    for key in head:
        node = node[key]
    if delete:
        del node[last]
    else:
        node[last] = value
    return t


@pytest.mark.parametrize(
    "path, value, delete, match",
    [
        (["name"], None, True, "key 'name' is required"),
        (["listen"], "nowhere", False, "key 'listen' must be 'host:port'"),
        (["peers", "server"], None, True, "must give the address of the server"),
        (["tls", "key"], "missing.key", False, "key 'tls.key' names a missing file"),
        (["data", "path"], "bank.txt", False, "key 'data.path'"),
        (["data", "features"], [], False, "key 'data.features' must be non-empty"),
        (["data", "features"], ["id"], False, "must not contain the id"),
        (["data", "label_bounds"], [1, 0], False, "finite lower < upper"),
        (["data", "classes"], [1, 1], False, "two or more distinct class labels"),
        (["domain", "bounds"], {"age": [0, 1]}, False, "unbounded: \\['income'\\]"),
        (["domain", "bounds", "other"], [0, 1], False, "not one of data.features"),
        (["policy", "max_epsilon"], -1.0, False, "'policy.max_epsilon' must be > 0"),
        (["policy", "max_epsilon"], "1", False, "must be a float"),
        (["policy", "backends"], ["rot13"], False, "'policy.backends' must list"),
        (["policy", "extra"], 1, False, "unknown key\\(s\\) 'policy.extra'"),
        (["timeouts"], {"call": 0}, False, "'timeouts.call' must be a positive"),
        (["timeouts"], {"handshake": 0}, False, "'timeouts.handshake' must be a"),
        # found at load, before any protocol step (they used to fail later)
        (["tls", "key"], "bank.pem", False, "'tls.key' holds a certificate, not a"),
        (["tls", "key"], "ca.key", False, "'tls.key' does not belong to the cert"),
        (["tls", "cert"], "bank.key", False, "'tls.cert' must hold PEM certif"),
        (["tls", "ca_cert"], "bank.csv", False, "'tls.ca_cert' must hold PEM"),
        (["data", "path"], ".", False, "'data.path' names a directory"),
        (["output"], "bank.csv/out.json", False, "'output' lies under .*bank.csv"),
        (["output"], ".", False, "'output' names .*, which exists and is not a file"),
        (["domain", "bounds", "incme"], [0, 1], False, "did you mean 'income'"),
    ],
)
def test_bad_party_config_names_the_key(files, path, value, delete, match):
    if path[-1] == "path" and value.endswith(".txt"):
        (files / value).write_text("x")
    with pytest.raises(ConfigError, match=match):
        _party(files, _broken(PARTY, path, value, delete))


@pytest.mark.parametrize(
    "path, value, delete, match",
    [
        (["model", "objective"], "poisson", False, "'model.objective' must be"),
        (["model", "epsilon"], 0, False, "'model.epsilon' must be > 0"),
        (["model", "budget"], "bottom-up", False, "needs model.party_epsilon"),
        (["model", "noise_generation"], "magic", False, "model.noise_generation"),
        (["parties", 1, "label"], True, False, "exactly one party with label"),
        (["parties", 1, "name"], "bank", False, "distinct names"),
        (["output"], None, True, "key 'output' is required"),
        (["output"], "bank.csv/model", False, "'output' lies under .*bank.csv"),
        (
            ["model", "mechanism"],
            "gaussian",
            False,
            "'model.delta' is refused: .*'gaussian'",
        ),
        (["model", "postprocessing"], "magic", False, "'model.postprocessing'"),
        (["model", "random_state"], -1, False, "'model.random_state'"),
        (
            ["model"],
            {
                "objective": "linear",
                "budget": "bottom-up",
                "party_epsilon": [1.0, 1.0],
                "pairwise_epsilon": [[0, 0.2], [0.3, 0]],
            },
            False,
            "each pair must agree on one value",
        ),
        (
            ["model"],
            {
                "objective": "linear",
                "budget": "bottom-up",
                "mechanism": "gaussian",
                "delta": 1e-6,
                "party_epsilon": [1.0, 1.0],
                "pairwise_epsilon": [[0, 0.2], [0.2, 0]],
            },
            False,
            'supports mechanism="laplace" only',
        ),
        (["model", "party_epsilon"], [1, "x"], False, "one number per party"),
    ],
)
def test_bad_server_config_names_the_key(files, path, value, delete, match):
    with pytest.raises(ConfigError, match=match):
        _server(files, _broken(SERVER, path, value, delete))


@pytest.mark.parametrize(
    "table, path, wrong, right",
    [
        ("party", ["policy", "max_epsilonn"], "policy.max_epsilonn", "max_epsilon"),
        ("party", ["polcy"], "polcy", "policy"),
        ("party", ["data", "idcolumn"], "data.idcolumn", "id_column"),
        ("server", ["model", "epsilom"], "model.epsilom", "epsilon"),
        ("server", ["timeout"], "timeout", "timeouts"),
    ],
)
def test_a_misspelled_key_is_unknown_with_a_suggestion(
    files, table, path, wrong, right
):
    """Reported as unknown (with the closest known key), never as the right key
    missing, even when that key is required."""
    base = PARTY if table == "party" else SERVER
    t = copy.deepcopy(base)
    node = t
    for key in path[:-1]:
        node = node[key]
    right_key = path[-1].replace(path[-1], right)
    if right_key in node:
        node[path[-1]] = node.pop(right_key)  # the right key, misspelled
    else:
        node[path[-1]] = {}
    load = _party if table == "party" else _server
    with pytest.raises(ConfigError) as info:
        load(files, t)
    text = str(info.value)
    assert f"unknown key(s) '{wrong}' (did you mean '" in text and right in text
    assert "is required" not in text


def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_party_config(tmp_path / "nope.toml")
    (tmp_path / "bad.toml").write_text("name = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_server_config(tmp_path / "bad.toml")


def test_policy_refuses_with_every_reason():
    policy = Policy(max_epsilon=1.0, max_delta=1e-6, backends=("bfv",), min_samples=50)
    ok = {
        "epsilon": 1.0,
        "delta": 0.0,
        "backend": "bfv",
        "objective": "linear",
        "noise_generation": "threshold",
    }
    policy.check(ok, n_samples=50)
    bad = dict(ok, epsilon=2.0, delta=1e-3, backend="plaintext")
    bad["noise_generation"] = "dealer"
    with pytest.raises(PolicyError) as info:
        policy.check(bad, n_samples=10)
    text = str(info.value)
    for reason in [
        "epsilon 2 exceeds max_epsilon 1",
        "delta 0.001 exceeds max_delta 1e-06",
        "backend 'plaintext' is not in the accepted ['bfv']",
        "noise_generation 'dealer' is not in the accepted",
        "n_samples 10 is below min_samples 50",
    ]:
        assert reason in text
    # bottom-up: the party's own total counts
    with pytest.raises(PolicyError, match="epsilon 1.5 exceeds"):
        policy.check(ok, n_samples=50, own_epsilon=1.5)


def _doc_blocks():
    """The TOML blocks (``.. code-block:: toml``) of the deployment guide, but
    the quick start's files (captioned; ``test_quick_start`` runs those)."""
    import re
    import textwrap
    from pathlib import Path

    lines = (
        (Path(__file__).resolve().parents[3] / "doc/user_guide/federated.rst")
        .read_text()
        .splitlines()
    )
    blocks, i = [], 0
    while i < len(lines):
        if not re.match(r"^\.\. code-block:: toml\s*$", lines[i]):
            i += 1
            continue
        i, captioned = i + 1, False
        while i < len(lines) and re.match(r"^\s+:[\w-]+:", lines[i]):
            captioned = captioned or ":caption:" in lines[i]
            i += 1
        body = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
            body.append(lines[i])
            i += 1
        if not captioned:
            blocks.append(textwrap.dedent("\n".join(body)).strip() + "\n")
    return blocks


def test_the_guide_configs_are_valid(tmp_path):
    blocks = _doc_blocks()
    party = next(b for b in blocks if b.startswith('name = "bank"'))
    server = next(b for b in blocks if b.startswith('name = "server"'))
    make_certs(tmp_path / "certs", ["bank", "server"])
    (tmp_path / "bank.csv").write_text("customer_id,age,income,defaulted\n")
    (tmp_path / "party.toml").write_text(party)
    (tmp_path / "server.toml").write_text(server)
    p = load_party_config(tmp_path / "party.toml")
    assert p.label == "defaulted" and p.policy.backends == ("bfv",)
    assert p.classes == (0, 1)
    s = load_server_config(tmp_path / "server.toml")
    assert [q.name for q in s.parties] == ["bank", "insurer", "telco"]
    assert s.label_party == "bank" and s.objective == "logistic"


# ------------------------------------------- outputs: checked by writing, at load
@pytest.mark.skipif(
    not Path("/proc/self").is_dir() or os.geteuid() != 0,
    reason="os.access says yes to root under /proc: only root shows the gap",
)
def test_an_output_under_proc_is_refused_at_load_even_as_root(files):
    """As root, os.access(/proc, W_OK) is true, yet no file can be created
    there: the run used to find out after the protocol, when writing the model."""
    assert os.access("/proc", os.W_OK)
    table = copy.deepcopy(SERVER)
    table["output"] = "/proc/skdp-model"
    with pytest.raises(ConfigError, match=r"'output' cannot be written: no file can"):
        _server(files, table)


def test_an_output_without_free_space_is_refused_at_load(files, monkeypatch):
    import collections

    real = os.statvfs
    vfs = collections.namedtuple("vfs", "f_bavail f_frsize")

    def full(path):
        if Path(path) == files / "out" or Path(path) == files:
            return vfs(f_bavail=10, f_frsize=4096)
        return real(path)

    monkeypatch.setattr(os, "statvfs", full)
    with pytest.raises(ConfigError, match=r"'output' cannot be written: .* 40960 b"):
        _server(files, copy.deepcopy(SERVER))
    with pytest.raises(ConfigError, match=r"'output' cannot be written: .* bytes fr"):
        _party(files, {**copy.deepcopy(PARTY), "output": "bank-out.json"})
    assert not [p.name for p in files.iterdir() if p.name.startswith(".skdp-probe")]


def test_the_handshake_deadline_defaults_to_10_s_and_is_read(files):
    """``timeouts.handshake``: seconds an incoming connection may take for its
    TLS handshake (a stranger's stalled one is closed then)."""
    assert _party(files, PARTY).timeouts.handshake == 10.0
    table = copy.deepcopy(PARTY)
    table["timeouts"] = {"handshake": 2.5}
    assert _party(files, table).timeouts.handshake == 2.5
    server = copy.deepcopy(SERVER)
    server["timeouts"] = {"handshake": 4}
    assert _server(files, server).timeouts.handshake == 4.0
