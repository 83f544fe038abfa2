"""Meta-estimator: privatize the labels inside ``fit``, then fit a classifier."""

import numpy as np
from sklearn import get_config
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    MetaEstimatorMixin,
    clone,
)
from sklearn.utils.metadata_routing import process_routing
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    assert_all_finite,
    check_is_fitted,
    column_or_1d,
)

from skdp.accounting import BudgetTrackingMixin, on_behalf_of
from skdp.preprocessing._categorical import CategoryCodec
from skdp.preprocessing._label_base import (
    LIKELIHOOD,
    PrivatizingWrapperMixin,
    declare_on_privatizer,
    likelihood_param,
)
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.release_order import check_fit_params, check_inner_accepts
from skdp.utils.sklearn_compat import HasMethods, fit_context, validate_params_deep


def _inner_has(attr):
    """Expose a method only if the (fitted or unfitted) inner estimator has it."""

    def check(self):
        inner = getattr(self, "estimator_", self.estimator)
        getattr(inner, attr)  # AttributeError propagates: method unavailable
        return True

    return check


def _n_declared(classes, privatizer):
    """The number of declared classes (of the wrapper or the privatizer), for
    a probe's public labels; 2 when none is declared."""
    if classes is None:
        classes = privatizer.get_params(deep=False).get("classes")
    if classes is None:
        return 2
    return max(np.unique(np.asarray(classes)).size, 2)


def _transition_matrix_keys(estimator):
    """The estimator's ``transition_matrix`` parameters (also nested) as
    (unset, set): unset ones take the privatizer's matrix, set ones are the
    user's choice."""
    if not hasattr(estimator, "get_params"):
        return [], []
    params = estimator.get_params(deep=True)
    keys = [k for k in params if k.rsplit("__", 1)[-1] == "transition_matrix"]
    return (
        [k for k in keys if params[k] is None],
        [k for k in keys if params[k] is not None],
    )


def _corrects(estimator, key):
    """Whether the learner owning ``key`` corrects for noise (its sibling
    ``correction`` parameter, when it has one, is not None)."""
    params = estimator.get_params(deep=True)
    return params.get(key[: -len("transition_matrix")] + "correction", True) is not None


def _pass_noise_description(estimator, privatizer, keys, matrix):
    """Set ``matrix`` (unless None) on the estimator's unset
    ``transition_matrix`` parameters ``keys``, and the privatizer's label order
    (the order of its ``label_matrix_`` and ``label_likelihood_`` columns) on
    their sibling ``classes`` parameters."""
    params = estimator.get_params(deep=True)
    updates = {}
    for key in keys:
        if matrix is not None:
            updates[key] = matrix
        classes_key = key[: -len("transition_matrix")] + "classes"
        if classes_key in params:
            declared = params[classes_key]
            if declared is None:
                updates[classes_key] = privatizer.classes_
            elif not np.array_equal(np.asarray(declared), privatizer.classes_):
                raise ValueError(
                    f"The estimator's {classes_key}={list(declared)!r} does not "
                    "match the privatizer's classes_ "
                    f"{privatizer.classes_.tolist()!r}, the order of its "
                    "label_matrix_ and label_likelihood_ columns."
                )
    if updates:
        estimator.set_params(**updates)


class PrivateLabelClassifier(
    PrivatizingWrapperMixin,
    MetaEstimatorMixin,
    ClassifierMixin,
    BudgetTrackingMixin,
    BaseEstimator,
):
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
    classes : array-like or None, default=None
        The label domain, given to the privatizer's ``classes`` parameter (which
        must then be unset or equal). When neither declares it, the privatizer
        infers it from ``y`` and emits a
        :class:`~skdp.exceptions.PrivacyLeakWarning` (the set of labels present
        is released without noise).
    pass_transition_matrix : bool, default=True
        Describe the release's noise to the estimator, so that a loss-corrected
        learner such as
        :class:`~skdp.linear_model.LossCorrectedLogisticRegression` corrects for
        exactly the noise that was applied:

        - the privatizer's ``label_matrix_`` (the noise matrix T,
          T[i, j] = P(released j | true i)) goes to every ``transition_matrix``
          parameter of the estimator that is left at None (also inside a
          ``Pipeline``), with the label order in the sibling ``classes``
          parameter;
        - the privatizer's ``label_likelihood_`` (shape (n_samples, n_classes):
          P(released label of row i | true class k), for releases whose rows
          go through different mechanisms) goes to ``estimator.fit`` as
          ``label_likelihood`` when the estimator takes it (see Notes) and no
          ``transition_matrix`` of the estimator was set by the user.

        If the estimator has an unset ``transition_matrix`` (and corrects:
        its ``correction`` is not None) but the privatizer describes no noise,
        ``fit`` raises ValueError rather than fit as if the labels were
        clean. ``False`` passes nothing.

    Attributes
    ----------
    privatizer_ : sampler
        The fitted clone of ``privatizer``; its ``label_matrix_`` (when present)
        is the noise matrix T for forward loss correction.
    estimator_ : classifier
        The fitted clone of ``estimator``.
    transition_matrix_ : ndarray of shape (n_classes, n_classes) or None
        The matrix passed to the estimator (None when none was passed).
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

    Metadata routing: with ``sklearn.set_config(enable_metadata_routing=True)``,
    ``fit`` routes the metadata the estimator requests (e.g. ``sample_weight``
    after ``estimator.set_fit_request(sample_weight=True)``) to
    ``estimator.fit``; without routing, every fit parameter goes to it. The
    privatizer takes none: a weight does not change the release of a label.
    ``label_likelihood`` is made here, not passed by the caller: with routing
    it goes to the estimator when its routing requests it
    (``LossCorrectedLogisticRegression`` requests it by default, also inside a
    ``Pipeline``); without routing when ``estimator.fit`` has a
    ``label_likelihood`` parameter, or the last step of a ``Pipeline`` has
    one (as ``step__label_likelihood``).

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

    A loss-corrected learner receives the release's noise matrix:

    >>> from skdp.linear_model import LossCorrectedLogisticRegression
    >>> corrected = PrivateLabelClassifier(
    ...     LossCorrectedLogisticRegression(),
    ...     RandomizedResponse(epsilon=1.0, random_state=0),
    ...     classes=[0, 1],
    ... ).fit(X, y)
    >>> corrected.transition_matrix_.round(3)
    array([[0.731, 0.269],
           [0.269, 0.731]])
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"])],
        "privatizer": [HasMethods(["fit_resample"])],
        "classes": ["array-like", None],
        "pass_transition_matrix": ["boolean"],
    }

    def __init__(
        self, estimator, privatizer, *, classes=None, pass_transition_matrix=True
    ):
        self.estimator = estimator
        self.privatizer = privatizer
        self.classes = classes
        self.pass_transition_matrix = pass_transition_matrix

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
            Passed to ``estimator.fit`` (routed to it when metadata routing is
            enabled).

        Returns
        -------
        self
        """
        y = column_or_1d(y, warn=True)
        # NaN or inf first: sklearn's target-type check casts them (RuntimeWarning)
        assert_all_finite(y, input_name="y")
        check_classification_targets(y)
        if LIKELIHOOD in fit_params:
            raise ValueError(
                f"{LIKELIHOOD} is not a fit parameter of {type(self).__name__}: "
                "it comes from the privatizer's label_likelihood_."
            )
        routing = get_config()["enable_metadata_routing"]
        if routing:
            fit_params = process_routing(self, "fit", **fit_params).estimator.fit
        estimator = clone(self.estimator)
        unset, user_set = _transition_matrix_keys(estimator)
        param = likelihood_param(estimator, routing)
        privatizer = clone(self.privatizer)
        # the learner's own checks (parameters, fit parameters, what X holds)
        # before the privatizer spends: the learner is fitted after the release
        validate_params_deep(clone(estimator))
        if not routing:
            check_fit_params(estimator, fit_params)
        if privatizer.get_params(deep=False).get("columns") is None:
            # the probe may read X only where X is public (labels-only release)
            check_inner_accepts(estimator, X, _n_declared(self.classes, privatizer))
        if self.classes is not None:
            declare_on_privatizer(
                privatizer,
                "classes",
                self.classes,
                list,
                lambda a, b: np.array_equal(np.asarray(a), np.asarray(b)),
            )
        described = getattr(privatizer, "_noise_description", None)
        if self.pass_transition_matrix and described is not None:
            # a skdp privatizer says which description it sets: refuse a
            # learner that would get none before the release, not after
            gets_matrix = bool(unset) and "label_matrix_" in described
            gets_likelihood = (
                param is not None and not user_set and "label_likelihood_" in described
            )
            if not (gets_matrix or gets_likelihood):
                self._refuse_uncorrected(estimator, unset, privatizer)
        with on_behalf_of(self):  # spends name this class, the privatizer in brackets
            X_private, y_private = privatizer.fit_resample(X, y)
        passed = likelihood = None
        if self.pass_transition_matrix:
            passed = getattr(privatizer, "label_matrix_", None) if unset else None
            if param is not None and not user_set:
                likelihood = getattr(privatizer, "label_likelihood_", None)
            if passed is None and likelihood is None:
                self._refuse_uncorrected(estimator, unset, privatizer)
            else:
                _pass_noise_description(estimator, privatizer, unset, passed)
            if likelihood is not None:
                fit_params = {**fit_params, param: likelihood}
        with on_behalf_of(self):  # a private learner spends too
            estimator.fit(X_private, y_private, **fit_params)
        self.transition_matrix_ = passed
        self.privatizer_ = privatizer
        self.estimator_ = estimator
        self.classes_ = np.asarray(privatizer.classes_)
        self.privacy_spent_ = privatizer.privacy_spent_
        return self

    @staticmethod
    def _refuse_uncorrected(estimator, unset, privatizer):
        """A learner that corrects for label noise must not silently fit with
        the identity (no noise) when the privatizer describes none."""
        correcting = [key for key in unset if _corrects(estimator, key)]
        if correcting:
            raise ValueError(
                f"The estimator corrects for label noise ({correcting[0]} is left "
                f"to the privatizer) but {type(privatizer).__name__} exposes "
                "neither label_matrix_ nor label_likelihood_ (or the estimator "
                "takes no label_likelihood), so it would fit as if the labels "
                "were clean. Give the estimator its transition_matrix, use a "
                "privatizer that describes its noise, or set "
                "pass_transition_matrix=False to fit without correction."
            )

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
        tags = self._combine_input_tags(super().__sklearn_tags__(), self.privatizer)
        # the labels are noisy: accuracy thresholds of the common checks do not apply
        tags.classifier_tags.poor_score = True
        return tags
