"""The pages the docs build generates: one per benchmark, and the user guide's
list of pages not yet placed in its reading order (doc/_ext/skdp_docs.py)."""

import importlib.util
from pathlib import Path

import pytest

EXT = Path(__file__).resolve().parents[1] / "doc" / "_ext" / "skdp_docs.py"


@pytest.fixture(scope="module")
def docs():
    spec = importlib.util.spec_from_file_location("skdp_docs", EXT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(path, text="x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


def _tree(tmp_path):
    results, snapshot = tmp_path / "results", tmp_path / "snapshot"
    _write(results / "fm.md", "### FM\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    _write(results / "summary.md", "### Summary (quick mode)\n\n| b | s |\n|---|---|\n")
    _write(results / "brand_new.md", "### A new benchmark\n\ntext\n")
    _write(results / "brand_new.png", b"png")
    _write(results / "brand_new_extra.png", b"png2")
    _write(results / "fm_utility.png", b"png3")  # its table is only in the snapshot
    _write(results / "lonely.png", b"png4")
    _write(snapshot / "README.md", "### Snapshot\n\n```bash\n# a comment\nrun\n```\n")
    _write(snapshot / "full" / "fm_utility.md", "### Utility\n\ntext\n")
    _write(snapshot / "quick" / "fm.md", "### FM quick\n")
    return results, snapshot


def test_a_new_benchmark_gets_a_page_with_its_plots(docs, tmp_path):
    results, snapshot = _tree(tmp_path)
    out, index = tmp_path / "doc" / "benchmarks", tmp_path / "doc" / "index.rst"
    docs.write_benchmark_pages(results, snapshot, out, index, bench_dir=None)
    pages = sorted(p.stem for p in out.glob("*.rst"))
    # every table stem and the plot without a table; no page for the summary
    assert pages == ["brand_new", "fm", "fm_utility", "lonely"]
    new = (out / "brand_new.rst").read_text()
    assert "_plots/run/brand_new.png" in new and "_plots/run/brand_new_extra.png" in new
    assert (out / "_plots" / "run" / "brand_new_extra.png").read_bytes() == b"png2"
    # a plot goes to the longest table stem it starts with, across all runs
    utility = (out / "fm_utility.rst").read_text()
    assert "_plots/run/fm_utility.png" in utility
    assert "fm_utility.png" not in (out / "fm.rst").read_text()
    assert "no ``fm_utility.md``" in utility  # this run drew it, its table is elsewhere
    # this machine's run comes before the snapshot on a page
    fm = (out / "fm.rst").read_text()
    assert fm.index("This machine's run") < fm.index("Snapshot: quick mode")
    text = index.read_text()
    assert "   /benchmarks/fm" in text and "   /benchmarks/brand_new" in text
    assert ".. code-block:: bash" in text and "   # a comment" in text


def test_a_removed_benchmark_loses_its_page(docs, tmp_path):
    results, snapshot = _tree(tmp_path)
    out, index = tmp_path / "doc" / "benchmarks", tmp_path / "doc" / "index.rst"
    docs.write_benchmark_pages(results, snapshot, out, index, bench_dir=None)
    (results / "brand_new.md").unlink()
    for plot in results.glob("brand_new*.png"):
        plot.unlink()
    docs.write_benchmark_pages(results, snapshot, out, index, bench_dir=None)
    assert not (out / "brand_new.rst").exists()
    assert not list(out.glob("_plots/*/brand_new*"))


def test_no_results_at_all_says_how_to_make_them(docs, tmp_path):
    out, index = tmp_path / "doc" / "benchmarks", tmp_path / "doc" / "index.rst"
    docs.write_benchmark_pages(tmp_path / "none", None, out, index, bench_dir=None)
    assert "python benchmarks/run.py" in index.read_text()
    assert not list(out.glob("*.rst"))


def test_what_this_shows_falls_back_to_the_module_docstring(docs, tmp_path):
    bench = tmp_path / "benchmarks"
    _write(bench / "bench_brand_new.py", '"""Speed of ``thing`` on data.\n\nMore."""\n')
    results = tmp_path / "results"
    _write(results / "brand_new.md", "### New\n")
    out, index = tmp_path / "doc" / "benchmarks", tmp_path / "doc" / "index.rst"
    docs.write_benchmark_pages(results, None, out, index, bench_dir=bench)
    page = (out / "brand_new.rst").read_text()
    assert "**What this shows.** Speed of ``thing`` on data." in page
    assert "python benchmarks/bench_brand_new.py --full" in page


def test_unlisted_user_guide_pages_are_listed_after_the_order(docs, tmp_path):
    guide = tmp_path / "doc" / "user_guide"
    for name in ("a", "b", "new_page"):
        _write(guide / f"{name}.rst", "Title\n=====\n")
    toc = tmp_path / "doc" / "user_guide.rst"
    _write(toc, ".. toctree::\n\n   user_guide/b\n   user_guide/a\n")
    more = tmp_path / "doc" / "_generated" / "more.rst"
    docs.write_unlisted_pages(toc, guide, more)
    text = more.read_text()
    assert "   /user_guide/new_page" in text
    assert "/user_guide/a\n" not in text and "/user_guide/b\n" not in text
    _write(toc, toc.read_text() + "   user_guide/new_page\n")
    docs.write_unlisted_pages(toc, guide, more)
    assert "toctree" not in more.read_text()


def test_the_api_reference_lists_no_internals(docs, tmp_path):
    """Issue 39: helpers shared between subpackages are not user API."""
    docs.write_api_page(tmp_path / "api.rst")
    text = tmp_path.joinpath("api.rst").read_text()
    listed = {line.strip() for line in text.splitlines() if line.startswith("   ")}
    for name in (
        "atomic_fit",
        "external_stacklevel",
        "install_hint",
        "wrap_transform_output",
        "check_int",
    ):
        assert name not in listed, name
    for module in docs.INTERNAL_MODULES:
        assert f".. automodule:: {module}\n" not in text
    assert "check_epsilon" in listed and "track_budget" in listed


def test_list_items_stay_items(docs):
    text = "## Misses\n\n- first cell: ahead by 2.\n- second cell:\n  ahead by 3.\n"
    kept, lab = docs.split_lab_notes(text)
    assert kept.splitlines()[2:] == [
        "- first cell: ahead by 2.",
        "- second cell: ahead by 3.",
    ]
    assert lab == ""
