"""Re-derive the automatic choices on the TUNING family only (issue 34).

Reads measurements of the tuning family and scores candidate rules:

1. OP ridge rule: ``W = W_0 max(1, n eps / (K k))^gamma`` into the risk proxy
   (:func:`~skdp.linear_model._op_calibration.choose_lambda`), for several
   ``W_0`` (the current ``(4 / R)(p / 30)``, ``4 / R``, ``2 / R``, ``8 / R``,
   ``4 sqrt(p) / R``), knees ``K`` and rates ``gamma``; the accuracy of each
   candidate ridge is interpolated (in ``log lambda``) from
   ``_ridge_sweep.py``'s grid of multiples of the smallest admissible ridge;
   regret = best ridge of the grid minus the candidate's, summed over cells.
2. ``PrivateLogisticRegression``'s threshold on OP's noise level ``rho``:
   accuracy lost against the better of FM and OP (rule), summed over cells,
   for thresholds 0.1 .. inf, pure and (eps, delta) separately.
3. ``FMLinearRegression``'s default ``postprocessing``: for each constant
   option and two mechanism-dependent ones, the cells where it is within 2
   paired s.e. of the best option and the summed log MSE ratio to the best.

Inputs (run first, all on the tuning family)::

    nice python benchmarks/_ridge_sweep.py tuning 4 full
    nice python benchmarks/_ridge_sweep.py tuning 6 250 1000
    nice python benchmarks/bench_defaults.py --kind regression --family tuning \\
        --seeds 8 --name reg_tune_8
    nice python benchmarks/_rederive_rules.py
"""

import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _task_families as fam  # noqa: E402

from skdp.linear_model._op_calibration import OPProblem, choose_lambda  # noqa: E402
from skdp.linear_model._private_logistic import noise_level  # noqa: E402

RESULTS = Path("benchmarks/results")
SWEEPS = ["ridge_sweep_tuning_full.json", "ridge_sweep_tuning_250_1000.json"]
MULTIPLES = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096], float)


def _sweep_rows():
    rows = []
    for name in SWEEPS:
        rows += json.loads((RESULTS / name).read_text())
    return rows


def _acc_at(row, multiple):
    acc = [np.mean(row["acc"][str(int(m))]) for m in MULTIPLES]
    return float(np.interp(math.log(multiple), np.log(MULTIPLES), acc))


def _best_ridge(row):
    return max(np.mean(row["acc"][str(int(m))]) for m in MULTIPLES)


def ridge_candidates(rows):
    w0s = {
        "(4/R)(p/30) [current]": lambda r: 4 / r["R"] * r["p"] / 30,
        "4/R": lambda r: 4 / r["R"],
        "2/R": lambda r: 2 / r["R"],
        "8/R": lambda r: 8 / r["R"],
        "4 sqrt(p)/R": lambda r: 4 * math.sqrt(r["p"]) / r["R"],
    }
    out = []
    for wname, w0 in w0s.items():
        for knee in (10, 30, 100, 300, 1000, math.inf):
            for gamma in (0.5, 1.0):
                if math.isinf(knee) and gamma == 0.5:
                    continue
                regret = []
                for r in rows:
                    growth = max(1.0, r["n"] * r["eps"] / (knee * r["p"])) ** gamma
                    problem = OPProblem(r["n"], r["p"], 2, r["R"], w0(r) * growth)
                    lam = choose_lambda(problem, r["eps"], r["delta"])
                    regret.append(_best_ridge(r) - _acc_at(r, lam / r["lam_s"]))
                out.append((sum(regret), max(regret), wname, knee, gamma))
    for m in (1, 4, 8, 16, 32):  # the smallest admissible ridge and multiples
        regret = [_best_ridge(r) - _acc_at(r, m) for r in rows]
        name = "smallest admissible" if m == 1 else f"{m} x smallest admissible"
        out.append((sum(regret), max(regret), f"(none: {name})", math.nan, math.nan))
    out.sort()
    lines = [
        "| W_0 | knee K | gamma | summed regret | worst cell |",
        "|---|---|---|---|---|",
    ]
    for total, worst, wname, knee, gamma in out:
        lines.append(f"| {wname} | {knee:g} | {gamma} | {total:.3f} | {worst:.3f} |")
    return "\n".join(lines)


def threshold_losses(rows):
    tasks = {t.name: t for t in fam.families("binary", synthetic_n=6000)[fam.TUNING]}
    cells = []
    for r in rows:
        t = tasks[r["task"]]
        rho = noise_level(r["n"], t.d, 2, r["eps"], r["delta"], **fam.domain_kwargs(t))
        diff = np.mean(r["acc"]["FM"]) - np.mean(r["acc"]["auto"])
        cells.append((rho, r["mode"], diff))
    rho = np.array([c[0] for c in cells])
    diff = np.array([c[2] for c in cells])
    mode = np.array([c[1] for c in cells])
    lines = [
        f"largest rho on the tuning family: {rho.max():.3g}",
        "",
        "| threshold | loss, all | pure | (eps, delta) |",
        "|---|---|---|---|",
    ]
    for t in (0.1, 0.3, 1, 2, 5, 10, 20, 40, 100, math.inf):
        lost = np.maximum(diff, 0) - np.where(rho > t, diff, 0.0)
        lines.append(
            f"| {t:g} | {lost.sum():.3f} | {lost[mode == 'pure'].sum():.3f} "
            f"| {lost[mode != 'pure'].sum():.3f} |"
        )
    return "\n".join(lines)


def postprocessing_candidates(rows):
    cands = {o: (lambda r, o=o: o) for o in ("eb", "ridge", "trim")}
    cands["eb (Gaussian), ridge (Laplace)"] = lambda r: (
        "eb" if r["mode"] != "pure" else "ridge"
    )
    cands["trim (Gaussian), ridge (Laplace)"] = lambda r: (
        "trim" if r["mode"] != "pure" else "ridge"
    )
    lines = [
        "| default | cells within 2 s.e. | of which pure | sum log(MSE / best) |",
        "|---|---|---|---|",
    ]
    for name, pick in cands.items():
        ok = ok_pure = 0
        logr = 0.0
        for r in rows:
            s = {k: np.asarray(v, float) for k, v in r["scores"].items()}
            means = {k: v.mean() for k, v in s.items()}
            best = min(means, key=means.get)
            c = pick(r)
            d = s[c] - s[best]
            good = d.mean() <= 2 * d.std(ddof=1) / math.sqrt(d.size) + 1e-12
            ok += good
            ok_pure += good and r["mode"] == "pure"
            logr += math.log(means[c] / means[best])
        lines.append(f"| {name} | {ok}/{len(rows)} | {ok_pure} | {logr:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sweep = _sweep_rows()
    reg = json.loads((RESULTS / "reg_tune_8.json").read_text())
    text = [
        "# Rules re-derived on the tuning family",
        "",
        f"## OP ridge rule ({len(sweep)} cells)",
        "",
        ridge_candidates(sweep),
        "",
        "## OP/FM threshold on rho",
        "",
        threshold_losses(sweep),
        "",
        f"## FMLinearRegression postprocessing ({len(reg)} cells)",
        "",
        postprocessing_candidates(reg),
    ]
    out = "\n".join(text)
    (RESULTS / "rederive_rules.md").write_text(out + "\n")
    print(out)
