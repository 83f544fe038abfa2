"""How ``SELECTION_SHARE`` of ``PrivateTheilSenRegressor`` was chosen: on the
TUNING family only (``_task_families``: the eight regressions of
``bench_small_data``), every cell with ``n_train * eps <= 3,000``, eps in
{0.1, 0.5, 1, 2, 5}, 10 seeds (70/30 splits).

The criterion is the mean over cells and seeds of the log of the test MSE
over non-private OLS's (a log so that one draw's blow-up does not decide
alone). Every share sees the same splits and the same noise seeds (skdp's
reproducible-noise opt-in, set here): common random numbers, so that the
shares' differences are not the draws'.
The evaluation family's figures are printed beside it, but the choice reads
only the tuning column. Run::

    PYTHONPATH=$PWD python benchmarks/_theil_sen_share.py
"""

import os
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _task_families import EVALUATION, TUNING, families  # noqa: E402
from sklearn.linear_model import LinearRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from skdp.linear_model import PrivateTheilSenRegressor  # noqa: E402
from skdp.linear_model import _theil_sen as ts_module  # noqa: E402

os.environ["SKDP_REPRODUCIBLE_NOISE"] = "1"  # common random numbers
SHARES = [0.05, 0.1, 0.15, 0.25, 0.5]
EPS = [0.1, 0.5, 1.0, 2.0, 5.0]
SEEDS = 20


def _cells(tasks):
    for task in tasks:
        n_train = int(round(0.7 * task.y.size))
        for eps in EPS:
            if n_train * eps <= 3000 and task.X.shape[1] > 1:
                yield task, eps


def _score(task, eps, share):
    ts_module.SELECTION_SHARE = share
    box = (-1.0, 1.0) if task.row_norm == 1.0 else (0.0, 1.0)
    ratios = []
    for seed in range(SEEDS):
        tr, te = train_test_split(
            np.arange(task.y.size), test_size=0.3, random_state=seed
        )
        X, y = task.X, task.y
        ols = LinearRegression().fit(X[tr], y[tr])
        base = np.mean((ols.predict(X[te]) - y[te]) ** 2)
        reg = PrivateTheilSenRegressor(
            epsilon=eps, bounds_X=box, bounds_y=task.y_bounds, random_state=seed
        ).fit(X[tr], y[tr])
        ratios.append(np.mean((reg.predict(X[te]) - y[te]) ** 2) / base)
    return float(np.mean(np.log(ratios)))


def main():
    fams = families("regression")
    print("| share | tuning: mean log ratio (cells) | evaluation: same |")
    print("|---|---|---|")
    for share in SHARES:
        cols = []
        for family in [TUNING, EVALUATION]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                logs = [_score(t, e, share) for t, e in _cells(fams[family])]
            cols.append(f"{np.mean(logs):.4f} ({len(logs)})")
        print(f"| {share} | {cols[0]} | {cols[1]} |", flush=True)


if __name__ == "__main__":
    main()
