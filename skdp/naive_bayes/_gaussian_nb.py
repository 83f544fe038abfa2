"""PrivateGaussianNB: class counts and per-class moments in one release."""

import functools
import math
import numbers

import numpy as np
from scipy import optimize, special
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from skdp._moments import moment_sensitivity
from skdp.accounting import BudgetTrackingMixin, record_spend
from skdp.mechanisms import GaussianMechanism, LaplaceMechanism
from skdp.naive_bayes._nb_partial import NBPartialFitMixin, RunningTotals
from skdp.naive_bayes._nb_statistics import (
    batch_class_stats,
    class_sums,
    dask_class_stats,
    weighted,
)
from skdp.utils import check_classes, check_labels_in, feature_bounds, noise_generator
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.dask_rows import dask_labels, dask_shape, is_dask_collection
from skdp.utils.privacy_warnings import warn_privacy_leak
from skdp.utils.sklearn_compat import (
    BOUNDS,
    RANDOM_STATE,
    Interval,
    Options,
    fit_context,
    validate_data,
)

__all__ = [
    "CLASS_SPREAD",
    "PrivateGaussianNB",
    "nb_error_proxy",
    "nb_release_weights",
    "nb_sensitivity",
    "nb_statistics",
]

#: ``sigma_0``: the within-class standard deviation, in units of the declared
#: half-width, that the budget split is tuned for (a class spanning +-3
#: standard deviations of the declared range). Public, data-free.
CLASS_SPREAD = 1.0 / 3.0


def nb_sensitivity(n_features, count_weight, moment_weight, norm="l1"):
    """Sensitivity of the released vector ``(mu n_k, S1_k, lambda S2_k)_k``.

    Replace-one neighbours (``n`` public): one row ``(w, k)`` with ``w`` in
    ``[-1, 1]^d`` (the features mapped to [-1, 1]) and label ``k`` is replaced
    by ``(w', k')``.

    Parameters
    ----------
    n_features : int
        Features that can vary (a feature of zero width contributes nothing).
    count_weight : float
        ``mu``, the weight of the class counts.
    moment_weight : float
        ``lambda``, the weight of the sums of squares.
    norm : {"l1", "l2"}
        L1 (Laplace) or L2 (Gaussian) sensitivity.

    Returns
    -------
    float

    Notes
    -----
    **Class changes** (``k != k'``): ``n_k`` drops by 1 and ``n_k'`` grows by 1
    (``2 mu`` in L1, ``2 mu^2`` in squared L2); class ``k`` loses ``(w_j,
    lambda w_j^2)`` and class ``k'`` gains ``(w'_j, lambda w'_j^2)`` in
    disjoint coordinates, at most ``1 + lambda`` (L1) and ``1 + lambda^2``
    (squared L2) per feature and row, both attained at ``|w_j| = 1``:
    ``2 mu + 2 d (1 + lambda)`` and ``sqrt(2 mu^2 + 2 d (1 + lambda^2))``.

    **Same class** (``k = k'``): the counts do not move; per feature the change
    is ``(a - b, lambda (a^2 - b^2))``, at most ``g(lambda)`` in L1 and
    ``h(lambda)`` in squared L2, derived in
    ``skdp._moments.moment_sensitivity``
    (``g = (1 + 2 lambda)^2 / (4 lambda)`` for ``lambda > 1/2``, ``h = 4`` for
    ``lambda <= sqrt(2)``): ``d g`` and ``sqrt(d h)``.

    The sensitivity is the larger of the two cases. In L1 the class change
    always dominates (``2 + 2 lambda - g(lambda) = 1 + lambda - 1/(4 lambda)
    > 0`` for ``lambda > 1/2``; ``2 + 2 lambda > 2`` below).
    """
    d = int(n_features)
    mu, lam = float(count_weight), float(moment_weight)
    if norm == "l1":
        change = 2 * mu + 2 * d * (1 + lam)
        same = moment_sensitivity(d, weight=lam, norm="l1") if d else 0.0
        return float(max(change, same))
    change = 2 * mu**2 + 2 * d * (1 + lam**2)
    same = moment_sensitivity(d, weight=lam, norm="l2") ** 2 if d else 0.0
    return float(math.sqrt(max(change, same)))


def nb_error_proxy(n_features, count_weight, moment_weight, norm="l1"):
    """The error proxy the weights minimise (per class, up to ``(noise / n_k)^2``).

    ``Delta^2 [(1 + d/2) / mu^2 + d (1 / s^2 + 1 / (2 s^4 lambda^2))]`` with
    ``s = CLASS_SPREAD`` and ``Delta`` the sensitivity in ``norm``: the
    variance of the error of one class's log-likelihood at a typical point
    (see the Notes of :class:`PrivateGaussianNB`).
    """
    d = int(n_features)
    mu, lam = float(count_weight), float(moment_weight)
    s2 = CLASS_SPREAD**2
    sens = nb_sensitivity(d, mu, lam, norm)
    return sens**2 * ((1 + d / 2) / mu**2 + d * (1 / s2 + 1 / (2 * s2**2 * lam**2)))


@functools.lru_cache(maxsize=256)
def nb_release_weights(n_features, norm="l1"):
    """``(mu, lambda)``: the weights of the counts and of the sums of squares.

    Public (a function of ``d`` and the mechanism only). L1: closed form
    (see the Notes of :class:`PrivateGaussianNB`); L2: the minimiser of
    :func:`nb_error_proxy`, from a log grid refined by Nelder-Mead.

    Returns
    -------
    mu, lam : float
    """
    d = int(n_features)
    s2 = CLASS_SPREAD**2
    a, b = 1 / s2, 1 / (2 * s2**2)
    if d == 0:
        return 1.0, 1.0
    if norm == "l1":
        lam = (b / a) ** (1 / 3)
        mu = ((1 + lam) * (1 + d / 2) / (a + b / lam**2)) ** (1 / 3)
        return float(mu), float(lam)

    def cost(log_params):
        return math.log(nb_error_proxy(d, *np.exp(log_params), norm="l2"))

    grid = np.log(np.geomspace(0.05, 20, 60))
    start = min(((m, w) for m in grid for w in grid), key=cost)
    res = optimize.minimize(cost, start, method="Nelder-Mead", options={"xatol": 1e-6})
    mu, lam = np.exp(res.x if res.fun <= cost(start) else start)
    return float(mu), float(lam)


def nb_statistics(W, codes, n_classes, count_weight, moment_weight):
    """The released vector ``(mu n_k, S1_k, lambda S2_k)``, flattened.

    Parameters
    ----------
    W : ndarray of shape (n_samples, n_features)
        Features already mapped to [-1, 1].
    codes : ndarray of int, shape (n_samples,)
        Class index of each row, in ``range(n_classes)``.
    n_classes : int
    count_weight, moment_weight : float

    Returns
    -------
    ndarray of shape (n_classes * (1 + 2 n_features),)
        ``n_classes`` weighted counts, then the ``(n_classes, n_features)`` sums,
        then the weighted sums of squares (row-major).
    """
    counts, s1, s2 = class_sums(W, codes, n_classes)
    return weighted(counts, s1, s2, count_weight, moment_weight)


class PrivateGaussianNB(
    NBPartialFitMixin, ClassifierMixin, BudgetTrackingMixin, BaseEstimator
):
    """Gaussian naive Bayes with differentially private counts, means and variances.

    The private counterpart of :class:`sklearn.naive_bayes.GaussianNB` (and of
    diffprivlib's ``GaussianNB``): the class counts, and per class and feature
    the sum and the sum of squares of the rows clipped to ``bounds_X``, come
    from **one** release of one vector; priors, means and variances are
    computed from it (post-processing).

    Parameters
    ----------
    epsilon : float, default=1.0
        In (0, inf]. ``np.inf`` adds no noise: the fit equals scikit-learn's
        ``GaussianNB`` on the data clipped to ``bounds_X``.
    delta : float, default=0.0
        0: pure epsilon-DP (Laplace noise on skdp's floating-point-safe
        lattice). In (0, 1): the Gaussian mechanism (analytic calibration);
        use at most ``1 / n^2``.
    bounds_X : tuple (lower, upper), list of pairs, dict or None, default=None
        The declared range of each feature; data outside is clipped to it
        inside ``fit`` (the caller's array is not modified). One of
        ``(lower, upper)`` (scalars or arrays of length n_features), a list of
        ``(lo, hi)`` pairs one per feature, or a dict ``{feature: (lo, hi)}``
        naming every feature once, by column name (X a DataFrame) or index
        (see :func:`~skdp.utils.check_bounds`). None: taken from the data with
        a :class:`~skdp.exceptions.PrivacyLeakWarning` (not private).
    classes : array-like of shape (n_classes,) or None, default=None
        The labels. Declare them: which labels occur is data (None infers them
        with a :class:`~skdp.exceptions.PrivacyLeakWarning`), and a declared
        class absent from ``y`` still gets a (noisy) model.
    priors : array-like of shape (n_classes,) or None, default=None
        Prior probabilities of the classes (in the order of the sorted
        classes). If given they are used as they are; the counts are still
        released (they divide the sums).
    var_smoothing : float, default=1e-9
        Added to every variance, times the largest variance a feature can
        have inside its declared range (``max_j (half-width_j)^2``), a public
        value: scikit-learn multiplies the largest variance of the data instead
        (done so at ``epsilon=inf`` only, to equal scikit-learn there).
    random_state : None, int, RandomState or Generator, default=None
        Seeds the noise only under skdp's reproducible-noise opt-in
        (``skdp.set_config(reproducible_noise=True)``); by default the noise
        comes from fresh OS entropy whatever this says (see
        :doc:`/user_guide/noise_and_seeds`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_count_ : ndarray of shape (n_classes,)
        Private class counts, projected to sum to ``n`` (each at least
        ``min(1, n / n_classes)``).
    class_prior_ : ndarray of shape (n_classes,)
        ``priors``, or ``class_count_ / n``.
    theta_ : ndarray of shape (n_classes, n_features)
        Private per-class means, inside the declared ranges.
    var_ : ndarray of shape (n_classes, n_features)
        Private per-class variances, at least ``variance_floor_``, plus
        ``epsilon_``.
    epsilon_ : float
        The absolute value added to the variances (scikit-learn's name and
        meaning; not the privacy parameter: see ``privacy_spent_``).
    variance_floor_ : ndarray of shape (n_classes, n_features)
        The public floor of the released variances (see Notes); 0 at
        ``epsilon=inf``.
    bounds_ : tuple of ndarray
        The ranges used (declared or inferred).
    count_weight_, moment_weight_ : float
        ``mu`` and ``lambda`` of the release (see Notes).
    sensitivity_ : float
        L1 (``delta=0``) or L2 sensitivity of the released vector.
    noise_scale_ : float
        Laplace scale or Gaussian sigma per coordinate.
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
    declared range). With ``n_k`` the number of rows of class ``k``, ``S1_kj``
    and ``S2_kj`` the sums of ``w_j`` and ``w_j^2`` over them, the release is
    the vector ``(mu n_k, S1_kj, lambda S2_kj)`` over all classes and
    features plus i.i.d. noise: Laplace with scale ``Delta_1 / epsilon`` or
    Gaussian with the analytic sigma for ``Delta_2``.

    **Sensitivity** (replace-one neighbours, ``n`` public; derived in
    :func:`nb_sensitivity`). A row that changes class moves two counts by 1
    and takes its ``(w, lambda w^2)`` out of one class and the new row's into
    another: ``Delta_1 = 2 mu + 2 d (1 + lambda)``, ``Delta_2 = sqrt(2 mu^2 +
    2 d (1 + lambda^2))``, attained at ``|w_j| = |w'_j| = 1``; a row that keeps
    its class moves no count and is bounded by ``d g(lambda)`` and ``sqrt(d
    h(lambda))`` as in :class:`~skdp.preprocessing.PrivateStandardScaler`; the
    larger case is used. ``d`` counts the features of non-zero width; the
    number of classes does not enter (a row is in one class).

    **Budget split.** The weights ``mu`` and ``lambda`` set how the noise is
    shared: the count noise is ``1/mu``, the sums-of-squares noise ``1/lambda``
    of the sums' noise. They minimise an error proxy: the variance of the
    error of one class's log-likelihood ``log pi_k + sum_j log N(x_j; m_kj,
    v_kj)`` at a point ``z`` standard deviations from the class mean, averaged
    over ``z ~ N(0, 1)`` for a class of spread ``s = CLASS_SPREAD = 1/3`` in
    [-1, 1] units, centred: an error ``dm`` in a mean costs ``dm^2 / s^2``,
    an error ``dv`` in a variance ``dv^2 / (2 s^4)``, and an error ``dn`` in a
    count costs ``(1 + d/2) (dn / n_k)^2`` (through the prior and through the
    division of all ``2d`` sums of its class). With per-coordinate noise
    variance proportional to ``Delta^2``, the proxy is (:func:`nb_error_proxy`)

    ``J(mu, lambda) = Delta^2 [(1 + d/2) / mu^2 + d (a + b / lambda^2)]``,
    ``a = 1 / s^2 = 9``, ``b = 1 / (2 s^4) = 40.5``.

    - Laplace: ``Delta_1 = 2 (mu + D)``, ``D = d (1 + lambda)``; minimising
      ``(mu + D)^2 (P / mu^2 + B)`` over ``mu`` gives ``mu^3 = D P / B``
      (``P = 1 + d/2``, ``B = d (a + b / lambda^2)``) and the value ``(P^(1/3)
      + B^(1/3) D^(2/3))^3``, whose ``lambda`` part ``(a + b/lambda^2) (1 +
      lambda)^2`` is minimal at ``lambda = (b / a)^(1/3) = 4.5^(1/3) =
      1.651`` whatever ``d``; then ``mu = ((1 + lambda) (1 + d/2) / (a + b /
      lambda^2))^(1/3)`` (0.55 at ``d = 1``, 0.87 at ``d = 10``, 1.78 at
      ``d = 100``). Because the class-change sensitivity is a sum of the
      parts, this joint release is exactly as good as three separate
      releases (counts, sums, squares) at the best split of epsilon,
      ``epsilon_c : epsilon_1 : epsilon_2 = mu : d : d lambda`` (for
      ``d = 10``: 3%, 37%, 60%); diffprivlib's split of thirds (separate
      releases of counts, means and variances at ``epsilon / 3`` each) has a
      proxy 1.55 (``d = 1``), 2.41 (``d = 10``) and 2.60 (``d = 100``) times
      larger: the same error needs 1.24, 1.55 and 1.61 times the epsilon
      there (the proxy scales as ``1 / epsilon^2``).
    - Gaussian: ``Delta_2^2 = max(2 mu^2 + 2 d (1 + lambda^2), d h(lambda))``:
      the parts add in squares, so a joint release is cheaper than any split;
      ``(mu, lambda)`` is found numerically (:func:`nb_release_weights`;
      ``lambda = 1.46``, ``mu`` 0.64 at ``d = 1`` to 1.54 at ``d = 100``).

    **Post-processing** (free). Counts: ``c = `` the projection of ``n~_k =
    noisy / mu`` onto ``{sum_k c_k = n, c_k >= min(1, n / K)}`` (``n`` is
    public). Means: ``m = clip(S1~ / c, -1, 1)``. Variances: ``v = clip(S2~ /
    (lambda c) - m^2, f, max(f, 1 - m^2))`` (a variable in [-1, 1] with mean
    ``m`` has variance at most ``1 - m^2``) with the floor ``f_k`` the noise
    standard deviation of ``S2~ / (lambda c_k)``, capped at 1: a function of
    the noise scale and the released counts only, so the variances stay
    positive without looking at the data. Back in the user's units:
    ``theta_ = c + r m``, ``var_ = r^2 v + epsilon_``. At ``epsilon=inf`` the
    counts, means and variances are numpy's on the clipped data and
    ``epsilon_`` is scikit-learn's rule (``var_smoothing`` times the largest
    variance of the clipped data): scikit-learn's fit.

    **Streams** (:meth:`partial_fit`). Each call releases its batch's vector
    as ``fit`` does (same sensitivity, ``epsilon``, ``delta``; its own noise)
    and adds it to the running noisy totals; the model is the post-processing
    above applied to the totals, with ``n`` the rows of all batches (public:
    each batch's size is) and the floor from the noise of the sum (``k``
    releases: ``sqrt(k)`` times one release's). No exact statistic of an
    earlier batch is kept. ``fit`` starts the totals anew with its own
    release (a ``partial_fit`` after it adds to them, as in scikit-learn).
    The ``k`` releases compose: ``privacy_spent_`` and the ledger record ``k
    (epsilon, delta)`` (basic composition), which holds whatever rows the
    batches share. If the batches hold disjoint rows the whole stream is
    ``(epsilon, delta)``-DP by parallel composition (a row changes one
    batch's release only), but the estimator cannot know that: declare it
    with :func:`~skdp.accounting.on_rows` or account for it yourself. At
    ``epsilon=inf`` the totals are the exact moments, merged by Chan's update:
    the model equals ``fit`` on all rows up to rounding.

    References
    ----------
    Vaidya, Shafiq, Basu & Hong (2013). Differentially private naive Bayes
    classification. IEEE/WIC/ACM WI-IAT.
    Dwork, McSherry, Nissim & Smith (2006). Calibrating noise to sensitivity in
    private data analysis. TCC.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from skdp.naive_bayes import PrivateGaussianNB
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = PrivateGaussianNB(epsilon=1.0, bounds_X=(0, 8), classes=[0, 1, 2])
    >>> clf.fit(X, y).privacy_spent_
    PrivacyBudget(epsilon=1.0, delta=0.0)
    >>> clf.theta_.shape
    (3, 4)
    >>> stream = PrivateGaussianNB(epsilon=1.0, bounds_X=(0, 8), classes=[0, 1, 2])
    >>> for rows in np.array_split(np.random.default_rng(0).permutation(150), 3):
    ...     stream = stream.partial_fit(X[rows], y[rows])
    >>> stream.privacy_spent_
    PrivacyBudget(epsilon=3.0, delta=0.0)
    """

    _parameter_constraints = {
        "epsilon": [
            Interval(numbers.Real, 0, None, closed="neither"),
            Options(numbers.Real, {np.inf}),
        ],
        "delta": [Interval(numbers.Real, 0, 1, closed="left")],
        "bounds_X": [BOUNDS, None],
        "classes": ["array-like", None],
        "priors": ["array-like", None],
        "var_smoothing": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=0.0,
        bounds_X=None,
        classes=None,
        priors=None,
        var_smoothing=1e-9,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds_X = bounds_X
        self.classes = classes
        self.priors = priors
        self.var_smoothing = var_smoothing
        self.random_state = random_state

    @property
    def _private(self):
        return not math.isinf(self.epsilon)

    def _resolve_classes(self, y, classes=None):
        """The class set: declared ``classes``, else ``partial_fit``'s
        ``classes`` argument (both given: equal), else read off ``y``."""
        if self.classes is not None or classes is not None:
            found = check_classes(self.classes if self.classes is not None else classes)
            if self.classes is not None and classes is not None:
                given = check_classes(classes)
                if not np.array_equal(given, found):
                    raise ValueError(
                        f"partial_fit's classes={given.tolist()} differs from the "
                        f"declared classes={found.tolist()}."
                    )
            if y is not None:
                check_labels_in(y, found)
            return found
        if self._private:
            warn_privacy_leak(
                "classes was not declared, so the labels are taken from the data: "
                "which labels occur leaks and the result is not differentially "
                "private. Declare classes=[...]."
            )
        return np.unique(y)

    def _check_priors(self, n_classes):
        if self.priors is None:
            return None
        priors = np.asarray(self.priors, dtype=np.float64)
        if priors.shape != (n_classes,):
            raise ValueError("Number of priors must match number of classes.")
        if not np.isclose(priors.sum(), 1.0):
            raise ValueError("The sum of the priors should be 1.")
        if (priors < 0).any():
            raise ValueError("Priors must be non-negative.")
        return priors

    def _mechanism(self, n_active, n_classes, n_features):
        """The mechanism of the release and ``(mu, lambda)``: public values only."""
        norm = "l2" if self.delta > 0 else "l1"
        mu, lam = nb_release_weights(n_active, norm)
        sens = nb_sensitivity(n_active, mu, lam, norm)
        if self.delta > 0:
            mech = GaussianMechanism(self.epsilon, self.delta, sens)
        else:
            mech = LaplaceMechanism(
                self.epsilon, sens, dimension=n_classes * (1 + 2 * n_features)
            )
        return mech, mu, lam

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Release the class counts, means and variances: spends ``(epsilon, delta)``.

        **Dask input.** A dask array/dataframe ``X`` with a dask array/series
        ``y`` (dask aligns their blocks) never comes to this process: each
        block is checked (NaN, labels outside ``classes``: it fails before
        anything is spent) and reduced to per-class integer counts, sums and
        sums of squares on the workers, merged there; only those come back
        for the one release. ``bounds_X`` and ``classes`` must be declared.
        (:meth:`partial_fit` takes in-memory batches only.)
        Equal to the in-memory fit with the same ``random_state``: the counts
        bit for bit, the means and variances up to the order of the sums.

        Parameters
        ----------
        X : array-like or dask array/dataframe of shape (n_samples, n_features)
        y : array-like or dask array/series of shape (n_samples,)

        Returns
        -------
        self
        """
        self.__dict__.pop("_running", None)  # fit starts new running totals
        on_dask = is_dask_collection(X) or is_dask_collection(y)
        if on_dask:
            n, d, X = dask_shape(self, X)
            y = dask_labels(y, n)
            if self.bounds_X is None or self.classes is None:
                raise ValueError(
                    "PrivateGaussianNB on dask input needs declared bounds_X and "
                    "classes: reading them off the data would leak them."
                )
            classes = self._resolve_classes(None)
        else:
            X, y = validate_data(self, X, y, dtype=np.float64)
            check_classification_targets(y)
            n, d = X.shape
            classes = self._resolve_classes(y)
        n_classes = classes.size
        priors = self._check_priors(n_classes)
        lower, upper = feature_bounds(self, X, d)
        centre, half = (lower + upper) / 2, (upper - lower) / 2
        active = half > 0
        mech = mu = lam = None
        if self._private:
            mech, mu, lam = self._mechanism(int(active.sum()), n_classes, d)
        stats = None
        if on_dask:
            # the statistics on the workers first: a bad block (NaN, an
            # unknown label) fails there, before anything is spent
            stats = dask_class_stats(
                X, y, classes, lower, upper, exact=not self._private
            )
        # every input and parameter is validated: record the spend (a refused
        # spend stops the release before any noise is drawn), then draw
        self.privacy_spent_ = record_spend(
            self._spend, type(self).__name__, mechanism=mech
        )
        rng = noise_generator(self.random_state)
        self.classes_ = classes
        self.bounds_ = (lower, upper)
        if not on_dask:
            stats = batch_class_stats(
                X,
                np.searchsorted(classes, y),
                lower=lower,
                upper=upper,
                n_classes=n_classes,
                exact=not self._private,
            )
        # the running totals that partial_fit adds to: this one release
        running = RunningTotals(stats, n, 0.0, 1, None)
        if self._private:
            noisy = mech.randomize(weighted(*stats, mu, lam), random_state=rng)
            running = RunningTotals(noisy, n, mech.variance, 1, (mu, lam))
        self._set_model(running, centre, half, mech, priors)
        return self

    def predict_joint_log_proba(self, X):
        """``log P(c) + log P(x | c)`` for every class (unnormalised posterior).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self, "privacy_spent_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        with np.errstate(divide="ignore"):
            log_prior = np.log(self.class_prior_)
        norm = -0.5 * np.sum(np.log(2.0 * np.pi * self.var_), axis=1)
        quad = np.stack(
            [
                np.sum((X - self.theta_[k]) ** 2 / self.var_[k], axis=1)
                for k in range(self.classes_.size)
            ],
            axis=1,
        )
        return log_prior + norm - 0.5 * quad

    def predict(self, X):
        """The class of largest posterior probability.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        jll = self.predict_joint_log_proba(X)
        return self.classes_[np.argmax(jll, axis=1)]

    def predict_log_proba(self, X):
        """Log posterior probabilities of the classes (``classes_`` order).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        jll = self.predict_joint_log_proba(X)
        return jll - special.logsumexp(jll, axis=1, keepdims=True)

    def predict_proba(self, X):
        """Posterior probabilities of the classes (``classes_`` order).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        return np.exp(self.predict_log_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.input_tags.allow_nan = False
        return tags
