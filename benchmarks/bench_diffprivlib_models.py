"""diffprivlib's GaussianNB and tools against skdp's and scikit-learn's/numpy's.

Gaussian naive Bayes: held-out accuracy of ``skdp.naive_bayes.PrivateGaussianNB``,
diffprivlib 0.6.6's ``GaussianNB`` and scikit-learn's non-private ``GaussianNB``
on digits (64 pixels in [0, 1], 10 classes) and Adult (its six numeric columns
mapped from their declared ranges to [0, 1], income > 50K), 70/30 splits, one
split and one noise draw per seed. Tools: absolute error of the private mean,
variance, median and 10-bin histogram (L1 error of the counts over n) of
Adult's age and hours-per-week in their declared ranges, against numpy.

Equal guarantees: skdp's epsilon is for replace-one neighbours. diffprivlib's
GaussianNB (class counts of sensitivity 1, per-class sums of sensitivity one
range) and its histogram (sensitivity 1) are calibrated for add/remove
neighbours, under which a nominal epsilon is ``2 epsilon`` for replace-one; so
they run at ``epsilon / 2`` ("equal guarantee") and, for reference, at the
nominal epsilon. Its mean, variance and quantile are replace-one calibrated and
run at ``epsilon``. diffprivlib's columns need it to import: scikit-learn <=
1.6 (e.g. ``/path/to/venv-with-sklearn-1.6/bin/python
benchmarks/bench_diffprivlib_models.py``); elsewhere they read n/a.
"""

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    ADULT_NUMERIC_RANGES,
    cli,
    machine_description,
    markdown_table,
    optional_diffprivlib,
    write_result,
)

from skdp import tools  # noqa: E402
from skdp.naive_bayes import PrivateGaussianNB  # noqa: E402

EPSILONS = [0.5, 1.0, 2.0, 5.0]
TOOL_COLUMNS = ("age", "hours-per-week")


def _diffprivlib():
    version, _, _, error = optional_diffprivlib()
    if version is None:
        return None, None, None, error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from diffprivlib import tools as dpl_tools
        from diffprivlib.models import GaussianNB
    return version, GaussianNB, dpl_tools, ""


def _digits():
    from sklearn.datasets import load_digits

    data = load_digits()
    return "digits (10 classes)", data.data / 16.0, data.target


def _adult_numeric():
    from skdp.datasets import load_adult

    data = load_adult(split="all", drop_missing=True)
    cols = [
        np.clip(
            (data.data[:, data.feature_names.index(c)].astype(float) - lo) / (hi - lo),
            0,
            1,
        )
        for c, (lo, hi) in ADULT_NUMERIC_RANGES.items()
    ]
    return "Adult, 6 numeric columns", np.column_stack(cols), np.asarray(data.target)


def _mean_se(values):
    v = np.asarray(values, float)
    if v.size == 0:
        return "n/a"
    if np.any(np.isinf(v)):
        return f"fails ({np.isinf(v).sum()} of {v.size} runs raise RuntimeError)"
    return f"{v.mean():.3g} ± {v.std(ddof=1) / np.sqrt(v.size):.2g}"


def _nb_rows(n_seeds, dpl_nb):
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    rows = []
    for name, X, y in (_digits(), _adult_numeric()):
        classes = np.unique(y)  # public: the documented label set
        d = X.shape[1]
        for eps in EPSILONS:
            acc = {"sk": [], "skdp": [], "dpl_half": [], "dpl": []}
            for seed in range(n_seeds):
                Xtr, Xte, ytr, yte = train_test_split(
                    X, y, test_size=0.3, random_state=seed, stratify=y
                )
                acc["sk"].append(GaussianNB().fit(Xtr, ytr).score(Xte, yte))
                clf = PrivateGaussianNB(
                    epsilon=eps, bounds_X=(0, 1), classes=classes, random_state=seed
                )
                acc["skdp"].append(clf.fit(Xtr, ytr).score(Xte, yte))
                if dpl_nb is not None:
                    bounds = (np.zeros(d), np.ones(d))
                    for key, e in (("dpl_half", eps / 2), ("dpl", eps)):
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            model = dpl_nb(epsilon=e, bounds=bounds, random_state=seed)
                            acc[key].append(model.fit(Xtr, ytr).score(Xte, yte))
            rows.append(
                [name, eps]
                + [_mean_se(acc[k]) for k in ("skdp", "dpl_half", "dpl", "sk")]
            )
    return rows


def _tool_rows(n_seeds, dpl_tools):
    from skdp.datasets import load_adult

    data = load_adult(split="all", drop_missing=True)
    rows = []
    for column in TOOL_COLUMNS:
        x = data.data[:, data.feature_names.index(column)].astype(float)
        lo, hi = ADULT_NUMERIC_RANGES[column]
        x = np.clip(x, lo, hi)
        truth_hist, _ = np.histogram(x, 10, (lo, hi))
        for eps in EPSILONS:
            err = {
                k: {"skdp": [], "dpl": []} for k in ("mean", "var", "median", "hist")
            }
            for seed in range(n_seeds):
                kw = {"epsilon": eps, "bounds": (lo, hi), "random_state": seed}
                err["mean"]["skdp"].append(abs(tools.mean(x, **kw) - x.mean()))
                err["var"]["skdp"].append(abs(tools.var(x, **kw) - x.var()))
                err["median"]["skdp"].append(abs(tools.median(x, **kw) - np.median(x)))
                hist, _ = tools.histogram(x, 10, (lo, hi), eps, random_state=seed)
                err["hist"]["skdp"].append(np.abs(hist - truth_hist).sum() / x.size)
                if dpl_tools is None:
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    dkw = {"epsilon": eps, "bounds": (lo, hi), "random_state": seed}
                    err["mean"]["dpl"].append(abs(dpl_tools.mean(x, **dkw) - x.mean()))
                    err["var"]["dpl"].append(abs(dpl_tools.var(x, **dkw) - x.var()))
                    try:
                        med = dpl_tools.median(x, **dkw)
                    except RuntimeError:  # its exp overflows on ~45k tied values
                        med = np.inf
                    err["median"]["dpl"].append(abs(med - np.median(x)))
                    hist, _ = dpl_tools.histogram(
                        x, epsilon=eps / 2, bins=10, range=(lo, hi), random_state=seed
                    )
                    err["hist"]["dpl"].append(np.abs(hist - truth_hist).sum() / x.size)
            for stat in ("mean", "var", "median", "hist"):
                rows.append(
                    [column, stat, eps]
                    + [_mean_se(err[stat][k]) for k in ("skdp", "dpl")]
                )
    return rows


def main(quick=True, out_dir="benchmarks/results"):
    """GaussianNB accuracy and tool errors: skdp, diffprivlib, non-private."""
    n_seeds = 3 if quick else 10
    tool_seeds = 20 if quick else 100  # cheap: the tools' errors are noisier
    version, dpl_nb, dpl_tools, error = _diffprivlib()
    dpl = f"diffprivlib {version}" if version else f"diffprivlib n/a ({error})"
    nb = _nb_rows(n_seeds, dpl_nb)
    tl = _tool_rows(tool_seeds, dpl_tools)
    text = (
        f"### GaussianNB: held-out accuracy (mean ± s.e. over {n_seeds} seeds; "
        f"{machine_description()}; {dpl})\n\n"
        + markdown_table(
            [
                "task",
                "epsilon",
                "skdp PrivateGaussianNB",
                "diffprivlib at eps/2 (equal guarantee)",
                "diffprivlib at eps (nominal)",
                "scikit-learn (non-private)",
            ],
            nb,
        )
        + "\n\n### Tools on Adult columns: absolute error against numpy "
        "(histogram: L1 error of the counts / n; diffprivlib's histogram at "
        f"eps/2, equal guarantee; mean ± s.e. over {tool_seeds} seeds; the same "
        "seeds at every epsilon, so skdp's columns scale with 1/epsilon; both medians "
        "draw uniformly inside the interval between two tied integer ages or "
        "hours, hence an error of about 0.5 at every epsilon)\n\n"
        + markdown_table(["column", "statistic", "epsilon", "skdp", "diffprivlib"], tl)
        + "\n"
    )
    write_result(out_dir, "diffprivlib_models", text)
    return nb, tl


if __name__ == "__main__":
    cli(main)
