"""Shared helpers for the benchmark scripts: timing, tables, output folder."""

import argparse
import platform
import statistics
import time
from pathlib import Path

import numpy as np


def median_time(fn, repeats=5):
    """Median wall time of ``fn()`` over ``repeats`` calls (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
    import os

    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}"
    )


def cli(main):
    """Run ``main(quick=..., out_dir=...)`` from the command line."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--full", action="store_true", help="full mode (slow)")
    parser.add_argument("--out-dir", default="benchmarks/results")
    args = parser.parse_args()
    main(quick=not args.full, out_dir=args.out_dir)
