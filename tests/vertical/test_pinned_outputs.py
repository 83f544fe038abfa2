"""Pinned outputs of the vertical FM estimators: same random_state, same bits.

Recorded before the FM core was split into ``skdp._fm``; they must stay
bit-identical through refactors (a deliberate change re-records them in its own
commit and says why).
"""

import numpy as np
import pytest

from skdp.datasets import make_private_classification, make_private_regression
from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor


def _has_tenseal():
    try:
        import tenseal  # noqa: F401
    except ImportError:
        return False
    return True


needs_tenseal = pytest.mark.skipif(not _has_tenseal(), reason="tenseal not installed")


def _fit(kind, backend, noise, mechanism, n=200):
    K = 3
    if kind == "regressor":
        X, y, _, parts = make_private_regression(n, 6, n_parties=K, random_state=0)
        y = np.round(y * 256) / 256
    else:
        X, y, _, parts = make_private_classification(n, 6, n_parties=K, random_state=0)
    # inside every party's share of the ball and on a 2^-8 grid (exact for bfv)
    X = np.trunc(X / np.sqrt(K) * 256) / 256
    params = dict(
        epsilon=2.0,
        data_norm=1.0,
        partition=parts,
        label_party=1,
        secure_backend=backend,
        noise_generation=noise,
        random_state=5,
    )
    if mechanism == "gaussian":
        params.update(mechanism="gaussian", delta=1e-5)
    if kind == "regressor":
        return VerticalFMRegressor(bounds_y=(-1, 1), **params).fit(X, y)
    return VerticalFMClassifier(**params).fit(X, y)


# (coef_, intercept_) recorded with the code at commit 5e4ce76
PINNED = {
    ("regressor", "plaintext", "dealer", "laplace"): (
        [
            -0.12070301502077238,
            0.3359807748777984,
            -0.10481997827403933,
            0.043068738137244766,
            0.2025176668803685,
            -0.10361284788614993,
        ],
        0.06291314400819484,
    ),
    ("regressor", "plaintext", "dealer", "gaussian"): (
        [
            0.2398157987954447,
            0.21460229286349977,
            0.18346539784976676,
            -0.08482293301500723,
            -0.10448798470441005,
            0.22223056468407468,
        ],
        0.12035927922126032,
    ),
    ("regressor", "plaintext", "distributed", "laplace"): (
        [
            -0.0029219731101030725,
            0.06954074688530745,
            0.10971563280879958,
            0.11194575619536119,
            -0.22698443578822422,
            0.24592553671858178,
        ],
        0.058949113328909244,
    ),
    ("classifier", "plaintext", "dealer", "laplace"): (
        [
            -0.6213193291945103,
            1.351089816316597,
            -0.33748401650230764,
            0.19268809509186816,
            0.8743223678411964,
            -0.4127794252316303,
        ],
        0.19408345620660616,
    ),
    ("classifier", "plaintext", "distributed", "gaussian"): (
        [
            -1.3122835978040654,
            0.4584021825374652,
            1.3030693995835922,
            -1.203438978663726,
            -0.6671961971619947,
            1.2746987185547565,
        ],
        0.07062391014115785,
    ),
    ("regressor", "bfv", "dealer", "laplace"): (
        [
            -0.12069050557005444,
            0.3359757538102992,
            -0.10481968902905019,
            0.04307165620498541,
            0.2025346747652202,
            -0.1036237409910994,
        ],
        0.06291347212103238,
    ),
    ("classifier", "bfv", "dealer", "gaussian"): (
        [
            0.45792615778561097,
            0.5309049819856464,
            0.7011007962866265,
            -0.263374081325635,
            -0.2387211537766885,
            0.7536477201824087,
        ],
        0.3391189112577826,
    ),
}

CASES = [
    ("regressor", "plaintext", "dealer", "laplace"),
    ("regressor", "plaintext", "dealer", "gaussian"),
    ("regressor", "plaintext", "distributed", "laplace"),
    ("classifier", "plaintext", "dealer", "laplace"),
    ("classifier", "plaintext", "distributed", "gaussian"),
    pytest.param("regressor", "bfv", "dealer", "laplace", marks=needs_tenseal),
    pytest.param("classifier", "bfv", "dealer", "gaussian", marks=needs_tenseal),
]


@pytest.mark.parametrize("kind, backend, noise, mechanism", CASES)
def test_pinned_vertical_output(kind, backend, noise, mechanism):
    est = _fit(kind, backend, noise, mechanism)
    coef, intercept = PINNED[kind, backend, noise, mechanism]
    np.testing.assert_array_equal(est.coef_, np.array(coef))
    assert est.intercept_ == intercept
