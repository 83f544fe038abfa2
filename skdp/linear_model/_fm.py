"""FMLinearRegression and FMLogisticRegression: the functional mechanism."""

import math
import numbers

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator
from sklearn.utils import check_X_y
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted

from skdp._fm import newton, release, solve_release
from skdp._fm.dask_statistics import dask_statistics, is_dask_collection
from skdp._fm.estimator import (
    FM_PARAMETER_CONSTRAINTS,
    FMClassifierMixin,
    FMDomainMixin,
    FMPrivacyMixin,
    FMRegressorMixin,
    atomic_fit,
)
from skdp._fm.multinomial import release_multinomial, solve_multinomial
from skdp._fm.statistics import FMStatistics, clip_to_domain, compute_statistics
from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.utils import check_random_state
from skdp.utils._sklearn_compat import (
    Interval,
    StrOptions,
    fit_context,
    get_feature_names,
    validate_data,
)

__all__ = ["FMLinearRegression", "FMLogisticRegression", "FMStatistics"]


class _BaseFM(FMDomainMixin, FMPrivacyMixin, BudgetTrackingMixin, BaseEstimator):
    """The three steps (statistics, release, solve) and their drivers."""

    _parameter_constraints = dict(FM_PARAMETER_CONSTRAINTS)
    _centre_domain = True

    # ------------------------------------------------------------ the steps
    def statistics(self, X, y):
        """Step 1: the mergeable sufficient statistics of ``(X, y)``; spends nothing.

        Rows are validated and clipped to the **declared** domain. Works on an
        unfitted estimator (e.g. a clone sent to a worker) and sets no attribute.
        A dask array or dataframe is reduced block by block on its cluster's
        workers (see :meth:`fit`); only the statistics reach this process.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        FMStatistics
            Merge statistics of disjoint rows with ``+`` (or ``sum``), then
            release once with :meth:`fit_statistics`. The sums are exact, so
            any split gives bit for bit the model :meth:`fit` gives on all rows
            with the same ``random_state``.

        Raises
        ------
        ValueError
            If the domain is not fully declared (``bounds_X`` and/or
            ``data_norm``; ``bounds_y`` for regression; ``classes`` for
            classification): inferring it per block would leak it and depend on
            how the rows were split.
        """
        self._validate_params()
        if is_dask_collection(X) or is_dask_collection(y):
            return dask_statistics(self, X, y)
        names = get_feature_names(X)
        names = None if names is None else tuple(names.tolist())
        X, y = check_X_y(
            X,
            y,
            dtype=np.float64,
            y_numeric=self._objective == "squared",
            ensure_min_samples=0,
        )
        domain = self._declared_domain(X.shape[1])
        return compute_statistics(
            X,
            self._labels_for_statistics(y),
            self._objective,
            domain,
            items=self._fingerprint_items(domain, names),
        )

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit_statistics(self, stats):
        """Steps 2 and 3: release ``stats`` once with noise and solve.

        Checks that ``stats`` were computed for this estimator's objective and
        declared domain, records the spend (one ``(epsilon, delta)``), draws the
        noise from ``random_state`` and solves the post-processed noisy
        quadratic. On any failure the estimator is left unfitted.

        Parameters
        ----------
        stats : FMStatistics
            From :meth:`statistics` (merged over any number of blocks).

        Returns
        -------
        self
        """
        self._check_privacy_params()
        if not isinstance(stats, FMStatistics):
            raise TypeError(
                f"stats must be FMStatistics (from statistics()), got "
                f"{type(stats).__name__}."
            )
        domain = self._declared_domain(stats.n_features, step="fit_statistics")
        names = stats.domain.get("feature_names")
        expected = dict(self._fingerprint_items(domain, names))
        diff = [
            f"{key} ({value!r} in stats, {expected.get(key)!r} here)"
            for key, value in stats.domain.items()
            if expected.get(key) != value
        ]
        if diff:
            raise ValueError(
                "stats were computed for another objective or declared domain "
                "than this estimator's: " + ", ".join(diff) + "."
            )
        for attr in ("_stats", "_rng", "feature_names_in_"):
            self.__dict__.pop(attr, None)
        self.n_features_in_ = stats.n_features
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        if self._objective != "squared":
            self.classes_ = self._declared_classes()
        rng = check_random_state(self.random_state)
        return self._release_and_solve(stats, domain, rng)

    def _release_and_solve(self, stats, domain, rng, *, partial=False, data=None):
        """The one release and solve of every central fit; sets the model.

        ``data``: the clipped-to-be rows ``(X, y)`` when the fit has them in
        memory (``fit``), for an option that releases again around the first
        solution (``FMLogisticRegression(refinement="newton")``).
        """
        if stats.n < 2:
            raise ValueError(
                f"Need at least 2 samples in total, got n_samples = {stats.n}."
            )
        source = type(self).__name__ + (".partial_fit" if partial else "")
        self._check_refinement(data)
        # the spend depends only on the parameters: a refused one stops the
        # release before any noise is drawn
        spend = record_spend(self._spend, source, mechanism=self.mechanism)
        noisy, coef, intercept = self._noisy_solution(stats, domain, rng, data=data)
        self._set_domain_attributes(domain)
        self.sensitivity_ = noisy.sensitivity
        self.linear_weight_ = noisy.linear_weight
        self.noise_std_ = noisy.noise_std
        self.n_samples_seen_ = stats.n
        if partial:
            self.privacy_spent_ = self.privacy_spent_ + spend
        else:
            self.privacy_spent_ = spend
        self.coef_ = coef
        self.intercept_ = intercept
        return self

    def _check_refinement(self, data):
        """Refuse, before any spend, an option this fit cannot honour."""

    def _noisy_solution(
        self, stats, domain, rng, data=None, *, epsilon=None, delta=None
    ):
        """The release of ``stats`` and its solve: ``(noisy, coef, intercept)``.

        ``epsilon``/``delta`` default to the estimator's (a refinement passes
        the first round's share).
        """
        noisy = release(
            stats.A,
            stats.b,
            self._objective,
            domain,
            epsilon=self.epsilon if epsilon is None else epsilon,
            delta=self.delta if delta is None else delta,
            mechanism=self.mechanism,
            linear_weight=self.linear_weight,
            random_state=rng,
        )
        coef, intercept = solve_release(
            noisy.A,
            noisy.b,
            self._objective,
            domain,
            noise_std=noisy.noise_std,
            noise_std_b=noisy.noise_std_b,
            n=stats.n,
            method=self.postprocessing,
        )
        return noisy, coef, intercept

    # ------------------------------------------------------------- drivers
    def _chunk_statistics(self, X, y, domain):
        names = getattr(self, "feature_names_in_", None)
        names = None if names is None else tuple(names.tolist())
        return compute_statistics(
            X, y, self._objective, domain, items=self._fingerprint_items(domain, names)
        )

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Fit the model: one release of the noisy objective (spends epsilon once).

        The driver of the three steps on all rows: statistics (clipped to the
        declared domain; undeclared parts are inferred from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`), one release, solve.

        **Dask input.** A dask array or dataframe ``X`` (with a dask ``y``) is
        never brought into this process: each block is validated, clipped to the
        declared domain and reduced to its statistics on the workers, the
        statistics are tree-summed there, and only the sums (``(p + 1)^2``
        numbers) come back for the one release, where the spend is recorded. The
        domain must then be declared (ValueError otherwise: inferring it per
        block would leak it), and the model is bit for bit the one ``fit`` gives
        on the same rows in memory (the sums are exact). Dask is the optional
        extra ``skdp[dask]``; skdp imports it only when given a dask collection.

        Parameters
        ----------
        X : array-like or dask array/dataframe of shape (n_samples, n_features)
        y : array-like or dask array/series of shape (n_samples,)

        Returns
        -------
        self
        """
        self._check_privacy_params()
        if is_dask_collection(X) or is_dask_collection(y):
            # reduced on the workers; only the statistics reach this process
            return self.fit_statistics(dask_statistics(self, X, y))
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
        y = self._prepare_y(y, first_call=True)
        domain = self._resolve_domain(X.shape[1], X, y)
        stats = self._chunk_statistics(X, y, domain)
        return self._release_and_solve(stats, domain, rng, data=(X, y))

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit_chunks(self, chunks):
        """Fit from an iterable of ``(X, y)`` chunks with memory independent of n.

        The statistics are exact sums over rows, so they are accumulated chunk by
        chunk and noised **once** at the end: one release, epsilon spent once,
        bit for bit the model :meth:`fit` gives on the concatenated data with the
        same ``random_state`` (when the domain is declared). Undeclared bounds
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
        stats = domain = None
        for i, (X, y) in enumerate(chunks):
            X, y = validate_data(
                self, X, y, reset=(i == 0), y_numeric=self._objective == "squared"
            )
            y = self._prepare_y(y, first_call=(i == 0))
            if i == 0:
                domain = self._resolve_domain(X.shape[1], X, y)
            chunk = self._chunk_statistics(X, y, domain)
            stats = chunk if stats is None else stats + chunk
        if stats is None:
            raise ValueError("chunks must contain at least one (X, y) pair.")
        return self._release_and_solve(stats, domain, rng)

    @atomic_fit(restore=True)
    def _partial_fit(self, X, y, classes=None):
        self._check_privacy_params()
        first = not hasattr(self, "_stats")
        X, y = validate_data(
            self, X, y, reset=first, y_numeric=self._objective == "squared"
        )
        y = self._prepare_y(y, first_call=first, classes=classes)
        if first:
            self._domain = self._resolve_domain(X.shape[1], X, y)
            # one generator for all releases: fresh noise every call
            self._rng = check_random_state(self.random_state)
            self.privacy_spent_ = PrivacyBudget(0.0)
            self._stats = None
        chunk = self._chunk_statistics(X, y, self._domain)
        self._stats = chunk if self._stats is None else self._stats + chunk
        return self._release_and_solve(
            self._stats, self._domain, self._rng, partial=True
        )


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
        :func:`~skdp._fm.default_coef_norm`).
    postprocessing : {"ridge", "trim", "none"}, default="ridge"
        How the noisy quadratic is made well posed before the closed-form solve
        (see :func:`skdp._fm.solve_noisy_quadratic`):
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


class FMLinearRegression(FMRegressorMixin, _BaseFM):
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
    offset_X_ : ndarray of shape (n_features,) or None
        Midpoint of a declared box the fit was centred at (None: not shifted).
    offset_y_ : float
        Midpoint of ``bounds_y`` the labels were centred at (0: not shifted).

    Notes
    -----
    **Guarantee.** Replace-one neighbours (n public). The released vector
    ``(A[triu], c b)`` has L1 sensitivity ``Delta_1`` and L2 sensitivity
    ``Delta_2`` computed from the declared domain by
    :func:`~skdp._fm.sensitivity`; the Laplace
    release is epsilon-DP, the Gaussian one (epsilon, delta)-DP; the solve is
    post-processing. For ``||x||_2 <= R``, ``|y| <= B``, no intercept, ``c = 1``:
    ``Delta_1 = (d + 1) R^2 + 4 B sqrt(d) R`` and
    ``Delta_2 = sqrt(2 R^4 + 16 B^2 R^2)`` (derivation in that function's Notes).

    **Centring.** With ``fit_intercept``, the label range ``bounds_y`` and a
    box ``bounds_X`` are centred at their midpoints inside the fit (a box
    declared with ``data_norm``/``max_nonzero``, which are centred at 0, is
    centred only if the centred box alone has the smaller data-free release
    cost, :func:`~skdp._fm.sensitivity.release_cost`): a public, data-independent
    reparametrization (no privacy cost, the same model at ``epsilon=inf``,
    ``coef_``/``intercept_`` and ``bounds_``/``bounds_y_`` in the user's units)
    that shrinks ``max |y|`` and ``max |x_j|`` to the half-widths, hence the
    sensitivity whenever a range excludes 0 (e.g. a log-income label declared
    on ``(0, 10)``: the linear sensitivity halves). ``offset_X_`` and
    ``offset_y_`` record the shift.

    **Three steps.** ``fit`` drives :meth:`statistics` (exact, mergeable sums;
    no spend), one release and the solve; ``statistics`` of any split of the
    rows, merged with ``+``, then :meth:`fit_statistics` give bit for bit the
    model of ``fit`` on all rows with the same ``random_state``.

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


class FMLogisticRegression(FMClassifierMixin, _BaseFM):
    __doc__ = f"""Logistic regression (binary or multinomial) with the FM.

    Minimizes the order-2 Taylor expansion of the logistic loss at 0,
    ``sum_i log 2 + (1/2 - y_i) x_i^T w + (x_i^T w)^2 / 8`` with ``y_i`` in
    {{0, 1}} (``A = X^T X / 8``, ``b = X^T (1/2 - y)``), after releasing its
    coefficients once with noise calibrated to the declared domain. With
    ``C > 2`` classes, the softmax loss expanded at 0, also in **one** release
    (see Notes).

    Parameters
    ----------{_COMMON_PARAMS_DOC}
    classes : array-like of shape (n_classes,) or None, default=None
        The labels; with two, ``classes[1]`` is the positive class (y = 1). Declared
        classes make the fit independent of which labels occur (a fit on data
        where only one occurs still gives a model) and are needed by
        :meth:`statistics`. None takes them from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    refinement : {{None, "newton"}}, default=None
        None: the single Taylor release. ``"newton"`` (two classes, :meth:`fit`
        only): after the Taylor release, a **second** release of the exact
        logistic gradient and Hessian at its (now public) solution, then one
        Newton step from the noisy pair (see Notes). It passes the quadratic
        surrogate's ceiling at large epsilon and loses at small epsilon (see
        ``doc/user_guide/fm_utility.rst`` for the measurements), so it is not
        the default.
    refinement_budget_share : float in (0, 1), default=0.5
        The share of ``epsilon`` (and ``delta``) the Newton round gets; the
        Taylor round gets the rest. The total is what is spent and recorded.
        0.5 because both rounds release a ``p x p`` quadratic and a linear
        vector with sensitivities of the same order (the Newton one has twice
        the linear part) and the refined model's error grows with the errors
        of both ``w1`` and the step; 0.3 and 0.7 were no better on the real
        binary tasks (``benchmarks/bench_fm_newton.py``).

    Attributes
    ----------{_COMMON_ATTRS_DOC}
    taylor_coef_, taylor_intercept_ :
        With ``refinement="newton"``: the first round's (Taylor) model ``w1``.
    refinement_sensitivity_ : Sensitivity
        With ``refinement="newton"``: the second release's L1 and L2
        sensitivity (``sensitivity_`` and ``noise_std_`` are the first's).
    refinement_noise_std_ : float
        With ``refinement="newton"``: the noise standard deviation of the
        second release.
    classes_ : ndarray of shape (n_classes,)
        The labels; with two, ``classes_[1]`` is the positive class (y = 1).
    coef_, intercept_ :
        Shapes (n_features,) and float for two classes; (n_classes, n_features)
        and (n_classes,) for more (softmax logits, centred across classes).
    offset_X_ : ndarray of shape (n_features,) or None
        The midpoint of the declared ``bounds_X`` the fit was centred at
        (public; None if not shifted).
    offset_y_ : float
        0 (labels are not shifted in classification).

    Notes
    -----
    **Guarantee.** As for :class:`FMLinearRegression` with ``kappa = 1/8`` and
    ``|beta(y)| = |1/2 - y| = 1/2``: for ``||x||_2 <= R``, no intercept,
    ``c = 1``: ``Delta_1 = (d + 1) R^2 / 8 + sqrt(d) R`` and
    ``Delta_2 = sqrt(R^4 / 32 + R^2)``. Labels need no bounds (the two classes
    are encoded to {{0, 1}}), but the classes themselves must be declared for the
    guarantee: which labels occur is data (a dataset with one positive label and
    its neighbour with none differ in it), so inferring them warns.

    **Multiclass in one release.** For ``C > 2`` classes the softmax loss
    ``log sum_c e^(z_c) - z_y`` expanded at ``z = 0`` has the public Hessian
    ``(I - 1 1^T / C) / C`` in the scores, so the only data-dependent quadratic
    statistic is the same ``X^T X / 8`` as for two classes, released once; the
    linear statistics are ``B = X^T (1/C - Y)`` for the first ``C - 1`` classes
    (the last class is the reference, ``w_C = 0``, without loss). Their joint
    replace-one sensitivity does not grow with ``C``: ``2 c (2C - 3)/C M_1``
    (L1) and ``2 c sqrt(C^2 - C - 1)/C M_2`` (L2) for the features, ``M_1``,
    ``M_2`` the largest L1 / L2 row norms of the domain, plus ``2 c s`` and
    ``sqrt(2) c s`` for the intercept row; tight on a symmetric domain.
    One-vs-rest would split the budget ``C`` ways. Derivation and the solve
    ``W = -C G^{{-1}} B (I + 1 1^T)`` in :mod:`skdp._fm.multinomial`; at
    ``epsilon=inf`` its predictions equal one-vs-rest of the binary Taylor fits.

    **Centring.** A declared box is centred at its midpoint when
    ``fit_intercept`` (with ``data_norm``/``max_nonzero`` also declared: only
    if that has the smaller data-free release cost) (free: public and
    data-independent; the same model at ``epsilon=inf``, ``coef_`` and
    ``intercept_`` in the user's units), which shrinks the sensitivity whenever
    a range excludes 0.

    **Approximation.** The Taylor objective is a quadratic: at ``epsilon=inf``
    the model is its exact minimizer, not the logistic MLE; it behaves like a
    scaled least-squares fit of ``y - 1/2``.

    **Newton refinement** (``refinement="newton"``). Round 1 is the Taylor
    release above at ``(1 - share) epsilon`` (and delta); its solution ``w1``
    is public. Round 2 releases, at ``share * epsilon``, the exact logistic
    statistics at ``w1`` on the same clipped (centred) rows ``x`` (intercept
    column ``s`` appended), ``p_i = sigmoid(x_i^T w1)``:
    ``A = H / 2 = sum_i a_i x_i x_i^T`` with ``a_i = p_i (1 - p_i) / 2`` in
    ``[0, 1/8]`` and ``b = g = sum_i r_i x_i`` with ``r_i = p_i - y_i`` in
    ``(-1, 1)``; the model is ``w2 = w1 + d``, ``d`` the post-processed
    (PSD projection and ridge, as round 1) minimizer of ``d^T A d + b^T d``,
    i.e. ``-H^{{-1}} g`` without noise. Sensitivity (replace-one; ``w1`` is
    fixed by round 1, so ``a_i, r_i`` depend on record ``i`` only, and the
    bound holds for every ``w1``): ``A`` moves by ``a x x^T - a' x' x'^T``.
    The weights are not a fixed ``kappa``, but ``a, a' >= 0`` keeps the
    Taylor norm bounds with ``kappa = 1/8`` (``||a u - a' u'||_1 <= (a + a')
    max ||u||_1``; ``<u(x), u(x')> >= 0`` gives ``||a u - a' u'||_2^2 <=
    a^2 ||u||^2 + a'^2 ||u'||^2``), while every entry's range now contains 0;
    the intercept's diagonal ``s^2 sum_i a_i`` moves by up to ``s^2 / 8``, so it
    is noised too. ``b`` moves by ``r x - r' x'``: twice the Taylor linear part
    (``|r| <= 1`` against ``|1/2 - y| = 1/2``). For ``||x|| <= R``, no
    intercept, ``c = 1``, ``d >= 2``: ``Delta_1 = (d + 1) R^2 / 8 + 2 sqrt(d) R``
    and ``Delta_2 = sqrt(R^4 / 32 + 4 R^2)``; the general case is
    :func:`~skdp._fm.newton.newton_sensitivity`. The two releases compose
    (basic composition) to ``(epsilon, delta)``, recorded as one spend of the
    total **before** the first release (a refused budget releases nothing; for
    the PLD accountant, Gaussian releases compose into one Gaussian mechanism
    that is ``(epsilon, delta)``-DP). Two classes only, and only :meth:`fit`
    (the second round needs the rows; the other entry points raise a
    ValueError before spending). At ``epsilon=inf`` it is exactly one Newton
    step of the logistic loss from the Taylor minimizer.

    References
    ----------
    Zhang, Zhang, Xiao, Yang & Winslett (2012). Functional mechanism: regression
    analysis under differential privacy. VLDB.

    Examples
    --------
    >>> from skdp.linear_model import FMLogisticRegression
    >>> from skdp.datasets import make_private_classification
    >>> X, y, _ = make_private_classification(5000, 4, random_state=0)
    >>> clf = FMLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
    ...                            random_state=0)
    >>> clf.fit(X, y).predict_proba(X[:2]).shape
    (2, 2)

    Three classes, one release:

    >>> import numpy as np
    >>> from sklearn.datasets import load_digits
    >>> X, y = load_digits(n_class=3, return_X_y=True)
    >>> clf = FMLogisticRegression(epsilon=2.0, mechanism="gaussian", delta=1e-6,
    ...                            bounds_X=(0, 16), classes=[0, 1, 2],
    ...                            random_state=0).fit(X, y)
    >>> clf.coef_.shape, clf.privacy_spent_
    ((3, 64), PrivacyBudget(epsilon=2.0, delta=1e-06))
    >>> bool(clf.score(X, y) > 0.8)
    True

    A second release and one Newton step (the budget is split, the total
    spent):

    >>> X, y, _ = make_private_classification(5000, 4, random_state=0)
    >>> clf = FMLogisticRegression(epsilon=5.0, data_norm=1.0, classes=[0, 1],
    ...                            refinement="newton", random_state=0).fit(X, y)
    >>> clf.privacy_spent_
    PrivacyBudget(epsilon=5.0, delta=0.0)
    """

    _parameter_constraints = {
        **_BaseFM._parameter_constraints,
        "classes": ["array-like", None],
        "refinement": [StrOptions({"newton"}), None],
        "refinement_budget_share": [Interval(numbers.Real, 0, 1, closed="neither")],
    }

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
        classes=None,
        refinement=None,
        refinement_budget_share=0.5,
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
        self.classes = classes
        self.refinement = refinement
        self.refinement_budget_share = refinement_budget_share
        self.random_state = random_state

    # ------------------------------------------------------------ multiclass
    @property
    def _objective(self):
        """``"multinomial_taylor"`` for more than two classes (declared or fitted)."""
        if self.classes is not None:
            n = np.unique(np.asarray(self.classes)).size
        else:
            n = len(self.__dict__.get("classes_", ()))
        return "multinomial_taylor" if n > 2 else "logistic_taylor"

    def _check_two(self, found, where):
        if found.size > 2:
            type_of_target(found, input_name="y", raise_unknown=True)
            return found
        return super()._check_two(found, where)

    def _encode(self, y, classes, name="classes_"):
        if classes.size == 2:
            return super()._encode(y, classes, name)
        super()._encode(y, classes, name)  # validates the labels
        # one-hot of the first C - 1 classes (the last is the reference)
        return (np.asarray(y)[:, None] == classes[None, :-1]).astype(np.float64)

    def _check_refinement(self, data):
        for attr in (
            "taylor_coef_",
            "taylor_intercept_",
            "refinement_sensitivity_",
            "refinement_noise_std_",
        ):
            self.__dict__.pop(attr, None)
        if self.refinement is None:
            return
        if self._objective == "multinomial_taylor":
            raise ValueError(
                "refinement='newton' supports two classes only; got "
                f"{len(self.classes_)} classes. Use refinement=None."
            )
        if data is None:
            raise ValueError(
                "refinement='newton' releases a second time from the rows, so it "
                "needs fit(X, y) with the rows in memory; fit_statistics, "
                "fit_chunks, partial_fit and dask input support refinement=None "
                "only."
            )

    def _round_budgets(self):
        """``(epsilon, delta)`` of the Taylor round and of the Newton round."""
        share = float(self.refinement_budget_share)
        delta = self.delta
        if math.isinf(self.epsilon):  # no noise; the mechanisms still take delta
            return (self.epsilon, delta), (self.epsilon, delta)
        first = (self.epsilon * (1.0 - share), delta * (1.0 - share))
        return first, (self.epsilon * share, delta * share)

    def _noisy_solution(self, stats, domain, rng, data=None):
        if self._objective == "multinomial_taylor":
            return self._multinomial_solution(stats, domain, rng)
        if self.refinement is None:
            return super()._noisy_solution(stats, domain, rng)
        (eps1, delta1), (eps2, delta2) = self._round_budgets()
        noisy, coef, intercept = super()._noisy_solution(
            stats, domain, rng, epsilon=eps1, delta=delta1
        )
        self.taylor_coef_, self.taylor_intercept_ = coef, intercept
        # round 2: the exact logistic gradient and Hessian at the (public) w1
        X, y = clip_to_domain(*data, "logistic_taylor", domain)
        w1 = newton.to_domain_coordinates(coef, intercept, domain)
        A, b = newton.newton_statistics(X, y, w1, domain)
        second = newton.newton_release(
            A,
            b,
            domain,
            epsilon=eps2,
            delta=delta2,
            mechanism=self.mechanism,
            linear_weight=self.linear_weight,
            random_state=rng,
        )
        w2 = newton.newton_step(
            second, w1, domain, n=stats.n, method=self.postprocessing
        )
        self.refinement_sensitivity_ = second.sensitivity
        self.refinement_noise_std_ = second.noise_std
        coef, intercept = newton.to_user_model(w2, domain)
        return noisy, coef, intercept

    def _multinomial_solution(self, stats, domain, rng):
        C = len(self.classes_)
        noisy = release_multinomial(
            stats.A,
            stats.b.reshape(domain.n_coef, C - 1),
            domain,
            C,
            epsilon=self.epsilon,
            delta=self.delta,
            mechanism=self.mechanism,
            linear_weight=self.linear_weight,
            random_state=rng,
        )
        coef, intercept = solve_multinomial(
            noisy.A,
            noisy.b,
            domain,
            C,
            noise_std=noisy.noise_std,
            noise_std_b=noisy.noise_std_b,
            n=stats.n,
            method=self.postprocessing,
        )
        return noisy, coef, intercept

    def decision_function(self, X):
        """Scores: the log-odds of ``classes_[1]`` (two classes), else one column
        per class (softmax logits, centred across classes)."""
        return self._linear_predict(X)

    def _linear_predict(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        if np.ndim(self.coef_) == 2:
            return X @ self.coef_.T + self.intercept_
        return X @ self.coef_ + self.intercept_

    def predict_proba(self, X):
        """Class probabilities (sigmoid for two classes, softmax for more)."""
        check_is_fitted(self)
        if len(self.classes_) == 2:
            return super().predict_proba(X)
        return np.exp(self.predict_log_proba(X))

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`."""
        check_is_fitted(self)
        if len(self.classes_) == 2:
            return super().predict_log_proba(X)
        z = self.decision_function(X)
        return z - logsumexp(z, axis=1, keepdims=True)

    def predict(self, X):
        """The class with the largest probability."""
        check_is_fitted(self)
        if len(self.classes_) == 2:
            return super().predict(X)
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags

    @fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None):
        """Add a chunk to the running statistics and release a new noisy model.

        Parameters
        ----------
        X, y : array-like
        classes : array-like of shape (n_classes,) or None
            The two labels; needed on the first call if the first chunk does not
            contain both.

        Every call is a release of the running sums and spends ``epsilon`` (and
        ``delta``) again; ``privacy_spent_`` is the sequential composition.

        Returns
        -------
        self
        """
        return self._partial_fit(X, y, classes=classes)
