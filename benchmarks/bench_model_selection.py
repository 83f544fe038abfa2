"""Private tuning: PrivateGridSearchCV's released model vs fixed defaults.

What this shows: on binary tasks of the **evaluation** family
(``_task_families.EVALUATION_BINARY``: tasks that set no constant of skdp; the
tuning family's ``_real_tasks.BINARY`` only if that module is absent), the test
accuracy of the model :class:`~skdp.model_selection.PrivateGridSearchCV`
releases at a total epsilon (choice + model), against
``PrivateLogisticRegression()`` and ``FMLogisticRegression()`` at the same
epsilon (their defaults: no choice to pay for). The search's grid is
``OPLogisticRegression``'s ``alpha in ["auto", "light"]`` inside a Pipeline:
the rule's ridge, right where the signal is weak for ``n``, and the light
ridge (a multiple of the smallest admissible one, chosen on the tuning
family), right where it is strong; no public quantity tells the two apart
(``reference_results/full/ridge_signal.md``), so the search chooses on the
data. Pure DP (delta = 0), declared box ``[0, 1]^d``, 70/30 stratified
splits, one split and noise seed per repetition; mean and standard error over
repetitions; "diff" is the search minus the better default on that task
(chosen after the fact, which favours the defaults), paired over seeds, and
"within 2 s.e." says whether ``diff >= -2 s.e.``.

Quick mode: 4 tasks, 3 seeds (under 2 minutes on 2 cores); ``--full``: every
task, 10 seeds.
"""

import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import cli, markdown_table, paired_difference, write_result  # noqa: E402

EPSILONS = (1.0, 5.0)


def _domain(task):
    kw = {"bounds_X": (0.0, 1.0)}
    if task.max_nonzero is not None:
        kw["max_nonzero"] = task.max_nonzero
    return kw


def _families(quick):
    """[(family name, tasks, domain function)]: evaluation first."""
    import _real_tasks

    tuning = [make() for make in _real_tasks.BINARY]
    try:
        import _task_families
    except ImportError:
        out = [("tuning (_task_families.py not found)", tuning, _domain)]
    else:
        evaluation = [make() for make in _task_families.EVALUATION_BINARY]
        out = [
            ("evaluation", evaluation, _task_families.domain_kwargs),
            ("tuning", tuning, _task_families.domain_kwargs),
        ]
    if quick:  # the evaluation family's four smallest tasks only
        name, tasks, domain = out[0]
        out = [(name, sorted(tasks, key=lambda t: len(t.y))[:4], domain)]
    return out


def _methods(eps, dom, seed):
    from sklearn.pipeline import Pipeline

    from skdp.linear_model import (
        FMLogisticRegression,
        OPLogisticRegression,
        PrivateLogisticRegression,
    )
    from skdp.model_selection import PrivateGridSearchCV

    common = {"classes": [0, 1], **dom}
    # the two ends of the signal dichotomy (reference_results/full/ridge_signal.md):
    # the rule's ridge (weak signal) and the light one (strong signal)
    grid = {"clf__alpha": ["auto", "light"]}

    def search(refit_share):
        return PrivateGridSearchCV(
            Pipeline([("clf", OPLogisticRegression(**common))]),
            grid,
            epsilon=eps,
            refit_share=refit_share,
            random_state=seed,
        )

    return {
        "PrivateLogisticRegression()": PrivateLogisticRegression(
            epsilon=eps, random_state=seed, **common
        ),
        "FMLogisticRegression()": FMLogisticRegression(
            epsilon=eps, random_state=seed, **common
        ),
        "search": search(0.0),
        "search, refit_share=0.5": search(0.5),
    }


def _run(task, eps, seeds, dom):
    import warnings

    from sklearn.model_selection import train_test_split

    scores, chosen = {}, []
    for seed in seeds:
        X_tr, X_te, y_tr, y_te = train_test_split(
            task.X, task.y, test_size=0.3, stratify=task.y, random_state=seed
        )
        for name, est in _methods(eps, dom(task), seed).items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X_tr, y_tr)
            scores.setdefault(name, []).append(est.score(X_te, y_te))
            if name == "search":
                step = est.best_estimator_.named_steps["clf"]
                chosen.append(f"alpha={step.alpha}")
    return scores, chosen


def _mean_se(values):
    values = np.asarray(values, float)
    se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else np.nan
    return values.mean(), se


def _family_table(tasks, dom, seeds):
    rows = []
    for task in tasks:
        for eps in EPSILONS:
            scores, chosen = _run(task, eps, seeds, dom)
            plr, fm = (
                scores["PrivateLogisticRegression()"],
                scores["FMLogisticRegression()"],
            )
            best_name, best = max(
                (("PLR", plr), ("FM", fm)), key=lambda item: np.mean(item[1])
            )
            row = [task.name, len(task.y), task.d, eps]
            row += ["{:.3f} ± {:.3f}".format(*_mean_se(v)) for v in (plr, fm)]
            for name in ("search", "search, refit_share=0.5"):
                diff, se = paired_difference(scores[name], best)
                verdict = "ok" if diff >= -2 * se else "below"
                row += [
                    "{:.3f} ± {:.3f}".format(*_mean_se(scores[name])),
                    f"{diff:+.3f} ± {se:.3f} vs {best_name} ({verdict})",
                ]
            row.append(
                ", ".join(
                    f"{c} x{chosen.count(c)}"
                    for c in sorted(set(chosen), key=chosen.index)
                )
            )
            rows.append(row)
    header = [
        "task",
        "n",
        "d",
        "eps",
        "PrivateLogisticRegression()",
        "FMLogisticRegression()",
        "search",
        "search - better default",
        "search + refit 0.5",
        "refit - better default",
        "search's choices",
    ]
    return markdown_table(header, rows)


def main(quick=True, out_dir="benchmarks/results"):
    """Run the benchmark; write ``bench_model_selection.md``."""
    start = time.perf_counter()
    seeds = range(3) if quick else range(10)
    mode = "quick" if quick else "full"
    parts = [
        f"## Private tuning vs fixed defaults ({mode} mode, {len(seeds)} seeds)\n\n"
        "Test accuracy (mean ± s.e.); pure DP; the search's epsilon is the total "
        "for the choice and the model; (ok) = within 2 s.e. of the better default, "
        "paired over seeds."
    ]
    for family, tasks, dom in _families(quick):
        parts.append(f"### {family} family\n\n" + _family_table(tasks, dom, seeds))
    parts.append(f"({time.perf_counter() - start:.0f} s)")
    write_result(out_dir, "bench_model_selection", "\n\n".join(parts))


if __name__ == "__main__":
    cli(main)
