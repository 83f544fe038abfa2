"""The running noisy totals of :class:`~skdp.naive_bayes.PrivateGaussianNB`:
``partial_fit`` (one release per batch, added to the totals) and the model
computed from the totals (post-processing, shared with ``fit``)."""

import math
import typing

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from skdp.accounting import PrivacyBudget, record_spend
from skdp.mechanisms import GaussianMechanism
from skdp.naive_bayes._nb_statistics import (
    batch_class_stats,
    from_moments,
    merge_class_stats,
    weighted,
)
from skdp.utils import (
    check_classes,
    check_labels_in,
    feature_bounds,
    release_generator,
)
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.dask_rows import is_dask_collection
from skdp.utils.sklearn_compat import fit_context, validate_data

__all__ = ["NBPartialFitMixin", "RunningTotals", "project_counts"]


class RunningTotals(typing.NamedTuple):
    """What the model is computed from: released values and public ones only.

    ``totals``: the sum of the noisy released vectors ``(mu n_k, S1_k, lambda
    S2_k)`` (private), or the merged exact per-class and overall moments
    (``epsilon=inf``, where the release is the exact statistic). ``n``: rows
    (public, the sum of the batch sizes). ``noise_variance``: of each
    coordinate of ``totals``, summed over the releases. ``releases``: how
    many. ``weights``: ``(mu, lambda)`` of every release (None at
    ``epsilon=inf``); a later release must use the same.
    """

    totals: object
    n: int
    noise_variance: float
    releases: int
    weights: tuple | None


def project_counts(noisy, n):
    """Euclidean projection onto ``{c : sum c = n, c_k >= l}``, ``l = min(1, n/K)``.

    Free post-processing with the public ``n``: the counts of a partition of
    ``n`` rows sum to ``n``; ``l`` keeps each positive (a divisor).
    """
    k = noisy.size
    low = min(1.0, n / k)
    room = n - k * low
    if room <= 0:
        return np.full(k, low)
    v = (noisy - low) / room
    # projection onto the probability simplex (sort-based)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    rho = np.count_nonzero(u - css / np.arange(1, k + 1) > 0)
    theta = css[rho - 1] / rho
    return low + room * np.maximum(v - theta, 0.0)


class NBPartialFitMixin:
    """``partial_fit`` and the model from the running totals."""

    def _smoothing(self, half):
        value = self.var_smoothing * float(np.max(half**2, initial=0.0))
        return value if value > 0 else float(self.var_smoothing)

    def _set_model(self, running, centre, half, mech, priors):
        """The model from ``running`` (post-processing; see the class Notes)."""
        self._running = running
        if running.weights is None:
            self._exact_fit(*from_moments(running.totals, centre), half)
        else:
            self._private_model(running, centre, half, mech)
        self.class_prior_ = (
            priors
            if priors is not None
            else self.class_count_ / self.class_count_.sum()
        )

    def _private_model(self, running, centre, half, mech):
        n_classes, d = self.classes_.size, half.size
        (mu, lam), noisy = running.weights, running.totals
        counts = project_counts(noisy[:n_classes] / mu, running.n)
        s1 = noisy[n_classes : n_classes * (1 + d)].reshape(n_classes, d)
        s2 = noisy[n_classes * (1 + d) :].reshape(n_classes, d) / lam
        m = np.clip(s1 / counts[:, None], -1.0, 1.0)
        std = math.sqrt(running.noise_variance) / lam / counts[:, None]
        floor = np.broadcast_to(np.minimum(std, 1.0), (n_classes, d)).copy()
        floor[:, half == 0] = 0.0
        v = np.clip(s2 / counts[:, None] - m**2, floor, np.maximum(floor, 1 - m**2))
        m[:, half == 0] = 0.0
        v[:, half == 0] = 0.0
        self.count_weight_, self.moment_weight_ = mu, lam
        self.sensitivity_ = mech.sensitivity
        self.noise_scale_ = (
            mech.sigma if isinstance(mech, GaussianMechanism) else mech.scale
        )
        self.epsilon_ = self._smoothing(half)
        self.class_count_ = counts
        self.theta_ = centre + half * m
        self.var_ = half**2 * v + self.epsilon_
        self.variance_floor_ = half**2 * floor

    def _exact_fit(self, counts, theta, var, overall_var, half):
        n_classes, d = theta.shape
        smoothing = self.var_smoothing * float(np.max(overall_var))
        self.epsilon_ = smoothing if smoothing > 0 else self._smoothing(half)
        self.count_weight_ = self.moment_weight_ = None
        self.sensitivity_ = self.noise_scale_ = 0.0
        self.class_count_ = counts
        self.theta_ = theta
        self.var_ = var + self.epsilon_
        self.variance_floor_ = np.zeros((n_classes, d))

    def _later_classes(self, y, classes):
        """The classes of a call after the first: ``classes_``, unchanged."""
        if classes is not None:
            given = check_classes(classes)
            if not np.array_equal(given, self.classes_):
                raise ValueError(
                    f"partial_fit's classes={given.tolist()} differs from "
                    f"classes_={self.classes_.tolist()} of the earlier calls "
                    "(call fit to start again)."
                )
        check_labels_in(y, self.classes_, "classes_")
        return self.classes_

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit(restore=True)
    def partial_fit(self, X, y, classes=None):
        """Release one batch's statistics and add them to the running totals.

        Every call is **one new release** of the batch: its class counts, sums
        and sums of squares, with the sensitivity, ``epsilon`` and ``delta``
        of :meth:`fit` (``n`` the batch's rows). The noisy vector is added to
        the running noisy totals (started by :meth:`fit` or by the first
        ``partial_fit``), and the model is computed from the totals by the
        post-processing of :meth:`fit` (see the Notes). Each call records
        ``(epsilon, delta)`` in any active
        :func:`~skdp.accounting.track_budget` (after all its input is
        validated, before any noise is drawn) and adds it to
        ``privacy_spent_``.

        The class set, ``bounds_`` and ``n_features_in_`` are fixed by the
        first call (undeclared ``bounds_X`` are read off the first batch with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`; later batches are
        clipped to them). A bad batch (NaN, another number of features, a
        label outside the classes) raises and leaves the model, the totals and
        the ledger as they were.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            In memory: a dask collection raises TypeError (:meth:`fit` reduces
            it on the workers in one release, at one spend).
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,) or None, default=None
            scikit-learn's argument. If given, it must equal the declared
            ``classes`` (on later calls ``classes_``); without a declared
            ``classes`` it declares them on the first call. Neither: the
            classes are read off the first batch, with a
            :class:`~skdp.exceptions.PrivacyLeakWarning`, as :meth:`fit`
            does.

        Returns
        -------
        self
        """
        if is_dask_collection(X) or is_dask_collection(y):
            raise TypeError(
                f"{type(self).__name__}.partial_fit takes in-memory batches; "
                "pass a dask collection to fit (reduced on the workers, one "
                "release), or compute its blocks and partial_fit each."
            )
        running = getattr(self, "_running", None)
        X, y = validate_data(self, X, y, dtype=np.float64, reset=running is None)
        check_classification_targets(y)
        n, d = X.shape
        if running is None:
            class_set = self._resolve_classes(y, classes)
            lower, upper = feature_bounds(self, X, d)
        else:
            class_set = self._later_classes(y, classes)
            lower, upper = self.bounds_
        priors = self._check_priors(class_set.size)
        centre, half = (lower + upper) / 2, (upper - lower) / 2
        mech = weights = None
        if self._private:
            mech, *weights = self._mechanism(int(np.sum(half > 0)), class_set.size, d)
            weights = tuple(weights)
        if running is not None and running.weights != weights:
            raise ValueError(
                f"The release weights {weights} differ from {running.weights} of "
                "the running totals (epsilon changed to or from inf, or delta "
                "to or from 0, since they began): call fit to start again."
            )
        batch = batch_class_stats(
            X,
            np.searchsorted(class_set, y),
            lower=lower,
            upper=upper,
            n_classes=class_set.size,
            exact=mech is None,
        )
        # all input validated: record the spend (a refused one draws nothing)
        spend = record_spend(
            self._spend, type(self).__name__ + ".partial_fit", mechanism=mech
        )
        index = 0 if running is None else running.releases
        if mech is None:
            release, variance = batch, 0.0
        else:
            rng = release_generator(self.random_state, index)
            release = mech.randomize(weighted(*batch, *weights), random_state=rng)
            variance = mech.variance
        if running is not None:
            if mech is None:
                release = merge_class_stats(running.totals, release)
            else:
                release = running.totals + release
            n, variance = n + running.n, variance + running.noise_variance
            spend = self.privacy_spent_ + spend
        self.privacy_spent_ = spend
        self.classes_ = class_set
        self.bounds_ = (lower, upper)
        totals = RunningTotals(release, n, variance, index + 1, weights)
        self._set_model(totals, centre, half, mech, priors)
        return self

    @property
    def _spend(self):
        if not self._private:
            return PrivacyBudget(math.inf, 0.0)
        return PrivacyBudget(float(self.epsilon), float(self.delta))
