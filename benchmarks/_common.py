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


def figure_legend(fig, axes, ncol=6):
    """One legend below the panels naming every line of every panel.

    Labels are deduplicated in order of first appearance, so a line drawn in
    only some panels (one-vs-rest on the multi-class tasks, say) is named too;
    the panels shrink to leave the legend its room.
    """
    handles = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    ncol = min(ncol, len(handles))
    rows = -(-len(handles) // ncol)
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="lower center",
        ncol=ncol,
        fontsize=9,
        frameon=False,
    )
    bottom = min(0.4, (0.15 + 0.25 * rows) / fig.get_size_inches()[1])
    fig.tight_layout(rect=(0, bottom, 1, 1))


def save_figure(fig, out_dir, name, dpi=100):
    """Lay out ``fig``, write it to ``out_dir/<name>.png`` and close it; the path."""
    fig.tight_layout()
    path = Path(out_dir) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path
