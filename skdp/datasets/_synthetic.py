"""Synthetic data with declared bounds, for private regression and classification."""

import numbers

import numpy as np

from skdp.utils import check_random_state

__all__ = ["make_private_classification", "make_private_regression", "split_columns"]


def _check_positive_int(value, name, minimum=1):
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < minimum
    ):
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return int(value)


def split_columns(n_features, n_parties):
    """Split ``range(n_features)`` into ``n_parties`` contiguous, near-equal lists.

    Examples
    --------
    >>> split_columns(5, 2)
    [[0, 1, 2], [3, 4]]
    """
    n_features = _check_positive_int(n_features, "n_features")
    n_parties = _check_positive_int(n_parties, "n_parties")
    if n_parties > n_features:
        raise ValueError(
            f"n_parties={n_parties} must not exceed n_features={n_features}."
        )
    return [part.tolist() for part in np.array_split(np.arange(n_features), n_parties)]


def _rows_in_ball(n_samples, n_features, data_norm, rng):
    """Gaussian directions with radii so that rows fill the L2 ball of ``data_norm``.

    Radii are uniform on [0, 1] times the norm (not uniform in volume, which would
    push almost every row to the sphere in high dimension).
    """
    X = rng.standard_normal((n_samples, n_features))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X *= data_norm * rng.uniform(0.0, 1.0, size=(n_samples, 1))
    return X


def _true_coef(n_features, sparsity, rng):
    if not 0 < sparsity <= 1:
        raise ValueError(f"sparsity must be in (0, 1], got {sparsity!r}.")
    coef = rng.standard_normal(n_features)
    n_zero = n_features - max(1, round(sparsity * n_features))
    coef[rng.choice(n_features, size=n_zero, replace=False)] = 0.0
    return coef / np.linalg.norm(coef)


def make_private_regression(
    n_samples=1000,
    n_features=10,
    *,
    noise=0.1,
    sparsity=1.0,
    data_norm=1.0,
    n_parties=None,
    random_state=None,
):
    """Linear data inside a declared domain: ``||x||_2 <= data_norm``, ``|y| <= 1``.

    ``y = clip(x @ coef / data_norm + noise * N(0, 1), -1, 1)`` with ``||coef||_2 = 1``,
    so the noise-free part already lies in [-1, 1].

    Parameters
    ----------
    n_samples, n_features : int
    noise : float
        Standard deviation of the additive Gaussian noise on y (before clipping).
    sparsity : float in (0, 1]
        Fraction of non-zero true coefficients (at least one).
    data_norm : float
        Bound on every row's L2 norm.
    n_parties : int or None
        If given, also return a column partition for that many parties.
    random_state : None, int or Generator

    Returns
    -------
    X : ndarray (n_samples, n_features)
    y : ndarray (n_samples,)
    coef : ndarray (n_features,)
    partition : list of lists of int
        Only if ``n_parties`` is given (see :func:`split_columns`).
    """
    n_samples = _check_positive_int(n_samples, "n_samples")
    n_features = _check_positive_int(n_features, "n_features")
    rng = check_random_state(random_state)
    X = _rows_in_ball(n_samples, n_features, data_norm, rng)
    coef = _true_coef(n_features, sparsity, rng)
    y = np.clip(X @ coef / data_norm + noise * rng.standard_normal(n_samples), -1, 1)
    if n_parties is None:
        return X, y, coef
    return X, y, coef, split_columns(n_features, n_parties)


def make_private_classification(
    n_samples=1000,
    n_features=10,
    *,
    separation=4.0,
    sparsity=1.0,
    data_norm=1.0,
    n_parties=None,
    random_state=None,
):
    """Binary labels from a logistic model on rows with ||x||_2 <= data_norm.

    ``P(y = 1 | x) = sigmoid(separation * x @ coef / data_norm)`` with
    ``||coef||_2 = 1``. Returns ``X, y, coef`` (and a partition if ``n_parties``).
    """
    n_samples = _check_positive_int(n_samples, "n_samples")
    n_features = _check_positive_int(n_features, "n_features")
    rng = check_random_state(random_state)
    X = _rows_in_ball(n_samples, n_features, data_norm, rng)
    coef = _true_coef(n_features, sparsity, rng)
    logits = separation * X @ coef / data_norm
    y = (rng.uniform(size=n_samples) < 1 / (1 + np.exp(-logits))).astype(np.int64)
    if n_parties is None:
        return X, y, coef
    return X, y, coef, split_columns(n_features, n_parties)
