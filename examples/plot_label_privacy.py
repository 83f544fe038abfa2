"""
Label privacy: accuracy against epsilon
=======================================

:class:`~skdp.preprocessing.PrivateLabelClassifier` privatizes the training labels
inside ``fit`` and trains any classifier on them. Randomized response at epsilon and
:class:`~skdp.preprocessing.ExponentialLabelRelease` at parameter ``2 epsilon`` give
the same guarantee (the exponential release factorizes into randomized response at
half its parameter), and the curves agree. The test labels are clean.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skdp.preprocessing import (
    ExponentialLabelRelease,
    PrivateLabelClassifier,
    RandomizedResponse,
    recommended_epsilon,
)

X, y = make_classification(n_samples=4000, n_informative=5, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)


def accuracy(privatizer):
    scores = []
    for seed in range(3):
        model = PrivateLabelClassifier(
            LogisticRegression(), privatizer.set_params(random_state=seed)
        )
        scores.append(model.fit(X_train, y_train).score(X_test, y_test))
    return float(np.median(scores)), model.privacy_spent_.epsilon


guarantees = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0]
rr = [accuracy(RandomizedResponse(epsilon=e, classes=[0, 1])) for e in guarantees]
em = [
    accuracy(ExponentialLabelRelease(epsilon=2 * e, classes=[0, 1])) for e in guarantees
]
assert [spent for _, spent in em] == guarantees  # privacy_spent_ is epsilon / 2

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(guarantees, [a for a, _ in rr], "o-", label="RandomizedResponse(epsilon)")
ax.plot(guarantees, [a for a, _ in em], "s--", label="ExponentialLabelRelease(2 eps)")
ax.set(xscale="log", xlabel="label-DP guarantee epsilon", ylabel="test accuracy")
ax.legend()
fig.tight_layout()

# how large must the exponential mechanism's parameter be for at least half of
# n binary labels to survive with probability 0.99 (Bi & Suppakitpaisarn 2022)?
for n in (100, 1000, 10000):
    eps = recommended_epsilon(n, 0.99)
    print(f"n={n:>6}: parameter {eps:.3f}, guarantee {eps / 2:.3f}")
