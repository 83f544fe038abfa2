"""The Newton-corrected second-order estimate of the RR cost (``order=2``).

With mu = E[sum_i Delta g_i], dH = E[sum_i Delta H_i] (the expected change of the
Hessian), dtheta = -(H + dH)^{-1} mu and B = (H + dH)^{-1} H_te (H + dH)^{-1}:
``Delta L ~= grad L_te . dtheta + dtheta^T H_te dtheta / 2
+ sum_i tr(B Cov(Delta g_i)) / 2``. Everything depends on epsilon only through the
probability of each *change pattern* (which attributes changed), so per-pattern sums
are accumulated once per group and reused for every epsilon.
"""

import itertools

import numpy as np

from skdp.inspection._attributes import LABEL

__all__ = ["pattern_sums", "second_order_change"]


def pattern_sums(state, rows, names, d, mode, bits, rng, n_mc_samples):
    """Per change pattern m: per-row sums of gradient differences a (n, M, p),
    their second moments S (M, p, p) and Hessian changes Dm (M, p, p), each
    summed over the outcomes with that pattern (estimated for Monte Carlo)."""
    M, p = len(bits), state.hessian.shape[0]
    pattern_id = 2 ** np.arange(len(names))
    codes = {n: state.codes(n, rows) for n in names}
    sw = state.weights(rows)
    a = np.zeros((len(rows), M, p))
    S = np.zeros((M, p, p))
    Dm = np.zeros((M, p, p))
    X1_old, y_old = state.objective.X1[rows], state.y_enc[rows]
    # the curvature of these losses does not depend on the label: a label-only
    # perturbation changes the Hessian only through label-dependent weights
    label_weights = state.adapter.row_weights(state.label_categories, None)
    hessian_changes = names != [LABEL] or np.ptp(label_weights) > 0

    def accumulate(assignment, factor):
        changed = np.column_stack([assignment[n] != codes[n] for n in names])
        pid = changed @ pattern_id
        diff = state.grad_diffs(rows, assignment, None)[:, 0, :]
        X1_new, y_new = state.perturbed_rows(rows, assignment)
        for m in np.unique(pid):
            if m == 0:
                continue
            sel = pid == m
            sw_sel = None if sw is None else sw[sel]
            a[sel, m] += factor * diff[sel]
            S[m] += factor * (diff[sel].T @ diff[sel])
            if not hessian_changes:
                continue
            Dm[m] += factor * state.curvature_sum(X1_new[sel], y_new[sel], sw_sel)

    if mode in ("exact", "scaling"):
        for combo in itertools.product(*[range(k) for k in d]):
            accumulate({n: np.full(len(rows), o) for n, o in zip(names, combo)}, 1)
    else:
        for m_bits in bits[1:]:
            factor = float(np.prod(d[m_bits == 1] - 1)) / n_mc_samples
            for _ in range(n_mc_samples):
                assignment = {}
                for f, name in enumerate(names):
                    shift = rng.integers(1, d[f], size=len(rows)) * m_bits[f]
                    assignment[name] = (codes[name] + shift) % d[f]
                accumulate(assignment, factor)
    if hessian_changes:
        # each row has exactly prod_{f in m} (d_f - 1) outcomes with pattern m,
        # so the old rows' curvature enters every pattern with that count
        old = state.curvature_sum(X1_old, y_old, sw)
        for m, m_bits in enumerate(bits):
            if m:
                Dm[m] -= np.prod(d[m_bits == 1] - 1) * old
    return a, S, Dm


def second_order_change(state, G, names, eps, test_loss, rng, *, mode, n_mc_samples):
    """Second-order estimate per group (rows of the boolean ``G``) and epsilon.

    ``test_loss`` is the test group's :class:`TestGroupLoss` (its gradient and
    Hessian are used); ``mode`` is the expectation already resolved
    (``"exact"``, ``"monte_carlo"`` or ``"scaling"``). Returns an array of shape
    (n_groups, E).
    """
    H, H_te, grad_te = state.hessian, test_loss.hessian(), test_loss.grad
    keep, change = state.rr_probabilities(names, eps)
    d = np.array([state.n_categories(n) for n in names])
    n_total = int(np.prod(d))
    F, E = len(names), eps.shape[1]
    bits = np.array(list(itertools.product([0, 1], repeat=F)))[:, ::-1]  # (M, F)
    if mode == "scaling":
        W = np.where(bits.any(axis=1)[:, None], 1.0, 0.0) * (
            (1.0 - np.prod(keep, axis=0)) / max(n_total - 1, 1)
        )
    else:
        W = np.prod(
            np.where(bits[:, :, None] == 1, change[None], keep[None]), axis=1
        )  # (M, E) probability of each single outcome with that pattern
    out = np.zeros((G.shape[0], E))
    for g, mask in enumerate(G):
        a, S, Dm = pattern_sums(
            state, np.flatnonzero(mask), names, d, mode, bits, rng, n_mc_samples
        )
        a_total = a.sum(axis=0)  # (M, p)
        # sum_i mu_i mu_i^T = sum_{m, m'} w_m w_m' P[m, m'], P = sum_i a_im a_im'^T
        a_flat = a.reshape(a.shape[0], -1)
        P = (a_flat.T @ a_flat).reshape(a.shape[1], a.shape[2], *a.shape[1:])
        for e in range(E):
            w = W[:, e]
            H_new = H + np.tensordot(w, Dm, axes=1)
            dtheta = -np.linalg.solve(H_new, w @ a_total)
            Y = np.linalg.solve(H_new, H_te)
            B = np.linalg.solve(H_new, Y.T).T
            second_moment = np.tensordot(w, S, axes=1)
            mean_outer = np.einsum("m,mpkq,k->pq", w, P, w)
            var = np.sum(B * (second_moment - mean_outer))
            out[g, e] = grad_te @ dtheta + 0.5 * (dtheta @ H_te @ dtheta + var)
    return out
