"""Influence functions that predict the test-loss cost of randomized response."""

import hashlib
import itertools
import numbers
import time

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from skdp.inspection._ihvp import ConjugateGradientSolver, ExplicitSolver, LissaSolver
from skdp.inspection._loss_adapters import (
    check_supported_estimator,
    make_loss_adapter,
)
from skdp.inspection._objective import (
    LinearObjective,
    add_intercept_column,
    safe_cholesky,
)
from skdp.mechanisms import RandomizedResponseMechanism
from skdp.utils import check_epsilon, check_random_state
from skdp.utils._sklearn_compat import (
    RANDOM_STATE,
    HasMethods,
    Interval,
    StrOptions,
    fit_context,
    validate_data,
)

__all__ = ["RRInfluenceEstimator", "LABEL"]

LABEL = "label"
_MAX_DENSE_PARAMS = 4000


def _final_step(estimator):
    if isinstance(estimator, Pipeline):
        last = estimator.steps[-1][1]
        if last is None or last == "passthrough":
            raise TypeError("The Pipeline's last step must be a supported estimator.")
        return last
    return estimator


def _estimator_has(attr):
    def check(self):
        if hasattr(self, "estimator_"):
            return hasattr(self.estimator_, attr)
        return hasattr(self.estimator, attr)

    return check


def _array_digest(*arrays):
    h = hashlib.sha1()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.shape, a.dtype)).encode())
        h.update(a.tobytes() if a.dtype != object else repr(a.tolist()).encode())
    return h.hexdigest()


class _Attribute:
    """A categorical attribute of the raw input: one column or a one-hot block.

    ``categories`` are the values the attribute can take; ``codes`` (n,) index
    them for the training rows. For a one-hot block of m columns, category j < m
    sets column j to 1, and category m (present when some training row has no 1 in
    the block, e.g. ``OneHotEncoder(drop="first")``) sets them all to 0.
    """

    def __init__(self, name, columns, categories, codes, one_hot):
        self.name, self.columns, self.categories = name, columns, categories
        self.codes, self.one_hot = codes, one_hot

    @property
    def n_categories(self):
        return len(self.categories)


def _column_position(X, column, name, column_names=None):
    if isinstance(column, str):
        cols = getattr(X, "columns", column_names)
        if cols is None or column not in list(cols):
            raise ValueError(
                f"attributes[{name!r}] names column {column!r}, which X does not have."
            )
        return list(cols).index(column)
    if isinstance(column, numbers.Integral) and not isinstance(column, bool):
        if not 0 <= column < X.shape[1]:
            raise ValueError(
                f"attributes[{name!r}]: column {column} out of range for "
                f"{X.shape[1]} columns."
            )
        return int(column)
    raise TypeError(
        f"attributes[{name!r}]: a column must be an int or a column name, got "
        f"{column!r}."
    )


def _get_column(X, pos):
    if hasattr(X, "iloc"):
        return np.asarray(X.iloc[:, pos])
    return np.asarray(X)[:, pos]


def _parse_attribute(X, name, spec, column_names=None):
    if name == LABEL:
        raise ValueError(f"{LABEL!r} is reserved for the label; rename the attribute.")
    categories = None
    if isinstance(spec, dict):
        unknown = set(spec) - {"column", "columns", "categories"}
        if unknown or ("column" in spec) == ("columns" in spec):
            raise ValueError(
                f"attributes[{name!r}] as a dict needs exactly one of 'column' or "
                f"'columns' and optionally 'categories', got keys {sorted(spec)}."
            )
        categories = spec.get("categories")
        spec = spec.get("column", spec.get("columns"))
    if isinstance(spec, list | tuple | np.ndarray):
        cols = [_column_position(X, c, name, column_names) for c in spec]
        block = np.column_stack([_get_column(X, c) for c in cols])
        try:
            block = block.astype(np.float64)
        except (TypeError, ValueError):
            block = None
        if block is None or not np.all((block == 0) | (block == 1)):
            raise ValueError(
                f"attribute {name!r} is not categorical: one-hot columns {cols} "
                "must hold only 0 and 1."
            )
        sums = block.sum(axis=1)
        if np.any(sums > 1):
            raise ValueError(
                f"attribute {name!r} is not categorical: a row has more than one 1 "
                f"in one-hot columns {cols}."
            )
        has_reference = bool(np.any(sums == 0))
        codes = np.where(sums == 0, len(cols), block.argmax(axis=1))
        n_cat = len(cols) + has_reference
        if n_cat < 2:
            raise ValueError(f"attribute {name!r} needs at least 2 categories.")
        return _Attribute(name, cols, np.arange(n_cat), codes.astype(np.intp), True)

    pos = _column_position(X, spec, name, column_names)
    values = _get_column(X, pos)
    if values.dtype.kind == "f" or values.dtype == object:
        numeric = values.dtype.kind == "f" or all(
            isinstance(v, numbers.Real) for v in values
        )
        if numeric:
            as_float = values.astype(np.float64)
            if not np.all(np.isfinite(as_float)) or np.any(
                as_float != np.round(as_float)
            ):
                raise ValueError(
                    f"attribute {name!r} is not categorical: column {spec!r} holds "
                    "non-integer numbers (use integer codes or a one-hot block)."
                )
    if categories is None:
        try:
            categories = np.unique(values)
        except TypeError as exc:
            raise ValueError(
                f"attribute {name!r}: column {spec!r} mixes value types (missing "
                "values?); drop them or pass 'categories'."
            ) from exc
    categories = np.asarray(categories)
    lookup = {v: i for i, v in enumerate(categories.tolist())}
    try:
        codes = np.array([lookup[v] for v in values.tolist()], dtype=np.intp)
    except KeyError as exc:
        raise ValueError(
            f"attribute {name!r}: value {exc.args[0]!r} is not among its categories."
        ) from None
    if len(categories) < 2:
        raise ValueError(f"attribute {name!r} needs at least 2 categories.")
    return _Attribute(name, [pos], categories, codes, False)


class RRInfluenceEstimator(MetaEstimatorMixin, BaseEstimator):
    """Predict the test-loss change caused by randomized response, without retraining.

    Fits ``estimator`` once, factorizes the Hessian of the objective it minimizes,
    and then estimates, for any training group ``G``, set of perturbed categorical
    attributes (features and/or the label, each with its own epsilon) and test
    group, the expected change of the test group's mean loss if the group's
    attributes were released through k-ary randomized response and the model
    retrained (Carey, Van & Wu 2023, built on Koh & Liang 2017).

    Parameters
    ----------
    estimator : estimator or Pipeline
        ``LogisticRegression`` (L2 or no penalty; binary or multinomial), ``Ridge``
        or ``LinearRegression`` (single target), or a ``Pipeline`` ending in one of
        them (others via :func:`register_loss_adapter`). A Pipeline's preceding
        steps are fitted once and then treated as a fixed feature map: perturbed
        raw rows are transformed by them, and :meth:`validate` refits only the
        last step.
    attributes : dict or None
        Perturbable categorical attributes of the *raw* input ``X`` (the input of
        the Pipeline if there is one): ``{name: spec}`` where ``spec`` is

        - an int (or a column name for DataFrames): a single column holding
          category values (integer codes, strings, ...; categories are the values
          seen in training);
        - a list of ints: a one-hot block (category j sets column j to 1; an
          all-zero row is an extra reference category);
        - a dict ``{"column": c, "categories": [...]}`` or ``{"columns": [...]}``
          to list the categories explicitly.

        The name ``"label"`` is reserved for the target. The epsilons are given per
        query (see :meth:`influence`) so one fit serves a whole grid.
    method : {"explicit", "cg", "lissa"}, default="explicit"
        Inverse-Hessian-vector product solver (see :mod:`skdp.inspection._ihvp`).
    correction : {None, "forward"}, default=None
        ``"forward"``: the model is assumed retrained with forward loss correction
        (Patrini et al. 2017) applied to the perturbed group only (label RR).
    damping : float, default=0.0
        Added to the Hessian's diagonal (needed for singular objectives, e.g.
        ``LinearRegression`` with collinear columns).
    expectation : {"auto", "exact", "monte_carlo", "scaling"}, default="auto"
        How the expectation over RR outcomes is taken: ``"exact"`` enumerates all
        joint outcomes of the perturbed attributes, ``"monte_carlo"`` samples them
        (stratified by which attributes change), ``"scaling"`` is the approximation
        of Carey, Van & Wu (2023) (see Notes); ``"auto"`` is exact up to
        ``max_outcomes``.
    max_outcomes : int, default=1024
    n_mc_samples : int, default=64
        Samples per change pattern for ``"monte_carlo"``.
    order : {1, 2}, default=1
        1: the first-order influence of Carey, Van & Wu (2023) (one factorization for
        every group and epsilon). 2: Newton-corrected second order (see Notes),
        much more accurate when the test loss is near its minimum (test data
        distributed like the training data) or the group is large, at the cost
        of one small p x p solve per group and epsilon. Not available with
        ``correction="forward"``.
    polish : bool, default=True
        Refine the fitted parameters to the exact minimizer (the estimator's
        stopping tolerance would otherwise leave a non-zero gradient) before
        computing the Hessian; ``estimator_`` itself is left untouched.
    cg_rtol : float, default=1e-10
    lissa_depth : int, default=2000
    lissa_scale : float or None, default=None
    lissa_batch_size : int or None, default=None
    lissa_repeats : int, default=1
    random_state : None, int, RandomState or Generator
        Used by LiSSA minibatches and Monte Carlo expectations.

    Attributes
    ----------
    estimator_ : estimator
        The fitted ``estimator``.
    theta_ : ndarray of shape (K, D)
        Parameters (intercept last) at which the Hessian was taken.
    hessian_ : ndarray of shape (K*D, K*D) or None
        Hessian of the objective (with damping), if K*D <= 4000.
    attributes_ : dict
        Parsed attributes: columns, categories and training codes.
    label_categories_ : ndarray
        Values the label takes under label RR.
    fit_time_ : float
        Seconds spent fitting the model and preparing the solver.
    n_features_in_ : int

    Notes
    -----
    **Objective.** With per-row weights c_i (``sample_weight`` times class weight)
    scikit-learn's ``LogisticRegression`` minimizes ``C sum c_i l_i + 0.5||W||^2``
    (intercept unpenalized except with ``liblinear``), ``Ridge`` minimizes
    ``sum c_i (y_i - z_i)^2 + alpha ||w||^2`` and ``LinearRegression`` the same
    with alpha = 0. Influence does not depend on a global scale of J, but it does
    depend on the loss/penalty ratio, which is why "mean loss + penalty" would be
    wrong by a factor n.

    **Influence.** Replacing row z_i by z'_i moves the minimizer by
    ``-H^{-1} (c'_i grad l(z'_i) - c_i grad l(z_i))`` to first order (Koh & Liang
    2017, with our sum-form objective there is no 1/n), so the test group's mean
    loss changes by ``-s^T sum_i Delta g_i`` with ``s = H^{-1} grad L_test``. ``s``
    is solved once per test group; for a linear model
    ``s^T g(z) = r(z) . (S x1)`` is one dot product per row and outcome.

    **Expectation over RR.** RR on attribute f keeps its value with probability
    p_f = e^eps_f / (d_f - 1 + e^eps_f) and moves to each other value with
    q_f = 1 / (d_f - 1 + e^eps_f). The expected first-order change is linear in
    the gradient differences, so it equals ``sum_o P(o | a_i) phi_i(o)`` over the
    Cartesian product of the perturbed attributes' categories, with
    ``P(o | a_i) = prod_f (p_f if o_f = a_if else q_f)``: ``"exact"``.
    ``"monte_carlo"`` groups outcomes by the set m of changed attributes (there
    are prod_{f in m} (d_f - 1) of them, all with the same probability) and
    averages ``n_mc_samples`` uniform draws within each set: unbiased, with a
    standard error returned by ``return_std=True``. ``"scaling"`` reads equation
    (13) of Carey, Van & Wu (2023): the probability that anything changes,
    ``1 - prod_f p_f``, spread *uniformly* over the N - 1 non-identity outcomes
    (N = prod_f d_f). For a single perturbed attribute this is exact; for several
    it gives outcomes that change many attributes too much weight and outcomes
    that change one attribute too little (the exact probability of changing only
    f is (1 - p_f) prod_{g != f} p_g).

    **Forward correction.** The perturbed group is trained on
    ``-log((T^T p(x))_y~)`` with T the label's RR matrix. Its rows' gradients
    change even when RR kept the label, so the identity outcome contributes; the
    estimate is again an exact expectation, now with an epsilon-dependent
    gradient.

    **Second order** (``order=2``). When the test data look like the training
    data, grad L_test is close to 0 at the fitted model, so the first-order term
    is small and often of the wrong sign, while the real change is dominated by
    the quadratic term (on Adult the first-order estimate correlates poorly or
    negatively with retraining; see benchmarks/bench_influence.py). With
    mu = E[sum_i Delta g_i], the expected Hessian change
    dH = E[sum_i Delta H_i], dtheta = -(H + dH)^{-1} mu and
    B = (H + dH)^{-1} H_test (H + dH)^{-1}:
    ``Delta L ~= grad L_test . dtheta + dtheta^T H_test dtheta / 2
    + sum_i tr(B Cov(Delta g_i)) / 2``, the last term being the variance the RR
    draws add around the mean shift. Using H + dH (one Newton step on the
    expected perturbed objective instead of the Hessian at the old solution)
    matters for feature RR on large groups, where the perturbed rows change the
    curvature itself. Everything depends on epsilon only through the probability
    of each change pattern, so per-pattern sums are accumulated once per group.

    Both orders are small-perturbation expansions: accurate for small groups or
    large epsilon; for groups holding a large share of the data at small epsilon
    the real change saturates and the estimates overshoot. :meth:`validate`
    measures the real effect by retraining.

    References
    ----------
    Carey, Van & Wu (2023), Evaluating the Impact of Local Differential Privacy on
    Utility Loss via Influence Functions. Koh & Liang (2017), Understanding
    Black-box Predictions via Influence Functions. Patrini et al. (2017), Making
    Deep Neural Networks Robust to Label Noise: a Loss Correction Approach.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skdp.inspection import RRInfluenceEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.normal(size=200), rng.integers(0, 3, size=200)])
    >>> y = (X[:, 0] + rng.normal(size=200) > 0).astype(int)
    >>> est = RRInfluenceEstimator(LogisticRegression(), attributes={"group": 1})
    >>> est = est.fit(X, y)
    >>> eps = [0.5, 5.0, np.inf]
    >>> delta = est.influence(X, y, groups=X[:, 1] == 0, perturb={"label": eps})
    >>> delta.shape, float(delta[-1])
    ((3,), 0.0)
    >>> actual = est.validate(X, y, groups=[0, 1], perturb={"group": 1.0}, n_draws=5)
    >>> actual.shape
    (2,)
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit"])],
        "attributes": [dict, None],
        "method": [StrOptions({"explicit", "cg", "lissa"})],
        "correction": [StrOptions({"forward"}), None],
        "damping": [Interval(numbers.Real, 0, None, closed="left")],
        "expectation": [StrOptions({"auto", "exact", "monte_carlo", "scaling"})],
        "max_outcomes": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_mc_samples": [Interval(numbers.Integral, 2, None, closed="left")],
        "order": [Interval(numbers.Integral, 1, 2, closed="both")],
        "polish": ["boolean"],
        "cg_rtol": [Interval(numbers.Real, 0, 1, closed="neither")],
        "lissa_depth": [Interval(numbers.Integral, 1, None, closed="left")],
        "lissa_scale": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "lissa_batch_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "lissa_repeats": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        estimator,
        *,
        attributes=None,
        method="explicit",
        correction=None,
        damping=0.0,
        expectation="auto",
        max_outcomes=1024,
        n_mc_samples=64,
        order=1,
        polish=True,
        cg_rtol=1e-10,
        lissa_depth=2000,
        lissa_scale=None,
        lissa_batch_size=None,
        lissa_repeats=1,
        random_state=None,
    ):
        self.estimator = estimator
        self.attributes = attributes
        self.method = method
        self.correction = correction
        self.damping = damping
        self.expectation = expectation
        self.max_outcomes = max_outcomes
        self.n_mc_samples = n_mc_samples
        self.order = order
        self.polish = polish
        self.cg_rtol = cg_rtol
        self.lissa_depth = lissa_depth
        self.lissa_scale = lissa_scale
        self.lissa_batch_size = lissa_batch_size
        self.lissa_repeats = lissa_repeats
        self.random_state = random_state

    # ------------------------------------------------------------------ fitting
    @fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Fit the estimator and prepare the inverse-Hessian solver.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Raw input (the Pipeline's input, if ``estimator`` is a Pipeline).
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        start = time.perf_counter()
        final = _final_step(self.estimator)
        check_supported_estimator(final)
        self._is_pipeline = isinstance(self.estimator, Pipeline)
        if self._is_pipeline:
            if y is None:
                raise ValueError("RRInfluenceEstimator requires y to be passed.")
            self._X_raw = X.copy() if hasattr(X, "copy") else np.array(X, copy=True)
            y = np.asarray(y)
            fit_params = {}
            if sample_weight is not None:
                fit_params[f"{self.estimator.steps[-1][0]}__sample_weight"] = (
                    sample_weight
                )
            self.estimator_ = clone(self.estimator).fit(X, y, **fit_params)
            Xm = self._preprocess(X)
            if hasattr(self.estimator_, "n_features_in_"):
                self.n_features_in_ = self.estimator_.n_features_in_
            if hasattr(self.estimator_, "feature_names_in_"):
                self.feature_names_in_ = self.estimator_.feature_names_in_
        else:
            column_names = getattr(X, "columns", None)
            X, y = validate_data(self, X, y, accept_sparse=True, dtype=np.float64)
            self.estimator_ = clone(self.estimator).fit(
                X, y, sample_weight=sample_weight
            )
            Xm = self._densify(X)
            self._X_raw = Xm
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != (Xm.shape[0],):
                raise ValueError("sample_weight must have shape (n_samples,).")
        self._sample_weight = sample_weight
        final = _final_step(self.estimator_)
        self._adapter = make_loss_adapter(final)
        if self._adapter.is_classifier:
            self.classes_ = final.classes_
        self._y_enc = self._encode_y(y)
        self.label_categories_ = self._label_categories()

        if self._is_pipeline:
            column_names = None
        self.attributes_ = {
            name: _parse_attribute(self._X_raw, name, spec, column_names)
            for name, spec in (self.attributes or {}).items()
        }
        if self.correction == "forward" and not self._adapter.is_classifier:
            raise ValueError("correction='forward' needs a classifier (label RR).")

        X1 = add_intercept_column(Xm, self._adapter.fit_intercept)
        c = self._adapter.row_weights(self._y_enc, sample_weight)
        self._objective = LinearObjective(X1, self._y_enc, c, self._adapter)
        theta = self._adapter.theta().ravel()
        self.hessian_, self._chol = None, None
        if self._objective.p <= _MAX_DENSE_PARAMS:
            theta = self._polish_and_factor(theta)
        self.theta_ = theta.reshape(self._objective.K, self._objective.D)
        self._solver = self._make_solver(theta)
        Z = self._objective.scores(X1, theta)
        self._base_residual = self._adapter.residual(Z, self._y_enc) * c[:, None]
        self._test_cache = {}
        self.fit_time_ = time.perf_counter() - start
        return self

    @staticmethod
    def _densify(X):
        return X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)

    def _preprocess(self, X):
        if not self._is_pipeline:
            return self._densify(X)
        Xt = self.estimator_[:-1].transform(X)
        return self._densify(Xt)

    def _encode_y(self, y):
        y = np.asarray(y)
        if self._adapter.is_classifier:
            codes = np.searchsorted(self.classes_, y)
            codes = np.clip(codes, 0, len(self.classes_) - 1)
            if np.any(self.classes_[codes] != y):
                raise ValueError("y contains labels not seen during fit.")
            return codes.astype(np.intp)
        return y.astype(np.float64).ravel()

    def _label_categories(self):
        if self._adapter.is_classifier:
            return np.arange(len(self.classes_))
        return np.unique(self._y_enc)

    def _polish_and_factor(self, theta):
        obj = self._objective
        if self.polish:
            H0 = obj.hessian(theta, self.damping)
            L0 = safe_cholesky(H0 + 1e-10 * np.trace(H0) / obj.p * np.eye(obj.p))
            if L0 is not None:
                theta, _ = obj.minimize(theta, L0)
        H = obj.hessian(theta, self.damping)
        L = safe_cholesky(H)
        if L is None or self._ill_conditioned(L):
            raise ValueError(
                "The Hessian of the objective is singular or nearly so (e.g. "
                "LinearRegression with collinear columns, or an unpenalized model on "
                f"separable data); set damping > 0 (current damping={self.damping})."
            )
        self.hessian_, self._chol = H, L
        return theta

    @staticmethod
    def _ill_conditioned(L):
        d = np.abs(np.diag(L))
        return d.min() <= 1e-7 * d.max()

    def _make_solver(self, theta):
        obj = self._objective
        if self.method == "explicit":
            if self.hessian_ is None:
                return ExplicitSolver(obj.hessian(theta, self.damping))
            return ExplicitSolver(self.hessian_)
        hvp = obj.make_hvp(theta, self.damping)
        if self.method == "cg":
            return ConjugateGradientSolver(hvp, obj.p, rtol=self.cg_rtol)
        return LissaSolver(
            hvp,
            obj.p,
            obj.X1.shape[0],
            scale=self.lissa_scale,
            depth=self.lissa_depth,
            repeats=self.lissa_repeats,
            batch_size=self.lissa_batch_size,
            random_state=check_random_state(self.random_state),
        )

    # ------------------------------------------------------------------ delegation
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
    def score(self, X, y, sample_weight=None):
        """Score of the fitted estimator."""
        check_is_fitted(self)
        return self.estimator_.score(X, y, sample_weight=sample_weight)

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

    # ------------------------------------------------------------------ inputs
    def _test_data(self, X_test, y_test):
        if self._is_pipeline:
            Xm = self._preprocess(X_test)
        else:
            Xm = validate_data(
                self, X_test, reset=False, accept_sparse=True, dtype=np.float64
            )
            Xm = self._densify(Xm)
        X1 = add_intercept_column(Xm, self._adapter.fit_intercept)
        y_enc = self._encode_y(y_test)
        if X1.shape[0] != len(y_enc) or len(y_enc) == 0:
            raise ValueError("X_test and y_test must be non-empty and of equal length.")
        return X1, y_enc

    def _test_direction(self, X_test, y_test):
        """Per test set (cached): s = H^{-1} grad(mean test loss), test inputs,
        base loss, gradient and (lazily) the test-loss Hessian."""
        X1, y_enc = self._test_data(X_test, y_test)
        key = _array_digest(X1, y_enc)
        if key not in self._test_cache:
            Z = self._objective.scores(X1, self.theta_)
            R = self._adapter.residual(Z, y_enc)
            grad = ((R.T @ X1) / len(y_enc)).ravel()
            self._test_cache[key] = {
                "s": self._solver.solve(grad).reshape(self.theta_.shape),
                "X1": X1,
                "y": y_enc,
                "loss": float(np.mean(self._adapter.test_loss(Z, y_enc))),
                "grad": grad,
                "H_test": None,
            }
        return self._test_cache[key]

    def _test_hessian(self, entry):
        if entry["H_test"] is None:
            X1, y_enc = entry["X1"], entry["y"]
            test_obj = LinearObjective(X1, y_enc, np.ones(len(y_enc)), self._adapter)
            H_test = test_obj.hessian(self.theta_.ravel(), loss_only=True)
            entry["H_test"] = H_test / len(y_enc)
        return entry["H_test"]

    def _parse_groups(self, groups):
        n = self._objective.X1.shape[0]

        def one(g, i):
            g = np.asarray(g)
            if g.dtype == bool:
                if g.shape != (n,):
                    raise ValueError(
                        f"groups[{i}]: a boolean mask must have shape ({n},), got "
                        f"{g.shape}."
                    )
                mask = g
            else:
                if g.size and g.dtype.kind not in "iu":
                    raise TypeError(f"groups[{i}] must be a boolean mask or indices.")
                idx = g.astype(np.intp).ravel()
                if idx.size and (idx.min() < -n or idx.max() >= n):
                    raise ValueError(f"groups[{i}] has indices out of range.")
                mask = np.zeros(n, dtype=bool)
                mask[idx] = True
            if not mask.any():
                raise ValueError(f"groups[{i}] is empty: a group needs at least 1 row.")
            return mask

        if isinstance(groups, list | tuple):
            if len(groups) == 0:
                raise ValueError("groups is empty.")
            return np.array([one(g, i) for i, g in enumerate(groups)]), False
        arr = np.asarray(groups)
        if arr.ndim == 2 and arr.dtype == bool:
            return np.array([one(g, i) for i, g in enumerate(arr)]), False
        return one(arr, 0)[None, :], True

    def _parse_perturb(self, perturb):
        if not isinstance(perturb, dict) or not perturb:
            raise TypeError(
                "perturb must be a non-empty dict {attribute or 'label': epsilon(s)}."
            )
        names, eps_list = [], []
        for name, eps in perturb.items():
            if name != LABEL and name not in self.attributes_:
                raise ValueError(
                    f"Unknown attribute {name!r}; declared: "
                    f"{sorted(self.attributes_) + [LABEL]}."
                )
            if name == LABEL and len(self.label_categories_) < 2:
                raise ValueError("The label needs at least 2 categories for RR.")
            if name == LABEL and not self._adapter.is_classifier:
                y = self._y_enc
                if np.any(y != np.round(y)):
                    raise ValueError(
                        "The label is not categorical (a regressor's target must "
                        "hold integer values to be perturbed by RR)."
                    )
            arr = np.atleast_1d(np.asarray(eps, dtype=np.float64))
            if arr.ndim != 1 or arr.size == 0:
                raise ValueError(f"epsilon for {name!r} must be a scalar or 1-D array.")
            for e in arr:
                check_epsilon(float(e), name=f"epsilon for {name!r}")
            names.append(name)
            eps_list.append(arr)
        scalar = all(np.ndim(e) == 0 for e in perturb.values())
        try:
            eps = np.array(np.broadcast_arrays(*eps_list))
        except ValueError as exc:
            raise ValueError(
                "epsilon arrays in perturb must have equal length."
            ) from exc
        if self.correction == "forward" and LABEL not in names:
            raise ValueError("correction='forward' needs the label among perturb.")
        return names, eps, scalar

    def _n_categories(self, name):
        if name == LABEL:
            return len(self.label_categories_)
        return self.attributes_[name].n_categories

    def _codes(self, name, rows):
        if name == LABEL:
            return np.searchsorted(self.label_categories_, self._y_enc[rows])
        return self.attributes_[name].codes[rows]

    def _rr_probabilities(self, names, eps):
        """p_keep and p_change, each (F, E), from the RR mechanism."""
        keep = np.empty_like(eps)
        change = np.empty_like(eps)
        for f, name in enumerate(names):
            for e, value in enumerate(eps[f]):
                mech = RandomizedResponseMechanism(value, self._n_categories(name))
                keep[f, e], change[f, e] = mech.p_keep, mech.p_change
        return keep, change

    def _label_matrices(self, names, eps):
        f = names.index(LABEL)
        C = len(self.label_categories_)
        return np.array([RandomizedResponseMechanism(e, C).matrix for e in eps[f]])

    def _perturbed_rows(self, rows, assignment):
        """Model inputs (with intercept column) and encoded labels of ``rows`` after
        replacing the attributes in ``assignment`` ({name: codes})."""
        feature_names = [n for n in assignment if n != LABEL]
        if feature_names:
            if self._is_pipeline:
                X = self._X_raw
                Xr = X.iloc[rows].copy() if hasattr(X, "iloc") else np.array(X[rows])
            else:
                Xr = self._X_raw[rows].copy()
            for name in feature_names:
                attr, codes = self.attributes_[name], assignment[name]
                if attr.one_hot:
                    block = np.zeros((len(rows), len(attr.columns)))
                    inside = codes < len(attr.columns)
                    block[np.flatnonzero(inside), codes[inside]] = 1.0
                    values_by_col = block.T
                else:
                    values_by_col = [attr.categories[codes]]
                for col, values in zip(attr.columns, values_by_col):
                    if hasattr(Xr, "iloc"):
                        Xr.iloc[:, col] = values
                    else:
                        Xr[:, col] = values
            X1 = add_intercept_column(self._preprocess(Xr), self._adapter.fit_intercept)
        else:
            X1 = self._objective.X1[rows]
        if LABEL in assignment:
            y = self.label_categories_[assignment[LABEL]]
        else:
            y = self._y_enc[rows]
        return X1, y

    # ------------------------------------------------------------------ influence
    def _grad_diffs(self, rows, assignment, T):
        """Gradient differences c' grad l(z') - c grad l(z) of each row's outcome,
        shape (n_rows, E or 1, p)."""
        X1, y = self._perturbed_rows(rows, assignment)
        Z = X1 @ self.theta_.T
        sw = None if self._sample_weight is None else self._sample_weight[rows]
        c = self._adapter.row_weights(y, sw)
        if T is None:
            R = (self._adapter.residual(Z, y) * c[:, None])[:, None, :]  # (n, 1, K)
        else:
            R = np.transpose(self._adapter.forward_residual(Z, y, T), (1, 0, 2))
            R = R * c[:, None, None]  # (n, E, K)
        new = R[:, :, :, None] * X1[:, None, None, :]  # (n, E, K, D)
        old = self._base_residual[rows][:, :, None] * self._objective.X1[rows][:, None]
        diff = new - old[:, None]
        return diff.reshape(len(rows), diff.shape[1], -1)

    def _outcome_loop(self, G, rows, names, eps, direction, rng):
        """Expected first- (and second-) order change per group and epsilon.

        Returns (mean (G, E), var (G, E) or None); see the class Notes.
        """
        s = direction.ravel()
        keep, change = self._rr_probabilities(names, eps)
        d = np.array([self._n_categories(n) for n in names])
        n_total = int(np.prod(d))
        codes = {n: self._codes(n, rows) for n in names}
        forward = self.correction == "forward"
        T = self._label_matrices(names, eps) if forward else None
        mode = self._expectation_mode(n_total)
        F, E = len(names), eps.shape[1]
        scaling = (1.0 - np.prod(keep, axis=0)) / max(n_total - 1, 1)  # (E,)

        def pattern_weight(changed):  # changed: (..., F) bool -> (..., E)
            if mode == "scaling":
                return np.where(changed.any(axis=-1)[..., None], scaling, 0.0)
            w = np.where(changed[..., None], change, keep)  # (..., F, E)
            return np.prod(w, axis=-2)

        first = np.zeros((G.shape[0], E))

        def accumulate(assignment, W):
            """First-order group contribution of one outcome per row, weights W."""
            diff = self._grad_diffs(rows, assignment, T)  # (n, E|1, p)
            return G @ (W * -(diff @ s))

        var = None
        if mode in ("exact", "scaling"):
            for combo in itertools.product(*[range(k) for k in d]):
                assignment = {n: np.full(len(rows), o) for n, o in zip(names, combo)}
                changed = np.column_stack([codes[n] != o for n, o in zip(names, combo)])
                if not forward and not changed.any():
                    continue
                first += accumulate(assignment, pattern_weight(changed))
        else:
            var = np.zeros_like(first)
            for pattern in itertools.product([False, True], repeat=F):
                pattern = np.array(pattern)
                if not pattern.any():
                    if forward:  # identity outcome, computed exactly
                        W = pattern_weight(np.zeros((len(rows), F), dtype=bool))
                        first += accumulate(dict(codes), W)
                    continue
                n_pattern = int(np.prod(d[pattern] - 1))
                w = n_pattern * pattern_weight(pattern[None])[0] / self.n_mc_samples
                samples = []
                for _ in range(self.n_mc_samples):
                    assignment = {}
                    for f, name in enumerate(names):
                        if pattern[f]:
                            shift = rng.integers(1, d[f], size=len(rows))
                            assignment[name] = (codes[name] + shift) % d[f]
                        else:
                            assignment[name] = codes[name]
                    W = np.broadcast_to(w, (len(rows), E))
                    samples.append(accumulate(assignment, W) * self.n_mc_samples)
                samples = np.array(samples)
                first += samples.mean(axis=0)
                var += samples.var(axis=0, ddof=1) / self.n_mc_samples
        return first, var

    def _expectation_mode(self, n_total):
        mode = self.expectation
        if mode == "auto":
            mode = "exact" if n_total <= self.max_outcomes else "monte_carlo"
        if mode == "scaling" and self.correction == "forward":
            raise ValueError(
                "expectation='scaling' is not defined with correction='forward'; use "
                "'exact' or 'monte_carlo'."
            )
        return mode

    def _curvature_sum(self, X1, y, sw):
        """sum_i c_i A_i (kron) x_i x_i^T over the given rows, shape (p, p)."""
        c = self._adapter.row_weights(y, sw)
        A = self._adapter.curvature(X1 @ self.theta_.T) * c[:, None, None]
        K, D = A.shape[1], X1.shape[1]
        H = np.empty((K, D, K, D))
        for k in range(K):
            for m in range(k, K):
                block = X1.T @ (X1 * A[:, k, m][:, None])
                H[k, :, m, :] = block
                H[m, :, k, :] = block.T
        return H.reshape(K * D, K * D)

    def _pattern_sums(self, rows, names, d, mode, bits, rng):
        """Per change pattern m: per-row sums of gradient differences a (n, M, p),
        their second moments S (M, p, p) and Hessian changes Dm (M, p, p), each
        summed over the outcomes with that pattern (estimated for Monte Carlo)."""
        M, p = len(bits), self.hessian_.shape[0]
        pattern_id = 2 ** np.arange(len(names))
        codes = {n: self._codes(n, rows) for n in names}
        sw = None if self._sample_weight is None else self._sample_weight[rows]
        a = np.zeros((len(rows), M, p))
        S = np.zeros((M, p, p))
        Dm = np.zeros((M, p, p))
        X1_old, y_old = self._objective.X1[rows], self._y_enc[rows]
        # the curvature of these losses does not depend on the label: a label-only
        # perturbation changes the Hessian only through label-dependent weights
        label_weights = self._adapter.row_weights(self.label_categories_, None)
        hessian_changes = names != [LABEL] or np.ptp(label_weights) > 0

        def accumulate(assignment, factor):
            changed = np.column_stack([assignment[n] != codes[n] for n in names])
            pid = changed @ pattern_id
            diff = self._grad_diffs(rows, assignment, None)[:, 0, :]
            X1_new, y_new = self._perturbed_rows(rows, assignment)
            for m in np.unique(pid):
                if m == 0:
                    continue
                sel = pid == m
                sw_sel = None if sw is None else sw[sel]
                a[sel, m] += factor * diff[sel]
                S[m] += factor * (diff[sel].T @ diff[sel])
                if not hessian_changes:
                    continue
                Dm[m] += factor * self._curvature_sum(X1_new[sel], y_new[sel], sw_sel)

        if mode in ("exact", "scaling"):
            for combo in itertools.product(*[range(k) for k in d]):
                accumulate({n: np.full(len(rows), o) for n, o in zip(names, combo)}, 1)
        else:
            for m_bits in bits[1:]:
                factor = float(np.prod(d[m_bits == 1] - 1)) / self.n_mc_samples
                for _ in range(self.n_mc_samples):
                    assignment = {}
                    for f, name in enumerate(names):
                        shift = rng.integers(1, d[f], size=len(rows)) * m_bits[f]
                        assignment[name] = (codes[name] + shift) % d[f]
                    accumulate(assignment, factor)
        if hessian_changes:
            # each row has exactly prod_{f in m} (d_f - 1) outcomes with pattern m,
            # so the old rows' curvature enters every pattern with that count
            old = self._curvature_sum(X1_old, y_old, sw)
            for m, m_bits in enumerate(bits):
                if m:
                    Dm[m] -= np.prod(d[m_bits == 1] - 1) * old
        return a, S, Dm

    def _second_order(self, G, names, eps, entry, rng):
        """Newton-corrected second-order estimate, per group and epsilon.

        With mu = E[sum_i Delta g_i], dH = E[sum_i Delta H_i] (the expected change
        of the Hessian), dtheta = -(H + dH)^{-1} mu and B = (H + dH)^{-1} H_te
        (H + dH)^{-1}: Delta L ~= grad L_te . dtheta + dtheta^T H_te dtheta / 2
        + sum_i tr(B Cov(Delta g_i)) / 2. Everything depends on epsilon only
        through the probability of each *change pattern* (which attributes
        changed), so per-pattern sums are accumulated once.
        """
        if self.correction == "forward":
            raise ValueError("order=2 is not implemented with correction='forward'.")
        if self.hessian_ is None:
            raise ValueError("order=2 needs the dense Hessian (K*D <= 4000).")
        H, H_te, grad_te = self.hessian_, self._test_hessian(entry), entry["grad"]
        keep, change = self._rr_probabilities(names, eps)
        d = np.array([self._n_categories(n) for n in names])
        n_total = int(np.prod(d))
        mode = self._expectation_mode(n_total)
        F, E = len(names), eps.shape[1]
        bits = np.array(list(itertools.product([0, 1], repeat=F)))[:, ::-1]  # (M, F)
        if mode == "scaling":
            W = np.where(bits.any(axis=1)[:, None], 1.0, 0.0) * (
                (1.0 - np.prod(keep, axis=0)) / max(n_total - 1, 1)
            )
        else:
            W = np.prod(
                np.where(bits[:, :, None] == 1, change[None], keep[None]), axis=1
            )  # (M, E) probability of each single outcome with that pattern
        out = np.zeros((G.shape[0], E))
        for g, mask in enumerate(G):
            a, S, Dm = self._pattern_sums(
                np.flatnonzero(mask), names, d, mode, bits, rng
            )
            a_total = a.sum(axis=0)  # (M, p)
            # sum_i mu_i mu_i^T = sum_{m, m'} w_m w_m' P[m, m'], P = sum_i a_im a_im'^T
            a_flat = a.reshape(a.shape[0], -1)
            P = (a_flat.T @ a_flat).reshape(a.shape[1], a.shape[2], *a.shape[1:])
            for e in range(E):
                w = W[:, e]
                H_new = H + np.tensordot(w, Dm, axes=1)
                dtheta = -np.linalg.solve(H_new, w @ a_total)
                Y = np.linalg.solve(H_new, H_te)
                B = np.linalg.solve(H_new, Y.T).T
                second_moment = np.tensordot(w, S, axes=1)
                mean_outer = np.einsum("m,mpkq,k->pq", w, P, w)
                var = np.sum(B * (second_moment - mean_outer))
                out[g, e] = grad_te @ dtheta + 0.5 * (dtheta @ H_te @ dtheta + var)
        return out

    def influence(self, X_test, y_test, *, groups, perturb, return_std=False):
        """Estimated change of the mean test loss if ``groups`` were perturbed by RR.

        Parameters
        ----------
        X_test, y_test : array-like
            The test group G_te (raw input, as for ``fit``); the loss is the
            estimator's unweighted per-row loss (log-loss or squared error),
            averaged over G_te.
        groups : boolean mask, indices, list of them, or 2-D boolean array
            Training rows G perturbed together (one estimate per group).
        perturb : dict
            ``{attribute name or "label": epsilon}``; epsilons may be 1-D arrays
            (a grid, broadcast across attributes). Each attribute is released by
            k-ary RR over its categories with its own epsilon.
        return_std : bool, default=False
            Also return the Monte Carlo standard error of the first-order estimate
            (zeros when exact or with ``order=2``).

        Returns
        -------
        delta : ndarray of shape (n_groups, n_epsilons)
            Axes given as a single group / scalar epsilons are dropped.
        std : ndarray, same shape, only with ``return_std=True``.
        """
        check_is_fitted(self)
        entry = self._test_direction(X_test, y_test)
        G, single_group = self._parse_groups(groups)
        names, eps, scalar_eps = self._parse_perturb(perturb)
        rng = check_random_state(self.random_state)
        if self.order == 2:
            mean, var = self._second_order(G, names, eps, entry, rng), None
        else:
            rows = np.flatnonzero(G.any(axis=0))
            mean, var = self._outcome_loop(
                G[:, rows].astype(np.float64), rows, names, eps, entry["s"], rng
            )
        std = np.zeros_like(mean) if var is None else np.sqrt(var)
        mean, std = (
            self._squeeze(mean, single_group, scalar_eps),
            self._squeeze(std, single_group, scalar_eps),
        )
        return (mean, std) if return_std else mean

    @staticmethod
    def _squeeze(a, single_group, scalar_eps):
        if scalar_eps:
            a = a[:, 0]
        if single_group:
            a = a[0]
        return a

    def replacement_influence(
        self, X_test, y_test, *, indices, X_new, y_new, per_row=False
    ):
        """Estimated test-loss change if training rows ``indices`` became
        ``(X_new, y_new)`` (Koh & Liang's perturbation influence, deterministic).

        ``X_new`` is raw input (transformed by the Pipeline's preceding steps).
        With ``per_row=True`` returns each row's own estimate (the total is their
        sum), e.g. to rank the most influential rows.
        """
        check_is_fitted(self)
        s = self._test_direction(X_test, y_test)["s"]
        rows = np.atleast_1d(np.asarray(indices, dtype=np.intp))
        X1, y = self._test_data(X_new, y_new)
        if len(y) != len(rows):
            raise ValueError("X_new must have one row per index.")
        sw = None if self._sample_weight is None else self._sample_weight[rows]
        c = self._adapter.row_weights(y, sw)
        g = c * np.sum(self._adapter.residual(X1 @ self.theta_.T, y) * (X1 @ s.T), 1)
        base = np.sum(self._base_residual[rows] * (self._objective.X1[rows] @ s.T), 1)
        return -(g - base) if per_row else float(-np.sum(g - base))

    # ------------------------------------------------------------------ validation
    def validate(
        self,
        X_test,
        y_test,
        *,
        groups,
        perturb,
        n_draws=20,
        refit="exact",
        random_state=None,
        return_std=False,
    ):
        """Measure the change by retraining on RR-perturbed data, over draws.

        Each draw releases the group's perturbed attributes through
        :class:`~skdp.mechanisms.RandomizedResponseMechanism`, retrains, and
        records the test-loss change; the mean over ``n_draws`` is what
        :meth:`influence` estimates.

        Parameters
        ----------
        X_test, y_test, groups, perturb
            As in :meth:`influence`.
        n_draws : int, default=20
        refit : {"exact", "estimator"}, default="exact"
            ``"exact"``: minimize the same objective to tight tolerance, warm
            started at ``theta_`` (also handles ``correction="forward"``);
            ``"estimator"``: refit a clone of the (last step) estimator, compared
            with a clone fitted on the unperturbed data.
        random_state : None, int or Generator
        return_std : bool, default=False
            Also return the standard deviation over draws.

        Returns
        -------
        delta : ndarray (n_groups, n_epsilons), axes dropped as in ``influence``
        std : ndarray, only with ``return_std=True``
        """
        check_is_fitted(self)
        if refit not in ("exact", "estimator"):
            raise ValueError(f"refit must be 'exact' or 'estimator', got {refit!r}.")
        if not isinstance(n_draws, numbers.Integral) or n_draws < 1:
            raise ValueError(f"n_draws must be a positive int, got {n_draws!r}.")
        forward = self.correction == "forward"
        if refit == "estimator" and forward:
            raise ValueError("refit='estimator' cannot train with forward correction.")
        if refit == "exact" and self._chol is None:
            raise ValueError("refit='exact' needs the dense Hessian (K*D <= 4000).")
        entry = self._test_direction(X_test, y_test)
        X1_te, y_te = entry["X1"], entry["y"]
        G, single_group = self._parse_groups(groups)
        names, eps, scalar_eps = self._parse_perturb(perturb)
        rng = check_random_state(random_state)
        T_all = self._label_matrices(names, eps) if forward else None
        obj, adapter = self._objective, self._adapter

        def test_loss(theta2d):
            Z = X1_te @ theta2d.T
            return float(np.mean(adapter.test_loss(Z, y_te)))

        if refit == "estimator":
            final = _final_step(self.estimator_)
            X_model = obj.X1[:, :-1] if adapter.fit_intercept else obj.X1
            base_fit = self._refit_estimator(final, X_model, obj.y)
            base_loss = test_loss(make_loss_adapter(base_fit).theta())
        else:
            base_loss = test_loss(self.theta_)

        results = np.zeros((G.shape[0], eps.shape[1], n_draws))
        for g, mask in enumerate(G):
            rows = np.flatnonzero(mask)
            sw = None if self._sample_weight is None else self._sample_weight[rows]
            if refit == "exact":
                fixed = (obj.X1[~mask], obj.y[~mask], obj.c[~mask], None)
                old_curv = self._curvature_sum(obj.X1[rows], obj.y[rows], sw)
                old_grad = (self._base_residual[rows].T @ obj.X1[rows]).ravel()
            for e in range(eps.shape[1]):
                mechs = {
                    n: RandomizedResponseMechanism(eps[f, e], self._n_categories(n))
                    for f, n in enumerate(names)
                }
                T = None if T_all is None else T_all[e]
                for draw in range(n_draws):
                    assignment = {
                        n: mechs[n].randomize(self._codes(n, rows), rng) for n in names
                    }
                    X1_new, y_new = self._perturbed_rows(rows, assignment)
                    if refit == "estimator":
                        X_all = obj.X1.copy()
                        X_all[rows] = X1_new
                        y_all = obj.y.copy()
                        y_all[rows] = y_new
                        if adapter.fit_intercept:
                            X_all = X_all[:, :-1]
                        fitted = self._refit_estimator(final, X_all, y_all)
                        theta = make_loss_adapter(fitted).theta()
                    else:
                        c_new = adapter.row_weights(y_new, sw)
                        theta = self._exact_refit(
                            fixed, (X1_new, y_new, c_new, T), sw, old_grad, old_curv
                        ).reshape(self.theta_.shape)
                    results[g, e, draw] = test_loss(theta) - base_loss
        mean = self._squeeze(results.mean(axis=2), single_group, scalar_eps)
        std = self._squeeze(results.std(axis=2), single_group, scalar_eps)
        return (mean, std) if return_std else mean

    def _exact_refit(self, fixed, new, sw, old_grad, old_curv):
        """Exact minimizer with the group's rows replaced by ``new``.

        Starts from one Newton step at theta_ (the perturbed objective's gradient
        there is the gradient difference, its Hessian H + Delta H) and polishes
        with L-BFGS preconditioned by that Hessian's Cholesky factor.
        """
        obj, theta = self._objective, self.theta_.ravel()
        X1_new, y_new, c_new, T = new
        _, grad_new = obj.rows_value_grad(X1_new, y_new, c_new, theta, T)
        L = None
        if T is None:
            H_new = self.hessian_ - old_curv + self._curvature_sum(X1_new, y_new, sw)
            L = safe_cholesky(H_new)
        if L is None:
            L = self._chol
        step = solve_triangular(L, grad_new - old_grad, lower=True)
        theta0 = theta - solve_triangular(L, step, lower=True, trans="T")
        # gtol bounds the Newton decrement in objective units (J is a sum over
        # n rows): 1e-6 leaves test-loss errors ~1e-9, far below RR draw noise
        theta_new, _ = obj.minimize(theta0, L, [fixed, new], gtol=1e-6)
        return theta_new

    def _refit_estimator(self, final, X_model, y_enc):
        y = self.classes_[y_enc] if self._adapter.is_classifier else y_enc
        return clone(final).fit(X_model, y, sample_weight=self._sample_weight)
