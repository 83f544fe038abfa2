"""A participant process whose party role sends malformed local coefficients.

``python -m tests.vertical.federated._forge {party,server} --config FILE`` is
the console entry point, unchanged, except that with
``SKDP_FORGE=<participant>:<case>`` the party whose config file is
``<participant>.toml`` replaces what it sends as its noisy local coefficients
(the four payloads of issue 36): ``lin_scalar`` (``lin`` as the scalar 0.0),
``quad_inf`` (one ``inf`` in ``quad``), ``quad_string`` (``quad`` as the string
``"0.5"``), ``quad_1e12`` (``quad`` times 1e12). Just before it sends them it
creates the file named by ``SKDP_FORGE_MARKER``.
"""

import os
import sys
from pathlib import Path

import numpy as np

from skdp.vertical._party import PartyRole
from skdp.vertical.federated._cli import _main


def _one_inf(a):
    a = np.array(a, dtype=np.float64)
    a[0] = np.inf
    return a


CASES = {
    "lin_scalar": ("lin", lambda a: 0.0),
    "quad_inf": ("quad", _one_inf),
    "quad_string": ("quad", lambda a: "0.5"),
    "quad_1e12": ("quad", lambda a: a * 1e12),
}


def _forge(case, marker):
    key, edit = CASES[case]
    honest = PartyRole._local

    def forged(self):
        out = honest(self)
        Path(marker).touch()
        return {**out, key: edit(out[key])}

    PartyRole._local = forged


def main():
    who, _, case = os.environ.get("SKDP_FORGE", "").partition(":")
    config = sys.argv[sys.argv.index("--config") + 1]
    if who and Path(config).stem == who:
        _forge(case, os.environ["SKDP_FORGE_MARKER"])
    return _main()


if __name__ == "__main__":
    sys.exit(main())
