"""The data behind ``PrivateLogisticRegression(method="auto")``: FM or OP?

Every cell of a grid (task, training size n, epsilon, pure or (eps, delta)) is
fitted with the functional mechanism (``FMLogisticRegression``, Laplace or
Gaussian) and with objective perturbation (``OPLogisticRegression``) on the
same splits and seeds. Each cell also gets OP's public noise-to-signal
ratio ``rho = sqrt(E||b||^2) / (a W)`` of
:func:`skdp.linear_model._op_calibration.noise_to_signal` (a function of n, p,
C, the declared domain, epsilon and delta only). The rule "OP iff rho <=
threshold" is then read off the grid: the threshold minimizes the accuracy
lost against the better of the two methods, summed over all cells (the
middle, on a log scale, of the best interval).

Tasks: every binary and multi-class task of ``_real_tasks.py`` at several
training sizes (the first n rows of each seed's 70 % split, so the small n
are subsamples of the same data), and synthetic ones: logistic labels on
rows in the unit ball (declared ``data_norm=1``), on the unit box, and softmax
labels with 3 and 6 classes on the unit box.
"""

import math
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _real_tasks  # noqa: E402
from _common import delta_for, markdown_table, progress  # noqa: E402
from bench_fm_utility import _fm_kwargs as _real_kwargs  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from skdp.linear_model import FMLogisticRegression, OPLogisticRegression  # noqa: E402
from skdp.linear_model._private_logistic import (  # noqa: E402
    AUTO_THRESHOLD,
    noise_level,
)

EPS = [0.5, 1.0, 2.0, 5.0, 10.0]
EPS_QUICK = [1.0, 10.0]
SIZES_FULL = [250, 1000, 4000, None]  # None: the whole training split
SIZES_QUICK = [250, 2000]


class _Synthetic:
    """A task drawn from a known model, with a declared domain."""

    def __init__(self, name, kind, X, y, fm_kwargs):
        self.name, self.kind, self.X, self.y = name, kind, X, y
        self.fm_kwargs = fm_kwargs

    @property
    def d(self):
        return self.X.shape[1]


def synthetic_tasks(n=40_000, seed=0):
    """Binary (ball, box) and multinomial (box, 3 and 6 classes) tasks."""
    rng = np.random.default_rng(seed)
    out = []
    for d in (10, 50):
        X = rng.standard_normal((n, d))
        X *= rng.uniform(0, 1, (n, 1)) / np.linalg.norm(X, axis=1, keepdims=True)
        w = rng.standard_normal(d)
        w *= 4.0 / np.linalg.norm(w)
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ w))).astype(int)
        out.append(
            _Synthetic(f"synthetic ball d={d}", "binary", X, y, {"data_norm": 1.0})
        )
    for d, C in ((20, 2), (10, 3), (20, 6)):
        X = rng.uniform(0, 1, (n, d))
        W = rng.standard_normal((C, d)) * 6.0 / math.sqrt(d)
        scores = (X - 0.5) @ W.T
        P = np.exp(scores - scores.max(1, keepdims=True))
        P /= P.sum(1, keepdims=True)
        y = (P.cumsum(1) < rng.uniform(size=(n, 1))).sum(1)
        kind = "binary" if C == 2 else "multiclass"
        out.append(
            _Synthetic(
                f"synthetic box d={d} C={C}", kind, X, y, {"bounds_X": (0.0, 1.0)}
            )
        )
    return out


def _fm_kwargs(task):
    if hasattr(task, "fm_kwargs"):
        return dict(task.fm_kwargs)
    return _real_kwargs(task)


def _split(task, seed, n_train, test_cap=20_000):
    Xtr, Xte, ytr, yte = train_test_split(
        task.X, task.y, test_size=0.3, random_state=seed
    )
    if n_train is not None:
        Xtr, ytr = Xtr[:n_train], ytr[:n_train]
    return Xtr, Xte[:test_cap], ytr, yte[:test_cap]


def cell_scores(task, Xtr, ytr, Xte, yte, eps, delta, seed):
    """Test accuracy of FM and OP at one (eps, delta) (delta = 0: pure)."""
    classes = np.unique(task.y)
    kw = _fm_kwargs(task)
    fm = FMLogisticRegression(
        epsilon=eps,
        delta=delta,
        mechanism="gaussian" if delta > 0 else "laplace",
        classes=classes,
        random_state=seed,
        **kw,
    )
    op = OPLogisticRegression(
        epsilon=eps, delta=delta, classes=classes, random_state=seed, **kw
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fm.fit(Xtr, ytr).score(Xte, yte), op.fit(Xtr, ytr).score(Xte, yte)


def run_grid(tasks, sizes, eps_list, n_seeds):
    """Rows (task, n, eps, mode, rho, mean OP - FM, s.e., FM, OP)."""
    rows = []
    for task in tasks:
        kw = _fm_kwargs(task)
        n_full = int(round(0.7 * len(task.y)))
        seen = set()
        for n_train in sizes:
            n = n_full if n_train is None else min(n_train, n_full)
            if n in seen:
                continue
            seen.add(n)
            splits = [_split(task, s, n) for s in range(n_seeds)]
            for eps in eps_list:
                for mode in ("pure", "(eps, delta)"):
                    delta = 0.0 if mode == "pure" else delta_for(n)
                    fm, op = [], []
                    for seed, (Xtr, Xte, ytr, yte) in enumerate(splits):
                        a, b = cell_scores(task, Xtr, ytr, Xte, yte, eps, delta, seed)
                        fm.append(a)
                        op.append(b)
                    rho = noise_level(
                        n, task.d, np.unique(task.y).size, eps, delta, **kw
                    )
                    diff = np.subtract(op, fm)
                    se = diff.std(ddof=1) / math.sqrt(diff.size) if n_seeds > 1 else 0
                    rows.append(
                        [
                            task.name,
                            n,
                            eps,
                            mode,
                            rho,
                            diff.mean(),
                            se,
                            float(np.mean(fm)),
                            float(np.mean(op)),
                        ]
                    )
            print(f"  {task.name} n={n}", file=sys.stderr, flush=True)
    return rows


def best_threshold(rows):
    """The rho threshold minimizing the summed accuracy lost to the better method.

    Choosing OP in a cell costs ``max(0, FM - OP)``, FM ``max(0, OP - FM)``;
    candidates are the midpoints between consecutive observed rho (log scale).
    Returns ``(threshold, total loss, loss of always-OP, loss of always-FM)``.
    """
    rho = np.array([r[4] for r in rows])
    diff = np.array([r[5] for r in rows])
    order = np.sort(np.unique(rho))
    mids = np.sqrt(order[:-1] * order[1:]) if order.size > 1 else order
    candidates = np.concatenate([[order[0] / 2], mids, [order[-1] * 2]])

    def loss(t):
        op = rho <= t
        return float(np.sum(np.where(op, np.maximum(-diff, 0), np.maximum(diff, 0))))

    losses = np.array([loss(t) for t in candidates])
    best = np.flatnonzero(losses <= losses.min() + 1e-12)
    # the middle of the best run of candidates (log scale)
    t = float(np.exp(np.log(candidates[best]).mean()))
    return t, float(losses.min()), loss(np.inf), loss(0.0)


def rule_tables(rows, threshold):
    """Markdown: the threshold and every cell, sorted by rho."""
    header = ["task", "n", "eps", "mode", "rho", "OP - FM", "s.e.", "FM", "OP", "auto"]
    body = []
    for r in sorted(rows, key=lambda r: r[4]):
        choice = "OP" if r[4] <= threshold else "FM"
        body.append(
            [*r[:4], f"{r[4]:.3g}", f"{r[5]:+.4f}", f"{r[6]:.4f}", r[7], r[8], choice]
        )
    return markdown_table(header, body)


def rule_main(quick=True, n_seeds=None):
    """Run the grid and derive the threshold; returns (rows, threshold, text)."""
    n_seeds = n_seeds or (2 if quick else 4)
    tasks = [make() for make in (*_real_tasks.BINARY, *_real_tasks.MULTICLASS)]
    tasks += synthetic_tasks(n=6000 if quick else 40_000)
    if quick:
        tasks = tasks[:1] + tasks[-2:]
    sizes = SIZES_QUICK if quick else SIZES_FULL
    eps = EPS_QUICK if quick else EPS
    rows = run_grid(progress(tasks, "rule grid"), sizes, eps, n_seeds)
    threshold, text = rule_text(rows, n_seeds)
    return rows, threshold, text


def rule_text(rows, n_seeds):
    """The threshold the grid's rows give and the Markdown report of them."""
    threshold, lost, always_op, always_fm = best_threshold(rows)
    rho = np.array([r[4] for r in rows])
    diff = np.array([r[5] for r in rows])
    library = AUTO_THRESHOLD
    op = rho <= library
    lost_library = float(
        np.sum(np.where(op, np.maximum(-diff, 0), np.maximum(diff, 0)))
    )
    text = (
        f"#### The auto rule: OP iff rho <= {library:g}\n\n"
        f"{len(rows)} cells (task, n, eps, mode), {n_seeds} seeds each; rho is "
        "OP's public noise-to-signal ratio. Summed accuracy lost against the "
        f"better of FM and OP in each cell: {lost_library:.4f} with the "
        f"library's threshold {library:g}, {always_op:.4f} always OP, "
        f"{always_fm:.4f} always FM; the best threshold on this grid is "
        f"{threshold:.3g} (loss {lost:.4f}). Cells sorted by rho; 'auto' is "
        "the library's choice.\n\n" + rule_tables(rows, library)
    )
    return threshold, text
