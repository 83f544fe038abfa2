"""Small-data regression and private bounds on real tasks.

Regression (every task of ``_real_tasks.REGRESSION`` and ``SMALL_REGRESSION``:
n from 420 to 53,940) at eps in {0.1, 0.5, 1, 2, 5}: test MSE over non-private
OLS's, median over seeds, for

- **FM declared**: ``FMLinearRegression`` (Gaussian, the default
  ``postprocessing="average"``) with the documentation's ranges (the task's
  ``[0, 1]`` encoding and ``bounds_y``); the same release solved by the rules
  the default replaced: **FM eb** (``postprocessing="eb"``, the default
  before), **FM ridge** (``postprocessing="ridge"``, the default before that)
  and **FM eb1** (the first empirical-Bayes rule,
  ``_eb_partialled.py``); **FM Laplace** (pure eps, default solve);
- **FM private**: the same estimator on the features in their own units with
  ``bounds_X="private"``, ``bounds_y="private"`` (the default 20% of eps, half
  of it for the label), the indicator, one-hot and ordinal columns given by
  ``public_bounds`` (their range is the schema); a column whose part gives
  ``n * eps`` below 256 gets a median and half-width instead of a quantile
  pair, and below the refusal threshold (about 140-160) the fit refuses
  (issue 35): such cells show ``nan`` (refused, nothing spent);
- **FM tightened**: the documentation's ranges as a loose public envelope
  (``tighten_bounds=True``, at most the same 20% of eps, equal shares): each
  numeric column's and the label's range released inside its declared one
  where a looseness test says the data sit in half of it (parts below 160
  are not estimated);
- **AdaSSP** (Wang 2018, ``_adassp.py``), (eps, delta)-DP, declared ranges;
- **Theil-Sen**: OpenDP 0.16's private Theil-Sen on the best single feature,
  chosen non-privately (``_theil_sen.py``), pure eps for replace-one
  neighbours, declared ranges;
- **diffprivlib** 0.6.6 ``LinearRegression``, pure eps, declared ranges (when
  it imports: scikit-learn < 1.7).

Binary classification (``_real_tasks.BINARY``): accuracy of
``FMLogisticRegression`` (Gaussian) with declared ranges and with private
ranges and with tightened ranges (the default share of eps).

Where FM declared is not first, the reason column gives FM's test MSE / OLS
at eps = inf (the same estimator without noise: what the declared domain
costs by clipping) and the release's noise-to-signal ratio: the standard
deviation of the noise on ``X^T y`` over the largest ``|n cov(x_j, y)|``,
in the fit's (declared, centred) coordinates.

70/30 splits, one per seed; the same split and seed for every method;
delta = min(1/n^2, 1e-5). Paired differences are means over seeds of the
per-seed differences (same split) with their standard errors.

Run it in a venv with scikit-learn 1.6 (diffprivlib) and ``opendp``::

    PYTHONPATH=$PWD /work/venv-dpl/bin/python benchmarks/bench_small_data.py --full
"""

import math
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _real_tasks  # noqa: E402
from _adassp import AdaSSP  # noqa: E402
from _common import (  # noqa: E402
    cli,
    delta_for,
    eps_axis,
    figure_legend,
    mark_clipped_axis,
    markdown_table,
    optional_diffprivlib,
    paired_difference,
    plot_clipped,
    progress,
    pyplot,
    save_figure,
    write_result,
)
from _eb_partialled import partialled_eb_model  # noqa: E402
from _theil_sen import OpenDPTheilSen, opendp_version  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from skdp.linear_model import FMLinearRegression, FMLogisticRegression  # noqa: E402

DPL_VERSION, DPLLinearRegression, _, DPL_ERROR = optional_diffprivlib()
OPENDP_VERSION = opendp_version()

EPS_FULL = [0.1, 0.5, 1.0, 2.0, 5.0]
EPS_QUICK = [0.5, 2.0]
QUICK_MAX_TRAIN = 3_000
SHARE = FMLinearRegression().bounds_budget_share  # the estimators' default
BASELINES = ["AdaSSP", "Theil-Sen", "diffprivlib"]
FM_SOLVES = ["FM declared", "FM eb", "FM ridge", "FM eb1"]
REG_METHODS = [*FM_SOLVES, "FM Laplace", "FM private", "FM tightened", *BASELINES]
CLF_METHODS = ["FM declared", "FM private", "FM tightened"]


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _refused(fit, *args):
    """The fitted estimator, or None where its private ranges refuse (issue
    35: ``n * eps`` per range below the threshold; nothing is spent)."""
    try:
        return _quiet(fit, *args)
    except ValueError as exc:
        if "Private ranges need" not in str(exc):
            raise
        return None


def _split(task, seed, quick):
    idx = np.arange(task.X.shape[0])
    tr, te = train_test_split(idx, test_size=0.3, random_state=seed)
    if quick:
        tr, te = tr[:QUICK_MAX_TRAIN], te[: QUICK_MAX_TRAIN // 2]
    return tr, te


def _public(task):
    """The schema's ranges: indicator, one-hot and ordinal-score columns."""
    return {int(j): (0.0, 1.0) for j in np.flatnonzero(task.schema_columns)}


def _regression_cell(task, tr, te, eps, seed):
    X, Xr, y = task.X, task.raw_X, task.y
    ytr, yte = y[tr], y[te]
    delta = delta_for(tr.size)

    def mse(model, Z):
        return float(np.mean((model.predict(Z[te]) - yte) ** 2))

    out = {}
    common = {"epsilon": eps, "delta": delta, "random_state": seed}
    declared = {"bounds_X": (0.0, 1.0), "bounds_y": task.y_bounds}
    fm = FMLinearRegression(**common, **declared, mechanism="gaussian")
    out["FM declared"] = mse(fm.fit(X[tr], ytr), X)
    out["noise/signal"] = _noise_to_signal(fm, X[tr], ytr)
    eb = FMLinearRegression(
        **common, **declared, mechanism="gaussian", postprocessing="eb"
    )
    out["FM eb"] = mse(eb.fit(X[tr], ytr), X)
    ridge = FMLinearRegression(
        **common, **declared, mechanism="gaussian", postprocessing="ridge"
    )
    out["FM ridge"] = mse(ridge.fit(X[tr], ytr), X)
    coef, intercept = partialled_eb_model(ridge, X[tr], ytr)
    out["FM eb1"] = float(np.mean((X[te] @ coef + intercept - yte) ** 2))
    laplace = FMLinearRegression(**common, **declared, mechanism="laplace")
    out["FM Laplace"] = mse(laplace.fit(X[tr], ytr), X)
    exact = FMLinearRegression(**declared, epsilon=np.inf)
    out["FM eps=inf"] = mse(exact.fit(X[tr], ytr), X)
    private = FMLinearRegression(
        **common,
        mechanism="gaussian",
        bounds_X="private",
        bounds_y="private",
        public_bounds=_public(task),
    )
    fitted = _refused(private.fit, Xr[tr], ytr)
    out["FM private"] = math.nan if fitted is None else mse(fitted, Xr)
    tightened = FMLinearRegression(
        **common,
        **declared,
        mechanism="gaussian",
        tighten_bounds=True,
        public_bounds=_public(task),
    )
    out["FM tightened"] = mse(tightened.fit(X[tr], ytr), X)
    ada = AdaSSP(eps, delta, **declared, random_state=seed)
    out["AdaSSP"] = mse(ada.fit(X[tr], ytr), X)
    if OPENDP_VERSION:
        ts = OpenDPTheilSen(eps, **declared, random_state=seed)
        out["Theil-Sen"] = mse(_quiet(ts.fit, X[tr], ytr), X)
    if DPL_VERSION:
        dpl = DPLLinearRegression(epsilon=eps, **declared, random_state=seed)
        out["diffprivlib"] = mse(_quiet(dpl.fit, X[tr], ytr), X)
    return out


def _noise_to_signal(fm, X, y):
    """The noise sd on ``X^T y`` over ``max_j |sum (x_j - mean)(y - mean)|``,
    in the fit's coordinates (declared box and labels centred; the centring
    by the data's means only removes the intercept's part)."""
    Xc = X - X.mean(axis=0)
    signal = float(np.max(np.abs(Xc.T @ (y - y.mean()))))
    noise_r = 0.5 * fm.noise_std_ / fm.linear_weight_  # r = -b / 2 = X^T y
    return noise_r / signal


def _binary_cell(task, tr, te, eps, seed):
    X, Xr, y = task.X, task.raw_X, task.y
    common = {
        "epsilon": eps,
        "delta": delta_for(tr.size),
        "mechanism": "gaussian",
        "classes": [0, 1],
        "random_state": seed,
    }
    declared = FMLogisticRegression(bounds_X=(0.0, 1.0), **common)
    if task.max_nonzero is not None:
        declared.set_params(max_nonzero=task.max_nonzero)
    private = FMLogisticRegression(
        bounds_X="private", public_bounds=_public(task), **common
    )
    tightened = FMLogisticRegression(
        bounds_X=(0.0, 1.0), tighten_bounds=True, public_bounds=_public(task), **common
    )
    return {
        "FM declared": declared.fit(X[tr], y[tr]).score(X[te], y[te]),
        "FM private": (
            math.nan
            if (fitted := _refused(private.fit, Xr[tr], y[tr])) is None
            else fitted.score(Xr[te], y[te])
        ),
        "FM tightened": tightened.fit(X[tr], y[tr]).score(X[te], y[te]),
    }


def run_task(task, eps_list, n_seeds, quick):
    """Per-seed values ``{eps: {method: [..]}}``, the non-private ones, n_train."""
    reg = task.kind == "regression"
    methods = REG_METHODS + ["noise/signal", "FM eps=inf"] if reg else CLF_METHODS
    per = {e: {m: [] for m in methods} for e in eps_list}
    base = []
    for seed in progress(range(n_seeds), task.name):
        tr, te = _split(task, seed, quick)
        if reg:
            ols = LinearRegression().fit(task.X[tr], task.y[tr])
            base.append(float(np.mean((ols.predict(task.X[te]) - task.y[te]) ** 2)))
        else:
            sk = _quiet(LogisticRegression(max_iter=2000).fit, task.X[tr], task.y[tr])
            base.append(sk.score(task.X[te], task.y[te]))
        for eps in eps_list:
            cell = (_regression_cell if reg else _binary_cell)(task, tr, te, eps, seed)
            for key, value in cell.items():
                per[eps][key].append(value)
    return per, np.asarray(base), tr.size


def _med(values):
    return float(np.median(values)) if values else None


def _ratio(per_values, base):
    """Median over seeds of MSE / OLS MSE (same split)."""
    if not per_values:
        return None
    return float(np.median(np.asarray(per_values) / base))


def regression_table(task, per, base, n_train, n_seeds):
    header = [
        "eps",
        "n*eps",
        *REG_METHODS,
        "FM - best other (s.e.)",
        "FM - better of eb, ridge, eb1 (s.e.)",
    ]
    rows = []
    for e, m in per.items():
        cells = [_ratio(m[k], base) for k in REG_METHODS]
        fm = np.asarray(m["FM declared"]) / base
        others = [k for k in BASELINES if m[k]]
        best = min(others, key=lambda k: np.median(m[k]))
        mean, se = paired_difference(fm, np.asarray(m[best]) / base)
        rule, _, (mean_r, se_r) = _against_replaced_rules(m, base)
        rows.append(
            [
                e,
                f"{n_train * e:.0f}",
                *["n/a" if c is None else c for c in cells],
                f"{mean:+.3f} ({se:.3f}) vs {best}",
                f"{mean_r:+.3f} ({se_r:.3f}) vs {rule.removeprefix('FM ')}",
            ]
        )
    return (
        f"#### {task.name}: test MSE / non-private OLS, median of {n_seeds} seeds\n\n"
        f"n_train = {n_train}, d = {task.d}, {int((~task.schema_columns).sum())} "
        f"numeric columns (+ the label) get private ranges, OLS test MSE = "
        f"{np.median(base):.4g}.\n\n" + markdown_table(header, rows)
    )


def _against_replaced_rules(m, base):
    """The better (lower median) of the rules the default replaced, its MSE / OLS
    per seed, and the paired difference (mean, s.e.) of FM declared minus it."""
    rule = min(FM_SOLVES[1:], key=lambda k: np.median(m[k]))
    other = np.asarray(m[rule]) / base
    return rule, other, paired_difference(np.asarray(m["FM declared"]) / base, other)


def _regression_cells(results):
    """``(task, eps, per-method values, OLS MSEs, n_train, FM declared / OLS)``
    for every regression cell."""
    for task, per, base, n_train in results:
        if task.kind == "regression":
            for e, m in per.items():
                yield task, e, m, base, n_train, np.asarray(m["FM declared"]) / base


def solve_rule_rows(results):
    """Per cell: the default solve ("average") against the better of the rules
    it replaces (same release), and whether it is worse by > 2 s.e."""
    rows = []
    for task, e, m, base, n_train, fm in _regression_cells(results):
        rule, other, (mean, se) = _against_replaced_rules(m, base)
        verdict = "worse" if mean > 2 * se else "at or below"
        rows.append(
            [
                task.name,
                e,
                f"{n_train * e:.0f}",
                float(np.median(fm)),
                f"{float(np.median(other)):.4g} ({rule.removeprefix('FM ')})",
                f"{mean:+.3f} ({se:.3f})",
                verdict,
            ]
        )
    return rows


def binary_table(task, per, base, n_train, n_seeds):
    header = [
        "eps",
        "n*eps",
        *CLF_METHODS,
        "private - declared (s.e.)",
        "tightened - declared (s.e.)",
    ]
    rows = []
    for e, m in per.items():
        diffs = [
            "{:+.4f} ({:.4f})".format(*paired_difference(m[k], m["FM declared"]))
            for k in ("FM private", "FM tightened")
        ]
        rows.append(
            [e, f"{n_train * e:.0f}", *[_med(m[k]) for k in CLF_METHODS], *diffs]
        )
    return (
        f"#### {task.name}: test accuracy, median of {n_seeds} seeds\n\n"
        f"n_train = {n_train}, d = {task.d}, "
        f"{int((~task.schema_columns).sum())} numeric columns get private ranges, "
        f"non-private accuracy = {np.median(base):.4f}.\n\n"
        + markdown_table(header, rows)
    )


def not_first(results):
    """Regression cells where FM declared is not first, and why."""
    rows = []
    for task, e, m, base, n_train, fm in _regression_cells(results):
        for other in BASELINES:
            if not m[other]:
                continue
            o = np.asarray(m[other]) / base
            if np.median(fm) <= np.median(o):
                continue
            mean, se = paired_difference(fm, o)
            within = mean <= 2 * se
            rows.append(
                [
                    task.name,
                    e,
                    f"{n_train * e:.0f}",
                    other,
                    float(np.median(fm)),
                    float(np.median(o)),
                    f"{mean:+.3f} ({se:.3f})",
                    "within 2 s.e." if within else "LOSES",
                    _reason(m, base, other),
                ]
            )
    return rows


def _reason(m, base, other):
    """Why FM loses a cell: what the declared domain costs without noise
    (eps = inf) and how much of ``X^T y`` the release's noise leaves."""
    exact = float(np.median(np.asarray(m["FM eps=inf"]) / base))
    ratio = float(np.median(m["noise/signal"]))
    private = float(np.median(np.asarray(m["FM private"]) / base))
    tightened = float(np.median(np.asarray(m["FM tightened"]) / base))
    text = (
        f"release noise: FM at eps=inf {exact:.3f}; noise sd on X^T y = "
        f"{ratio:.2g} x the largest |n cov(x_j, y)|"
    )
    if other == "Theil-Sen":
        text += (
            "; declared ranges wide against the data: FM's noise grows with "
            "their widths, the rank-based Theil-Sen's does not"
        )
    return text + f" (FM private: {private:.3g}; FM tightened: {tightened:.3g})"


def private_checks(results):
    """Cells with n * eps >= 1,000: private vs declared (the issue's criterion)."""
    rows = []
    for task, per, base, n_train in results:
        reg = task.kind == "regression"
        for e, m in per.items():
            if n_train * e < 1000:
                continue
            dec = np.asarray(m["FM declared"])
            row = [
                task.name,
                e,
                f"{n_train * e:.0f}",
                _per_column(task, n_train * e, reg),
            ]
            for key in ("FM private", "FM tightened"):
                pri = np.asarray(m[key])
                if np.all(np.isnan(pri)):  # the private ranges refused
                    row += ["refused", "holds"]
                    continue
                if reg:
                    value = float(np.median(pri / base) / np.median(dec / base))
                    ok = value <= 1.10
                    shown = f"MSE ratio {value:.3f}"
                else:
                    value = float(np.median(pri) - np.median(dec))
                    ok = value >= -0.01
                    shown = f"accuracy {value:+.4f}"
                row += [shown, "holds" if ok else "FAILS"]
            rows.append(row)
    return rows


def _per_column(task, n_eps, reg):
    """n * eps of the label's range and of each feature's (the estimators
    give the label half of the share when both are private)."""
    m = int((~task.schema_columns).sum())
    total = n_eps * SHARE
    if not reg:
        return f"- / {total / max(m, 1):.0f}"
    if m == 0:
        return f"{total:.0f} / -"
    return f"{total / 2:.0f} / {total / 2 / m:.0f}"


# the plot's lines (the table has every column), in plain words
PLOT_LINES = [
    ("FM declared", "skdp FMLinearRegression, declared ranges ((eps, delta))", "o-"),
    ("FM Laplace", "skdp FMLinearRegression, Laplace noise (pure eps)", "s--"),
    ("FM private", "skdp FMLinearRegression, ranges estimated privately", "v:"),
    ("AdaSSP", "AdaSSP, Wang 2018 ((eps, delta))", "D-"),
    ("Theil-Sen", "OpenDP Theil-Sen on one feature (pure eps)", "P-"),
    ("diffprivlib", "diffprivlib LinearRegression (pure eps)", "X-"),
]
CEILING = 100.0  # the plot's axis stops at 100 x the non-private OLS's test MSE


def _claim(reg):
    """How often skdp's default is the lowest median of the private methods."""
    others = [m for m, _, _ in PLOT_LINES if not m.startswith("FM")]
    first = cells = 0
    for _, per, base, _ in reg:
        for e in per:
            rivals = [_ratio(per[e][m], base) for m in others]
            rivals = [r for r in rivals if r is not None]
            ours = _ratio(per[e]["FM declared"], base)
            if ours is None or not rivals:
                continue
            cells += 1
            first += ours <= min(rivals)
    return first, cells


def _plot(results, out_dir, name):
    plt = pyplot()
    reg = [r for r in results if r[0].kind == "regression"]
    cols = min(4, len(reg))
    rows = math.ceil(len(reg) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.4 * cols, 3.4 * rows + 1.2), squeeze=False
    )
    for ax, (task, per, base, n_train) in zip(axes.flat, reg):
        eps = list(per)
        clipped = 0
        for i, (meth, label, style) in enumerate(PLOT_LINES):
            vals = [_ratio(per[e][meth], base) for e in eps]
            if vals[0] is None:
                continue
            clipped += plot_clipped(
                ax, eps, vals, CEILING, style, label=label, color=f"C{i}"
            )
        ax.axhline(1.0, color="k", lw=1, label="non-private OLS (= 1)")
        ax.set_yscale("log")
        eps_axis(ax, eps)
        ax.set_title(f"{task.name} (n train = {n_train})", fontsize=10)
        ax.set_ylabel("test MSE / non-private OLS")
        if clipped:
            mark_clipped_axis(ax, CEILING, f"cut at {CEILING:g} x OLS")
    for ax in list(axes.flat)[len(reg) :]:
        fig.delaxes(ax)
    first, cells = _claim(reg)
    title = (
        f"Small data: skdp's default FMLinearRegression has the lowest median "
        f"test error of the private methods in {first} of {cells} cells\n"
        "(lower is better; values above the cut are marked 'clipped')"
    )
    figure_legend(fig, axes, ncol=3, title=title)
    return save_figure(fig, out_dir, name, layout=False)


def main(quick=True, out_dir="benchmarks/results", name="small_data", n_seeds=None):
    """Small-data regression and private bounds on real tasks (see module).

    The tables are rewritten after every task, so a long run shows its
    progress (and what it has if stopped). ``n_seeds`` overrides the mode's
    (2 quick, 10 full).
    """
    if n_seeds is None:
        n_seeds = 2 if quick else 10
    eps_list = EPS_QUICK if quick else EPS_FULL
    makers = list(_real_tasks.SMALL_REGRESSION) + list(_real_tasks.REGRESSION)
    makers += list(_real_tasks.BINARY)
    if quick:  # the small regressions and the smallest binary task
        makers = list(_real_tasks.SMALL_REGRESSION[:3]) + [_real_tasks.hmda_deny]
    results = []
    for make in makers:
        task = make()
        results.append((task, *run_task(task, eps_list, n_seeds, quick)))
        _report(results, quick, n_seeds, out_dir, name)
    _plot(results, out_dir, name)
    return results


def _report(results, quick, n_seeds, out_dir, name):
    mode = "quick" if quick else "full"
    dpl = DPL_VERSION or f"not importable ({DPL_ERROR})"
    parts = [
        f"### Small-data regression and private bounds ({mode} mode)\n\n"
        f"diffprivlib: {dpl}; OpenDP: {OPENDP_VERSION or 'not installed'}. "
        "70/30 splits"
        + (f", training sets capped at {QUICK_MAX_TRAIN} rows" if quick else "")
        + f"; private and tightened ranges spend {SHARE:.0%} of eps (private: "
        "half of it on the label's; tightened: equal shares). Theil-Sen fits "
        "the best single feature, chosen non-privately."
    ]
    parts += [
        (regression_table if t.kind == "regression" else binary_table)(
            t, per, base, n, n_seeds
        )
        for t, per, base, n in results
    ]
    miss = not_first(results)
    parts.append(
        f"#### Regression cells where FM declared is not first ({len(miss)})\n\n"
        "Paired difference of MSE / OLS (FM minus the other, same split), its "
        "s.e.; 'LOSES' when it is more than 2 s.e. above 0.\n\n"
        + markdown_table(
            ["task", "eps", "n*eps", "other", "FM", "other", "diff (s.e.)", "", "why"],
            miss,
        )
    )
    rules = solve_rule_rows(results)
    worse = sum(r[-1] == "worse" for r in rules)
    parts.append(
        f"#### The default solve against the rules it replaces ({worse} of "
        f"{len(rules)} cells worse by more than 2 s.e.)\n\n"
        "FM declared (postprocessing='average') against the better (lower "
        "median) of 'eb', 'ridge' and the first empirical-Bayes rule on the "
        "same release; "
        "paired difference of MSE / OLS and its s.e.\n\n"
        + markdown_table(
            [
                "task",
                "eps",
                "n*eps",
                "average",
                "better of the three",
                "diff (s.e.)",
                "",
            ],
            rules,
        )
    )
    checks = private_checks(results)
    parts.append(
        "#### Private ranges where n * eps >= 1,000 (the issue's criterion)\n\n"
        "Regression: median MSE / OLS of FM private (and FM tightened) over FM "
        "declared (holds if <= 1.10); classification: accuracy difference (holds "
        "if >= -0.01). 'n*eps label / feature' is what the label's range and "
        "each estimated feature's range get without an envelope (below 256 the "
        "estimator warns); tightened ranges share equally over the label and "
        "the numeric features.\n\n"
        + markdown_table(
            [
                "task",
                "eps",
                "n*eps",
                "n*eps label / feature",
                "private vs declared",
                "",
                "tightened vs declared",
                "",
            ],
            checks,
        )
    )
    text = "\n\n".join(parts)
    write_result(out_dir, name, text)


if __name__ == "__main__":
    cli(main)
