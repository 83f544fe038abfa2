"""Measuring the RR cost by retraining on perturbed data (``validate``).

Each draw releases the group's perturbed attributes through
:class:`~skdp.mechanisms.RandomizedResponseMechanism`, retrains, and records the
change of the mean test loss; the mean over draws is what the influence estimates
predict. Retraining is either an exact minimization of the same objective (warm
started with one Newton step, polished by L-BFGS) or a refit of a clone of the
estimator.
"""

import numbers

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.base import clone

from skdp.inspection._loss_adapters import make_loss_adapter
from skdp.inspection._objective import safe_cholesky
from skdp.mechanisms import RandomizedResponseMechanism

__all__ = ["check_retraining", "exact_refit", "retraining_changes"]


def check_retraining(refit, n_draws, forward, state):
    """Check ``validate``'s own arguments against the fitted state."""
    if refit not in ("exact", "estimator"):
        raise ValueError(f"refit must be 'exact' or 'estimator', got {refit!r}.")
    if not isinstance(n_draws, numbers.Integral) or n_draws < 1:
        raise ValueError(f"n_draws must be a positive int, got {n_draws!r}.")
    if refit == "estimator" and forward:
        raise ValueError("refit='estimator' cannot train with forward correction.")
    if refit == "exact" and state.chol is None:
        raise ValueError("refit='exact' needs the dense Hessian (K*D <= 4000).")


def retraining_changes(
    state,
    X1_te,
    y_te,
    G,
    names,
    eps,
    rng,
    *,
    n_draws,
    refit,
    forward,
    final_estimator,
    classes,
    progress,
):
    """Test-loss changes after retraining, shape (n_groups, E, n_draws).

    Parameters
    ----------
    state : PerturbationModel
    X1_te, y_te : ndarray
        Test model inputs (with intercept column) and encoded labels.
    G : ndarray of bool, shape (n_groups, n)
    names, eps
        Parsed ``perturb`` (see ``parse_perturb``).
    rng : numpy.random.Generator or RandomState
        Draws the RR outcomes.
    n_draws : int
    refit : {"exact", "estimator"}
    forward : bool
        Retrain with forward loss correction on the group (``refit="exact"``).
    final_estimator : estimator
        The (last step of the) fitted estimator, cloned for ``refit="estimator"``.
    classes : ndarray or None
        Class labels of a classifier (to decode labels for ``refit="estimator"``).
    progress : Progress
        Advanced by one per refit.
    """
    obj, adapter = state.objective, state.adapter
    T_all = state.label_matrices(names, eps) if forward else None

    def test_loss(theta2d):
        Z = X1_te @ theta2d.T
        return float(np.mean(adapter.test_loss(Z, y_te)))

    def refit_estimator(X_model, y_enc):
        y = classes[y_enc] if adapter.is_classifier else y_enc
        return clone(final_estimator).fit(X_model, y, sample_weight=state.sample_weight)

    if refit == "estimator":
        X_model = obj.X1[:, :-1] if adapter.fit_intercept else obj.X1
        base_fit = refit_estimator(X_model, obj.y)
        base_loss = test_loss(make_loss_adapter(base_fit).theta())
    else:
        base_loss = test_loss(state.theta)

    results = np.zeros((G.shape[0], eps.shape[1], n_draws))
    for g, mask in enumerate(G):
        rows = np.flatnonzero(mask)
        sw = state.weights(rows)
        if refit == "exact":
            fixed = (obj.X1[~mask], obj.y[~mask], obj.c[~mask], None)
            old_curv = state.curvature_sum(obj.X1[rows], obj.y[rows], sw)
            old_grad = (state.base_residual[rows].T @ obj.X1[rows]).ravel()
        for e in range(eps.shape[1]):
            mechs = {
                n: RandomizedResponseMechanism(eps[f, e], state.n_categories(n))
                for f, n in enumerate(names)
            }
            T = None if T_all is None else T_all[e]
            for draw in range(n_draws):
                assignment = {
                    n: mechs[n].randomize(state.codes(n, rows), rng) for n in names
                }
                X1_new, y_new = state.perturbed_rows(rows, assignment)
                if refit == "estimator":
                    X_all = obj.X1.copy()
                    X_all[rows] = X1_new
                    y_all = obj.y.copy()
                    y_all[rows] = y_new
                    if adapter.fit_intercept:
                        X_all = X_all[:, :-1]
                    fitted = refit_estimator(X_all, y_all)
                    theta = make_loss_adapter(fitted).theta()
                else:
                    c_new = adapter.row_weights(y_new, sw)
                    theta = exact_refit(
                        state, fixed, (X1_new, y_new, c_new, T), sw, old_grad, old_curv
                    ).reshape(state.theta.shape)
                results[g, e, draw] = test_loss(theta) - base_loss
                progress.update()
    return results


def exact_refit(state, fixed, new, sw, old_grad, old_curv):
    """Exact minimizer with the group's rows replaced by ``new``.

    Starts from one Newton step at theta (the perturbed objective's gradient
    there is the gradient difference, its Hessian H + Delta H) and polishes
    with L-BFGS preconditioned by that Hessian's Cholesky factor.
    """
    obj, theta = state.objective, state.theta.ravel()
    X1_new, y_new, c_new, T = new
    _, grad_new = obj.rows_value_grad(X1_new, y_new, c_new, theta, T)
    L = None
    if T is None:
        H_new = state.hessian - old_curv + state.curvature_sum(X1_new, y_new, sw)
        L = safe_cholesky(H_new)
    if L is None:
        L = state.chol
    step = solve_triangular(L, grad_new - old_grad, lower=True)
    theta0 = theta - solve_triangular(L, step, lower=True, trans="T")
    # gtol bounds the Newton decrement in objective units (J is a sum over
    # n rows): 1e-6 leaves test-loss errors ~1e-9, far below RR draw noise
    theta_new, _ = obj.minimize(theta0, L, [fixed, new], gtol=1e-6)
    return theta_new
