"""Meta-estimator: release the feature box privately, then fit any estimator
that needs a declared ``bounds_X`` inside it."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils._param_validation import Interval
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from skdp._fm.bounds_budget import epsilon_left
from skdp._fm.streams import child_generator
from skdp._fm.unit_scaler import UnitScaler
from skdp._ranges.private_bounds import private_bounds, schema_bounds
from skdp.accounting import BudgetTrackingMixin, on_behalf_of
from skdp.utils import check_bounds, noise_generator
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.release_order import (
    as_numeric,
    check_classes_cover,
    check_fit_params,
    check_inner_params,
)
from skdp.utils.sklearn_compat import (
    BOUNDS,
    RANDOM_STATE,
    HasMethods,
    fit_context,
    validate_data,
)

__all__ = ["PrivateBoundsEstimator"]


def _estimator_has(method):
    def check(self):
        getattr(self.estimator, method)  # AttributeError hides the method
        return True

    return check


class PrivateBoundsEstimator(MetaEstimatorMixin, BudgetTrackingMixin, BaseEstimator):
    """Fit an estimator that needs a feature box on a box released privately.

    ``fit(X, y)`` spends ``bounds_budget_share`` of the estimator's
    ``epsilon`` on per-feature ranges (:func:`private_bounds`, inside
    ``envelope`` if given), maps every feature from its range to ``[-1, 1]``
    (clipping), and fits a clone of ``estimator`` there with ``bounds_X=(-1,
    1)`` and the rest of ``epsilon``. ``predict``, ``predict_proba``,
    ``decision_function`` and ``score`` map new rows the same way and
    delegate. For the estimators that do not release their own ranges
    (:class:`~skdp.linear_model.OPLogisticRegression`,
    :class:`~skdp.linear_model.PrivateLogisticRegression`); the FM estimators
    do it themselves (``bounds_X="private"``, ``tighten_bounds=True``).

    Parameters
    ----------
    estimator : estimator with ``epsilon`` and ``bounds_X`` parameters
        Fitted as a clone with ``epsilon`` less what the ranges recorded
        (``epsilon * bounds_budget_share``, or nothing when no range is
        estimated) and
        ``bounds_X=(-1, 1)``; its ``data_norm`` and ``max_nonzero`` (if any)
        must be unset (a norm bound in the user's units would not hold on the
        mapped features).
    envelope : tuple (lower, upper), list of pairs, dict or None, default=None
        Loose public ranges (e.g. from documentation; in any form ``bounds_X``
        takes: ``(lower, upper)``, a list of ``(lo, hi)`` pairs, or a dict by
        column name or index, see :func:`~skdp.utils.check_bounds`) that each
        range is released inside; the release keeps
        them where the budget cannot find tighter ones, or where a looseness
        test finds the data fill half of one (then the rest of the range's
        part is recorded but not used: how much is left depends on the
        released test, so it is not handed to the estimator). None: the
        scale-free
        grid of :func:`private_bounds` (no assumption on the units; warns
        where the budget per column is too small).
    public_bounds : dict or None, default=None
        ``{feature: (lower, upper)}``: ranges the schema gives (indicators,
        one-hot, ordinal codes), used as given at no cost, like a DataFrame's
        boolean columns. A pandas categorical column's categories came from
        the data: its range is released like any other unless listed here.
    bounds_budget_share : float in (0, 1), default=0.2
        The share of the estimator's ``epsilon`` spent on the ranges (the
        FM estimators' default and reason).
    random_state : None, int, RandomState or Generator, default=None
        Source of the ranges' randomness (the estimator keeps its own).
        Seeds the noise only under the reproducible-noise opt-in
        (:func:`skdp.set_config`); by default, fresh OS entropy.

    Attributes
    ----------
    estimator_ : estimator
        The fitted clone, in the mapped coordinates.
    bounds_ : tuple of ndarray
        The released (or public) ranges, in the user's units.
    bounds_privacy_spent_ : PrivacyBudget
        What the ranges' release spent (pure epsilon).
    privacy_spent_ : PrivacyBudget
        The total: the ranges' release composed with the estimator's.
    coef_, intercept_ : ndarray
        Only for a linear estimator: its model in the user's units
        (``x^T w + b`` on the clipped rows).
    classes_ : ndarray
        Only for a classifier.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    **Privacy.** The ranges are ``eps_r``-DP with ``eps_r`` the
    ``bounds_budget_share * epsilon`` that :func:`private_bounds` records
    before its first draw (an envelope kept after its looseness test leaves
    part of it unused, never handed on); given them, the map to
    ``[-1, 1]`` is a public function applied to each row, so a row's change
    changes one mapped row, inside the box ``[-1, 1]^d`` the clone was told:
    its release is ``(epsilon - eps_r, delta)``-DP by the clone's own
    analysis. Both are recorded (:func:`~skdp.accounting.record_spend`) and
    compose to the estimator's ``(epsilon, delta)`` (basic composition).
    Mapping each feature to the same width makes every feature's part of the
    sensitivity the same size, so a feature with a wide range does not drown
    the others in noise. ``predict`` clips new rows to the released box: the
    model was fitted on clipped rows.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model import OPLogisticRegression
    >>> from skdp.preprocessing import PrivateBoundsEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.normal(40, 10, 4000), rng.lognormal(9, 1, 4000)])
    >>> y = (X[:, 0] + rng.normal(0, 10, 4000) > 40).astype(int)
    >>> clf = PrivateBoundsEstimator(
    ...     OPLogisticRegression(epsilon=2.0, delta=1e-6, classes=[0, 1],
    ...                          random_state=0),
    ...     envelope=(0, [150, 1e7]), random_state=0,
    ... ).fit(X, y)
    >>> clf.privacy_spent_
    PrivacyBudget(epsilon=2.0, delta=1e-06)
    >>> bool(clf.score(X, y) > 0.75)
    True
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "get_params"])],
        "envelope": [BOUNDS, None],
        "public_bounds": [dict, None],
        "bounds_budget_share": [Interval(numbers.Real, 0, 1, closed="neither")],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        estimator,
        *,
        envelope=None,
        public_bounds=None,
        bounds_budget_share=0.2,
        random_state=None,
    ):
        self.estimator = estimator
        self.envelope = envelope
        self.public_bounds = public_bounds
        self.bounds_budget_share = bounds_budget_share
        self.random_state = random_state

    def _check_estimator(self):
        params = self.estimator.get_params(deep=False)
        missing = [p for p in ("epsilon", "bounds_X") if p not in params]
        if missing:
            raise TypeError(
                f"estimator must have epsilon and bounds_X parameters; "
                f"{type(self.estimator).__name__} lacks {', '.join(missing)}."
            )
        for name in ("data_norm", "max_nonzero"):
            if params.get(name) is not None:
                raise ValueError(
                    f"estimator's {name} must be None: a bound in the user's units "
                    "does not hold on the features mapped to [-1, 1]."
                )
        epsilon = params["epsilon"]
        if not (isinstance(epsilon, numbers.Real) and epsilon > 0):
            raise ValueError(f"estimator's epsilon must be > 0, got {epsilon!r}.")
        return float(epsilon)

    @fit_context(prefer_skip_nested_validation=False)
    @atomic_fit
    def fit(self, X, y, **fit_params):
        """Release the ranges, then fit a clone of the estimator inside them.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        **fit_params : passed to the estimator's ``fit``.

        Returns
        -------
        self
        """
        # every check, the inner estimator's too, before the ranges' spend
        epsilon = self._check_estimator()
        share = float(self.bounds_budget_share)
        inner = check_inner_params(
            self.estimator, epsilon=epsilon * (1.0 - share), bounds_X=(-1.0, 1.0)
        )
        check_fit_params(self.estimator, fit_params)
        schema = schema_bounds(X)
        X, y = validate_data(self, X, y, ensure_min_samples=2)
        X = as_numeric(X)
        check_classes_cover(self.estimator, y)
        if hasattr(inner, "_check_release"):
            # what the inner fit refuses before its own spend (only the shape
            # of X is read: the clone declares bounds_X=(-1, 1)); at the least
            # epsilon it can get, the check that passes there passes above
            inner._check_release(X, y)
        d = X.shape[1]
        envelope = None
        names = getattr(self, "feature_names_in_", None)
        if self.envelope is not None:
            lower, upper = check_bounds(
                self.envelope, d, name="envelope", feature_names=names
            )
            envelope = {j: (lower[j], upper[j]) for j in range(d)}
        result = private_bounds(
            X,
            epsilon=epsilon * share,
            public_bounds={**schema, **(self.public_bounds or {})},
            feature_names=None if names is None else list(names),
            # a child stream: independent of an inner estimator seeded alike
            random_state=child_generator(noise_generator(self.random_state)),
            source=type(self).__name__ + ".bounds",
            envelope=envelope,
        )
        self._scaler = UnitScaler(result.lower, result.upper)
        self.estimator_ = clone(self.estimator).set_params(
            epsilon=epsilon_left(epsilon, share, result.epsilon), bounds_X=(-1.0, 1.0)
        )
        with on_behalf_of(self):  # spends name this class, the inner in brackets
            self.estimator_.fit(self._scaler.transform(X), y, **fit_params)
        self.bounds_ = (result.lower.copy(), result.upper.copy())
        self.bounds_privacy_spent_ = result.budget
        self.privacy_spent_ = result.budget + self.estimator_.privacy_spent_
        if hasattr(self.estimator_, "classes_"):
            self.classes_ = self.estimator_.classes_
        if hasattr(self.estimator_, "coef_"):
            coef = self._scaler._coef(self.estimator_.coef_)
            self.coef_ = coef
            self.intercept_ = self._scaler._intercept(coef, self.estimator_.intercept_)
        return self

    def _mapped(self, X):
        check_is_fitted(self, "estimator_")
        X = validate_data(self, X, reset=False)
        return self._scaler.transform(np.asarray(X, dtype=np.float64))

    def predict(self, X):
        """The estimator's prediction on the rows mapped to its box."""
        Z = self._mapped(X)  # checks fitted first
        return self.estimator_.predict(Z)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """The estimator's class probabilities on the mapped rows."""
        Z = self._mapped(X)  # checks fitted first
        return self.estimator_.predict_proba(Z)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """The estimator's decision function on the mapped rows."""
        Z = self._mapped(X)  # checks fitted first
        return self.estimator_.decision_function(Z)

    def score(self, X, y, sample_weight=None):
        """The estimator's ``score`` on the mapped rows."""
        Z = self._mapped(X)
        return self.estimator_.score(Z, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self.estimator.__sklearn_tags__()
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        tags.input_tags.allow_nan = False
        tags.non_deterministic = inner.non_deterministic
        return tags
