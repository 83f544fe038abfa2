"""Issue 34: weight FMLinearRegression's "average" by each member's estimated risk?

"average" (the default) is the plain mean of the "eb", "ridge" and "trim"
solutions of one release. Each member's training risk can be estimated from
the release alone (the Stein-type estimate of ``_postprocessing_choice.py``,
gamma = 1), with a standard deviation ``T`` read off the noise
(``sqrt(sigma_b^2 ||w||^2 + 2 sigma_A^2 ||w||^4)``, the largest over the
members). Candidates, all post-processing of the same release:

- **average**: the plain mean (the default);
- **soft1**, **soft2**: weights ``exp(-(risk - min risk) / (c T))``, c = 1, 2;
- **keep2**: the plain mean of the members within ``2 T`` of the smallest risk;
- **pick**: the member of smallest estimated risk.

No constant is fitted beyond c. Same splits, seeds, epsilons, modes and
domains as ``bench_defaults.py --full`` (10 seeds, 70/30, reproducible noise);
a candidate is "ok" in a cell if it is the best of {eb, ridge, trim, none,
average, itself} or within 2 paired s.e. of it. Both families are printed; the
TUNING family would decide. ::

    nice python benchmarks/_soft_average.py    # about 1 minute
"""

import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _postprocessing_choice as pc  # noqa: E402
import _task_families as fam  # noqa: E402
from _common import delta_for, machine_description, write_result  # noqa: E402
from bench_defaults import EPS, MODES, _split  # noqa: E402

import skdp  # noqa: E402
from skdp._fm.solve import to_user_model  # noqa: E402

MEMBERS = ["eb", "ridge", "trim"]
OPTIONS = [*MEMBERS, "none", "average"]
CANDIDATES = ["average", "soft1", "soft2", "keep2", "pick"]
N_SEEDS = 10


def run_cell(task, tr, te, eps, delta, seed):
    """Test MSE of every option and candidate on one release."""
    kw = fam.domain_kwargs(task, regression=True)
    mech = "gaussian" if delta > 0 else "laplace"
    Xte, yte = task.X[te], task.y[te]
    reg = pc._Capture(
        epsilon=eps, delta=delta, mechanism=mech, random_state=seed, **kw
    ).fit(task.X[tr], task.y[tr])
    noisy, domain, n = reg._captured
    A, b = 0.5 * (noisy.A + noisy.A.T), noisy.b
    sA, sb = noisy.noise_std, noisy.noise_std_b
    lo, hi = reg.bounds_y_

    def mse(w):
        coef, intercept = to_user_model(w, domain)
        return float(np.mean((np.clip(Xte @ coef + intercept, lo, hi) - yte) ** 2))

    ws = {o: pc.solve_w(A, b, domain, sA, sb, n, o) for o in [*MEMBERS, "none"]}
    risk, sd = [], []
    for o in MEMBERS:
        H = pc.jacobian_H(A, b, domain, sA, sb, n, o, ws[o])
        plug, cb, ca = pc.risk_parts(A, b, ws[o], H, sA, sb, domain.fit_intercept)
        risk.append(plug + cb + ca if math.isfinite(plug + cb + ca) else math.inf)
        ww = float(ws[o] @ ws[o])
        sd.append(math.sqrt(sb**2 * ww + 2.0 * sA**2 * ww**2))
    risk, T = np.array(risk), max(sd)
    members = np.array([ws[o] for o in MEMBERS])
    out = {o: mse(ws[o]) for o in [*MEMBERS, "none"]}
    out["average"] = mse(members.mean(axis=0))
    for name, c in (("soft1", 1.0), ("soft2", 2.0)):
        weight = np.exp(-(risk - risk.min()) / (c * T))
        out[name] = mse(weight @ members / weight.sum())
    out["keep2"] = mse(members[risk - risk.min() <= 2.0 * T].mean(axis=0))
    out["pick"] = out[MEMBERS[int(np.argmin(risk))]]
    return out


def collect():
    rows = []
    for family, tasks in fam.families("regression").items():
        for task in tasks:
            splits = [_split(task, s, None, False) for s in range(N_SEEDS)]
            for eps in EPS:
                for mode in MODES:
                    per = []
                    for seed, (tr, te) in enumerate(splits):
                        delta = 0.0 if mode == "pure" else delta_for(len(tr))
                        per.append(run_cell(task, tr, te, eps, delta, seed))
                    rows.append(
                        {"family": family, "task": task.name, "eps": eps, "mode": mode}
                        | {k: np.array([s[k] for s in per]) for k in per[0]}
                    )
    return rows


def judge(row, cand):
    """(ok, log of the mean MSE over the best option's)."""
    best = min({*OPTIONS, cand}, key=lambda o: row[o].mean())
    diff = row[cand] - row[best]
    se = diff.std(ddof=1) / math.sqrt(diff.size)
    ok = diff.mean() <= 2.0 * se + 1e-12
    return bool(ok), math.log(row[cand].mean() / row[best].mean())


def main(out="benchmarks/reference_results/full"):
    start = time.time()
    with skdp.config_context(reproducible_noise=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = collect()
    lines = [
        "# Weighting the averaged FM regression by estimated risk (issue 34)",
        "",
        f"`nice python benchmarks/_soft_average.py`; {N_SEEDS} seeds; "
        f"{machine_description()}; {time.time() - start:.0f} s. Cells where the "
        "candidate is the best option or within 2 paired s.e. of it, and the "
        "mean log ratio of its MSE to the best option's (lower is better).",
        "",
        "| candidate | tuning ok | tuning log ratio | evaluation ok "
        "| evaluation log ratio |",
        "|---|---|---|---|---|",
    ]
    for cand in CANDIDATES:
        cells = []
        for family in (fam.TUNING, fam.EVALUATION):
            verdicts = [judge(r, cand) for r in rows if r["family"] == family]
            ok = sum(v[0] for v in verdicts)
            ratio = np.mean([v[1] for v in verdicts])
            cells += [f"{ok}/{len(verdicts)}", f"{ratio:.4f}"]
        lines.append(f"| {cand} | " + " | ".join(cells) + " |")
    write_result(Path(out), "soft_average", "\n".join(lines))


if __name__ == "__main__":
    main()
