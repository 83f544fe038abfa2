"""Issue 35's must-hold for private ranges, on every real regression task of
the benchmarks (both families of ``_task_families``: 11 tasks) at eps in {0.1,
0.5, 1, 2, 5}, 10 seeds (70/30 splits):

``FMLinearRegression(epsilon=eps, bounds_X="private", bounds_y="private",
public_bounds=<the schema's indicator, one-hot and ordinal columns>)`` on the
features in their own units, with the default mechanism (pure epsilon) and
with the Gaussian one (delta = min(1/n^2, 1e-5)). Each fit either refuses
(a ``ValueError`` before any spend) or is scored by

- its test MSE over that of the **training-mean predictor** (the non-private
  mean: a released mean would only be worse, so the criterion is the stricter
  one);
- how far any test prediction leaves the released label range ``bounds_y_``
  (must be 0).

A cell passes when every fit of it refuses, or every fitted seed has ratio
<= 1.5 and no prediction outside. Run::

    PYTHONPATH=$PWD python benchmarks/_private_ranges_must_hold.py
"""

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import delta_for, markdown_table  # noqa: E402
from _task_families import families  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from skdp.linear_model import FMLinearRegression  # noqa: E402

EPS = [0.1, 0.5, 1.0, 2.0, 5.0]
SEEDS = 10
LIMIT = 1.5


def _public(task):
    return {int(j): (0.0, 1.0) for j in np.flatnonzero(task.schema_columns)}


def _fit(task, eps, seed, mechanism):
    tr, te = train_test_split(np.arange(task.y.size), test_size=0.3, random_state=seed)
    X, y = task.raw_X, task.y
    kw = {"delta": delta_for(tr.size)} if mechanism == "gaussian" else {}
    reg = FMLinearRegression(
        epsilon=eps, bounds_X="private", bounds_y="private",
        public_bounds=_public(task), mechanism=mechanism, **kw,
    )  # fmt: skip
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reg.fit(X[tr], y[tr])
    except ValueError as exc:
        if "Private ranges need" not in str(exc):
            raise
        return None
    pred = reg.predict(X[te])
    lo, hi = reg.bounds_y_
    outside = float(np.max(np.maximum(pred - hi, lo - pred), initial=0.0))
    base = np.mean((y[te] - y[tr].mean()) ** 2)
    return float(np.mean((pred - y[te]) ** 2) / base), max(outside, 0.0)


def main():
    rows, misses = [], 0
    for family, tasks in families("regression").items():
        for task in tasks:
            if task.raw_X is None:  # synthetic: no units of their own
                continue
            for mechanism in ["laplace", "gaussian"]:
                for eps in EPS:
                    fits = [_fit(task, eps, s, mechanism) for s in range(SEEDS)]
                    done = [f for f in fits if f is not None]
                    ratios = [f[0] for f in done]
                    outside = max([f[1] for f in done], default=0.0)
                    ok = all(r <= LIMIT for r in ratios) and outside == 0.0
                    misses += not ok
                    rows.append([
                        family, task.name, mechanism, eps,
                        SEEDS - len(done),
                        f"{np.median(ratios):.3f}" if ratios else "(refused)",
                        f"{max(ratios):.3f}" if ratios else "(refused)",
                        outside, "ok" if ok else "MISS",
                    ])  # fmt: skip
                    print(rows[-1], flush=True)
    header = ["family", "task", "mechanism", "eps", "refused (of 10)"]
    header += ["median MSE / mean predictor", "worst", "max outside", "verdict"]
    print(markdown_table(header, rows))
    print(f"\ncells missing: {misses} of {len(rows)}")


if __name__ == "__main__":
    main()
