"""Fitting helpers of RRInfluenceEstimator: metadata routing, labels, the Hessian.

Everything here runs once per ``fit``: routing ``sample_weight`` (and other
metadata) to the estimator the way scikit-learn's meta-estimators do, encoding the
labels, polishing the fitted parameters to the exact minimizer, factorizing the
Hessian and building the inverse-Hessian-vector-product solver.
"""

import numpy as np
from sklearn import get_config
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    process_routing,
)

from skdp.inspection._ihvp import ConjugateGradientSolver, ExplicitSolver, LissaSolver
from skdp.inspection._objective import safe_cholesky
from skdp.inspection._perturbation import SPARSE_FORMATS, densify
from skdp.utils import check_random_state
from skdp.utils.sklearn_compat import validate_data

__all__ = [
    "MAX_DENSE_PARAMS",
    "encode_labels",
    "final_step",
    "fit_estimator",
    "make_solver",
    "polish_and_factor",
    "route_params",
    "routing_enabled",
]

#: Largest number of parameters K*D for which the dense Hessian is formed.
MAX_DENSE_PARAMS = 4000


def final_step(estimator):
    """The estimator itself, or a Pipeline's last step."""
    if isinstance(estimator, Pipeline):
        last = estimator.steps[-1][1]
        if last is None or last == "passthrough":
            raise TypeError("The Pipeline's last step must be a supported estimator.")
        return last
    return estimator


def routing_enabled():
    return get_config().get("enable_metadata_routing", False)


def route_params(meta, method, sample_weight, params):
    """Parameters for ``meta.estimator.<method>`` and the ``sample_weight`` its
    last step receives (None if it receives none).

    With metadata routing enabled this is scikit-learn's routing (the estimator
    gets what it requested); without it, ``sample_weight`` goes to the estimator
    (a Pipeline's last step) and nothing else is accepted.
    """
    estimator, owner = meta.estimator, type(meta).__name__
    if routing_enabled():
        if sample_weight is not None:  # None is "not passed", not metadata
            params = {"sample_weight": sample_weight, **params}
        routed = process_routing(meta, method, **params)
        routed_params = dict(routed.estimator[method])
        if not isinstance(estimator, Pipeline):
            return routed_params, routed_params.get("sample_weight")
        # what the Pipeline passes on to its last step
        last = MetadataRouter(owner=owner).add(
            last_step=final_step(estimator),
            method_mapping=MethodMapping().add(caller=method, callee=method),
        )
        to_last = last.route_params(params=routed_params, caller=method)
        return routed_params, to_last.last_step[method].get("sample_weight")
    if params:
        raise ValueError(
            f"{owner}.{method} got unexpected parameters {sorted(params)}: metadata "
            "other than sample_weight needs "
            "sklearn.set_config(enable_metadata_routing=True)."
        )
    if sample_weight is None:
        return {}, None
    if isinstance(estimator, Pipeline) and method == "fit":
        name = f"{estimator.steps[-1][0]}__sample_weight"
        return {name: sample_weight}, sample_weight
    return {"sample_weight": sample_weight}, sample_weight


def fit_estimator(meta, X, y, params):
    """Fit ``meta.estimator_`` (a clone of ``meta.estimator``) on the raw input.

    Returns ``(X_raw, Xm, y, feature_map, column_names)``: the raw input kept for
    perturbation (a copy), the model inputs (dense, without intercept column), the
    target, the Pipeline's preceding steps (None for a bare estimator) and the
    column names attributes may refer to. Sets ``n_features_in_`` and
    ``feature_names_in_`` on ``meta``.
    """
    if isinstance(meta.estimator, Pipeline):
        if y is None:
            raise ValueError(f"{type(meta).__name__} requires y to be passed.")
        for stale in ("n_features_in_", "feature_names_in_"):
            if hasattr(meta, stale):
                delattr(meta, stale)
        X_raw = X.copy() if hasattr(X, "copy") else np.array(X, copy=True)
        y = np.asarray(y)
        meta.estimator_ = clone(meta.estimator).fit(X, y, **params)
        feature_map = meta.estimator_[:-1]
        Xm = densify(feature_map.transform(X))
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(meta.estimator_, name):
                setattr(meta, name, getattr(meta.estimator_, name))
        # attributes name the Pipeline's input columns through X_raw itself
        return X_raw, Xm, y, feature_map, None
    column_names = getattr(X, "columns", None)
    X_in = X
    # dok/lil/... become CSR: sklearn checks them for NaN and inf (it cannot a dok)
    X, y = validate_data(meta, X, y, accept_sparse=SPARSE_FORMATS, dtype=np.float64)
    # a DataFrame goes to the estimator as it is, so that it keeps the feature
    # names and predict(DataFrame) does not warn
    X_fit = X_in if hasattr(meta, "feature_names_in_") else X
    meta.estimator_ = clone(meta.estimator).fit(X_fit, y, **params)
    Xm = densify(X)
    return Xm, Xm, y, None, column_names


def encode_labels(y, classes):
    """Class codes 0..C-1 of ``y`` (``classes`` given) or float regression targets."""
    y = np.asarray(y)
    if classes is not None:
        codes = np.searchsorted(classes, y)
        codes = np.clip(codes, 0, len(classes) - 1)
        if np.any(classes[codes] != y):
            raise ValueError("y contains labels not seen during fit.")
        return codes.astype(np.intp)
    return y.astype(np.float64).ravel()


def polish_and_factor(obj, theta, *, damping, polish):
    """(theta, H, L): the exact minimizer (if ``polish``), the damped Hessian there
    and its lower Cholesky factor; ValueError if H is (nearly) singular."""
    if polish:
        H0 = obj.hessian(theta, damping)
        L0 = safe_cholesky(H0 + 1e-10 * np.trace(H0) / obj.p * np.eye(obj.p))
        if L0 is not None:
            theta, _ = obj.minimize(theta, L0)
    H = obj.hessian(theta, damping)
    L = safe_cholesky(H)
    if L is None or np.abs(np.diag(L)).min() <= 1e-7 * np.abs(np.diag(L)).max():
        raise ValueError(
            "The Hessian of the objective is singular or nearly so (e.g. "
            "LinearRegression with collinear columns, or an unpenalized model on "
            f"separable data); set damping > 0 (current damping={damping})."
        )
    return theta, H, L


def make_solver(obj, theta, hessian, params):
    """The inverse-Hessian-vector-product solver ``params["method"]`` asks for
    (``params``: the estimator's ``get_params()``)."""
    if params["method"] == "explicit":
        if hessian is None:
            return ExplicitSolver(obj.hessian(theta, params["damping"]))
        return ExplicitSolver(hessian)
    hvp = obj.make_hvp(theta, params["damping"])
    if params["method"] == "cg":
        return ConjugateGradientSolver(hvp, obj.p, rtol=params["cg_rtol"])
    return LissaSolver(
        hvp,
        obj.p,
        obj.X1.shape[0],
        scale=params["lissa_scale"],
        depth=params["lissa_depth"],
        repeats=params["lissa_repeats"],
        batch_size=params["lissa_batch_size"],
        random_state=check_random_state(params["random_state"]),
    )
