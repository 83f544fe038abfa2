"""VerticalFMClassifier on more than two classes: one multinomial release that
equals the centralized FMLogisticRegression's."""

import numpy as np
import pytest

from skdp._fm import DataDomain
from skdp._fm.multinomial import multinomial_sensitivity
from skdp.linear_model import FMLogisticRegression
from skdp.vertical import VerticalFMClassifier
from tests.vertical._data import in_party_balls, needs_tenseal

PARTS = [[5], [0, 1], [2, 3, 4]]


def three_classes(n=600, d=6, seed=0, n_classes=3):
    """Softmax labels of C classes; X in the 3 party balls (on the bfv grid)."""
    rng = np.random.default_rng(seed)
    X = in_party_balls(rng.uniform(-1, 1, (n, d)) / np.sqrt(d), 3)
    C = n_classes
    scores = X @ (4.0 * rng.normal(size=(C, d))).T + rng.gumbel(size=(n, C))
    return X, np.array(list("abcd"))[np.argmax(scores, axis=1)]


# bfv is exact when 1/C - y_c and the linear weight are on its fixed-point grid:
# C = 4 and c = 0.5 (C = 3 rounds 1/3, and an "auto" c is not dyadic, so the
# two releases then differ by ~1e-5 to 1e-4)
LAPLACE = {"linear_weight": 0.5}
AUTO = {"linear_weight": "auto"}
GAUSS = {"mechanism": "gaussian", "delta": 1e-5, "linear_weight": 0.5}


@pytest.mark.parametrize(
    ("backend", "n_classes", "params"),
    [
        *[("plaintext", C, p) for C in (3, 4) for p in (LAPLACE, AUTO, GAUSS)],
        *[pytest.param("bfv", 4, p, marks=needs_tenseal) for p in (LAPLACE, GAUSS)],
    ],
)
def test_multinomial_equals_centralized_with_identical_noise(
    backend, n_classes, params
):
    X, y = three_classes(n_classes=n_classes)
    classes = list("abcd")[:n_classes]
    common = dict(epsilon=2.0, data_norm=1.0, classes=classes, random_state=3, **params)
    central = FMLogisticRegression(**common).fit(X, y)
    vertical = VerticalFMClassifier(
        partition=PARTS,
        label_party=1,
        noise_generation="dealer",
        secure_backend=backend,
        **common,
    ).fit(X, y)
    assert vertical.coef_.shape == central.coef_.shape == (n_classes, 6)
    np.testing.assert_allclose(vertical.coef_, central.coef_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(
        vertical.intercept_, central.intercept_, rtol=0, atol=1e-8
    )
    np.testing.assert_array_equal(vertical.predict(X), central.predict(X))
    assert vertical.sensitivity_ == central.sensitivity_
    assert vertical.linear_weight_ == central.linear_weight_
    assert vertical.privacy_spent_ == central.privacy_spent_


def test_multinomial_sensitivity_is_the_central_one():
    X, y = three_classes()
    clf = VerticalFMClassifier(
        epsilon=1.0,
        data_norm=1.0,
        classes=["a", "b", "c"],
        linear_weight=0.5,
        partition=PARTS,
        random_state=0,
    ).fit(X, y)
    domain = DataDomain(
        n_features=6, data_norm=1.0, fit_intercept=True, intercept_scaling=1.0
    )
    expected = multinomial_sensitivity(domain, 3, linear_weight=0.5)
    assert clf.sensitivity_ == expected
    # closed form (module Notes of skdp._fm.multinomial, M_1 = sqrt(6), s = 1):
    # quadratic L1 of the binary release plus 2 c ((2C - 3)/C M_1 + s)
    quad = multinomial_sensitivity(domain, 3, quadratic=True, linear=False)
    lin_l1 = 2 * 0.5 * (3 / 3 * np.sqrt(6) + 1.0)
    assert clf.sensitivity_.l1 == pytest.approx(quad.l1 + lin_l1, rel=1e-12)


@pytest.mark.parametrize("label_party", [0, 2])
def test_multinomial_epsilon_inf_is_the_exact_centralized_fit(label_party):
    X, y = three_classes(seed=1)
    common = dict(epsilon=np.inf, bounds_X=(-1, 1), classes=["a", "b", "c"])
    central = FMLogisticRegression(**common).fit(X, y)
    vertical = VerticalFMClassifier(
        partition=PARTS, label_party=label_party, **common
    ).fit(X, y)
    np.testing.assert_allclose(vertical.coef_, central.coef_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        vertical.intercept_, central.intercept_, rtol=0, atol=1e-9
    )
    np.testing.assert_allclose(
        vertical.predict_proba(X), central.predict_proba(X), rtol=0, atol=1e-9
    )


@pytest.mark.parametrize("noise_generation", ["threshold", "distributed"])
def test_multinomial_fits_with_party_generated_noise(noise_generation):
    X, y = three_classes(n=3000)
    clf = VerticalFMClassifier(
        epsilon=np.inf,
        data_norm=1.0,
        partition=PARTS,
        classes=["a", "b", "c"],
        noise_generation=noise_generation,
        random_state=0,
    ).fit(X, y)
    central = FMLogisticRegression(
        epsilon=np.inf, data_norm=1.0, classes=["a", "b", "c"]
    ).fit(X, y)
    np.testing.assert_allclose(clf.coef_, central.coef_, rtol=0, atol=1e-9)
    assert set(np.unique(clf.predict(X))) <= {"a", "b", "c"}
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)
