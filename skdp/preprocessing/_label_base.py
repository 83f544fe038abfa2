"""Pieces shared by the label samplers and the meta-estimators that wrap them."""

import inspect

from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    get_routing_for_object,
)

from skdp.accounting import PrivacyBudget
from skdp.preprocessing._categorical import is_dataframe
from skdp.utils.sklearn_compat import fit_context, validate_data

#: The fit parameter of per-row noise likelihoods: ``label_likelihood[i, k]`` =
#: P(released label of row i | true class k), columns in the releasing
#: sampler's ``classes_`` order (its ``label_likelihood_``).
LIKELIHOOD = "label_likelihood"


def likelihood_param(estimator, routing):
    """The fit parameter through which ``estimator.fit`` takes per-row label
    likelihoods (``label_likelihood``, or ``step__label_likelihood`` for a
    Pipeline without metadata routing), or None if it takes none."""
    if routing:
        request = get_routing_for_object(estimator)
        return LIKELIHOOD if request.consumes("fit", [LIKELIHOOD]) else None
    if isinstance(estimator, Pipeline):
        name, last = estimator.steps[-1]
        inner = None if last in (None, "passthrough") else likelihood_param(last, False)
        return None if inner is None else f"{name}__{inner}"
    try:
        accepted = inspect.signature(estimator.fit).parameters
    except (AttributeError, TypeError, ValueError):
        return None
    return LIKELIHOOD if LIKELIHOOD in accepted else None


def declare_on_privatizer(privatizer, name, value, shown, equal):
    """Give the wrapper's declaration ``value`` to the privatizer's parameter
    ``name``: set it when unset; refuse a privatizer without that parameter or
    with a different value (``equal``), so that the domain is declared once.
    ``shown`` is how the values appear in messages (e.g. ``list``)."""
    declared = privatizer.get_params(deep=False)
    if name not in declared:
        raise ValueError(
            f"{name} was given but the privatizer {type(privatizer).__name__} "
            f"has no {name!r} parameter to take it."
        )
    own = declared[name]
    if own is None:
        privatizer.set_params(**{name: value})
    elif not equal(own, value):
        raise ValueError(
            f"{name}={shown(value)!r} conflicts with the privatizer's "
            f"{name}={shown(own)!r}; declare it once."
        )


def validate_features(estimator, X):
    """Record ``n_features_in_`` (and names) of features a sampler passes on.

    The sampler does not read the feature values (the next step validates what
    it reads), so any container and content is accepted; a DataFrame is not
    copied.
    """
    if is_dataframe(X):
        validate_data(estimator, X, skip_check_array=True)
        return X
    return validate_data(
        estimator, X, accept_sparse=True, dtype=None, ensure_all_finite=False
    )


class NoReleaseFitMixin:
    """``fit`` of a label sampler: validation only, nothing is released.

    The sampler defines ``_check_inputs(X, y)``; ``fit_resample`` releases.
    """

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Validate the data and the label domain; nothing is released.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        self._check_inputs(X, y)
        self.privacy_spent_ = PrivacyBudget(0.0)
        return self


def tags_of(obj):
    """scikit-learn tags of ``obj``; the defaults for a non-scikit-learn object."""
    try:
        return get_tags(obj)
    except (AttributeError, TypeError):
        return get_tags(BaseEstimator())


class PrivatizingWrapperMixin:
    """Routing, feature attributes and input tags of a meta-estimator that
    privatizes the labels with ``privatizer_`` and fits ``estimator_``."""

    def get_metadata_routing(self):
        """Metadata routing: ``fit`` routes to ``estimator.fit``.

        Returns
        -------
        routing : MetadataRouter
        """
        return MetadataRouter(owner=self).add(
            estimator=self.estimator,
            method_mapping=MethodMapping().add(caller="fit", callee="fit"),
        )

    @property
    def n_features_in_(self):
        """Number of features seen in ``fit``."""
        return self.privatizer_.n_features_in_

    @property
    def feature_names_in_(self):
        """Feature names seen in ``fit`` (only if ``X`` had string column names)."""
        return self.privatizer_.feature_names_in_

    def _combine_input_tags(self, tags, privatizer):
        """Input tags of the pair: what both accept (sparse, NaN) or the inner's."""
        inner, sampler = tags_of(self.estimator), tags_of(privatizer)
        tags.input_tags.sparse = inner.input_tags.sparse and sampler.input_tags.sparse
        tags.input_tags.allow_nan = (
            inner.input_tags.allow_nan and sampler.input_tags.allow_nan
        )
        tags.input_tags.categorical = inner.input_tags.categorical
        tags.input_tags.string = inner.input_tags.string
        return tags
