"""The functional mechanism over vertically partitioned parties.

Three measurements (issue 7; issue 14 for the noise generations):

1. bfv backend cost: n = 10^5 rows, d = 20 columns over K = 4 parties (5 each),
   linear and logistic: wall time of one fit and the bytes each participant
   sends and receives, read from the driver's transcript (every role runs its
   federated code in one process), and the time a 100 Mbit/s link would add
   (target <= 60 s per fit on 2 cores).
2. plaintext backend fit time against the centralized estimator on the same data
   (target <= 1.5x).
3. Utility against K (seed Table 2 setting): synthetic d = 800 with coefficient
   sparsity 0.1 / 0.5 / 1.0 at epsilon = 1, plaintext backend, K in {2, 4, 8}:
   test MSE must not change with K. "dealer" noise is drawn exactly as the
   centralized estimator draws it (so the MSE equals the centralized one up to the
   per-party norm clipping); "distributed" noise is the sum of the parties'
   shares (same distribution, other draws); "threshold" (the default) gives every
   share of a cross coefficient the full noise, so a party colluding with the
   server still faces the whole mechanism (twice the variance on those
   coefficients). Medians over seeds. Next to the centralized FM (Laplace,
   pure eps) the table shows AdaSSP (``_adassp.py``, Wang 2018), the
   centralized (eps, delta) baseline a user would compare with, at epsilon = 1
   and delta = min(1 / n^2, 1e-5) on the domain the FM estimators declare
   (``data_norm=1``, ``bounds_y=(-1, 1)``, with intercept: rows scaled to the
   unit ball, an intercept column ``c = 1``, ``R = sqrt(2)``, ``B = 1``).

4. More than two classes (real tasks of ``_real_tasks.py``: digits, 64 pixels
   in [0, 1], 10 classes; diamonds cut, 9 columns, 5 classes; declared box
   ``bounds_X=(0, 1)``): the columns split into K = 3 contiguous blocks, the
   label at party 0; test accuracy (median over seeds, the 70/30 splits and the
   quick-mode training cap of ``bench_fm_utility``) of the central multinomial
   ``FMLogisticRegression``, ``VerticalFMClassifier`` top-down at the same eps
   (default ``noise_generation="threshold"``) and bottom-up (every party's
   total ``eps^(k) = eps``, split evenly over its own group and its K - 1 pairs:
   ``eps^k = eps^kl = eps / K``), with the parties' ``party_privacy_``, next to
   the non-private scikit-learn ``LogisticRegression`` and the majority rate.
   Plaintext backend: the same arithmetic as bfv (which only adds the
   encryption and a fixed-point encoding). ``_vertical_multiclass.py``;
   its ``multiclass_main`` runs this section alone.

BLAS runs single-threaded here: on this shared 2-core machine a threaded
``eigvalsh`` of an 800 x 800 matrix was measured 60x slower under load.
"""

import importlib
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _adassp import AdaSSP  # noqa: E402
from _common import (  # noqa: E402
    cli,
    delta_for,
    figure_legend,
    markdown_table,
    pyplot,
    write_result,
)
from _vertical_multiclass import multiclass_section, plot_multiclass  # noqa: E402

from skdp.datasets import make_private_classification, make_private_regression  # noqa: E402
from skdp.linear_model import FMLinearRegression  # noqa: E402
from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor  # noqa: E402

LINEAR_WEIGHT = 0.5  # explicit: the "auto" search costs seconds at d = 800


LINK_BITS_PER_S = 100e6


def installed(*modules):
    """True if every module imports (the optional backends: skip what is missing)."""
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError:
        return False
    return True


def mb(nbytes):
    return nbytes / 1e6


def bytes_per_participant(transcript):
    """Rows ``(participant, MB sent, MB received, messages sent, link s)`` from a
    :class:`~skdp.vertical.Transcript`; ``link s`` is the time the participant's
    traffic needs on a full-duplex 100 Mbit/s link (the larger direction)."""
    return [
        [p, mb(s), mb(r), m, max(s, r) * 8 / LINK_BITS_PER_S]
        for p, s, r, m in transcript.summary()
    ]


def link_seconds(transcript):
    """Time the busiest participant's traffic adds on a 100 Mbit/s link."""
    return max(row[-1] for row in bytes_per_participant(transcript))


def bench_bfv(n, d=20, K=4, objectives=("linear", "logistic")):
    """Wall time and bytes of one bfv fit, linear and logistic."""
    rows, per_party = [], {}
    for name, make, cls in [
        ("linear", make_private_regression, VerticalFMRegressor),
        ("logistic", make_private_classification, VerticalFMClassifier),
    ]:
        if name not in objectives:
            continue
        X, y, _, parts = make(n, d, n_parties=K, random_state=0)
        kw = {"bounds_y": (-1, 1)} if name == "linear" else {"classes": [0, 1]}
        est = cls(
            epsilon=1.0,
            data_norm=1.0,
            linear_weight=LINEAR_WEIGHT,
            partition=parts,
            secure_backend="bfv",
            random_state=0,
            **kw,
        )
        start = time.perf_counter()
        est.fit(X, y)
        wall = time.perf_counter() - start
        t = est.transcript_
        sent = t.bytes_sent()
        label = f"party {est.label_party_}"
        others = [v for k, v in sent.items() if k not in ("server", label)]
        rows.append(
            [
                name,
                n,
                d,
                K,
                wall,
                mb(t.total_bytes),
                mb(sent.get("server", 0)),
                mb(sent[label]),
                mb(np.mean(others)),
                mb(t.bytes_received()["server"]),
                link_seconds(t),
            ]
        )
        per_party[name] = bytes_per_participant(t)
    return rows, per_party


def bench_plaintext_speed(n, d=20, K=4, repeats=3):
    """Median fit time of the plaintext backend and the centralized estimator."""
    X, y, _, parts = make_private_regression(n, d, n_parties=K, random_state=1)
    common = dict(
        epsilon=1.0, data_norm=1.0, bounds_y=(-1, 1), linear_weight=LINEAR_WEIGHT
    )
    central = FMLinearRegression(random_state=0, **common)
    vertical = VerticalFMRegressor(partition=parts, random_state=0, **common)
    out = []
    for name, est in [("centralized", central), ("vertical plaintext", vertical)]:
        est.fit(X, y)  # warm-up (and the memoized sensitivity)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            est.fit(X, y)
            times.append(time.perf_counter() - start)
        out.append((name, float(np.median(times))))
    return [[name, n, d, K, sec, sec / out[0][1]] for name, sec in out]


def bench_k_table(n, n_test, d, sparsities, Ks, seeds):
    """Test MSE against K (plaintext backend, epsilon = 1)."""
    rows, curves = [], {}
    common = dict(
        epsilon=1.0, data_norm=1.0, bounds_y=(-1, 1), linear_weight=LINEAR_WEIGHT
    )
    for s in sparsities:
        X, y, _ = make_private_regression(
            n + n_test, d, sparsity=s, random_state=100 + int(10 * s)
        )
        Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]

        def mse(est, Xte=Xte, yte=yte):
            return float(np.mean((est.predict(Xte) - yte) ** 2))

        baseline = float(np.mean((yte - ytr.mean()) ** 2))
        central = mse(FMLinearRegression(random_state=0, **common).fit(Xtr, ytr))
        exact = mse(FMLinearRegression(**dict(common, epsilon=np.inf)).fit(Xtr, ytr))
        adassp = mse(
            AdaSSP(
                common["epsilon"],
                delta_for(n),
                bounds_X=None,
                bounds_y=common["bounds_y"],
                data_norm=common["data_norm"],
                random_state=0,
            ).fit(Xtr, ytr)
        )
        for K in Ks:
            parts = make_private_regression(2, d, n_parties=K, random_state=0)[3]
            dealer = VerticalFMRegressor(
                partition=parts, noise_generation="dealer", random_state=0, **common
            ).fit(Xtr, ytr)
            dist, thresh = (
                [
                    mse(
                        VerticalFMRegressor(
                            partition=parts,
                            noise_generation=generation,
                            random_state=seed,
                            **common,
                        ).fit(Xtr, ytr)
                    )
                    for seed in seeds
                ]
                for generation in ("distributed", "threshold")
            )
            clipped = _clipped_fraction(Xtr, parts)
            rows.append(
                [
                    s,
                    K,
                    exact,
                    central,
                    adassp,
                    mse(dealer),
                    float(np.median(dist)),
                    float(np.median(thresh)),
                    float(np.min(thresh)),
                    float(np.max(thresh)),
                    baseline,
                    clipped,
                ]
            )
            curves.setdefault(s, []).append(
                (
                    K,
                    mse(dealer),
                    float(np.median(dist)),
                    float(np.median(thresh)),
                    adassp,
                )
            )
    return rows, curves


def bench_noise_generation(n, n_test, d=20, K=4, epsilons=(0.3, 1.0, 3.0), seeds=5):
    """Test MSE of the three noise generations (plaintext backend, linear):
    what resisting a party that colludes with the server costs in utility."""
    X, y, _, parts = make_private_regression(n + n_test, d, n_parties=K, random_state=7)
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    rows = []
    for eps in epsilons:
        common = dict(
            epsilon=eps,
            data_norm=1.0,
            bounds_y=(-1, 1),
            linear_weight=LINEAR_WEIGHT,
            partition=parts,
        )
        row = [eps, n, d, K]
        for generation in ("dealer", "distributed", "threshold"):
            mses = [
                float(
                    np.mean(
                        (
                            VerticalFMRegressor(
                                noise_generation=generation, random_state=seed, **common
                            )
                            .fit(Xtr, ytr)
                            .predict(Xte)
                            - yte
                        )
                        ** 2
                    )
                )
                for seed in range(seeds)
            ]
            row.append(float(np.median(mses)))
        row.append(float(np.mean((yte - ytr.mean()) ** 2)))
        rows.append(row)
    return rows


def _clipped_fraction(X, parts):
    """Rows some party shrinks (its block exceeds data_norm sqrt(d_k / d))."""
    d = X.shape[1]
    hit = np.zeros(X.shape[0], bool)
    for cols in parts:
        hit |= np.linalg.norm(X[:, cols], axis=1) > np.sqrt(len(cols) / d)
    return float(hit.mean())


# ------------------------------------------------------------------ multi-class
def main(quick=True, out_dir="benchmarks/results"):
    """bfv cost, plaintext speed, the utility-vs-K table and the multi-class one."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return _main(quick, out_dir)


def _main(quick, out_dir):
    sections = []
    bfv_rows = per_party = None
    if installed("tenseal"):
        if quick:  # a tiny run: the cost is mostly per coefficient, not per row
            bfv_rows, per_party = bench_bfv(2_000, objectives=("linear",))
        else:
            bfv_rows, per_party = bench_bfv(100_000)
        sections.append(
            "### bfv backend: one fit (TenSEAL BFV, N = 8192, 128-bit)\n\n"
            + markdown_table(
                [
                    "objective",
                    "n",
                    "d",
                    "K",
                    "wall s",
                    "total MB",
                    "server sent MB",
                    "label party sent MB",
                    "other party sent MB (mean)",
                    "server received MB",
                    "100 Mbit/s link s",
                ],
                bfv_rows,
            )
        )
        for name, summary in per_party.items():
            sections.append(
                f"Bytes per participant ({name}):\n\n"
                + markdown_table(
                    [
                        "participant",
                        "sent MB",
                        "received MB",
                        "messages sent",
                        "100 Mbit/s link s",
                    ],
                    summary,
                )
            )
    else:
        sections.append("bfv backend skipped: tenseal not installed (skdp[secure]).")
    speed = bench_plaintext_speed(100_000 if not quick else 50_000)
    sections.append(
        "### plaintext backend against the centralized estimator (median fit)\n\n"
        + markdown_table(["estimator", "n", "d", "K", "fit s", "ratio"], speed)
    )
    gen_rows = bench_noise_generation(
        n=20_000 if quick else 100_000, n_test=5_000, seeds=5 if quick else 20
    )
    sections.append(
        "### Noise generation: test MSE (linear, plaintext backend, median over "
        "seeds)\n\n"
        + markdown_table(
            [
                "epsilon",
                "n",
                "d",
                "K",
                "dealer",
                "distributed",
                "threshold (default)",
                "predict mean",
            ],
            gen_rows,
        )
    )
    k_n = 2_000 if quick else 100_000
    k_rows, curves = bench_k_table(
        n=k_n,
        n_test=2_000 if quick else 20_000,
        d=800,
        sparsities=[0.1, 0.5, 1.0],
        Ks=[2, 4, 8],
        seeds=[0, 1] if quick else [0, 1, 2, 3, 4],
    )
    sections.append(
        "### Test MSE against K (d = 800, epsilon = 1, plaintext backend)\n\n"
        f"n = {k_n}. AdaSSP (Wang 2018) is the centralized (eps, delta) baseline at "
        f"eps = 1, delta = min(1/n^2, 1e-5) = {delta_for(k_n):.3g}, on the domain "
        "the FM estimators declare (data_norm = 1, bounds_y = (-1, 1)); the FM "
        "columns are pure eps (Laplace).\n\n"
        + markdown_table(
            [
                "sparsity",
                "K",
                "MSE eps=inf",
                "MSE centralized FM",
                "MSE AdaSSP (centralized)",
                "MSE vertical (dealer noise)",
                "MSE vertical (distributed, median)",
                "MSE vertical (threshold, median)",
                "threshold min",
                "threshold max",
                "MSE predict mean",
                "rows clipped per party",
            ],
            k_rows,
        )
    )
    mc_text, mc_results = multiclass_section(quick)
    sections.append(mc_text)
    mode = "quick" if quick else "full"
    text = f"## Vertical functional mechanism ({mode} mode)\n\n" + "\n\n".join(sections)
    write_result(out_dir, "vertical", text)
    _plot(curves, per_party, out_dir)
    plot_multiclass(mc_results, out_dir)
    return {
        "bfv": bfv_rows,
        "speed": speed,
        "noise_generation": gen_rows,
        "k_table": k_rows,
        "multiclass": mc_results,
    }


def _plot(curves, per_party, out_dir):
    plt = pyplot()
    fig, axes = plt.subplots(
        1, len(curves), figsize=(4.4 * len(curves), 4.6), squeeze=False
    )
    worst = 0.0
    for ax, (s, points) in zip(axes.flat, curves.items()):
        Ks, dealer, dist, thresh, adassp = zip(*points)
        ax.plot(Ks, dealer, "o-", color="C0", label="vertical, noise from a dealer")
        ax.plot(Ks, dist, "s--", color="C1", label="vertical, distributed noise")
        ax.plot(
            Ks, thresh, "^:", color="C2", label="vertical, threshold noise (default)"
        )
        ax.axhline(
            adassp[0],
            color="C3",
            lw=0.8,
            label="AdaSSP on the pooled data ((eps, delta))",
        )
        worst = max(worst, max(t / d for t, d in zip(thresh, dealer)))
        ax.set_xlabel("number of parties K")
        ax.set_ylabel("test MSE (lower is better)")
        ax.set_xticks(list(Ks))
        ax.set_title(f"sparsity {s}", fontsize=10)
    title = (
        "Vertical FM (d = 800, eps = 1): the default threshold noise costs at most "
        f"{100 * (worst - 1):.1f}% test MSE\nagainst noise from a trusted dealer, "
        "for up to 8 parties"
    )
    figure_legend(fig, axes, ncol=2, title=title)
    fig.savefig(Path(out_dir) / "vertical_k.png", dpi=120)
    plt.close(fig)
    if per_party:
        fig, ax = plt.subplots(figsize=(6, 4.2))
        width = 0.4
        top = (0.0, "")
        for i, (name, summary) in enumerate(per_party.items()):
            names = [p for p, *_ in summary]
            sent = [mb for _, mb, *_ in summary]
            ax.bar(
                np.arange(len(names)) + i * width, sent, width, label=f"{name} model"
            )
            top = max(top, max(zip(sent, names)))
        ax.set_xticks(np.arange(len(names)) + width / 2, names, fontsize=7)
        ax.set_ylabel("MB sent per fit (bfv encryption)")
        ax.legend(fontsize=8)
        ax.set_title(
            f"Traffic of one encrypted vertical fit: at most {top[0]:.1f} MB sent\n"
            f"by one participant ({top[1]})",
            fontsize=10,
        )
        fig.tight_layout()
        fig.savefig(Path(out_dir) / "vertical_bytes.png", dpi=120)
        plt.close(fig)


if __name__ == "__main__":
    cli(main)
