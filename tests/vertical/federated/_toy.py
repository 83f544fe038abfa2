"""A toy role set for testing the runtime without the vertical protocol's roles.

The server asks every party for the column sums of its data; party k forwards
its sums to party k + 1 (party-to-party traffic) and answers the server only
after hearing from party k - 1. The server's result is the concatenated means.
``SKDP_TOY_STALL=<party name>`` makes that party stall in the middle of the
protocol (to be killed there); it first creates the file named by
``SKDP_TOY_STALL_MARKER``.

Run as ``python -m tests.vertical.federated._toy {party,server} --config FILE``.
"""

import os
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


class ToyParty(Role):
    def __init__(self, index, n_parties, X, stall=False):
        super().__init__()
        self.name = party_name(index)
        self.index, self.n_parties, self.X = index, n_parties, X
        self.stall = stall
        self.heard = index == 0
        self.planned = False

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
                out.append(
                    self._send(
                        "cross",
                        party_name(self.index + 1),
                        "neighbour sums",
                        {"sums": self.X.sum(axis=0)},
                    )
                )
        else:
            self.heard = True
        return out + self._answer()


def make_party_role(config, request, data, index):
    stall = os.environ.get("SKDP_TOY_STALL") == config.name
    return ToyParty(index, len(request["parties"]), data.X, stall)


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
    from skdp.vertical.federated._runtime import format_failure

    kind, _, path = argv
    try:
        if kind == "party":
            run_party(path, make_role=make_party_role)
        else:
            run_server(path, make_roles=make_server_roles, make_model=make_model)
    except BaseException as exc:
        print(format_failure(f"toy {kind}", exc), file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
