"""Checks a meta-estimator makes on its inner estimator *before* it spends.

Every skdp release follows one order: validate all inputs and parameters,
record the spend (checking any ``track_budget`` cap), then draw. A
meta-estimator (a label privatizer followed by a learner, a range release
followed by a bounded estimator, a prior estimator fitted between stages)
fits its inner estimator only after its own release, so the inner fit's
validation would come after the spend: a fit that fails on its own input or
parameters would leave a spend in the ledger. These helpers run the inner
estimator's checks first.
"""

import inspect

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array

from skdp.utils.sklearn_compat import validate_params_deep

__all__ = [
    "as_numeric",
    "check_classes_cover",
    "check_fit_params",
    "check_inner_accepts",
    "check_inner_params",
]


def _tags(obj):
    """scikit-learn tags of ``obj``; the defaults for a non-scikit-learn object."""
    try:
        return get_tags(obj)
    except (AttributeError, TypeError):
        return get_tags(BaseEstimator())


def _records_spends(estimator):
    """Whether ``estimator`` (or an estimator nested in it) is a skdp release,
    which records its own spend when fitted (so it is never fitted as a probe)."""
    from skdp.accounting import BudgetTrackingMixin

    if isinstance(estimator, BudgetTrackingMixin):
        return True
    if not hasattr(estimator, "get_params"):
        return False
    return any(
        isinstance(value, BudgetTrackingMixin)
        for value in estimator.get_params(deep=True).values()
    )


def check_inner_params(estimator, **params):
    """A clone of ``estimator`` with ``params`` set, its (and its nested
    estimators') parameters validated as its ``fit`` would validate them.

    Raises scikit-learn's ``InvalidParameterError`` (a ValueError and a
    TypeError naming the parameter) before the caller records anything.
    """
    probe = clone(estimator)
    if params:
        probe.set_params(**params)
    validate_params_deep(probe)
    return probe


def check_fit_params(estimator, fit_params, name="estimator"):
    """Refuse fit parameters that ``estimator.fit`` does not take (TypeError)."""
    if not fit_params:
        return
    try:
        signature = inspect.signature(estimator.fit)
    except (AttributeError, TypeError, ValueError):
        return
    parameters = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    accepted = {p.name for p in parameters}
    unknown = sorted(set(fit_params) - accepted)
    if unknown:
        raise TypeError(
            f"{name} {type(estimator).__name__}.fit got unexpected fit "
            f"parameter(s) {unknown}."
        )


def check_classes_cover(estimator, y):
    """Targets the inner classifier would refuse: not classification targets,
    or labels outside its declared ``classes`` (ValueError)."""
    if not is_classifier(estimator):
        return
    y = np.asarray(y)
    check_classification_targets(y)
    declared = estimator.get_params(deep=False).get("classes")
    if declared is None:
        return
    declared = np.asarray(declared)
    try:
        unknown = ~np.isin(y, declared)
    except TypeError:
        return  # incomparable label types: the inner fit says what is wrong
    if np.any(unknown):
        raise ValueError(
            f"y contains labels not in {type(estimator).__name__}'s classes "
            f"{declared.tolist()}: {np.unique(y[unknown])[:5].tolist()}."
        )


def _first_non_finite_rows(X):
    """Positions of the first row holding a NaN and of the first holding an
    infinity (numeric arrays, sparse matrices, a DataFrame's numeric columns);
    empty when every value is finite."""
    if sp.issparse(X):
        coo = X.tocoo()
        if coo.data.dtype.kind not in "fc":
            return np.empty(0, dtype=np.intp)
        rows, values = coo.row, coo.data
    else:
        if hasattr(X, "dtypes") and hasattr(X, "select_dtypes"):
            numeric = X.select_dtypes(include="number")
            values = numeric.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            values = np.asarray(X)
            if values.dtype.kind not in "fc":
                return np.empty(0, dtype=np.intp)
        if values.ndim != 2:
            return np.empty(0, dtype=np.intp)
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isfinite(values.sum()):  # one pass; an overflow checks below
                return np.empty(0, dtype=np.intp)
        first = [
            np.flatnonzero(np.isnan(values).any(axis=1))[:1],
            np.flatnonzero(np.isinf(values).any(axis=1))[:1],
        ]
        return np.unique(np.concatenate(first)).astype(np.intp)
    first = [rows[np.flatnonzero(np.isnan(values))[:1]]]
    first.append(rows[np.flatnonzero(np.isinf(values))[:1]])
    return np.unique(np.concatenate(first)).astype(np.intp)


def _holds_strings(X):
    """Whether ``X`` has columns that are not numbers (strings, objects,
    categories)."""
    if sp.issparse(X):
        return False
    if hasattr(X, "dtypes") and hasattr(X, "select_dtypes"):
        return X.select_dtypes(include=["number", "bool"]).shape[1] < X.shape[1]
    return np.asarray(X).dtype.kind in "OSU"


#: Rows of the first acceptance probe (a fit on all rows only if it fails).
PROBE_ROWS = 64


def check_inner_accepts(estimator, X, n_classes=2):
    """Fit a clone of ``estimator`` on public dummy labels when its tags say it
    refuses what ``X`` holds (NaN/inf, a sparse matrix, strings), so that its
    own error is raised before the caller spends; a no-op otherwise.

    ``X`` must be public to the caller (features under label privacy): the
    probe sees no private value, and its labels are ``arange(m) % n_classes``
    (a regressor gets them as floats). Tags can be wrong in the cautious
    direction (a ``Pipeline`` that starts with an imputer or a
    ``ColumnTransformer`` is tagged ``allow_nan=False``, ``string=False``): the
    probe settles it. It first fits on a few rows (the first ``PROBE_ROWS``
    and the first rows with a NaN and with an infinity: a column of strings or
    a sparse matrix is in every row); only if that fails does it fit on all
    rows (a few rows can be too few for the estimator), whose error is raised.
    An inner skdp release (which records its own spend) is not probed.
    """
    tags = _tags(estimator).input_tags
    non_finite = (
        np.empty(0, dtype=np.intp) if tags.allow_nan else _first_non_finite_rows(X)
    )
    suspect = (
        (sp.issparse(X) and not tags.sparse)
        or non_finite.size > 0
        or (not tags.string and _holds_strings(X))
    )
    if not suspect or _records_spends(estimator):
        return
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    n_classes = max(int(n_classes), 2)
    rows = np.union1d(np.arange(min(n, max(PROBE_ROWS, 2 * n_classes))), non_finite)
    if rows.size < n:
        subset = X.tocsr()[rows] if sp.issparse(X) else _safe_indexing(X, rows)
        try:
            _probe(estimator, subset, n_classes)
            return
        except Exception:  # noqa: BLE001 - the fit on all rows decides
            pass
    _probe(estimator, X, n_classes)


def _probe(estimator, X, n_classes):
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    y = np.arange(n) % n_classes
    if not is_classifier(estimator):
        y = y.astype(np.float64)
    if isinstance(estimator, Pipeline) and len(estimator.steps) > 1:
        # the transformers are fitted; the last step is checked on what they
        # output by its own tags (probed in turn only if they refuse it), so a
        # learner is not fitted on dummy labels when its input is clean (it
        # could warn about a fit that does not exist)
        Xt = clone(estimator[:-1]).fit_transform(X, y)
        last = estimator.steps[-1][1]
        if last is not None and not (isinstance(last, str) and last == "passthrough"):
            check_inner_accepts(last, Xt, n_classes)
        return
    clone(estimator).fit(X, y)


def as_numeric(X):
    """``X`` (validated by ``validate_data`` with its default ``dtype="numeric"``)
    as numbers: an object array, which is what a DataFrame with a string
    categorical column becomes, is converted to float64 here, so that a column
    that is not numbers fails with scikit-learn's error before any spend
    rather than in the middle of a release."""
    if getattr(X, "dtype", None) is not None and X.dtype.kind == "O":
        X = check_array(X, dtype=np.float64, ensure_min_samples=0)
    return X
