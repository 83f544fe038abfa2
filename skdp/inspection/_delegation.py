"""What RRInfluenceEstimator delegates to its estimator: methods, routing, tags."""

from sklearn.utils import get_tags
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from skdp.inspection._fitting import route_params

__all__ = ["FittedEstimatorDelegationMixin"]


def _estimator_has(attr):
    def check(self):
        if hasattr(self, "estimator_"):
            return hasattr(self.estimator_, attr)
        return hasattr(self.estimator, attr)

    return check


class FittedEstimatorDelegationMixin:
    """predict, predict_proba, ..., score of ``estimator_``; metadata routing and
    tags of ``estimator``."""

    def get_metadata_routing(self):
        """Metadata routing: ``fit`` and ``score`` metadata go to ``estimator``.

        Returns
        -------
        routing : MetadataRouter
        """
        return MetadataRouter(owner=type(self).__name__).add(
            estimator=self.estimator,
            method_mapping=MethodMapping()
            .add(caller="fit", callee="fit")
            .add(caller="score", callee="score"),
        )

    @available_if(_estimator_has("predict"))
    def predict(self, X):
        """Predict with the fitted estimator."""
        check_is_fitted(self)
        return self.estimator_.predict(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the fitted estimator."""
        check_is_fitted(self)
        return self.estimator_.predict_proba(X)

    @available_if(_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """Log class probabilities of the fitted estimator."""
        check_is_fitted(self)
        return self.estimator_.predict_log_proba(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """Decision function of the fitted estimator."""
        check_is_fitted(self)
        return self.estimator_.decision_function(X)

    @available_if(_estimator_has("score"))
    def score(self, X, y, sample_weight=None, **score_params):
        """Score of the fitted estimator (metadata routed as for ``fit``)."""
        check_is_fitted(self)
        params, _ = route_params(self, "score", sample_weight, score_params)
        return self.estimator_.score(X, y, **params)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        tags.target_tags.required = True
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.string = inner.input_tags.string
        tags.input_tags.categorical = inner.input_tags.categorical
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        return tags
