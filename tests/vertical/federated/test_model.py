"""The released model file: npz + JSON, no pickle, loads as a fitted estimator."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from skdp.accounting import PrivacyBudget
from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor, load_model
from skdp.vertical.federated import ModelFileError, save_model


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


# ------------------------------------------------------------ damaged files
def _server_model(kind="regressor"):
    """A model as the server writes it (every field of the schema)."""
    model = {
        "estimator": "VerticalFMRegressor",
        "coef": np.array([0.5, -1.0, 2.0]),
        "intercept": 0.25,
        "n_features_in": 3,
        "feature_names": ["a", "b", "c"],
        "parties": ["bank", "insurer"],
        "partition": [[0, 1], [2]],
        "label_party": 0,
        "params": {
            "epsilon": 1.0,
            "delta": 0.0,
            "mechanism": "laplace",
            "fit_intercept": True,
            "linear_weight": 0.9,
            "postprocessing": "ridge",
            "partition": [[0, 1], [2]],
            "label_party": 0,
            "budget": "top-down",
            "party_epsilon": None,
            "pairwise_epsilon": None,
            "secure_backend": "bfv",
            "noise_generation": "threshold",
            "random_state": None,
            "data_norm": None,
            "bounds_y": [-1.0, 1.0],
        },
        "privacy_spent": {"epsilon": 1.0, "delta": 0.0},
        "privacy": {"epsilon": 1.0, "delta": 0.0, "budget": "top-down"},
        "party_privacy": np.array([0.9, 0.7]),
        "group_epsilon": {"local 0": 1.0},
        "sensitivity": {"l1": 3.0, "l2": 2.0},
        "noise_std": 4.0,
        "n_samples": 100,
        "data_norm": None,
        "intercept_scaling": 1.0,
        "bounds_lower": np.full(3, -1.0),
        "bounds_upper": np.ones(3),
        "offset_X": np.zeros(3),
        "offset_y": 0.0,
        "bounds_y": [-1.0, 1.0],
    }
    if kind == "classifier":
        del model["params"]["bounds_y"], model["bounds_y"]
        model["estimator"] = "VerticalFMClassifier"
        model["classes"] = [0, 1]
        model["params"]["classes"] = [0, 1]
    return model


def _edit_json(js, edit):
    meta = json.loads(js.read_text())
    edit(meta)
    js.write_text(json.dumps(meta))


def _write_npz(npz, members, compressed=False):
    import zipfile

    mode = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(npz, "w", compression=mode) as z:
        for name, raw in members.items():
            z.writestr(name, raw)


def _npy(array=None, header=None, data=b""):
    import io

    buf = io.BytesIO()
    if header is None:
        np.save(buf, array, allow_pickle=True)
        return buf.getvalue()
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + data


def _set_array(name, value):
    def damage(npz, js):
        with np.load(npz) as z:
            arrays = {k: z[k] for k in z.files}
        arrays[name] = value
        _write_npz(npz, {f"{k}.npy": _npy(v) for k, v in arrays.items()})

    return damage


def _json(edit):
    return lambda npz, js: _edit_json(js, edit)


def _params(**kw):
    return _json(lambda m: m["params"].update(kw))


_HUGE = {"descr": "<f8", "fortran_order": False, "shape": (10**9,)}
# (damage(npz, js), file at fault, field, kind of model)
DAMAGE = {
    "missing_json": (lambda npz, js: js.unlink(), "json", "file"),
    "missing_npz": (lambda npz, js: npz.unlink(), "npz", "file"),
    "truncated_npz": (
        lambda npz, js: npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2]),
        "npz",
        "file",
    ),
    "npz_not_a_zip": (
        lambda npz, js: npz.write_bytes(b"\x80\x04pickle" * 40),
        "npz",
        "file",
    ),
    "other_zip_member": (
        lambda npz, js: _write_npz(
            npz, {"coef.npy": _npy(np.ones(3)), "run.pkl": b"x"}
        ),
        "npz",
        "run.pkl",
    ),
    "compressed_member": (
        lambda npz, js: _write_npz(npz, {"coef.npy": _npy(np.ones(3))}, True),
        "npz",
        "coef",
    ),
    "huge_declared_array": (
        lambda npz, js: _write_npz(
            npz, {"coef.npy": _npy(header=_HUGE, data=b"\0" * 24)}
        ),
        "npz",
        "coef",
    ),
    "pickled_coef": (
        _set_array("coef", np.array([{"x": 1}, 2, 3], dtype=object)),
        "npz",
        "coef",
    ),
    "float32_coef": (_set_array("coef", np.ones(3, np.float32)), "npz", "coef"),
    "nan_coef": (_set_array("coef", np.array([np.nan, 1.0, 1.0])), "npz", "coef"),
    "coef_too_long": (_set_array("coef", np.ones(4)), "npz", "coef"),
    "coef_2d_for_regressor": (_set_array("coef", np.ones((3, 3))), "npz", "coef"),
    "missing_coef": (
        lambda npz, js: _write_npz(npz, {"party_privacy.npy": _npy(np.ones(2))}),
        "npz",
        "coef",
    ),
    "party_privacy_above_spend": (
        _set_array("party_privacy", np.array([1.5, 0.5])),
        "npz",
        "party_privacy",
    ),
    "party_privacy_per_party": (
        _set_array("party_privacy", np.array([0.5, 0.5, 0.5])),
        "npz",
        "party_privacy",
    ),
    "bounds_crossed": (
        _set_array("bounds_lower", np.full(3, 2.0)),
        "npz",
        "bounds_lower",
    ),
    "offset_shape": (_set_array("offset_X", np.zeros(2)), "npz", "offset_X"),
    "truncated_json": (
        lambda npz, js: js.write_text(js.read_text()[: len(js.read_text()) // 2]),
        "json",
        "file",
    ),
    "json_nan_literal": (
        lambda npz, js: js.write_text(
            js.read_text().replace('"noise_std": 4.0', '"noise_std": NaN')
        ),
        "json",
        "file",
    ),
    "json_not_an_object": (lambda npz, js: js.write_text("[1, 2]"), "json", "file"),
    "json_deep": (
        lambda npz, js: js.write_text("[" * 100_000 + "]" * 100_000),
        "json",
        "file",
    ),
    "json_huge_int": (
        lambda npz, js: js.write_text(
            js.read_text().replace('"n_samples": 100', '"n_samples": ' + "9" * 5000)
        ),
        "json",
        "file",
    ),
    "wrong_format": (
        _json(lambda m: m.update(format="skdp.vertical.model/9")),
        "json",
        "format",
    ),
    "no_format": (_json(lambda m: m.pop("format")), "json", "format"),
    "unknown_field": (_json(lambda m: m.update(run="os.system('x')")), "json", "run"),
    "evil_estimator": (
        _json(lambda m: m.update(estimator="evil")),
        "json",
        "estimator",
    ),
    "evil_mechanism": (_params(mechanism="evil"), "json", "params.mechanism"),
    "evil_backend": (_params(secure_backend="rot13"), "json", "params.secure_backend"),
    "unknown_param": (_params(evil=1), "json", "params.evil"),
    "nan_epsilon": (_params(epsilon="nan"), "json", "params.epsilon"),
    "partition_index_99": (
        _params(partition=[[0, 99], [2]]),
        "json",
        "params.partition",
    ),
    "partition_overlap": (
        _params(partition=[[0, 1], [1, 2]]),
        "json",
        "params.partition",
    ),
    "label_party_out_of_range": (_params(label_party=5), "json", "params.label_party"),
    "partition_differs": (
        _json(lambda m: m.update(partition=[[0], [1, 2]])),
        "json",
        "partition",
    ),
    "gaussian_without_delta": (_params(mechanism="gaussian"), "json", "params.delta"),
    "edited_privacy_spent": (
        _json(lambda m: m["privacy_spent"].update(epsilon=0.1)),
        "json",
        "privacy_spent",
    ),
    "negative_delta_spent": (
        _json(lambda m: m["privacy_spent"].update(delta=-1)),
        "json",
        "privacy_spent.delta",
    ),
    "privacy_record_differs": (
        _json(lambda m: m["privacy"].update(epsilon=0.5)),
        "json",
        "privacy",
    ),
    "nan_intercept": (_json(lambda m: m.update(intercept="nan")), "json", "intercept"),
    "intercept_list_for_one_row": (
        _json(lambda m: m.update(intercept=[0.1, 0.2])),
        "json",
        "intercept",
    ),
    "n_features_as_text": (
        _json(lambda m: m.update(n_features_in="3")),
        "json",
        "n_features_in",
    ),
    "feature_names_short": (
        _json(lambda m: m.update(feature_names=["a", "b"])),
        "json",
        "feature_names",
    ),
    "parties_duplicated": (
        _json(lambda m: m.update(parties=["bank", "bank"])),
        "json",
        "parties",
    ),
    "negative_data_norm": (
        _json(lambda m: m.update(data_norm=-1.0)),
        "json",
        "data_norm",
    ),
    "bounds_y_reversed": (
        _json(lambda m: m.update(bounds_y=[1.0, -1.0])),
        "json",
        "bounds_y",
    ),
    "record_of_wrong_type": (
        _json(lambda m: m.update(n_samples="many")),
        "json",
        "n_samples",
    ),
}
CLASSIFIER_DAMAGE = {
    "coef_3x2_for_binary": (_set_array("coef", np.ones((3, 3))), "npz", "coef"),
    "classes_reversed": (
        _json(lambda m: (m.update(classes=[1, 0]), m["params"].update(classes=[1, 0]))),
        "json",
        "classes",
    ),
    "classes_mixed": (
        _json(
            lambda m: (m.update(classes=[0, "1"]), m["params"].update(classes=[0, "1"]))
        ),
        "json",
        "classes",
    ),
    "classes_differ_from_params": (
        _json(lambda m: m.update(classes=[0, 2])),
        "json",
        "classes",
    ),
}


@pytest.mark.parametrize(
    "kind, case",
    [("regressor", c) for c in DAMAGE] + [("classifier", c) for c in CLASSIFIER_DAMAGE],
)
def test_every_damaged_file_raises_one_error_naming_path_and_field(
    tmp_path, kind, case
):
    """A corpus of damaged and edited files: each raises ModelFileError (a
    ValueError) naming the file at fault and the field, and nothing is loaded
    silently wrong."""
    npz, js = save_model(tmp_path / "m", _server_model(kind))
    load_model(js)  # the undamaged file loads
    damage, where, field = {**DAMAGE, **CLASSIFIER_DAMAGE}[case]
    damage(npz, js)
    with pytest.raises(ModelFileError) as info:
        load_model(js)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.path == (npz if where == "npz" else js), str(err)
    assert err.field == field, str(err)
    assert str(err).startswith(f"{err.path}: field '{field}' ")


def test_a_huge_json_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from skdp.vertical.federated import _model

    npz, js = save_model(tmp_path / "m", _server_model())
    monkeypatch.setattr(_model, "MAX_JSON_BYTES", js.stat().st_size - 1)
    with pytest.raises(ModelFileError, match="more than a model's"):
        load_model(js)


def test_save_model_refuses_what_load_model_would(tmp_path):
    model = _server_model()
    model["coef"] = np.array([np.inf, 0.0, 0.0])
    with pytest.raises(ModelFileError, match="'coef' must hold finite numbers"):
        save_model(tmp_path / "m", model)
    assert not list(tmp_path.iterdir())


def test_the_full_schema_round_trips(tmp_path):
    for kind in ("regressor", "classifier"):
        est = load_model(save_model(tmp_path / kind, _server_model(kind))[0])
        assert est.label_party_ == 0 and est.parties_ == ["bank", "insurer"]
        assert [p.tolist() for p in est.partition_] == [[0, 1], [2]]
        assert est.privacy_spent_ == PrivacyBudget(1.0, 0.0)
        np.testing.assert_array_equal(est.offset_X_, np.zeros(3))


@pytest.mark.parametrize("fails", ["savez", "second_replace"])
def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch, fails):
    """A full disk (ENOSPC) while the model is written: the error propagates
    and neither temporary file stays behind (nor a model file)."""
    import errno
    import os

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    if fails == "savez":
        real_savez = np.savez

        def savez(f, **arrays):  # part of the file is written, then the disk is full
            real_savez(f, **arrays)
            no_space()

        monkeypatch.setattr(np, "savez", savez)
    else:
        real_replace, calls = os.replace, []

        def replace(src, dst):
            calls.append(dst)
            if len(calls) == 2:
                no_space()
            return real_replace(src, dst)

        monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="No space left"):
        save_model(tmp_path / "m", _model())
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert not (tmp_path / "m.json").exists()
