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
import sys, time, warnings, json
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import numpy as np
import _task_families as fam
from _common import delta_for
import bench_defaults as bd
import skdp
from skdp.linear_model import OPLogisticRegression, FMLogisticRegression
warnings.simplefilter("ignore")
skdp.set_config(reproducible_noise=True)
if sys.argv[1] == "--summary":
    for path in sys.argv[2:]:
        print(f"\n### {path.rsplit('/', 1)[-1]}\n")
        print("| task | n | eps | mode | rule / smallest | rule | best multiple | its accuracy | FM |")
        print("|---|---|---|---|---|---|---|---|---|")
        for line in open(path):
            r = json.loads(line)
            s = {k: float(np.mean(v)) for k, v in r["scores"].items()}
            mults = {k: v for k, v in s.items() if k.startswith("x")}
            best = max(mults, key=mults.get)
            print(f"| {r['task']} | {r['n']} | {r['eps']:g} | {r['mode']} | {s['ratio']:.0f} "
                  f"| {s['rule']:.3f} | {best} | {mults[best]:.3f} | {s['FM']:.3f} |")
    sys.exit(0)
family = sys.argv[1]; nseeds = int(sys.argv[2]); cap = int(sys.argv[3])
sub = [int(s) for s in sys.argv[4].split(",")] if len(sys.argv) > 4 else [None]
fams = fam.families("binary", synthetic_n=6000)
MULTS = [1, 2, 4, 8, 16, 32, 64, 128, 512]
out = open(f"benchmarks/results/ridge_signal_{family}_{sys.argv[4] if len(sys.argv)>4 else 'all'}.jsonl", "w")
for task in fams[family]:
  for ncap in sub:
    splits = [bd._split(task, s, ncap or cap, True) for s in range(nseeds)]
    for eps in [0.5, 1, 2, 5]:
      for mode in ["pure", "delta"]:
        res = {}
        for seed, (tr, te) in enumerate(splits):
            Xtr, ytr, Xte, yte = task.X[tr], task.y[tr], task.X[te], task.y[te]
            delta = delta_for(len(tr)) if mode == "delta" else 0.0
            kw = fam.domain_kwargs(task)
            c = dict(classes=[0,1], random_state=seed, epsilon=eps, delta=delta, **kw)
            a0 = bd.smallest_admissible_alpha(task, len(tr), eps)
            r = {}
            m = OPLogisticRegression(**c).fit(Xtr, ytr); r["rule"] = m.score(Xte, yte); r["ratio"] = m.alpha_ / a0
            for mult in MULTS:
                r[f"x{mult}"] = OPLogisticRegression(alpha=a0*mult, **c).fit(Xtr, ytr).score(Xte, yte)
            if mode == "delta":
                c2 = dict(c, delta=0.0)
                r["rule_pure"] = OPLogisticRegression(**c2).fit(Xtr, ytr).score(Xte, yte)
            mech = "gaussian" if delta > 0 else "laplace"
            r["FM"] = FMLogisticRegression(mechanism=mech, **c).fit(Xtr, ytr).score(Xte, yte)
            for k, v in r.items(): res.setdefault(k, []).append(v)
        row = dict(task=task.name, d=int(task.d), n=len(splits[0][0]), eps=eps, mode=mode, scores=res)
        out.write(json.dumps(row) + "\n"); out.flush()
        print(task.name[:22], row["n"], eps, mode, " ".join(f"{k}={np.mean(v):.3f}" for k, v in res.items()), flush=True)
