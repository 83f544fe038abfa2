"""make_private_pipeline: refusal of leaking steps, domain hand-off, budgets."""

import itertools

import numpy as np
import pytest

from skdp.decomposition import PrivatePCA
from skdp.preprocessing import PrivateMinMaxScaler, PrivateStandardScaler


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 3))
    y = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def _corners(lower, upper):
    return np.array(list(itertools.product(*zip(lower, upper, strict=True))))


# -- output domains of the private transformers (exact) -------------------------


@pytest.mark.parametrize(
    "kwargs", [{}, {"with_mean": False}, {"with_std": False}, {"delta": 1e-6}]
)
def test_scaler_output_domain_is_the_image_of_its_box(kwargs):
    X, _ = _data()
    bounds = ([-1, -2, 0], [1, 3, 0.5])
    scaler = PrivateStandardScaler(
        epsilon=1.0, bounds_X=bounds, random_state=0, **kwargs
    ).fit(X)
    lower, upper = scaler.output_domain()["bounds_X"]
    assert np.all(lower < upper)
    Z = scaler.transform(_corners(*bounds))
    # the corners of the box attain the range: it is the exact image
    np.testing.assert_allclose(Z.min(axis=0), lower, rtol=1e-12)
    np.testing.assert_allclose(Z.max(axis=0), upper, rtol=1e-12)
    inside = np.random.default_rng(1).uniform(bounds[0], bounds[1], (500, 3))
    Z = scaler.transform(inside)
    assert np.all((Z >= lower) & (Z <= upper))


def test_min_max_output_domain_is_the_feature_range():
    X, _ = _data(5000)
    scaler = PrivateMinMaxScaler(
        epsilon=1.0, bounds_X=(-2, 2), feature_range=(-1, 3), random_state=0
    ).fit(X)
    lower, upper = scaler.output_domain()["bounds_X"]
    np.testing.assert_array_equal(lower, [-1.0] * 3)
    np.testing.assert_array_equal(upper, [3.0] * 3)
    # the released range maps onto it exactly
    ends = scaler.transform(np.vstack([scaler.data_min_, scaler.data_max_]))
    np.testing.assert_allclose(ends, [[-1.0] * 3, [3.0] * 3], atol=1e-12)


@pytest.mark.parametrize("centering", [True, False])
@pytest.mark.parametrize("n_components", [1, 2, 3])
def test_pca_output_domain_holds_over_the_box(centering, n_components):
    X, _ = _data()
    bounds = ([-1, -2, 0], [1, 3, 0.5])
    pca = PrivatePCA(
        n_components,
        epsilon=1.0,
        delta=1e-6,
        bounds_X=bounds,
        centering=centering,
        random_state=0,
    ).fit(X)
    domain = pca.output_domain()
    lower, upper = domain["bounds_X"]
    assert lower.shape == upper.shape == (n_components,)
    corners = _corners(*bounds)
    Z = pca.transform(corners)
    # the largest ||x - mean|| over a box is at a corner: the norm bound is tight
    # when every component is kept
    assert np.linalg.norm(Z, axis=1).max() <= domain["data_norm"] * (1 + 1e-12)
    if n_components == 3:
        np.testing.assert_allclose(
            np.linalg.norm(Z, axis=1).max(), domain["data_norm"], rtol=1e-12
        )
    # each output coordinate is linear in x: its range over the box is attained
    # at corners, and interval arithmetic is exact for one linear form
    tol = 1e-12 * max(1.0, domain["data_norm"])
    assert np.all(Z >= lower - tol) and np.all(Z <= upper + tol)
    clipped = np.maximum(Z.min(axis=0), -domain["data_norm"])
    np.testing.assert_allclose(clipped, lower, atol=tol)


def test_pca_output_domain_with_a_row_norm_bound():
    X, _ = _data()
    pca = PrivatePCA(2, epsilon=1.0, delta=1e-6, data_norm=1.5, random_state=0)
    domain = pca.fit(X).output_domain()
    assert domain["bounds_X"] is None
    assert domain["data_norm"] == pytest.approx(1.5 + np.linalg.norm(pca.mean_))
    rng = np.random.default_rng(2)
    sphere = rng.standard_normal((2000, 3))
    sphere *= 1.5 / np.linalg.norm(sphere, axis=1, keepdims=True)
    assert np.linalg.norm(pca.transform(sphere), axis=1).max() <= domain["data_norm"]
    # with a box as well, the smaller bound
    both = PrivatePCA(
        2, epsilon=1.0, delta=1e-6, data_norm=0.5, bounds_X=(-1, 1), random_state=0
    ).fit(X)
    expected = min(
        0.5 + np.linalg.norm(both.mean_),
        np.linalg.norm(np.maximum(np.abs(-1 - both.mean_), np.abs(1 - both.mean_))),
    )
    assert both.output_domain()["data_norm"] == pytest.approx(expected, rel=1e-12)


def test_output_domain_needs_a_fit():
    from sklearn.exceptions import NotFittedError

    for est in (PrivateStandardScaler(), PrivateMinMaxScaler(), PrivatePCA()):
        with pytest.raises(NotFittedError):
            est.output_domain()
