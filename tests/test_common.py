"""scikit-learn's estimator checks over every public skdp estimator.

Estimators are discovered from the ``__all__`` of every skdp subpackage, so an
estimator is checked the day it is exported.
"""

import importlib
import inspect
import pkgutil
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone, is_classifier, is_regressor
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import (
    check_param_validation,
    parametrize_with_checks,
)
from sklearn.utils.validation import check_is_fitted

import skdp
from skdp.accounting import track_budget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.preprocessing import PrivateBoundsWarning
from tests.estimator_instances import EXPECTED_FAILED_CHECKS, INSTANCE_FACTORIES


def public_estimator_classes():
    classes = {}
    for info in pkgutil.walk_packages(skdp.__path__, prefix="skdp."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
                classes[obj.__name__] = obj
    return [classes[name] for name in sorted(classes)]


def _requires_arguments(cls):
    params = inspect.signature(cls.__init__).parameters.values()
    return any(
        p.default is inspect.Parameter.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p.name != "self"
        for p in params
    )


def instances():
    out = []
    for cls in public_estimator_classes():
        if cls.__name__ in INSTANCE_FACTORIES:
            out.extend(INSTANCE_FACTORIES[cls.__name__]())
        elif not _requires_arguments(cls):
            out.append(cls())
    return out


def _expected_failed_checks(estimator):
    names = {type(estimator).__name__, repr(estimator)}
    return {
        check: reason
        for (name, check), reason in EXPECTED_FAILED_CHECKS.items()
        if name in names
    }


def test_every_public_estimator_can_be_checked():
    missing = [
        cls.__name__
        for cls in public_estimator_classes()
        if _requires_arguments(cls) and cls.__name__ not in INSTANCE_FACTORIES
    ]
    assert not missing, f"add instances to tests/estimator_instances.py: {missing}"


def _parametrize_with_checks(estimators, **kwargs):
    # scikit-learn 1.6 hands pytest a generator, which pytest >= 9 deprecates
    # (fatal under this project's warning filters): materialize it as a list.
    mark = parametrize_with_checks(estimators, **kwargs)
    argnames, argvalues = mark.args
    return pytest.mark.parametrize(argnames, list(argvalues), **mark.kwargs)


# scikit-learn's checks fit every estimator with its default parameters on
# small random data, so the estimators answer as documented for undeclared
# domains: they infer bounds, classes and categories from the data and warn
# (PrivacyLeakWarning), warn that private ranges on ~100 rows can miss
# (PrivateBoundsWarning), and that a backward-corrected model of noise is no
# better than the majority class. The checks trigger these on purpose; the
# warnings themselves are tested where they are raised.
@pytest.mark.filterwarnings("ignore::skdp.exceptions.PrivacyLeakWarning")
@pytest.mark.filterwarnings("ignore::skdp.preprocessing.PrivateBoundsWarning")
@pytest.mark.filterwarnings("ignore:The backward-corrected:UserWarning")
@pytest.mark.filterwarnings("ignore:The released label frequencies:UserWarning")
@_parametrize_with_checks(instances(), expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _compact_repr(estimator):
    return " ".join(repr(estimator).split())


@pytest.mark.parametrize("estimator", instances(), ids=_compact_repr)
def test_html_repr(estimator):
    """scikit-learn's HTML representation renders every public estimator."""
    from sklearn.utils import estimator_html_repr

    for html in (estimator_html_repr(estimator), estimator._repr_html_()):
        assert html.startswith("<style>")
        assert type(estimator).__name__ in html


def _name(estimator):
    return type(estimator).__name__


@pytest.mark.parametrize("estimator", instances(), ids=_name)
def test_param_validation(estimator):
    # every constructor parameter has a declared constraint...
    params = set(estimator.get_params(deep=False))
    assert params <= set(estimator._parameter_constraints), sorted(
        params - set(estimator._parameter_constraints)
    )
    # ...and scikit-learn's checker (it raises) finds every bad value refused
    check_param_validation(_name(estimator), estimator)


def _ignore_toy_data_warnings():
    """Inside ``warnings.catch_warnings()``: the toy data's estimators infer
    their domains (PrivacyLeakWarning) and release ranges from 120 rows
    (PrivateBoundsWarning), as documented; the tests using it test other
    things."""
    warnings.simplefilter("ignore", PrivacyLeakWarning)
    warnings.simplefilter("ignore", PrivateBoundsWarning)


def _toy_data(estimator, n=120, seed=0):
    """Rows in [-1, 1]^3 and labels the estimator's type expects."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 3)) / 2
    if is_regressor(estimator):
        return X, X @ np.array([0.5, -0.25, 0.1])
    return X, (X[:, 0] + 0.1 * rng.standard_normal(n) > 0).astype(int)


def _with_random_state():
    return [est for est in instances() if "random_state" in est.get_params(deep=False)]


@pytest.mark.parametrize("estimator", _with_random_state(), ids=_name)
def test_random_state_accepts_a_generator(estimator):
    X, y = _toy_data(estimator)
    fits = []
    for _ in range(2):
        est = clone(estimator).set_params(random_state=np.random.default_rng(7))
        with warnings.catch_warnings():
            _ignore_toy_data_warnings()
            est.fit(X, y)
        check_is_fitted(est)
        fits.append(est)
    # the same seeded Generator gives the same result
    for attr in ("coef_", "theta_", "influence_"):
        if hasattr(fits[0], attr):
            np.testing.assert_array_equal(
                getattr(fits[0], attr), getattr(fits[1], attr)
            )


def _warning_paths(estimator, X, y):
    """Fit directly, inside a Pipeline and inside a GridSearchCV."""
    yield "fit", lambda: clone(estimator).fit(X, y)
    yield "pipeline", lambda: make_pipeline(clone(estimator)).fit(X, y)
    grid = {"random_state": [0]} if "random_state" in estimator.get_params() else {}
    if grid and (is_classifier(estimator) or is_regressor(estimator)):
        yield "grid", lambda: GridSearchCV(clone(estimator), grid, cv=2).fit(X, y)


@pytest.mark.parametrize("estimator", instances(), ids=_name)
def test_privacy_leak_warnings_name_the_callers_line(estimator):
    X, y = _toy_data(estimator)
    for path, fit in _warning_paths(estimator, X, y):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit()
        leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
        for w in leaks:
            assert w.filename == __file__, (path, w.filename, w.lineno, str(w.message))


def test_undeclared_fm_domains_warn_at_least_once():
    # the attribution test above must not pass vacuously
    from skdp.linear_model import FMLinearRegression

    X, y = _toy_data(FMLinearRegression())
    with pytest.warns(PrivacyLeakWarning) as record:
        GridSearchCV(FMLinearRegression(), {"epsilon": [1.0]}, cv=2).fit(X, y)
    assert {w.filename for w in record} == {__file__}


def _releasing_fit(estimator):
    """The method that releases: ``fit_resample`` for a label sampler, else fit."""
    if hasattr(estimator, "fit_resample") and not hasattr(estimator, "transform"):
        return estimator.fit_resample
    return estimator.fit


def _spends(estimator, X, y):
    with warnings.catch_warnings():
        _ignore_toy_data_warnings()
        with track_budget() as acc:
            _releasing_fit(clone(estimator))(X, y)
    return acc.spends


def _dp_estimators():
    out = []
    for est in instances():
        X, y = _toy_data(est)
        if _spends(est, X, y):
            out.append(est)
    return out


@pytest.mark.parametrize("estimator", _dp_estimators(), ids=_name)
@pytest.mark.parametrize("fitted_before", [False, True])
def test_refused_budget_leaves_no_model(estimator, fitted_before):
    X, y = _toy_data(estimator)
    est = clone(estimator)
    with warnings.catch_warnings():
        _ignore_toy_data_warnings()
        if fitted_before:
            _releasing_fit(est)(X, y)
        with track_budget(epsilon=1e-12), pytest.raises(BudgetExceededError):
            _releasing_fit(est)(X, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
