"""Every Python block of the documentation runs, page by page, in order.

A page's blocks share one namespace, as a reader pasting them one after the other
would. ``.. testsetup::`` blocks (not shown in the HTML: Sphinx's doctest extension
hides them) run in their place and give fragments what they need, e.g. the data a
page assumes; ``.. testcleanup::`` blocks run at the end, also after a failure.
``__file__`` is the page's path (a setup can find files next to it). A setup may
skip the rest of its page (``pytest.importorskip`` of an engine the test extra does
not install); the test then reports how many blocks ran before.

Blocks written as ``>>>`` sessions are checked as doctests (their outputs must
match); other blocks must simply run. Each page runs in an empty temporary
folder, so files a snippet writes go nowhere.

A literal block (``::``) that looks like Python fails the test: mark it
``.. code-block:: python`` so that it is run, or write it in another language.
"""

import doctest
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "doc"
# generated pages (API reference, gallery, benchmarks) are not hand-written text
GENERATED = {"_build", "_generated", "auto_examples", "generated", "benchmarks"}
PAGES = sorted(
    p
    for p in DOC.rglob("*.rst")
    if not GENERATED & set(p.relative_to(DOC).parts[:-1])
    and p.name not in {"api.rst", "sg_execution_times.rst"}
)

# pages whose examples start worker processes (joblib's loky, a Dask cluster) or
# refit many models: several seconds each, so they run with ``-m slow`` (CI runs
# ``pytest -m slow tests/test_doc_snippets.py``; see CONTRIBUTING.md)
SLOW_PAGES = {
    "accounting.rst",
    "beyond_one_machine.rst",
    "influence.rst",
    "noisy_labels.rst",
}

_DIRECTIVE = re.compile(
    r"^(\s*)\.\. (code-block|code|sourcecode|testsetup|testcleanup|testcode)::\s*(\S*)"
)
_PYTHON = {"python", "python3", "py", "pycon", "ipython", ""}
_LOOKS_LIKE_PYTHON = re.compile(r"^(>>> |import \w|from [\w.]+ import )")


def _indented_block(lines, start, base_indent):
    """The lines after ``start`` indented deeper than ``base_indent`` (options
    skipped), dedented; and the index after the block."""
    i = start
    # directive options (":hide:", ":caption: ...") directly under the directive
    while i < len(lines) and re.match(r"^\s+:[\w-]+:", lines[i]):
        i += 1
    body = []
    while i < len(lines):
        line = lines[i]
        if line.strip() and len(line) - len(line.lstrip()) <= base_indent:
            break
        body.append(line)
        i += 1
    while body and not body[-1].strip():
        body.pop()
    while body and not body[0].strip():
        body.pop(0)
    indent = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
    return [b[indent:] for b in body], i


def python_blocks(text):
    """``(line number, kind, code)`` of every Python block of an rst page, in
    order; kind is "setup", "cleanup" (``.. testcleanup::``, run at the end
    even after a failure) or "code". Also ``(line, "literal", code)`` for a
    ``::`` literal block that looks like Python."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        m = _DIRECTIVE.match(lines[i])
        if m:
            indent, name, language = len(m.group(1)), m.group(2), m.group(3)
            body, end = _indented_block(lines, i + 1, indent)
            if name in ("testsetup", "testcleanup"):
                kind = "setup" if name == "testsetup" else "cleanup"
                out.append((i + 1, kind, "\n".join(body)))
            elif name == "testcode" or language.lower() in _PYTHON:
                out.append((i + 1, "code", "\n".join(body)))
            i = end
            continue
        if lines[i].rstrip().endswith("::") and not lines[i].lstrip().startswith(".."):
            indent = len(lines[i]) - len(lines[i].lstrip())
            body, end = _indented_block(lines, i + 1, indent)
            if body and _LOOKS_LIKE_PYTHON.match(body[0]):
                out.append((i + 1, "literal", "\n".join(body)))
            i = end
            continue
        i += 1
    return out


def run_block(code, namespace, name):
    """Run one block: as a doctest if it is a ``>>>`` session, else as code."""
    if code.lstrip().startswith(">>>"):
        test = doctest.DocTestParser().get_doctest(code, namespace, name, name, 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test, clear_globs=False)
        assert runner.failures == 0, f"{name}: doctest output differs (see above)"
    else:
        exec(compile(code, name, "exec"), namespace)


def test_the_parser_finds_blocks_setups_and_python_literals():
    page = "\n".join(
        [
            "Text::",
            "",
            "    pip install x",
            "",
            ".. testsetup::",
            "",
            "   a = 1",
            "",
            ".. code-block:: python",
            "   :caption: c",
            "",
            "   b = a + 1",
            "   if b:",
            "",
            "       b += 1",
            "",
            ".. code-block:: bash",
            "",
            "   echo no",
            "",
            "Also::",
            "",
            "    import os",
        ]
    )
    blocks = python_blocks(page)
    assert [(kind, code) for _, kind, code in blocks] == [
        ("setup", "a = 1"),
        ("code", "b = a + 1\nif b:\n\n    b += 1"),
        ("literal", "import os"),
    ]


def test_the_pages_have_python_blocks():
    counts = {p.name: len(python_blocks(p.read_text())) for p in PAGES}
    assert counts["private_regression.rst"] >= 1
    assert sum(counts.values()) >= 20
    assert SLOW_PAGES <= set(counts), "a slow page was renamed: update SLOW_PAGES"


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_PAGES else p
        for p in PAGES
    ],
    ids=[str(p.relative_to(DOC)) for p in PAGES],
)
def test_page_snippets_run(page, tmp_path, monkeypatch):
    blocks = python_blocks(page.read_text())
    if not blocks:
        pytest.skip("no Python block")
    literal = [line for line, kind, _ in blocks if kind == "literal"]
    assert not literal, (
        f"{page.name}: the literal blocks at lines {literal} look like Python; "
        "write them as '.. code-block:: python' so that this test runs them"
    )
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"doc_{page.stem}", "__file__": str(page)}
    ran, skipped, completed = 0, None, False
    try:
        for line, kind, code in blocks:
            if kind == "cleanup":
                continue
            try:
                run_block(code, namespace, f"{page.relative_to(DOC)}:{line}")
            except pytest.skip.Exception as exc:
                skipped = f"line {line}: {exc.msg}"
                break
            ran += kind == "code"
        completed = skipped is None
    finally:
        for line, kind, code in blocks:
            if kind != "cleanup":
                continue
            try:
                run_block(code, namespace, f"{page.relative_to(DOC)}:{line}")
            except Exception:
                if completed:  # after a failure or a skip, the first cause counts
                    raise
    if skipped:
        pytest.skip(f"{skipped}; the {ran} code blocks before it ran and passed")
