"""An endpoint in its own process, to measure what callers make it hold.

``python -m tests.vertical.federated._endpoint CERT_DIR`` serves as ``server``
(certificates ``CERT_DIR/{ca,server}.pem``), accepts only ``alice``, prints its
port, then answers each line on stdin with its peak resident memory (VmHWM, in
bytes) and the number of messages it accepted.
"""

import sys
from pathlib import Path

from skdp.vertical.federated._transport import Endpoint


def peak_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0  # pragma: no cover - not Linux


def main(directory):
    d = Path(directory)
    got = []
    ep = Endpoint(
        "server",
        "127.0.0.1:0",
        (d / "ca.pem").read_bytes(),
        (d / "server.pem").read_bytes(),
        (d / "server.key").read_bytes(),
        authorize=lambda sender, names: sender == "alice" and "alice" in names,
        admits=lambda names: "alice" in names,
        on_message=lambda message, nbytes: got.append(nbytes),
        keepalive=(1.0, 5.0),
    ).start()
    print(ep.port, flush=True)
    for _ in sys.stdin:
        print(peak_rss(), len(got), flush=True)
    ep.stop(0)


if __name__ == "__main__":
    main(sys.argv[1])
