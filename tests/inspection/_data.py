"""Shared by the inspection tests: a small data set with a categorical column."""

import numpy as np


def make_data(n=300, seed=0, n_classes=2, n_groups=3, weights=False):
    """Two Gaussian features and an integer-coded categorical column (last); with
    ``weights``, also sample weights in [0.2, 3] (drawn after the labels)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, n_groups, size=n)
    X = np.column_stack([rng.normal(size=(n, 2)), g]).astype(float)
    score = X[:, 0] - 0.5 * X[:, 1] + 0.4 * g + rng.logistic(size=n)
    if n_classes == 2:
        y = (score > 0.5).astype(int)
    else:
        y = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))
    if weights:
        return X, y, rng.uniform(0.2, 3.0, size=n)
    return X, y
