"""FM regression beyond one machine's memory: in-memory fit, fit_chunks and Dask.

Each (method, n) runs in a fresh process so its peak memory is its own: wall time,
total CPU time (client plus workers), the client's peak resident memory and the
largest worker's peak. The data (d = 50 features in [-1, 1], a linear label with
noise) is generated block by block from a seed, so the three methods fit the same
rows: in memory (all blocks concatenated, only where it fits), ``fit_chunks``
(blocks generated one at a time) and ``fit`` on a dask array whose blocks are
generated on the workers of a 2-worker ``LocalCluster(processes=True)``.

On this machine (2 cores) one process is expected to be at least as fast: the
cluster buys reach (data that never has to be in the client's memory, and that can
live on other machines), not speed.
"""

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import (  # noqa: E402
    cli,
    figure_legend,
    machine_description,
    markdown_table,
    pyplot,
    write_result,
)

D = 50
BLOCK_ROWS = 250_000
SEED = 0
# in memory only while the array (and the clipped copy) stays well inside 24 GiB
IN_MEMORY_MAX_BYTES = 2 * 2**30


def make_block(index, rows, d=D, seed=SEED):
    """Rows of block ``index``: the same for every method."""
    rng = np.random.default_rng([seed, index])
    X = rng.uniform(-1.0, 1.0, size=(rows, d))
    w = np.linspace(-1.0, 1.0, d) / np.sqrt(d)
    y = X @ w + 0.1 * rng.standard_normal(rows)
    return X, y


def block_sizes(n):
    sizes = [BLOCK_ROWS] * (n // BLOCK_ROWS)
    if n % BLOCK_ROWS:
        sizes.append(n % BLOCK_ROWS)
    return sizes


def estimator():
    from skdp.linear_model import FMLinearRegression

    return FMLinearRegression(
        epsilon=1.0, bounds_X=(-1.0, 1.0), bounds_y=(-3.0, 3.0), random_state=0
    )


def _rusage_cpu_and_peak():
    """CPU seconds and peak resident memory (MiB) of this process.

    The peak is Linux's VmHWM of this process's own memory map: ``ru_maxrss``
    would carry over the parent's peak across fork and exec.
    """
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return cpu, int(line.split()[1]) / 1024
    except OSError:  # not Linux
        pass
    return cpu, usage.ru_maxrss / 1024


def run_one(method, n):
    """Fit once with ``method`` on n rows; return the measurements (this process)."""
    sizes = block_sizes(n)
    worker_cpu = worker_peak = 0.0
    start = time.perf_counter()
    if method == "in-memory":
        blocks = [make_block(i, rows) for i, rows in enumerate(sizes)]
        X = np.concatenate([b[0] for b in blocks])
        y = np.concatenate([b[1] for b in blocks])
        del blocks
        model = estimator().fit(X, y)
    elif method == "fit_chunks":
        chunks = (make_block(i, rows) for i, rows in enumerate(sizes))
        model = estimator().fit_chunks(chunks)
    elif method == "dask":
        import dask
        import dask.array as da
        from distributed import Client, LocalCluster

        with (
            LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                memory_limit="6GiB",
            ) as cluster,
            Client(cluster) as client,
        ):
            start = time.perf_counter()  # the cluster's start-up is not the fit
            parts = [dask.delayed(make_block)(i, rows) for i, rows in enumerate(sizes)]
            X = da.concatenate(
                [
                    da.from_delayed(p[0], shape=(rows, D), dtype=float)
                    for p, rows in zip(parts, sizes)
                ]
            )
            y = da.concatenate(
                [
                    da.from_delayed(p[1], shape=(rows,), dtype=float)
                    for p, rows in zip(parts, sizes)
                ]
            )
            model = estimator().fit(X, y)
            usage = client.run(_rusage_cpu_and_peak)
            worker_cpu = sum(u[0] for u in usage.values())
            worker_peak = max(u[1] for u in usage.values())
    else:
        raise ValueError(f"unknown method {method!r}")
    wall = time.perf_counter() - start
    cpu, peak = _rusage_cpu_and_peak()
    return {
        "method": method,
        "n": n,
        "wall_s": wall,
        "cpu_s": cpu + worker_cpu,
        "client_peak_mib": peak,
        "worker_peak_mib": worker_peak,
        "coef_head": [float(c) for c in model.coef_[:3]],
    }


def measure(method, n):
    """Run ``run_one`` in a fresh interpreter (a clean peak-memory reading)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(HERE.parent), env.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    out = subprocess.run(
        [sys.executable, __file__, "--one", method, str(n)],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{method} at n={n} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(quick=True, out_dir="benchmarks/results"):
    """FM fit time and memory against n: in memory, fit_chunks, Dask."""
    sizes = [200_000, 1_000_000] if quick else [1_000_000, 5_000_000, 20_000_000]
    rows = []
    results = []
    for n in sizes:
        for method in ("in-memory", "fit_chunks", "dask"):
            if method == "in-memory" and n * D * 8 > IN_MEMORY_MAX_BYTES:
                rows.append([f"{n:,}", method, "does not fit", "", "", ""])
                continue
            r = measure(method, n)
            results.append(r)
            rows.append(
                [
                    f"{n:,}",
                    method,
                    f"{r['wall_s']:.1f}",
                    f"{r['cpu_s']:.1f}",
                    f"{r['client_peak_mib']:.0f}",
                    f"{r['worker_peak_mib']:.0f}" if method == "dask" else "",
                ]
            )
    same = {n: {tuple(r["coef_head"]) for r in results if r["n"] == n} for n in sizes}
    agree = all(len(v) == 1 for v in same.values())
    text = (
        f"### FM regression at scale (d = {D}, {machine_description()})\n\n"
        + markdown_table(
            [
                "n",
                "method",
                "wall s",
                "CPU s (all processes)",
                "client peak MiB",
                "worker peak MiB",
            ],
            rows,
        )
        + "\n\nSame coef_ from every method at each n: "
        + ("yes" if agree else f"NO: {same}")
        + "\nThe cluster's start-up (a few seconds) is not counted; the array of the"
        " largest n would take "
        f"{sizes[-1] * D * 8 / 2**30:.1f} GiB in memory."
    )
    write_result(out_dir, "bench_scale", text)
    plt = pyplot()
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 5.0))
    labels = {
        "in-memory": "fit with all rows in memory",
        "fit_chunks": "fit_chunks (rows streamed in chunks)",
        "dask": "fit on a Dask cluster",
    }
    for method in ("in-memory", "fit_chunks", "dask"):
        pts = [r for r in results if r["method"] == method]
        if not pts:
            continue
        ns = [r["n"] for r in pts]
        ax_t.plot(ns, [r["wall_s"] for r in pts], "o-", label=labels[method])
        ax_m.plot(ns, [r["client_peak_mib"] for r in pts], "o-", label=labels[method])
    for ax, label in ((ax_t, "wall time (s)"), (ax_m, "client peak memory (MiB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows n")
        ax.set_ylabel(label + ", lower is better")
    dask = [r["client_peak_mib"] for r in results if r["method"] == "dask"]
    title = (
        f"On a Dask cluster the client's memory stays at {min(dask):.0f}-"
        f"{max(dask):.0f} MiB whatever n"
        + (", and every method gives the same model" if agree else "")
        if dask
        else "FM regression at scale"
    )
    figure_legend(fig, np.array([ax_t, ax_m]), ncol=3, title=title)
    fig.savefig(Path(out_dir) / "bench_scale.png", dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        print(json.dumps(run_one(sys.argv[2], int(sys.argv[3]))))
    else:
        cli(main)
