"""The front door of a benchmark run: ``index.md`` and ``index.html``.

``benchmarks/run.py`` calls :func:`write_index` after the benchmarks. It reads
the detail tables the run just wrote (``<name>.md`` in the output folder) and
builds one headline table per question (private regression, private logistic
regression, label privacy, vertical / federated learning, speed): skdp's figure
against the best other method at an equal guarantee, each row linking its
detail table and plot.

Nothing here is typed in: every headline figure is a cell of a detail table,
copied with its provenance (file, table, row, column; see :class:`Value`), so
the headline equals the detail table it links. A cell the run could not fill
(``n/a``, ``not available``, empty) becomes a :class:`Missing` with its reason
(diffprivlib or OpenDP not importable here, say) and, when the committed
full-mode reference run (``benchmarks/reference_results/full/``) has the
figure, that figure marked "(reference run)".

"At an equal guarantee": a pure eps-DP method also satisfies (eps, delta)-DP for
every delta, so it competes in the (eps, delta) columns too; an (eps, delta)
method never competes in a pure-eps column.
"""

import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REFERENCE_DIR = HERE / "reference_results" / "full"

# -- reading the detail tables ---------------------------------------------------


@dataclass
class Table:
    """One Markdown table of a detail file, with the heading and text above it."""

    stem: str
    title: str
    text: str
    header: list
    rows: list

    def col(self, name):
        """Index of the column ``name`` (version numbers ignored), else None."""
        want = _norm_col(name)
        for j, h in enumerate(self.header):
            if _norm_col(h) == want:
                return j
        return None

    def find(self, key=None, **named):
        """Index of the first row whose cells equal ``key`` ({column: text};
        keyword names may spell a column's spaces as ``_``)."""
        key = dict(key or {})
        for name, v in named.items():
            key[name if self.col(name) is not None else name.replace("_", " ")] = v
        cols = {self.col(k): v for k, v in key.items()}
        if None in cols:
            return None
        for i, row in enumerate(self.rows):
            if all(_norm(row[j]) == _norm(v) for j, v in cols.items() if j < len(row)):
                return i
        return None

    def cell(self, i, name):
        j = self.col(name)
        if j is None or i is None or j >= len(self.rows[i]):
            return None
        return self.rows[i][j]


def _norm(text):
    return re.sub(r"\s+", " ", str(text)).strip().lower()


def _norm_col(text):
    # "diffprivlib 0.6.6 LinearRegression" and "diffprivlib LinearRegression" match
    return _norm(re.sub(r"\s\d+(\.\d+)+", "", str(text)))


def _norm_title(text):
    """A table's title without what differs between quick and full runs."""
    text = re.sub(r",\s*(median|mean) of \d+ seeds?", "", text)
    text = re.sub(r"\((quick|full) mode[^)]*\)", "", text)
    text = re.sub(r"(quick|full) mode", "", text)
    text = re.sub(r"\d+ one-row blocks", "one-row blocks", text)
    return _norm(text)


def split_row(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def read_tables(path):
    """Every Markdown table of ``path`` as a :class:`Table` (none if missing)."""
    path = Path(path)
    if not path.exists():
        return []
    tables, title, text = [], "", []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^#+\s+(.*)$", line)
        if m:
            title, text = m.group(1).strip(), []
        elif (
            line.startswith("|")
            and i + 1 < len(lines)
            and lines[i + 1].startswith("|---")
        ):
            header = split_row(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(split_row(lines[i]))
                i += 1
            tables.append(Table(path.stem, title, " ".join(text), header, rows))
            continue
        elif line.strip():
            text.append(line.strip())
        i += 1
    return tables


def tables_titled(tables, pattern):
    return [t for t in tables if re.search(pattern, t.title)]


# -- headline cells ----------------------------------------------------------------

_NUMBER = re.compile(r"^[+-]?(\d[\d,]*\.?\d*|\.\d+)(e[+-]?\d+)?", re.I)


@dataclass(frozen=True)
class Value:
    """A figure copied from a detail table: the cell's text and where it is.

    ``shown`` is the number at the start of the cell (``"0.004 (17.1x)"`` ->
    ``"0.004"``, ``"1.628 (L0)"`` -> ``"1.628"``); the index prints it as is.
    """

    text: str
    folder: str  # "run" (this run's output folder) or "reference"
    stem: str
    table: str
    row: int
    column: str

    @property
    def shown(self):
        m = _NUMBER.match(self.text.strip())
        return m.group(0) if m else self.text.strip()

    @property
    def number(self):
        m = _NUMBER.match(self.text.strip())
        return float(m.group(0).replace(",", "")) if m else None


@dataclass
class Missing:
    """A figure this run does not have, why, and the reference run's if any.

    ``reason`` is short (it is printed in the cell); ``note`` the longer
    explanation printed once under the page's introduction.
    """

    reason: str
    note: str = ""
    reference: Value = None
    reference_skdp: Value = None


@dataclass
class Pick:
    """A headline cell: the best of ``candidates`` (label, Value or Missing).

    ``better`` is ``"max"`` or ``"min"``; one candidate is a plain figure.
    """

    candidates: list
    better: str = "max"
    named: bool = False  # print the method's name even when it is the only one

    @property
    def values(self):
        return [(lab, v) for lab, v in self.candidates if isinstance(v, Value)]

    @property
    def missing(self):
        return [(lab, v) for lab, v in self.candidates if isinstance(v, Missing)]

    def best(self):
        values = [(lab, v) for lab, v in self.values if v.number is not None]
        if not values:
            return None
        key = (
            (lambda lv: lv[1].number)
            if self.better == "max"
            else (lambda lv: -lv[1].number)
        )
        return max(values, key=key)


@dataclass
class Row:
    cells: list  # str (read from the detail file) or Pick
    details: list  # [(file stem, [plot names])]


@dataclass
class Question:
    key: str
    title: str
    lead: str
    columns: list
    rows: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    absent: list = field(default_factory=list)  # detail stems the run did not write


# -- the reasons for a missing figure ----------------------------------------------


def environment_reasons():
    """Why diffprivlib or OpenDP columns are empty in this environment."""
    import sklearn

    reasons = {}
    try:
        from _common import optional_diffprivlib

        version, _, _, error = optional_diffprivlib()
    except Exception as exc:  # pragma: no cover - _common always imports
        version, error = None, str(exc)
    if version is None:
        if "No module named" in error:
            why = "not installed here"
        else:
            why = "fails to import here"
        reasons["diffprivlib"] = (
            why,
            f"diffprivlib: {why}. Its current release, 0.6.6, cannot be imported "
            "beside scikit-learn 1.7 or newer, and this run has scikit-learn "
            f"{sklearn.__version__}. The reference run measured it in a separate "
            "scikit-learn 1.6.1 environment (see the reference run's README).",
        )
    try:
        from _theil_sen import opendp_version

        opendp = opendp_version()
    except Exception:
        opendp = None
    if not opendp:
        reasons["opendp"] = (
            "OpenDP not installed here",
            "Theil-Sen: OpenDP is not installed in this environment; it comes with "
            'the bench extra (`pip install ".[bench]"`).',
        )
    return reasons


def file_reasons(run_dir):
    """Why diffprivlib or OpenDP columns are empty, as the run's own detail
    files say (for pages built from a run made elsewhere, such as the docs)."""
    text = " ".join(p.read_text() for p in sorted(Path(run_dir).glob("*.md")))
    reasons = {}
    m = re.search(
        r"diffprivlib:? (not importable|not available|not installed)[^(]*\(([^)]*)\)",
        text,
    )
    if m:
        reasons["diffprivlib"] = (
            f"{m.group(1)} in that run",
            f"diffprivlib: {m.group(1)} in the run shown ({m.group(2)}). Its "
            "current release, 0.6.6, cannot be imported beside scikit-learn 1.7 "
            "or newer; the reference run measured it in a separate scikit-learn "
            "1.6.1 environment.",
        )
    if re.search(r"OpenDP: not installed", text):
        reasons["opendp"] = (
            "OpenDP not installed in that run",
            "Theil-Sen: OpenDP was not installed in the run shown; it comes with "
            'the bench extra (`pip install ".[bench]"`).',
        )
    return reasons


def _reason_for(column, cell, reasons):
    """``(short reason, note)`` for a cell with no figure."""
    cell = (cell or "").strip()
    own = re.match(r"^n/a\s*\((.+)\)$", cell)
    if own:  # the detail table gave its reason
        return own.group(1), ""
    low = column.lower()
    if "diffprivlib" in low and "diffprivlib" in reasons:
        return reasons["diffprivlib"]
    if "theil-sen" in low and "opendp" in reasons:
        return reasons["opendp"]
    if cell.startswith("not run"):
        return cell, ""
    if not cell:
        return "not measured in this run", ""
    return f"the detail table says '{cell}'", ""


# -- building the cells --------------------------------------------------------------


class Source:
    """This run's detail files and the reference run's, read once each."""

    def __init__(self, run_dir, reference_dir, reasons):
        self.run_dir = Path(run_dir)
        self.reference_dir = Path(reference_dir) if reference_dir else None
        self.reasons = reasons
        self._cache = {}

    def tables(self, stem, folder="run"):
        key = (folder, stem)
        if key not in self._cache:
            base = self.run_dir if folder == "run" else self.reference_dir
            self._cache[key] = read_tables(base / f"{stem}.md") if base else []
        return self._cache[key]

    def has(self, stem):
        return (self.run_dir / f"{stem}.md").exists()

    def plots(self, *names):
        return [n for n in names if (self.run_dir / f"{n}.png").exists()]

    def _reference(self, table, i, column, ref_stem):
        """The same cell in the reference run: same title, row key, column."""
        if self.reference_dir is None:
            return None
        want = _norm_title(table.title)
        key_cols = [h for h in table.header[:3] if _is_key(h)] or table.header[:1]
        for ref in self.tables(ref_stem or table.stem, "reference"):
            if _norm_title(ref.title) != want:
                continue
            k = ref.find({h: table.cell(i, h) for h in key_cols})
            text = ref.cell(k, column) if k is not None else None
            if text is not None and Value(text, "", "", "", 0, "").number is not None:
                return Value(
                    text,
                    "reference",
                    ref.stem,
                    ref.title,
                    k,
                    ref.header[ref.col(column)],
                )
        return None

    def value(self, table, i, column, ref_stem=None, anchor=None):
        """This run's cell as a Value, or a Missing (reason, reference figure)."""
        text = table.cell(i, column)
        if text is not None:
            v = Value(
                text, "run", table.stem, table.title, i, table.header[table.col(column)]
            )
            if v.number is not None:
                return v
        miss = Missing(*_reason_for(column, text, self.reasons))
        miss.reference = self._reference(table, i, column, ref_stem)
        if miss.reference is not None and anchor is not None:
            miss.reference_skdp = self._reference(table, i, anchor, ref_stem)
        return miss

    def pick(self, table, i, columns, better="max", ref_stem=None, anchor=None):
        """A :class:`Pick` over ``columns`` ({label: column name}) of row ``i``."""
        cands = []
        for label, column in columns.items():
            if table.col(column) is None:
                continue
            cands.append((label, self.value(table, i, column, ref_stem, anchor)))
        return Pick(cands, better, named=anchor is not None)


def _is_key(h):
    return _norm(h) in {
        "eps",
        "mode",
        "n",
        "d",
        "blas threads",
        "k",
        "sparsity",
        "task",
    }


def _with(tables, *columns):
    """The tables that have every one of ``columns``."""
    return [t for t in tables if all(t.col(c) is not None for c in columns)]


def _n_train(table):
    m = re.search(r"n_train = (\d+)", table.text)
    return m.group(1) if m else ""


def _task(title):
    return title.split(":")[0].strip()


# -- the questions ---------------------------------------------------------------------


def private_regression(src):
    q = Question(
        "regression",
        "Private linear regression",
        "How close does skdp's private linear regression "
        "(`FMLinearRegression`) come to the non-private fit, against other private "
        "regressions at the same guarantee? Lower test error is better.",
        [
            "data",
            "n train",
            "measure",
            "eps",
            "skdp, pure eps",
            "best other, pure eps",
            "skdp, (eps, delta)",
            "best other, (eps, delta)",
            "non-private",
        ],
    )
    q.notes = [
        "skdp, pure eps: `FMLinearRegression` (Laplace noise, its default); skdp, "
        '(eps, delta): `FMLinearRegression(mechanism="gaussian")` with delta = '
        "min(1/n^2, 1e-5).",
        "Other methods: diffprivlib's `LinearRegression` (pure eps), AdaSSP "
        "(Wang 2018; (eps, delta)), OpenDP's private Theil-Sen (pure eps, small "
        "data only). A pure-eps method also satisfies (eps, delta), so it competes "
        "in both columns.",
        "On the small data sets the figure is the test MSE over the non-private "
        "OLS's (1 = as good as OLS).",
    ]
    if not src.has("fm_utility"):
        q.absent.append("fm_utility")
    for t in _with(
        tables_titled(src.tables("fm_utility"), r": test MSE"), "FM Gaussian"
    ):
        for i, row in enumerate(t.rows):
            q.rows.append(
                Row(
                    [
                        _task(t.title),
                        _n_train(t),
                        "test MSE",
                        row[t.col("eps")],
                        src.pick(t, i, {"FM Laplace": "FM Laplace"}, "min"),
                        src.pick(
                            t,
                            i,
                            {"diffprivlib": "diffprivlib"},
                            "min",
                            anchor="FM Laplace",
                        ),
                        src.pick(t, i, {"FM Gaussian": "FM Gaussian"}, "min"),
                        src.pick(
                            t,
                            i,
                            {"AdaSSP": "AdaSSP", "diffprivlib": "diffprivlib"},
                            "min",
                            anchor="FM Gaussian",
                        ),
                        src.pick(t, i, {"non-private": "non-private"}, "min"),
                    ],
                    [("fm_utility", src.plots("fm_utility"))],
                )
            )
    if not src.has("small_data"):
        q.absent.append("small_data")
    for t in _with(
        tables_titled(src.tables("small_data"), r"test MSE / non-private OLS"),
        "FM declared",
    ):
        n = re.search(r"n_train = (\d+)", t.text)
        for i, row in enumerate(t.rows):
            q.rows.append(
                Row(
                    [
                        _task(t.title),
                        n.group(1) if n else "",
                        "test MSE / OLS",
                        row[t.col("eps")],
                        src.pick(t, i, {"FM Laplace": "FM Laplace"}, "min"),
                        src.pick(
                            t,
                            i,
                            {"Theil-Sen": "Theil-Sen", "diffprivlib": "diffprivlib"},
                            "min",
                            anchor="FM Laplace",
                        ),
                        src.pick(t, i, {"FM declared": "FM declared"}, "min"),
                        src.pick(
                            t,
                            i,
                            {
                                "AdaSSP": "AdaSSP",
                                "Theil-Sen": "Theil-Sen",
                                "diffprivlib": "diffprivlib",
                            },
                            "min",
                            anchor="FM declared",
                        ),
                        "1 (by definition)",
                    ],
                    [("small_data", src.plots("small_data"))],
                )
            )
    return q


def private_logistic(src):
    q = Question(
        "logistic",
        "Private logistic regression",
        "How accurate is `PrivateLogisticRegression` (objective perturbation or "
        "the functional mechanism, chosen from public quantities) against other "
        "private logistic regressions at the same guarantee? Higher test accuracy "
        "is better. These are the benchmark's tasks; on other tasks its defaults "
        "are not yet first everywhere (see the reference run's `defaults.md`).",
        [
            "data",
            "n train",
            "eps",
            "skdp, pure eps",
            "best other, pure eps",
            "skdp, (eps, delta)",
            "best other, (eps, delta)",
            "non-private",
        ],
    )
    q.notes = [
        "skdp: `PrivateLogisticRegression` (its automatic choice; pure eps, or "
        "Gaussian noise with delta = min(1/n^2, 1e-5)).",
        "Other methods: diffprivlib's `LogisticRegression` (pure eps, one-vs-rest "
        "at eps / C on more than two classes), which competes in both columns.",
    ]
    if not src.has("private_logistic"):
        q.absent.append("private_logistic")
    for t in _with(
        tables_titled(src.tables("private_logistic"), r": test accuracy"),
        "auto",
        "mode",
    ):
        eps_values = []
        for row in t.rows:
            if row[t.col("eps")] not in eps_values:
                eps_values.append(row[t.col("eps")])
        for eps in eps_values:
            pure = t.find(eps=eps, mode="pure")
            approx = t.find(eps=eps, mode="(eps, delta)")
            cells = [_task(t.title), _n_train(t), eps]
            for i in (pure, approx):
                if i is None:
                    cells += [
                        Pick([("auto", Missing("not in the detail table"))]),
                        Pick([("diffprivlib", Missing("not in the detail table"))]),
                    ]
                    continue
                cells += [
                    src.pick(t, i, {"PrivateLogisticRegression": "auto"}),
                    src.pick(t, i, {"diffprivlib": "diffprivlib"}, anchor="auto"),
                ]
            cells.append(
                src.pick(
                    t,
                    pure if pure is not None else approx,
                    {"non-private": "non-private"},
                )
            )
            q.rows.append(
                Row(cells, [("private_logistic", src.plots("private_logistic"))])
            )
    return q


def label_privacy(src):
    tables = src.tables("label_learning")
    acc = tables_titled(tables, r"^Test accuracy")
    reg = tables_titled(tables, r"^Label-private regression")
    eps_cols = [h for h in (acc[0].header if acc else []) if h.startswith("eps ")]
    columns = ["data", "measure"]
    for h in eps_cols:
        columns += [f"skdp, {h}", f"published method, {h}"]
    columns.append("without privacy")
    q = Question(
        "labels",
        "Label privacy",
        "When only the labels are private, how well does a model learn from "
        "labels released by skdp, against the published RR-with-prior "
        "(Ghazi et al. 2021) at the same label-DP eps? Classification: higher "
        "test accuracy is better; regression: lower test MSE / clean OLS is better.",
        columns,
    )
    q.notes = [
        "Classification, skdp: `RandomizedResponseWithPrior` then a logistic "
        "regression forward-corrected with each row's own noise "
        "(`PrivateLabelClassifier`), a configuration fixed in advance; published "
        "method: RR-with-prior (LP-2ST) written independently from the paper, "
        "with its own final model; without privacy: logistic regression on the "
        "clean labels.",
        "Regression, skdp: `PrivateLabelRegressor`'s automatic choice; published "
        "method: RR-on-bins as in Ghazi et al. 2023 (implemented in skdp); "
        "without privacy: RidgeCV on the clean labels (MSE ratio 1).",
    ]
    if not src.has("label_learning"):
        q.absent.append("label_learning")
    for t in acc[:1]:
        tasks = []
        for row in t.rows:
            if row[0] not in tasks:
                tasks.append(row[0])
        for task in tasks:
            ours = t.find(task=task, release="RRP", learner="hybrid")
            ref = t.find(task=task, release="REF", learner="LP-2ST")
            clean = t.find(task=task, release="RR", learner="LR")
            cells = [task, "test accuracy"]
            for h in eps_cols:
                cells += [
                    src.pick(t, ours, {"RR-with-prior + hybrid": h}),
                    src.pick(t, ref, {"RR-with-prior (LP-2ST)": h}),
                ]
            cells.append(src.pick(t, clean, {"clean labels": "clean"}))
            q.rows.append(Row(cells, [("label_learning", src.plots("label_learning"))]))
    for t in reg[:1]:
        tasks = []
        for row in t.rows:
            if row[0] not in tasks:
                tasks.append(row[0])
        for task in tasks:
            ours = t.find(task=task, config="auto")
            ref = t.find(task=task, config="bins")
            clean = t.find(task=task, config="clean RidgeCV")
            cells = [task, "test MSE / clean OLS"]
            for h in eps_cols:
                cells += [
                    src.pick(t, ours, {"automatic choice": h}, "min"),
                    src.pick(t, ref, {"RR-on-bins": h}, "min"),
                ]
            cells.append(src.pick(t, clean, {"clean labels": eps_cols[0]}, "min"))
            q.rows.append(
                Row(cells, [("label_learning", src.plots("label_learning_regression"))])
            )
    return q


def vertical(src):
    q = Question(
        "vertical",
        "Vertical and federated learning",
        "When parties hold different columns of the same rows, what does "
        "splitting cost against one central model at the same eps (which would "
        "need the data pooled)? Test MSE and time: lower is better; accuracy: "
        "higher is better.",
        [
            "setting",
            "measure",
            "eps",
            "skdp, split over parties",
            "best central model, same guarantee",
        ],
    )
    q.notes = [
        "skdp: `VerticalFMRegressor` / `VerticalFMClassifier` with the default "
        "noise generation ('threshold'; top-down: the same eps on a whole record "
        "as the central model); central models: skdp's `FMLinearRegression` / "
        "`FMLogisticRegression` on the pooled data and diffprivlib's "
        "`LogisticRegression` (all pure eps).",
        "Federated: 4 party processes and a server over mutual TLS on one "
        "machine, from launch to exit, against the same protocol in one process.",
    ]
    tables = src.tables("vertical")
    if not src.has("vertical"):
        q.absent.append("vertical")
    for t in tables_titled(tables, r"^Test MSE against K")[:1]:
        m = re.search(r"d = (\d+), epsilon = ([\d.]+)", t.title)
        n = re.search(r"n = (\d+)", t.text)
        sparsities = [r[t.col("sparsity")] for r in t.rows]
        last = sparsities[-1] if sparsities else None
        for i, row in enumerate(t.rows):
            if row[t.col("sparsity")] != last:
                continue
            setting = (
                f"linear, n = {n.group(1) if n else '?'}, d = "
                f"{m.group(1) if m else '?'}, K = {row[t.col('K')]} parties"
            )
            q.rows.append(
                Row(
                    [
                        setting,
                        "test MSE",
                        m.group(2) if m else "",
                        src.pick(
                            t,
                            i,
                            {"vertical": "MSE vertical (threshold, median)"},
                            "min",
                        ),
                        src.pick(t, i, {"central FM": "MSE centralized FM"}, "min"),
                    ],
                    [("vertical", src.plots("vertical_k"))],
                )
            )
    for t in _with(tables_titled(tables, r": test accuracy"), "vertical top-down"):
        for i, row in enumerate(t.rows):
            q.rows.append(
                Row(
                    [
                        f"{_task(t.title)}, K = 3 parties",
                        "test accuracy",
                        row[t.col("eps")],
                        src.pick(t, i, {"vertical top-down": "vertical top-down"}),
                        src.pick(
                            t,
                            i,
                            {
                                "central FM": "central FM",
                                "diffprivlib": "diffprivlib (central)",
                            },
                            ref_stem="vertical_multiclass",
                            anchor="vertical top-down",
                        ),
                    ],
                    [("vertical", src.plots("vertical_multiclass"))],
                )
            )
    if not src.has("bench_federated"):
        q.absent.append("bench_federated")
    for t in tables_titled(src.tables("bench_federated"), r"^Federated")[:1]:
        for i, row in enumerate(t.rows):
            setting = (
                f"federated {row[t.col('objective')]}, n = {row[t.col('n')]}, "
                f"d = {row[t.col('d')]}, K = {row[t.col('K')]} processes"
            )
            q.rows.append(
                Row(
                    [
                        setting,
                        "wall seconds",
                        "-",
                        src.pick(t, i, {"federated": "federated wall s"}, "min"),
                        src.pick(t, i, {"in one process": "in-process fit s"}, "min"),
                    ],
                    [("bench_federated", [])],
                )
            )
    return q


def speed(src):
    q = Question(
        "speed",
        "Speed",
        "What does privacy cost in time? CPU seconds per fit (lower is better) "
        "of skdp's private estimators against the other private implementation "
        "and the non-private fit.",
        ["setting", "skdp", "best other private method", "non-private"],
    )
    q.notes = [
        "Linear regression: `FMLinearRegression` (Laplace) against diffprivlib's "
        "`LinearRegression` and scikit-learn's `LinearRegression`, one BLAS "
        "thread. Logistic regression: `PrivateLogisticRegression` against "
        "diffprivlib's `LogisticRegression` and scikit-learn's, median over the "
        "cells of the accuracy table. Times include any other load on the machine.",
    ]
    if not src.has("bench_statistics_speed"):
        q.absent.append("bench_statistics_speed")
    for t in tables_titled(src.tables("bench_statistics_speed"), r"^1\. CPU seconds")[
        :1
    ]:
        for i, row in enumerate(t.rows):
            setting = (
                f"linear regression, n = {row[t.col('n')]}, d = "
                f"{row[t.col('d')]}, {row[t.col('BLAS threads')]} thread(s)"
            )
            q.rows.append(
                Row(
                    [
                        setting,
                        src.pick(t, i, {"FMLinearRegression": "FM fit Laplace"}, "min"),
                        src.pick(
                            t,
                            i,
                            {"diffprivlib": "diffprivlib LinearRegression"},
                            "min",
                            anchor="FM fit Laplace",
                        ),
                        src.pick(
                            t, i, {"scikit-learn": "sklearn LinearRegression"}, "min"
                        ),
                    ],
                    [("bench_statistics_speed", src.plots("bench_statistics_speed"))],
                )
            )
    for t in tables_titled(src.tables("private_logistic"), r"^CPU seconds per fit"):
        for i, row in enumerate(t.rows):
            setting = (
                f"logistic regression, {row[t.col('task')]}, n = "
                f"{row[t.col('n_train')]}"
            )
            q.rows.append(
                Row(
                    [
                        setting,
                        src.pick(t, i, {"PrivateLogisticRegression": "auto"}, "min"),
                        src.pick(
                            t, i, {"diffprivlib": "diffprivlib"}, "min", anchor="auto"
                        ),
                        src.pick(t, i, {"scikit-learn": "non-private"}, "min"),
                    ],
                    [("private_logistic", [])],
                )
            )
    return q


QUESTIONS = [private_regression, private_logistic, label_privacy, vertical, speed]


def build_index(run_dir, reference_dir=REFERENCE_DIR, reasons=None):
    """The headline questions of the run in ``run_dir`` (a list of Question)."""
    if reasons is None:
        reasons = environment_reasons()
    src = Source(run_dir, reference_dir, reasons)
    return [question(src) for question in QUESTIONS]


# -- rendering ------------------------------------------------------------------------


def _link(target, out_dir):
    return os.path.relpath(target, out_dir).replace(os.sep, "/")


def _ref_path(v, reference_dir):
    return Path(reference_dir) / f"{v.stem}.md"


def render_pick(pick, fmt, out_dir, reference_dir):
    """A Pick as text: ``fmt(text, href)`` makes a link (Markdown or HTML)."""
    parts = []
    best = pick.best()
    several = len(pick.candidates) > 1 or pick.named
    if best is not None:
        label, v = best
        parts.append(f"{v.shown} ({label})" if several else v.shown)
    for label, miss in pick.missing:
        text = f"{label}: n/a ({miss.reason})"
        if miss.reference is not None:
            ref = fmt(
                miss.reference.shown,
                _link(_ref_path(miss.reference, reference_dir), out_dir),
            )
            text += f"; {ref} (reference run"
            if miss.reference_skdp is not None:
                text += f", where skdp has {miss.reference_skdp.shown}"
            text += ")"
        parts.append(text)
    return "; ".join(parts) if parts else "n/a (no figure in the detail table)"


def _details(row, fmt, out_dir, run_dir):
    links = []
    for stem, plots in row.details:
        links.append(fmt("table", _link(Path(run_dir) / f"{stem}.md", out_dir)))
        links += [
            fmt("plot", _link(Path(run_dir) / f"{p}.png", out_dir)) for p in plots
        ]
    return ", ".join(links)


def _cell_text(cell, fmt, out_dir, run_dir, reference_dir):
    if isinstance(cell, Pick):
        return render_pick(cell, fmt, out_dir, reference_dir)
    return str(cell)


def _md_escape(text):
    return text.replace("|", "\\|")


INTRO = (
    "One table per question: skdp's figure against the best other method at the "
    "same privacy guarantee, read from the detail tables this run wrote (each row "
    "links its table and plot; run `python benchmarks/run.py` to rewrite them). "
    "Each cell `n/a` says why its figure is missing; where the committed "
    "full-mode reference run (`benchmarks/reference_results/full/`) has the "
    'figure, it is shown marked "(reference run)", beside skdp\'s figure of '
    "that same run: the reference run used more seeds and the full training "
    "sets, so compare it with that figure, not with this run's."
)


def missing_notes(questions):
    """The long explanations of the missing figures, each once, in order."""
    notes = []
    for q in questions:
        for row in q.rows:
            for c in row.cells:
                if isinstance(c, Pick):
                    notes += [
                        m.note for _, m in c.missing if m.note and m.note not in notes
                    ]
    return notes


def render_markdown(questions, run_dir, reference_dir=REFERENCE_DIR, title=None):
    out_dir = Path(run_dir)

    def fmt(text, href):
        return f"[{text}]({href})"

    lines = [f"# {title or 'Benchmark results: the headlines'}", "", INTRO, ""]
    notes = missing_notes(questions)
    if notes:
        lines += ["Why figures are missing in this run:", ""]
        lines += [f"- {n}" for n in notes] + [""]
    lines += [f"- [{q.title}](#{q.key})" for q in questions] + [""]
    for q in questions:
        lines += [f'<a id="{q.key}"></a>', "", f"## {q.title}", "", q.lead, ""]
        if q.absent:
            lines += [
                "Not in this run: "
                + ", ".join(f"`{s}.md`" for s in q.absent)
                + " (the benchmark failed or was not selected).",
                "",
            ]
        if q.rows:
            header = [*q.columns, "detail"]
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "---|" * len(header))
            for row in q.rows:
                cells = [
                    _md_escape(_cell_text(c, fmt, out_dir, run_dir, reference_dir))
                    for c in row.cells
                ]
                cells.append(_details(row, fmt, out_dir, run_dir))
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
        lines += [f"- {note}" for note in q.notes] + [""]
    return "\n".join(lines)


_HTML_STYLE = """
body { font-family: sans-serif; max-width: 80em; margin: 1em auto; padding: 0 1em;
       line-height: 1.4; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; vertical-align: top; }
th { background: #f0f0f0; text-align: left; }
td.num { text-align: right; }
code { background: #f4f4f4; padding: 0 0.2em; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
"""


def _html_inline(text):
    """Escape, then render `code` spans (the notes are Markdown-lite)."""
    text = html.escape(text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def render_html(questions, run_dir, reference_dir=REFERENCE_DIR, title=None):
    out_dir = Path(run_dir)

    def fmt(text, href):
        return f'<a href="{html.escape(href)}">{html.escape(text)}</a>'

    def cell(c):
        if isinstance(c, Pick):
            # escape the text around the links: render with placeholders
            links = []

            def keep(text, href):
                links.append(fmt(text, href))
                return f"\x00{len(links) - 1}\x00"

            raw = render_pick(c, keep, out_dir, reference_dir)
            esc = html.escape(raw)
            return re.sub(r"\x00(\d+)\x00", lambda m: links[int(m[1])], esc)
        return html.escape(str(c))

    title = title or "Benchmark results: the headlines"
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_HTML_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{_html_inline(INTRO)}</p>",
    ]
    notes = missing_notes(questions)
    if notes:
        body.append(
            "<p>Why figures are missing in this run:</p><ul>"
            + "".join(f"<li>{_html_inline(n)}</li>" for n in notes)
            + "</ul>"
        )
    body += [
        "<ul>"
        + "".join(
            f'<li><a href="#{q.key}">{html.escape(q.title)}</a></li>' for q in questions
        )
        + "</ul>",
    ]
    for q in questions:
        body += [
            f'<h2 id="{q.key}">{html.escape(q.title)}</h2>',
            f"<p>{_html_inline(q.lead)}</p>",
        ]
        if q.absent:
            body.append(
                "<p>Not in this run: "
                + ", ".join(f"<code>{s}.md</code>" for s in q.absent)
                + " (the benchmark failed or was not selected).</p>"
            )
        if q.rows:
            body.append("<table><thead><tr>")
            body += [f"<th>{html.escape(h)}</th>" for h in [*q.columns, "detail"]]
            body.append("</tr></thead><tbody>")
            for row in q.rows:
                tds = [
                    f'<td class="num">{cell(c)}</td>'
                    if isinstance(c, Pick)
                    else f"<td>{cell(c)}</td>"
                    for c in row.cells
                ]
                tds.append(f"<td>{_details(row, fmt, out_dir, run_dir)}</td>")
                body.append("<tr>" + "".join(tds) + "</tr>")
            body.append("</tbody></table>")
        body.append(
            "<ul>" + "".join(f"<li>{_html_inline(n)}</li>" for n in q.notes) + "</ul>"
        )
        plots = []
        for row in q.rows:
            for _, names in row.details:
                plots += [p for p in names if p not in plots]
        body += [
            f'<p><img src="{html.escape(p)}.png" alt="{html.escape(p)}.png" '
            'loading="lazy"></p>'
            for p in plots
        ]
    body.append("</body></html>")
    return "\n".join(body) + "\n"


def write_index(run_dir, reference_dir=REFERENCE_DIR, reasons=None):
    """Write ``index.md`` and ``index.html`` into ``run_dir``; their paths."""
    run_dir = Path(run_dir)
    questions = build_index(run_dir, reference_dir, reasons)
    md = run_dir / "index.md"
    md.write_text(render_markdown(questions, run_dir, reference_dir))
    page = run_dir / "index.html"
    page.write_text(render_html(questions, run_dir, reference_dir))
    return md, page


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(HERE))
    for path in write_index(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results"):
        print(path)
