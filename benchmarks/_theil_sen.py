"""OpenDP's private Theil-Sen regression on one feature, a benchmark baseline.

OpenDP 0.16 (``opendp.extras.sklearn.linear_model``; optional, benchmark only)
fits ``y ~ a x + b`` on ONE feature: it pairs the rows at random, predicts ``y``
at two cut points (25% and 75% of the declared x range) on the line through
each pair, and releases the median of each cut's predictions with the
exponential mechanism over 100 candidates evenly spaced on the declared y range.

Which feature: the one whose univariate least-squares fit has the largest
training R^2, chosen **non-privately** (an advantage we give the baseline: a
private choice would spend budget). Privacy: OpenDP states the guarantee for
the symmetric distance (add/remove one row); a replace-one neighbour is at
distance 2, so the noise scale is found by ``binary_search_chain`` for
``d_in = 2`` and ``d_out = epsilon`` (pure epsilon-DP, the neighbouring
relation of skdp's FM). The features are clipped to their declared range, as
every method in the benchmark does.
"""

import functools

import numpy as np


@functools.cache
def _opendp():
    import opendp.prelude as dp
    from opendp.extras.sklearn.linear_model._make_private_theil_sen import (
        make_private_theil_sen,
    )

    dp.enable_features("contrib", "honest-but-curious")
    return dp, make_private_theil_sen


def opendp_version():
    """The installed OpenDP version, or None when it does not import."""
    try:
        from importlib.metadata import version

        _opendp()
        return version("opendp")
    except Exception:  # not installed, or broken on this platform
        return None


def best_feature(X, y):
    """Index of the feature with the largest univariate R^2 (non-private)."""
    Xc = X - X.mean(axis=0)
    yc = y - y.mean()
    var = np.einsum("ij,ij->j", Xc, Xc)
    cov = Xc.T @ yc
    r2 = np.where(var > 0, cov**2 / np.where(var > 0, var, 1.0), 0.0)
    return int(np.argmax(r2))


@functools.lru_cache(maxsize=256)
def _measurement(epsilon, x_bounds, y_bounds):
    """The calibrated measurement: it depends on the parameters only."""
    dp, make = _opendp()
    return dp.binary_search_chain(
        lambda s: make(dp.max_divergence(), x_bounds, y_bounds, scale=s),
        d_in=2,
        d_out=float(epsilon),
        T=float,
    )


class OpenDPTheilSen:
    """OpenDP's private Theil-Sen on the best single feature (see the module).

    Parameters
    ----------
    epsilon : float
    bounds_X : (lower, upper)
        Declared range of every feature (scalars).
    bounds_y : (lower, upper)
    random_state : int or None
        OpenDP draws its own noise from the OS; the pairing uses numpy's global
        generator, which this seeds for reproducible pairings.
    """

    def __init__(self, epsilon, *, bounds_X, bounds_y, random_state=None):
        self.epsilon = epsilon
        self.bounds_X = bounds_X
        self.bounds_y = bounds_y
        self.random_state = random_state

    def fit(self, X, y):
        lo, hi = (float(v) for v in self.bounds_X)
        ylo, yhi = (float(v) for v in self.bounds_y)
        X = np.clip(np.asarray(X, float), lo, hi)
        y = np.clip(np.asarray(y, float), ylo, yhi)
        self.feature_ = best_feature(X, y)
        meas = _measurement(float(self.epsilon), (lo, hi), (ylo, yhi))
        if self.random_state is not None:
            np.random.seed(self.random_state)  # noqa: NPY002 (OpenDP shuffles with it)
        slope, intercept = meas(np.column_stack([X[:, self.feature_], y]))
        self.coef_ = np.zeros(X.shape[1])
        self.coef_[self.feature_] = float(slope)
        self.intercept_ = float(intercept)
        return self

    def predict(self, X):
        lo, hi = (float(v) for v in self.bounds_X)
        return np.clip(np.asarray(X, float), lo, hi) @ self.coef_ + self.intercept_
