"""The vertical FM across processes: a server and K party processes on localhost
over gRPC with mutual TLS, next to the in-process run of the same fit.

Full mode (issue 14): n = 10^5 rows, d = 20 columns over K = 4 parties (5 each),
linear and logistic, bfv backend, threshold noise (distributed where threshold
is not available): wall time of the federated run
(from launching the five processes to the last exit, so it includes every
process's start-up, imports and TLS handshakes; target <= 60 s), the server's
time per phase, bytes sent and received per participant (message frames; TLS and
HTTP/2 framing add a little), and the in-process fit of the same data in the same
benchmark run. "100 Mbit/s adds" is the time the bytes would need on a
100 Mbit/s link: per participant ``(sent + received) * 8 / 10^8`` (each on its own
link), and the worst participant. Quick mode: n = 2000, d = 8, K = 4, linear only.
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
from _common import cli, markdown_table, write_result  # noqa: E402
from bench_vertical import LINEAR_WEIGHT, LINK_BITS_PER_S, installed, mb  # noqa: E402

from skdp.datasets import make_private_classification, make_private_regression  # noqa: E402
from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor  # noqa: E402


def _noise_generation():
    """The default of a deployment ("threshold") if this skdp has it."""
    constraint = VerticalFMRegressor._parameter_constraints["noise_generation"][0]
    options = getattr(constraint, "options", ())
    return "threshold" if "threshold" in options else "distributed"


def run_federated(objective, n, d, K, backend="bfv"):
    """Launch a server and K parties; return wall time and per-participant stats."""
    from tests.vertical.federated._harness import Deployment, env, kill_all, wait_all

    make = (
        make_private_regression
        if objective == "linear"
        else make_private_classification
    )
    X, y, _, parts = make(n, d, n_parties=K, random_state=0)
    blocks = [X[:, cols] for cols in parts]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        dep = Deployment(
            tmp,
            blocks,
            y,
            objective=objective,
            backend=backend,
            noise_generation=_noise_generation(),
            bounds=None,
            data_norm=1.0,
            timeouts={"startup": 120.0, "call": 300.0, "heartbeat": 2.0},
        )
        dep.server["model"]["linear_weight"] = LINEAR_WEIGHT
        paths = dep.write()
        procs = {}
        start, launched = time.perf_counter(), time.time()
        for name, path in paths.items():
            kind = "server" if name == "server" else "party"
            procs[name] = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "skdp.vertical.federated",
                    kind,
                    "--config",
                    str(path),
                    "--stats",
                    str(tmp / f"{name}-stats.json"),
                ],
                cwd=ROOT,
                env=env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        try:
            out = wait_all(procs, 1800)
        finally:
            kill_all(procs)
        wall = time.perf_counter() - start
        failed = {k: v[2][-800:] for k, v in out.items() if v[0] != 0}
        if failed:
            raise RuntimeError(f"federated run failed: {failed}")
        stats = {n: json.loads((tmp / f"{n}-stats.json").read_text()) for n in paths}
        for s in stats.values():  # interpreter start and imports
            s["seconds"]["imports"] = s["entered"] - launched
        parties = {name: f"party {k}" for k, name in enumerate(dep.names)}
    return wall, stats, parties, (X, y, parts)


def run_in_process(objective, data, backend="bfv"):
    X, y, parts = data
    cls = VerticalFMRegressor if objective == "linear" else VerticalFMClassifier
    kw = {"bounds_y": (-1, 1)} if objective == "linear" else {}
    if objective == "logistic" and "classes" in cls().get_params():
        kw["classes"] = [0, 1]  # declared, as the label party's config does
    est = cls(
        epsilon=1.0,
        data_norm=1.0,
        linear_weight=LINEAR_WEIGHT,
        partition=parts,
        secure_backend=backend,
        noise_generation=_noise_generation(),
        random_state=0,
        **kw,
    )
    start = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - start, est.transcript_


def main(quick=True, out_dir="benchmarks/results"):
    """Federated (processes + TLS) against in-process, bfv backend."""
    if not installed("cryptography", "grpc", "tenseal"):
        write_result(
            out_dir, "bench_federated", "skipped: needs grpcio, cryptography, tenseal"
        )
        return
    n, d, K = (2_000, 8, 4) if quick else (100_000, 20, 4)
    objectives = ("linear",) if quick else ("linear", "logistic")
    rows, traffic_sections = [], []
    for objective in objectives:
        wall, stats, parties, data = run_federated(objective, n, d, K)
        in_wall, transcript = run_in_process(objective, data)
        seconds = stats["server"]["seconds"]
        in_sent, in_received = transcript.bytes_sent(), transcript.bytes_received()
        per = []
        for name, s in stats.items():
            t = s["traffic"]
            role = "server" if name == "server" else parties[name]
            link = (t["sent"] + t["received"]) * 8 / LINK_BITS_PER_S
            sec = s["seconds"]
            per.append(
                [
                    name,
                    role,
                    sec["imports"],
                    sec.get("startup", 0.0) + sec.get("data", 0.0),
                    sec["protocol"],
                    mb(t["sent"]),
                    mb(t["received"]),
                    mb(in_sent.get(role, 0)),
                    mb(in_received.get(role, 0)),
                    t["messages_sent"],
                    link,
                ]
            )
        worst = max(r[-1] for r in per)
        slowest_start = max(r[2] + r[3] for r in per)
        total = sum(s["traffic"]["sent"] for s in stats.values())
        rows.append(
            [
                objective,
                n,
                d,
                K,
                wall,
                slowest_start,
                seconds["connect"] + seconds["session"],
                seconds["protocol"],
                in_wall,
                mb(total),
                mb(transcript.total_bytes),
                worst,
            ]
        )
        traffic_sections.append(
            f"Per participant ({objective}, federated):\n\n"
            + markdown_table(
                [
                    "participant",
                    "role",
                    "imports s",
                    "config + data s",
                    "protocol s",
                    "sent MB",
                    "received MB",
                    "in-process sent MB",
                    "in-process received MB",
                    "messages sent",
                    "100 Mbit/s adds s",
                ],
                per,
            )
        )
    text = (
        f"### Federated vertical FM, bfv, {K} party processes + server over mutual "
        "TLS on localhost\n\n"
        + markdown_table(
            [
                "objective",
                "n",
                "d",
                "K",
                "federated wall s",
                "slowest start-up s",
                "server: connect + session s",
                "server: protocol s",
                "in-process fit s",
                "federated bytes sent MB",
                "in-process transcript MB",
                "100 Mbit/s adds s (worst participant)",
            ],
            rows,
        )
        + "\n\n"
        + "\n\n".join(traffic_sections)
        + "\n\nFederated wall time: from launching the processes to the last exit "
        "(start-up, imports, handshakes, alignment, protocol, release). Imports: "
        "from launch to the command's entry (interpreter, skdp, scikit-learn, "
        "gRPC); config + data: reading and sorting its file until it listens; "
        "slowest start-up: the largest sum of the two. Protocol: "
        "from the start of the roles to the last party's completion (the "
        "in-process fit also includes the domain and plan). The "
        "in-process transcript counts payload bytes only; the federated bytes are "
        "whole message frames. Wall times include any other load on the machine."
    )
    write_result(out_dir, "bench_federated", text)
    return rows


if __name__ == "__main__":
    cli(main)
