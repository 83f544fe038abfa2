"""PrivateStandardScaler: per-feature means and variances in one private release."""

import functools
import math
import numbers
import typing

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted

from skdp._moments import MOMENT_WEIGHT, Moments, moment_sensitivity
from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.mechanisms import GaussianMechanism, LaplaceMechanism
from skdp.utils import feature_bounds, noise_generator, release_generator
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.dask_rows import dask_shape, is_dask_collection, reduce_rows
from skdp.utils.sklearn_compat import (
    BOUNDS,
    RANDOM_STATE,
    Interval,
    Options,
    fit_context,
    validate_data,
)

__all__ = [
    "MOMENT_WEIGHT",
    "Moments",
    "PrivateStandardScaler",
    "moment_sensitivity",
    "moment_statistics",
]


def moment_statistics(X, lower, upper, *, with_std=True):
    """The released statistic: ``(sum_i w_i, MOMENT_WEIGHT * sum_i w_i**2)``.

    ``w = (x - c) / r`` maps each feature's declared range ``[lower, upper]``
    (midpoint ``c``, half-width ``r``) onto [-1, 1]; a feature with ``r = 0`` is
    constant (``w = 0``). ``X`` must already be clipped to the range.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    lower, upper : ndarray of shape (n_features,)
    with_std : bool, default=True
        False: the sums only.

    Returns
    -------
    ndarray of shape (2 * n_features,) or (n_features,)
    """
    centre, half = (lower + upper) / 2, (upper - lower) / 2
    safe = np.where(half > 0, half, 1.0)
    w = np.where(half > 0, (X - centre) / safe, 0.0)
    stats = [w.sum(axis=0)]
    if with_std:
        stats.append(MOMENT_WEIGHT * np.einsum("ij,ij->j", w, w))
    return np.concatenate(stats)


def _noise_scale(mech):
    return mech.sigma if isinstance(mech, GaussianMechanism) else mech.scale


def _constant_features(var, mean, n):
    """scikit-learn's rule for a (numerically) constant feature (scale 1)."""
    eps = np.finfo(np.float64).eps
    upper = n * eps * var + (n * mean * eps) ** 2
    return var <= upper


def _merge_moments(*parts):
    return sum(parts[1:], parts[0])


def _block_moments(X, *, lower, upper, with_std, exact, validated=False):
    """:class:`Moments` of one block of rows (validated here unless told)."""
    if not validated:
        X = check_array(X, dtype=np.float64, ensure_min_samples=0)
    n = X.shape[0]
    if n == 0:
        return Moments(0)
    clipped = np.clip(X, lower, upper)
    if not exact:
        return Moments(
            n, sums=moment_statistics(clipped, lower, upper, with_std=with_std)
        )
    mean = clipped.mean(axis=0)
    m2 = None
    if with_std:
        m2 = clipped.var(axis=0) * n
    return Moments(n, mean=mean, m2=m2)


class _Running(typing.NamedTuple):
    """The running totals: the sum of the noisy released vectors (or, at
    ``epsilon=inf``, the exact merged :class:`Moments`; None when nothing is
    released), the public ``n``, the noise variance of each coordinate of the
    sum, the number of releases, and what every release must share."""

    totals: object
    n: int
    noise_variance: float
    releases: int
    signature: tuple | None


class PrivateStandardScaler(
    OneToOneFeatureMixin, TransformerMixin, BudgetTrackingMixin, BaseEstimator
):
    """Standardize features with differentially private means and variances.

    The private counterpart of :class:`sklearn.preprocessing.StandardScaler`:
    ``z = (x - mean_) / scale_``, where ``mean_`` and ``var_`` (``scale_ =
    sqrt(var_)``) come from **one** release of the per-feature sums and sums of
    squares of the rows clipped to the declared ranges ``bounds_X``.

    Parameters
    ----------
    epsilon : float, default=1.0
        In (0, inf]. ``np.inf`` adds no noise: the fit equals scikit-learn's
        ``StandardScaler`` on the data clipped to ``bounds_X`` (on data inside
        the bounds: scikit-learn's fit).
    delta : float, default=0.0
        0: pure epsilon-DP (Laplace noise, on skdp's floating-point-safe
        lattice). In (0, 1): the Gaussian mechanism (analytic calibration);
        use at most ``1 / n^2``.
    bounds_X : tuple (lower, upper), list of pairs, dict or None, default=None
        The declared range of each feature. Data outside is clipped to it
        inside ``fit`` (the caller's array is not modified). One of:
        ``(lower, upper)`` (scalars or arrays of length n_features), a list of
        ``(lo, hi)`` pairs one per feature, or a dict ``{feature: (lo, hi)}``
        naming every feature once, by column name (X a DataFrame) or by index
        (see :func:`~skdp.utils.check_bounds`). None: taken from the data with
        a :class:`~skdp.exceptions.PrivacyLeakWarning` (not private).
    with_mean : bool, default=True
        Centre the data in ``transform``.
    with_std : bool, default=True
        Scale the data to unit variance in ``transform``. False releases the
        sums only (the whole budget goes to the means).
    copy : bool, default=True
        Kept for scikit-learn compatibility: ``transform`` always returns a new
        array.
    random_state : None, int, RandomState or Generator, default=None
        Seeds the noise only under skdp's reproducible-noise opt-in
        (``skdp.set_config(reproducible_noise=True)``); by default the noise
        comes from fresh OS entropy whatever this says (see
        :doc:`/user_guide/noise_and_seeds`).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,) or None
        Private means (None if ``with_mean`` and ``with_std`` are both False).
    var_ : ndarray of shape (n_features,) or None
        Private variances, at least ``variance_floor_`` (None if not
        ``with_std``).
    scale_ : ndarray of shape (n_features,) or None
        ``sqrt(var_)``, 1 for a constant feature (scikit-learn's rule).
    n_samples_seen_ : int
        ``n`` (public under replace-one neighbours): after ``partial_fit``, the
        rows of all batches since the totals began (each batch's size is
        public).
    bounds_ : tuple of ndarray
        The ranges used (declared or inferred).
    variance_floor_ : ndarray of shape (n_features,)
        The public floor of ``var_`` (see Notes), 0 at ``epsilon=inf``.
    sensitivity_ : float
        L1 (``delta=0``) or L2 sensitivity of the released vector.
    noise_scale_ : float
        Laplace scale or Gaussian sigma per coordinate of the released vector.
    privacy_spent_ : PrivacyBudget
        ``(epsilon, delta)`` per release, recorded in any active
        :func:`~skdp.accounting.track_budget`: ``fit`` releases once, every
        ``partial_fit`` call once more (their sum, see Notes).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

    Notes
    -----
    **Release.** Each feature is mapped to [-1, 1] by the public affine map
    ``w = (clip(x) - c) / r`` (``c`` the midpoint, ``r`` the half-width of its
    declared range; free, as it depends on public values only). The release is
    the vector ``(S1, lambda S2)`` with ``S1 = sum_i w_i`` and ``S2 = sum_i
    w_i^2`` (per feature), plus i.i.d. noise: Laplace with scale
    ``Delta_1 / epsilon`` or Gaussian with the analytic sigma for ``Delta_2``.

    **Sensitivity** (replace-one neighbours, ``n`` public; derived in
    :func:`moment_sensitivity`). Per feature, replacing ``a`` by ``b`` changes
    ``(S1, lambda S2)`` by ``(a - b, lambda (a^2 - b^2))``. Its L1 norm is at most
    ``(1 + 2 lambda)^2 / (4 lambda)`` (``lambda > 1/2``) and its squared L2 norm
    at most 4 (``lambda <= sqrt(2)``), so with ``d`` features
    ``Delta_1 = d (1 + 2 lambda)^2 / (4 lambda)`` and ``Delta_2 = 2 sqrt(d)``.
    A feature with a zero-width range contributes nothing.

    **Budget split between means and second moments.** Releasing the two sums
    *jointly* is cheaper than splitting epsilon between two releases: a change
    in ``S1`` by 2 (``a = 1, b = -1``) leaves ``S2`` unchanged, and a change in
    ``S2`` by 1 (``a = 1, b = 0``) changes ``S1`` by 1 only. Separately, the
    sensitivities are 2 (means) and 1 (squares), and an even-scale split costs
    ``d (2 + lambda) / b`` where the joint release costs ``d g(lambda) / b``
    (``g(1) = 2.25`` against 3). The weight ``lambda`` sets the ratio of the noise
    scales (``S2``'s noise is ``1/lambda`` of ``S1``'s). ``lambda = sqrt(2)`` is
    used for both mechanisms:

    - Gaussian: up to ``lambda = sqrt(2)`` the sums of squares are free (the L2
      sensitivity stays ``2 sqrt(d)``, that of the means alone), so the largest
      free weight is taken;
    - Laplace: the error of a standardized value ``(x - m) / sigma`` is about
      ``dm / sigma + dv / (2 sigma^2)``; with the two terms weighted alike, the
      cost ``(lambda + 1 + 1/(4 lambda)) (1 + 1/lambda)`` is minimal near
      ``lambda = 1.3`` (4.41) and is 4.42 at ``sqrt(2)``, against 6.0 at
      ``lambda = 1/2`` (squares free) and 4.5 at 1. In the language of a split,
      this is 59% of the budget for the means and 41% for the second moments
      (``2 : lambda``), but with 24% less noise than two separate releases at
      that split (``2.591 d`` against ``(2 + sqrt(2)) d = 3.414 d``). Its
      sensitivity is ``Delta_1 = 2.591 d``.

    With ``with_std=False`` only ``S1`` is released (``Delta_1 = 2d``,
    ``Delta_2 = 2 sqrt(d)``); with neither ``with_mean`` nor ``with_std``
    nothing is released and nothing is spent.

    **Post-processing** (free). ``m = S1~ / n`` is clipped to [-1, 1] and
    ``v = S2~ / n - m^2`` to ``[f, max(f, 1 - m^2)]`` (a variable in [-1, 1]
    with mean ``m`` has variance at most ``1 - m^2``). The floor ``f`` is the
    noise standard deviation of ``S2~ / n`` (``sqrt(2) b / (lambda n)`` for
    Laplace, ``sigma / (lambda n)`` for Gaussian), capped at 1 (the largest
    variance in [-1, 1]): public, so the variance stays positive without
    looking at the data, and a variance the noise cannot tell from 0 is not
    divided by. Back in the user's units, ``mean_ = c + r m`` and
    ``var_ = r^2 v``. At ``epsilon=inf`` the mean and variance are computed by
    numpy's two-pass formulas on the clipped data, as scikit-learn's.

    **Streams** (:meth:`partial_fit`). Each call releases its batch's vector
    as ``fit`` does (same sensitivity, ``epsilon``, ``delta``; its own noise)
    and adds it to the running noisy totals ``(S1~, lambda S2~)``; the model
    is the post-processing above applied to the totals, with ``n`` the rows
    of all batches and the floor from the noise of the sum (``k`` releases:
    ``sqrt(k)`` times one release's). No exact statistic of an earlier batch
    is kept. ``fit`` starts the totals anew with its own release (a
    ``partial_fit`` after it adds to them, as in scikit-learn). The ``k``
    releases compose: ``privacy_spent_`` and the ledger record ``k (epsilon,
    delta)`` (basic composition), which holds whatever rows the batches
    share. If the batches hold disjoint rows the whole stream is ``(epsilon,
    delta)``-DP by parallel composition (a row changes one batch's release
    only), but the estimator cannot know that: declare it with
    :func:`~skdp.accounting.on_rows` or account for it yourself. At
    ``epsilon=inf`` the totals are the exact moments, merged by Chan's update
    (as scikit-learn's ``partial_fit``): the model equals ``fit`` on all rows
    up to rounding.

    References
    ----------
    Dwork, McSherry, Nissim & Smith (2006). Calibrating noise to sensitivity in
    private data analysis. TCC.
    Balle & Wang (2018). Improving the Gaussian mechanism for differential
    privacy: analytical calibration and optimal denoising. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import PrivateStandardScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 10, size=(10_000, 2))
    >>> scaler = PrivateStandardScaler(epsilon=1.0, bounds_X=(0, 10)).fit(X)
    >>> scaler.privacy_spent_
    PrivacyBudget(epsilon=1.0, delta=0.0)
    >>> bool(np.all(np.abs(scaler.mean_ - 5) < 0.1))
    True
    >>> stream = PrivateStandardScaler(epsilon=1.0, bounds_X=(0, 10))
    >>> for batch in np.array_split(X, 4):
    ...     stream = stream.partial_fit(batch)
    >>> stream.n_samples_seen_, stream.privacy_spent_
    (10000, PrivacyBudget(epsilon=4.0, delta=0.0))
    """

    _parameter_constraints = {
        "epsilon": [
            Interval(numbers.Real, 0, None, closed="neither"),
            Options(numbers.Real, {np.inf}),
        ],
        "delta": [Interval(numbers.Real, 0, 1, closed="left")],
        "bounds_X": [BOUNDS, None],
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
        "copy": ["boolean"],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=0.0,
        bounds_X=None,
        with_mean=True,
        with_std=True,
        copy=True,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds_X = bounds_X
        self.with_mean = with_mean
        self.with_std = with_std
        self.copy = copy
        self.random_state = random_state

    @property
    def _releases(self):
        return bool(self.with_mean or self.with_std)

    @property
    def _spend(self):
        if not self._releases:
            return PrivacyBudget(0.0, 0.0)
        if math.isinf(self.epsilon):
            return PrivacyBudget(math.inf, 0.0)
        return PrivacyBudget(float(self.epsilon), float(self.delta))

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y=None):
        """Release the means (and variances) of ``X``: spends ``(epsilon, delta)``.

        **Dask input.** A dask array or dataframe ``X`` is never brought into
        this process: each block of rows is validated, clipped to ``bounds_X``
        and reduced to its sums on the workers, the sums are tree-merged there,
        and only they (``2 * n_features`` numbers, plus the exact moments at
        ``epsilon=inf``) come back for the one release, where the spend is
        recorded. ``bounds_X`` must then be declared (ValueError otherwise:
        reading them off the data would leak them). The fit equals the
        in-memory fit on the same rows with the same ``random_state`` up to the
        order of the float sums (see :func:`moment_statistics`). Dask is the
        optional extra ``skdp[dask]`` (:meth:`partial_fit` takes in-memory
        batches only).

        Parameters
        ----------
        X : array-like or dask array/dataframe of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self
        """
        self.__dict__.pop("_running", None)  # fit starts new running totals
        private = not math.isinf(self.epsilon)
        on_dask = is_dask_collection(X)
        if on_dask:
            n, d, X = dask_shape(self, X)
        else:
            X = validate_data(self, X, dtype=np.float64)
            n, d = X.shape
        rng = noise_generator(self.random_state)
        if self.bounds_X is None and on_dask:
            raise ValueError(
                "PrivateStandardScaler on dask input needs declared bounds_X: "
                "reading the ranges off the data would leak them."
            )
        lower, upper = feature_bounds(self, X, d)
        self.bounds_ = (lower, upper)
        mech = None
        if private and self._releases:
            mech = self._mechanism((upper - lower) / 2)
        if not self._releases:
            self.privacy_spent_ = self._spend
            self._set_model(_Running(None, n, 0.0, 1, self._signature), mech)
            return self
        # the statistics first (on dask: on the workers, where a bad block
        # fails before anything is spent), then the spend (a refused spend
        # stops the release before any noise is drawn), then the draws
        reduce_block = functools.partial(
            _block_moments,
            lower=lower,
            upper=upper,
            with_std=self.with_std,
            exact=not private,
        )
        if on_dask:
            moments = reduce_rows(X, reduce_block, _merge_moments)
        else:
            moments = reduce_block(X, validated=True)
        self.privacy_spent_ = record_spend(
            self._spend, type(self).__name__, mechanism=mech
        )
        running = _Running(moments, n, 0.0, 1, self._signature)
        if private:
            noisy = mech.randomize(moments.sums, random_state=rng)
            running = _Running(noisy, n, mech.variance, 1, self._signature)
        self._set_model(running, mech)
        return self

    @property
    def _signature(self):
        """What every release added to one model must share."""
        if not self._releases:
            return None
        return (math.isinf(self.epsilon), self.with_std)

    def _set_model(self, running, mech):
        """The model from the running totals (post-processing; see Notes)."""
        self._running = running
        lower, upper = self.bounds_
        centre, half = (lower + upper) / 2, (upper - lower) / 2
        n, d = running.n, half.size
        self.n_samples_seen_ = n
        self.sensitivity_ = 0.0 if mech is None else mech.sensitivity
        self.noise_scale_ = 0.0 if mech is None else _noise_scale(mech)
        self.variance_floor_ = np.zeros(d)
        if not self._releases:
            self.mean_ = self.var_ = self.scale_ = None
            return
        if mech is None:
            mean = running.totals.mean
            var = running.totals.m2 / n if self.with_std else None
        else:
            noisy = running.totals
            m = np.clip(noisy[:d] / n, -1.0, 1.0)
            m[half == 0] = 0.0
            mean = centre + half * m
            var = None
            if self.with_std:
                second = noisy[d:] / (MOMENT_WEIGHT * n)
                std = math.sqrt(running.noise_variance) / (MOMENT_WEIGHT * n)
                floor = np.where(half > 0, min(std, 1.0), 0.0)
                v = np.clip(second - m**2, floor, np.maximum(floor, 1.0 - m**2))
                v[half == 0] = 0.0
                var = half**2 * v
                self.variance_floor_ = half**2 * floor
        self.mean_ = mean
        self.var_ = var
        if self.with_std:
            scale = np.sqrt(var)
            scale[_constant_features(var, mean, n)] = 1.0
            self.scale_ = scale
        else:
            self.scale_ = None

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit(restore=True)
    def partial_fit(self, X, y=None):
        """Release one batch's sums and add them to the running totals.

        Every call is **one new release** of the batch: the vector :meth:`fit`
        releases, with its sensitivity, ``epsilon`` and ``delta``. The noisy
        vector is added to the running noisy totals (started by :meth:`fit`
        or by the first ``partial_fit``), and ``mean_``, ``var_`` and
        ``scale_`` are computed from the totals by the post-processing of
        :meth:`fit`, with ``n = n_samples_seen_`` the rows of all batches (see
        the Notes). Each call records ``(epsilon, delta)`` in any active
        :func:`~skdp.accounting.track_budget` (after the batch is validated,
        before any noise is drawn) and adds it to ``privacy_spent_``.

        ``bounds_`` and ``n_features_in_`` are fixed by the first call
        (undeclared ``bounds_X`` are read off the first batch with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`; later batches are
        clipped to them). A bad batch (NaN, another number of features)
        raises and leaves the model, the totals and the ledger as they were.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            In memory: a dask collection raises TypeError (:meth:`fit` reduces
            it on the workers in one release, at one spend).
        y : None
            Ignored.

        Returns
        -------
        self
        """
        if is_dask_collection(X):
            raise TypeError(
                "PrivateStandardScaler.partial_fit takes in-memory batches; pass "
                "a dask collection to fit (reduced on the workers, one release), "
                "or compute its blocks and partial_fit each."
            )
        running = getattr(self, "_running", None)
        X = validate_data(self, X, dtype=np.float64, reset=running is None)
        n, d = X.shape
        private = not math.isinf(self.epsilon)
        if running is None:
            lower, upper = feature_bounds(self, X, d)
        else:
            lower, upper = self.bounds_
            if running.signature != self._signature:
                raise ValueError(
                    "epsilon changed to or from inf, or with_mean/with_std "
                    "changed, since the running totals began: call fit to "
                    "start again."
                )
        mech = None
        if private and self._releases:
            mech = self._mechanism((upper - lower) / 2)
        index = 0 if running is None else running.releases
        spend, release, variance = self._spend, None, 0.0
        if self._releases:
            batch = _block_moments(
                X,
                lower=lower,
                upper=upper,
                with_std=self.with_std,
                exact=not private,
                validated=True,
            )
            # the batch is validated: record the spend (a refused one draws
            # nothing), then draw
            spend = record_spend(
                spend, type(self).__name__ + ".partial_fit", mechanism=mech
            )
            release = batch
            if private:
                rng = release_generator(self.random_state, index)
                release = mech.randomize(batch.sums, random_state=rng)
                variance = mech.variance
        if running is not None:
            if release is not None:
                release = running.totals + release
            n, variance = n + running.n, variance + running.noise_variance
            spend = self.privacy_spent_ + spend
        self.privacy_spent_ = spend
        self.bounds_ = (lower, upper)
        self._set_model(
            _Running(release, n, variance, index + 1, self._signature), mech
        )
        return self

    def _mechanism(self, half_widths):
        """The mechanism of the release, from public values only."""
        active = int(np.count_nonzero(half_widths > 0))
        if self.delta > 0:
            sens = moment_sensitivity(active, norm="l2", with_std=self.with_std)
            return GaussianMechanism(self.epsilon, self.delta, sens)
        sens = moment_sensitivity(active, norm="l1", with_std=self.with_std)
        d = half_widths.shape[0]
        return LaplaceMechanism(
            self.epsilon, sens, dimension=2 * d if self.with_std else d
        )

    def transform(self, X, copy=None):
        """Standardize ``X`` with the released statistics (no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        copy : None
            Ignored (a new array is returned).

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "privacy_spent_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        out = np.array(X, dtype=np.float64, copy=True)
        if self.with_mean:
            out -= self.mean_
        if self.with_std:
            out /= self.scale_
        return out

    def inverse_transform(self, X, copy=None):
        """Map standardized data back to the original units.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        copy : None
            Ignored (a new array is returned).

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "privacy_spent_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        out = np.array(X, dtype=np.float64, copy=True)
        if self.with_std:
            out *= self.scale_
        if self.with_mean:
            out += self.mean_
        return out

    def output_domain(self):
        """The range of ``transform``'s output for rows inside ``bounds_``.

        Used by :func:`~skdp.pipeline.make_private_pipeline` to declare the
        next step's domain (its ``bounds_X``) from this step's release, so that
        only the first step of a pipeline needs declared ranges. A feature
        range ``[lower, upper]`` maps to ``[(lower - mean_) / scale_, (upper -
        mean_) / scale_]`` (``scale_ > 0``): computed from the declared ranges
        and the released statistics only, so it costs no privacy.
        ``transform`` does not clip: a row outside ``bounds_`` maps outside
        this range (the next step clips it to its domain).

        Returns
        -------
        dict
            ``{"bounds_X": (lower, upper)}``, arrays of shape (n_features,).
        """
        check_is_fitted(self, "privacy_spent_")
        lower, upper = (np.array(b, dtype=np.float64) for b in self.bounds_)
        if self.with_mean:
            lower, upper = lower - self.mean_, upper - self.mean_
        if self.with_std:
            lower, upper = lower / self.scale_, upper / self.scale_
        return {"bounds_X": (lower, upper)}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
