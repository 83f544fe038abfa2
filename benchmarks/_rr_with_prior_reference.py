"""An independent RR-with-prior (LP-2ST) written from the paper, for the benchmark.

Ghazi, Golowich, Kumar, Manurangsi & Zhang, "Deep Learning with Label
Differential Privacy", NeurIPS 2021:

* Algorithm 1 (RRWithPrior): given a prior p over the K classes, for
  k = 1..K let w_k = e^eps / (e^eps + k - 1) * (sum of the k largest p);
  k* = argmax_k w_k and Y_k* the k* most likely classes. If the true label y is
  in Y_k*, output y with probability e^eps / (e^eps + k* - 1) and each other
  member with probability 1 / (e^eps + k* - 1); otherwise output a uniformly
  random member of Y_k*.
* Algorithm 2 (LP-MST) with two stages (LP-2ST): split the training set at
  random into two parts; release the first part's labels with the uniform prior
  (that is, k-ary randomized response), train a model on them, release the
  second part's labels with the model's predicted probabilities as priors,
  and train the final model on all released labels.

The model here is scikit-learn's ``LogisticRegression(max_iter=1000)`` (the
paper trains deep networks on images; this benchmark's tasks are tabular).
The split is half and half. This file does not import skdp: it is the anchor
against which skdp's ``RandomizedResponseWithPrior`` is compared, so it is a
second implementation written from the paper's pseudo-code, row by row.
"""

import math

import numpy as np
from sklearn.linear_model import LogisticRegression


def rr_with_prior_one(y, prior, eps, rng):
    """Algorithm 1 for one label ``y`` (a class index) and one prior vector."""
    order = sorted(range(len(prior)), key=lambda c: -prior[c])
    best_k, best_w, mass = 1, -1.0, 0.0
    for k in range(1, len(prior) + 1):
        mass += prior[order[k - 1]]
        w = math.exp(eps) / (math.exp(eps) + k - 1) * mass
        if w > best_w:
            best_k, best_w = k, w
    top = order[:best_k]
    if y in top:
        if rng.random() < math.exp(eps) / (math.exp(eps) + best_k - 1):
            return y
        others = [c for c in top if c != y]
        return others[rng.integers(len(others))]
    return top[rng.integers(best_k)]


def _model():
    return LogisticRegression(max_iter=1000)


def lp_2st(X, y_codes, n_classes, eps, rng):
    """LP-2ST: released labels (codes) and the final model (trained on them)."""
    n = len(y_codes)
    perm = rng.permutation(n)
    first, second = perm[: n // 2], perm[n // 2 :]
    released = np.empty(n, dtype=np.int64)
    uniform = [1.0 / n_classes] * n_classes
    for i in first:
        released[i] = rr_with_prior_one(int(y_codes[i]), uniform, eps, rng)
    if np.unique(released[first]).size >= 2:
        stage_model = _model().fit(X[first], released[first])
        proba = np.zeros((second.size, n_classes))
        proba[:, stage_model.classes_] = stage_model.predict_proba(X[second])
    else:
        proba = np.full((second.size, n_classes), 1.0 / n_classes)
    for row, i in enumerate(second):
        released[i] = rr_with_prior_one(int(y_codes[i]), list(proba[row]), eps, rng)
    final = _model().fit(X, released) if np.unique(released).size >= 2 else None
    return released, final
