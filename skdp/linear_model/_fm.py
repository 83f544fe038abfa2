"""FMLinearRegression and FMLogisticRegression: the functional mechanism."""

import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.linear_model._functional_mechanism import (
    DataDomain,
    add_noise,
    balanced_linear_weight,
    default_coef_norm,
    draw_noise,
    lattice_granularity,
    make_mechanism,
    n_released,
    release_noise_std,
    sensitivity,
    solve_noisy_quadratic,
    sufficient_statistics,
)
from skdp.utils import check_bounds, check_random_state, clip_to_bounds, clip_to_norm
from skdp.utils._sklearn_compat import (
    RANDOM_STATE,
    Interval,
    Options,
    StrOptions,
    fit_context,
    validate_data,
)
from skdp.utils._warnings import warn_privacy_leak

__all__ = ["FMLinearRegression", "FMLogisticRegression"]

# rows per chunk when accumulating statistics: bounds the memory of the clipped copy
_CHUNK_BYTES = 2**23


class _BaseFM(BudgetTrackingMixin, BaseEstimator):
    """Shared fit / partial_fit / release logic; subclasses set the objective."""

    _objective = None

    _parameter_constraints = {
        "epsilon": [
            Interval(numbers.Real, 0, None, closed="neither"),
            Options(numbers.Real, {np.inf}),
        ],
        "delta": [Interval(numbers.Real, 0, 1, closed="left")],
        "mechanism": [StrOptions({"laplace", "gaussian"})],
        "bounds_X": [tuple, list, None],
        "data_norm": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "max_nonzero": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "fit_intercept": ["boolean"],
        "linear_weight": [
            StrOptions({"auto"}),
            Interval(numbers.Real, 0, None, closed="neither"),
        ],
        "postprocessing": [StrOptions({"ridge", "trim", "none"})],
        "random_state": RANDOM_STATE,
    }

    # ------------------------------------------------------------------ helpers
    def _check_privacy_params(self):
        if self.mechanism == "gaussian" and not 0 < self.delta < 1:
            raise ValueError(
                f"delta must be in (0, 1) for mechanism='gaussian', got {self.delta!r}."
            )

    @property
    def _spend(self):
        delta = self.delta if self.mechanism == "gaussian" else 0.0
        if math.isinf(self.epsilon):
            delta = 0.0
        return PrivacyBudget(self.epsilon, delta)

    def _y_bounds(self, y):  # regression overrides
        return None

    def _build_domain(self, X, y):
        """The declared domain, inferring missing bounds (with a warning)."""
        d = X.shape[1]
        private = not math.isinf(self.epsilon)
        lower = upper = None
        if self.bounds_X is not None:
            lower, upper = check_bounds(self.bounds_X, d, name="bounds_X")
        data_norm = self.data_norm
        if lower is None and data_norm is None:
            if private:
                warn_privacy_leak(
                    "Neither bounds_X nor data_norm was declared, so data_norm is "
                    "taken from the data: the result leaks the largest row norm and "
                    "is not differentially private. Declare bounds_X or data_norm."
                )
            norms = np.sqrt(np.einsum("ij,ij->i", X, X)) if X.size else np.zeros(1)
            data_norm = float(norms.max()) or 1.0
        if data_norm is not None:
            data_norm = float(data_norm)
        if lower is not None and data_norm is not None:
            if np.any((lower > 0) | (upper < 0)):
                raise ValueError(
                    "bounds_X must contain 0 for every feature when data_norm is "
                    "also given."
                )
        if self.max_nonzero is not None and lower is not None:
            if np.any((lower > 0) | (upper < 0)):
                raise ValueError(
                    "bounds_X must contain 0 for every feature when max_nonzero is "
                    "given."
                )
        self.bounds_ = None if lower is None else (lower, upper)
        self.data_norm_ = data_norm
        if data_norm is not None:
            scaling = data_norm
        else:
            scaling = float(np.max(np.maximum(np.abs(lower), np.abs(upper))))
        self.intercept_scaling_ = scaling if scaling > 0 else 1.0
        return DataDomain(
            n_features=d,
            lower=lower,
            upper=upper,
            data_norm=data_norm,
            y_bounds=self._y_bounds(y),
            fit_intercept=bool(self.fit_intercept),
            intercept_scaling=self.intercept_scaling_,
            max_nonzero=self.max_nonzero,
        )

    def _clip(self, X, y):
        """Copies of the chunk clipped to the declared domain (inputs untouched)."""
        k = self.max_nonzero
        if k is not None and k < X.shape[1]:
            # keep the k entries of largest magnitude in each row
            small = np.argpartition(np.abs(X), X.shape[1] - k, axis=1)[:, :-k]
            X = X.copy()
            np.put_along_axis(X, small, 0.0, axis=1)
        if self.bounds_ is not None:
            X = clip_to_bounds(X, *self.bounds_)
        if self.data_norm_ is not None:
            X = clip_to_norm(X, self.data_norm_)
        return X, y

    def _chunk_statistics(self, X, y):
        rows = max(1, _CHUNK_BYTES // (8 * max(X.shape[1], 1)))
        # one BLAS thread (as sklearn's KMeans does): tall-skinny Gram products
        # gain little from threads, and oversubscribed OpenBLAS threads spin
        with threadpool_limits(limits=1, user_api="blas"):
            return self._chunk_sums(X, y, rows)

    def _chunk_sums(self, X, y, rows):
        A = b = None
        for start in range(0, X.shape[0], rows):
            Xc, yc = self._clip(X[start : start + rows], y[start : start + rows])
            A_c, b_c = sufficient_statistics(
                Xc,
                yc,
                self._objective,
                fit_intercept=self.fit_intercept,
                intercept_scaling=self.intercept_scaling_,
            )
            A, b = (A_c, b_c) if A is None else (A + A_c, b + b_c)
        return A, b

    def _release(self, A, b, rng):
        """Noise the statistics once and solve; sets coef_, intercept_, sensitivity_."""
        domain = self._domain
        if self.linear_weight == "auto":
            c = balanced_linear_weight(self._objective, domain, self.mechanism)
        else:
            c = float(self.linear_weight)
        sens = sensitivity(self._objective, domain, linear_weight=c)
        mech = make_mechanism(
            self.epsilon, self.delta, sens, n_released(domain), self.mechanism
        )
        noise_A, noise_b = draw_noise(mech, domain, rng)
        A_hat, b_hat = add_noise(
            A,
            b,
            noise_A,
            noise_b,
            linear_weight=c,
            granularity=lattice_granularity(mech),
        )
        w = solve_noisy_quadratic(
            A_hat,
            b_hat,
            noise_std=release_noise_std(mech),
            method=self.postprocessing,
            noise_std_b=release_noise_std(mech) / c,
            coef_norm=default_coef_norm(self._objective, domain),
        )
        self.sensitivity_ = sens
        self.linear_weight_ = c
        self.noise_std_ = release_noise_std(mech)
        if self.fit_intercept:
            coef, intercept = w[:-1], float(w[-1] * self.intercept_scaling_)
        else:
            coef, intercept = w, 0.0
        return coef, intercept

    def _store(self, coef, intercept):
        self.coef_ = coef
        self.intercept_ = intercept

    def _prepare_y(self, y, first_call, classes=None):  # subclasses override
        return np.asarray(y, dtype=np.float64)

    # ---------------------------------------------------------------- fitting
    def _fit_one_release(self, chunks, rng, validated=False):
        """Accumulate statistics over ``chunks`` (first sets the domain); release."""
        A = b = None
        n = 0
        for i, (X, y) in enumerate(chunks):
            if not validated:
                X, y = validate_data(
                    self, X, y, reset=(i == 0), y_numeric=self._objective == "squared"
                )
            y = self._prepare_y(y, first_call=(i == 0))
            if i == 0:
                self._domain = self._build_domain(X, y)
            A_c, b_c = self._chunk_statistics(X, y)
            A, b = (A_c, b_c) if A is None else (A + A_c, b + b_c)
            n += X.shape[0]
        if A is None:
            raise ValueError("chunks must contain at least one (X, y) pair.")
        if n < 2:
            raise ValueError(f"Need at least 2 samples in total, got n_samples = {n}.")
        coef, intercept = self._release(A, b, rng)
        self.n_samples_seen_ = n
        self.privacy_spent_ = record_spend(
            self._spend, type(self).__name__, mechanism=self.mechanism
        )
        self._store(coef, intercept)
        return self

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the model: one release of the noisy objective (spends epsilon once).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        self._check_privacy_params()
        X, y = validate_data(
            self,
            X,
            y,
            y_numeric=self._objective == "squared",
            ensure_min_samples=2,
        )
        rng = check_random_state(self.random_state)
        for attr in ("_stats", "_rng"):
            self.__dict__.pop(attr, None)
        return self._fit_one_release([(X, y)], rng, validated=True)

    @fit_context(prefer_skip_nested_validation=True)
    def fit_chunks(self, chunks):
        """Fit from an iterable of ``(X, y)`` chunks with memory independent of n.

        The statistics are sums over rows, so they are accumulated chunk by chunk
        and noised **once** at the end: one release, epsilon spent once, exactly
        the model :meth:`fit` gives on the concatenated data with the same
        ``random_state`` (up to floating-point summation order). Undeclared bounds
        are inferred from the first chunk only (with a PrivacyLeakWarning) and
        later chunks are clipped to them.

        Parameters
        ----------
        chunks : iterable of (X, y)

        Returns
        -------
        self
        """
        self._check_privacy_params()
        rng = check_random_state(self.random_state)
        for attr in ("_stats", "_rng"):
            self.__dict__.pop(attr, None)
        return self._fit_one_release(iter(chunks), rng)

    def _partial_fit(self, X, y, classes=None):
        self._check_privacy_params()
        first = not hasattr(self, "_stats")
        X, y = validate_data(
            self, X, y, reset=first, y_numeric=self._objective == "squared"
        )
        y = self._prepare_y(y, first_call=first, classes=classes)
        if first:
            self._domain = self._build_domain(X, y)
            # one generator for all releases: fresh noise every call
            self._rng = check_random_state(self.random_state)
            self.privacy_spent_ = PrivacyBudget(0.0)
            self.n_samples_seen_ = 0
            self._stats = None
        A_c, b_c = self._chunk_statistics(X, y)
        if self._stats is None:
            self._stats = (A_c, b_c)
        else:
            self._stats = (self._stats[0] + A_c, self._stats[1] + b_c)
        coef, intercept = self._release(*self._stats, self._rng)
        spend = record_spend(
            self._spend, f"{type(self).__name__}.partial_fit", mechanism=self.mechanism
        )
        self.privacy_spent_ = self.privacy_spent_ + spend
        self.n_samples_seen_ += X.shape[0]
        self._store(coef, intercept)
        return self

    # -------------------------------------------------------------- predicting
    def _linear_predict(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return X @ self.coef_ + self.intercept_


_COMMON_PARAMS_DOC = """
    epsilon : float, default=1.0
        Privacy parameter in (0, inf]. ``np.inf`` adds no noise and returns the
        exact minimizer of the same objective on the (clipped) data.
    delta : float, default=0.0
        Only for ``mechanism="gaussian"``, which needs it in (0, 1).
    mechanism : {"laplace", "gaussian"}, default="laplace"
        ``"laplace"``: pure epsilon-DP with the L1 sensitivity. ``"gaussian"``:
        (epsilon, delta)-DP with the L2 sensitivity and analytic calibration;
        under a row-norm bound its sensitivity does not grow with d.
    bounds_X : tuple (lower, upper) or None, default=None
        Per-feature box (scalars or arrays of length n_features). Data outside is
        clipped.
    data_norm : float or None, default=None
        Bound on the L2 norm of each row (feature part). Rows are scaled down to
        it. With both ``bounds_X`` and ``data_norm``, the bounds must contain 0 and
        the tighter sensitivity is used. With neither, ``data_norm`` is taken from
        the data with a :class:`~skdp.exceptions.PrivacyLeakWarning`.
    max_nonzero : int or None, default=None
        At most this many non-zero features per row, e.g. the number of columns
        before one-hot encoding (rows with more keep their largest entries).
        Shrinks the Laplace sensitivity from order d to order max_nonzero.
    fit_intercept : bool, default=True
        Append a constant column of value ``intercept_scaling_`` (``data_norm`` if
        declared, else the largest absolute bound) inside the declared domain: the
        intercept is covered by epsilon, no extra spend.
    linear_weight : "auto" or float, default="auto"
        Releases ``c * b`` instead of ``b`` (free post-processing trade-off of noise
        between the quadratic and the linear coefficients). ``"auto"`` minimizes
        the first-order error for a data-free guess of ``||w||`` (the output
        scale over the row-norm bound; see
        :func:`~skdp.linear_model._functional_mechanism.default_coef_norm`).
    postprocessing : {"ridge", "trim", "none"}, default="ridge"
        How the noisy quadratic is made well posed before the closed-form solve
        (see :func:`skdp.linear_model._functional_mechanism.solve_noisy_quadratic`):
        eigenvalues clipped at 0 plus a ridge of sqrt(p) times the noise
        standard deviation, raised to the bias-variance optimum when the noise
        swamps the signal (chosen by measurement, see ``benchmarks/bench_fm.py``).
    random_state : None, int, RandomState or Generator, default=None
        Source of the noise."""

_COMMON_ATTRS_DOC = """
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    privacy_spent_ : PrivacyBudget
        What the fit spent: one ``(epsilon, delta)`` per release (``fit`` and
        ``fit_chunks`` release once; every ``partial_fit`` call releases again).
    bounds_ : tuple of ndarray or None
        The box actually used (declared, broadcast), or None.
    data_norm_ : float or None
        The row-norm bound actually used (declared or inferred), or None.
    intercept_scaling_ : float
        Value of the constant column appended when ``fit_intercept``.
    sensitivity_ : Sensitivity
        ``l1`` and ``l2`` sensitivity of the released coefficients.
    linear_weight_ : float
        The linear weight ``c`` used.
    noise_std_ : float
        Standard deviation of the noise on each released entry of ``A``.
    n_samples_seen_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string column names."""


class FMLinearRegression(RegressorMixin, _BaseFM):
    __doc__ = f"""Linear regression with the functional mechanism.

    Releases the coefficients of the squared loss ``sum_i (y_i - x_i^T w)^2``
    (``A = X^T X``, ``b = -2 X^T y``) once with noise calibrated to the declared
    domain, then solves the post-processed noisy quadratic in closed form.

    Parameters
    ----------{_COMMON_PARAMS_DOC}
    bounds_y : tuple (lower, upper) or None, default=None
        Label bounds; labels are clipped. None infers them from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.

    Attributes
    ----------{_COMMON_ATTRS_DOC}
    bounds_y_ : tuple of float
        Label bounds used.

    Notes
    -----
    **Guarantee.** Replace-one neighbours (n public). The released vector
    ``(A[triu], c b)`` has L1 sensitivity ``Delta_1`` and L2 sensitivity
    ``Delta_2`` computed from the declared domain by
    :func:`~skdp.linear_model._functional_mechanism.sensitivity`; the Laplace
    release is epsilon-DP, the Gaussian one (epsilon, delta)-DP; the solve is
    post-processing. For ``||x||_2 <= R``, ``|y| <= B``, no intercept, ``c = 1``:
    ``Delta_1 = (d + 1) R^2 + 4 B sqrt(d) R`` and
    ``Delta_2 = sqrt(2 R^4 + 16 B^2 R^2)`` (derivation in that function's Notes).

    **Chunks.** ``fit_chunks`` accumulates the sums and releases once.
    ``partial_fit`` releases a fresh noisy model from the running sums after every
    call: k calls on overlapping data compose sequentially to ``k * epsilon``
    (``privacy_spent_`` says so).

    References
    ----------
    Zhang, Zhang, Xiao, Yang & Winslett (2012). Functional mechanism: regression
    analysis under differential privacy. VLDB.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model import FMLinearRegression
    >>> from skdp.datasets import make_private_regression
    >>> X, y, coef = make_private_regression(5000, 3, random_state=0)
    >>> reg = FMLinearRegression(epsilon=1.0, data_norm=1.0, bounds_y=(-1, 1),
    ...                          random_state=0).fit(X, y)
    >>> reg.privacy_spent_
    PrivacyBudget(epsilon=1.0, delta=0.0)
    >>> bool(np.linalg.norm(reg.coef_ - coef) < 0.5)
    True
    """

    _objective = "squared"
    _parameter_constraints = {
        **_BaseFM._parameter_constraints,
        "bounds_y": [tuple, list, None],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=0.0,
        mechanism="laplace",
        bounds_X=None,
        bounds_y=None,
        data_norm=None,
        max_nonzero=None,
        fit_intercept=True,
        linear_weight="auto",
        postprocessing="ridge",
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.bounds_X = bounds_X
        self.bounds_y = bounds_y
        self.data_norm = data_norm
        self.max_nonzero = max_nonzero
        self.fit_intercept = fit_intercept
        self.linear_weight = linear_weight
        self.postprocessing = postprocessing
        self.random_state = random_state

    def _y_bounds(self, y):
        if self.bounds_y is not None:
            lower, upper = check_bounds(self.bounds_y, 1, name="bounds_y")
            bounds = (float(lower[0]), float(upper[0]))
        else:
            if not math.isinf(self.epsilon):
                warn_privacy_leak(
                    "bounds_y was not declared, so it is taken from the data: the "
                    "result leaks the label range and is not differentially "
                    "private. Declare bounds_y."
                )
            bounds = (float(np.min(y)), float(np.max(y)))
        self.bounds_y_ = bounds
        return bounds

    def _clip(self, X, y):
        X, _ = super()._clip(X, y)
        return X, np.clip(y, *self.bounds_y_)

    @fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y):
        """Add a chunk to the running statistics and release a new noisy model.

        Every call is a release of the running sums and spends ``epsilon`` (and
        ``delta``) again; ``privacy_spent_`` is the sequential composition of
        the releases since the first ``partial_fit`` (a call after :meth:`fit`
        starts new running sums; :func:`skdp.accounting.track_budget` records
        every release). Use :meth:`fit_chunks` for one release over many chunks.

        Returns
        -------
        self
        """
        return self._partial_fit(X, y)

    def predict(self, X):
        """Predict ``X @ coef_ + intercept_``."""
        return self._linear_predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


class FMLogisticRegression(ClassifierMixin, _BaseFM):
    __doc__ = f"""Binary logistic regression with the functional mechanism.

    Minimizes the order-2 Taylor expansion of the logistic loss at 0,
    ``sum_i log 2 + (1/2 - y_i) x_i^T w + (x_i^T w)^2 / 8`` with ``y_i`` in
    {{0, 1}} (``A = X^T X / 8``, ``b = X^T (1/2 - y)``), after releasing its
    coefficients once with noise calibrated to the declared domain.

    Parameters
    ----------{_COMMON_PARAMS_DOC}

    Attributes
    ----------{_COMMON_ATTRS_DOC}
    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class (y = 1).

    Notes
    -----
    **Guarantee.** As for :class:`FMLinearRegression` with ``kappa = 1/8`` and
    ``|beta(y)| = |1/2 - y| = 1/2``: for ``||x||_2 <= R``, no intercept,
    ``c = 1``: ``Delta_1 = (d + 1) R^2 / 8 + sqrt(d) R`` and
    ``Delta_2 = sqrt(R^4 / 32 + R^2)``. Labels need no bounds (any two values are
    encoded to {{0, 1}}); which two values occur is taken from the data (like
    every sklearn classifier's ``classes_``). Multiclass targets raise
    ValueError.

    **Approximation.** The Taylor objective is a quadratic: at ``epsilon=inf``
    the model is its exact minimizer, not the logistic MLE; it behaves like a
    scaled least-squares fit of ``y - 1/2``.

    References
    ----------
    Zhang, Zhang, Xiao, Yang & Winslett (2012). Functional mechanism: regression
    analysis under differential privacy. VLDB.

    Examples
    --------
    >>> from skdp.linear_model import FMLogisticRegression
    >>> from skdp.datasets import make_private_classification
    >>> X, y, _ = make_private_classification(5000, 4, random_state=0)
    >>> clf = FMLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0)
    >>> clf.fit(X, y).predict_proba(X[:2]).shape
    (2, 2)
    """

    _objective = "logistic_taylor"

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=0.0,
        mechanism="laplace",
        bounds_X=None,
        data_norm=None,
        max_nonzero=None,
        fit_intercept=True,
        linear_weight="auto",
        postprocessing="ridge",
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.bounds_X = bounds_X
        self.data_norm = data_norm
        self.max_nonzero = max_nonzero
        self.fit_intercept = fit_intercept
        self.linear_weight = linear_weight
        self.postprocessing = postprocessing
        self.random_state = random_state

    def _prepare_y(self, y, first_call, classes=None):
        check_classification_targets(y)
        if first_call:
            if classes is not None:
                found = np.unique(np.asarray(classes))
            else:
                found = np.unique(y)
            y_type = type_of_target(found, input_name="y", raise_unknown=True)
            if found.size > 2:
                raise ValueError(
                    "Only binary classification is supported. The type of the "
                    f"target is {y_type} ({found.size} classes); use one-vs-rest "
                    "with a split budget."
                )
            if found.size < 2:
                raise ValueError(
                    f"{type(self).__name__} needs 2 classes; got 1 class "
                    f"({found[0]!r}) in y."
                )
            self.classes_ = found
        unknown = ~np.isin(y, self.classes_)
        if np.any(unknown):
            raise ValueError(
                f"y contains labels not in classes_ {self.classes_.tolist()}: "
                f"{np.unique(np.asarray(y)[unknown])[:5].tolist()}."
            )
        return (y == self.classes_[1]).astype(np.float64)

    @fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None):
        """Add a chunk to the running statistics and release a new noisy model.

        Parameters
        ----------
        X, y : array-like
        classes : array-like of shape (2,) or None
            The two labels; needed on the first call if the first chunk does not
            contain both.

        Every call is a release of the running sums and spends ``epsilon`` (and
        ``delta``) again; ``privacy_spent_`` is the sequential composition.

        Returns
        -------
        self
        """
        return self._partial_fit(X, y, classes=classes)

    def decision_function(self, X):
        """``X @ coef_ + intercept_``: the log-odds of ``classes_[1]``."""
        return self._linear_predict(X)

    def predict_proba(self, X):
        """Probabilities of ``classes_[0]`` and ``classes_[1]`` (sigmoid)."""
        z = self.decision_function(X)
        p1 = 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free sigmoid
        return np.column_stack([1.0 - p1, p1])

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`."""
        z = self.decision_function(X)
        return np.column_stack([-np.logaddexp(0, z), -np.logaddexp(0, -z)])

    def predict(self, X):
        """The class with the larger probability (``classes_[1]`` if z > 0)."""
        z = self.decision_function(X)
        return self.classes_[(z > 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = False
        return tags
