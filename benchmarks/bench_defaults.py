"""The automatic choices judged on the tuning and the held-out evaluation family.

Issue 34: a default whose constants were read off a grid of tasks must be
judged on tasks that played no part in choosing them. The families are those
of ``_task_families.py`` (TUNING: the tasks that set the constants;
EVALUATION: held-out tasks), side by side.

Binary tasks, epsilon in {0.5, 1, 2, 5}, pure epsilon and (epsilon, delta)
with ``delta = _common.delta_for(n_train)``; test accuracy of

- **default**: ``PrivateLogisticRegression()`` (its ``method="auto"`` choice
  is recorded in the ``chose`` column);
- **FM**: ``FMLogisticRegression`` (Laplace when pure, Gaussian otherwise);
- **OP rule**: ``OPLogisticRegression(alpha="auto")``, the ridge rule;
- **OP smallest**: ``OPLogisticRegression`` with the smallest admissible ridge
  (:func:`smallest_admissible_alpha`: the ridge whose Jacobian term takes half
  of epsilon, the split of Chaudhuri, Monteleoni & Sarwate 2011 and Kifer,
  Smith & Thakurta 2012 with the exact ``log(1 + R^2 / (4 lambda))`` of
  Redberg, Koskela & Wang 2023; the smaller ridges that remain feasible spend
  the rest of the budget on the Jacobian and their noise grows without bound).

Regression tasks, the same epsilons and modes (Laplace when pure, Gaussian
otherwise): test MSE of ``FMLinearRegression`` with each
``postprocessing`` option ("average", "eb", "ridge", "trim", "none"); the default is the
estimator's own default (marked ``*``). The non-private train-mean
predictor's MSE is given for scale.

Every method gets the task's declared domain (``_task_families.domain_kwargs``)
and declared classes. 70/30 splits (stratified for binary tasks), one per
seed, the same split and noise seed for every method; reproducible noise is
switched on explicitly (``skdp.config_context(reproducible_noise=True)``), so a
run is repeatable; seeds 0 .. n_seeds - 1. Means with standard errors over
seeds; the verdict compares the default with the best method of the cell by
the paired difference (same split and seed): "ok" if the default is the best
or the best's mean advantage is at most 2 paired standard errors, "LOSES"
otherwise.

``--family fresh`` runs the tasks added after every default was chosen
(``_forest_fresh_tasks.py``, binary; ``_fresh_regression_tasks.py``,
regression): a third check that no choice saw.

Quick mode: 3 seeds, tuning tasks' training rows capped at 20,000 (Fertility,
Adult, the large regressions). Full mode: 10 seeds, no cap. ::

    nice python benchmarks/bench_defaults.py            # quick, a few minutes
    nice python benchmarks/bench_defaults.py --full     # 10 seeds
"""

import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _task_families as fam  # noqa: E402
from _common import delta_for, machine_description, write_result  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import skdp  # noqa: E402
from skdp.linear_model import (  # noqa: E402
    FMLinearRegression,
    FMLogisticRegression,
    OPLogisticRegression,
    PrivateLogisticRegression,
)
from skdp.linear_model._private_logistic import public_problem  # noqa: E402

EPS = [0.5, 1.0, 2.0, 5.0]
MODES = ["pure", "(eps, delta)"]
BINARY_METHODS = ["default", "FM", "OP rule", "OP smallest"]
POSTPROCESSING = ["average", "eb", "ridge", "trim", "none"]
QUICK_MAX_TRAIN = 20_000
TEST_CAP = 20_000


def smallest_admissible_alpha(task, n_train, epsilon):
    """The ridge whose Jacobian term is ``epsilon / 2`` (public quantities).

    ``eps_J = log(1 + R^2 / (4 lambda)) = epsilon / 2`` (binary), ``R`` the
    declared domain's row-norm bound with the intercept column, as OP computes
    it; the same in both modes (for (epsilon, delta) the noise is then
    calibrated on the exact profile with the rest).
    """
    kw = fam.domain_kwargs(task)
    problem = public_problem(n_train, task.d, 2, epsilon, **kw)
    return problem.lambda_for_jacobian(epsilon / 2.0)


def _split(task, seed, cap, stratify):
    idx = np.arange(len(task.y))
    tr, te = train_test_split(
        idx,
        test_size=0.3,
        random_state=seed,
        stratify=task.y if stratify else None,
    )
    if cap is not None:
        tr = tr[:cap]
    return tr, te[:TEST_CAP]


def binary_cell(task, Xtr, ytr, Xte, yte, eps, delta, seed):
    """Accuracy of each binary method, and the default's choice."""
    kw = fam.domain_kwargs(task)
    common = dict(epsilon=eps, delta=delta, classes=[0, 1], random_state=seed, **kw)
    out = {}
    default = PrivateLogisticRegression(**common).fit(Xtr, ytr)
    out["default"] = default.score(Xte, yte)
    chose = default.method_
    if chose == "fm":
        out["FM"] = out["default"]
    else:
        mech = "gaussian" if delta > 0 else "laplace"
        out["FM"] = (
            FMLogisticRegression(mechanism=mech, **common).fit(Xtr, ytr).score(Xte, yte)
        )
    if chose == "op":
        out["OP rule"] = out["default"]
    else:
        out["OP rule"] = OPLogisticRegression(**common).fit(Xtr, ytr).score(Xte, yte)
    alpha = smallest_admissible_alpha(task, len(ytr), eps)
    op = OPLogisticRegression(alpha=alpha, **common).fit(Xtr, ytr)
    out["OP smallest"] = op.score(Xte, yte)
    return out, chose


def regression_cell(task, Xtr, ytr, Xte, yte, eps, delta, seed):
    """Test MSE of each post-processing option (one release, four solves)."""
    kw = fam.domain_kwargs(task, regression=True)
    mech = "gaussian" if delta > 0 else "laplace"
    out = {}
    for post in POSTPROCESSING:
        reg = FMLinearRegression(
            epsilon=eps,
            delta=delta,
            mechanism=mech,
            postprocessing=post,
            random_state=seed,
            **kw,
        ).fit(Xtr, ytr)
        out[post] = float(np.mean((reg.predict(Xte) - yte) ** 2))
    return out


def run_task(task, family, n_seeds, cap):
    binary = task.kind == "binary"
    splits = [_split(task, s, cap, binary) for s in range(n_seeds)]
    rows = []
    for eps in EPS:
        for mode in MODES:
            per, choices, extra = [], [], []
            for seed, (tr, te) in enumerate(splits):
                Xtr, ytr, Xte, yte = task.X[tr], task.y[tr], task.X[te], task.y[te]
                delta = 0.0 if mode == "pure" else delta_for(len(tr))
                if binary:
                    scores, chose = binary_cell(
                        task, Xtr, ytr, Xte, yte, eps, delta, seed
                    )
                    choices.append(chose)
                    extra.append(max(np.mean(yte), 1 - np.mean(yte)))
                else:
                    scores = regression_cell(task, Xtr, ytr, Xte, yte, eps, delta, seed)
                    extra.append(float(np.mean((yte - ytr.mean()) ** 2)))
                per.append(scores)
            rows.append(
                {
                    "family": family,
                    "task": task.name,
                    "kind": task.kind,
                    "n_train": int(len(splits[0][0])),
                    "d": int(task.d),
                    "eps": eps,
                    "mode": mode,
                    "scores": {k: [p[k] for p in per] for k in per[0]},
                    "choices": choices,
                    "reference": float(np.mean(extra)),
                }
            )
    return rows


def _default_key(kind):
    if kind == "binary":
        return "default"
    return FMLinearRegression().postprocessing


def verdict(row):
    """(best method, default's paired gap to it, its s.e., ok?) for one cell.

    Accuracy: higher is better; MSE: lower. The gap is the best's mean
    advantage over the default, with the paired standard error over seeds.
    """
    higher = row["kind"] == "binary"
    scores = {k: np.asarray(v, float) for k, v in row["scores"].items()}
    means = {k: v.mean() for k, v in scores.items()}
    best = (max if higher else min)(means, key=means.get)
    dkey = _default_key(row["kind"])
    diff = scores[best] - scores[dkey] if higher else scores[dkey] - scores[best]
    gap = float(diff.mean())
    se = float(diff.std(ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else 0.0
    ok = gap <= 2.0 * se + 1e-12
    return best, gap, se, ok


def _fmt(values, higher):
    v = np.asarray(values, float)
    se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else float("nan")
    if higher:
        return f"{v.mean():.3f} ({se:.3f})"
    return f"{v.mean():.4g} ({se:.2g})"


def table(rows, kind):
    methods = BINARY_METHODS if kind == "binary" else POSTPROCESSING
    dkey = _default_key(kind)
    higher = kind == "binary"
    head = ["family", "task", "n", "eps", "mode"]
    head += [m + ("*" if m == dkey and not higher else "") for m in methods]
    head += (["chose", "majority"] if higher else ["mean pred."]) + [
        "best",
        "gap (s.e.)",
        "",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r["kind"] != kind:
            continue
        best, gap, se, ok = verdict(r)
        cells = [r["family"], r["task"], str(r["n_train"]), f"{r['eps']:g}", r["mode"]]
        cells += [_fmt(r["scores"][m], higher) for m in methods]
        if higher:
            ch = r["choices"]
            cells.append("/".join(sorted(set(ch))))
            cells.append(f"{r['reference']:.3f}")
        else:
            cells.append(f"{r['reference']:.4g}")
        cells += [best, f"{gap:.3g} ({se:.2g})", "ok" if ok else "**LOSES**"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows):
    out = [
        "| kind | family | cells | default ok | default first |",
        "|---|---|---|---|---|",
    ]
    for kind in ("binary", "regression"):
        for family in (fam.TUNING, fam.EVALUATION, FRESH):
            sel = [r for r in rows if r["kind"] == kind and r["family"] == family]
            if not sel:
                continue
            v = [verdict(r) for r in sel]
            dkey = _default_key(kind)
            first = sum(b == dkey or g <= 0 for b, g, _, _ in v)
            ok = sum(o for *_, o in v)
            out.append(f"| {kind} | {family} | {len(sel)} | {ok} | {first} |")
    return "\n".join(out)


def losses(rows):
    out = []
    for r in rows:
        best, gap, se, ok = verdict(r)
        if not ok:
            out.append(
                f"- {r['family']} / {r['task']} (n={r['n_train']}) eps {r['eps']:g} "
                f"{r['mode']}: best {best}, ahead by {gap:.3g} (paired s.e. {se:.2g})"
            )
    return "\n".join(out) or "(none)"


FRESH = "fresh"


def _fresh_tasks(kind):
    """The tasks added after every default was chosen (no choice saw them)."""
    import _forest_fresh_tasks
    import _fresh_regression_tasks

    makers = {
        "binary": _forest_fresh_tasks.FRESH_BINARY,
        "regression": _fresh_regression_tasks.FRESH_REGRESSION,
    }[kind]
    return [make() for make in makers]


def _run(kinds, families, n_seeds, cap, quick):
    rows = []
    for kind in kinds:
        fams = fam.families(kind, synthetic_n=6000 if quick else 40_000)
        if FRESH in families:
            fams[FRESH] = _fresh_tasks(kind)
        for family in families:
            for task in fams[family]:
                t0 = time.time()
                rows += run_task(
                    task, family, n_seeds, cap if family == fam.TUNING else None
                )
                print(
                    f"  {family} {task.name}: {time.time() - t0:.0f} s", file=sys.stderr
                )
    return rows


def main(
    quick=True,
    out_dir="benchmarks/results",
    kinds=("binary", "regression"),
    families=(fam.TUNING, fam.EVALUATION),
    n_seeds=None,
    name=None,
):
    """Judge the defaults on both families (see the module docstring).

    Seeded noise (``skdp.config_context(reproducible_noise=True)``) and
    silenced warnings hold inside this call only (``benchmarks/run.py`` runs
    other benchmarks in the same process).
    """
    n_seeds = n_seeds or (3 if quick else 10)
    cap = QUICK_MAX_TRAIN if quick else None
    name = name or f"defaults_{'quick' if quick else 'full'}"
    start = time.time()
    with skdp.config_context(reproducible_noise=True), warnings.catch_warnings():
        # PrivacyLeakWarning etc.: every domain here is declared
        warnings.simplefilter("ignore")
        rows = _run(kinds, families, n_seeds, cap, quick)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / f"{name}.json").write_text(json.dumps(rows))
    mode = "quick" if quick else "full"
    flags = "" if quick else " --full"
    if tuple(kinds) != ("binary", "regression"):
        flags += "".join(f" --kind {k}" for k in kinds)
    if tuple(families) != (fam.TUNING, fam.EVALUATION):
        flags += "".join(f" --family {f}" for f in families)
    if name != f"defaults_{mode}":
        flags += f" --name {name}"
    plural = "family" if len(families) == 1 else "families"
    text = [
        f"# Defaults on the {' and '.join(families)} {plural} ({mode})",
        "",
        f"`nice python benchmarks/bench_defaults.py{flags}`; "
        f"{n_seeds} seeds (70/30 splits, seeds 0..{n_seeds - 1}, reproducible "
        f"noise switched on explicitly); {machine_description()}; "
        f"{time.time() - start:.0f} s. Binary: test accuracy; regression: test MSE "
        "(mean (s.e.) over seeds). `gap`: the best method's mean advantage over the "
        "default, paired s.e.; ok = within 2 s.e. (or first).",
        "",
        summary(rows),
        "",
        "## Cells where the default is not first or within 2 s.e.",
        "",
        losses(rows),
    ]
    for kind in kinds:
        text += ["", f"## {kind}", "", table(rows, kind)]
    write_result(out_dir, name, "\n".join(text))
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="10 seeds, no cap")
    parser.add_argument("--out-dir", default="benchmarks/results")
    parser.add_argument("--kind", choices=["binary", "regression"], default=None)
    parser.add_argument(
        "--family", choices=[fam.TUNING, fam.EVALUATION, FRESH], default=None
    )
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--name", default=None)
    args = parser.parse_args()
    main(
        quick=not args.full,
        out_dir=args.out_dir,
        kinds=(args.kind,) if args.kind else ("binary", "regression"),
        families=(args.family,) if args.family else (fam.TUNING, fam.EVALUATION),
        n_seeds=args.seeds,
        name=args.name,
    )
