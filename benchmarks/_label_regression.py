"""Label-private regression on real tasks: RR-on-bins, Laplace labels, the
automatic choice, next to the non-private fit (part of bench_label_learning).

Every task of ``_real_tasks.REGRESSION`` and ``_label_tasks.REGRESSION``
(eleven real data sets, 506 to 61,395 rows): 70/30 split per seed, labels of
the training split released by :class:`skdp.preprocessing.RegressionLabelRelease`
inside :class:`skdp.preprocessing.PrivateLabelRegressor` with the task's
declared label range, then ``RidgeCV`` (alphas 1e-3..1e7; its leave-one-out
choice on the released labels is post-processing) fits the released labels.
Score: test MSE (clean test labels) divided by the clean OLS test MSE of the
same split. Columns:

* ``bins``: RR-on-bins as in the paper (``debias=False``): the reports are the
  bins' outputs, prior from a Laplace histogram with ``prior_share="auto"``;
* ``bins-deb``: the same release, reports debiased (skdp's default);
* ``laplace``: clipped label + Laplace(range / eps), the whole epsilon;
* ``auto``: ``mechanism="auto"`` (skdp's default), with the number of seeds
  in which it chose Laplace noise;
* ``clean``: ``RidgeCV`` on the clean labels.

The issue's target: in every cell, ``auto`` <= 1.1 x min(bins, laplace).
"""

import time
import warnings

import numpy as np
from _common import (
    eps_axis,
    figure_legend,
    markdown_table,
    paired_difference,
    progress,
    pyplot,
    save_figure,
)
from sklearn.linear_model import LinearRegression, RidgeCV
from sklearn.model_selection import train_test_split

from skdp.preprocessing import PrivateLabelRegressor, RegressionLabelRelease

ALPHAS = np.logspace(-3, 7, 21)
CONFIGS = {
    "bins": dict(mechanism="rr_on_bins", debias=False),
    "bins-deb": dict(mechanism="rr_on_bins", debias=True),
    "laplace": dict(mechanism="laplace"),
    "auto": dict(mechanism="auto"),
}
TARGET = 1.1


def _tasks(cfg):
    import _label_tasks
    import _real_tasks

    for make in _real_tasks.REGRESSION + _label_tasks.REGRESSION:
        task = make()
        if cfg["regression_tasks"] is None or task.name in cfg["regression_tasks"]:
            yield task


def run(cfg):
    """Records (task, n_train, config, eps, seed, mse ratio, mechanism used)."""
    records, cpu = [], {}
    for task in _tasks(cfg):
        start = time.process_time()
        for seed in progress(range(cfg["reg_seeds"]), desc=task.name):
            Xtr, Xte, ytr, yte = train_test_split(
                task.X, task.y, test_size=0.3, random_state=seed
            )
            clean = np.mean((LinearRegression().fit(Xtr, ytr).predict(Xte) - yte) ** 2)
            ridge = RidgeCV(alphas=ALPHAS).fit(Xtr, ytr)
            ratio = np.mean((ridge.predict(Xte) - yte) ** 2) / clean
            records.append((task.name, len(ytr), "clean", np.inf, seed, ratio, "none"))
            for eps in cfg["eps"]:
                for name, kw in CONFIGS.items():
                    model = PrivateLabelRegressor(
                        RidgeCV(alphas=ALPHAS),
                        RegressionLabelRelease(
                            epsilon=eps, random_state=1000 + seed, **kw
                        ),
                        label_bounds=task.y_bounds,
                    )
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(Xtr, ytr)
                    mse = np.mean((model.predict(Xte) - yte) ** 2) / clean
                    used = model.privatizer_.mechanism_
                    records.append((task.name, len(ytr), name, eps, seed, mse, used))
        cpu[task.name] = time.process_time() - start
    return records, cpu


def _values(records, task, config, eps):
    return np.array(
        [r[5] for r in sorted(records, key=lambda r: r[4]) if r[0] == task
         and r[2] == config and r[3] == eps]
    )  # fmt: skip


def tables(records, cfg):
    tasks = list(dict.fromkeys(r[0] for r in records))
    n_train = {r[0]: r[1] for r in records}
    header = ["task", "n_train", "config"] + [f"eps {e:g}" for e in cfg["eps"]]
    rows = []
    for task in tasks:
        clean = _values(records, task, "clean", np.inf).mean()
        for name in CONFIGS:
            cells = []
            for eps in cfg["eps"]:
                vals = _values(records, task, name, eps)
                cell = f"{vals.mean():.3f}"
                if name == "auto":
                    picks = [
                        r[6] for r in records
                        if r[0] == task and r[2] == "auto" and r[3] == eps
                    ]  # fmt: skip
                    cell += f" (L{sum(p == 'laplace' for p in picks)})"
                cells.append(cell)
            rows.append([task, n_train[task], name] + cells)
        rows.append(
            [task, n_train[task], "clean RidgeCV", f"{clean:.3f}"]
            + [""] * (len(cfg["eps"]) - 1)
        )
    main = (
        "### Label-private regression: test MSE / clean OLS test MSE (mean over "
        f"{cfg['reg_seeds']} seeds; RidgeCV on the released labels; (Ln) = seeds "
        "where auto chose Laplace noise)\n\n" + markdown_table(header, rows)
    )
    # the target: auto within 10% of the better of bins and laplace
    header = ["task"] + [f"eps {e:g}" for e in cfg["eps"]]
    rows, held, total = [], 0, 0
    for task in tasks:
        cells = []
        for eps in cfg["eps"]:
            auto = _values(records, task, "auto", eps).mean()
            best = min(
                _values(records, task, c, eps).mean() for c in ("bins", "laplace")
            )
            ok = auto <= TARGET * best
            held += ok
            total += 1
            cells.append(f"{auto / best:.3f}" + ("" if ok else " **miss**"))
        rows.append([task] + cells)
    target = (
        f"### Target: auto <= {TARGET} x min(bins, laplace) in every cell "
        f"(holds in {held} of {total} cells; the ratio is shown)\n\n"
        + markdown_table(header, rows)
    )
    # paired differences of the two defaults' components
    header = ["task"] + [f"eps {e:g}" for e in cfg["eps"]]
    rows = []
    for task in tasks:
        cells = []
        for eps in cfg["eps"]:
            mean, se = paired_difference(
                _values(records, task, "bins-deb", eps),
                _values(records, task, "bins", eps),
            )
            cells.append(f"{mean:+.3f} ± {se:.3f}")
        rows.append([task] + cells)
    debias = (
        "### Debiased minus paper RR-on-bins (paired per-seed difference of the "
        "MSE ratio ± s.e.; negative: debiasing helps)\n\n"
        + markdown_table(header, rows)
    )
    return [main, target, debias]


# the plot's lines in plain words
PLOT_LINES = {
    "bins": ("RR-on-bins as published (Ghazi et al. 2023)", "s:"),
    "bins-deb": ("RR-on-bins, debiased reports", "^--"),
    "laplace": ("Laplace noise on the clipped label", "D--"),
    "auto": (
        "skdp PrivateLabelRegressor default (picks debiased bins or Laplace)",
        "o-",
    ),
}


def plot(records, cfg, out_dir):
    plt = pyplot()
    tasks = list(dict.fromkeys(r[0] for r in records))
    cols = min(4, len(tasks))
    rows = -(-len(tasks) // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.6 * cols, 2.9 * rows + 1.4), squeeze=False
    )
    axes = axes.ravel()
    ahead = cells = 0
    for ax, task in zip(axes, tasks):
        for i, (name, (label, style)) in enumerate(PLOT_LINES.items()):
            means = [_values(records, task, name, e).mean() for e in cfg["eps"]]
            ax.plot(
                cfg["eps"],
                means,
                style,
                color=f"C{i}",
                lw=2.2 if name == "auto" else 1.2,
                label=label,
            )
        for e in cfg["eps"]:
            cells += 1
            auto = _values(records, task, "auto", e).mean()
            ahead += auto <= _values(records, task, "bins", e).mean()
        ax.axhline(
            _values(records, task, "clean", np.inf).mean(),
            color="k",
            lw=0.8,
            label="RidgeCV on the clean labels (no privacy)",
        )
        ax.set_yscale("log")
        eps_axis(ax, cfg["eps"], "label-DP epsilon")
        ax.set_title(task, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes[len(tasks) :]:
        fig.delaxes(ax)
    for ax in axes[::cols]:
        ax.set_ylabel("test MSE / clean OLS")
    title = (
        "Only the labels private (regression): skdp's default is at or below "
        f"RR-on-bins as published\nin {ahead} of {cells} cells (lower is better)"
    )
    figure_legend(fig, axes, ncol=3, title=title)
    return save_figure(fig, out_dir, "label_learning_regression", dpi=110, layout=False)
