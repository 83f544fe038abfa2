"""Total epsilon of repeated releases: basic composition vs the PLD accountant.

Every row is recorded by two nested ``track_budget`` blocks around the same
releases, one with basic sequential composition and one with
``accountant="pld"`` (Google's dp-accounting). The PLD total is given at the
target delta 1e-5 and at the delta basic composition reaches (so the two
epsilons are comparable at equal delta).

A second table measures what a release costs under a cap with the PLD
accountant (CPU time of ``record_spend``: the check against the cap and the
record), over 500 releases, next to the method of skdp 482a736 (the whole
composition recomputed at every release: identical events grouped and
self-composed, then convolved).
"""

import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cli, figure_legend, markdown_table, pyplot, write_result  # noqa: E402

from skdp.accounting import (  # noqa: E402
    EpsilonDeltaEvent,
    GaussianEvent,
    PrivacyBudget,
    RandomizedResponseEvent,
    record_spend,
    track_budget,
)
from skdp.accounting._pld import gaussian_epsilon, pld_epsilon  # noqa: E402
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


# Workloads of the cost table: release i's event. Each release states its own
# (epsilon, delta) for the basic total; the cap admits all of them.
CAP = PrivacyBudget(12.0, TARGET_DELTA)
N_RELEASES = 500
WORKLOADS = {
    "pure eps, alternating 0.05 / 0.07": lambda i: EpsilonDeltaEvent(
        (0.05, 0.07)[i % 2]
    ),
    "pure eps, all distinct in [0.02, 0.08]": lambda i: EpsilonDeltaEvent(
        0.02 + 0.06 * i / (N_RELEASES - 1)
    ),
    "randomized response eps 0.1, 2 / 3 classes": lambda i: RandomizedResponseEvent(
        0.1, 2 + i % 2
    ),
    "Gaussian (sigma/sens 20) / pure eps 0.05": lambda i: (
        GaussianEvent(20.0) if i % 2 else EpsilonDeltaEvent(0.05)
    ),
}


def _budget_of(event):
    if isinstance(event, GaussianEvent):  # its exact epsilon at delta 1e-7
        return PrivacyBudget(gaussian_epsilon(event.noise_multiplier, 1e-7), 1e-7)
    return PrivacyBudget(event.epsilon)


def _recompose_epsilon(events, delta):
    """skdp 482a736's PLD total: the whole composition, recomputed."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    inverse_square, counts = 0.0, Counter()
    for event in events:
        if isinstance(event, GaussianEvent):
            inverse_square += event.noise_multiplier**-2
        else:
            counts[event] += 1
    plds = []
    if inverse_square > 0:
        plds.append(
            pld_lib.from_gaussian_mechanism(
                inverse_square**-0.5, value_discretization_interval=1e-4
            )
        )
    for event, count in counts.items():
        base = event._pld(1e-4)
        plds.append(base if count == 1 else base.self_compose(count))
    total = plds[0]
    for pld in plds[1:]:
        total = total.compose(pld)
    return total.get_epsilon_for_delta(delta)


def _release_cost(name, make, reference_at):
    """CPU seconds of each capped release, and the reference at one k."""
    events = [make(i) for i in range(N_RELEASES)]
    costs = []
    with track_budget(CAP.epsilon, CAP.delta, accountant="pld") as acc:
        for event in events:
            start = time.process_time()
            record_spend(_budget_of(event), "release", mechanism=event)
            costs.append(time.process_time() - start)
    start = time.process_time()
    reference_eps = _recompose_epsilon(events[:reference_at], TARGET_DELTA)
    reference = time.process_time() - start
    assert len(acc.spends) == N_RELEASES  # the cap admits every release
    return {
        "name": name,
        "costs": costs,
        "total": acc.total,
        "reference": reference,
        "reference_eps": reference_eps,
    }


def _cost_table(quick):
    reference_at = 100 if quick else N_RELEASES
    results = [_release_cost(n, f, reference_at) for n, f in WORKLOADS.items()]
    rows = []
    for r in results:
        costs = np.asarray(r["costs"]) * 1e3
        rows.append(
            [
                r["name"],
                f"{sum(r['costs']):.2f}",
                f"{costs[:50].mean():.1f}",
                f"{costs[-50:].mean():.1f}",
                f"{r['total'].epsilon:.3f}",
                f"{r['reference'] * 1e3:.0f}",
            ]
        )
    table = markdown_table(
        [
            f"{N_RELEASES} releases under a cap",
            "CPU s, all",
            "ms / release, first 50",
            "ms / release, last 50",
            f"PLD eps at {TARGET_DELTA:g}",
            f"482a736: ms for release {reference_at}",
        ],
        rows,
    )
    text = (
        "### Cost of a release under a cap: PLD accountant\n\n"
        f"{table}\n\nEach release is checked against the cap "
        f"({CAP.epsilon:g}, {CAP.delta:g}) before it is recorded; CPU time "
        "(time.process_time) of record_spend. The last column is skdp 482a736's "
        f"method (recompute the whole composition) for release {reference_at} "
        "alone, in the same run: its cost grows with the number of earlier "
        "releases, the incremental accountant's stays within a bound set by the "
        "cap.\n"
    )
    return results, text


def main(quick=True, out_dir="benchmarks/results"):
    """Basic vs PLD totals (10/100 fits, a search) and the cost of capped releases."""
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
    cost_results, cost_text = _cost_table(quick)
    write_result(out_dir, "accounting", text + "\n" + cost_text)

    ks = [1, 2, 5, 10, 20, 50, 100]
    from skdp.accounting import describe_release

    event = describe_release("gaussian", gaussian)[0]
    pld_curve = [min(pld_epsilon([event] * k, TARGET_DELTA), k) for k in ks]
    plt = pyplot()
    fig, (ax, cost_ax) = plt.subplots(1, 2, figsize=(11, 5.0))
    ax.plot(ks, ks, "o-", label="basic composition (delta = k 1e-5)")
    ax.plot(ks, pld_curve, "s-", label=f"PLD accountant (delta = {TARGET_DELTA:g})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("Gaussian releases at (1, 1e-5) each")
    ax.set_ylabel("total epsilon (lower is tighter)")
    ax.set_title("Total epsilon of repeated releases", fontsize=10)
    window = 25  # a moving median: single releases are noisy under load
    for i, r in enumerate(cost_results):
        costs = np.asarray(r["costs"]) * 1e3
        smooth = [
            np.median(costs[max(0, i - window) : i + 1]) for i in range(len(costs))
        ]
        cost_ax.plot(
            np.arange(1, len(costs) + 1),
            smooth,
            color=f"C{i + 2}",  # C0 and C1 are the left panel's
            label=f"recording cost: {r['name']}",
        )
    cost_ax.set_xlabel(f"release (PLD accountant, cap eps {CAP.epsilon:g})")
    cost_ax.set_ylabel("CPU ms per release (moving median)")
    cost_ax.set_title("What recording a release costs", fontsize=10)
    title = (
        f"The PLD accountant counts {ks[-1]} Gaussian releases at (1, 1e-5) as "
        f"epsilon {pld_curve[-1]:.1f} instead of {ks[-1]} (basic composition)"
    )
    figure_legend(fig, np.array([ax, cost_ax]), ncol=2, title=title)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "accounting.png", dpi=120)
    plt.close(fig)
    return rows


if __name__ == "__main__":
    cli(main)
