"""Memory and CPU of OPLogisticRegression.fit against scikit-learn (issue 34, item 4).

For n in {10^5, 10^6} rows (``--full``) and d = 20 features uniform in
[-1, 1] (labels from a logistic model), each fit runs in its own child process
(so one fit's freed memory or warmed caches do not flatter the next) with one
BLAS thread, and reports

- **peak beyond X**: the largest amount of memory allocated during ``fit``
  above what was allocated when ``fit`` started (``tracemalloc``, which numpy
  reports its array buffers to), in MiB and as a multiple of X's own size
  (``n d 8`` bytes);
- **CPU**: ``time.process_time`` (every thread of the child) of the ``fit``
  call, and the ratio of the n = 10^6 CPU to the n = 10^5 CPU (10 means
  linear in n). skdp's calibration (ridge and noise from public quantities:
  the same work at every n, cached) is run and timed first ("calib"), so
  "fit CPU" is the part that reads the data.

Estimators: skdp's ``OPLogisticRegression(epsilon=1, delta=1e-12,
bounds_X=(-1, 1), classes=range(C))`` (``--classes C``, default 2) from this
checkout ("after") and, with
``--before DIR``, from another source tree (e.g. the commit before the change,
extracted with ``git archive acd4f11 skdp | tar -x -C DIR``); scikit-learn's
``LogisticRegression()`` (lbfgs, default tolerance) on the same X.

Target (issue 34): OP's peak beyond X at most 2x X's size, CPU linear in n.

Usage (full mode: n in {10^5, 10^6}; quick mode, the default and
``benchmarks/run.py``'s: n in {10^4, 10^5})::

    python benchmarks/bench_op_memory.py --full [--before DIR] [--classes C]
"""

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
D = 20


def _data(n, seed=0, classes=2):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, D))
    if classes > 2:
        W = rng.standard_normal((classes, D)) / 2
        return X, np.argmax(X @ W.T + rng.gumbel(size=(n, classes)), axis=1)
    w = rng.standard_normal(D) / 2
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(X @ w + 0.3)))).astype(int)
    return X, y


def _child(which, n, src, classes):
    os.environ["SKDP_REPRODUCIBLE_NOISE"] = "1"
    if src:
        sys.path.insert(0, src)
    import warnings

    import numpy as np
    from threadpoolctl import threadpool_limits

    X, y = _data(n, classes=classes)
    if which == "sklearn":
        from sklearn.linear_model import LogisticRegression

        est = LogisticRegression()
        where = "sklearn"
    else:
        import skdp
        from skdp.linear_model import OPLogisticRegression

        est = OPLogisticRegression(
            epsilon=1.0,
            delta=1e-12,
            bounds_X=(-1.0, 1.0),
            classes=list(range(classes)),
            random_state=0,
        )
        where = str(Path(skdp.__file__).parent.parent)
    calib = 0.0
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if which != "sklearn":
            # the calibration (ridge choice, sigma by bisection) costs the same
            # at every n and is cached: timed apart, so that "fit" is the part
            # that reads the data
            from skdp.linear_model._op_calibration import calibrate
            from skdp.linear_model._op_problem import op_domain, op_problem

            calib = time.process_time()
            domain = op_domain(est._resolve_declared_domain(D, X, y))
            problem = op_problem(domain, n, classes, est.epsilon)
            calibrate(problem, est.epsilon, est.delta, est.alpha)
            calib = time.process_time() - calib
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        cpu = time.process_time()
        est.fit(X, y)
        cpu = time.process_time() - cpu
        peak = tracemalloc.get_traced_memory()[1] - start
        tracemalloc.stop()
    coef = np.r_[np.ravel(est.coef_), np.ravel(est.intercept_)]
    print(
        json.dumps(
            {
                "peak": peak,
                "cpu": cpu,
                "calib": calib,
                "x_bytes": X.nbytes,
                "where": where,
                "coef": coef.tolist(),
                "grad": float(getattr(est, "gradient_norm_", float("nan"))),
                "tau": float(getattr(est, "gradient_tolerance_", float("nan"))),
            }
        )
    )


def _run(which, n, src="", classes=2):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, __file__, "--child", which, str(n), src, str(classes)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=env,
        timeout=1800,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(quick=True, out_dir="benchmarks/results", before="", classes=2, ns=None):
    """Peak memory beyond X and CPU of OP's fit against scikit-learn."""
    sys.path.insert(0, str(HERE))
    from _common import machine_description, markdown_table, write_result

    if ns is None:
        ns = [10_000, 100_000] if quick else [100_000, 1_000_000]
    runs = [("skdp OP after", "skdp", str(ROOT))]
    if before:
        runs.insert(0, ("skdp OP before", "skdp", before))
    runs.append(("sklearn LogisticRegression", "sklearn", ""))
    results = {}
    for label, which, src in runs:
        for n in ns:
            results[label, n] = _run(which, n, src, classes)
    load = os.getloadavg()[0]
    rows = []
    for label, _, _ in runs:
        base = results[label, ns[0]]["cpu"]
        for n in ns:
            r = results[label, n]
            xm, pm = r["x_bytes"] / 2**20, r["peak"] / 2**20
            rows.append(
                [
                    label,
                    n,
                    f"{xm:.1f}",
                    f"{pm:.1f}",
                    f"{pm / xm:.2f}",
                    f"{r['calib']:.2f}",
                    f"{r['cpu']:.2f}",
                    f"{r['cpu'] / base:.1f}",
                ]
            )
    header = [
        "estimator",
        "n",
        "X MiB",
        "peak beyond X MiB",
        "/ X",
        "calib CPU s",
        "fit CPU s",
        f"fit CPU / n={ns[0]}",
    ]
    text = (
        f"## OPLogisticRegression memory and CPU (d = {D}, C = {classes})\n\n"
        f"{machine_description()}; one BLAS thread; load average {load:.1f}. "
        "Target: peak beyond X <= 2x X, CPU linear in n.\n\n"
        + markdown_table(header, rows)
    )
    if before:
        import numpy as np

        lines = []
        for n in ns:
            a = np.array(results["skdp OP before", n]["coef"])
            b = np.array(results["skdp OP after", n]["coef"])
            after = results["skdp OP after", n]
            lines.append(
                f"- n = {n}: max |coef after - coef before| = "
                f"{np.max(np.abs(a - b)):.3g} (tau = {after['tau']:.3g}; certified "
                f"gradient norm before {results['skdp OP before', n]['grad']:.3g}, "
                f"after {after['grad']:.3g})"
            )
        text += "\n\n" + "\n".join(lines)
    write_result(out_dir, "op_memory", text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="n in {10^5, 10^6}")
    parser.add_argument("--out-dir", default="benchmarks/results")
    parser.add_argument("--before", default="", help="source tree of the old skdp")
    parser.add_argument("--ns", type=int, nargs="+", default=None)
    parser.add_argument("--classes", type=int, default=2, help="C (2: binary)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        which, n, src, classes = args.child
        _child(which, int(n), src, int(classes))
    else:
        main(not args.full, args.out_dir, args.before, args.classes, args.ns)
