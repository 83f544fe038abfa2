"""Meta-estimator: privatize the labels inside ``fit``, then fit a classifier."""

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    MetaEstimatorMixin,
    clone,
)
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from skdp.preprocessing._categorical import CategoryCodec
from skdp.utils._atomic_fit import atomic_fit
from skdp.utils._sklearn_compat import HasMethods, fit_context


def _inner_has(attr):
    """Expose a method only if the (fitted or unfitted) inner estimator has it."""

    def check(self):
        inner = getattr(self, "estimator_", self.estimator)
        getattr(inner, attr)  # AttributeError propagates: method unavailable
        return True

    return check


def _tags_of(obj):
    try:
        return get_tags(obj)
    except (AttributeError, TypeError):  # not a scikit-learn object: defaults
        return get_tags(BaseEstimator())


class PrivateLabelClassifier(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Fit a classifier on labels released by a label-privacy sampler.

    ``fit(X, y)`` calls ``privatizer.fit_resample(X, y)`` on a clone of
    ``privatizer`` and fits a clone of ``estimator`` on the result; prediction
    methods are delegated. Because the privatization happens inside ``fit``, the
    whole thing is an ordinary classifier: it can end a plain scikit-learn
    ``Pipeline`` and ``GridSearchCV`` can tune ``privatizer__epsilon``.

    Parameters
    ----------
    estimator : classifier
        Fitted (as a clone) on the privatized labels.
    privatizer : sampler with ``fit_resample(X, y)``
        E.g. :class:`RandomizedResponse` or :class:`ExponentialLabelRelease`.
        Give it a ``random_state`` for reproducible fits.

    Attributes
    ----------
    privatizer_ : sampler
        The fitted clone of ``privatizer``; its ``label_matrix_`` (when present)
        is the noise matrix T for forward loss correction.
    estimator_ : classifier
        The fitted clone of ``estimator``.
    classes_ : ndarray
        The privatizer's label domain (``privatizer_.classes_``). The released
        labels may miss a class; ``predict_proba`` still has one column per
        class (zero for classes the inner estimator never saw).
    privacy_spent_ : PrivacyBudget
        The privatizer's guarantee (``privatizer_.privacy_spent_``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    The guarantee is label differential privacy (Chaudhuri & Hsu 2011; Ghazi et
    al. 2021): neighbouring datasets differ in one label, features are public.
    The released labels are (``privacy_spent_``)-label-DP and the inner fit only
    post-processes them together with the public features, so the fitted model
    has the same guarantee. Every ``fit`` is a new release and is recorded by
    :func:`~skdp.accounting.record_spend` (a grid search with 5 values and 3
    folds records 15 spends plus the refit). Model selection itself is not
    private when it scores against the true labels of the validation folds
    (``GridSearchCV``'s default); score on privatized or public labels if the
    choice of epsilon must be covered too.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skdp.preprocessing import PrivateLabelClassifier, RandomizedResponse
    >>> X, y = make_classification(n_samples=500, random_state=0)
    >>> clf = PrivateLabelClassifier(
    ...     LogisticRegression(),
    ...     RandomizedResponse(epsilon=2.0, classes=[0, 1], random_state=0),
    ... ).fit(X, y)
    >>> clf.privacy_spent_
    PrivacyBudget(epsilon=2.0, delta=0.0)
    >>> clf.score(X, y) > 0.8
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"])],
        "privatizer": [HasMethods(["fit_resample"])],
    }

    def __init__(self, estimator, privatizer):
        self.estimator = estimator
        self.privatizer = privatizer

    # scikit-learn's nested parameter validation is kept for the inner objects
    @fit_context(prefer_skip_nested_validation=False)
    @atomic_fit
    def fit(self, X, y, **fit_params):
        """Privatize ``y``, then fit the inner estimator on ``(X, y_private)``.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        **fit_params : dict
            Passed to ``estimator.fit``.

        Returns
        -------
        self
        """
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        privatizer = clone(self.privatizer)
        X_private, y_private = privatizer.fit_resample(X, y)
        estimator = clone(self.estimator).fit(X_private, y_private, **fit_params)
        self.privatizer_ = privatizer
        self.estimator_ = estimator
        self.classes_ = np.asarray(privatizer.classes_)
        self.privacy_spent_ = privatizer.privacy_spent_
        return self

    @property
    def n_features_in_(self):
        """Number of features seen in ``fit``."""
        return self.privatizer_.n_features_in_

    @property
    def feature_names_in_(self):
        """Feature names seen in ``fit`` (only if ``X`` had string column names)."""
        return self.privatizer_.feature_names_in_

    def predict(self, X):
        """Predicted classes of the inner estimator."""
        check_is_fitted(self)
        return self.estimator_.predict(X)

    @available_if(_inner_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities, one column per entry of ``classes_``."""
        check_is_fitted(self)
        return self._align_columns(self.estimator_.predict_proba(X), fill=0.0)

    @available_if(_inner_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """Log class probabilities, one column per entry of ``classes_``."""
        check_is_fitted(self)
        return self._align_columns(self.estimator_.predict_log_proba(X), fill=-np.inf)

    @available_if(_inner_has("decision_function"))
    def decision_function(self, X):
        """The inner estimator's decision function (its own class layout)."""
        check_is_fitted(self)
        return self.estimator_.decision_function(X)

    @available_if(_inner_has("score"))
    def score(self, X, y, **kwargs):
        """The inner estimator's score (accuracy for classifiers)."""
        check_is_fitted(self)
        return self.estimator_.score(X, y, **kwargs)

    def _align_columns(self, proba, fill):
        inner_classes = getattr(self.estimator_, "classes_", self.classes_)
        if np.array_equal(inner_classes, self.classes_):
            return proba
        out = np.full((proba.shape[0], self.classes_.size), fill, dtype=proba.dtype)
        columns = CategoryCodec(self.classes_).encode(
            np.asarray(inner_classes), "the inner estimator's classes_"
        )
        out[:, columns] = proba
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner, sampler = _tags_of(self.estimator), _tags_of(self.privatizer)
        tags.input_tags.sparse = inner.input_tags.sparse and sampler.input_tags.sparse
        tags.input_tags.allow_nan = (
            inner.input_tags.allow_nan and sampler.input_tags.allow_nan
        )
        tags.input_tags.categorical = inner.input_tags.categorical
        tags.input_tags.string = inner.input_tags.string
        # the labels are noisy: accuracy thresholds of the common checks do not apply
        tags.classifier_tags.poor_score = True
        return tags
