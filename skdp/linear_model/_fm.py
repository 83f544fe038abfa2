"""The functional mechanism's three steps and their drivers, shared by
FMLinearRegression and FMLogisticRegression."""

import functools

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_X_y

from skdp._fm import release, solve_release
from skdp._fm.dask_statistics import dask_statistics, is_dask_collection
from skdp._fm.estimator import (
    FM_PARAMETER_CONSTRAINTS,
    PRIVATE_BOUNDS_CONSTRAINTS,
    PUBLIC_BOUNDS_MISUSE,
    FMDomainMixin,
    FMPrivacyMixin,
    atomic_fit,
)
from skdp._fm.statistics import FMStatistics, compute_statistics
from skdp._fm.unit_scaler import UnitScaler as _UnitScaler
from skdp._ranges.private_bounds import schema_bounds
from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.utils import noise_generator
from skdp.utils.release_order import as_numeric
from skdp.utils.sklearn_compat import (
    fit_context,
    get_feature_names,
    validate_data,
)

__all__ = ["FMStatistics"]


# validated parameters -> declared domains of the calls to statistics(): a
# statistics() call on a small block would otherwise spend most of its time
# validating the same parameters and resolving the same domain again. Keyed by
# the parameters' values (arrays by their bytes), so a changed parameter is a
# new key; the domain depends on nothing else.
_DOMAINS = {}
_DOMAINS_SIZE = 16


@functools.cache
def _parameter_names(cls):
    return tuple(cls._get_param_names())


def _value_key(value):
    """A hashable stand-in equal for equal parameter values."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_value_key(v) for v in value))
    if isinstance(value, dict):  # e.g. bounds_X by feature
        return ("dict", tuple((_value_key(k), _value_key(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))  # never equal to another object's key
    return (type(value).__name__, value)


def _all_finite(a):
    """No NaN or infinity in a numeric array (the sum is finite for most)."""
    if a.dtype.kind != "f" or np.isfinite(a.sum()):
        return True
    return bool(np.isfinite(a).all())  # a finite array whose sum overflowed


# attributes of a partial_fit stream that never go into a pickle (__getstate__)
_IN_PROCESS_ONLY = ("_stats", "_rng")


class _BaseFM(FMDomainMixin, FMPrivacyMixin, BudgetTrackingMixin, BaseEstimator):
    """The three steps (statistics, release, solve) and their drivers."""

    _parameter_constraints = {**FM_PARAMETER_CONSTRAINTS, **PRIVATE_BOUNDS_CONSTRAINTS}
    _centre_domain = True

    def __getstate__(self):
        # partial_fit's exact running sums and its noise generator (whose state
        # can be stepped back to the draws already made) stay in this process:
        # with either, whoever holds a pickle of the model could take its noise
        # off. The pickle marks the stream as ended instead.
        state = super().__getstate__()
        if isinstance(state, dict) and "_stats" in state:
            state = {k: v for k, v in state.items() if k not in _IN_PROCESS_ONLY}
            state["_stream_ended"] = True
        return state

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
        key = (type(self),) + tuple(
            _value_key(getattr(self, name)) for name in _parameter_names(type(self))
        )
        if key not in _DOMAINS:
            self._validate_params()
        if is_dask_collection(X) or is_dask_collection(y):
            return dask_statistics(self, X, y)
        names = None if type(X) is np.ndarray else get_feature_names(X)
        names = None if names is None else tuple(names.tolist())
        X, y = self._statistics_rows(X, y)
        # a bounds_X dict keyed by name reads the columns' names
        cached = (X.shape[1], names)
        domain = _DOMAINS.setdefault(key, {}).get(cached)
        if domain is None:
            domain = self._declared_domain(X.shape[1], feature_names=names)
            if len(_DOMAINS) > _DOMAINS_SIZE:
                _DOMAINS.clear()
            _DOMAINS.setdefault(key, {})[cached] = domain
        return self._block_statistics(
            X, y, domain, self._fingerprint_items(domain, names)
        )

    def _statistics_rows(self, X, y):
        """``(X, y)`` validated for :meth:`statistics`.

        NumPy arrays of numbers are checked where they are (no copy: the
        statistics read any numeric dtype exactly); anything else, and any
        failed check, goes through scikit-learn's ``check_X_y`` (its errors).
        """
        numeric = "biuf"
        if (
            type(X) is np.ndarray
            and type(y) is np.ndarray
            and X.ndim == 2
            and y.ndim == 1
            and X.shape[0] == y.shape[0]
            and X.shape[1] >= 1
            and X.dtype.kind in numeric
            and y.dtype.kind in numeric
            and _all_finite(X)
            and _all_finite(y)
        ):
            return X, y
        return check_X_y(
            X,
            y,
            dtype=np.float64,
            y_numeric=self._objective == "squared",
            ensure_min_samples=0,
        )

    def _block_statistics(self, X, y, domain, items):
        """:class:`FMStatistics` of validated rows for a resolved domain."""
        return compute_statistics(
            X, self._labels_for_statistics(y), self._objective, domain, items=items
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
        names = stats.domain.get("feature_names")
        domain = self._declared_domain(
            stats.n_features, step="fit_statistics", feature_names=names
        )
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
        for attr in ("_stats", "_rng", "_stream_ended", "feature_names_in_"):
            self.__dict__.pop(attr, None)
        self.n_features_in_ = stats.n_features
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        if self._objective != "squared":
            self.classes_ = self._declared_classes()
        rng = noise_generator(self.random_state)
        return self._release_and_solve(stats, domain, rng)

    def _release_and_solve(
        self, stats, domain, rng, *, partial=False, data=None, bounds=None
    ):
        """The one release and solve of every central fit; sets the model.

        ``data``: the clipped-to-be rows ``(X, y)`` when the fit has them in
        memory (``fit``), for an option that releases again around the first
        solution (``FMLogisticRegression(refinement="newton")``). ``bounds``:
        the :class:`~skdp.preprocessing.PrivateBounds` release this fit made
        first (its spend is already recorded), if any.
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
        if bounds is not None:
            self.bounds_privacy_spent_ = bounds.budget
            self.privacy_spent_ = bounds.budget + spend
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
            epsilon=self._release_epsilon if epsilon is None else epsilon,
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
        schema = schema_bounds(X)  # boolean columns (categorical ones are data)
        X, y = validate_data(
            self,
            X,
            y,
            y_numeric=self._objective == "squared",
            ensure_min_samples=2,
        )
        # numbers before any spend: a string (categorical) column fails here
        X = as_numeric(X)
        rng = noise_generator(self.random_state)
        for attr in (
            "_stats",
            "_rng",
            "_stream_ended",
            "bounds_privacy_spent_",
            "_bounds_epsilon",
        ):
            self.__dict__.pop(attr, None)
        y = self._prepare_y(y, first_call=True)
        # refused before the ranges' release spends (checked again at the release)
        self._check_refinement((X, y))
        released = result = scaler = None
        if any(self._private_bounds_parts()):
            # a release of its own (recorded), drawn before the statistics' noise
            bounds_X, bounds_y, result = self._release_private_bounds(X, y, rng, schema)
            released = (None, bounds_y)
            if bounds_X is not None:
                # the fit works on each feature mapped to [-1, 1] from its range
                scaler = _UnitScaler(*bounds_X)
                X = scaler.transform(X)
                released = (scaler.unit_box, bounds_y)
        elif self.public_bounds is not None:
            raise ValueError(PUBLIC_BOUNDS_MISUSE)
        domain = self._resolve_domain(X.shape[1], X, y, released)
        stats = self._chunk_statistics(X, y, domain)
        self._release_and_solve(stats, domain, rng, data=(X, y), bounds=result)
        if scaler is not None:
            scaler.to_user_units(self)
        return self

    def _refuse_private_bounds(self, step):
        if any(self._private_bounds_parts()):
            raise ValueError(
                f"{type(self).__name__}.{step} needs declared bounds: private "
                "bounds (bounds_X or bounds_y='private', or tighten_bounds=True) "
                "are released by fit(X, y) from all rows at once."
            )

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
        self._refuse_private_bounds("fit_chunks")
        rng = noise_generator(self.random_state)
        for attr in ("_stats", "_rng", "_stream_ended"):
            self.__dict__.pop(attr, None)
        stats = domain = None
        for i, (X, y) in enumerate(chunks):
            X, y = validate_data(
                self, X, y, reset=(i == 0), y_numeric=self._objective == "squared"
            )
            X = as_numeric(X)
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
        self._refuse_private_bounds("partial_fit")
        if getattr(self, "_stream_ended", False):
            raise ValueError(
                "this model was unpickled or copied after partial_fit: the exact "
                "running sums never leave the process that made them (they would "
                "let anyone holding the pickle remove the noise), so its stream "
                "cannot continue here. Call fit (or partial_fit after fit) to start "
                "a new one, or continue on the original object."
            )
        first = not hasattr(self, "_stats")
        X, y = validate_data(
            self, X, y, reset=first, y_numeric=self._objective == "squared"
        )
        X = as_numeric(X)
        y = self._prepare_y(y, first_call=first, classes=classes)
        if first:
            self._domain = self._resolve_domain(X.shape[1], X, y)
            # one generator for all releases: fresh noise every call
            self._rng = noise_generator(self.random_state)
            self.privacy_spent_ = PrivacyBudget(0.0)
            self._stats = None
        chunk = self._chunk_statistics(X, y, self._domain)
        self._stats = chunk if self._stats is None else self._stats + chunk
        return self._release_and_solve(
            self._stats, self._domain, self._rng, partial=True
        )


_RIDGE_DOC = """    postprocessing : {"ridge", "trim", "none"}, default="ridge"
        How the noisy quadratic is made well posed before the closed-form solve
        (see :func:`skdp._fm.solve_noisy_quadratic`):
        eigenvalues clipped at 0 plus a ridge of sqrt(p) times the noise
        standard deviation, raised to the bias-variance optimum when the noise
        swamps the signal (chosen by measurement, see ``benchmarks/bench_fm.py``).
"""

_EB_DOC = """    postprocessing : {"average", "eb", "ridge", "trim", "none"}, \
default="average"
        How the noisy release is turned into a model (free post-processing).
        ``"average"``: the mean of the ``"eb"``, ``"ridge"`` and ``"trim"``
        solutions of the same release (why it is the default: see Notes).
        ``"eb"`` (empirical Bayes,
        :func:`skdp._fm.empirical_bayes.empirical_bayes_solve`): the posterior
        mean under Zellner's g-prior on the features and a uniform prior for
        the labels' mean over ``bounds_y``, the signal strength ``g`` by
        marginal likelihood on the released statistics and the known noise,
        with a ridge floor at a quarter of the noise matrix's spectral norm.
        Where the noise leaves little of the signal the fit degrades to the
        (privately estimated) mean; the mean uses every released entry.
        ``"ridge"``, ``"trim"``, ``"none"`` as in :class:`FMLogisticRegression`
        (``"ridge"``: a ridge set from the noise level and a data-free guess
        of the signal). Measured on the eight real regressions of
        ``benchmarks/bench_small_data.py`` at epsilon 0.1-5 (5 seeds): the
        median test MSE of ``"eb"`` is within 5% of the better of ``"ridge"``
        and the earlier g-prior rule in 35 of 40 cells (geometric mean of the
        ratio 1.008), worse by more than 2 s.e. in 4, and up to 2.9 times
        better than ``"ridge"`` where ``n * epsilon`` is a few hundred
        (``"ridge"`` was better on HousePrices at ``n * epsilon`` = 38).
"""

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
    bounds_X : tuple, list of pairs, dict, "private" or None, default=None
        Per-feature box; data outside is clipped. One of: ``(lower, upper)``
        (scalars or arrays of length n_features), a list of ``(lo, hi)`` pairs
        one per feature, or a dict ``{feature: (lo, hi)}`` naming every
        feature once, by column name (X a DataFrame) or by index (see
        :func:`~skdp.utils.check_bounds`). ``"private"``: :meth:`fit` releases
        the box itself with ``bounds_budget_share * epsilon`` (see
        ``public_bounds`` and Notes).
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
<POSTPROCESSING>    public_bounds : dict or None, default=None
        With ``bounds_X="private"``: ranges the schema gives for some features,
        ``{feature: (lower, upper)}`` (a feature by index, or by name for a
        DataFrame), e.g. ``(0, 1)`` for indicator and one-hot columns; used as
        declared, at no cost. A DataFrame's boolean columns get ``(0, 1)``
        without being listed; its categorical columns are data like any other
        (their categories may have been read off the values) and their ranges
        are released privately unless listed here.
    bounds_budget_share : float in (0, 1), default=0.2
        With private bounds: the share of ``epsilon`` recorded for them
        (before their draws; nothing when no range is estimated); the release
        of the statistics gets the rest, and ``delta`` all goes to it.
        A private label range gets half of it when features are private too
        (a label range that misses ruins the whole model). 0.2 by measurement
        on the real tasks of ``benchmarks/bench_small_data.py``: at 0.1 the
        label's range missed by orders of magnitude on every small task at
        ``n * epsilon`` of 1,500-2,000 (n * epsilon per range below 100),
        while 0.2 costs little at large ``n * epsilon`` (tight ranges more
        than repay a smaller release budget).
    tighten_bounds : bool, default=False
        Treat the declared ``bounds_X`` (and ``bounds_y``) as a loose public
        envelope (ranges from documentation are often 10^2-10^5 times the
        data's spread) and let :meth:`fit` release a tighter range inside each
        with ``bounds_budget_share * epsilon``, as for ``"private"`` but on
        the envelope's candidates
        (:func:`~skdp.preprocessing.private_bounds`, ``envelope=``): where the
        budget is too small to find a tighter range the release keeps the
        declared one, and a range whose part would give ``n * epsilon`` below
        160 is not estimated (nothing is spent when none is left). A cheap
        private test (``n * epsilon`` 32) first asks whether the data sit in
        half of the declared range; where they fill it, the range is kept (the
        rest of its part is recorded all the same and not given to the fit,
        whose budget would otherwise depend on the test). Columns in
        ``public_bounds`` (or boolean DataFrame columns) are exact and cost
        nothing. Off by default: a declared range is used as
        declared unless asked.
    random_state : None, int, RandomState or Generator, default=None
        Source of the noise.
        Seeds the noise only under the reproducible-noise opt-in
        (:func:`skdp.set_config`); by default, fresh OS entropy."""

_COMMON_ATTRS_DOC = """
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    privacy_spent_ : PrivacyBudget
        What the fit spent: one ``(epsilon, delta)`` per release (``fit`` and
        ``fit_chunks`` release once; every ``partial_fit`` call releases again;
        private bounds are a release of their own, included).
    bounds_ : tuple of ndarray or None
        The box actually used (declared, broadcast, or released privately), or
        None.
    bounds_privacy_spent_ : PrivacyBudget
        Only with private bounds: what their release spent (part of
        ``privacy_spent_``).
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
