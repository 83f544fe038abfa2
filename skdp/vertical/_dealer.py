"""The noise dealer (``noise_generation="dealer"``) as a state machine.

The dealer is neither the server nor a party. It draws the whole noise vector
exactly as the centralized estimator does (same generator, same order), so with
the same ``random_state`` the vertical release equals the centralized one, and
hands each group's noise to the group's last contributor. It knows every noise
value: it must not collude with the server.
"""

from types import SimpleNamespace

import numpy as np

from skdp._fm import draw_noise
from skdp.vertical._messages import DEALER, SERVER, Role, party_name
from skdp.vertical._plan import mechanism_from_spec, triu_position

__all__ = ["DealerRole"]


class DealerRole(Role):
    """The noise dealer.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator the centralized estimator would draw its noise from
        (``check_random_state(random_state)``).
    """

    name = DEALER

    def __init__(self, rng):
        super().__init__()
        self._rng = rng

    def _receive(self, message):
        if message.sender != SERVER or message.kind != "dealer plan":
            raise ValueError(f"unexpected {message.kind!r} from {message.sender}")
        plan = message.payload
        groups = plan["groups"]
        if plan["budget"] == "top-down":
            # the centralized release's draw: all of A's triangle, then b
            mech = mechanism_from_spec(plan["top_mechanism"])
            shape = SimpleNamespace(
                n_coef=int(plan["n_coef"]), fit_intercept=bool(plan["fit_intercept"])
            )
            p = shape.n_coef
            n_lin = int(plan.get("n_lin", 1))
            if n_lin == 1:
                noise_A, noise_b = draw_noise(mech, shape, self._rng)
            else:
                # release_multinomial's draw: A's triangle, then B row-major
                noise_A = np.asarray(
                    mech.sample_noise(p * (p + 1) // 2, self._rng), dtype=np.float64
                )
                noise_b = np.asarray(
                    mech.sample_noise(p * n_lin, self._rng), dtype=np.float64
                )
                if shape.fit_intercept:
                    noise_A[-1] = 0.0
            drawn = [
                (
                    noise_A[triu_position(g["rows"], g["cols"], p)],
                    noise_b[np.asarray(g["lin"], dtype=np.intp)],
                )
                for g in groups
            ]
        else:
            drawn = []
            for g in groups:
                mech = mechanism_from_spec(g["mechanism"])
                quad = mech.sample_noise(len(g["rows"]), self._rng)
                lin = mech.sample_noise(len(g["lin"]), self._rng)
                drawn.append((np.asarray(quad, float), np.asarray(lin, float)))
        out = []
        for k in range(int(plan["n_parties"])):
            noise = {}
            for g, (quad, lin) in zip(groups, drawn):
                if g["contributors"][-1] == k:
                    noise[f"{g['name']} quad"] = quad
                    noise[f"{g['name']} lin"] = lin
            out.append(self._send("noise", party_name(k), "noise", noise))
        self.finished = True
        return out
