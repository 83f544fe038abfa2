"""Which OP ridge each task wants, at equal public quantities (issue 34).

For every binary task of a family (``_task_families.py``), optionally cut to
given training sizes, epsilon 0.5-5, pure and (epsilon, delta = 1/n^2): the
test accuracy of ``OPLogisticRegression`` with its ridge rule and with the
smallest admissible ridge times 1, 2, ..., 512, and of FM. Writes one JSON
line per cell to ``benchmarks/results/ridge_signal_<family>_<sizes>.jsonl``;
``--summary`` prints the best multiple per cell as a markdown table. ::

    nice python benchmarks/_ridge_signal.py evaluation 10 20000
    nice python benchmarks/_ridge_signal.py tuning 6 20000 400,1500,20000
    python benchmarks/_ridge_signal.py --summary FILE.jsonl [FILE.jsonl ...]
"""

import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _task_families as fam  # noqa: E402
import bench_defaults as bd  # noqa: E402
from _common import delta_for  # noqa: E402

import skdp  # noqa: E402
from skdp.linear_model import FMLogisticRegression, OPLogisticRegression  # noqa: E402

MULTIPLES = [1, 2, 4, 8, 16, 32, 64, 128, 512]
EPS = [0.5, 1, 2, 5]


def cell(task, splits, eps, mode):
    """Mean-able accuracies of one (task, size, eps, mode) cell, per seed."""
    res = {}
    for seed, (tr, te) in enumerate(splits):
        Xtr, ytr, Xte, yte = task.X[tr], task.y[tr], task.X[te], task.y[te]
        delta = delta_for(len(tr)) if mode == "delta" else 0.0
        common = dict(classes=[0, 1], random_state=seed, epsilon=eps, delta=delta)
        common.update(fam.domain_kwargs(task))
        smallest = bd.smallest_admissible_alpha(task, len(tr), eps)
        rule = OPLogisticRegression(**common).fit(Xtr, ytr)
        r = {"rule": rule.score(Xte, yte), "ratio": rule.alpha_ / smallest}
        for m in MULTIPLES:
            op = OPLogisticRegression(alpha=smallest * m, **common).fit(Xtr, ytr)
            r[f"x{m}"] = op.score(Xte, yte)
        if mode == "delta":
            pure = OPLogisticRegression(**dict(common, delta=0.0)).fit(Xtr, ytr)
            r["rule_pure"] = pure.score(Xte, yte)
        mech = "gaussian" if delta > 0 else "laplace"
        fm = FMLogisticRegression(mechanism=mech, **common).fit(Xtr, ytr)
        r["FM"] = fm.score(Xte, yte)
        for k, v in r.items():
            res.setdefault(k, []).append(v)
    return res


def run(family, n_seeds, cap, sizes):
    tasks = fam.families("binary", synthetic_n=6000)[family]
    tag = ",".join(map(str, sizes)) if sizes != [None] else "all"
    out_path = Path("benchmarks/results") / f"ridge_signal_{family}_{tag}.jsonl"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w") as out:
        for task in tasks:
            for size in sizes:
                splits = [bd._split(task, s, size or cap, True) for s in range(n_seeds)]
                for eps in EPS:
                    for mode in ("pure", "delta"):
                        scores = cell(task, splits, eps, mode)
                        row = dict(
                            task=task.name,
                            d=int(task.d),
                            n=len(splits[0][0]),
                            eps=eps,
                            mode=mode,
                            scores=scores,
                        )
                        out.write(json.dumps(row) + "\n")
                        out.flush()
                        means = " ".join(
                            f"{k}={np.mean(v):.3f}" for k, v in scores.items()
                        )
                        print(task.name[:22], row["n"], eps, mode, means, flush=True)


def summary(paths):
    for path in paths:
        print(f"\n### {Path(path).name}\n")
        print(
            "| task | n | eps | mode | rule / smallest | rule | best multiple "
            "| its accuracy | FM |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for line in open(path):
            r = json.loads(line)
            s = {k: float(np.mean(v)) for k, v in r["scores"].items()}
            mults = {k: v for k, v in s.items() if k.startswith("x")}
            best = max(mults, key=mults.get)
            print(
                f"| {r['task']} | {r['n']} | {r['eps']:g} | {r['mode']} "
                f"| {s['ratio']:.0f} | {s['rule']:.3f} | {best} "
                f"| {mults[best]:.3f} | {s['FM']:.3f} |"
            )


if __name__ == "__main__":
    if sys.argv[1] == "--summary":
        summary(sys.argv[2:])
        sys.exit(0)
    warnings.simplefilter("ignore")
    skdp.set_config(reproducible_noise=True)
    family, n_seeds, cap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sizes = [int(s) for s in sys.argv[4].split(",")] if len(sys.argv) > 4 else [None]
    run(family, n_seeds, cap, sizes)
