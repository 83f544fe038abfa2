"""Meta-estimator: privatize continuous labels inside ``fit``, then fit a regressor."""

from sklearn import get_config
from sklearn.base import (
    BaseEstimator,
    MetaEstimatorMixin,
    RegressorMixin,
    clone,
)
from sklearn.utils.metadata_routing import process_routing
from sklearn.utils.validation import check_is_fitted

from skdp.accounting import BudgetTrackingMixin, on_behalf_of
from skdp.preprocessing._label_base import (
    PrivatizingWrapperMixin,
    declare_on_privatizer,
)
from skdp.preprocessing._regression_label_release import RegressionLabelRelease
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.release_order import check_fit_params, check_inner_accepts
from skdp.utils.sklearn_compat import HasMethods, fit_context, validate_params_deep

__all__ = ["PrivateLabelRegressor"]


class PrivateLabelRegressor(
    PrivatizingWrapperMixin,
    MetaEstimatorMixin,
    RegressorMixin,
    BudgetTrackingMixin,
    BaseEstimator,
):
    """Fit a regressor on continuous labels released with label DP.

    ``fit(X, y)`` calls ``privatizer.fit_resample(X, y)`` on a clone of
    ``privatizer`` and fits a clone of ``estimator`` on the result;
    ``predict`` is delegated. The privatization happens inside ``fit``, so the
    whole thing is an ordinary regressor: it can end a scikit-learn
    ``Pipeline`` and ``GridSearchCV`` can tune ``privatizer__epsilon``.

    Parameters
    ----------
    estimator : regressor
        Fitted (as a clone) on the released labels.
    privatizer : sampler with ``fit_resample(X, y)`` or None, default=None
        ``None``: :class:`RegressionLabelRelease` with its defaults (automatic
        choice between RR-on-bins and Laplace noise, epsilon=1), which infers
        the label range from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning` unless ``label_bounds`` is
        given.
    label_bounds : tuple (lower, upper) or None, default=None
        The declared label range, given to the privatizer's ``label_bounds``
        parameter (which must then be unset or equal).

    Attributes
    ----------
    privatizer_ : sampler
        The fitted clone of ``privatizer`` (its ``mechanism_`` says which
        mechanism released the labels).
    estimator_ : regressor
        The fitted clone of ``estimator``.
    privacy_spent_ : PrivacyBudget
        The privatizer's guarantee.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    Label differential privacy: neighbouring data sets differ in one label, the
    features are public. The released labels are (``privacy_spent_``)-label-DP
    (see :class:`RegressionLabelRelease` for the derivations) and the inner fit
    post-processes them with the public features, so the fitted model has the
    same guarantee. Every ``fit`` is a new release recorded by
    :func:`~skdp.accounting.record_spend`. Model selection that scores against
    true labels (``GridSearchCV``'s default) is not covered; score on released
    labels if the choice must be private too.

    Metadata routing: with ``sklearn.set_config(enable_metadata_routing=True)``
    ``fit`` routes what the estimator requests (e.g. ``sample_weight``) to
    ``estimator.fit``; without routing every fit parameter goes to it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import RidgeCV
    >>> from skdp.preprocessing import PrivateLabelRegressor, RegressionLabelRelease
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(4000, 3))
    >>> y = X @ [1.0, 2.0, -1.0] + rng.normal(scale=0.3, size=4000)
    >>> reg = PrivateLabelRegressor(
    ...     RidgeCV(),
    ...     RegressionLabelRelease(epsilon=2.0, random_state=0),
    ...     label_bounds=(-2.0, 4.0),
    ... ).fit(X, y)
    >>> reg.privacy_spent_.epsilon
    2.0
    >>> reg.score(X, y) > 0.5
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"])],
        "privatizer": [None, HasMethods(["fit_resample"])],
        "label_bounds": [None, tuple, list],
    }

    def __init__(self, estimator, privatizer=None, *, label_bounds=None):
        self.estimator = estimator
        self.privatizer = privatizer
        self.label_bounds = label_bounds

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
        routing = get_config()["enable_metadata_routing"]
        if routing:
            fit_params = process_routing(self, "fit", **fit_params).estimator.fit
        privatizer = (
            RegressionLabelRelease()
            if self.privatizer is None
            else clone(self.privatizer)
        )
        if self.label_bounds is not None:
            declare_on_privatizer(
                privatizer,
                "label_bounds",
                tuple(self.label_bounds),
                tuple,
                lambda a, b: tuple(a) == tuple(b),
            )
        estimator = clone(self.estimator)
        # the learner's own checks (parameters, fit parameters, what X holds)
        # before the privatizer spends: the learner is fitted after the release
        validate_params_deep(clone(estimator))
        if not routing:
            check_fit_params(estimator, fit_params)
        check_inner_accepts(estimator, X)
        with on_behalf_of(self):  # spends name this class, the inner in brackets
            X_private, y_private = privatizer.fit_resample(X, y)
            estimator.fit(X_private, y_private, **fit_params)
        self.privatizer_ = privatizer
        self.estimator_ = estimator
        self.privacy_spent_ = privatizer.privacy_spent_
        return self

    def predict(self, X):
        """Predictions of the inner estimator."""
        check_is_fitted(self)
        return self.estimator_.predict(X)

    def __sklearn_tags__(self):
        privatizer = self.privatizer or RegressionLabelRelease()
        tags = self._combine_input_tags(super().__sklearn_tags__(), privatizer)
        # the labels are noisy: score thresholds of the common checks do not apply
        tags.regressor_tags.poor_score = True
        return tags
