"""diffprivlib's KMeans, random forest and decision tree against skdp's.

k-means: ``skdp.cluster.PrivateKMeans``, diffprivlib 0.6.6's ``KMeans`` and
scikit-learn's ``KMeans`` (non-private, ``n_init=10``) with ``k = 5`` on Adult's
six numeric columns (Su et al. 2016's "Adult-num") and diamonds' six
measurements, each mapped from its declared range to [0, 1]; score: the test
inertia of the released centres over that of scikit-learn's centres (lower is
better; 1 = as good as non-private). And on a mixture of 5 Gaussians in
[0, 1]^3 (known labels); score: adjusted Rand index of the test predictions
(higher is better).

Forests and trees: ``skdp.ensemble.PrivateRandomForestClassifier`` (10 trees, its
depth rule) and ``skdp.tree.PrivateDecisionTreeClassifier`` against diffprivlib's
``RandomForestClassifier`` (10 trees, ``max_depth=5``, its defaults) and
``DecisionTreeClassifier``, and scikit-learn's ``RandomForestClassifier``
(non-private); held-out accuracy on real binary tasks (``_real_tasks``: every
feature mapped from its declared range to [0, 1]). Fertility played no part in
choosing the forest's depth rule (``skdp._trees.LEAF_SIGNAL``).

70/30 splits, one split and one noise draw per seed. Equal guarantees: skdp's
epsilon is for replace-one neighbours. diffprivlib's k-means releases counts of
sensitivity 1 and per-feature sums of sensitivity ``upper - lower`` per cluster;
with data in [0, 1] a row moving between clusters changes two counts and two
sums by up to 1 each, so its replace-one guarantee is ``2 epsilon`` (it also
skips the clusters its assignment left empty, a data-dependent step no noise
covers). Its trees label each leaf with permute-and-flip on the counts at
sensitivity 1 with the monotonic rule (add/remove neighbours): replace-one
moves a count down in one leaf and up in another, ``2 epsilon``. So diffprivlib
runs at ``epsilon / 2`` ("equal guarantee") and, for reference, at the nominal
epsilon. The verdict compares skdp with diffprivlib at equal guarantee: "first"
(skdp better on average), "within 2 s.e." (behind by less than two standard
errors of the paired difference over seeds) or "behind". diffprivlib's columns
need it to import: scikit-learn <= 1.6 (e.g. ``/path/to/venv-with-sklearn-1.6/
bin/python benchmarks/bench_diffprivlib_cluster_forest.py``); elsewhere n/a.

``--family evaluation`` runs only the forest and the tree, same protocol, on the
binary EVALUATION family of ``_task_families`` instead (seven tasks that played
no part in choosing the forest's constants; the forest's vote was changed after
they showed it behind on breast cancer; ``_forest_eval.py``), written to
``diffprivlib_cluster_forest_evaluation.md``. ``--family fresh`` does the same on
four tasks added after that change (``_forest_fresh_tasks.py``), written to
``diffprivlib_cluster_forest_fresh.md``.
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _real_tasks  # noqa: E402
from _common import (  # noqa: E402
    machine_description,
    markdown_table,
    optional_diffprivlib,
    write_result,
)
from bench_diffprivlib_models import _adult_numeric  # noqa: E402

from skdp.cluster import PrivateKMeans  # noqa: E402
from skdp.ensemble import PrivateRandomForestClassifier  # noqa: E402
from skdp.tree import PrivateDecisionTreeClassifier  # noqa: E402

EPSILONS = [0.5, 1.0, 2.0, 5.0]
K = 5


def _diffprivlib():
    version, _, _, error = optional_diffprivlib()
    if version is None:
        return None, error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from diffprivlib import models
    return models, ""


def _mean_se(values):
    v = np.asarray(values, float)
    if v.size == 0:
        return "n/a"
    return f"{v.mean():.3g} ± {v.std(ddof=1) / np.sqrt(v.size):.2g}"


def _verdict(skdp, dpl, higher_is_better):
    """skdp against diffprivlib at equal guarantee, paired over seeds."""
    if not dpl:
        return "n/a"
    diff = np.asarray(skdp, float) - np.asarray(dpl, float)
    if not higher_is_better:
        diff = -diff
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    if diff.mean() >= 0:
        return "first"
    return "within 2 s.e." if -diff.mean() <= 2 * se else "behind"


# ----------------------------------------------------------------- k-means
def _diamonds():
    task = _real_tasks.diamonds_logprice()
    return "diamonds, 6 measurements", task.X[:, :6], None


def _mixture():
    from sklearn.datasets import make_blobs

    X, y = make_blobs(
        20_000,
        n_features=3,
        centers=K,
        cluster_std=0.06,
        center_box=(0.15, 0.85),
        random_state=1,
    )
    return "5 Gaussians in [0, 1]^3 (ARI)", np.clip(X, 0, 1), y


def _inertia(X, centres):
    d = ((X[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    return float(d.min(axis=1).sum())


def _kmeans_rows(n_seeds, dpl):
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score
    from sklearn.model_selection import train_test_split

    name, X, _ = _adult_numeric()
    tasks = [("Adult, 6 numeric columns", X, None), _diamonds(), _mixture()]
    rows = []
    for name, X, labels in tasks:
        d = X.shape[1]
        idx = np.arange(X.shape[0])
        for eps in EPSILONS:
            res = {"skdp": [], "dpl_half": [], "dpl": [], "sk": []}
            for seed in range(n_seeds):
                tr, te = train_test_split(idx, test_size=0.3, random_state=seed)
                sk = KMeans(K, n_init=10, random_state=seed).fit(X[tr])
                base = _inertia(X[te], sk.cluster_centers_)

                truth = None if labels is None else labels[te]

                def score(centres, X_te=X[te], base=base, truth=truth):
                    if truth is None:
                        return _inertia(X_te, centres) / base
                    pred = np.argmin(
                        ((X_te[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1
                    )
                    return adjusted_rand_score(truth, pred)

                res["sk"].append(score(sk.cluster_centers_))
                km = PrivateKMeans(K, epsilon=eps, bounds_X=(0, 1), random_state=seed)
                res["skdp"].append(score(km.fit(X[tr]).cluster_centers_))
                if dpl is None:
                    continue
                for key, e in (("dpl_half", eps / 2), ("dpl", eps)):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model = dpl.KMeans(
                            K,
                            epsilon=e,
                            bounds=(np.zeros(d), np.ones(d)),
                            random_state=seed,
                        ).fit(X[tr])
                    res[key].append(score(model.cluster_centers_))
            rows.append(
                [name, eps]
                + [_mean_se(res[k]) for k in ("skdp", "dpl_half", "dpl", "sk")]
                + [_verdict(res["skdp"], res["dpl_half"], labels is not None)]
            )
    return rows


# ----------------------------------------------------------- forests and trees
def _forest_tasks():
    name, X, y = _adult_numeric()
    yield "Adult, 6 numeric columns", X, np.asarray(y, int)
    for make in (
        _real_tasks.adult_income,
        _real_tasks.hmda_deny,
        _real_tasks.healthins_insurance,
        _real_tasks.fertility_morekids,
    ):
        task = make()
        yield f"{task.name} (d={task.d})", task.X, np.asarray(task.y, int)


def seed_accuracies(model, eps, seed, split, dpl):
    """Held-out accuracy of one seed's skdp ``model`` ("forest" or "tree") and,
    when ``dpl`` (diffprivlib.models) is given, of diffprivlib's at ``eps / 2``
    ("dpl_half") and ``eps`` ("dpl"); every feature in the box (0, 1)."""
    Xtr, Xte, ytr, yte = split
    skdp_cls = {
        "forest": PrivateRandomForestClassifier,
        "tree": PrivateDecisionTreeClassifier,
    }[model]
    clf = skdp_cls(epsilon=eps, bounds_X=(0, 1), classes=[0, 1], random_state=seed)
    # rounded (accuracies move in steps of 1 / n_test): ties difference to 0
    out = {"skdp": round(float(clf.fit(Xtr, ytr).score(Xte, yte)), 12)}
    if dpl is None:
        return out
    dpl_cls = {"forest": dpl.RandomForestClassifier, "tree": dpl.DecisionTreeClassifier}
    d = Xtr.shape[1]
    for key, e in (("dpl_half", eps / 2), ("dpl", eps)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = dpl_cls[model](
                epsilon=e,
                bounds=(np.zeros(d), np.ones(d)),
                classes=[0, 1],
                random_state=seed,
            )
            out[key] = round(float(m.fit(Xtr, ytr).score(Xte, yte)), 12)
    return out


def _tree_rows(n_seeds, dpl, model):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split

    tasks = list(_forest_tasks())
    if model == "tree":
        tasks = tasks[:2]
    rows = []
    for name, X, y in tasks:
        splits = [
            train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
            for seed in range(n_seeds)
        ]
        non_private = [
            RandomForestClassifier(50, n_jobs=1, random_state=seed)
            .fit(Xtr, ytr)
            .score(Xte, yte)
            for seed, (Xtr, Xte, ytr, yte) in enumerate(splits)
        ]
        for eps in EPSILONS:
            res = {"skdp": [], "dpl_half": [], "dpl": [], "sk": non_private}
            for seed, split in enumerate(splits):
                for key, acc in seed_accuracies(model, eps, seed, split, dpl).items():
                    res[key].append(acc)
            rows.append(
                [name, eps]
                + [_mean_se(res[k]) for k in ("skdp", "dpl_half", "dpl", "sk")]
                + [_verdict(res["skdp"], res["dpl_half"], True)]
            )
    return rows


def main(quick=True, out_dir="benchmarks/results", family=None):
    """k-means, forests and trees: skdp, diffprivlib, non-private."""
    n_seeds = 3 if quick else 10
    dpl, error = _diffprivlib()
    version = optional_diffprivlib()[0]
    dpl_name = f"diffprivlib {version}" if dpl else f"diffprivlib n/a ({error})"
    if family in ("evaluation", "fresh"):
        import _forest_eval

        return _forest_eval.main(quick, out_dir, dpl, dpl_name, EPSILONS, family)
    if family is not None:
        raise ValueError(f"family must be None, 'evaluation' or 'fresh': {family!r}")
    head = ["diffprivlib at eps/2 (equal guarantee)", "diffprivlib at eps (nominal)"]
    verdict = "skdp vs diffprivlib at eps/2"
    km = _kmeans_rows(n_seeds, dpl)
    forest = _tree_rows(n_seeds, dpl, "forest")
    tree = _tree_rows(n_seeds, dpl, "tree")
    text = (
        f"### KMeans (k = {K}): test inertia over scikit-learn's (lower is better) "
        f"or ARI (higher is better); mean ± s.e. over {n_seeds} seeds; "
        f"{machine_description()}; {dpl_name}\n\n"
        + markdown_table(
            ["task", "epsilon", "skdp PrivateKMeans", *head]
            + ["scikit-learn KMeans (non-private)", verdict],
            km,
        )
        + "\n\n### Random forests (10 trees): held-out accuracy "
        f"(mean ± s.e. over {n_seeds} seeds)\n\n"
        + markdown_table(
            ["task", "epsilon", "skdp PrivateRandomForestClassifier", *head]
            + ["scikit-learn RandomForestClassifier (non-private)", verdict],
            forest,
        )
        + "\n\n### Single trees: held-out accuracy "
        f"(mean ± s.e. over {n_seeds} seeds)\n\n"
        + markdown_table(
            ["task", "epsilon", "skdp PrivateDecisionTreeClassifier", *head]
            + ["scikit-learn RandomForestClassifier (non-private)", verdict],
            tree,
        )
        + "\n"
    )
    write_result(out_dir, "diffprivlib_cluster_forest", text)
    return km, forest, tree


def _cli():
    """``_common.cli`` plus ``--family evaluation``."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--full", action="store_true", help="full mode (slow)")
    parser.add_argument("--out-dir", default="benchmarks/results")
    parser.add_argument(
        "--family",
        choices=["evaluation", "fresh"],
        help="forest and tree only, on the held-out binary evaluation tasks or "
        "on four fresh tasks (benchmarks/_forest_fresh_tasks.py)",
    )
    args = parser.parse_args()
    main(quick=not args.full, out_dir=args.out_dir, family=args.family)


if __name__ == "__main__":
    _cli()
