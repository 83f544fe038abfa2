"""How the depth targets ``LEAF_SIGNAL`` (forest) and ``TREE_LEAF_SIGNAL`` were chosen.

``PYTHONPATH=$PWD python benchmarks/_tree_depth_choice.py`` (a Python with
scikit-learn 1.6 and diffprivlib 0.6.6; about 6 minutes on 2 cores) writes
``tree_depth_choice.md`` to ``--out-dir`` (default ``benchmarks/results``).

The automatic depth is the deepest ``D`` with ``n 2^-D >= c sqrt(T) 2 sqrt(2) /
epsilon`` (``skdp._trees.auto_depth``). For ``c`` in {0.5, 1, 2, 4, 8}, the
forest (10 trees) and the single tree are fitted with that depth on every task
of three families, and compared with diffprivlib's at ``epsilon / 2`` (equal
replace-one guarantee), 10 seeds, epsilon in {0.5, 1, 2, 5}, the protocol of
``_forest_eval.py``:

- tuning: Adult, HMDA, HealthInsurance, Fertility (the rule is read here only);
- evaluation: ``_task_families.EVALUATION_BINARY`` (reported);
- fresh: ``_forest_fresh_tasks.FRESH_BINARY`` (reported).

The rule: among the ``c`` within 2 s.e. of diffprivlib in every tuning cell,
the one with the best mean tuning accuracy.
"""

import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _real_tasks  # noqa: E402
from _common import cli, machine_description, markdown_table, write_result  # noqa: E402
from _forest_fresh_tasks import FRESH_BINARY  # noqa: E402
from _task_families import EVALUATION_BINARY  # noqa: E402

from skdp._trees import auto_depth  # noqa: E402
from skdp.ensemble import PrivateRandomForestClassifier  # noqa: E402
from skdp.tree import PrivateDecisionTreeClassifier  # noqa: E402

NAME = "tree_depth_choice"
TARGETS = (0.5, 1, 2, 4, 8)
EPSILONS = (0.5, 1, 2, 5)
FAMILIES = {
    "tuning": (
        _real_tasks.adult_income,
        _real_tasks.hmda_deny,
        _real_tasks.healthins_insurance,
        _real_tasks.fertility_morekids,
    ),
    "evaluation": EVALUATION_BINARY,
    "fresh": FRESH_BINARY,
}
MODELS = {
    "forest": (PrivateRandomForestClassifier, 10),
    "tree": (PrivateDecisionTreeClassifier, 1),
}


def _cell(task, model, eps, n_seeds, dpl):
    """Per target: (mean accuracy, within 2 s.e. of diffprivlib or better)."""
    from sklearn.model_selection import train_test_split

    cls, n_trees = MODELS[model]
    X, y = task.X, np.asarray(task.y, int)
    d = X.shape[1]
    acc = {c: [] for c in TARGETS}
    ref = []
    for seed in range(n_seeds):
        Xtr, Xte, ytr, yte = train_test_split(
            X, y, test_size=0.3, random_state=seed, stratify=y
        )
        for c in TARGETS:
            depth = auto_depth(len(ytr), eps, n_trees, leaf_signal=c)
            clf = cls(
                epsilon=eps,
                bounds_X=(0, 1),
                classes=[0, 1],
                max_depth=depth,
                random_state=seed,
            )
            acc[c].append(clf.fit(Xtr, ytr).score(Xte, yte))
        dpl_cls = (
            dpl.RandomForestClassifier
            if model == "forest"
            else (dpl.DecisionTreeClassifier)
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = dpl_cls(
                epsilon=eps / 2,
                bounds=(np.zeros(d), np.ones(d)),
                classes=[0, 1],
                random_state=seed,
            )
            ref.append(m.fit(Xtr, ytr).score(Xte, yte))
    out = {}
    for c in TARGETS:
        diff = np.asarray(acc[c]) - np.asarray(ref)
        se = diff.std(ddof=1) / math.sqrt(n_seeds)
        out[c] = (float(np.mean(acc[c])), bool(diff.mean() >= -2 * se))
    return out, float(np.mean(ref))


def main(quick=True, out_dir="benchmarks/results"):
    """Each depth target on the three families; the tuning rule's choice."""
    try:
        import diffprivlib.models as dpl
    except Exception as exc:  # noqa: BLE001 - diffprivlib fails in many ways
        raise SystemExit(
            f"needs diffprivlib 0.6.6 (scikit-learn <= 1.6): {exc}"
        ) from exc
    n_seeds = 3 if quick else 10
    start = time.perf_counter()
    sections = []
    for model in MODELS:
        rows, summary = [], []
        for family, makers in FAMILIES.items():
            ok = dict.fromkeys(TARGETS, 0)
            total = dict.fromkeys(TARGETS, 0.0)
            cells = 0
            for make in makers:
                task = make()
                for eps in EPSILONS:
                    res, ref = _cell(task, model, eps, n_seeds, dpl)
                    cells += 1
                    for c, (mean, good) in res.items():
                        ok[c] += good
                        total[c] += mean
                    rows.append(
                        [family, task.name, eps]
                        + [
                            f"{m:.3f}" + ("" if g else " (behind)")
                            for m, g in (res[c] for c in TARGETS)
                        ]
                        + [f"{ref:.3f}"]
                    )
            summary.append(
                [family] + [f"{ok[c]}/{cells}, {total[c] / cells:.4f}" for c in TARGETS]
            )
            if family == "tuning":
                eligible = [c for c in TARGETS if ok[c] == cells] or list(TARGETS)
                chosen = max(eligible, key=lambda c: (ok[c], total[c]))
        head = [f"c = {c}" for c in TARGETS]
        sections.append(
            f"#### {model}: the tuning rule chooses c = {chosen}\n\n"
            "Cells within 2 s.e. of diffprivlib (or ahead) / cells, mean "
            "accuracy:\n\n"
            + markdown_table(["family", *head], summary)
            + "\n\nPer cell (mean accuracy; '(behind)': more than 2 s.e. behind "
            "diffprivlib at eps/2):\n\n"
            + markdown_table(
                ["family", "task", "epsilon", *head, "diffprivlib at eps/2"], rows
            )
        )
    text = (
        "### How the trees' depth targets were chosen (tuning family only)\n\n"
        f"{n_seeds} seeds; {machine_description()}; "
        f"{time.perf_counter() - start:.0f} s.\n\n"
        "Rule: among the targets c within 2 s.e. of diffprivlib in every tuning "
        "cell, the best mean tuning accuracy. The evaluation and fresh rows are "
        "reported, not used.\n\n" + "\n\n".join(sections) + "\n"
    )
    write_result(out_dir, NAME, text)
    return text


if __name__ == "__main__":
    cli(main)
