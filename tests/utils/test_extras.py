"""Install hints: the extras they name are setup.cfg's, and no message in skdp
names an install command that fails (``pip install skdp[...]`` before skdp is on
PyPI)."""

import configparser
import re
from pathlib import Path

import pytest

from skdp.utils.extras import EXTRAS, install_hint

ROOT = Path(__file__).resolve().parents[2]


def _setup_cfg_extras():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    section = cfg["options.extras_require"]
    return {k: tuple(v.split()) for k, v in section.items()}


def test_extras_match_setup_cfg():
    declared = _setup_cfg_extras()
    for extra, requirements in EXTRAS.items():
        assert declared[extra] == requirements, extra


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_hint_names_every_package_and_the_extra(extra):
    hint = install_hint(extra)
    for requirement in EXTRAS[extra]:
        assert f'"{requirement}"' in hint
    assert f'pip install ".[{extra}]"' in hint


def test_no_message_or_docstring_names_an_uninstallable_command():
    # "pip install skdp[...]" needs skdp on PyPI: a line may name it only to say
    # that it applies once skdp is published (doc/install.rst says which applies)
    bad = re.compile(r"""pip install\s+['"]?skdp\[""")
    files = [
        *sorted((ROOT / "skdp").rglob("*.py")),
        *sorted((ROOT / "doc" / "user_guide").rglob("*.rst")),
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
    ]
    offenders = [
        f"{path.relative_to(ROOT)}:{i}"
        for path in files
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if bad.search(line) and "published" not in line
    ]
    assert not offenders, offenders
