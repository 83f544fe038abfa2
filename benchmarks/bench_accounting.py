"""Total epsilon of repeated releases: basic composition vs the PLD accountant.

Every row is recorded by two nested ``track_budget`` blocks around the same
releases, one with basic sequential composition and one with
``accountant="pld"`` (Google's dp-accounting). The PLD total is given at the
target delta 1e-5 and at the delta basic composition reaches (so the two
epsilons are comparable at equal delta).
"""

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cli, markdown_table, pyplot, write_result  # noqa: E402

from skdp.accounting import PrivacyBudget, record_spend, track_budget  # noqa: E402
from skdp.accounting._pld import pld_epsilon  # noqa: E402
from skdp.linear_model import FMLinearRegression  # noqa: E402

TARGET_DELTA = 1e-5
GRID_EPSILONS = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
FOLDS = 5


def _row(name, basic, pld, events):
    # at delta = 0 no accountant beats adding the pure epsilons
    at_basic_delta = (
        pld_epsilon(events, basic.delta) if basic.delta > 0 else basic.epsilon
    )
    return [
        name,
        len(events),
        f"{basic.epsilon:.4g}",
        f"{basic.delta:.3g}",
        f"{pld.epsilon:.4g}",
        f"{min(at_basic_delta, basic.epsilon):.4g}",
        f"{basic.epsilon / pld.epsilon:.2f}x",
    ]


def _repeated(n_fits, budget, mechanism):
    with (
        track_budget() as basic,
        track_budget(accountant="pld", delta=TARGET_DELTA) as pld,
    ):
        for _ in range(n_fits):
            record_spend(budget, "fit", mechanism=mechanism)
    return basic.total, pld.total, [e for events in pld.events for e in events]


def _grid_search(quick):
    from sklearn.model_selection import GridSearchCV

    rng = np.random.default_rng(0)
    n = 2_000 if quick else 20_000
    X = rng.uniform(-1, 1, (n, 5))
    y = X @ rng.uniform(-1, 1, 5) + 0.1 * rng.normal(size=n)
    est = FMLinearRegression(
        mechanism="gaussian",
        delta=TARGET_DELTA,
        bounds_X=(-1, 1),
        bounds_y=(-4, 4),
        random_state=0,
    )
    search = GridSearchCV(est, {"epsilon": GRID_EPSILONS}, cv=FOLDS, n_jobs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with (
            track_budget() as basic,
            track_budget(accountant="pld", delta=TARGET_DELTA) as pld,
        ):
            search.fit(X, y)
    events = [e for events in pld.events for e in events]
    return basic.total, pld.total, events


def main(quick=True, out_dir="benchmarks/results"):
    """Basic vs PLD totals for 10/100 Gaussian fits and a 5-fold x 6-epsilon search."""
    gaussian = PrivacyBudget(1.0, 1e-5)
    rows = []
    for n_fits in (10, 100):
        basic, pld, events = _repeated(n_fits, gaussian, "gaussian")
        rows.append(_row(f"{n_fits} Gaussian fits at (1, 1e-5)", basic, pld, events))
    basic, pld, events = _repeated(100, PrivacyBudget(1.0), "laplace")
    rows.append(_row("100 Laplace fits at eps = 1", basic, pld, events))
    basic, pld, events = _grid_search(quick)
    rows.append(
        _row(
            f"GridSearchCV {FOLDS} folds x {len(GRID_EPSILONS)} eps + refit "
            "(Gaussian FM, n_jobs=2)",
            basic,
            pld,
            events,
        )
    )
    table = markdown_table(
        [
            "releases",
            "n",
            "basic eps",
            "basic delta",
            f"PLD eps at {TARGET_DELTA:g}",
            "PLD eps at basic delta",
            "basic / PLD",
        ],
        rows,
    )
    text = (
        "### Composition: basic vs PLD (dp-accounting) accountant\n\n"
        f"{table}\n\nGrid epsilons {GRID_EPSILONS}, delta {TARGET_DELTA:g} per fit. "
        "PLD totals are pessimistic upper bounds (loss discretized to 1e-4) and "
        "never above basic composition (the tracker reports the smaller).\n"
    )
    write_result(out_dir, "accounting", text)

    ks = [1, 2, 5, 10, 20, 50, 100]
    from skdp.accounting import describe_release

    event = describe_release("gaussian", gaussian)[0]
    pld_curve = [min(pld_epsilon([event] * k, TARGET_DELTA), k) for k in ks]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(ks, ks, "o-", label="basic composition (delta = k 1e-5)")
    ax.plot(ks, pld_curve, "s-", label=f"PLD accountant (delta = {TARGET_DELTA:g})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("Gaussian releases at (1, 1e-5) each")
    ax.set_ylabel("total epsilon")
    ax.legend()
    fig.tight_layout()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "accounting.png", dpi=120)
    plt.close(fig)
    return rows


if __name__ == "__main__":
    cli(main)
