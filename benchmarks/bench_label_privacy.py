"""Label privacy: release throughput, exact survival tables, grid search over epsilon.

1. Throughput of RandomizedResponse (features and labels) and of
   ExponentialLabelRelease at n = 10^7, each next to a plain numpy draw of the
   same size (median of 5 runs after a warm-up). Targets: RR >= 10^7 values/s,
   ExponentialLabelRelease of 10^7 labels in <= 1 s.
2. The seed's "recommended budget" table, computed exactly: the smallest epsilon
   of the exponential label mechanism for which at least half of n labels
   survive with a target probability (binomial tail, no approximation).
3. A GridSearchCV over ``clf__privatizer__epsilon`` on bundled Adult (the
   README example).
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cli, markdown_table, median_time, pyplot, write_result  # noqa: E402

from skdp.preprocessing import (  # noqa: E402
    ExponentialLabelRelease,
    RandomizedResponse,
    label_survival_probability,
    recommended_epsilon,
)

RR_TARGET = 1e7  # values per second
ELR_TARGET = 1.0  # seconds for 10^7 labels


def throughput(n=10**7, repeats=5):
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 4, size=(n, 1))
    labels = rng.integers(0, 2, size=n)
    X_labels = np.zeros((n, 1), dtype=np.float32)
    features = RandomizedResponse(
        epsilon=1.0, columns="all", categories=[range(4)], random_state=rng
    ).fit(codes)
    rr_labels = RandomizedResponse(epsilon=1.0, classes=[0, 1], random_state=rng)
    elr = ExponentialLabelRelease(epsilon=1.0, classes=[0, 1], random_state=rng)
    elr_many = ExponentialLabelRelease(
        epsilon=50.0, classes=range(10), random_state=rng
    )
    labels10 = rng.integers(0, 10, size=n)
    cases = [
        ("RandomizedResponse.transform, k=4", lambda: features.transform(codes),
         "rng.integers(0, 4, n)", lambda: rng.integers(0, 4, size=n)),
        ("RandomizedResponse.fit_resample, labels k=2",
         lambda: rr_labels.fit_resample(X_labels, labels),
         "rng.integers(0, 2, n)", lambda: rng.integers(0, 2, size=n)),
        ("ExponentialLabelRelease, C=2, eps=1",
         lambda: elr.fit_resample(X_labels, labels),
         "rng.random(n)", lambda: rng.random(n)),
        ("ExponentialLabelRelease, C=10, eps=50",
         lambda: elr_many.fit_resample(X_labels, labels10),
         "rng.random(n)", lambda: rng.random(n)),
    ]  # fmt: skip
    rows = []
    for name, fn, base_name, base_fn in cases:
        t, tb = median_time(fn, repeats), median_time(base_fn, repeats)
        rows.append([name, t, n / t, base_name, tb, t / tb])
    return rows


def survival_table(ns, targets):
    rows = []
    for n in ns:
        rows.append([n] + [recommended_epsilon(n, t, 2, 0.5) for t in targets])
    return rows


def grid_search_example(quick=True):
    """The README example: tune the label-privacy budget with GridSearchCV."""
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from skdp.accounting import track_budget
    from skdp.datasets import load_adult
    from skdp.preprocessing import PrivateLabelClassifier, RandomizedResponse

    X, y = load_adult(split="train", as_frame=True, return_X_y=True)
    X_test, y_test = load_adult(split="test", as_frame=True, return_X_y=True)
    if quick:
        X, y = X.iloc[:10_000], y[:10_000]
    features = make_column_transformer(
        (
            OneHotEncoder(handle_unknown="ignore"),
            make_column_selector(dtype_include="category"),
        ),
        (StandardScaler(), make_column_selector(dtype_include="number")),
    )
    model = make_pipeline(
        features,
        PrivateLabelClassifier(
            LogisticRegression(max_iter=1000),
            RandomizedResponse(classes=[0, 1], random_state=0),
        ),
    )
    epsilons = [0.1, 0.5, 1, 2, 4, np.inf]

    def most_private_within_001(cv_results):
        # refit the smallest epsilon whose AUC is within 0.01 of the best
        scores = cv_results["mean_test_score"]
        return int(np.flatnonzero(scores >= scores.max() - 0.01)[0])

    search = GridSearchCV(
        model,
        {"privatelabelclassifier__privatizer__epsilon": epsilons},
        cv=3,
        scoring="roc_auc",
        refit=most_private_within_001,
    )
    with track_budget() as spent:
        search.fit(X, y)
    for eps, score in zip(epsilons, search.cv_results_["mean_test_score"]):
        print(f"epsilon={eps:<4}  CV ROC AUC={score:.3f}")
    chosen = search.best_estimator_[-1]
    print(
        f"chosen: {chosen.privacy_spent_}, test AUC={search.score(X_test, y_test):.3f}"
    )
    print(f"{len(spent.spends)} label releases recorded, total {spent.total}")
    return search


def plot_survival(out_dir, ns):
    plt = pyplot()

    eps = np.linspace(0.01, 3, 120)
    fig, ax = plt.subplots(figsize=(5.6, 4))
    for n in ns:
        ax.plot(eps, [label_survival_probability(n, e, 2, 0.5) for e in eps], label=n)
    ax.set_xlabel("epsilon (exponential mechanism parameter; guarantee eps/2)")
    ax.set_ylabel("P[at least half the labels survive]")
    ax.legend(title="n labels", fontsize=8)

    def reach(n, level=0.99):
        hit = [e for e in eps if label_survival_probability(n, e, 2, 0.5) >= level]
        return f"{hit[0]:.2f}" if hit else f"> {eps[-1]:g}"

    ax.set_title(
        "With more labels, the chance that at least half survive reaches 0.99\n"
        f"at a smaller epsilon (n = {min(ns)}: {reach(min(ns))}; "
        f"n = {max(ns)}: {reach(max(ns))})",
        fontsize=9,
    )
    fig.tight_layout()
    path = Path(out_dir) / "label_privacy_survival.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_throughput(out_dir, rows):
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    names = [r[0] for r in rows]
    y = np.arange(len(rows))
    ax.barh(y + 0.2, [r[2] for r in rows], height=0.4, label="skdp release")
    ax.barh(
        y - 0.2,
        [1e7 / r[4] for r in rows],
        height=0.4,
        label="NumPy's plain sampler of the same size (no privacy)",
    )
    ax.axvline(RR_TARGET, color="k", ls="--", lw=1, label="target: 10^7 values/s")
    ax.set_yticks(y, names, fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("values per second (n = 10^7; higher is better)")
    fig.legend(loc="lower center", ncol=2, fontsize=7, frameon=False)
    slow = [r[5] for r in rows]
    ax.set_title(
        f"skdp's label releases take {min(slow):.1f}x to {max(slow):.1f}x the time "
        "of NumPy's plain samplers",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    path = Path(out_dir) / "label_privacy_throughput.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(quick=True, out_dir="benchmarks/results"):
    """Throughput, exact recommended-budget table and the grid-search example."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    rows = throughput()
    rr_rate = rows[0][2]
    elr_time = rows[2][1]
    table = markdown_table(
        ["release", "s", "values/s", "numpy baseline", "baseline s", "time ratio"],
        rows,
    )
    ns = [10, 100, 1000, 10**4, 10**5] + ([] if quick else [10**6, 10**7])
    targets = [0.9, 0.99, 0.999, 0.999999]
    budget = markdown_table(
        ["n"] + [f"P >= {t}" for t in targets], survival_table(ns, targets)
    )
    start = time.perf_counter()
    grid_search_example(quick=quick)
    grid_seconds = time.perf_counter() - start
    text = (
        "### Label privacy release throughput (n = 10^7, median of 5 runs)\n\n"
        f"{table}\n\n"
        f"RR target >= 1e7 values/s: {'met' if rr_rate >= RR_TARGET else 'NOT met'}"
        f" ({rr_rate:.3g}). ExponentialLabelRelease target <= {ELR_TARGET} s: "
        f"{'met' if elr_time <= ELR_TARGET else 'NOT met'} ({elr_time:.3g} s).\n\n"
        "### Recommended epsilon (exact): smallest ExponentialLabelRelease epsilon "
        "with P[at least half of n binary labels unchanged] >= target\n\n"
        f"{budget}\n\nThe guarantee actually provided is half of each value "
        "(the release equals randomized response at epsilon/2).\n\n"
        f"Grid search example: {grid_seconds:.1f} s.\n"
    )
    write_result(out_dir, "label_privacy", text)
    plot_throughput(out_dir, rows)
    plot_survival(out_dir, [10, 100, 1000, 10**4])
    return rows


if __name__ == "__main__":
    cli(main)
