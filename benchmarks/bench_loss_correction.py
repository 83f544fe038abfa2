"""LossCorrectedLogisticRegression: speed, divergence and solver accuracy (issue 28).

Three tables, all from one run:

* **Speed.** CPU time (``time.process_time``, median over repeats, one BLAS
  thread for every learner: with several threads a busy machine makes every
  small BLAS call wait, which swamps the comparison) of one fit on labels
  released by k-ary randomized response at eps = 1, against scikit-learn's
  ``LogisticRegression()`` (defaults: L-BFGS, tol 1e-4, at most 100
  iterations) and, for reference, ``LogisticRegression(tol=1e-8,
  max_iter=10000)``. Target of issue 28: within 3x of scikit-learn on Adult
  (45,222 rows, 47 features, ``benchmarks/_real_tasks.adult_income``).
* **Backward correction where its counts go negative.** digits (10 classes,
  1,257 training rows, stratified 70/30 splits), RR at eps in {0.1, 0.25, 0.5,
  1}: how often the backward correction refuses (standard error of the
  corrected class frequencies >= 1/2), projects its negative corrected class
  counts (with a warning) or fits as is; test accuracy of what it fits against
  the majority class, with the forward correction and uncorrected logistic
  regression on the same labels.
* **Sample weights against repeated rows.** The largest relative difference of
  ``decision_function`` between a fit with integer sample weights and a fit on
  the rows repeated, over data sets drawn like scikit-learn's
  ``check_sample_weight_equivalence_on_dense_data`` (15 rows, 30 features, 3
  classes, weights 0..4), whose tolerance is 1e-7.
"""

import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    cli,
    eps_axis,
    figure_legend,
    machine_description,
    markdown_table,
    pyplot,
    save_figure,
    write_result,
)
from _real_tasks import adult_income, diamonds_cut, digits  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.utils import shuffle  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from skdp.linear_model import LossCorrectedLogisticRegression  # noqa: E402
from skdp.preprocessing import RandomizedResponse  # noqa: E402

QUICK = dict(
    speed_tasks=["adult", "digits"],
    repeats=3,
    eps=[0.1, 0.5, 1.0],
    seeds=3,
    weight_sets=10,
)
FULL = dict(
    speed_tasks=["adult", "digits", "diamonds cut"],
    repeats=7,
    eps=[0.1, 0.25, 0.5, 1.0],
    seeds=10,
    weight_sets=30,
)
SPEED_TASKS = {"adult": adult_income, "digits": digits, "diamonds cut": diamonds_cut}
LEARNERS = {
    "sklearn LogisticRegression()": lambda T: LogisticRegression(),
    "sklearn LogisticRegression(tol=1e-8)": lambda T: LogisticRegression(
        tol=1e-8, max_iter=10000
    ),
    "LossCorrected correction=None": lambda T: LossCorrectedLogisticRegression(
        correction=None
    ),
    "LossCorrected forward": lambda T: LossCorrectedLogisticRegression(
        transition_matrix=T
    ),
    "LossCorrected backward": lambda T: LossCorrectedLogisticRegression(
        transition_matrix=T, correction="backward"
    ),
}
REFERENCE = "sklearn LogisticRegression()"


def _cpu_time(fit, repeats):
    """Median CPU seconds of ``fit()`` over ``repeats`` calls, and its result."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        model = fit()
        times.append(time.process_time() - start)
    return statistics.median(times), model


def _release(X, y, epsilon, seed):
    classes = np.unique(y)
    rr = RandomizedResponse(epsilon=epsilon, classes=classes, random_state=seed)
    _, y_released = rr.fit_resample(X, y)
    return y_released, rr.label_matrix_


def speed(cfg):
    rows, records = [], []
    for task_name in cfg["speed_tasks"]:
        task = SPEED_TASKS[task_name]()
        y_released, T = _release(task.X, task.y, 1.0, 0)
        times = {}
        for name, make in LEARNERS.items():

            def fit(make=make, X=task.X, y=y_released, T=T):
                return make(T).fit(X, y)

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # sklearn's ConvergenceWarning
                seconds, model = _cpu_time(fit, cfg["repeats"])
            times[name] = seconds
            n_iter = int(np.max(model.n_iter_))
            records.append((task_name, name, seconds))
            rows.append(
                [
                    task_name,
                    f"{task.X.shape[0]} x {task.X.shape[1]}, {np.unique(task.y).size}",
                    name,
                    f"{seconds:.3f}",
                    f"{seconds / times[REFERENCE]:.2f}",
                    n_iter,
                ]
            )
    header = [
        "task",
        "rows x features, classes",
        "learner",
        "CPU s per fit",
        "x sklearn default",
        "iterations",
    ]
    return markdown_table(header, rows), records


def _fit_outcome(model, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.fit(X, y)
        except ValueError:
            return "refused", None
    warned = any(issubclass(w.category, UserWarning) for w in caught)
    return ("warned" if warned else "fitted"), model


def divergence(cfg):
    task = digits()
    classes = np.unique(task.y)
    learners = {
        "backward": lambda T: LossCorrectedLogisticRegression(
            transition_matrix=T, classes=classes, correction="backward"
        ),
        "forward": lambda T: LossCorrectedLogisticRegression(
            transition_matrix=T, classes=classes
        ),
        "uncorrected": lambda T: LossCorrectedLogisticRegression(
            correction=None, classes=classes
        ),
    }
    results = {}  # (eps, learner) -> list of (outcome, accuracy, majority, |b|)
    for eps in cfg["eps"]:
        for seed in range(cfg["seeds"]):
            X_train, X_test, y_train, y_test = train_test_split(
                task.X, task.y, test_size=0.3, stratify=task.y, random_state=seed
            )
            y_released, T = _release(X_train, y_train, eps, seed)
            majority = np.bincount(y_test).max() / len(y_test)
            for name, make in learners.items():
                outcome, model = _fit_outcome(make(T), X_train, y_released)
                if model is None:
                    acc = bmax = np.nan
                else:
                    acc = float(np.mean(model.predict(X_test) == y_test))
                    bmax = float(np.abs(model.intercept_).max())
                results.setdefault((eps, name), []).append(
                    (outcome, acc, majority, bmax)
                )
    rows = []
    for (eps, name), runs in results.items():
        outcomes = [r[0] for r in runs]
        fitted = [r for r in runs if r[0] != "refused"]
        accs = [r[1] for r in fitted]
        beats = sum(r[1] > r[2] for r in fitted)
        rows.append(
            [
                f"{eps:g}",
                name,
                outcomes.count("refused"),
                outcomes.count("warned"),
                outcomes.count("fitted"),
                f"{np.mean(accs):.3f}" if accs else "-",
                f"{np.min(accs):.3f}" if accs else "-",
                f"{beats}/{len(fitted)}",
                f"{max(r[3] for r in fitted):.3g}" if fitted else "-",
            ]
        )
    header = [
        "eps",
        "learner",
        "refused",
        "warned",
        "fitted silently",
        "mean acc (fitted)",
        "min acc",
        "beats majority",
        "max abs intercept",
    ]
    majority = np.mean([r[2] for r in results[(cfg["eps"][0], "backward")]])
    note = (
        f"digits, {cfg['seeds']} split(s) per eps, majority-class test accuracy "
        f"{majority:.3f}. Before this change (main 482a736) the backward "
        "correction never refused or warned and returned intercepts up to "
        "1e21 with a one-class predict at eps 0.1 (10/10 seeds)."
    )
    return note + "\n\n" + markdown_table(header, rows), results


def weight_equivalence(cfg):
    rows = []
    for correction in ("forward", "backward"):
        worst = 0.0
        for seed in range(cfg["weight_sets"]):
            rng = np.random.RandomState(seed)
            X, y = rng.rand(15, 30), rng.randint(0, 3, size=15)
            w = rng.randint(0, 5, size=15)
            if np.unique(y[w > 0]).size < 3:
                continue
            X_w, y_w, w_w = shuffle(X, y, w, random_state=0)
            model = LossCorrectedLogisticRegression(correction=correction)
            repeated = model.fit(X.repeat(w, axis=0), y.repeat(w))
            a = repeated.decision_function(X)
            b = model.fit(X_w, y_w, sample_weight=w_w).decision_function(X)
            worst = max(worst, float(np.max(np.abs(a - b) / np.abs(a))))
        rows.append([correction, cfg["weight_sets"], f"{worst:.1e}", "1e-07"])
    header = ["correction", "data sets", "largest relative difference", "check's rtol"]
    return markdown_table(header, rows)


SPEED_LABELS = {
    "sklearn LogisticRegression()": "scikit-learn LogisticRegression (default tol)",
    "sklearn LogisticRegression(tol=1e-8)": "scikit-learn LogisticRegression, tol=1e-8",
    "LossCorrected correction=None": "skdp LossCorrectedLogisticRegression, none",
    "LossCorrected forward": "skdp LossCorrectedLogisticRegression, forward",
    "LossCorrected backward": "skdp LossCorrectedLogisticRegression, backward",
}


# the accuracy lines in the colours of the same learners' speed bars
ACC_LINES = {
    "backward": ("C4", "accuracy: backward-corrected (fitted models)"),
    "forward": ("C3", "accuracy: forward-corrected (fitted models)"),
    "uncorrected": ("C2", "accuracy: no correction (fitted models)"),
}


def plot(speed_records, results, cfg, out_dir):
    plt = pyplot()
    fig, (ax_speed, ax_acc) = plt.subplots(1, 2, figsize=(12, 5.2))
    tasks = cfg["speed_tasks"]
    width = 0.8 / len(LEARNERS)
    for k, name in enumerate(LEARNERS):
        seconds = [
            s for t in tasks for (tt, n, s) in speed_records if (tt, n) == (t, name)
        ]
        ax_speed.bar(
            np.arange(len(tasks)) + k * width, seconds, width, label=SPEED_LABELS[name]
        )
    ax_speed.set_xticks(np.arange(len(tasks)) + 0.4 - width / 2, tasks)
    ax_speed.set_yscale("log")
    ax_speed.set_ylabel("CPU s per fit (1 BLAS thread; lower is better)")
    ax_speed.set_title("Speed: one fit on labels from RR at eps = 1", fontsize=10)
    eps = cfg["eps"]
    curves = {}
    for name in ("backward", "forward", "uncorrected"):
        means = []
        for e in eps:
            accs = [r[1] for r in results[(e, name)] if r[0] != "refused"]
            means.append(np.mean(accs) if accs else np.nan)
        curves[name] = means
        colour, label = ACC_LINES[name]
        ax_acc.plot(eps, means, marker="o", color=colour, label=label)
    majority = np.mean([r[2] for r in results[(eps[0], "backward")]])
    ax_acc.axhline(majority, color="grey", lw=0.8, label="predict the majority class")
    eps_axis(ax_acc, eps, "eps (10-class randomized response on digits)")
    ax_acc.set_ylabel("test accuracy (higher is better)")
    ax_acc.set_title("Accuracy on 10-class digits", fontsize=10)
    ahead = sum(
        f >= u for f, u in zip(curves["forward"], curves["uncorrected"]) if f == f
    )
    title = (
        "Loss correction on randomized-response labels: the forward correction is "
        f"at least as accurate as none at {ahead} of {len(eps)} epsilons"
    )
    figure_legend(fig, np.array([ax_speed, ax_acc]), ncol=3, title=title)
    return save_figure(fig, out_dir, "loss_correction", dpi=110, layout=False)


def main(quick=True, out_dir="benchmarks/results"):
    """LossCorrectedLogisticRegression: speed vs scikit-learn, divergence, weights."""
    cfg = QUICK if quick else FULL
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        speed_table, speed_records = speed(cfg)
        divergence_table, results = divergence(cfg)
        weights_table = weight_equivalence(cfg)
    path = plot(speed_records, results, cfg, out_dir)
    elapsed = time.perf_counter() - start
    head = (
        f"{'Quick' if quick else 'Full'} mode on {machine_description()}, one "
        f"BLAS thread; {elapsed:.0f} s wall (machine shared with other jobs). "
        f"Plot: {path.name}."
    )
    text = "\n\n".join(
        [
            head,
            "### Speed: one fit, labels from RR at eps = 1 (CPU time)",
            speed_table,
            "### Backward correction on 10-class RR labels",
            divergence_table,
            "### Sample weights against repeated rows",
            weights_table,
        ]
    )
    write_result(out_dir, "loss_correction", text)
    return text


if __name__ == "__main__":
    cli(main)
