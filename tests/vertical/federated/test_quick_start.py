"""The federated page's quick start runs as written (issue 39).

The test reads the blocks of the "Quick start on one machine" section of
``doc/user_guide/federated.rst`` in order: each block with a ``:caption:`` is
a file of that name, each ``bash`` block is run by bash, in one script, in an
empty folder. Nothing is copied into the test, so the page and the test cannot
drift apart. Only the ports change: each ``127.0.0.1:PORT`` of the page gets a
free port (another run may hold 7000-7003). ``skdp-certs``, ``skdp-party``,
``skdp-server`` and ``python`` are this interpreter with this checkout (the
console scripts' own entry points), first on the ``PATH``.

The script runs in its own session (process group): however it ends, every
process it started is killed with the group, and the test checks that none is
left.
"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("grpc")
pytest.importorskip("cryptography")
pytest.importorskip("tenseal")  # the quick start uses the default bfv backend

from skdp.accounting import PrivacyBudget  # noqa: E402
from skdp.vertical import load_model  # noqa: E402
from tests.vertical.federated._harness import ROOT, env, free_ports  # noqa: E402

PAGE = ROOT / "doc" / "user_guide" / "federated.rst"
SECTION = "Quick start on one machine"
TIMEOUT = 300  # seconds for the whole quick start on a loaded 2-core machine
_DIRECTIVE = re.compile(r"^\.\. code-block:: *(\S+)\s*$")


def quick_start_blocks(text=None):
    """``[(language, caption or None, body)]`` of the section, in order."""
    lines = (PAGE.read_text() if text is None else text).splitlines()
    start = lines.index(SECTION)
    assert set(lines[start + 1]) == {"-"}, "the section's title changed"
    end = next(
        i
        for i in range(start + 2, len(lines) - 1)
        if lines[i + 1] and set(lines[i + 1]) == {"-"} and len(lines[i + 1]) > 3
    )
    blocks, i = [], start + 2
    while i < end:
        m = _DIRECTIVE.match(lines[i])
        if not m:
            i += 1
            continue
        language, caption, i = m.group(1), None, i + 1
        while i < end and re.match(r"^\s+:[\w-]+:", lines[i]):
            option = re.match(r"^\s+:caption:\s*(.+)$", lines[i])
            caption = option.group(1).strip() if option else caption
            i += 1
        body = []
        while i < end and (not lines[i].strip() or lines[i].startswith(" ")):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        indent = min(len(b) - len(b.lstrip()) for b in body if b.strip())
        blocks.append((language, caption, "\n".join(b[indent:] for b in body) + "\n"))
    return blocks


def _shims(folder):
    """``skdp-*`` and ``python`` as this interpreter with this checkout."""
    folder.mkdir()
    for kind in ("certs", "party", "server"):
        entry = f"from skdp.vertical.federated._cli import {kind}_main as main"
        script = folder / f"skdp-{kind}"
        script.write_text(
            "#!/bin/sh\n"
            f'exec "{sys.executable}" -c "import sys; {entry}; sys.exit(main())" "$@"\n'
        )
        script.chmod(0o755)
    python = folder / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return folder


def _group_gone(pgid, bound=10.0):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_the_page_has_a_complete_quick_start():
    blocks = quick_start_blocks()
    files = {caption for _, caption, _ in blocks if caption}
    assert files == {
        "make_data.py",
        "bank.toml",
        "insurer.toml",
        "telco.toml",
        "server.toml",
        "show_model.py",
    }
    script = "".join(body for language, _, body in blocks if language == "bash")
    for command in ("skdp-certs init-ca", "skdp-party --config", "skdp-server"):
        assert command in script
    # one machine: every address of the configs is on 127.0.0.1
    configs = "".join(body for _, caption, body in blocks if caption in files)
    addresses = re.findall(r'"([^"]+:\d+)"', configs)
    assert addresses and all(a.startswith("127.0.0.1:") for a in addresses)


def test_the_quick_start_runs_as_written(tmp_path):
    blocks = quick_start_blocks()
    text = "".join(body for _, _, body in blocks)
    ports = sorted(set(re.findall(r"127\.0\.0\.1:(\d+)", text)))
    free = dict(zip(ports, map(str, free_ports(len(ports)))))

    def local(body):
        return re.sub(r"127\.0\.0\.1:(\d+)", lambda m: f"127.0.0.1:{free[m[1]]}", body)

    work = tmp_path / "quick start"  # a space in the path, as users have
    work.mkdir()
    script = ["set -e"]
    for language, caption, body in blocks:
        if caption is not None:
            (work / caption).write_text(local(body))
        elif language == "bash":
            script.append(local(body))
    (tmp_path / "quick_start.sh").write_text("\n".join(script))
    e = env()
    e["PATH"] = str(_shims(tmp_path / "bin")) + os.pathsep + e["PATH"]
    e.pop("SKDP_REPRODUCIBLE_NOISE", None)  # as a user runs it
    proc = subprocess.Popen(
        ["bash", str(tmp_path / "quick_start.sh")],
        cwd=work,
        env=e,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: killed as one
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n[killed by the test after {TIMEOUT} s]"
    finally:
        try:  # the background parties, whatever happened
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert _group_gone(proc.pid), "a process of the quick start outlived the test"
    assert proc.returncode == 0, f"stdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}"
    for party in ("bank", "insurer", "telco"):
        assert f"skdp-party {party}: done" in out, out + err
    assert "skdp-server server: model released to" in out, out + err
    model = load_model(work / "release" / "model")
    assert model.coef_.shape == (6,) and np.all(np.isfinite(model.coef_))
    assert list(model.feature_names_in_) == [
        "age",
        "income",
        "claims",
        "premium",
        "minutes",
        "data_gb",
    ]
    assert model.privacy_spent_ == PrivacyBudget(1.0, 0.0)
    assert model.party_privacy_.shape == (3,)
    assert np.all(model.party_privacy_ <= 1.0)
    # show_model.py ran on the released model (the last step of the page)
    assert "PrivacyBudget(epsilon=1.0, delta=0.0)" in out
    assert Path(work / "release" / "model.json").is_file()
