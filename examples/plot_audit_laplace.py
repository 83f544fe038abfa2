"""
Auditing the Laplace mechanism
==============================

:func:`skdp.utils.audit_mechanism` runs a mechanism many times on two neighbouring
inputs and returns a statistical *lower bound* on its epsilon. A correct mechanism
never has a lower bound above its claimed epsilon; a broken one (here: noise
calibrated to half the sensitivity) is caught.
"""

import matplotlib.pyplot as plt
import numpy as np

from skdp.mechanisms import LaplaceMechanism
from skdp.utils import audit_mechanism

epsilon, sensitivity = 1.0, 1.0


def run(mechanism):
    def draw(value, n_samples, rng):
        return mechanism.randomize(np.full(n_samples, value), random_state=rng)

    # neighbouring inputs: the query differs by exactly the sensitivity
    return audit_mechanism(draw, 0.0, sensitivity, n_samples=200_000, random_state=0)


correct = run(LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity))
broken = run(LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity / 2))
print(f"claimed epsilon: {epsilon}")
print(f"correct calibration: lower bound {correct.epsilon_lower_bound:.3f}")
print(f"half the sensitivity: lower bound {broken.epsilon_lower_bound:.3f} (refuted)")

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.bar(
    ["correct", "half the sensitivity"],
    [correct.epsilon_lower_bound, broken.epsilon_lower_bound],
    color=["tab:green", "tab:red"],
)
ax.axhline(epsilon, color="k", ls="--", label="claimed epsilon")
ax.set(ylabel="audited lower bound on epsilon")
ax.legend()
fig.tight_layout()
