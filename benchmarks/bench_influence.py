"""Influence estimates of the randomized-response cost vs retraining, on Adult.

Logistic regression on the bundled Adult data; training groups by sex x race (10
groups) plus random groups of several sizes; label RR and feature RR (sex and race
jointly); a grid of epsilons from 0.1 to 10. For every (scenario, group, epsilon)
the estimated change of the test log-loss (RRInfluenceEstimator, first order as in
the seed paper and the Newton-corrected second order) is compared with the actual
change, averaged over RR draws of retraining (exact refits warm-started at the
fitted model). Reports Pearson correlations and the time of both approaches.

Run: ``python benchmarks/bench_influence.py [--full]``.
"""

import argparse
import os
import time

import numpy as np
from _common import figure_legend, pyplot
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits

from skdp.datasets import load_adult
from skdp.inspection import LABEL, RRInfluenceEstimator
from skdp.mechanisms import RandomizedResponseMechanism

NUMERIC = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
CATEGORICAL = ["workclass", "marital-status", "occupation", "relationship", "race"]
CATEGORICAL += ["sex"]

SETTINGS = {
    # quick: a training subsample, fewer epsilons and draws
    True: dict(n_train=6000, eps=np.geomspace(0.1, 10, 5), draws=10, random=(50, 500)),
    False: dict(
        n_train=None, eps=np.geomspace(0.1, 10, 10), draws=20, random=(100, 1000, 5000)
    ),
}


def load_data(n_train, seed=0):
    bunch = load_adult(drop_missing=True, split="train")
    test = load_adult(drop_missing=True, split="test")
    names = bunch.feature_names
    cols = [names.index(c) for c in NUMERIC + CATEGORICAL]
    X, y, X_te, y_te = (
        bunch.data[:, cols],
        bunch.target,
        test.data[:, cols],
        test.target,
    )
    if n_train is not None:
        keep = np.random.default_rng(seed).choice(len(y), n_train, replace=False)
        X, y = X[np.sort(keep)], y[np.sort(keep)]
    k = len(NUMERIC)
    encoder = ColumnTransformer(
        [
            ("num", StandardScaler(), list(range(k))),
            (
                "cat",
                OneHotEncoder(handle_unknown="ignore"),
                list(range(k, k + len(CATEGORICAL))),
            ),
        ],
        sparse_threshold=0,
    ).fit(X)
    out = encoder.get_feature_names_out()
    race_pos, sex_pos = k + CATEGORICAL.index("race"), k + CATEGORICAL.index("sex")
    blocks = {
        name: [i for i, f in enumerate(out) if f.startswith(f"cat__x{pos}_")]
        for name, pos in (("race", race_pos), ("sex", sex_pos))
    }
    raw = {"race": X[:, race_pos], "sex": X[:, sex_pos]}
    return encoder.transform(X), y, encoder.transform(X_te), y_te, blocks, raw


def make_groups(raw, n, random_sizes, seed=1):
    groups, labels = [], []
    for sex in np.unique(raw["sex"]):
        for race in np.unique(raw["race"]):
            mask = (raw["sex"] == sex) & (raw["race"] == race)
            if mask.any():
                groups.append(mask)
                labels.append(f"{sex}/{race}")
    rng = np.random.default_rng(seed)
    for size in random_sizes:
        mask = np.zeros(n, dtype=bool)
        mask[rng.choice(n, size, replace=False)] = True
        groups.append(mask)
        labels.append(f"random {size}")
    return groups, labels


def sklearn_refit_seconds(X, y, groups, n_fits=3, seed=2):
    """Mean time of a cold scikit-learn refit on label-perturbed data."""
    rng = np.random.default_rng(seed)
    mech = RandomizedResponseMechanism(1.0, 2)
    times = []
    for i in range(n_fits):
        y_new = y.copy()
        rows = np.flatnonzero(groups[i % len(groups)])
        y_new[rows] = mech.randomize(y[rows], rng)
        start = time.perf_counter()
        LogisticRegression(max_iter=1000).fit(X, y_new)
        times.append(time.perf_counter() - start)
    return float(np.mean(times))


def pearson(a, b):
    return float(np.corrcoef(np.ravel(a), np.ravel(b))[0, 1])


def run(quick=True):
    cfg = SETTINGS[quick]
    X, y, X_te, y_te, blocks, raw = load_data(cfg["n_train"])
    groups, labels = make_groups(raw, len(y), cfg["random"])
    eps = cfg["eps"]
    scenarios = {
        "label RR": {LABEL: eps},
        "feature RR (sex, race)": {"sex": eps, "race": eps},
    }
    base = LogisticRegression(max_iter=1000)
    fitted = {}
    for order in (1, 2):
        start = time.perf_counter()
        est = RRInfluenceEstimator(base, attributes=blocks, order=order).fit(X, y)
        fitted[order] = (est, time.perf_counter() - start)
    results = {}
    for name, perturb in scenarios.items():
        row = {}
        for order in (1, 2):
            est = fitted[order][0]
            start = time.perf_counter()
            row[f"est{order}"] = est.influence(
                X_te, y_te, groups=groups, perturb=perturb
            )
            row[f"time{order}"] = time.perf_counter() - start
        start = time.perf_counter()
        row["actual"], row["std"] = fitted[1][0].validate(
            X_te,
            y_te,
            groups=groups,
            perturb=perturb,
            n_draws=cfg["draws"],
            random_state=0,
            return_std=True,
        )
        row["time_refit"] = time.perf_counter() - start
        results[name] = row
    n_refits = len(scenarios) * len(groups) * len(eps) * cfg["draws"]
    sk_seconds = sklearn_refit_seconds(X, y, groups)
    return dict(
        cfg=cfg,
        n_train=len(y),
        n_test=len(y_te),
        n_params=fitted[1][0].theta_.size,
        groups=groups,
        labels=labels,
        eps=eps,
        results=results,
        fit_time={o: fitted[o][1] for o in (1, 2)},
        n_refits=n_refits,
        sk_seconds=sk_seconds,
    )


def tables(out, quick):
    res, eps = out["results"], out["eps"]
    mode = "quick" if quick else "full"
    n_random = len(out["cfg"]["random"])
    lines = [
        f"## Influence of randomized response vs retraining ({mode})",
        "",
        f"Adult: {out['n_train']} training rows, {out['n_test']} test rows, logistic "
        f"regression with {out['n_params']} parameters; {len(out['groups'])} groups "
        f"({len(out['groups']) - n_random} sex x race, random of sizes "
        f"{', '.join(map(str, out['cfg']['random']))}); {len(eps)} epsilons "
        f"{eps[0]:g}..{eps[-1]:g}; actual = mean over {out['cfg']['draws']} RR draws "
        "of exact retraining.",
        "",
        "| scenario | configs | Pearson (order 1, seed) | Pearson (order 2) "
        "| Spearman (order 2) | MAE order 1 | MAE order 2 |",
        "|---|---|---|---|---|---|---|",
    ]
    all_act, all1, all2 = [], [], []
    for name, row in res.items():
        act, e1, e2 = row["actual"].ravel(), row["est1"].ravel(), row["est2"].ravel()
        all_act.append(act)
        all1.append(e1)
        all2.append(e2)
        lines.append(summary_row(name, act, e1, e2))
    act, e1, e2 = map(np.concatenate, (all_act, all1, all2))
    lines.append(summary_row("pooled", act, e1, e2))
    # the same without groups holding more than half of the training rows (far
    # outside the small-perturbation regime), shown separately, not instead
    small = np.array([g.sum() <= 0.5 * out["n_train"] for g in out["groups"]])
    for name, row in res.items():
        lines.append(
            summary_row(
                f"{name}, groups <= 50 % of rows",
                row["actual"][small].ravel(),
                row["est1"][small].ravel(),
                row["est2"][small].ravel(),
            )
        )
    t_refit = sum(row["time_refit"] for row in res.values())
    t1 = out["fit_time"][1] + sum(row["time1"] for row in res.values())
    t2 = out["fit_time"][2] + sum(row["time2"] for row in res.values())
    sk_total = out["sk_seconds"] * out["n_refits"]
    lines += [
        "",
        "| method (all configurations) | seconds | speed-up vs exact refits "
        "| speed-up vs sklearn refits |",
        "|---|---|---|---|",
        f"| influence, order 1 (fit + factorization + queries) | {t1:.2f} | "
        f"{t_refit / t1:.0f}x | {sk_total / t1:.0f}x |",
        f"| influence, order 2 | {t2:.2f} | {t_refit / t2:.0f}x | "
        f"{sk_total / t2:.0f}x |",
        f"| retraining: {out['n_refits']} exact warm-started refits (measured) | "
        f"{t_refit:.1f} | 1x | |",
        f"| retraining: {out['n_refits']} cold scikit-learn fits "
        f"(projected from {out['sk_seconds']:.2f} s/fit) | {sk_total:.0f} | | 1x |",
        "",
        "Per group at three epsilons (x 1e4; actual +- standard error over draws):",
        "",
    ]
    pick = [0, len(eps) // 2, len(eps) - 1]
    header = " | ".join(f"eps={eps[i]:.2g}: actual / ord1 / ord2" for i in pick)
    for name, row in res.items():
        lines += [f"**{name}**", "", f"| group | size | {header} |"]
        lines.append("|---|---|" + "---|" * len(pick))
        se = row["std"] / np.sqrt(out["cfg"]["draws"])
        for g, label in enumerate(out["labels"]):
            cells = " | ".join(
                f"{1e4 * row['actual'][g, i]:.2f}+-{1e4 * se[g, i]:.2f} / "
                f"{1e4 * row['est1'][g, i]:.2f} / {1e4 * row['est2'][g, i]:.2f}"
                for i in pick
            )
            lines.append(f"| {label} | {int(out['groups'][g].sum())} | {cells} |")
        lines.append("")
    return "\n".join(lines)


def summary_row(name, act, e1, e2):
    return (
        f"| {name} | {act.size} | {pearson(e1, act):.3f} | {pearson(e2, act):.3f} | "
        f"{spearman(e2, act):.3f} | {np.mean(np.abs(e1 - act)):.2e} | "
        f"{np.mean(np.abs(e2 - act)):.2e} |"
    )


def spearman(a, b):
    ra = np.argsort(np.argsort(np.ravel(a)))
    rb = np.argsort(np.argsort(np.ravel(b)))
    return pearson(ra, rb)


def plot(out, path):
    plt = pyplot()

    fig, axes = plt.subplots(1, len(out["results"]), figsize=(12, 5.6), squeeze=False)
    corr = {}
    for ax, (name, row) in zip(axes.flat, out["results"].items()):
        act = row["actual"].ravel()
        for order, marker in ((1, "x"), (2, "o")):
            ax.scatter(act, row[f"est{order}"].ravel(), s=14, marker=marker,
                       label=f"estimate of order {order}", alpha=0.7)  # fmt: skip
        corr[name] = [pearson(row[f"est{k}"], act) for k in (1, 2)]
        lim = [min(act.min(), 0), act.max()]
        ax.plot(lim, lim, "k--", lw=0.8, label="estimate = actual (retraining)")
        ax.set_xscale("symlog", linthresh=1e-5)
        ax.set_yscale("symlog", linthresh=1e-5)
        ax.set_xlabel("actual change of test log-loss (mean over RR draws)")
        ax.set_ylabel("estimated change")
        ax.set_title(
            f"{name} (Pearson: order 1 {corr[name][0]:.2f}, "
            f"order 2 {corr[name][1]:.2f})",
            fontsize=10,
        )
    name, (p1, p2) = next(iter(corr.items()))
    title = (
        f"The order-2 estimates track retraining ({name}: Pearson {p2:.2f}, "
        f"against {p1:.2f} at order 1)\nwithout retraining; symmetric log axes"
    )
    figure_legend(fig, axes, ncol=3, title=title)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(quick=True, out_dir="benchmarks/results"):
    os.makedirs(out_dir, exist_ok=True)
    wall, cpu = time.perf_counter(), time.process_time()
    # one BLAS thread: the machine is shared and timings are compared
    with threadpool_limits(1):
        out = run(quick)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    text = tables(out, quick)
    text += f"\nTotal benchmark time: {wall:.0f} s wall, {cpu:.0f} s CPU.\n"
    print(text)
    with open(os.path.join(out_dir, "influence.md"), "w") as fh:
        fh.write(text + "\n")
    try:
        plot(out, os.path.join(out_dir, "influence.png"))
    except ImportError:  # matplotlib is in the bench extra
        print("matplotlib not installed: no plot")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the issue's full setting")
    parser.add_argument("--out-dir", default="benchmarks/results")
    args = parser.parse_args()
    main(quick=not args.full, out_dir=args.out_dir)
