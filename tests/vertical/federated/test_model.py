"""The released model file: npz + JSON, no pickle, loads as a fitted estimator."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from skdp.accounting import PrivacyBudget
from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor, load_model
from skdp.vertical.federated import save_model


def _model(**kw):
    return {
        "estimator": "VerticalFMRegressor",
        "coef": np.array([0.5, -1.0, 2.0]),
        "intercept": 0.25,
        "n_features_in": 3,
        "params": {"epsilon": 1.0, "partition": [[0, 1], [2]], "bounds_y": [-1, 1]},
        "privacy_spent": {"epsilon": 1.0, "delta": 0.0},
        "party_privacy": np.array([0.8, 0.6]),
        "bounds_lower": np.full(3, -1.0),
        "bounds_upper": np.ones(3),
        "feature_names": None,
        "parties": ["bank", "insurer"],
        **kw,
    }


def test_regressor_round_trip(tmp_path):
    npz, js = save_model(tmp_path / "m", _model())
    meta = json.loads(js.read_text())
    assert meta["format"] == "skdp.vertical.model/1" and "coef" not in meta
    with np.load(npz, allow_pickle=False) as data:  # plain arrays only
        assert sorted(data.files) == [
            "bounds_lower",
            "bounds_upper",
            "coef",
            "party_privacy",
        ]
    reg = load_model(js)
    assert isinstance(reg, VerticalFMRegressor)
    check_is_fitted(reg)
    X = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(reg.predict(X), [1.75, 0.25])
    assert reg.privacy_spent_ == PrivacyBudget(1.0, 0.0)
    assert reg.partition == [[0, 1], [2]] and reg.bounds_y == (-1, 1)
    np.testing.assert_array_equal(reg.party_privacy_, [0.8, 0.6])
    assert reg.n_parties_ == 2 and reg.bounds_[0].tolist() == [-1, -1, -1]
    # usable in scikit-learn: scoring, cloning (an unfitted copy)
    assert reg.score(X, [1.75, 0.25]) == 1.0
    assert clone(reg).get_params()["epsilon"] == 1.0


def test_classifier_round_trip(tmp_path):
    save_model(
        tmp_path / "c",
        _model(
            estimator="VerticalFMClassifier",
            classes=["no", "yes"],
            feature_names=["a", "b", "c"],
            params={"epsilon": 0.5},
            privacy_spent={"epsilon": 0.5, "delta": 0.0},
            party_privacy=np.array([0.4, 0.3]),
        ),
    )
    clf = load_model(tmp_path / "c.npz")
    assert isinstance(clf, VerticalFMClassifier)
    check_is_fitted(clf)
    X = pd.DataFrame([[1.0, 1.0, 1.0], [-1.0, 0.0, 0.0]], columns=["a", "b", "c"])
    assert clf.predict(X).tolist() == ["yes", "no"]
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="feature names"):
        clf.predict(X[["c", "b", "a"]])


def test_not_a_model(tmp_path):
    (tmp_path / "x.json").write_text('{"format": "pickle"}')
    np.savez(tmp_path / "x.npz", coef=np.zeros(2))
    with pytest.raises(ValueError, match="not an skdp vertical model"):
        load_model(tmp_path / "x")


def test_multinomial_classifier_round_trip(tmp_path):
    """Three classes: coef (C, d) and intercept (C,) round-trip through npz and
    JSON (no pickle) and load as a fitted softmax classifier."""
    coef = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    intercept = np.array([0.0, 0.5, -0.5])
    npz, js = save_model(
        tmp_path / "m",
        _model(
            estimator="VerticalFMClassifier",
            coef=coef,
            intercept=intercept,
            n_features_in=2,
            classes=["a", "b", "c"],
            params={"epsilon": 0.5, "classes": ["a", "b", "c"]},
            privacy_spent={"epsilon": 0.5, "delta": 0.0},
            party_privacy=np.array([0.4, 0.3]),
            bounds_lower=None,
            bounds_upper=None,
        ),
    )
    meta = json.loads(js.read_text())
    assert meta["intercept"] == [0.0, 0.5, -0.5]
    with np.load(npz, allow_pickle=False) as data:
        assert data["coef"].shape == (3, 2)
    clf = load_model(tmp_path / "m")
    check_is_fitted(clf)
    np.testing.assert_array_equal(clf.coef_, coef)
    np.testing.assert_array_equal(clf.intercept_, intercept)
    assert clf.classes == ["a", "b", "c"] and clf.classes_.tolist() == ["a", "b", "c"]
    X = np.array([[3.0, 0.0], [0.0, 3.0], [-3.0, -3.0]])
    assert clf.predict(X).tolist() == ["a", "b", "c"]
    z = X @ coef.T + intercept
    expected = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=1e-12)
    np.testing.assert_array_equal(clf.decision_function(X), z)
    assert clone(clf).get_params()["classes"] == ["a", "b", "c"]
