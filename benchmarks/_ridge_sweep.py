"""OP's test accuracy against its ridge, as multiples of the smallest admissible.

For re-deriving the OP ridge rule on the TUNING family only (issue 34): every
binary task of a family, eps in {0.5, 1, 2, 5}, pure and (eps, delta), the
ridge ``lambda = m * lambda_s`` for ``m`` in :data:`MULTIPLES`, ``lambda_s``
the smallest admissible ridge (``bench_defaults.smallest_admissible_alpha``:
Jacobian term ``eps / 2``), and FM for reference. Seeded noise (switched on
explicitly), 70/30 stratified splits, seeds 0..n_seeds-1, training sets the
first n rows of each split (``full``: all, capped at 20,000). Writes
``benchmarks/results/ridge_sweep_<family>_<sizes>.json``::

    nice python benchmarks/_ridge_sweep.py tuning 4 full
    nice python benchmarks/_ridge_sweep.py tuning 6 250 1000
"""

import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _task_families as fam  # noqa: E402
from _common import delta_for  # noqa: E402
from bench_defaults import EPS, MODES, _split, smallest_admissible_alpha  # noqa: E402

import skdp  # noqa: E402
from skdp.linear_model import FMLogisticRegression, OPLogisticRegression  # noqa: E402
from skdp.linear_model._private_logistic import public_problem  # noqa: E402

MULTIPLES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096]


def sweep(family, n_seeds, cap=20_000, sizes=(None,)):
    skdp.set_config(reproducible_noise=True)
    warnings.simplefilter("ignore")
    rows = []
    for task, size in [
        (t, s) for t in fam.families("binary", synthetic_n=6000)[family] for s in sizes
    ]:
        t0 = time.time()
        kw = fam.domain_kwargs(task)
        splits = [_split(task, s, size or cap, True) for s in range(n_seeds)]
        for eps in EPS:
            for mode in MODES:
                acc = {m: [] for m in MULTIPLES}
                acc["FM"], acc["auto"] = [], []
                for seed, (tr, te) in enumerate(splits):
                    Xtr, ytr, Xte, yte = task.X[tr], task.y[tr], task.X[te], task.y[te]
                    delta = 0.0 if mode == "pure" else delta_for(len(tr))
                    common = dict(
                        epsilon=eps, delta=delta, classes=[0, 1], random_state=seed
                    )
                    lam_s = smallest_admissible_alpha(task, len(tr), eps)
                    for m in MULTIPLES:
                        op = OPLogisticRegression(alpha=m * lam_s, **common, **kw)
                        acc[m].append(op.fit(Xtr, ytr).score(Xte, yte))
                    op = OPLogisticRegression(**common, **kw).fit(Xtr, ytr)
                    acc["auto"].append(op.score(Xte, yte))
                    auto_lam = op.alpha_
                    mech = "gaussian" if delta > 0 else "laplace"
                    fm = FMLogisticRegression(mechanism=mech, **common, **kw)
                    acc["FM"].append(fm.fit(Xtr, ytr).score(Xte, yte))
                problem = public_problem(len(tr), task.d, 2, eps, **kw)
                rows.append(
                    {
                        "task": task.name,
                        "n": len(tr),
                        "p": problem.n_coef,
                        "R": problem.row_norm,
                        "eps": eps,
                        "mode": mode,
                        "delta": delta,
                        "lam_s": lam_s,
                        "auto_lam": auto_lam,
                        "acc": {str(k): v for k, v in acc.items()},
                    }
                )
        print(f"  {task.name}: {time.time() - t0:.0f} s", file=sys.stderr)
    return rows


if __name__ == "__main__":
    family = sys.argv[1] if len(sys.argv) > 1 else fam.TUNING
    n_seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    sizes = [int(s) if s != "full" else None for s in sys.argv[3:]] or [None]
    rows = sweep(family, n_seeds, sizes=sizes)
    out = Path("benchmarks/results")
    out.mkdir(parents=True, exist_ok=True)
    tag = "_".join(str(s or "full") for s in sizes)
    (out / f"ridge_sweep_{family}_{tag}.json").write_text(json.dumps(rows))
