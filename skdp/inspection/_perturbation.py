"""The fitted model seen as a function of its training rows.

:class:`PerturbationModel` holds what every estimate and every refit needs once the
estimator is fitted (the objective at the fitted parameters, the Hessian and its
Cholesky factor, the parsed attributes) and answers the questions they ask about a
set of rows: their category codes, their model inputs after some attributes were
replaced, the change of their gradients and of their curvature.
"""

import numpy as np

from skdp.inspection._attributes import LABEL
from skdp.inspection._objective import add_intercept_column
from skdp.mechanisms import RandomizedResponseMechanism

__all__ = ["SPARSE_FORMATS", "PerturbationModel", "densify"]

#: Sparse formats accepted as they are; others (dok, lil, ...) become the first,
#: so that scikit-learn's validation checks every entry for NaN and inf.
SPARSE_FORMATS = ["csr", "csc", "coo"]


def densify(X):
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)


class PerturbationModel:
    """Fitted state shared by the expectations, the second order and the refits.

    Parameters
    ----------
    objective : LinearObjective
        The objective on the training rows (model inputs with intercept column,
        encoded labels, row weights and the loss adapter).
    theta : ndarray of shape (K, D)
        Parameters at which everything is linearized.
    sample_weight : ndarray of shape (n,) or None
    label_categories : ndarray
        Values the encoded label takes under label RR.
    attributes : dict of CategoricalAttribute
    X_raw : array-like or DataFrame
        The raw training input (the Pipeline's input if there is one).
    feature_map : fitted transformer or None
        The Pipeline's steps before the last, or None for a bare estimator.
    hessian, chol : ndarray or None
        Dense Hessian (with damping) and its lower Cholesky factor, when formed.
    """

    def __init__(
        self,
        objective,
        theta,
        sample_weight,
        label_categories,
        attributes,
        X_raw,
        feature_map,
        hessian,
        chol,
    ):
        self.objective, self.adapter, self.theta = objective, objective.adapter, theta
        self.sample_weight, self.y_enc = sample_weight, objective.y
        self.label_categories, self.attributes = label_categories, attributes
        self.X_raw, self.feature_map = X_raw, feature_map
        self.hessian, self.chol = hessian, chol
        Z = objective.scores(objective.X1, theta)
        # c_i grad_Z l(z_i) of every training row, the "old" half of every change
        self.base_residual = self.adapter.residual(Z, self.y_enc) * objective.c[:, None]

    # ------------------------------------------------------------------ rows
    def preprocess(self, X):
        """Model inputs (without intercept column) of raw rows ``X``."""
        if self.feature_map is None:
            return densify(X)
        return densify(self.feature_map.transform(X))

    def weights(self, rows):
        return None if self.sample_weight is None else self.sample_weight[rows]

    def n_categories(self, name):
        if name == LABEL:
            return len(self.label_categories)
        return self.attributes[name].n_categories

    def codes(self, name, rows):
        if name == LABEL:
            return np.searchsorted(self.label_categories, self.y_enc[rows])
        return self.attributes[name].codes[rows]

    def perturbed_rows(self, rows, assignment):
        """Model inputs (with intercept column) and encoded labels of ``rows`` after
        replacing the attributes in ``assignment`` ({name: codes})."""
        feature_names = [n for n in assignment if n != LABEL]
        if feature_names:
            X = self.X_raw
            if self.feature_map is not None:
                Xr = X.iloc[rows].copy() if hasattr(X, "iloc") else np.array(X[rows])
            else:
                Xr = X[rows].copy()
            for name in feature_names:
                attr, codes = self.attributes[name], assignment[name]
                if attr.one_hot:
                    block = np.zeros((len(rows), len(attr.columns)))
                    inside = codes < len(attr.columns)
                    block[np.flatnonzero(inside), codes[inside]] = 1.0
                    values_by_col = block.T
                else:
                    values_by_col = [attr.categories[codes]]
                for col, values in zip(attr.columns, values_by_col):
                    if hasattr(Xr, "iloc"):
                        Xr.iloc[:, col] = values
                    else:
                        Xr[:, col] = values
            X1 = add_intercept_column(self.preprocess(Xr), self.adapter.fit_intercept)
        else:
            X1 = self.objective.X1[rows]
        if LABEL in assignment:
            y = self.label_categories[assignment[LABEL]]
        else:
            y = self.y_enc[rows]
        return X1, y

    # ------------------------------------------------------------------ RR
    def rr_probabilities(self, names, eps):
        """p_keep and p_change, each (F, E), from the RR mechanism."""
        keep = np.empty_like(eps)
        change = np.empty_like(eps)
        for f, name in enumerate(names):
            for e, value in enumerate(eps[f]):
                mech = RandomizedResponseMechanism(value, self.n_categories(name))
                keep[f, e], change[f, e] = mech.p_keep, mech.p_change
        return keep, change

    def label_matrices(self, names, eps):
        """The label's RR matrix for each epsilon, shape (E, C, C)."""
        f = names.index(LABEL)
        C = len(self.label_categories)
        return np.array([RandomizedResponseMechanism(e, C).matrix for e in eps[f]])

    # ------------------------------------------------------------------ derivatives
    def grad_diffs(self, rows, assignment, T):
        """Gradient differences c' grad l(z') - c grad l(z) of each row's outcome,
        shape (n_rows, E or 1, p); ``T`` (E, C, C) for forward correction."""
        X1, y = self.perturbed_rows(rows, assignment)
        Z = X1 @ self.theta.T
        c = self.adapter.row_weights(y, self.weights(rows))
        if T is None:
            R = (self.adapter.residual(Z, y) * c[:, None])[:, None, :]  # (n, 1, K)
        else:
            R = np.transpose(self.adapter.forward_residual(Z, y, T), (1, 0, 2))
            R = R * c[:, None, None]  # (n, E, K)
        new = R[:, :, :, None] * X1[:, None, None, :]  # (n, E, K, D)
        old = self.base_residual[rows][:, :, None] * self.objective.X1[rows][:, None]
        diff = new - old[:, None]
        return diff.reshape(len(rows), diff.shape[1], -1)

    def curvature_sum(self, X1, y, sw):
        """sum_i c_i A_i (kron) x_i x_i^T over the given rows, shape (p, p)."""
        c = self.adapter.row_weights(y, sw)
        A = self.adapter.curvature(X1 @ self.theta.T) * c[:, None, None]
        K, D = A.shape[1], X1.shape[1]
        H = np.empty((K, D, K, D))
        for k in range(K):
            for m in range(k, K):
                block = X1.T @ (X1 * A[:, k, m][:, None])
                H[k, :, m, :] = block
                H[m, :, k, :] = block.T
        return H.reshape(K * D, K * D)
