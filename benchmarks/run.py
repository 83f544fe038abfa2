"""Run the skdp benchmark suite: quick mode by default, ``--full`` for the papers.

Each ``benchmarks/bench_*.py`` module exposes ``main(quick, out_dir)``; this runner
calls them in order, writes every table and plot to ``--out-dir`` and prints a
summary (time per benchmark, and failures without stopping the others). Last, it
writes the run's front door, ``index.md`` and ``index.html``: one headline table
per question, each figure read from the detail tables (``_index.py``).
"""

import argparse
import importlib
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine_description, markdown_table, write_result  # noqa: E402
from _index import write_index  # noqa: E402

# order: foundation first, the estimators next, the cost benchmarks last
ORDER = [
    "bench_histograms",
    "bench_mechanisms",
    "bench_fm",
    "bench_fm_utility",
    "bench_private_logistic",
    "bench_small_data",
    "bench_label_privacy",
    "bench_symmetric_loss",
    "bench_label_learning",
    "bench_loss_correction",
    "bench_influence",
    "bench_vertical",
    "bench_accounting",
    "bench_federated",
    "bench_statistics_speed",
]


def discover(only=None):
    found = sorted(p.stem for p in HERE.glob("bench_*.py"))
    names = [n for n in ORDER if n in found] + [n for n in found if n not in ORDER]
    if only:
        names = [n for n in names if any(o in n for o in only)]
    return names


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--full", action="store_true", help="full mode (about 20 min on 2 idle cores)"
    )
    parser.add_argument("--out-dir", default="benchmarks/results")
    parser.add_argument("--only", nargs="*", help="run benchmarks whose name contains")
    args = parser.parse_args(argv)
    quick = not args.full
    mode = "quick" if quick else "full"
    print(f"skdp benchmarks, {mode} mode, on {machine_description()}\n")
    summary, failed = [], []
    for name in discover(args.only):
        print(f"\n## {name}\n", flush=True)
        start = time.perf_counter()
        try:
            importlib.import_module(name).main(quick=quick, out_dir=args.out_dir)
            status = "ok"
        except Exception:  # report and go on with the other benchmarks
            traceback.print_exc()
            status = "FAILED"
            failed.append(name)
        summary.append([name, status, f"{time.perf_counter() - start:.1f}"])
    text = (
        f"### Summary ({mode} mode, {machine_description()})\n\n"
        + markdown_table(["benchmark", "status", "seconds"], summary)
        + "\n\nHeadlines: `index.md` (or `index.html`); tables and plots: the "
        "files next to this summary.\n"
    )
    print()
    write_result(args.out_dir, "summary", text)
    try:
        index_md, index_html = write_index(args.out_dir)
        print(f"Headlines: {index_md.resolve()} and {index_html.name}")
    except Exception:  # the tables are written; report the index's failure
        traceback.print_exc()
        failed.append("index")
    # the machine's own path goes to the terminal only, not into a results file
    print(f"Tables and plots: {Path(args.out_dir).resolve()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
