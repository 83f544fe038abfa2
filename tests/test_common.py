"""scikit-learn's estimator checks over every public skdp estimator.

Estimators are discovered from the ``__all__`` of every skdp subpackage, so an
estimator is checked the day it is exported.
"""

import importlib
import inspect
import pkgutil

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

import skdp
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
