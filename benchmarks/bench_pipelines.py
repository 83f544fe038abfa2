"""Private pipelines on real data: scaler -> PCA -> logistic regression, and PCA alone.

The binary tasks of ``_real_tasks.py`` (HealthInsurance, Fertility, HMDA,
Adult), every feature declared in [0, 1] from its documentation (the task's
``sources``), total epsilon in {0.5, 1, 2, 5}:

- **skdp pipeline**: ``make_private_pipeline(PrivateStandardScaler(bounds_X=(0,
  1)), PrivatePCA(5), PrivateLogisticRegression())``: only the scaler has
  declared ranges; the PCA and the classifier get their domain from the step
  before (the hand-off, post-processing). Pure: Laplace scaler, Laplace PCA,
  the classifier's pure-epsilon method; (eps, delta): Gaussian steps with delta
  = ``_common.delta_for(n)`` split like epsilon.
- **diffprivlib pipeline** (0.6.6, when it imports: scikit-learn < 1.7; run
  this file in such an environment for its columns): ``StandardScaler(bounds=
  (0, 1))``, ``PCA(5, centered=True, data_norm=R)``, ``LogisticRegression(
  data_norm=R)``, pure epsilon in both rows. ``R`` is the row-norm bound of
  the scaled box computed from diffprivlib's own released ``mean_`` and
  ``scale_`` (post-processing): the same hand-off skdp makes, so both get the
  same declared information. Each fit runs in a child process with a time
  limit: its PCA's Bingham sampler (rejection sampling) sometimes runs for
  minutes; a fit past the limit is counted and left out (its seed is dropped
  from that cell's paired comparison).
- **skdp classifier alone**: ``PrivateLogisticRegression(bounds_X=(0, 1))`` with
  the whole budget, no scaler and no PCA;
- **non-private**: scikit-learn's pipeline (StandardScaler, PCA(5),
  LogisticRegression) and its LogisticRegression alone.

Budget split (both pipelines): epsilon / 3 to each step, as diffprivlib's own
pipeline example (``notebooks/pipeline.ipynb``) splits it; see ``SPLIT``.

**PCA alone**: ``PrivatePCA(5, bounds_X=(0, 1))`` (pure and (eps, delta)),
diffprivlib's ``PCA(5, bounds=(0, 1), data_norm=row bound, centered=False)``
(half of epsilon to its mean, half to the components), scikit-learn's PCA(5);
score: the variance of the test rows captured by the 5 components (about each
method's own mean) over that captured by scikit-learn's.

Stratified 70/30 splits, one per seed, the same split and seed for every
method. Test accuracy, mean (s.e.) over seeds; skdp vs diffprivlib as the
paired difference over the seeds where both fitted, with its s.e.; a cell is
"first" (skdp ahead), "tied" (behind by at most 2 s.e.) or "behind".
"""

import math
import multiprocessing
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _real_tasks  # noqa: E402
from _common import (  # noqa: E402
    cli,
    delta_for,
    machine_description,
    markdown_table,
    paired_difference,
    progress,
    pyplot,
    write_result,
)
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skdp.decomposition import PrivatePCA  # noqa: E402
from skdp.linear_model import PrivateLogisticRegression  # noqa: E402
from skdp.pipeline import make_private_pipeline  # noqa: E402
from skdp.preprocessing import PrivateStandardScaler  # noqa: E402


def _diffprivlib():
    """diffprivlib's version and models module, or (None, the import error)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import diffprivlib
            import diffprivlib.models as models
    except Exception as exc:  # ImportError, or its import-time sklearn breakage
        return None, None, f"{type(exc).__name__}: {str(exc)[:120]}"
    return diffprivlib.__version__, models, ""


DPL_VERSION, DPL, DPL_ERROR = _diffprivlib()

EPS_FULL = [0.5, 1.0, 2.0, 5.0]
EPS_QUICK = [1.0, 5.0]
N_COMPONENTS = 5
# scaler, PCA, classifier: diffprivlib's example split (epsilon / 3 each)
SPLIT = (1 / 3, 1 / 3, 1 / 3)
QUICK_MAX_TRAIN = 3000
MODES = ("pure", "(eps, delta)")
# seconds a diffprivlib fit may take before it is stopped (its Bingham sampler)
DPL_LIMIT = {True: 60.0, False: 120.0}
PIPE_COLUMNS = [
    "skdp pipeline",
    "diffprivlib pipeline",
    "skdp classifier alone",
    "non-private pipeline",
    "non-private LR",
]
PCA_COLUMNS = ["skdp PCA", "diffprivlib PCA"]


def _split(task, seed, quick):
    Xtr, Xte, ytr, yte = train_test_split(
        task.X, task.y, test_size=0.3, random_state=seed, stratify=task.y
    )
    if quick and Xtr.shape[0] > QUICK_MAX_TRAIN:
        Xtr, ytr = Xtr[:QUICK_MAX_TRAIN], ytr[:QUICK_MAX_TRAIN]
        Xte, yte = Xte[: QUICK_MAX_TRAIN // 2], yte[: QUICK_MAX_TRAIN // 2]
    return Xtr, Xte, ytr, yte


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


# ------------------------------------------------------------------ skdp
def skdp_pipeline(eps, delta, classes, seed, split=SPLIT):
    """The skdp pipeline at total ``(eps, delta)``, split by ``split``."""
    es, ep, el = (eps * s for s in split)
    ds, dp, dl = (delta * s for s in split)
    return make_private_pipeline(
        PrivateStandardScaler(
            epsilon=es, delta=ds, bounds_X=(0.0, 1.0), random_state=seed
        ),
        PrivatePCA(N_COMPONENTS, epsilon=ep, delta=dp, random_state=seed + 1),
        PrivateLogisticRegression(
            epsilon=el, delta=dl, classes=classes, random_state=seed + 2
        ),
    )


def _classifier_domain(task):
    kw = {"bounds_X": (0.0, 1.0)}
    if task.max_nonzero is not None:
        kw["max_nonzero"] = task.max_nonzero
    return kw


def _row_norm(task):
    return task.row_norm if task.row_norm is not None else math.sqrt(task.d)


def captured_variance(components, mean, Xte):
    """Variance of the test rows along ``components`` (about ``mean``)."""
    Z = (Xte - mean) @ np.asarray(components).T
    return float(np.sum(Z**2)) / Xte.shape[0]


# ------------------------------------------------------------ diffprivlib
def _dpl_pipeline(eps, seed, Xtr, ytr, Xte, yte):
    d = Xtr.shape[1]
    es, ep, el = (eps * s for s in SPLIT)
    scaler = DPL.StandardScaler(
        epsilon=es, bounds=(np.zeros(d), np.ones(d)), random_state=seed
    ).fit(Xtr)
    # the row-norm bound of the scaled box [0, 1]^d, from its own release
    reach = np.maximum(np.abs(0 - scaler.mean_), np.abs(1 - scaler.mean_))
    norm = float(np.linalg.norm(reach / scaler.scale_))
    Z = scaler.transform(Xtr)
    pca = DPL.PCA(
        N_COMPONENTS, epsilon=ep, data_norm=norm, centered=True, random_state=seed
    ).fit(Z)
    lr = DPL.LogisticRegression(epsilon=el, data_norm=norm, random_state=seed)
    lr.fit(pca.transform(Z), ytr)
    acc = float(lr.score(pca.transform(scaler.transform(Xte)), yte))
    return acc, norm


def _dpl_pca(eps, seed, Xtr, Xte, row_norm):
    d = Xtr.shape[1]
    pca = DPL.PCA(
        N_COMPONENTS,
        epsilon=eps,
        bounds=(np.zeros(d), np.ones(d)),
        data_norm=row_norm,
        centered=False,
        random_state=seed,
    ).fit(Xtr.copy())
    return captured_variance(pca.components_, pca.mean_, Xte)


def _child(conn, fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            conn.send(("ok", fn(*args)))
        except Exception as exc:  # reported, never hidden
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


def limited(fn, args, limit):
    """``fn(*args)`` in a forked child, ``(result, seconds)``; ``(None,
    seconds)`` if it ran past ``limit`` seconds (the child is killed)."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args), daemon=True)
    start = time.perf_counter()
    proc.start()
    child.close()
    ready = parent.poll(limit)
    seconds = time.perf_counter() - start
    if not ready:
        proc.kill()
        proc.join()
        return None, seconds
    status, value = parent.recv()
    proc.join()
    if status != "ok":
        raise RuntimeError(f"diffprivlib fit failed: {value}")
    return value, seconds


def dpl_lr_certified_epsilon(eps, q, C=1.0):
    """diffprivlib's binary LogisticRegression at ``epsilon=eps``, ``data_norm
    = q``: the epsilon its own (Chaudhuri, Monteleoni & Sarwate) analysis
    certifies with the curvature bound ``c q'^2`` in place of its ``c q'``
    (``mechanisms/vector.py``; ``c = 1/4``, ``alpha = 1 / C``, ``q' =
    sqrt(q^2 + 1)`` with its intercept column). Where its ``eps' = eps - 2
    log(1 + c q' / alpha) <= 0`` it adds the ridge ``c q' / (e^(eps/4) - 1)``
    and noise for ``eps / 2``: the Jacobian term is then ``2 log(1 + q'
    (e^(eps/4) - 1))``. Equal to ``eps`` for ``q' = 1``. (Binary: one model at
    the whole ``eps``, no one-vs-rest split.)"""
    q = math.sqrt(q * q + 1)
    c, alpha = 0.25, 1.0 / C
    eps_p = eps - 2 * math.log1p(c * q / alpha)
    if eps_p > 0:
        return eps_p + 2 * math.log1p(c * q * q / alpha)
    return eps / 2 + 2 * math.log1p(q * math.expm1(eps / 4))


# a diffprivlib cell whose first GIVE_UP fits were all stopped is not tried
# on the remaining seeds (its sampler does not finish there; hours otherwise)
GIVE_UP = 3


def _dpl_fit(extra, key, fn, args, limit):
    """One time-limited diffprivlib fit, counted in ``extra["dpl_fits"]``."""
    count = extra["dpl_fits"][key]
    if count["finished"] == 0 and count["stopped"] >= GIVE_UP:
        count["skipped"] += 1
        return None
    out, seconds = limited(fn, args, limit)
    extra["dpl_seconds"].append(seconds)
    count["stopped" if out is None else "finished"] += 1
    return out


# ------------------------------------------------------------------ runs
def run_task(task, eps_list, n_seeds, quick):
    """Per-seed scores: ``pipe[(eps, mode)][column]``, ``pca[(eps, mode)]``."""
    classes = np.unique(task.y)
    pipe = {(e, m): {c: [] for c in PIPE_COLUMNS} for e in eps_list for m in MODES}
    pca = {(e, m): {c: [] for c in PCA_COLUMNS} for e in eps_list for m in MODES}
    extra = {"dpl_norm": {e: [] for e in eps_list}, "dpl_seconds": []}
    # per (eps, 0 pipeline / 1 PCA): fits stopped, finished, skipped
    extra["dpl_fits"] = {
        (e, i): {"stopped": 0, "finished": 0, "skipped": 0}
        for e in eps_list
        for i in (0, 1)
    }
    cpu = {"skdp pipeline": [], "skdp PCA": []}
    n_train = None
    limit = DPL_LIMIT[quick]
    for seed in progress(range(n_seeds), task.name):
        Xtr, Xte, ytr, yte = _split(task, seed, quick)
        n_train = Xtr.shape[0]
        delta = delta_for(n_train)
        np_pipe = make_pipeline(
            StandardScaler(), PCA(N_COMPONENTS), LogisticRegression(max_iter=5000)
        ).fit(Xtr, ytr)
        np_lr = LogisticRegression(max_iter=5000).fit(Xtr, ytr)
        sk_pca = PCA(N_COMPONENTS).fit(Xtr)
        ceiling = captured_variance(sk_pca.components_, sk_pca.mean_, Xte)
        for eps in eps_list:
            dpl_acc = dpl_pca = None
            if DPL_VERSION:
                args = (eps, seed, Xtr, ytr, Xte, yte)
                out = _dpl_fit(extra, (eps, 0), _dpl_pipeline, args, limit)
                if out is not None:
                    dpl_acc, norm = out
                    extra["dpl_norm"][eps].append(norm)
                args = (eps, seed, Xtr, Xte, _row_norm(task))
                out = _dpl_fit(extra, (eps, 1), _dpl_pca, args, limit)
                if out is not None:
                    dpl_pca = out / ceiling
            for mode in MODES:
                dm = 0.0 if mode == "pure" else delta
                start = time.process_time()
                model = _quiet(skdp_pipeline(eps, dm, classes, seed).fit, Xtr, ytr)
                cpu["skdp pipeline"].append(time.process_time() - start)
                alone = PrivateLogisticRegression(
                    epsilon=eps,
                    delta=dm,
                    classes=classes,
                    random_state=seed + 3,
                    **_classifier_domain(task),
                )
                _quiet(alone.fit, Xtr, ytr)
                start = time.process_time()
                ours = PrivatePCA(
                    N_COMPONENTS,
                    epsilon=eps,
                    delta=dm,
                    bounds_X=(0.0, 1.0),
                    random_state=seed + 4,
                ).fit(Xtr)
                cpu["skdp PCA"].append(time.process_time() - start)
                cell = pipe[(eps, mode)]
                cell["skdp pipeline"].append(float(model.score(Xte, yte)))
                cell["diffprivlib pipeline"].append(dpl_acc)
                cell["skdp classifier alone"].append(float(alone.score(Xte, yte)))
                cell["non-private pipeline"].append(float(np_pipe.score(Xte, yte)))
                cell["non-private LR"].append(float(np_lr.score(Xte, yte)))
                captured = captured_variance(ours.components_, ours.mean_, Xte)
                pca[(eps, mode)]["skdp PCA"].append(captured / ceiling)
                pca[(eps, mode)]["diffprivlib PCA"].append(dpl_pca)
    return pipe, pca, extra, cpu, n_train


# ---------------------------------------------------------------- tables
def _finite(values):
    return [v for v in values if v is not None]


def _mean_se(values):
    values = _finite(values)
    if not values:
        return "n/a"
    a = np.asarray(values, float)
    se = a.std(ddof=1) / math.sqrt(a.size) if a.size > 1 else float("nan")
    return f"{a.mean():.4f} ({se:.4f})"


def compare(ours, theirs):
    """Paired skdp - diffprivlib over the seeds where both fitted:
    ``(mean, se, verdict, n_pairs)``; None if diffprivlib did not run."""
    pairs = [(a, b) for a, b in zip(ours, theirs) if a is not None and b is not None]
    if not pairs:
        return None
    a, b = (np.array(x, float) for x in zip(*pairs))
    mean, se = paired_difference(a, b)
    if mean >= 0:
        verdict = "first"
    elif np.isnan(se) or mean >= -2 * se:
        verdict = "tied (within 2 s.e.)"
    else:
        verdict = "behind"
    return mean, se, verdict, len(pairs)


def _n_fitted(values, n_seeds):
    k = len(_finite(values))
    return "" if k == n_seeds else f" [{k}/{n_seeds}]"


def task_table(task, pipe, n_train, n_seeds):
    header = ["eps", "mode", *PIPE_COLUMNS, "skdp - diffprivlib (s.e.)", "verdict"]
    rows = []
    for (eps, mode), cols in pipe.items():
        cmp = compare(cols["skdp pipeline"], cols["diffprivlib pipeline"])
        diff, verdict = "n/a", "n/a"
        if cmp is not None:
            diff = f"{cmp[0]:+.4f} ({cmp[1]:.4f})"
            verdict = cmp[2] + ("" if mode == "pure" else " (weaker guarantee)")
        cells = [
            _mean_se(cols[c])
            + (
                _n_fitted(cols[c], n_seeds)
                if c == "diffprivlib pipeline" and DPL
                else ""
            )
            for c in PIPE_COLUMNS
        ]
        rows.append([eps, mode, *cells, diff, verdict])
    majority = float(np.max(np.unique(task.y, return_counts=True)[1]) / task.y.size)
    return (
        f"#### {task.name}: test accuracy, mean (s.e.) of {n_seeds} seeds\n\n"
        f"n_train = {n_train}, d = {task.d}, majority class {majority:.3f}, delta "
        f"= {delta_for(n_train):.3g} in the (eps, delta) rows (diffprivlib: pure "
        "in both). [k/n]: diffprivlib fits that finished within the time limit.\n\n"
        + markdown_table(header, rows)
    )


def pca_table(task, pca, n_seeds):
    header = ["eps", "mode", *PCA_COLUMNS, "skdp - diffprivlib (s.e.)", "verdict"]
    rows = []
    for (eps, mode), cols in pca.items():
        cmp = compare(cols["skdp PCA"], cols["diffprivlib PCA"])
        diff, verdict = "n/a", "n/a"
        if cmp is not None:
            diff = f"{cmp[0]:+.4f} ({cmp[1]:.4f})"
            verdict = cmp[2] + ("" if mode == "pure" else " (weaker guarantee)")
        cells = [
            _mean_se(cols[c])
            + (_n_fitted(cols[c], n_seeds) if c == "diffprivlib PCA" and DPL else "")
            for c in PCA_COLUMNS
        ]
        rows.append([eps, mode, *cells, diff, verdict])
    return (
        f"#### PCA alone, {task.name}: test variance captured by 5 components, "
        f"relative to scikit-learn's PCA (mean (s.e.) of {n_seeds} seeds)\n\n"
        + markdown_table(header, rows)
    )


def accounting_table(results):
    """diffprivlib's pipeline: nominal total epsilon and what its LR step
    certifies under its own analysis with the curvature bound corrected."""
    header = ["task", "eps", "R (mean)", "LR step nominal", "LR step certified",
              "pipeline certified"]  # fmt: skip
    rows = []
    for task, _, _, extra, _, _ in results:
        for eps, norms in extra["dpl_norm"].items():
            if not norms:
                continue
            q = float(np.mean(norms))
            el = eps * SPLIT[2]
            cert = float(np.mean([dpl_lr_certified_epsilon(el, r) for r in norms]))
            total = eps * (SPLIT[0] + SPLIT[1]) + cert
            rows.append([task.name, eps, f"{q:.1f}", f"{el:.3g}", f"{cert:.3g}",
                         f"{total:.3g}"])  # fmt: skip
    return markdown_table(header, rows)


def summary(results, n_seeds):
    """Every pure cell's verdict (the must-hold), then the (eps, delta) ones."""
    header = ["task", "eps", "mode", "skdp", "diffprivlib", "skdp - dpl (s.e.)",
              "pairs", "verdict"]  # fmt: skip
    rows = []
    for task, pipe, _, _, _, _ in results:
        for (eps, mode), cols in pipe.items():
            cmp = compare(cols["skdp pipeline"], cols["diffprivlib pipeline"])
            if cmp is None:
                continue
            mean, se, verdict, k = cmp
            ours, theirs = cols["skdp pipeline"], cols["diffprivlib pipeline"]
            diff = f"{mean:+.4f} ({se:.4f})"
            rows.append([task.name, eps, mode, _mean_se(ours), _mean_se(theirs),
                         diff, f"{k}/{n_seeds}", verdict])  # fmt: skip
    return markdown_table(header, rows) if rows else "diffprivlib did not run."


COLORS = {
    "skdp pipeline": "C0",
    "diffprivlib pipeline": "C3",
    "skdp classifier alone": "C2",
    "skdp PCA": "C0",
    "diffprivlib PCA": "C3",
}


def _lines(ax, table, columns, eps):
    for col in columns:
        for mode, style in zip(MODES, ("-", "--")):
            if col.startswith("diffprivlib") and mode != "pure":
                continue
            vals = [_finite(table[(e, mode)][col]) for e in eps]
            if not all(vals):
                continue
            label = col if col.startswith("diffprivlib") else f"{col}, {mode}"
            ax.plot(eps, [np.mean(v) for v in vals], "o" + style, color=COLORS[col],
                    label=label)  # fmt: skip
    ax.set_xscale("log")
    ax.set_xticks(eps, [f"{e:g}" for e in eps])
    ax.minorticks_off()


def _plot(results, out_dir, name):
    plt = pyplot()
    from _common import figure_legend

    k = len(results)
    fig, axes = plt.subplots(2, k, figsize=(4.2 * k, 7.5), squeeze=False)
    for i, (task, pipe, pca, _, _, _) in enumerate(results):
        eps = sorted({e for e, _ in pipe})
        ax = axes[0, i]
        _lines(ax, pipe, PIPE_COLUMNS[:3], eps)
        for col, ls in (("non-private pipeline", ":"), ("non-private LR", "-")):
            ax.axhline(np.mean(pipe[(eps[0], MODES[0])][col]), color="k", lw=1,
                       ls=ls, label=col)  # fmt: skip
        majority = np.max(np.unique(task.y, return_counts=True)[1]) / task.y.size
        ax.axhline(majority, color="grey", lw=1, ls="-.", label="majority class")
        ax.set(xlabel="total epsilon", ylabel="test accuracy", title=task.name)
        ax = axes[1, i]
        _lines(ax, pca, PCA_COLUMNS, eps)
        ax.axhline(1.0, color="k", lw=1, label="scikit-learn PCA")
        ax.set(xlabel="epsilon", ylabel="captured variance / scikit-learn's",
               title=f"PCA alone: {task.name}")  # fmt: skip
    figure_legend(fig, axes, ncol=4)
    path = Path(out_dir) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _save(results, out_dir, name):
    """Every per-seed score, for re-reading without a rerun."""
    import json

    data = {
        task.name: {
            "n_train": n_train,
            "pipeline": {f"{e} {m}": cols for (e, m), cols in pipe.items()},
            "pca": {f"{e} {m}": cols for (e, m), cols in pca.items()},
            "dpl_norm": {str(e): v for e, v in extra["dpl_norm"].items()},
            "dpl_fits": {f"{e} {i}": c for (e, i), c in extra["dpl_fits"].items()},
        }
        for task, pipe, pca, extra, _, n_train in results
    }
    path = Path(out_dir) / f"{name}.json"
    path.write_text(json.dumps(data, indent=1))
    return path


def main(quick=True, out_dir="benchmarks/results", n_seeds=None, tasks=None):
    """The skdp and diffprivlib pipelines, skdp's classifier alone and PCA alone
    against non-private scikit-learn on the real binary tasks."""
    n_seeds = n_seeds or (3 if quick else 10)
    eps_list = EPS_QUICK if quick else EPS_FULL
    makers = tasks or (
        (
            _real_tasks.hmda_deny,
            _real_tasks.healthins_insurance,
            _real_tasks.adult_income,
        )
        if quick
        else _real_tasks.BINARY
    )
    start_cpu, start = time.process_time(), time.perf_counter()
    results = []
    for make in makers:
        task = make()
        results.append((task, *run_task(task, eps_list, n_seeds, quick)))
    mode = "quick" if quick else "full"
    dpl = DPL_VERSION or f"not importable ({DPL_ERROR})"
    fits = [c for r in results for c in r[3]["dpl_fits"].values()]
    stopped = sum(c["stopped"] for c in fits)
    skipped = sum(c["skipped"] for c in fits)
    tried = sum(c["stopped"] + c["finished"] for c in fits)
    parts = [
        f"### Private pipelines on real data ({mode} mode)\n\n"
        f"diffprivlib: {dpl}. Stratified 70/30 splits"
        + (f", training sets capped at {QUICK_MAX_TRAIN} rows" if quick else "")
        + f"; {N_COMPONENTS} components; total epsilon split {SPLIT[0]:.3g} / "
        f"{SPLIT[1]:.3g} / {SPLIT[2]:.3g} between scaler, PCA and classifier in "
        "both pipelines (diffprivlib's example split). Each diffprivlib fit "
        f"is stopped after {DPL_LIMIT[quick]:.0f} s ({stopped} of {tried} "
        f"stopped), and a cell whose first {GIVE_UP} fits were all stopped is "
        f"not tried on the other seeds ({skipped} fits skipped). Machine: "
        f"{machine_description()}; {time.process_time() - start_cpu:.0f} s CPU "
        f"(this process), {time.perf_counter() - start:.0f} s wall."
    ]
    parts.append(
        "#### skdp pipeline vs diffprivlib pipeline, every cell\n\n"
        "Pure rows: equal guarantees (both epsilon-DP at the same total); "
        "(eps, delta) rows: skdp with delta > 0 against diffprivlib's pure "
        "fit (for information).\n\n" + summary(results, n_seeds)
    )
    for task, pipe, pca, _, _, n_train in results:
        parts.append(task_table(task, pipe, n_train, n_seeds))
        parts.append(pca_table(task, pca, n_seeds))
    if DPL_VERSION:
        parts.append(
            "#### diffprivlib's accounting of its pipeline\n\n"
            "Nominal: epsilon / 3 per step. Its StandardScaler (mean and "
            "variance, epsilon / 2 each, split over the features) and its "
            "PCA (centered: epsilon / (k + 1) for the eigenvalues and each of "
            "k Bingham eigenvectors, on rows clipped to data_norm) certify what "
            "they claim. Its LogisticRegression bounds the objective's curvature "
            "by c q instead of c q^2 (q the row norm with its intercept column), "
            "so for q > 1 its own analysis certifies more than the nominal "
            "epsilon; with R the handed row-norm bound:\n\n" + accounting_table(results)
        )
    cpu = [
        [task.name, n_train, f"{np.median(c['skdp pipeline']):.3f}",
         f"{np.median(c['skdp PCA']):.3f}",
         f"{np.median(e['dpl_seconds']):.2f} / {np.max(e['dpl_seconds']):.1f}"
         if e["dpl_seconds"] else "n/a"]
        for task, _, _, e, c, n_train in results
    ]  # fmt: skip
    parts.append(
        "#### Time per fit\n\nskdp: median CPU seconds (process_time); "
        "diffprivlib: median / largest wall seconds of a child process (its "
        "pipeline or its PCA), the stopped ones included.\n\n"
        + markdown_table(
            ["task", "n_train", "skdp pipeline", "skdp PCA", "diffprivlib"], cpu
        )
    )
    write_result(out_dir, "pipelines", "\n\n".join(parts))
    _save(results, out_dir, "pipelines")
    _plot(results, out_dir, "pipelines")
    return results


if __name__ == "__main__":
    cli(main)
