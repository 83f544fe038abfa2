"""Shared helpers for the benchmark scripts: timing, tables, output folder.

The benchmarks opt in to reproducible noise (``SKDP_REPRODUCIBLE_NOISE=1``, unless
the environment already says otherwise): they run on public or synthetic data, and
their tables must reproduce from the seeds they print. That is the opt-in's purpose
(tests and papers); its per-release ``ReproducibleNoiseWarning`` is silenced here.
Set ``SKDP_REPRODUCIBLE_NOISE=0`` to run them on fresh noise.
"""

import argparse
import os
import platform
import statistics
import time
import warnings
from pathlib import Path

import numpy as np

os.environ.setdefault("SKDP_REPRODUCIBLE_NOISE", "1")
warnings.filterwarnings("ignore", message="reproducible noise is on")


def delta_for(n_train):
    """The delta of every (eps, delta) method in the benchmarks: min(1/n^2, 1e-5).

    delta = 1 / n would allow a mechanism that publishes one whole record (each
    with probability 1 / n), so delta must be well below 1 / n; 1 / n^2 is the
    usual choice, and 1e-5 caps it for small n.
    """
    return min(1.0 / n_train**2, 1e-5)


def paired_difference(a, b):
    """Mean and standard error over seeds of ``a - b`` (same split and seed for
    both); the standard error is NaN for a single seed."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else np.nan
    return float(diff.mean()), float(se)


def median_time(fn, repeats=5):
    """Median wall time of ``fn()`` over ``repeats`` calls (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def progress(iterable, desc, total=None):
    """A tqdm progress bar on stderr (bench extra); the plain iterable without it."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, desc=desc, total=total, leave=False, mininterval=1.0)


def pyplot():
    """matplotlib's pyplot on the Agg backend (files only, no screen needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def markdown_table(header, rows):
    """Render rows (lists of cells) as a Markdown table."""

    def cell(v):
        if isinstance(v, float | np.floating):
            return f"{v:.4g}"
        return str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_result(out_dir, name, text):
    """Print ``text`` and write it to ``out_dir/name.md``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(text + "\n")
    print(text)
    return out / f"{name}.md"


def machine_description():
    noise = os.environ.get("SKDP_REPRODUCIBLE_NOISE", "")
    seeded = (
        "seeded noise"
        if noise.strip().lower() in {"1", "true", "yes", "on"}
        else "fresh noise"
    )
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}, {seeded}"
    )


def cli(main):
    """Run ``main(quick=..., out_dir=...)`` from the command line."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--full", action="store_true", help="full mode (slow)")
    parser.add_argument("--out-dir", default="benchmarks/results")
    args = parser.parse_args()
    main(quick=not args.full, out_dir=args.out_dir)


# Declared (public) ranges of Adult's numeric columns: from the data description and
# common sense, never from the data. Values outside are clipped.
ADULT_NUMERIC_RANGES = {
    "age": (17, 90),
    "fnlwgt": (0, 1.5e6),
    "education-num": (1, 16),
    "capital-gain": (0, 1e5),
    "capital-loss": (0, 5000),
    "hours-per-week": (1, 99),
}
# education duplicates education-num; native-country adds 40 sparse columns
ADULT_DROPPED = ("education", "native-country")


def adult_unit_features():
    """Adult (no missing rows) encoded so that every row has ||x||_2 <= 1.

    Numeric columns are mapped from their declared range to [0, 1] and clipped;
    categoricals are one-hot over the levels of the train split (the level sets are
    part of the public data description); every row is divided by sqrt(k), k the
    number of original columns kept, so a row has at most k non-zeros, each <= 1,
    and norm <= 1 by construction.

    Returns
    -------
    Xtr, ytr, Xte, yte, k
    """
    from skdp.datasets import load_adult

    train = load_adult(split="train", drop_missing=True)
    test = load_adult(split="test", drop_missing=True)
    names = train.feature_names
    categorical = [c for c in train.categorical_features if c not in ADULT_DROPPED]
    blocks = {"train": [], "test": []}
    for split, bunch in (("train", train), ("test", test)):
        for c, (lo, hi) in ADULT_NUMERIC_RANGES.items():
            col = bunch.data[:, names.index(c)].astype(float)
            blocks[split].append(np.clip((col - lo) / (hi - lo), 0, 1)[:, None])
        for c in categorical:
            levels = np.unique(train.data[:, names.index(c)].astype(str))
            col = bunch.data[:, names.index(c)].astype(str)
            blocks[split].append((col[:, None] == levels).astype(float))
    k = len(ADULT_NUMERIC_RANGES) + len(categorical)
    Xtr = np.hstack(blocks["train"]) / np.sqrt(k)
    Xte = np.hstack(blocks["test"]) / np.sqrt(k)
    return Xtr, train.target, Xte, test.target, k


def optional_diffprivlib():
    """IBM's diffprivlib for the comparison columns, if it imports here.

    Returns ``(version, LinearRegression, LogisticRegression, error)``: the version
    and its two models, or ``None`` for each and the import error (diffprivlib
    0.6.6 fails at import time on scikit-learn >= 1.8).
    """
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import diffprivlib
            from diffprivlib.models import LinearRegression, LogisticRegression
    except Exception as exc:  # ImportError, or its import-time sklearn breakage
        return None, None, None, f"{type(exc).__name__}: {str(exc)[:120]}"
    return diffprivlib.__version__, LinearRegression, LogisticRegression, ""


def figure_legend(fig, axes, ncol=6, title=None):
    """One legend below the panels naming every line of every panel, and the
    figure's ``title`` (its claim) above them.

    Labels are deduplicated in order of first appearance, so a line drawn in
    only some panels (one-vs-rest on the multi-class tasks, say) is named too;
    the panels shrink to leave the legend and the title their room.
    """
    handles = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    # about 3.2 inches per legend column, so that the legend fits the figure
    ncol = max(1, min(ncol, len(handles), int(fig.get_size_inches()[0] / 3.2)))
    rows = -(-len(handles) // ncol)
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="lower center",
        ncol=ncol,
        fontsize=9,
        frameon=False,
    )
    height = fig.get_size_inches()[1]
    bottom = min(0.4, (0.15 + 0.25 * rows) / height)
    top = 1.0
    if title:
        n_lines = title.count("\n") + 1
        fig.suptitle(title, fontsize=11)
        top = 1 - 0.02 * n_lines / height
    fig.tight_layout(rect=(0, bottom, 1, top))


def plot_clipped(ax, x, y, ceiling, fmt="o-", label=None, **kw):
    """Plot ``y`` against ``x`` with every value above ``ceiling`` drawn on it.

    A clipped point is an open up-triangle at the ceiling, annotated
    ``clipped: <value>``, so a blow-up is marked instead of squashing the other
    lines (see :func:`mark_clipped_axis`). ``None`` values are not drawn.
    Returns the number of clipped points.
    """
    x = np.asarray(x, float)
    y = np.asarray([np.nan if v is None else v for v in y], float)
    (line,) = ax.plot(x, np.minimum(y, ceiling), fmt, label=label, **kw)
    over = y > ceiling
    if not over.any():
        return 0
    colour = line.get_color()
    ax.plot(
        x[over],
        np.full(over.sum(), ceiling),
        linestyle="none",
        marker="^",
        markersize=9,
        markerfacecolor="white",
        markeredgecolor=colour,
    )
    stack = ax.__dict__.setdefault("_skdp_clipped", {})
    for xi, yi in zip(x[over], y[over]):
        k = stack.get(xi, 0)
        stack[xi] = k + 1
        ha = (
            "left"
            if xi == np.nanmin(x)
            else "right"
            if xi == np.nanmax(x)
            else "center"
        )
        ax.annotate(
            f"clipped: {yi:.3g}",
            (xi, ceiling),
            textcoords="offset points",
            xytext=(0, -14 - 10 * k),
            ha=ha,
            fontsize=7,
            color=colour,
        )
    return int(over.sum())


def eps_axis(ax, eps, label="epsilon"):
    """A log x axis with a tick at each measured eps, labelled plainly (0.5,
    not 5 x 10^-1)."""
    eps = [float(e) for e in eps if np.isfinite(float(e))]
    ax.set_xscale("log")
    ax.set_xticks(eps)
    ax.set_xticklabels([f"{e:g}" for e in eps])
    ax.xaxis.set_minor_formatter(
        __import__("matplotlib.ticker", fromlist=["NullFormatter"]).NullFormatter()
    )
    ax.set_xlabel(label)


def mark_clipped_axis(ax, ceiling, what="the axis is cut here"):
    """Mark the y axis of ``ax`` as cut at ``ceiling``: break marks on both
    spines, a dashed line and a label; the axis stops just above it."""
    ax.axhline(ceiling, color="0.5", lw=0.8, ls=(0, (4, 3)))
    trans = ax.get_yaxis_transform()  # x in axes coordinates, y in data
    for x0 in (0.0, 1.0):
        ax.plot(
            [x0 - 0.015, x0 + 0.015],
            [ceiling / 1.12, ceiling * 1.12]
            if ax.get_yscale() == "log"
            else [ceiling * 0.98, ceiling * 1.02],
            transform=trans,
            color="k",
            lw=1.2,
            clip_on=False,
        )
    ax.text(
        0.5,
        ceiling,
        f" {what} ",
        transform=trans,
        fontsize=7,
        ha="center",
        va="bottom",
        color="0.3",
    )
    lo, _ = ax.get_ylim()
    ax.set_ylim(lo, ceiling * (1.6 if ax.get_yscale() == "log" else 1.05))


def save_figure(fig, out_dir, name, dpi=100, layout=True):
    """Lay out ``fig`` (unless ``layout=False``: already laid out, e.g. by
    :func:`figure_legend`), write it to ``out_dir/<name>.png`` and close it;
    the path."""
    if layout:
        fig.tight_layout()
    path = Path(out_dir) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path
