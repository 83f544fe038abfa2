"""The expectation of the first-order influence over randomized-response outcomes.

RR on attribute f keeps its value with probability p_f and moves to each other
value with probability q_f, independently per row and attribute, so the expected
first-order change of the test loss is a finite sum over the joint outcomes of the
perturbed attributes (``"exact"``), a stratified sample of them
(``"monte_carlo"``) or the seed paper's uniform spread (``"scaling"``); see the
Notes of :class:`~skdp.inspection.RRInfluenceEstimator`.
"""

import itertools

import numpy as np

__all__ = ["expectation_mode", "first_order_change"]


def expectation_mode(expectation, n_total, *, max_outcomes, correction):
    """The expectation actually used for ``n_total`` joint outcomes per row."""
    mode = expectation
    if mode == "auto":
        mode = "exact" if n_total <= max_outcomes else "monte_carlo"
    if mode == "scaling" and correction == "forward":
        raise ValueError(
            "expectation='scaling' is not defined with correction='forward'; use "
            "'exact' or 'monte_carlo'."
        )
    return mode


def first_order_change(
    state, groups, names, eps, direction, rng, *, mode, forward, n_mc_samples
):
    """Expected first-order change of the test loss per group and epsilon.

    Parameters
    ----------
    state : PerturbationModel
    groups : ndarray of bool, shape (n_groups, n)
        Group membership of the training rows.
    names : list of str
        Perturbed attributes (``"label"`` included).
    eps : ndarray of shape (F, E)
    direction : ndarray of shape (K, D)
        s = H^{-1} grad(mean test loss).
    rng : numpy.random.Generator or RandomState
        Used by ``"monte_carlo"`` only.
    mode : {"exact", "monte_carlo", "scaling"}
    forward : bool
        Forward loss correction on the perturbed group (label RR).
    n_mc_samples : int

    Returns
    -------
    mean : ndarray of shape (n_groups, E)
    var : ndarray of the same shape, or None
        Variance of the Monte Carlo estimate (None when exact).
    """
    # only rows in some group contribute; G holds their membership as weights
    rows = np.flatnonzero(groups.any(axis=0))
    G = groups[:, rows].astype(np.float64)
    s = direction.ravel()
    keep, change = state.rr_probabilities(names, eps)
    d = np.array([state.n_categories(n) for n in names])
    n_total = int(np.prod(d))
    codes = {n: state.codes(n, rows) for n in names}
    T = state.label_matrices(names, eps) if forward else None
    F, E = len(names), eps.shape[1]
    scaling = (1.0 - np.prod(keep, axis=0)) / max(n_total - 1, 1)  # (E,)

    def pattern_weight(changed):  # changed: (..., F) bool -> (..., E)
        if mode == "scaling":
            return np.where(changed.any(axis=-1)[..., None], scaling, 0.0)
        w = np.where(changed[..., None], change, keep)  # (..., F, E)
        return np.prod(w, axis=-2)

    first = np.zeros((G.shape[0], E))

    def accumulate(assignment, W):
        """First-order group contribution of one outcome per row, weights W."""
        diff = state.grad_diffs(rows, assignment, T)  # (n, E|1, p)
        return G @ (W * -(diff @ s))

    var = None
    if mode in ("exact", "scaling"):
        for combo in itertools.product(*[range(k) for k in d]):
            assignment = {n: np.full(len(rows), o) for n, o in zip(names, combo)}
            changed = np.column_stack([codes[n] != o for n, o in zip(names, combo)])
            if not forward and not changed.any():
                continue
            first += accumulate(assignment, pattern_weight(changed))
    else:
        var = np.zeros_like(first)
        for pattern in itertools.product([False, True], repeat=F):
            pattern = np.array(pattern)
            if not pattern.any():
                if forward:  # identity outcome, computed exactly
                    W = pattern_weight(np.zeros((len(rows), F), dtype=bool))
                    first += accumulate(dict(codes), W)
                continue
            n_pattern = int(np.prod(d[pattern] - 1))
            w = n_pattern * pattern_weight(pattern[None])[0] / n_mc_samples
            samples = []
            for _ in range(n_mc_samples):
                assignment = {}
                for f, name in enumerate(names):
                    if pattern[f]:
                        shift = rng.integers(1, d[f], size=len(rows))
                        assignment[name] = (codes[name] + shift) % d[f]
                    else:
                        assignment[name] = codes[name]
                W = np.broadcast_to(w, (len(rows), E))
                samples.append(accumulate(assignment, W) * n_mc_samples)
            samples = np.array(samples)
            first += samples.mean(axis=0)
            var += samples.var(axis=0, ddof=1) / n_mc_samples
    return first, var
