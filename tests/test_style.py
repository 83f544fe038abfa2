"""The code base stays ruff-clean (lint and format), as configured in pyproject.toml."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff():
    exe = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(exe).exists():
        pytest.skip("ruff not installed (pip install skdp[test])")
    return exe


@pytest.mark.parametrize("args", [["check"], ["format", "--check"]])
def test_ruff_clean(args):
    result = subprocess.run(
        [_ruff(), *args, "skdp", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _skdp_modules():
    return sorted((ROOT / "skdp").rglob("*.py"))


def test_modules_stay_small():
    """One job per module: none grows past ~600 lines (650 with its docstrings)."""
    long = {
        str(p.relative_to(ROOT)): n
        for p in _skdp_modules()
        if (n := len(p.read_text().splitlines())) > 650
    }
    assert not long, long


def test_no_subpackage_imports_another_public_subpackages_private_module():
    """skdp-internal code shared across subpackages lives in ``skdp._fm`` (or a
    public module); ``linear_model`` never reaches into ``vertical._x`` etc."""
    import ast

    offenders = []
    for path in _skdp_modules():
        parts = path.relative_to(ROOT).parts
        own = parts[1] if len(parts) > 2 else None
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.module):
                continue
            names = node.module.split(".")
            if (
                names[0] == "skdp"
                and len(names) >= 3
                and not names[1].startswith("_")
                and names[1] != own
                and any(name.startswith("_") for name in names[2:])
            ):
                offenders.append(f"{'/'.join(parts)}: from {node.module}")
    assert not offenders, offenders
