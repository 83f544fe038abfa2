"""Section 4 of ``bench_vertical.py``: more than two classes across parties.

Real tasks of ``_real_tasks.py`` (digits, 64 pixels in [0, 1], 10 classes;
diamonds cut, 9 columns, 5 classes; declared box ``bounds_X=(0, 1)``), the
columns split into K = 3 contiguous blocks, the label at party 0. Test accuracy
(median over seeds; the 70/30 splits and quick-mode training cap of
``bench_fm_utility``) of the central multinomial ``FMLogisticRegression``,
``VerticalFMClassifier`` top-down at the same eps (default
``noise_generation="threshold"``) and bottom-up (every party's total
``eps^(k) = eps``, split evenly over its own group and its K - 1 pairs), with
the parties' ``party_privacy_``, next to the non-private scikit-learn
``LogisticRegression`` and the majority rate. Run alone with
``python -c "import sys; sys.path.insert(0, 'benchmarks'); import
_vertical_multiclass as m; m.multiclass_main(quick=False)"``.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _real_tasks  # noqa: E402
from _common import (  # noqa: E402
    eps_axis,
    figure_legend,
    markdown_table,
    paired_difference,
    pyplot,
    write_result,
)
from bench_fm_utility import (  # noqa: E402
    QUICK_MAX_TRAIN,
    _split,
    classification_baselines,
)
from sklearn.linear_model import LogisticRegression  # noqa: E402

from skdp.linear_model import FMLogisticRegression  # noqa: E402
from skdp.vertical import VerticalFMClassifier  # noqa: E402

MC_EPS_FULL = [0.5, 1.0, 2.0, 5.0, 10.0]
MC_EPS_QUICK = [1.0, 10.0]
MC_PARTIES = 3
MC_METHODS = ["central FM", "vertical top-down", "vertical bottom-up"]
# central baselines at the same eps (bench_fm_utility's): "n/a" where missing
MC_BASELINES = ["diffprivlib", "AdaSSP"]


def contiguous_partition(d, K):
    """K contiguous column blocks (sizes differ by at most one); party 0 first."""
    return [block.tolist() for block in np.array_split(np.arange(d), K)]


def even_bottom_up(eps, K):
    """Bottom-up budgets where every party's total is ``eps``, split evenly over
    its own group and its ``K - 1`` pairs: ``eps^kl = eps / K`` for every pair,
    so ``eps^k = eps - (K - 1) eps / K = eps / K > 0`` (what
    ``check_bottom_up`` requires: symmetric, 0 diagonal, > 0 off it, a positive
    local remainder). A whole record then costs
    ``K eps / K + K (K - 1) / 2 eps / K = (K + 1) / 2 eps``."""
    pairs = np.full((K, K), eps / K)
    np.fill_diagonal(pairs, 0.0)
    return [float(eps)] * K, pairs


def _multiclass_split(task, seed, quick, eps_list, K):
    """Every method on one 70/30 split; ``{eps: {key: value}}`` and the baselines."""
    Xtr, Xte, ytr, yte = _split(task, seed, quick)
    parts = contiguous_partition(task.d, K)
    common = dict(bounds_X=(0.0, 1.0), classes=np.unique(task.y), random_state=seed)
    sk = LogisticRegression(max_iter=2000).fit(Xtr, ytr)
    _, counts = np.unique(yte, return_counts=True)
    base = {
        "non-private": sk.score(Xte, yte),
        "majority": counts.max() / counts.sum(),
        "FM eps=inf": FMLogisticRegression(**dict(common, epsilon=np.inf))
        .fit(Xtr, ytr)
        .score(Xte, yte),
    }
    cells = {}
    for eps in eps_list:
        central = FMLogisticRegression(epsilon=eps, **common).fit(Xtr, ytr)
        vertical = dict(epsilon=eps, partition=parts, label_party=0, **common)
        dealer = VerticalFMClassifier(noise_generation="dealer", **vertical)
        dealer.fit(Xtr, ytr)
        top = VerticalFMClassifier(**vertical).fit(Xtr, ytr)  # threshold noise
        party_eps, pairs = even_bottom_up(eps, K)
        bottom = VerticalFMClassifier(
            budget="bottom-up",
            party_epsilon=party_eps,
            pairwise_epsilon=pairs,
            **vertical,
        ).fit(Xtr, ytr)
        # the central model at the epsilon a whole record pays bottom-up
        record_eps = bottom.privacy_spent_.epsilon
        central_record = FMLogisticRegression(epsilon=record_eps, **common)
        cells[eps] = {
            "central FM": central.score(Xte, yte),
            "central FM at record eps": central_record.fit(Xtr, ytr).score(Xte, yte),
            "vertical top-down": top.score(Xte, yte),
            "vertical bottom-up": bottom.score(Xte, yte),
            "dealer gap": max(
                np.abs(dealer.coef_ - central.coef_).max(),
                np.abs(dealer.intercept_ - central.intercept_).max(),
            ),
            "top party max": top.party_privacy_.max(),
            "bottom party max": bottom.party_privacy_.max(),
            "bottom label party": bottom.party_privacy_[bottom.label_party_],
            "bottom record": record_eps,
        }
        cells[eps].update(classification_baselines(task, Xtr, ytr, Xte, yte, eps, seed))
    return cells, base, Xtr.shape[0]


def bench_multiclass(task, eps_list, seeds, quick, K=MC_PARTIES):
    """Per-seed values ``{eps: {key: [..]}}``, baselines ``{key: [..]}``, n_train."""
    per = {eps: {} for eps in eps_list}
    base = {}
    for seed in seeds:
        cells, b, n_train = _multiclass_split(task, seed, quick, eps_list, K)
        for eps, cell in cells.items():
            for key, value in cell.items():
                per[eps].setdefault(key, []).append(float(value))
        for key, value in b.items():
            base.setdefault(key, []).append(float(value))
    return per, base, n_train


def _paired(a, b):
    """``mean(a - b) +- s.e.`` over seeds (same split and seed for both)."""
    mean, se = paired_difference(a, b)
    return f"{mean:+.3f} +- {se:.3f}"


def multiclass_table(task, per, base, n_train, n_seeds, K=MC_PARTIES):
    """The markdown table of one task, with its caption."""
    med = {
        eps: {k: float(np.median(v)) for k, v in m.items()} for eps, m in per.items()
    }
    rows = [
        [
            eps,
            *(m[k] for k in MC_METHODS),
            *(m.get(k, "n/a") for k in MC_BASELINES),
            _paired(per[eps]["vertical top-down"], per[eps]["central FM"]),
            _paired(per[eps]["vertical bottom-up"], per[eps]["central FM"]),
            m["central FM at record eps"],
            _paired(
                per[eps]["vertical bottom-up"], per[eps]["central FM at record eps"]
            ),
            m["top party max"],
            m["bottom party max"],
            m["bottom label party"],
            m["bottom record"],
        ]
        for eps, m in med.items()
    ]
    sizes = "/".join(str(len(b)) for b in contiguous_partition(task.d, K))
    gap = max(max(m["dealer gap"]) for m in per.values())
    return (
        f"#### {task.name}: test accuracy, median of {n_seeds} seeds\n\n"
        f"n_train = {n_train}, d = {task.d} split {sizes} over K = {K} parties "
        "(contiguous blocks, labels at party 0), bounds_X = (0, 1); non-private "
        f"LogisticRegression {np.median(base['non-private']):.4g}, majority rate "
        f"{np.median(base['majority']):.4g}, central FM at eps=inf (the Taylor "
        f"surrogate's ceiling) {np.median(base['FM eps=inf']):.4g}. Differences: "
        "mean over seeds of vertical minus central on the same split +- s.e.; "
        "party eps columns are party_privacy_ (a neighbour changing one party's "
        "part of a record); bottom-up record eps = privacy_spent_ (a whole "
        "record). Check of this run: top-down with noise_generation='dealer' "
        "and the central model's random_state equals the central model up "
        "to the floating-point summation order (max |coef difference| over all "
        f"cells {gap:.3g}).\n\n"
        + markdown_table(
            [
                "eps",
                *MC_METHODS,
                *(f"{k} (central)" for k in MC_BASELINES),
                "top-down - central",
                "bottom-up - central",
                "central FM at bottom-up record eps",
                "bottom-up - central at record eps",
                "top-down party eps (max)",
                "bottom-up party eps (max)",
                "bottom-up party eps (label party)",
                "bottom-up record eps",
            ],
            rows,
        )
    )


MC_CAPTION = (
    "### More than two classes: vertical multinomial FM against the central one\n\n"
    "Laplace noise, one multinomial (softmax Taylor) release; plaintext backend, "
    "the same arithmetic as bfv (which adds the encryption and a fixed-point "
    "encoding of the statistics). diffprivlib (when it imports) and AdaSSP are "
    "the central baselines of bench_fm_utility at the same eps (one-vs-rest at "
    "eps / C). **Top-down** spends the same eps as the central "
    "model on a whole record. With noise_generation='dealer' and the same "
    "random_state its release *is* the central one (tests/vertical/"
    "test_multinomial.py; checked again on every cell below), so any gap between "
    "the two columns is the noise generation: the column shows the default "
    "'threshold', where each party of a pair adds a full share of the noise to "
    "their cross coefficients (so that a party colluding with the server still "
    "faces the whole mechanism), which doubles the noise variance of every cross "
    "coefficient. **Bottom-up** gives every party a total eps^(k) = eps "
    "(party_epsilon) split evenly over its own coefficients and its pairs "
    "(eps^k = eps^kl = eps / K): each coefficient group is noised at eps / K and "
    "its own (smaller) sensitivity. It buys a guarantee each party sets for "
    "itself, and pays for it: a whole record costs (K + 1) / 2 eps = 2 eps for "
    "K = 3 (bottom-up record eps), and party k's guarantee is eps (the label "
    "party's less), looser than the party_privacy_ top-down at the same eps "
    "already gives every party (the party eps columns). Its noise is therefore "
    "compared twice: with the central model at the same eps (the party's "
    "budget) and at the bottom-up record eps (the same guarantee for a whole "
    "record)."
)


def multiclass_section(quick):
    """The multi-class tables (markdown) and the plot data, for both tasks."""
    eps_list = MC_EPS_QUICK if quick else MC_EPS_FULL
    seeds = range(2 if quick else 10)
    results, tables = [], []
    for make in (_real_tasks.digits, _real_tasks.diamonds_cut):
        task = make()
        per, base, n_train = bench_multiclass(task, eps_list, seeds, quick)
        tables.append(multiclass_table(task, per, base, n_train, len(seeds)))
        results.append((task, per, base))
    cap = f" Training sets capped at {QUICK_MAX_TRAIN} rows (quick mode)." * quick
    return "\n\n".join([MC_CAPTION + cap, *tables]), results


def multiclass_main(quick=True, out_dir="benchmarks/results"):
    """Run the multi-class section alone: ``vertical_multiclass.md`` and ``.png``.

    ``python -c "import sys; sys.path.insert(0, 'benchmarks'); import
    bench_vertical as b; b.multiclass_main(quick=False)"``
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        text, results = multiclass_section(quick)
    mode = "quick" if quick else "full"
    title = f"## Vertical functional mechanism, multi-class section ({mode} mode)"
    write_result(out_dir, "vertical_multiclass", f"{title}\n\n{text}")
    plot_multiclass(results, out_dir)
    return results


def plot_multiclass(results, out_dir):
    plt = pyplot()
    fig, axes = plt.subplots(
        1, len(results), figsize=(5 * len(results), 4.6), squeeze=False
    )
    gap = 0.0
    for ax, (task, per, base) in zip(axes.flat, results):
        eps = list(per)
        for method, style, label in zip(
            MC_METHODS,
            ("o-", "s--", "^:"),
            (
                "central FM on the pooled data",
                "vertical top-down, threshold noise (default)",
                "vertical bottom-up (each party sets its eps)",
            ),
        ):
            ax.plot(eps, [np.median(per[e][method]) for e in eps], style, label=label)
        central = [np.median(per[e][MC_METHODS[0]]) for e in eps]
        top_down = [np.median(per[e][MC_METHODS[1]]) for e in eps]
        gap = max(gap, max(c - t for c, t in zip(central, top_down)))
        ax.axhline(
            np.median(base["non-private"]), color="k", lw=1, label="non-private fit"
        )
        ax.axhline(
            np.median(base["majority"]),
            color="gray",
            ls=":",
            label="predict the majority class",
        )
        eps_axis(ax, eps)
        ax.set(ylabel="test accuracy (higher is better)", title=task.name)
    title = (
        "Split over 3 parties, the default vertical model loses at most "
        f"{gap:.3f} accuracy against the central one (same eps)"
    )
    figure_legend(fig, axes, ncol=3, title=title)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    fig.savefig(Path(out_dir) / "vertical_multiclass.png", dpi=120)
    plt.close(fig)
