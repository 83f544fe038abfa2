"""Shared by the vertical tests: the tenseal marker and party-split data on a grid."""

import numpy as np
import pytest

from skdp.datasets import make_private_classification, make_private_regression


def _has_tenseal():
    try:
        import tenseal  # noqa: F401
    except ImportError:
        return False
    return True


needs_tenseal = pytest.mark.skipif(not _has_tenseal(), reason="tenseal not installed")
BACKENDS = ["plaintext", pytest.param("bfv", marks=needs_tenseal)]


def on_grid(a):
    """Rounded to a 2^-8 grid, which keeps the bfv fixed point exact."""
    return np.round(a * 256) / 256


def in_party_balls(X, K):
    """Inside every party's share of the unit ball (||x_k|| <= sqrt(d_k / d)) and
    on a 2^-8 grid, so the vertical clipping and the bfv fixed point are exact."""
    return np.trunc(X / np.sqrt(K) * 256) / 256


def regression(n=800, d=6, K=3, seed=0):
    """``(X, y, partition)`` with X in the party balls and y on the grid."""
    X, y, _, parts = make_private_regression(n, d, n_parties=K, random_state=seed)
    return in_party_balls(X, K), on_grid(y), parts


def classification(n=800, d=6, K=3, seed=0):
    """``(X, y, partition)`` with X in the party balls."""
    X, y, _, parts = make_private_classification(n, d, n_parties=K, random_state=seed)
    return in_party_balls(X, K), y, parts


def grid_regression(n, d=6, K=3, seed=0):
    """``(X, y, partition)`` with X (in [-1, 1]) and y on the grid."""
    X, y, _, parts = make_private_regression(n, d, n_parties=K, random_state=seed)
    return on_grid(X), on_grid(y), parts
