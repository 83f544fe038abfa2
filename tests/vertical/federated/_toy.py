"""A toy role set for testing the runtime without the vertical protocol's roles.

The server asks every party for the column sums of its data; party k forwards
its sums to party k + 1 (party-to-party traffic) and answers the server only
after hearing from party k - 1. The server's result is the concatenated means.
``SKDP_TOY_STALL=<party name>`` makes that party stall in the middle of the
protocol (to be killed there); it first creates the file named by
``SKDP_TOY_STALL_MARKER``.

``SKDP_TOY_FREEZE=<party name>`` makes that party stop itself with SIGSTOP at its
first protocol step (its role's start), after creating the file named by
``SKDP_TOY_FREEZE_MARKER``; with ``SKDP_TOY_BIG_MB=m`` its neighbour k - 1 waits
for that file and then sends it m MB of random bytes (incompressible, like a
ciphertext), so that a large message is in flight to a frozen peer.

Run as ``python -m tests.vertical.federated._toy {party,server} --config FILE``.
"""

import os
import signal
import sys
import time

import numpy as np

from skdp.vertical._messages import SERVER, Role, party_name
from skdp.vertical.federated._runtime import run_party, run_server


class ToyServer(Role):
    name = SERVER

    def __init__(self, n_parties):
        super().__init__()
        self.n_parties = n_parties
        self.sums = {}

    def _start(self):
        return [
            self._send("plan", party_name(k), "plan", {"scale": 1.0})
            for k in range(self.n_parties)
        ]

    def _receive(self, message):
        k = int(message.sender.split()[-1])
        self.sums[k] = message.payload["sums"]
        if len(self.sums) == self.n_parties:
            self.result = {
                "coef": np.concatenate([self.sums[k] for k in range(self.n_parties)]),
                "n": int(message.payload["n"]),
            }
            self.finished = True
        return []


def _wait_for(path, seconds=120):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)


class ToyParty(Role):
    def __init__(self, index, n_parties, X, stall=False, freeze=False, big=None):
        super().__init__()
        self.name = party_name(index)
        self.index, self.n_parties, self.X = index, n_parties, X
        self.stall = stall
        self.freeze = freeze
        self.big = big  # (marker, bytes) to send to the frozen neighbour
        self.heard = index == 0
        self.planned = False

    def _start(self):
        if self.freeze:
            with open(os.environ["SKDP_TOY_FREEZE_MARKER"], "w") as f:
                f.write(f"{os.getpid()}\n")
            os.kill(os.getpid(), signal.SIGSTOP)
        return []

    def _answer(self):
        if not (self.heard and self.planned):
            return []
        if self.stall:
            marker = os.environ.get("SKDP_TOY_STALL_MARKER")
            if marker:
                with open(marker, "w") as f:
                    f.write("stalling\n")
            time.sleep(300)
        self.finished = True
        self.result = {"sent": True}
        return [
            self._send(
                "local",
                SERVER,
                "sums",
                {"sums": self.X.sum(axis=0), "n": self.X.shape[0]},
            )
        ]

    def _receive(self, message):
        out = []
        if message.kind == "plan":
            self.planned = True
            if self.index + 1 < self.n_parties:
                payload = {"sums": self.X.sum(axis=0)}
                if self.big is not None:
                    marker, size = self.big
                    _wait_for(marker)  # the neighbour is frozen now
                    payload["ciphertext"] = os.urandom(size)
                out.append(
                    self._send(
                        "cross", party_name(self.index + 1), "neighbour sums", payload
                    )
                )
        else:
            self.heard = True
        return out + self._answer()


def make_party_role(config, request, data, index):
    stall = os.environ.get("SKDP_TOY_STALL") == config.name
    frozen = os.environ.get("SKDP_TOY_FREEZE")
    big = None
    parties = request["parties"]
    if frozen and index + 1 < len(parties) and parties[index + 1] == frozen:
        big = (
            os.environ["SKDP_TOY_FREEZE_MARKER"],
            int(float(os.environ.get("SKDP_TOY_BIG_MB", "0")) * 2**20),
        )
    return ToyParty(
        index, len(parties), data.X, stall, freeze=frozen == config.name, big=big
    )


def make_server_roles(config, accepted):
    return {SERVER: ToyServer(len(config.parties))}


def make_model(config, accepted, results):
    res = results[SERVER]
    names = [f for p in config.parties for f in accepted[p.name]["features"]]
    return {
        "estimator": "VerticalFMRegressor",
        "coef": res["coef"] / res["n"],
        "intercept": 0.0,
        "n_features_in": len(names),
        "feature_names": names,
        "params": {"epsilon": config.epsilon},
        "privacy_spent": {"epsilon": config.epsilon, "delta": 0.0},
    }


def main(argv):
    """As the console scripts: exit 2 for a config error, 1 for a failed run,
    and the same exit watchdog."""
    from skdp.vertical.federated._cli import _exit_watchdog
    from skdp.vertical.federated._config import ConfigError
    from skdp.vertical.federated._runtime import format_failure

    kind, _, path = argv
    try:
        if kind == "party":
            run_party(path, make_role=make_party_role)
        else:
            run_server(path, make_roles=make_server_roles, make_model=make_model)
    except ConfigError as exc:
        print(f"toy {kind}: config error: {exc}", file=sys.stderr, flush=True)
        return _exit_watchdog(2)
    except BaseException as exc:
        print(format_failure(f"toy {kind}", exc), file=sys.stderr, flush=True)
        return _exit_watchdog(1)
    return _exit_watchdog(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
