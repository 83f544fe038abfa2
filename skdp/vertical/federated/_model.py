"""The released model on disk: ``PATH.npz`` (arrays) and ``PATH.json`` (the rest).

No pickle: the npz holds plain numeric arrays (read with ``allow_pickle=False``),
the JSON the estimator's parameters, the declared domain, the privacy spent and
the feature names. :func:`load_model` rebuilds a fitted
:class:`~skdp.vertical.VerticalFMRegressor` or
:class:`~skdp.vertical.VerticalFMClassifier` usable in scikit-learn.
"""

import json
import math
import os
from pathlib import Path

import numpy as np

__all__ = ["load_model", "save_model"]

FORMAT = "skdp.vertical.model/1"
_ARRAYS = ("coef", "party_privacy", "bounds_lower", "bounds_upper", "offset_X")


def _paths(path):
    path = Path(path)
    if path.suffix in (".npz", ".json"):
        path = path.with_suffix("")
    return path.with_suffix(".npz"), path.with_suffix(".json")


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def save_model(path, model):
    """Write ``model`` (a dict) to ``PATH.npz`` + ``PATH.json``, atomically.

    ``model`` holds ``estimator`` (``"VerticalFMRegressor"`` or
    ``"VerticalFMClassifier"``), ``coef`` (shape (n_features,), or (n_classes,
    n_features) for more than two classes), ``intercept`` (a number, or one per
    class), ``params`` (the
    estimator's constructor parameters), ``n_features_in``, and optionally
    ``feature_names``, ``classes``, ``bounds_lower``/``bounds_upper``,
    ``data_norm``, ``bounds_y``, ``intercept_scaling``, ``offset_X``/``offset_y``
    (the centring, for the record: ``coef`` and ``intercept`` are already in the
    user's units), ``privacy_spent``
    (``{"epsilon", "delta"}``), ``party_privacy``, ``parties``.
    Returns the two paths.
    """
    npz, js = _paths(path)
    npz.parent.mkdir(parents=True, exist_ok=True)
    arrays = {
        k: np.asarray(model[k], dtype=np.float64)
        for k in _ARRAYS
        if model.get(k) is not None
    }
    meta = {k: _jsonable(v) for k, v in model.items() if k not in arrays}
    meta["format"] = FORMAT
    tmp_npz, tmp_js = npz.with_name(npz.name + ".tmp"), js.with_name(js.name + ".tmp")
    with open(tmp_npz, "wb") as f:
        np.savez(f, **arrays)
    tmp_js.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    os.replace(tmp_npz, npz)
    os.replace(tmp_js, js)
    return npz, js


def _number(v):
    return float(v) if isinstance(v, str) else v


def load_model(path):
    """A fitted vertical estimator from a model written by the server.

    Parameters
    ----------
    path : str or Path
        ``PATH``, ``PATH.npz`` or ``PATH.json``.

    Returns
    -------
    VerticalFMRegressor or VerticalFMClassifier
        With ``coef_``, ``intercept_``, ``n_features_in_`` (and
        ``feature_names_in_``, ``classes_``; for more than two classes
        ``coef_`` of shape (n_classes, n_features) and ``intercept_`` of shape
        (n_classes,), predicting with the softmax), the declared domain
        (``bounds_``, ``data_norm_``), ``privacy_spent_`` and ``party_privacy_``.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> path = tempfile.mkdtemp() + "/model"
    >>> _ = save_model(path, {"estimator": "VerticalFMRegressor",
    ...     "coef": [0.5, -1.0], "intercept": 0.25, "n_features_in": 2,
    ...     "params": {"epsilon": 1.0}, "privacy_spent": {"epsilon": 1.0,
    ...     "delta": 0.0}})
    >>> reg = load_model(path)
    >>> reg.predict(np.array([[1.0, 1.0]]))
    array([-0.25])
    """
    from skdp.accounting import PrivacyBudget
    from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor

    npz, js = _paths(path)
    meta = json.loads(js.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"{js} is not an skdp vertical model ({meta.get('format')}).")
    with np.load(npz, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    classes = {"VerticalFMRegressor": VerticalFMRegressor}
    classes["VerticalFMClassifier"] = VerticalFMClassifier
    cls = classes.get(meta.get("estimator"))
    if cls is None:
        raise ValueError(f"{js}: unknown estimator {meta.get('estimator')!r}.")
    valid = cls().get_params()
    params = {k: v for k, v in meta.get("params", {}).items() if k in valid}
    for k in ("epsilon", "delta"):
        if k in params:
            params[k] = _number(params[k])
    for k in ("bounds_y",):
        if params.get(k) is not None:
            params[k] = tuple(params[k])
    est = cls(**params)
    est.coef_ = arrays["coef"]
    intercept = meta["intercept"]
    # one intercept per class (multinomial), else a number
    if isinstance(intercept, list):
        est.intercept_ = np.asarray([_number(v) for v in intercept], dtype=np.float64)
    else:
        est.intercept_ = float(_number(intercept))
    est.n_features_in_ = int(meta["n_features_in"])
    if meta.get("feature_names"):
        est.feature_names_in_ = np.asarray(meta["feature_names"], dtype=object)
    if "classes" in meta:
        est.classes_ = np.asarray(meta["classes"])
    if "bounds_lower" in arrays:
        est.bounds_ = (arrays["bounds_lower"], arrays["bounds_upper"])
    else:
        est.bounds_ = None
    est.data_norm_ = meta.get("data_norm")
    if meta.get("bounds_y") is not None:
        est.bounds_y_ = tuple(meta["bounds_y"])
    est.offset_X_ = arrays.get("offset_X")
    est.offset_y_ = float(meta.get("offset_y", 0.0))
    if meta.get("intercept_scaling") is not None:
        est.intercept_scaling_ = float(meta["intercept_scaling"])
    spent = meta.get("privacy_spent") or {}
    if spent:
        est.privacy_spent_ = PrivacyBudget(
            _number(spent["epsilon"]), _number(spent.get("delta", 0.0))
        )
    if "party_privacy" in arrays:
        est.party_privacy_ = arrays["party_privacy"]
    if meta.get("parties") is not None:
        est.parties_ = list(meta["parties"])
        est.n_parties_ = len(est.parties_)
    if meta.get("partition") is not None:
        est.partition_ = [np.asarray(c, dtype=np.intp) for c in meta["partition"]]
    if meta.get("label_party") is not None:
        est.label_party_ = int(meta["label_party"])
    return est
