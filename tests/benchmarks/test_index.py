"""The headline index of a benchmark run (benchmarks/_index.py).

Every headline figure must equal the detail-table cell it was read from, and
every ``n/a`` must say why. The index is built here from small synthetic
detail tables (and, as a second check, from the committed quick snapshot).
"""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import _index  # noqa: E402

REASONS = {
    "diffprivlib": ("not installed here", "diffprivlib: not installed here (test)."),
    "opendp": ("OpenDP not installed here", "Theil-Sen: OpenDP missing (test)."),
}

FM_UTILITY = """\
### FM utility on real data (quick mode)

#### diamonds ln(price): test MSE, median of 2 seeds

n_train = 800, d = 9.

| eps | FM Laplace | FM Gaussian | diffprivlib | AdaSSP | non-private |
|---|---|---|---|---|---|
| 0.1 | 1.042 | 0.8716 | n/a | 0.99 | 0.02988 |
| 1 | 0.2628 | 0.0844 | n/a | 0.6404 | 0.02988 |

#### Adult income > 50K: test accuracy, median of 2 seeds

| eps | FM Laplace | FM Gaussian | diffprivlib | AdaSSP | non-private |
|---|---|---|---|---|---|
| 1 | 0.77 | 0.81 | n/a | 0.76 | 0.84 |
"""

FM_UTILITY_REFERENCE = """\
### FM utility on real data (full mode)

#### diamonds ln(price): test MSE, median of 10 seeds

| eps | FM Laplace | FM Gaussian | diffprivlib | AdaSSP | non-private |
|---|---|---|---|---|---|
| 0.1 | 0.657 | 0.3462 | 7.339e+04 | 0.782 | 0.03104 |
| 0.5 | 0.189 | 0.07997 | 4.681e+05 | 0.4358 | 0.03104 |
"""

SMALL_DATA = """\
### Small-data regression (quick mode)

#### CASchools test score: test MSE / non-private OLS, median of 2 seeds

n_train = 294, d = 6.

| eps | n*eps | FM declared | FM Laplace | AdaSSP | Theil-Sen | diffprivlib |
|---|---|---|---|---|---|---|
| 0.5 | 147 | 5.963 | 126.7 | 26.58 | 1.382 | n/a |
"""

PRIVATE_LOGISTIC = """\
### Private logistic regression on real data (quick mode)

#### HMDA denied: test accuracy, mean of 2 seeds

n_train = 1666, d = 13, classes = 2.

| eps | mode | FM | OP | auto | diffprivlib | non-private | auto chose (rho) |
|---|---|---|---|---|---|---|---|
| 1 | pure | 0.8873 | 0.881 | 0.881 | 0.8347 | 0.8985 | op (0.52) |
| 1 | (eps, delta) | 0.881 | 0.8817 | 0.8817 | 0.8347 | 0.8985 | op (0.605) |

Paired differences, HMDA denied:

| eps | mode | auto - FM | auto - OP | auto - diffprivlib |
|---|---|---|---|---|
| 1 | pure | -0.0063 +- 0.0049 | +0.0000 +- 0.0000 | +0.0462 +- 0.0084 |

#### CPU seconds per fit (median over cells; process_time)

| task | n_train | FM | OP | auto | diffprivlib | non-private |
|---|---|---|---|---|---|---|
| HMDA denied | 1666 | 0.007 | 0.009 | 0.011 | n/a | 0.006 |
"""

LABEL_LEARNING = """\
Quick mode.

### Test accuracy (mean over 2 seeds; every column is an eps-label-DP release)

| task | release | learner | clean | eps 0.5 | eps 2 |
|---|---|---|---|---|---|
| biopsy | RR | LR | 0.966 | 0.912 | 0.956 |
| biopsy | RRP | hybrid |  | 0.954 | 0.963 |
| biopsy | REF | LP-2ST |  | 0.871 | 0.961 |

### Label-private regression: test MSE / clean OLS test MSE (mean over 2 seeds)

| task | n_train | config | eps 0.5 | eps 2 |
|---|---|---|---|---|
| Wage ln(wage) | 2100 | bins | 2.278 | 1.330 |
| Wage ln(wage) | 2100 | auto | 1.628 (L0) | 1.107 (L0) |
| Wage ln(wage) | 2100 | clean RidgeCV | 1.000 |  |
"""

VERTICAL = """\
## Vertical functional mechanism (quick mode)

### Test MSE against K (d = 800, epsilon = 1, plaintext backend)

n = 2000.

| sparsity | K | MSE centralized FM | MSE vertical (threshold, median) |
|---|---|---|---|
| 1 | 2 | 0.01344 | 0.01011 |
| 1 | 4 | 0.01344 | 0.01012 |

#### digits (10 classes): test accuracy, median of 2 seeds

| eps | central FM | vertical top-down | diffprivlib (central) |
|---|---|---|---|
| 1 | 0.1676 | 0.1231 | n/a |
"""

FEDERATED = """\
### Federated vertical FM, bfv, 4 party processes + server

| objective | n | d | K | federated wall s | in-process fit s |
|---|---|---|---|---|---|
| linear | 2000 | 8 | 4 | 10.94 | 0.507 |
"""

SPEED = "\n".join(
    [
        "## Exact FM statistics: speed, quick mode",
        "",
        "### 1. CPU seconds (best of 3) and the ratio to the float64 X^T X floor",
        "",
        "| n | d | BLAS threads | FM fit Laplace | sklearn LinearRegression "
        "| diffprivlib LinearRegression |",
        "|---|---|---|---|---|---|",
        "| 20,000 | 10 | 1 | 0.004 (17.1x) | 0.003 (13.3x) | not available |",
    ]
)

DETAILS = {
    "fm_utility": FM_UTILITY,
    "small_data": SMALL_DATA,
    "private_logistic": PRIVATE_LOGISTIC,
    "label_learning": LABEL_LEARNING,
    "vertical": VERTICAL,
    "bench_federated": FEDERATED,
    "bench_statistics_speed": SPEED,
}


@pytest.fixture
def run(tmp_path):
    run_dir, ref_dir = tmp_path / "results", tmp_path / "reference"
    run_dir.mkdir()
    ref_dir.mkdir()
    for stem, text in DETAILS.items():
        (run_dir / f"{stem}.md").write_text(text)
    (run_dir / "fm_utility.png").write_bytes(b"")
    (ref_dir / "fm_utility.md").write_text(FM_UTILITY_REFERENCE)
    return run_dir, ref_dir


def _cell_in_file(path, title, row, column):
    """The cell's text, found without benchmarks/_index.py: the table under
    the heading ``title`` whose header has ``column``, its ``row``-th row."""
    lines = Path(path).read_text().splitlines()
    under = False
    for i, line in enumerate(lines):
        if line.startswith("#"):
            under = line.lstrip("#").strip() == title
            continue
        if under and line.startswith("|") and lines[i + 1].startswith("|---"):
            header = [c.strip() for c in line.strip().strip("|").split("|")]
            if column in header:
                body = lines[i + 2 + row]
                cells = [c.strip() for c in body.strip().strip("|").split("|")]
                return cells[header.index(column)]
    raise AssertionError(f"no column {column!r} under {title!r} in {path}")


def _values(questions):
    for q in questions:
        for row in q.rows:
            for cell in row.cells:
                if isinstance(cell, _index.Pick):
                    # the figure shown: the best of this run's candidates ...
                    if cell.best() is not None:
                        yield q, row, cell.best()[1]
                    # ... and the reference run's figures of its missing ones
                    for _, v in cell.missing:
                        if v.reference is not None:
                            yield q, row, v.reference
                            if v.reference_skdp is not None:
                                yield q, row, v.reference_skdp


def _check_index(questions, run_dir, ref_dir):
    md = _index.render_markdown(questions, run_dir, ref_dir)
    page = _index.render_html(questions, run_dir, ref_dir)
    rows_md = [line for line in md.splitlines() if line.startswith("| ")]
    n_checked = 0
    for _, _row, v in _values(questions):
        folder = run_dir if v.folder == "run" else ref_dir
        cell = _cell_in_file(folder / f"{v.stem}.md", v.table, v.row, v.column)
        assert cell == v.text
        # the number shown is the cell's leading number, character for character
        assert cell.startswith(v.shown) and float(v.shown.replace(",", "")) == v.number
        assert any(v.shown in line for line in rows_md), v
        assert v.shown in page
        n_checked += 1
    # every n/a says why, in the Markdown and in the HTML page
    cells_html = re.findall(r"<td[^>]*>(.*?)</td>", page)
    for text in ["\n".join(rows_md), *cells_html]:
        for m in re.finditer(r"n/a", text):
            assert re.match(r"n/a \([^()]*\w[^()]*\)", text[m.start() :]), text[
                m.start() : m.start() + 60
            ]
    assert "<script" not in page and "http" not in page
    return md, page, n_checked


def test_headlines_equal_their_detail_cells(run):
    run_dir, ref_dir = run
    questions = _index.build_index(run_dir, ref_dir, reasons=REASONS)
    assert [q.key for q in questions] == [
        "regression",
        "logistic",
        "labels",
        "vertical",
        "speed",
    ]
    assert all(q.rows for q in questions)
    md, page, n_checked = _check_index(questions, run_dir, ref_dir)
    assert n_checked >= 30
    # the paired-difference table under the same heading is no second row
    assert len(questions[1].rows) == 1
    # best other, (eps, delta), on diamonds at eps 0.1: AdaSSP (diffprivlib n/a),
    # the diffprivlib figure from the reference run, marked, beside skdp's there
    first = md.splitlines()[
        next(i for i, line in enumerate(md.splitlines()) if "| diamonds" in line)
    ]
    assert "0.99 (AdaSSP)" in first
    assert "7.339e+04" in first and "(reference run, where skdp has 0.3462)" in first
    # eps 1 is not in the reference run: no figure, only the reason
    second = [line for line in md.splitlines() if "| diamonds" in line][1]
    assert "diffprivlib: n/a (not installed here)" in second
    assert "reference run" not in second
    # the speed table's "not available" becomes an n/a with its reason
    assert "diffprivlib: n/a (not installed here)" in md.split("## Speed")[1]
    # the long reasons are on the page once
    assert md.count("diffprivlib: not installed here (test).") == 1
    # each row links its detail table, and its plot when the run wrote one
    assert "[table](fm_utility.md), [plot](fm_utility.png)" in first
    assert "[table](small_data.md) |" in md


def test_write_index_and_missing_benchmark(run):
    run_dir, ref_dir = run
    (run_dir / "label_learning.md").unlink()
    md_path, html_path = _index.write_index(run_dir, ref_dir, reasons=REASONS)
    assert md_path.read_text().startswith("# Benchmark results")
    assert "Not in this run: `label_learning.md`" in md_path.read_text()
    assert html_path.read_text().startswith("<!DOCTYPE html>")


def test_committed_quick_snapshot():
    """On real tables: every figure equals its cell, every n/a has a reason."""
    run_dir = ROOT / "benchmarks" / "reference_results" / "quick"
    ref_dir = ROOT / "benchmarks" / "reference_results" / "full"
    questions = _index.build_index(run_dir, ref_dir, reasons=REASONS)
    assert all(q.rows for q in questions)
    _check_index(questions, run_dir, ref_dir)
