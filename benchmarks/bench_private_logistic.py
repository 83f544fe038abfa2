"""Private logistic regression on real data: FM, OP, auto, diffprivlib, non-private.

Every binary and multi-class task of ``_real_tasks.py`` (HealthInsurance,
Fertility, HMDA, Adult; digits, diamonds cut), epsilon in {0.5, 1, 2, 5, 10},
pure epsilon and (epsilon, delta) with ``delta = _common.delta_for(n)``:

- FM: ``FMLogisticRegression`` (Laplace when pure, Gaussian otherwise; the
  multinomial model in one release for C > 2 classes);
- OP: ``OPLogisticRegression`` (K-norm noise when pure, the Gaussian profile
  otherwise; multinomial in one release);
- auto: ``PrivateLogisticRegression(method="auto")`` (its choice is recorded);
- diffprivlib 0.6.6 ``LogisticRegression(epsilon, data_norm)`` when it imports
  (scikit-learn < 1.7: run this file in that environment for its columns);
  pure epsilon, so it is a candidate in both modes; one-vs-rest at eps / C;
- non-private: scikit-learn ``LogisticRegression``.

Every method gets the same declared domain: X in the box [0, 1]^d (plus the
``max_nonzero`` / row-norm facts of the encoding where they exist; diffprivlib
takes the row norm ``sqrt(d)`` or the encoding's). Stratified 70/30 splits, one
per seed, the same split and seed for every method; mean test accuracy over
seeds, and paired differences (auto minus each method) with their standard
errors. The eps = inf ceiling of FM and OP is the noise-free fit of the same
objective. CPU time per fit is ``time.process_time`` (one BLAS thread in the
OP solver).

A cell where auto is neither first nor tied within 2 s.e. with every other
private method is listed with its reason, read off the run: the rule's
choice (with the eps = inf ceilings when they explain it) or diffprivlib's
calibration (its own bound with the row norm squared).

The grid that chose the rule (``_logistic_rule.py``) is written to
``private_logistic_rule.md``.
"""

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _logistic_rule  # noqa: E402
import _real_tasks  # noqa: E402
from _common import (  # noqa: E402
    cli,
    delta_for,
    eps_axis,
    machine_description,
    markdown_table,
    optional_diffprivlib,
    paired_difference,
    progress,
    pyplot,
    save_figure,
    write_result,
)
from bench_fm_utility import _fm_kwargs as _domain  # noqa: E402
from bench_fm_utility import _quiet, _row_norm  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from skdp.linear_model import (  # noqa: E402
    FMLogisticRegression,
    OPLogisticRegression,
    PrivateLogisticRegression,
)

DPL_VERSION, _, DPLLogisticRegression, DPL_ERROR = optional_diffprivlib()

EPS_FULL = [0.5, 1.0, 2.0, 5.0, 10.0]
EPS_QUICK = [1.0, 10.0]
QUICK_MAX_TRAIN = 3000
MODES = ("pure", "(eps, delta)")
PRIVATE = ["FM", "OP", "auto", "diffprivlib"]
COLUMNS = [*PRIVATE, "non-private", "FM eps=inf", "OP eps=inf"]
# a miss between two fits this close to predicting the majority class is
# between two models that learnt nothing (it is named so in the table)
CHANCE_MARGIN = 0.03


def _split(task, seed, quick):
    Xtr, Xte, ytr, yte = train_test_split(
        task.X, task.y, test_size=0.3, random_state=seed, stratify=task.y
    )
    if quick and Xtr.shape[0] > QUICK_MAX_TRAIN:
        Xtr, ytr = Xtr[:QUICK_MAX_TRAIN], ytr[:QUICK_MAX_TRAIN]
        Xte, yte = Xte[: QUICK_MAX_TRAIN // 2], yte[: QUICK_MAX_TRAIN // 2]
    return Xtr, Xte, ytr, yte


def _timed(make, Xtr, ytr, Xte, yte):
    start = time.process_time()
    model = _quiet(make().fit, Xtr, ytr)
    cpu = time.process_time() - start
    return model, float(model.score(Xte, yte)), cpu


def cell(task, Xtr, ytr, Xte, yte, eps, mode, seed):
    """Accuracy and CPU seconds of every private method at one (eps, mode)."""
    classes = np.unique(task.y)
    delta = 0.0 if mode == "pure" else delta_for(Xtr.shape[0])
    common = dict(
        epsilon=eps, delta=delta, classes=classes, random_state=seed, **_domain(task)
    )
    makers = {
        "FM": lambda: FMLogisticRegression(
            mechanism="laplace" if delta == 0 else "gaussian", **common
        ),
        "OP": lambda: OPLogisticRegression(**common),
        "auto": lambda: PrivateLogisticRegression(**common),
    }
    if DPL_VERSION:
        makers["diffprivlib"] = lambda: DPLLogisticRegression(
            epsilon=eps, data_norm=_row_norm(task), random_state=seed
        )
    acc, cpu, choice = {}, {}, None
    for name, make in makers.items():
        model, acc[name], cpu[name] = _timed(make, Xtr, ytr, Xte, yte)
        if name == "auto":
            choice = (model.method_, model.noise_level_)
    return acc, cpu, choice


def run_task(task, eps_list, n_seeds, quick):
    """Per (eps, mode): per-seed accuracies of every column, CPU, auto's choice."""
    classes = np.unique(task.y)
    acc = {(e, m): {c: [] for c in COLUMNS} for e in eps_list for m in MODES}
    cpu = {c: [] for c in [*PRIVATE, "non-private"]}
    choice = {}
    n_train = None
    for seed in progress(range(n_seeds), task.name):
        Xtr, Xte, ytr, yte = _split(task, seed, quick)
        n_train = Xtr.shape[0]
        sk, score, t = _timed(
            lambda: LogisticRegression(max_iter=5000), Xtr, ytr, Xte, yte
        )
        cpu["non-private"].append(t)
        ceilings = {"non-private": score}
        for name, cls in (("FM", FMLogisticRegression), ("OP", OPLogisticRegression)):
            exact = lambda cls=cls: cls(  # noqa: E731
                epsilon=math.inf, classes=classes, **_domain(task)
            )
            ceilings[f"{name} eps=inf"] = _timed(exact, Xtr, ytr, Xte, yte)[1]
        for eps in eps_list:
            for mode in MODES:
                scores, times, chosen = cell(task, Xtr, ytr, Xte, yte, eps, mode, seed)
                choice[(eps, mode)] = chosen
                for name, value in {**scores, **ceilings}.items():
                    acc[(eps, mode)][name].append(value)
                for name, value in times.items():
                    cpu[name].append(value)
    return acc, cpu, choice, n_train


def _mean(values):
    return float(np.mean(values)) if values else None


def _fmt(v):
    return "n/a" if v is None else v


def task_table(task, acc, choice, n_train, n_seeds):
    header = ["eps", "mode", *COLUMNS, "auto chose (rho)"]
    rows = []
    for (eps, mode), cols in acc.items():
        method, rho = choice[(eps, mode)]
        rows.append(
            [
                eps,
                mode,
                *(_fmt(_mean(cols[c])) for c in COLUMNS),
                f"{method} ({rho:.3g})",
            ]
        )
    return (
        f"#### {task.name}: test accuracy, mean of {n_seeds} seeds\n\n"
        f"n_train = {n_train}, d = {task.d}, classes = {np.unique(task.y).size}, "
        f"delta = {delta_for(n_train):.3g} in the (eps, delta) rows.\n\n"
        + markdown_table(header, rows)
    )


def difference_table(task, acc):
    """auto minus each other private method, paired over seeds."""
    header = ["eps", "mode", *(f"auto - {m}" for m in PRIVATE if m != "auto")]
    rows = []
    for (eps, mode), cols in acc.items():
        cells = []
        for other in PRIVATE:
            if other == "auto":
                continue
            if not cols[other]:
                cells.append("n/a")
                continue
            mean, se = paired_difference(cols["auto"], cols[other])
            cells.append(f"{mean:+.4f} +- {se:.4f}")
        rows.append([eps, mode, *cells])
    return f"Paired differences, {task.name}:\n\n" + markdown_table(header, rows)


def dpl_certified_epsilon(eps, q, n_classes, C=1.0):
    """diffprivlib's epsilon under its own (CMS) analysis with the curvature
    bound c q^2 in place of its c q (``mechanisms/vector.py``; c = 1/4, alpha =
    1 / C, intercept column 1); per class, times C for one-vs-rest."""
    eps_class = eps / n_classes
    q = math.sqrt(q * q + 1)  # its intercept column
    c, alpha = 0.25, 1.0 / C
    eps_p = eps_class - 2 * math.log1p(c * q / alpha)
    if eps_p <= 0:
        return math.nan  # its delta > 0 branch
    return n_classes * (eps_p + 2 * math.log1p(c * q * q / alpha))


def _reason(task, cols, other, choice, eps):
    method, rho = choice
    mean = {k: _mean(v) for k, v in cols.items()}
    if other in ("FM", "OP"):
        chosen = "FM" if method == "fm" else "OP"
        ceiling = mean[f"{chosen} eps=inf"]
        text = f"rule: rho = {rho:.3g} chose {chosen}; {other} is better here"
        if ceiling < mean[other]:
            text += f" ({chosen}'s eps=inf ceiling {ceiling:.4f} < {other})"
        return text
    certified = dpl_certified_epsilon(eps, _row_norm(task), np.unique(task.y).size)
    if certified > eps:
        return (
            f"diffprivlib: its own bound with the row norm squared certifies "
            f"eps = {certified:.3g}, not {eps}"
        )
    majority = float(np.max(np.unique(task.y, return_counts=True)[1]) / task.y.size)
    if max(mean["auto"], mean[other]) < majority + CHANCE_MARGIN:
        return (
            f"both within {CHANCE_MARGIN} of the majority-class rate "
            f"{majority:.3f}: neither learns at this budget"
        )
    return "noise: auto's release is noisier here"


def misses(results):
    """Cells where auto is neither first nor tied (2 s.e.) with a private method."""
    rows = []
    for task, acc, _, choice, _ in results:
        for (eps, mode), cols in acc.items():
            for other in PRIVATE:
                if other == "auto" or not cols[other]:
                    continue
                mean, se = paired_difference(cols["auto"], cols[other])
                if mean >= -2 * (se if np.isfinite(se) else 0.0):
                    continue
                rows.append(
                    [
                        task.name,
                        eps,
                        mode,
                        other,
                        f"{mean:+.4f} +- {se:.4f}",
                        _reason(task, cols, other, choice[(eps, mode)], eps),
                    ]
                )
    return rows


def cpu_table(results):
    header = ["task", "n_train", *PRIVATE, "non-private"]
    rows = []
    for task, _, cpu, _, n_train in results:
        rows.append(
            [
                task.name,
                n_train,
                *(
                    f"{np.median(cpu[m]):.3f}" if cpu[m] else "n/a"
                    for m in [*PRIVATE, "non-private"]
                ),
            ]
        )
    return (
        "#### CPU seconds per fit (median over cells; process_time)\n\n"
        + markdown_table(header, rows)
    )


# the plot's lines, in plain words; auto is drawn first, wide and pale, so that
# the method it picked (drawn over it) stays visible
PLOT_LINES = {
    "auto": ("skdp PrivateLogisticRegression (picks OP or FM; wide pale line)", "C2"),
    "OP": ("skdp objective perturbation (OPLogisticRegression)", "C1"),
    "FM": ("skdp functional mechanism (FMLogisticRegression)", "C0"),
    "diffprivlib": ("diffprivlib LogisticRegression (pure eps only)", "C3"),
}
MODE_STYLE = {"pure": "--", "(eps, delta)": "-"}


def _plot(results, out_dir, name):
    from matplotlib.lines import Line2D

    plt = pyplot()
    k = len(results)
    cols = min(3, k)
    rows = math.ceil(k / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(5 * cols, 3.6 * rows + 1.4), squeeze=False
    )
    drawn = set()
    for ax, (task, acc, _, _, n_train) in zip(axes.flat, results):
        eps = sorted({e for e, _ in acc})
        for method, (_, colour) in PLOT_LINES.items():
            for mode in MODES:
                if method == "diffprivlib" and mode != "pure":
                    continue  # one pure-eps release serves both guarantees
                vals = [_mean(acc[(e, mode)][method]) for e in eps]
                if vals[0] is None:
                    continue
                wide = method == "auto"
                drawn.add(method)
                ax.plot(
                    eps,
                    vals,
                    MODE_STYLE[mode],
                    marker="o",
                    color=colour,
                    lw=7 if wide else 1.4,
                    alpha=0.3 if wide else 1.0,
                    ms=11 if wide else 4,
                    zorder=1 if wide else 3,
                )
        ax.axhline(_mean(acc[(eps[0], MODES[0])]["non-private"]), color="k", lw=1)
        eps_axis(ax, eps)
        ax.set_ylabel("test accuracy")
        ax.set_title(f"{task.name} (n train = {n_train})", fontsize=10)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[k:]:
        fig.delaxes(ax)
    handles = [
        Line2D([], [], color=c, lw=7 if m == "auto" else 1.4,
               alpha=0.3 if m == "auto" else 1.0, label=label)
        for m, (label, c) in PLOT_LINES.items()
        if m in drawn
    ]  # fmt: skip
    if "diffprivlib" not in drawn:
        handles.append(
            Line2D(
                [], [], ls="none", label="diffprivlib: not in this run (not importable)"
            )
        )
    handles += [
        Line2D([], [], color="k", lw=1, label="non-private LogisticRegression"),
        Line2D([], [], color="0.3", ls="-", label="solid: (eps, delta)-DP"),
        Line2D([], [], color="0.3", ls="--", label="dashed: pure eps-DP"),
    ]
    cells = sum(len(acc) for _, acc, _, _, _ in results)
    missed = len({(r[0], r[1], r[2]) for r in misses(results)})
    title = (
        f"PrivateLogisticRegression is first or within 2 s.e. of every other "
        f"private method in {cells - missed} of {cells} cells (task x eps x "
        "guarantee)\n(higher is better; the cells where it is not are listed in "
        "the table)"
    )
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.suptitle(title, fontsize=11)
    height = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, min(0.4, 0.85 / height), 1, 1))
    return save_figure(fig, out_dir, name, layout=False)


def main(quick=True, out_dir="benchmarks/results", rule=True, n_seeds=None):
    """FM, OP, auto, diffprivlib and non-private logistic regression on real data,
    then (``rule``) the grid that chose the auto rule."""
    n_seeds = n_seeds or (2 if quick else 10)
    eps_list = EPS_QUICK if quick else EPS_FULL
    makers = (*_real_tasks.BINARY, *_real_tasks.MULTICLASS)
    if quick:
        makers = (_real_tasks.hmda_deny, _real_tasks.adult_income, _real_tasks.digits)
    results = []
    for make in makers:
        task = make()
        results.append((task, *run_task(task, eps_list, n_seeds, quick)))
    mode = "quick" if quick else "full"
    dpl = DPL_VERSION or f"not importable ({DPL_ERROR})"
    parts = [
        f"### Private logistic regression on real data ({mode} mode)\n\n"
        f"diffprivlib: {dpl}. Stratified 70/30 splits"
        + (f", training sets capped at {QUICK_MAX_TRAIN} rows" if quick else "")
        + "; FM and OP: Laplace / K-norm noise when pure, Gaussian with delta = "
        "min(1/n^2, 1e-5) otherwise; diffprivlib is pure epsilon in both rows; "
        "C > 2 classes: FM and OP in one release, diffprivlib one-vs-rest at "
        "eps / C."
        + ("" if rule else " The grid that chose the auto rule was not run here.")
        + f" Machine: {machine_description()}."
    ]
    for task, acc, _, choice, n_train in results:
        parts.append(task_table(task, acc, choice, n_train, n_seeds))
        parts.append(difference_table(task, acc))
    miss = misses(results)
    parts.append(
        f"#### Cells where auto is not first ({len(miss)})\n\n"
        "A cell is listed when auto minus another private method is below -2 s.e. "
        "(paired over seeds); the reason is read off this run.\n\n"
        + markdown_table(["task", "eps", "mode", "vs", "auto - other", "reason"], miss)
    )
    parts.append(cpu_table(results))
    write_result(out_dir, "private_logistic", "\n\n".join(parts))
    if rule:
        _, _, text = _logistic_rule.rule_main(quick=quick)
        write_result(out_dir, "private_logistic_rule", text)
    _plot(results, out_dir, "private_logistic")
    return results


if __name__ == "__main__":
    cli(main)
