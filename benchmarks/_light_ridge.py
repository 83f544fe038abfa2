"""Choosing the light ridge's multiple on the TUNING family (issue 34).

``OPLogisticRegression(alpha="light")`` is ``LIGHT_RIDGE_MULTIPLE`` times the
smallest admissible ridge; it exists as the second candidate of a private
choice, ``PrivateGridSearchCV(OPLogisticRegression(...), {"alpha": ["auto",
"light"]})``. So the multiple is chosen by what that search releases: for
each candidate multiple, the search's test accuracy minus the default
``PrivateLogisticRegression()``'s (same split and noise seed), summed over the
tuning family's binary tasks at total epsilon 1 and 5; the largest sum wins.
The evaluation family is then reported with every multiple, for the record.

70/30 stratified splits, training rows capped (``cap``), pure DP, declared box
as in ``_task_families.domain_kwargs``; reproducible noise switched on. ::

    nice python benchmarks/_light_ridge.py tuning 6 20000 4,8,16
    nice python benchmarks/_light_ridge.py evaluation 10 100000 4,8,16
    python benchmarks/_light_ridge.py --summary tuning evaluation
"""

import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _task_families as fam  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import skdp  # noqa: E402
import skdp.linear_model._op_calibration as op_calibration  # noqa: E402
from skdp.linear_model import (  # noqa: E402
    OPLogisticRegression,
    PrivateLogisticRegression,
)
from skdp.model_selection import PrivateGridSearchCV  # noqa: E402

RESULTS = Path("benchmarks/results")


def _path(family):
    return RESULTS / f"light_ridge_{family}.jsonl"


def run(family, n_seeds, cap, multiples):
    RESULTS.mkdir(parents=True, exist_ok=True)
    with _path(family).open("w") as out:
        for task in fam.families("binary", synthetic_n=6000)[family]:
            common = dict(classes=[0, 1], **fam.domain_kwargs(task))
            for eps in (1.0, 5.0):
                scores = {"default": []}
                for seed in range(n_seeds):
                    Xtr, Xte, ytr, yte = train_test_split(
                        task.X,
                        task.y,
                        test_size=0.3,
                        stratify=task.y,
                        random_state=seed,
                    )
                    Xtr, ytr = Xtr[:cap], ytr[:cap]
                    default = PrivateLogisticRegression(
                        epsilon=eps, random_state=seed, **common
                    )
                    scores["default"].append(default.fit(Xtr, ytr).score(Xte, yte))
                    for m in multiples:
                        op_calibration.LIGHT_RIDGE_MULTIPLE = m
                        search = PrivateGridSearchCV(
                            OPLogisticRegression(**common),
                            {"alpha": ["auto", "light"]},
                            epsilon=eps,
                            random_state=seed,
                        )
                        acc = search.fit(Xtr, ytr).score(Xte, yte)
                        scores.setdefault(f"{m:g}", []).append(acc)
                row = dict(task=task.name, n=len(ytr), eps=eps, scores=scores)
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(task.name, len(ytr), eps, flush=True)


def summary(families):
    for family in families:
        rows = [json.loads(line) for line in _path(family).open()]
        multiples = [k for k in rows[0]["scores"] if k != "default"]
        print(f"\n### {family} family\n")
        print(
            "| task | n | eps | default | "
            + " | ".join(f"search, x{m}: diff (s.e.)" for m in multiples)
            + " |"
        )
        print("|---|---|---|---|" + "---|" * len(multiples))
        totals = dict.fromkeys(multiples, 0.0)
        oks = dict.fromkeys(multiples, 0)
        for r in rows:
            base = np.asarray(r["scores"]["default"])
            cells = []
            for m in multiples:
                diff = np.asarray(r["scores"][m]) - base
                se = diff.std(ddof=1) / np.sqrt(diff.size)
                ok = diff.mean() >= -2 * se
                totals[m] += diff.mean()
                oks[m] += ok
                cells.append(f"{diff.mean():+.3f} ({se:.3f}){'' if ok else ' below'}")
            print(
                f"| {r['task']} | {r['n']} | {r['eps']:g} | {base.mean():.3f} | "
                + " | ".join(cells)
                + " |"
            )
        print(
            "| **sum / within 2 s.e.** | | | | "
            + " | ".join(
                f"{totals[m]:+.3f} / {oks[m]} of {len(rows)}" for m in multiples
            )
            + " |"
        )


if __name__ == "__main__":
    if sys.argv[1] == "--summary":
        summary(sys.argv[2:])
        sys.exit(0)
    warnings.simplefilter("ignore")
    skdp.set_config(reproducible_noise=True)
    family, n_seeds, cap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    run(family, n_seeds, cap, [float(m) for m in sys.argv[4].split(",")])
