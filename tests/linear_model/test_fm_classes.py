"""Declared classes: which labels occur must not decide whether a fit succeeds.

Neighbours D (one positive label, the rest 0) and D' (all 0) differ in one
record. With classes inferred from the data, D fits and D' raises: that tells
them apart with certainty. With ``classes=[0, 1]`` both fit, and the released
coefficients obey epsilon (audited below).
"""

import warnings

import numpy as np
import pytest

from skdp._fm import (
    DEFAULT_RIDGE_FACTOR,
    DataDomain,
    make_mechanism,
    n_released,
    release_noise_std,
    sensitivity,
    sufficient_statistics,
)
from skdp.exceptions import PrivacyLeakWarning, ReproducibleNoiseWarning
from skdp.linear_model import FMLogisticRegression
from skdp.utils import audit_mechanism
from skdp.vertical import VerticalFMClassifier

N = 30


def _neighbours():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (N, 4)) / 4  # ||x|| <= 1 (and inside each party's share)
    y_d = np.zeros(N, dtype=int)
    y_d[-1] = 1
    return X, y_d, np.zeros(N, dtype=int)


ESTIMATORS = [
    lambda **kw: FMLogisticRegression(data_norm=1.0, **kw),
    lambda **kw: VerticalFMClassifier(data_norm=1.0, n_parties=2, **kw),
]


@pytest.mark.parametrize("make", ESTIMATORS, ids=["central", "vertical"])
def test_declared_classes_fit_both_neighbours(make):
    X, y_d, y_d2 = _neighbours()
    fitted = []
    for y in (y_d, y_d2):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)
            warnings.simplefilter("ignore", ReproducibleNoiseWarning)
            est = make(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
        np.testing.assert_array_equal(est.classes_, [0, 1])
        assert np.all(np.isfinite(est.coef_))
        fitted.append(est)
    # what differs is only the noisy coefficients, not the set of attributes
    assert set(vars(fitted[0])) == set(vars(fitted[1]))


@pytest.mark.parametrize("make", ESTIMATORS, ids=["central", "vertical"])
def test_inferred_classes_warn_and_tell_the_neighbours_apart(make):
    X, y_d, y_d2 = _neighbours()
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        make(epsilon=1.0, random_state=0).fit(X, y_d)
    with pytest.warns(PrivacyLeakWarning), pytest.raises(ValueError, match="classes"):
        make(epsilon=1.0, random_state=0).fit(X, y_d2)


def test_declared_classes_must_be_two_and_cover_y():
    X, y_d, _ = _neighbours()
    with pytest.raises(ValueError, match="2 classes"):
        FMLogisticRegression(data_norm=1.0, classes=[1]).fit(X, y_d)
    with pytest.raises(ValueError, match="not in classes_"):
        FMLogisticRegression(data_norm=1.0, classes=[0, 2]).fit(X, y_d)
    est = FMLogisticRegression(data_norm=1.0, classes=[0, 1])
    with pytest.raises(ValueError, match="differs from the declared"):
        est.partial_fit(X, y_d, classes=[1, 2])


def _release(mech, X, c=1.0):
    """Vectorized release of the 1-d coefficient, as the core computes it."""

    def run(y, n, rng):
        A, b = sufficient_statistics(X, y, "logistic_taylor")
        a_hat = A[0, 0] + mech.sample_noise(n, rng)
        b_hat = (c * b[0] + mech.sample_noise(n, rng)) / c
        lam = DEFAULT_RIDGE_FACTOR * 2 * release_noise_std(mech)
        return -0.5 * b_hat / (np.maximum(a_hat, 0) + lam)

    return run


def test_privacy_audit_of_the_class_neighbours():
    """The released coefficient on D and D' (1-d, declared classes) obeys eps."""
    eps = 1.0
    dom = DataDomain(1, data_norm=1.0)
    sens = sensitivity("logistic_taylor", dom)
    X = np.ones((N, 1))  # the worst case: every |x| at the bound
    y_d = np.zeros(N)
    y_d[-1] = 1.0
    mech = make_mechanism(eps, 0.0, sens, n_released(dom), "laplace")
    result = audit_mechanism(
        _release(mech, X), y_d, np.zeros(N), n_samples=200_000, random_state=0
    )
    assert result.epsilon_lower_bound <= eps
    # the audit has power: four times less noise is caught
    weak = make_mechanism(4 * eps, 0.0, sens, n_released(dom), "laplace")
    broken = audit_mechanism(
        _release(weak, X), y_d, np.zeros(N), n_samples=200_000, random_state=0
    )
    assert broken.epsilon_lower_bound > eps
