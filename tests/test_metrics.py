"""skdp.metrics: balanced error rate and its label-noise correction."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from skdp.metrics import (
    balanced_error_rate,
    balanced_error_scorer,
    debiased_balanced_error_rate,
)


def test_ber_hand_computed():
    y_true = [0, 0, 0, 0, 1, 1]
    y_pred = [0, 0, 0, 1, 0, 1]
    # FPR = 1/4, FNR = 1/2
    assert balanced_error_rate(y_true, y_pred) == pytest.approx((0.25 + 0.5) / 2)


def test_ber_of_constant_prediction_is_one_half_whatever_the_balance():
    y = np.array([0] * 90 + [1] * 10)
    assert balanced_error_rate(y, np.zeros(100)) == pytest.approx(0.5)
    assert balanced_error_rate(y, np.ones(100)) == pytest.approx(0.5)


def test_ber_string_labels_and_weights():
    y_true = np.array(["a", "a", "b", "b"])
    y_pred = np.array(["a", "b", "b", "b"])
    assert balanced_error_rate(y_true, y_pred) == pytest.approx(0.25)
    w = np.array([1.0, 3.0, 1.0, 1.0])  # the error on "a" weighs 3/4 of class a
    assert balanced_error_rate(y_true, y_pred, sample_weight=w) == pytest.approx(0.375)


def test_scorer_is_minus_ber_and_usable_in_grid_search():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0.8).astype(int)
    model = LogisticRegression().fit(X, y)
    assert balanced_error_scorer(model, X, y) == pytest.approx(
        -balanced_error_rate(y, model.predict(X))
    )
    search = GridSearchCV(
        LogisticRegression(), {"C": [0.01, 1.0]}, scoring=balanced_error_scorer, cv=3
    ).fit(X, y)
    assert search.best_score_ <= 0


def test_debiased_ber_recovers_the_clean_ber_under_random_flips():
    rng = np.random.default_rng(1)
    n, rho = 200_000, 0.3
    y = rng.integers(0, 2, size=n)  # balanced classes: the identity is exact
    pred = np.where(rng.random(n) < 0.2, 1 - y, y)  # clean BER about 0.2
    noisy = np.where(rng.random(n) < rho, 1 - y, y)
    clean = balanced_error_rate(y, pred)
    est = debiased_balanced_error_rate(noisy, pred, flip_rate=rho)
    # the noisy BER averages n Bernoulli terms: sd <= 1/sqrt(n); /(1 - 2 rho)
    assert abs(est - clean) < 5 / np.sqrt(n) / (1 - 2 * rho)
    assert debiased_balanced_error_rate(y, pred, flip_rate=0.0) == pytest.approx(clean)


@pytest.mark.parametrize("rho", [-0.1, 0.5, 0.7])
def test_debiased_ber_rejects_bad_flip_rate(rho):
    with pytest.raises(ValueError, match="flip_rate"):
        debiased_balanced_error_rate([0, 1], [0, 1], flip_rate=rho)


def test_debiased_ber_rejects_multiclass():
    with pytest.raises(ValueError, match="binary"):
        debiased_balanced_error_rate([0, 1, 2], [0, 1, 2], flip_rate=0.1)
