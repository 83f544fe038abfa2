"""The mean loss of a test group at the fitted model: its gradient, the
inverse-Hessian direction s = H^{-1} grad and (lazily) its Hessian.

Computed once per test set and cached by the estimator under a digest of the test
inputs, so a grid of groups and epsilons on the same test set solves once.
"""

import hashlib

import numpy as np

from skdp.inspection._objective import LinearObjective

__all__ = ["TestGroupLoss", "array_digest"]


def array_digest(*arrays):
    """A hash of the arrays' shapes, dtypes and contents (cache key)."""
    h = hashlib.sha1()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.shape, a.dtype)).encode())
        h.update(a.tobytes() if a.dtype != object else repr(a.tolist()).encode())
    return h.hexdigest()


class TestGroupLoss:
    """Mean unweighted loss of the test rows ``(X1, y)`` at parameters ``theta``.

    Attributes
    ----------
    X1, y : ndarray
        Test model inputs (with intercept column) and encoded labels.
    loss : float
        Mean test loss at ``theta``.
    grad : ndarray of shape (p,)
        Its gradient with respect to the flattened parameters.
    s : ndarray of shape (K, D)
        ``H^{-1} grad`` from ``solver`` (the first-order influence direction).
    """

    __test__ = False  # not a pytest class

    def __init__(self, objective, adapter, theta, solver, X1, y):
        self.X1, self.y, self._adapter, self._theta = X1, y, adapter, theta
        Z = objective.scores(X1, theta)
        R = adapter.residual(Z, y)
        self.grad = ((R.T @ X1) / len(y)).ravel()
        self.s = solver.solve(self.grad).reshape(theta.shape)
        self.loss = float(np.mean(adapter.test_loss(Z, y)))
        self._hessian = None

    def hessian(self):
        """Hessian of the mean test loss (no penalty), shape (p, p); cached."""
        if self._hessian is None:
            n = len(self.y)
            test_obj = LinearObjective(self.X1, self.y, np.ones(n), self._adapter)
            H_test = test_obj.hessian(self._theta.ravel(), loss_only=True)
            self._hessian = H_test / n
        return self._hessian
