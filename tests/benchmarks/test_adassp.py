"""The AdaSSP baseline of the benchmarks (benchmarks/_adassp.py)."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _adassp import AdaSSP, AdaSSPClassifier  # noqa: E402

from skdp.mechanisms import gaussian_delta  # noqa: E402


def _data(n=500, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d))
    y = np.clip(2 + X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n), 0, 4)
    return X, y


@pytest.mark.parametrize("data_norm", [None, 1.5])
def test_eps_inf_is_ols(data_norm):
    X, y = _data()
    if data_norm is not None:
        X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True) / data_norm, 1)
    m = AdaSSP(np.inf, 1e-6, bounds_X=(0, 1), bounds_y=(0, 4), data_norm=data_norm)
    ols = LinearRegression().fit(X, y)
    np.testing.assert_allclose(m.fit(X, y).coef_, ols.coef_, atol=1e-9)
    assert m.intercept_ == pytest.approx(ols.intercept_, abs=1e-9)


def test_large_eps_approaches_ols():
    X, y = _data(n=5000)
    ols = LinearRegression().fit(X, y)
    errs = [
        np.linalg.norm(
            AdaSSP(eps, 1e-6, bounds_X=(0, 1), bounds_y=(0, 4), random_state=0)
            .fit(X, y)
            .coef_
            - ols.coef_
        )
        for eps in (1.0, 100.0, 1e4)
    ]
    assert errs[2] < errs[0]
    assert errs[2] < 1e-2


def test_sensitivities_and_calibration():
    # replace-one sensitivities of the three releases, checked by brute force on
    # corners and random points of the centred domain, and each sigma meets the
    # exact analytic-Gaussian condition at (eps / 3, delta / 3)
    X, y = _data(n=50, d=3)
    eps, delta = 1.0, 1e-6
    m = AdaSSP(eps, delta, bounds_X=(0, 1), bounds_y=(0, 4), random_state=0).fit(X, y)
    _, _, c, R = m._design(X)
    assert R == pytest.approx(math.sqrt(3 * 0.25 + c * c))
    assert m.sensitivities_ == pytest.approx((R * R, math.sqrt(2) * R * R, 4 * R))
    for sigma, sens in zip(m.sigmas_, m.sensitivities_):
        assert gaussian_delta(sigma, eps / 3, sens) <= delta / 3
        assert gaussian_delta(0.99 * sigma, eps / 3, sens) > delta / 3
    rng = np.random.default_rng(1)
    corners = np.array(np.meshgrid(*[[-0.5, 0.5]] * 3)).reshape(3, -1).T
    rows = np.vstack([corners, rng.uniform(-0.5, 0.5, (200, 3))])
    rows = np.hstack([rows, np.full((rows.shape[0], 1), c)])
    labels = np.concatenate([[-2.0, 2.0], rng.uniform(-2, 2, rows.shape[0] - 2)])
    iu = np.triu_indices(4)
    worst = np.zeros(3)
    for i in range(rows.shape[0]):
        x, t = rows[i], labels[i]
        for j in range(rows.shape[0]):
            z, u = rows[j], -labels[j] if j < 2 else labels[j]
            gram = np.outer(x, x) - np.outer(z, z)
            worst = np.maximum(
                worst,
                [
                    abs(np.linalg.eigvalsh(gram)).max(),
                    np.linalg.norm(gram[iu]),
                    np.linalg.norm(x * t - z * u),
                ],
            )
    assert np.all(worst <= np.array(m.sensitivities_) + 1e-12)
    # the X^T y bound is attained (opposite corners, opposite labels)
    assert worst[2] == pytest.approx(m.sensitivities_[2])


def test_classifier_predicts_labels():
    X, y = _data()
    labels = np.where(y > 2, "hi", "lo")
    clf = AdaSSPClassifier(np.inf, 1e-6, bounds_X=(0, 1)).fit(X, labels)
    assert set(clf.predict(X)) <= {"hi", "lo"}
    assert clf.score(X, labels) > 0.8


def test_inputs_unchanged():
    X, y = _data()
    X0, y0 = X.copy(), y.copy()
    AdaSSP(1.0, 1e-6, bounds_X=(0, 1), bounds_y=(0, 4), random_state=0).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
