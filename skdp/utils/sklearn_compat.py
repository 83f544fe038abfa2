"""The one module that imports scikit-learn's private helpers (skdp-internal API).

scikit-learn's ``_fit_context``, ``validate_data`` and ``_param_validation`` are not
public API and have moved between releases (diffprivlib 0.6.6 stopped importing on
scikit-learn 1.9 because it reached into private modules all over). Every skdp module
imports them from here, so a scikit-learn change is mended in this file only, as
imbalanced-learn does with its compat layer.
"""

from numbers import Integral, Real

import numpy as np
from sklearn import get_config
from sklearn.base import _fit_context
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    Options,
    StrOptions,
    validate_params,
)
from sklearn.utils._set_output import ADAPTERS_MANAGER, _get_output_config
from sklearn.utils.validation import _get_feature_names, validate_data

from skdp.utils._validation import BOUNDS_FORMS

__all__ = [
    "BOUNDS",
    "RANDOM_STATE",
    "HasMethods",
    "Integral",
    "Interval",
    "Options",
    "Real",
    "StrOptions",
    "fit_context",
    "get_feature_names",
    "safe_indexing",
    "validate_data",
    "validate_params",
    "validate_params_deep",
    "wrap_transform_output",
]

#: The ``random_state`` constraint of every skdp estimator: None, an int, a
#: ``numpy.random.RandomState`` or a ``numpy.random.Generator`` (scikit-learn's own
#: ``"random_state"`` constraint does not admit a Generator).
RANDOM_STATE = ["random_state", np.random.Generator]


class _PerFeatureBounds(Options):
    """Constraint of a ``bounds_X``-like parameter: any form
    :func:`skdp.utils.check_bounds` reads (a tuple ``(lower, upper)``, a list
    or array of pairs, a dict by feature). Its text is the accepted forms, so
    scikit-learn's ``InvalidParameterError`` shows them. (A subclass of
    ``Options`` because scikit-learn passes only its own constraint classes
    through ``make_constraint``.)"""

    def __init__(self):
        super().__init__(object, set())

    def is_satisfied_by(self, val):
        return isinstance(val, tuple | list | dict | np.ndarray)

    def __str__(self):
        return BOUNDS_FORMS


#: The constraint of every per-feature bounds parameter (``bounds_X``,
#: ``envelope``); the values are read by :func:`skdp.utils.check_bounds`
#: inside ``fit`` (never written back).
BOUNDS = _PerFeatureBounds()

fit_context = _fit_context

#: Rows (or columns) of an array, DataFrame or list, by position.
safe_indexing = _safe_indexing


def wrap_transform_output(estimator, output, original_input):
    """``output`` in the container ``set_output`` (or the global config) asks for.

    For transformers that cannot use scikit-learn's automatic wrapping (a
    ``transform`` that exists conditionally); scikit-learn's own
    ``_wrap_data_with_container`` returns the data unchanged for those.
    """
    container = _get_output_config("transform", estimator)["dense"]
    if container == "default":
        return output
    return ADAPTERS_MANAGER.adapters[container].create_container(
        output, original_input, columns=estimator.get_feature_names_out
    )


def get_feature_names(X):
    """Column names of ``X`` as an object array, or None (scikit-learn's rule)."""
    return _get_feature_names(X)


def validate_params_deep(estimator):
    """Validate ``estimator``'s parameters and those of every estimator nested
    in them, as each one's ``fit`` would (scikit-learn's ``_validate_params``:
    ``InvalidParameterError`` naming the parameter). Objects without parameter
    constraints are skipped; nothing is validated under scikit-learn's
    ``skip_parameter_validation`` config, as their fits would not either."""
    if get_config().get("skip_parameter_validation", False):
        return
    objects = [estimator]
    if hasattr(estimator, "get_params"):
        objects += list(estimator.get_params(deep=True).values())
    for obj in objects:
        if isinstance(obj, type):
            continue  # a class given as a parameter value
        if hasattr(obj, "_parameter_constraints") and hasattr(obj, "_validate_params"):
            obj._validate_params()
