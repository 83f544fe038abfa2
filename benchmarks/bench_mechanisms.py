"""Mechanism throughput: values per second at 10^7 values, next to plain numpy."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cli, markdown_table, median_time, write_result  # noqa: E402

from skdp.mechanisms import (  # noqa: E402
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponseMechanism,
)

RR_TARGET = 1e7  # values per second


def main(quick=True, out_dir="benchmarks/results"):
    """Throughput of Laplace, Gaussian and RR next to numpy sampling of equal size."""
    n = 10**7
    repeats = 5
    rng = np.random.default_rng(0)
    values = np.zeros(n)
    codes = rng.integers(0, 4, size=n)
    laplace = LaplaceMechanism(1.0)
    gaussian = GaussianMechanism(1.0, 1e-5)
    rr = RandomizedResponseMechanism(1.0, 4)
    cases = [
        ("Laplace (lattice)", lambda: laplace.randomize(values, rng),
         "numpy rng.laplace", lambda: values + rng.laplace(0, laplace.scale, n)),
        ("Gaussian", lambda: gaussian.randomize(values, rng),
         "numpy rng.normal", lambda: values + rng.normal(0, gaussian.sigma, n)),
        ("RR (k=4)", lambda: rr.randomize(codes, rng),
         "numpy rng.integers", lambda: rng.integers(0, 4, size=n)),
    ]  # fmt: skip
    rows = []
    for name, fn, base_name, base_fn in cases:
        t, tb = median_time(fn, repeats), median_time(base_fn, repeats)
        rows.append([name, f"{n / t:.3g}", base_name, f"{n / tb:.3g}", f"{t / tb:.2f}"])
    table = markdown_table(
        ["mechanism", "values/s", "numpy baseline", "baseline values/s", "slowdown"],
        rows,
    )
    rr_rate = float(rows[2][1])
    verdict = "met" if rr_rate >= RR_TARGET else "NOT met"
    text = (
        f"### Mechanism throughput (n = 10^7 values, median of {repeats} runs)\n\n"
        f"{table}\n\nRR target >= 1e7 values/s: {verdict} ({rr_rate:.3g}).\n"
    )
    write_result(out_dir, "mechanisms", text)
    return rows


if __name__ == "__main__":
    cli(main)
