"""PrivateTheilSenRegressor: a robust one-feature line for small n * epsilon."""

import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from skdp._smith_quantile import sample_quantile
from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.linear_model._theil_sen_stats import (
    CUTS,
    cut_predictions,
    kendall_numerators,
    pair_rows,
)
from skdp.utils import check_bounds, feature_bounds, infer_bounds, noise_generator
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.sklearn_compat import (
    BOUNDS,
    RANDOM_STATE,
    Interval,
    Options,
    StrOptions,
    fit_context,
    validate_data,
)

__all__ = ["PrivateTheilSenRegressor", "SELECTION_SHARE"]

#: Share of ``epsilon`` the private choice of the feature takes when
#: ``feature="auto"`` and there is more than one feature. Chosen on the tuning
#: family only (``benchmarks/_theil_sen_share.py``, mean log test MSE / OLS over
#: 23 cells x 20 seeds: 0.05 -> 1.452, 0.1 -> 1.440, 0.15 -> 1.455, 0.25 ->
#: 1.496, 0.5 -> 1.643); the evaluation family would have taken 0.25 (0.719
#: against 0.734 at 0.1).
SELECTION_SHARE = 0.1


def _draw_from_log_weights(logw, rng):
    """Index ``i`` with probability ``exp(logw_i) / sum exp(logw)`` (Gumbel-max)."""
    return int(np.argmax(logw + rng.gumbel(size=logw.size)))


def _private_median(values, epsilon, lower, upper, rng):
    """Smith's exponential-mechanism median on ``[lower, upper]`` (one value
    per record: rank sensitivity 1); the exact median when ``epsilon`` is inf."""
    if math.isinf(epsilon):
        return float(np.median(np.clip(values, lower, upper)))
    return sample_quantile(values, 0.5, epsilon, lower, upper, 1, rng)


class PrivateTheilSenRegressor(RegressorMixin, BudgetTrackingMixin, BaseEstimator):
    """A differentially private Theil-Sen line on one (privately chosen) feature.

    For small ``n * epsilon``, where a private least-squares fit on every
    feature drowns in noise, a robust line on the single most associated
    feature predicts better (issue 35). The rows are paired at random; each
    pair's line is read at two cut points of the feature's declared range;
    the two medians of those readings, released with the exponential
    mechanism, give the line (Alabi, McMillan, Sarathy, Smith & Vadhan 2022,
    "DPTheilSenMatch" with the exponential-mechanism median).

    Parameters
    ----------
    epsilon : float, default=1.0
        In (0, inf]. ``np.inf``: the same procedure without noise.
    bounds_X : tuple (lower, upper), list of pairs, dict or None, default=None
        Declared range of each feature (any form of
        :func:`~skdp.utils.check_bounds`); data outside are clipped. None:
        taken from the data with a :class:`~skdp.exceptions.PrivacyLeakWarning`.
    bounds_y : tuple (lower, upper) or None, default=None
        Declared label range: the medians are released in it and predictions
        are clipped to it. None: taken from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    feature : "auto" or int, default="auto"
        The feature of the line. "auto" with more than one feature: chosen
        privately with ``SELECTION_SHARE`` (1/10) of ``epsilon``; an int (a
        public choice) gives the whole budget to the line.
    random_state : None, int, RandomState or Generator, default=None
        Seeds the pairing and the noise only under skdp's reproducible-noise
        opt-in (``skdp.set_config(reproducible_noise=True)``); by default they
        come from fresh OS entropy (see :doc:`/user_guide/noise_and_seeds`).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        In the user's units; zero except at ``feature_``.
    intercept_ : float
    feature_ : int
        The feature of the line (released when chosen privately).
    cut_values_ : ndarray of shape (2,)
        The released medians: the line's values at 25% and 75% of
        ``feature_``'s declared range.
    bounds_ : tuple of ndarray
    bounds_y_ : tuple of float
    privacy_spent_ : PrivacyBudget
        ``(epsilon, 0)``, recorded in any active
        :func:`~skdp.accounting.track_budget`.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

    Notes
    -----
    **Neighbours**: replace-one, ``n`` public (as every skdp regressor).

    **Pairing.** A uniform random permutation drawn before the data are read
    pairs rows ``(2i, 2i+1)``, ``m = floor(n / 2)`` pairs. A replaced row
    lies in exactly one pair whatever the other rows are.

    **Feature choice** (``feature="auto"``, ``d > 1``), ``epsilon_s =
    SELECTION_SHARE * epsilon``. The utility of feature ``j`` is ``u_j =
    |S_j| / (n - 1)`` with ``S_j = sum_{i<k} sign(x_ij - x_kj) sign(y_i -
    y_k)`` (Kendall's numerator over all pairs of rows, on the clipped data).
    A replaced row enters ``n - 1`` of the pairs and each product moves by
    at most 2, so ``|S_j|`` moves by at most ``2 (n - 1)``: ``u_j`` has
    sensitivity 2 and ``P(j) ∝ exp(epsilon_s u_j / 4)`` is
    ``epsilon_s``-DP (the exponential mechanism). ``|tau|`` ranks features by
    monotone association, which is what the line needs; on one feature or
    with ``feature`` given nothing is spent here.

    **Line.** The chosen feature is mapped to ``[0, 1]`` by its declared
    range. Pair ``(a, b)``'s line is read at ``c in {0.25, 0.75}``: ``y_a +
    (y_b - y_a)(c - x_a) / (x_b - x_a)``; a pair with ``x_a = x_b`` has no
    line and is dropped. Each cut's ``m`` readings hold at most one value per
    pair, so a replaced row changes, adds or removes one value: the median's
    rank utility ``|r(t) - m / 2|`` moves by at most 1 (1/2 when a value is
    added or removed), and Smith's exponential mechanism over ``bounds_y``
    (density
    ``∝ exp(-epsilon_c |r(t) - m / 2| / 2)``, :func:`skdp.tools.quantile`)
    is ``epsilon_c``-DP with ``epsilon_c = (epsilon - epsilon_s) / 2`` per
    cut. Basic composition: ``epsilon_s + 2 epsilon_c = epsilon``. The tests
    compute the joint density of (feature, two medians) on every neighbour
    of a tiny data set with a fixed pairing and check the ratio is at most
    ``exp(epsilon)``.

    **Prediction** (post-processing): the line through the two released
    values, clipped to ``bounds_y``.

    References
    ----------
    Alabi, McMillan, Sarathy, Smith & Vadhan (2022). Differentially private
    simple linear regression. PoPETs 2022(2).
    Smith (2011). Privacy-preserving statistical estimation with optimal
    convergence rates. STOC.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model import PrivateTheilSenRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 10, (2000, 3))
    >>> y = 3 * X[:, 1] + rng.normal(0, 1, 2000)
    >>> reg = PrivateTheilSenRegressor(
    ...     epsilon=1.0, bounds_X=(0, 10), bounds_y=(-5, 35)
    ... ).fit(X, y)
    >>> reg.privacy_spent_
    PrivacyBudget(epsilon=1.0, delta=0.0)
    >>> int(reg.feature_)
    1
    """

    _parameter_constraints = {
        "epsilon": [
            Interval(numbers.Real, 0, None, closed="neither"),
            Options(numbers.Real, {np.inf}),
        ],
        "bounds_X": [BOUNDS, None],
        "bounds_y": [tuple, list, None],
        "feature": [
            StrOptions({"auto"}),
            Interval(numbers.Integral, 0, None, closed="left"),
        ],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self, *, epsilon=1.0, bounds_X=None, bounds_y=None, feature="auto",
        random_state=None,
    ):  # fmt: skip
        self.epsilon = epsilon
        self.bounds_X = bounds_X
        self.bounds_y = bounds_y
        self.feature = feature
        self.random_state = random_state

    def _validated(self, X, y):
        """``(X, y, lower, upper, y_lower, y_upper)``: nothing drawn or spent."""
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True,
                             ensure_min_samples=2)  # fmt: skip
        d = X.shape[1]
        if isinstance(self.feature, numbers.Integral) and self.feature >= d:
            raise ValueError(
                f"feature must be 'auto' or a column index below {d}, got "
                f"{self.feature}."
            )
        lower, upper = feature_bounds(self, X, d)
        if self.bounds_y is None:
            y_lower, y_upper = (float(b[0]) for b in infer_bounds(y, "bounds_y"))
        else:
            y_lower, y_upper = (float(b[0]) for b in check_bounds(
                tuple(self.bounds_y), 1, name="bounds_y"))  # fmt: skip
        return X, y, lower, upper, y_lower, y_upper

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Choose the feature and release the line: spends ``epsilon``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        X, y, lower, upper, y_lower, y_upper = self._validated(X, y)
        n, d = X.shape
        choose = self.feature == "auto" and d > 1
        eps = float(self.epsilon)
        eps_select = SELECTION_SHARE * eps if choose else 0.0
        eps_cut = eps if math.isinf(eps) else (eps - eps_select) / 2.0
        # validated: record the spend (a refused spend draws nothing), then draw
        self.privacy_spent_ = record_spend(
            PrivacyBudget(eps, 0.0), type(self).__name__,
        )  # fmt: skip
        rng = noise_generator(self.random_state)
        Xc = np.clip(X, lower, upper)
        yc = np.clip(y, y_lower, y_upper)
        if choose:
            utility = np.abs(kendall_numerators(Xc, yc)) / (n - 1)
            if math.isinf(eps):
                j = int(np.argmax(utility))
            else:
                j = _draw_from_log_weights(eps_select * utility / 4.0, rng)
        else:
            j = 0 if self.feature == "auto" else int(self.feature)
        width = upper[j] - lower[j]
        x = (Xc[:, j] - lower[j]) / width if width > 0 else np.zeros(n)
        readings = cut_predictions(x, yc, pair_rows(n, rng))
        cuts = np.array(
            [_private_median(r, eps_cut, y_lower, y_upper, rng) for r in readings]
        )
        slope = (cuts[1] - cuts[0]) / (CUTS[1] - CUTS[0])  # per unit of mapped x
        self.coef_ = np.zeros(d)
        self.coef_[j] = slope / width if width > 0 else 0.0
        self.intercept_ = float(cuts[0] - slope * CUTS[0]) - self.coef_[j] * lower[j]
        self.feature_, self.cut_values_ = j, cuts
        self.bounds_, self.bounds_y_ = (lower, upper), (y_lower, y_upper)
        return self

    def predict(self, X):
        """The line at the row's (clipped) feature value, clipped to ``bounds_y_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "privacy_spent_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        lower, upper = self.bounds_
        raw = np.clip(X, lower, upper) @ self.coef_ + self.intercept_
        return np.clip(raw, *self.bounds_y_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        tags.input_tags.allow_nan = False
        return tags
