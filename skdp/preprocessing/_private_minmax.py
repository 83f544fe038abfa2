"""PrivateMinMaxScaler: per-feature ranges released privately, then an affine map."""

import functools
import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted

from skdp._ranges.private_bounds import private_bounds
from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.utils import check_bounds
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

__all__ = ["PrivateMinMaxScaler"]


def _block_extremes(X, *, lower, upper, validated=False):
    """Per-feature minimum and maximum of one block of rows, clipped to the
    declared ranges (``+inf`` and ``-inf`` for a block without rows)."""
    if not validated:
        X = check_array(X, dtype=np.float64, ensure_min_samples=0)
    if X.shape[0] == 0:
        return np.full(X.shape[1], np.inf), np.full(X.shape[1], -np.inf)
    clipped = X if lower is None else np.clip(X, lower, upper)
    return clipped.min(axis=0), clipped.max(axis=0)


def _merge_extremes(*parts):
    lows, highs = zip(*parts)
    return np.min(lows, axis=0), np.max(highs, axis=0)


def _handle_zeros(data_range):
    """scikit-learn's rule: a (numerically) zero range scales by 1."""
    out = data_range.copy()
    out[out < 10 * np.finfo(np.float64).eps] = 1.0
    return out


class PrivateMinMaxScaler(
    OneToOneFeatureMixin, TransformerMixin, BudgetTrackingMixin, BaseEstimator
):
    """Scale each feature to ``feature_range`` with a privately released range.

    The private counterpart of :class:`sklearn.preprocessing.MinMaxScaler`. The
    exact minimum and maximum of a feature have unbounded sensitivity (one row
    moves them anywhere in the range), so they are replaced by a range released
    with :func:`~skdp.preprocessing.private_bounds`: per feature, an exponential
    mechanism over pairs of candidate quantiles, inside the declared ranges
    ``bounds_X`` when given (an *envelope*), or over skdp's scale-free grid
    otherwise. ``data_min_`` and ``data_max_`` are that range; the transform
    maps it onto ``feature_range``.

    Parameters
    ----------
    epsilon : float, default=1.0
        In (0, inf], split equally between the features whose range is
        released. ``np.inf`` adds no noise: the exact minimum and maximum of the
        data clipped to ``bounds_X``, i.e. scikit-learn's ``MinMaxScaler`` on
        data inside the bounds.
    bounds_X : tuple (lower, upper), list of pairs, dict or None, default=None
        Declared (loose) ranges of the features: the released range lies
        inside them, and a range the data fill is kept as declared (see
        :func:`~skdp.preprocessing.private_bounds`, ``envelope``). One of:
        ``(lower, upper)`` (scalars or arrays of length n_features), a list of
        ``(lo, hi)`` pairs one per feature, or a dict ``{feature: (lo, hi)}``
        naming every feature once, by column name (X a DataFrame) or by index
        (see :func:`~skdp.utils.check_bounds`). None: the range is released
        over the scale-free grid (still private, no warning), which needs a
        larger ``n * epsilon``.
    feature_range : tuple (min, max), default=(0, 1)
        The output range of the released data range.
    clip : bool, default=False
        Clip transformed values to ``feature_range`` (rows outside the released
        range would otherwise map outside it).
    copy : bool, default=True
        Kept for scikit-learn compatibility: ``transform`` always returns a new
        array.
    random_state : None, int, RandomState or Generator, default=None
        Seeds the noise only under skdp's reproducible-noise opt-in; by default
        the noise comes from fresh OS entropy (see
        :doc:`/user_guide/noise_and_seeds`).

    Attributes
    ----------
    data_min_, data_max_ : ndarray of shape (n_features,)
        The released range of each feature.
    data_range_ : ndarray of shape (n_features,)
        ``data_max_ - data_min_``.
    scale_, min_ : ndarray of shape (n_features,)
        ``X * scale_ + min_`` is the transform.
    bounds_ : tuple of ndarray or None
        The declared ranges, as arrays (None if not declared).
    privacy_result_ : PrivateBounds or None
        The release (levels, looseness tests, per-feature epsilon); None at
        ``epsilon=inf``.
    privacy_spent_ : PrivacyBudget
        What the release spent (pure epsilon): ``epsilon``, or less where a
        declared range was kept after its looseness test (see
        :func:`~skdp.preprocessing.private_bounds`).
    n_samples_seen_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    **Privacy.** The fit is one call of :func:`~skdp.preprocessing.private_bounds`
    with ``envelope`` the declared ranges: each feature's range is an
    exponential mechanism whose score (minus the rank distance of the candidate
    pair from the target quantiles) has sensitivity 1 under replace-one
    neighbours, so it is ``epsilon_j``-DP with ``sum_j epsilon_j = epsilon``
    (basic composition over features); everything else is post-processing. The
    spend is recorded in :func:`~skdp.accounting.track_budget` by that release,
    after its draws and before its result is returned: a refused spend leaves
    no model and releases nothing. (The spend cannot be recorded before the
    draws: where a declared range is kept after its looseness test, less than
    ``epsilon`` is spent, and that is known only then.)

    **What it is not.** The released range is a pair of quantiles close to the
    extremes (the level ``q`` depends on ``n epsilon``; see
    :func:`~skdp.preprocessing.private_bounds`), not the exact minimum and
    maximum: a few rows may map outside ``feature_range`` (use ``clip=True``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import PrivateMinMaxScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 50, size=(20_000, 2))
    >>> scaler = PrivateMinMaxScaler(epsilon=1.0, bounds_X=(0, 100)).fit(X)
    >>> # inside the declared envelope: usually about 52 (the data fill half of
    >>> # it); its looseness test keeps the whole envelope in about 2% of fits
    >>> bool(np.all(scaler.data_max_ <= 100)), scaler.privacy_spent_.epsilon <= 1.0
    (True, True)
    """

    _parameter_constraints = {
        "epsilon": [
            Interval(numbers.Real, 0, None, closed="neither"),
            Options(numbers.Real, {np.inf}),
        ],
        "bounds_X": [BOUNDS, None],
        "feature_range": [tuple],
        "clip": ["boolean"],
        "copy": ["boolean"],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        bounds_X=None,
        feature_range=(0, 1),
        clip=False,
        copy=True,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.bounds_X = bounds_X
        self.feature_range = feature_range
        self.clip = clip
        self.copy = copy
        self.random_state = random_state

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y=None):
        """Release the range of every feature (spends at most ``epsilon``).

        **Dask input.** A dask array or dataframe ``X`` is validated block by
        block on the workers; for a private release its rows are then gathered
        into this process, because the range release draws over the sorted
        column (:func:`~skdp.preprocessing.private_bounds`): the fit is bit for
        bit the in-memory fit on the same rows with the same ``random_state``,
        and it needs the memory of ``X``. At ``epsilon=inf`` the exact
        extremes are merged on the workers instead.

        Parameters
        ----------
        X : array-like or dask array/dataframe of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self
        """
        on_dask = is_dask_collection(X)
        if on_dask:  # blocks of whole rows; counted on the workers
            n, d, X = dask_shape(self, X)
        else:
            X = validate_data(self, X, dtype=np.float64)
            n, d = X.shape
        low, high = self._feature_range()
        lower = upper = None
        self.bounds_ = None
        if self.bounds_X is not None:
            lower, upper = check_bounds(
                self.bounds_X,
                d,
                name="bounds_X",
                feature_names=getattr(self, "feature_names_in_", None),
            )
            self.bounds_ = (lower, upper)
        self.n_samples_seen_ = n
        if math.isinf(self.epsilon):
            extremes = functools.partial(_block_extremes, lower=lower, upper=upper)
            if on_dask:
                data_min, data_max = reduce_rows(X, extremes, _merge_extremes)
            else:
                data_min, data_max = extremes(X, validated=True)
            self.privacy_spent_ = record_spend(
                PrivacyBudget(math.inf), type(self).__name__
            )
            self.privacy_result_ = None
        else:
            envelope = None
            if lower is not None:
                envelope = {j: (lower[j], upper[j]) for j in range(d)}
            if on_dask:  # the range release draws over the sorted column
                X = check_array(np.asarray(X.compute()), dtype=np.float64)
            result = private_bounds(
                X,
                epsilon=float(self.epsilon),
                envelope=envelope,
                random_state=self.random_state,
                source=type(self).__name__,
            )
            data_min, data_max = result.lower, result.upper
            self.privacy_result_ = result
            self.privacy_spent_ = result.budget
        self.data_min_, self.data_max_ = data_min, data_max
        self.data_range_ = data_max - data_min
        self.scale_ = (high - low) / _handle_zeros(self.data_range_)
        self.min_ = low - data_min * self.scale_
        return self

    def _feature_range(self):
        fr = self.feature_range
        if len(fr) != 2 or not all(isinstance(v, numbers.Real) for v in fr):
            raise ValueError(
                f"feature_range must be a tuple (min, max) of numbers, got {fr!r}."
            )
        if not fr[0] < fr[1]:
            raise ValueError(
                "Minimum of desired feature range must be smaller than maximum. "
                f"Got {fr!r}."
            )
        return float(fr[0]), float(fr[1])

    def transform(self, X):
        """Map ``X`` with the released ranges (no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "scale_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        out = X * self.scale_ + self.min_
        if self.clip:
            out = np.clip(out, *self._feature_range())
        return out

    def inverse_transform(self, X):
        """Map scaled data back to the original units.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "scale_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.min_) / self.scale_

    def output_domain(self):
        """The range of ``transform``'s output: ``feature_range``.

        Used by :func:`~skdp.pipeline.make_private_pipeline` to declare the
        next step's domain (its ``bounds_X``). The released range maps onto
        ``feature_range`` exactly; with ``clip=False`` the few rows outside the
        released range map outside it and the next step clips them (as
        ``clip=True`` would here). ``feature_range`` is public: no cost.

        Returns
        -------
        dict
            ``{"bounds_X": (lower, upper)}``, arrays of shape (n_features,).
        """
        check_is_fitted(self, "scale_")
        low, high = self._feature_range()
        d = self.scale_.shape[0]
        return {"bounds_X": (np.full(d, low), np.full(d, high))}

    def __skdp_privacy__(self):
        """The fit's guarantee, for :func:`skdp.pipeline.check_privacy`.

        Without declared ranges the release is still private (over the public
        grid), which the check's generic rule for an undeclared ``bounds_X``
        (read off the data) would get wrong, so the estimator declares itself.
        """
        check_is_fitted(self, "privacy_spent_")
        return self.privacy_spent_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
