"""The three inverse-Hessian-vector-product solvers on a known SPD matrix."""

import numpy as np
import pytest

from skdp.inspection import ConjugateGradientSolver, ExplicitSolver, LissaSolver


def rel_error(got, want):
    return np.linalg.norm(got - want) / np.linalg.norm(want)


def spd(p, kappa, seed=0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(p, p)))
    return (Q * np.geomspace(1.0, kappa, p)) @ Q.T


@pytest.mark.parametrize("kappa", [10.0, 100.0])
def test_solvers_agree_with_numpy(kappa):
    H = spd(30, kappa)
    V = np.random.default_rng(1).normal(size=(30, 3))
    want = np.linalg.solve(H, V)
    np.testing.assert_allclose(ExplicitSolver(H).solve(V), want, rtol=1e-10)

    def hvp(V, rows=None):
        return H @ V

    # CG stops at ||H x - v|| <= rtol ||v||, so its normwise error is <= kappa rtol
    cg = ConjugateGradientSolver(hvp, 30, rtol=1e-10)
    assert rel_error(cg.solve(V), want) <= kappa * 1e-10
    # full-batch LiSSA: depth >= 25 kappa gives (1 - 1/(1.05 kappa))^depth < 1e-10
    lissa = LissaSolver(hvp, 30, 30, depth=int(25 * kappa))
    assert rel_error(lissa.solve(V), want) <= 1e-6
    assert rel_error(lissa.solve(V[:, 0]), want[:, 0]) <= 1e-6


def test_explicit_solver_rejects_indefinite_matrix():
    with pytest.raises(ValueError, match="damping"):
        ExplicitSolver(np.diag([1.0, -1.0]))


def test_minibatch_lissa_is_unbiased_within_sampling_error():
    rng = np.random.default_rng(2)
    rows = rng.normal(size=(2000, 5))
    H = rows.T @ rows + 200 * np.eye(5)

    def hvp(V, rows_idx=None):
        if rows_idx is None:
            return H @ V
        Xb = rows[rows_idx]
        return len(rows) / len(rows_idx) * (Xb.T @ (Xb @ V)) + 200 * V

    def hvp_kw(V, rows=None):
        return hvp(V, rows)

    v = np.ones(5)
    want = np.linalg.solve(H, v)
    lissa = LissaSolver(
        hvp_kw, 5, 2000, depth=300, repeats=8, batch_size=200, random_state=rng
    )
    got = lissa.solve(v)
    assert np.linalg.norm(got - want) <= 0.05 * np.linalg.norm(want)
