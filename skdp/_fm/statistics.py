"""Sufficient statistics of the objective: sums over rows, mergeable."""

import numpy as np

from skdp._fm.domain import objective_constants

__all__ = ["sufficient_statistics"]


def sufficient_statistics(
    X, y, objective, *, fit_intercept=False, intercept_scaling=1.0
):
    """``(A, b)`` of one chunk: the objective's quadratic and linear coefficients.

    The data must already lie in the declared domain (clipped) and, for
    ``"logistic_taylor"``, ``y`` must be encoded in {0, 1}. Statistics of chunks
    add up: the statistics of a dataset are the sum over any partition of its rows.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    objective : {"squared", "logistic_taylor"}
    fit_intercept : bool
        Append the constant column ``intercept_scaling`` (as the last coefficient)
        without materializing it.
    intercept_scaling : float
        Value ``s`` of the constant column.

    Returns
    -------
    A : ndarray of shape (p, p), symmetric
    b : ndarray of shape (p,)
        ``p = n_features + fit_intercept``.
    """
    kappa, beta = objective_constants(objective)
    X = np.asarray(X, dtype=np.float64)
    beta_y = beta(np.asarray(y, dtype=np.float64))
    gram = X.T @ X
    b_feat = X.T @ beta_y
    if not fit_intercept:
        return kappa * gram, b_feat
    s = float(intercept_scaling)
    n, d = X.shape
    A = np.empty((d + 1, d + 1))
    A[:d, :d] = gram
    A[:d, d] = A[d, :d] = s * X.sum(axis=0)
    A[d, d] = s * s * n
    b = np.append(b_feat, s * beta_y.sum())
    return kappa * A, b
