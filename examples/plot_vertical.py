"""
Vertically partitioned parties
==============================

Three parties hold different columns of the same rows; party 0 also holds the label.
:class:`~skdp.vertical.VerticalFMRegressor` runs the protocol as messages between the
parties and a server (here with the plaintext simulation of the secure scalar
product). The whole model is epsilon-DP for a record, as the centralized estimator;
``party_privacy_`` is the smaller epsilon that protects each party's columns alone,
and the transcript counts what each participant sent.
"""

import matplotlib.pyplot as plt
import numpy as np

from skdp.datasets import make_private_regression
from skdp.vertical import VerticalFMRegressor

X, y, coef, parts = make_private_regression(5000, 9, n_parties=3, random_state=0)
print("columns of each party:", parts)

reg = VerticalFMRegressor(
    epsilon=1.0, data_norm=1.0, bounds_y=(-1, 1), partition=parts, random_state=0
).fit(X, y)
print("guarantee for a whole record:", reg.privacy_spent_)
print("guarantee for each party's columns:", np.round(reg.party_privacy_, 3))
print(f"{'participant':<12}{'bytes sent':>12}{'bytes received':>16}{'messages':>10}")
for who, sent, received, n_messages in reg.transcript_.summary():
    print(f"{who:<12}{sent:>12}{received:>16}{n_messages:>10}")

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.bar([f"party {k}" for k in range(3)], reg.party_privacy_, color="tab:blue")
ax.axhline(reg.privacy_spent_.epsilon, color="k", ls="--", label="whole record")
ax.set(ylabel="epsilon", title="Per-party privacy (top-down budget, epsilon = 1)")
ax.legend()
fig.tight_layout()
