"""PrivateKMeans: a private Lloyd iteration (DPLloyd) with a data-free start."""

import math
import numbers
import warnings

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
)
from sklearn.utils.validation import check_is_fitted

from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.mechanisms import LaplaceMechanism
from skdp.utils import feature_bounds, noise_generator
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.dask_rows import dask_shape, is_dask_collection
from skdp.utils.sklearn_compat import (
    BOUNDS,
    RANDOM_STATE,
    Interval,
    Options,
    fit_context,
    validate_data,
)

__all__ = [
    "CENTRE_SPREAD",
    "CORESET_SIGNAL",
    "MAX_ITER",
    "PrivateKMeans",
    "kmeans_count_weight",
    "kmeans_iterations",
    "kmeans_sensitivity",
    "kmeans_statistics",
    "coreset_depth",
    "packed_centres",
]

#: ``rho``: the root-mean-square coordinate of a cluster centre in [-1, 1]
#: units that the count weight is tuned for (Su et al. 2016 measured 0.225 on
#: their data in [-1/2, 1/2]-scaled units; 0.45 here). Public, data-free.
CENTRE_SPREAD = 0.45

#: The iterations a fit makes at most (and at ``epsilon=inf`` when ``n_iter``
#: is not given: Lloyd to convergence).
MAX_ITER = 300

#: Largest root-mean-square noise per centre coordinate, in [-1, 1] units, that
#: one iteration may carry for a cluster of ``n / k`` rows: the iterations the
#: budget can pay for at that precision (see :func:`kmeans_iterations`).
ITERATION_PRECISION = 0.01

#: The bounds on the automatic number of iterations (Su et al. 2016: a private
#: Lloyd iteration rarely gains beyond 5-7 rounds; diffprivlib uses 2-7).
AUTO_ITERATIONS = (2, 7)


#: ``z`` of :func:`coreset_depth`: the rows a coreset cell should hold on
#: average, in standard deviations of its noisy count.
CORESET_SIGNAL = 4.0

#: The deepest coreset partition (``2^16`` cells).
MAX_CORESET_DEPTH = 16


def kmeans_count_weight(n_features):
    """``mu``: the weight of the cluster counts in the released vector.

    Minimises the centre error ``(mu + d)^2 (1 + rho^2 / mu^2)`` (see the Notes
    of :class:`PrivateKMeans`): ``mu = (rho^2 d)^(1/3)``, ``rho =
    CENTRE_SPREAD``. Public (a function of ``d`` only).
    """
    d = int(n_features)
    return float((CENTRE_SPREAD**2 * d) ** (1 / 3)) if d else 1.0


def kmeans_sensitivity(n_features, count_weight):
    """L1 sensitivity of one iteration's vector ``(mu n_j, S_j)_j``.

    Replace-one neighbours, rows ``w`` in ``[-1, 1]^d``, cluster assignments
    made against public centres (those of the previous iteration). A row
    ``w`` in cluster ``a`` replaced by ``w'`` in cluster ``b``:

    - ``a != b``: ``n_a`` drops by 1 and ``n_b`` grows by 1 (``2 mu``);
      ``S_a`` loses ``w`` and ``S_b`` gains ``w'`` (``||w||_1 + ||w'||_1 <=
      2 d``): ``2 mu + 2 d``, attained at ``|w_j| = |w'_j| = 1``.
    - ``a = b``: the counts stay; ``S_a`` changes by ``w' - w``, at most ``2 d``.

    So ``Delta_1 = 2 (mu + d)``; ``d`` counts the features of non-zero width
    and ``k`` does not enter (a row is in one cluster).
    """
    return 2.0 * (float(count_weight) + int(n_features))


def kmeans_statistics(W, labels, n_clusters, count_weight):
    """The vector one iteration releases: ``(mu n_j)_j`` then ``(S_j)_j`` row-major.

    Parameters
    ----------
    W : ndarray of shape (n_samples, n_features)
        Rows mapped to [-1, 1].
    labels : ndarray of int, shape (n_samples,)
        Cluster of each row, in ``range(n_clusters)``.
    n_clusters : int
    count_weight : float

    Returns
    -------
    ndarray of shape (n_clusters * (1 + n_features),)
    """
    counts = np.bincount(labels, minlength=n_clusters).astype(np.float64)
    sums = np.zeros((n_clusters, W.shape[1]))
    np.add.at(sums, labels, W)
    return np.concatenate([count_weight * counts, sums.ravel()])


def kmeans_iterations(n_samples, n_features, n_clusters, epsilon):
    """The number of private Lloyd iterations: public quantities only.

    An iteration at ``epsilon / T`` gives a cluster of ``n / k`` rows a
    centre noise of root-mean-square ``sigma(T) = sqrt(2) Delta_1 T
    sqrt(1 + rho^2 / mu^2) k / (n epsilon)`` per coordinate (Laplace of scale
    ``Delta_1 T / epsilon`` on the sums and ``Delta_1 T / (mu epsilon)`` on the
    count, propagated through ``S / n``). ``T`` is the largest number of
    iterations with ``sigma(T) <= ITERATION_PRECISION``, within
    ``AUTO_ITERATIONS`` (the coreset's extra share, ``epsilon / (T + 1)`` per
    release, is not counted: the rule targets the order of the noise, not
    its last digit). ``epsilon=inf``: ``MAX_ITER`` (Lloyd to convergence).
    """
    if math.isinf(epsilon):
        return MAX_ITER
    d, k = int(n_features), int(n_clusters)
    mu = kmeans_count_weight(d)
    per_iteration = (
        math.sqrt(2)
        * kmeans_sensitivity(d, mu)
        * math.sqrt(1 + CENTRE_SPREAD**2 / mu**2)
        * k
        / (n_samples * epsilon)
    )
    affordable = ITERATION_PRECISION / per_iteration if per_iteration > 0 else math.inf
    low, high = AUTO_ITERATIONS
    return int(min(max(math.floor(affordable), low), high))


def coreset_depth(n_samples, n_features, epsilon):
    """Depth of the data-free partition whose cells form the coreset.

    The coreset release (at ``epsilon``, the share of one iteration) gives each
    cell a count with noise of standard deviation ``s = sqrt(2) Delta_1 /
    (mu epsilon)``; the ``2^D`` cells hold ``n 2^-D`` rows on average, and the
    depth is the largest with ``n 2^-D >= CORESET_SIGNAL s``, within ``[1,
    MAX_CORESET_DEPTH]`` (``epsilon=inf``: ``s = 1``).
    """
    d = int(n_features)
    mu = kmeans_count_weight(d)
    sd = (
        1.0
        if math.isinf(epsilon)
        else math.sqrt(2) * kmeans_sensitivity(d, mu) / (mu * epsilon)
    )
    ratio = n_samples / (CORESET_SIGNAL * sd)
    depth = math.floor(math.log2(ratio)) if ratio > 2 else 1
    return int(min(max(depth, 1), MAX_CORESET_DEPTH))


def packed_centres(n_clusters, n_features, rng, max_tries=100):
    """``k`` data-free starting centres in ``[-1, 1]^d``, spread apart.

    Su et al.'s sphere packing (as in diffprivlib): centres drawn uniformly in
    ``[-1 + r, 1 - r]^d`` are kept when at least ``2 r`` from those kept; after
    ``max_tries`` failures in a row ``r`` is halved. Starts at ``r = 1/2``.
    """
    k, d = int(n_clusters), int(n_features)
    radius = 0.5
    while True:
        centres = np.empty((k, d))
        kept, fails = 0, 0
        while kept < k and fails < max_tries:
            c = rng.uniform(-1 + radius, 1 - radius, size=d)
            if (
                kept
                and np.min(np.sum((centres[:kept] - c) ** 2, axis=1))
                < (2 * radius) ** 2
            ):
                fails += 1
                continue
            centres[kept] = c
            kept, fails = kept + 1, 0
        if kept == k:
            return centres
        radius /= 2


def _assign(W, centres):
    """Index of the nearest centre of each row (squared Euclidean distance)."""
    dist = (
        np.einsum("ij,ij->i", W, W)[:, None]
        - 2.0 * W @ centres.T
        + np.einsum("ij,ij->i", centres, centres)[None, :]
    )
    return np.argmin(dist, axis=1)


def _update(noisy, centres, count_weight, count_floor):
    """New centres from one released vector (post-processing).

    ``n~_j = noisy count / mu``; a cluster with ``n~_j < count_floor`` keeps its
    centre (its sum is mostly noise); the others move to ``clip(S~_j / n~_j,
    -1, 1)``.
    """
    k, d = centres.shape
    counts = noisy[:k] / count_weight
    sums = noisy[k:].reshape(k, d)
    out = centres.copy()
    keep = counts >= max(count_floor, 1e-12)
    out[keep] = np.clip(sums[keep] / counts[keep, None], -1.0, 1.0)
    return out


def _weighted_kmeans(points, weights, n_clusters, rng):
    """Non-private weighted k-means (k-means++, 10 starts) on released points."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        km = KMeans(
            n_clusters, n_init=10, random_state=int(rng.integers(2**31 - 1))
        ).fit(points, sample_weight=weights)
    return km.cluster_centers_


class PrivateKMeans(
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    ClusterMixin,
    BudgetTrackingMixin,
    BaseEstimator,
):
    """K-means with differentially private centres: a coreset start and private Lloyd.

    The private counterpart of :class:`sklearn.cluster.KMeans` (and of
    diffprivlib's ``KMeans``, Su et al.'s DPLloyd). The fit makes ``T + 1``
    releases at ``epsilon / (T + 1)`` each, all of one kind: for a partition
    of the declared box into cells, the count and the sum of the rows in each
    cell, with Laplace noise.

    1. **Start** (coreset): the cells are the leaves of a random tree that
       reads no data (a uniformly drawn feature split at a uniform point of
       the cell, to depth :func:`coreset_depth`); each cell with a noisy
       count above its noise level becomes a point (its noisy mean) weighted
       by that count, and weighted k-means++ on these points (post-processing)
       gives the starting centres.
    2. **Lloyd** (``T`` iterations): the cells are the clusters of the current
       (public) centres; each cluster moves to its noisy mean.

    Parameters
    ----------
    n_clusters : int, default=8
        The number of centres.
    epsilon : float, default=1.0
        In (0, inf]. ``np.inf`` adds no noise: exact cell statistics, and
        Lloyd's iteration from the same start to convergence (or ``n_iter``
        iterations), as :class:`sklearn.cluster.KMeans` with
        ``init=initial_centers_, n_init=1`` on the data clipped to
        ``bounds_X``.
    bounds_X : tuple (lower, upper), list of pairs, dict or None, default=None
        The declared range of each feature; data outside is clipped to it
        inside ``fit`` (the caller's array is not modified). Any form of
        :func:`~skdp.utils.check_bounds`. None: taken from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning` (not private).
    n_iter : int or None, default=None
        ``T``, the private Lloyd iterations. None: :func:`kmeans_iterations`
        (from ``n``, ``d``, ``k`` and ``epsilon``: public).
    random_state : None, int, RandomState or Generator, default=None
        Seeds the noise and the data-free partition only under skdp's
        reproducible-noise opt-in (``skdp.set_config(reproducible_noise=True)``);
        by default they come from fresh OS entropy whatever this says (see
        :doc:`/user_guide/noise_and_seeds`).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        The released centres (inside the declared box).
    initial_centers_ : ndarray of shape (n_clusters, n_features)
        The centres the coreset gave (released too).
    labels_ : ndarray of shape (n_samples,)
        The nearest released centre of each training row. **Not private**:
        computed from the training rows after the release (each label is
        about its row), as scikit-learn's ``fit_predict`` needs; do not
        publish it. The same holds for ``score`` and ``predict`` on the
        training data. No ``inertia_`` is kept (it would be a statistic of
        the training data); ``-score(X)`` gives it for any ``X``. On dask
        input a lazy dask array (``fit`` does not compute it).
    n_iter_ : int
        ``T``, the private Lloyd iterations made.
    coreset_depth_ : int
        Depth of the coreset partition (``2^depth`` cells).
    bounds_ : tuple of ndarray
        The ranges used (declared or inferred).
    privacy_spent_ : PrivacyBudget
        ``(epsilon, 0)``: ``T + 1`` releases at ``epsilon / (T + 1)``,
        recorded in any active :func:`~skdp.accounting.track_budget`.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

    Notes
    -----
    **Release and sensitivity.** Each feature is mapped to [-1, 1] by the
    public affine map ``w = (clip(x) - c) / r`` (``c`` the midpoint, ``r``
    the half-width of its declared range). For a partition into cells ``j``
    that does not depend on the data (the random tree, or the nearest
    released centre), one release is the vector ``(mu n_j, S_j)_j`` of
    weighted counts and sums of ``w`` plus Laplace noise of scale ``Delta_1
    / epsilon_t`` (on skdp's lattice). Replace-one neighbours (``n``
    public): a row in cell ``a`` replaced by one in cell ``b != a`` moves two
    counts by 1 (``2 mu``) and takes ``w`` out of ``S_a`` and puts ``w'``
    into ``S_b`` (``||w||_1 + ||w'||_1 <= 2 d``); within one cell the sums
    change by ``w' - w`` (``<= 2 d``). So ``Delta_1 = 2 (mu + d)``
    (:func:`kmeans_sensitivity`, checked by brute force in the tests),
    whatever the number of cells; ``d`` counts the features of non-zero
    width. The ``T + 1`` releases compose: ``epsilon`` in total. Which
    cluster a row falls in depends on the earlier releases only (adaptive
    composition).

    **Count weight.** A cluster of ``m`` rows gets the centre ``S~ / n~``
    with error ``e_S / m - v e_n / m`` (``v`` its centre): per coordinate a
    noise variance proportional to ``Delta_1^2 (1 + rho^2 / mu^2)`` for a
    centre of root-mean-square coordinate ``rho``. With ``Delta_1 = 2 (mu +
    d)``, ``(mu + d)^2 (1 + rho^2 / mu^2)`` is least at ``mu^3 = rho^2 d``
    (derivative ``2 (mu + d)(mu^3 - rho^2 d) / mu^3``): Su et al.'s split of
    epsilon between counts and sums (their ``epsilon_0 / epsilon_i =
    (4 d rho_0^2)^(1/3)`` with ``rho_0 = 0.225``, i.e. ``rho = 0.45 =
    CENTRE_SPREAD`` here); as for :class:`~skdp.naive_bayes.PrivateGaussianNB`
    one joint release at weight ``mu`` equals separate releases at that split.

    **Iterations** (:func:`kmeans_iterations`). ``T`` is the most iterations
    whose noise (at ``epsilon / T`` each) keeps a cluster of ``n / k`` rows
    within ``0.01`` half-width per coordinate (root mean square), within
    ``[2, 7]``: noise grows with
    ``T`` (each iteration gets ``epsilon / (T + 1)``) and Lloyd from a good
    start gains little after a few rounds (Su et al. 2016 found DPLloyd best
    at about 5 or fewer).

    **Dask input** (``fit`` only; ``bounds_X`` declared). One pass over every
    block on the workers checks it (finite, 2-D, ``d`` columns) before
    anything is spent or drawn. Then each of the ``T + 1`` releases is one
    pass: each block is mapped to [-1, 1] and its rows put in cells (the
    coreset's tree, or the nearest current centre) by the elementwise
    operations of the in-memory fit, reduced to integer counts and float
    sums per cell on its worker, and merged there; only the table of ``cells
    x (1 + d)`` numbers comes back, and the noise is drawn here, in the
    in-memory order (the convergence test at ``epsilon=inf`` counts the rows
    that changed cluster on the workers). Why the statistics are the
    in-memory ones: the counts are integers, exact in any order; a sum of
    ``m`` mapped values (``|w_j| <= 1``) added in any order is within
    ``gamma_m m`` of the exact sum (Higham 2002, eq. (4.4); ``gamma_m = m u /
    (1 - m u)``, ``u = 2^-53``), so the dask and in-memory sums differ by at
    most ``2 gamma_n n`` (plus one step of the Laplace lattice when a sum
    lies next to a rounding boundary), and a released centre by that over
    its noisy count. Rows are assigned from the released centres, so the
    fits stay that close as long as no row lies within this distance of a
    boundary between two cells (or BLAS rounds one row's distances
    differently in a block of another size); ``tests/cluster/
    test_kmeans_dask.py`` tests the centres with this bound. ``labels_`` is
    then a lazy dask array (nearest released centre per row, not computed).
    Each pass reads the blocks again: ``X.persist()`` first to read the
    source once.

    **Post-processing.** A cell or cluster whose noisy count ``n~`` is below
    the standard deviation of its count noise is dropped (coreset) or keeps
    its centre (Lloyd); the others get ``clip(S~ / n~, -1, 1)``. The
    assignments and the k-means of the coreset use the user's units (the
    distances of :class:`sklearn.cluster.KMeans`), which are public
    functions of the released values. The start costs one iteration's share
    and replaces the data-free start (Su et al.'s sphere packing, as in
    diffprivlib), which gave 1.1-1.3 times the coreset start's test inertia
    on Adult's numeric columns and up to 1.9 times on diamonds (5 seeds,
    ``epsilon`` 0.5-5, during development).

    References
    ----------
    Su, Cao, Li, Bertino & Jin (2016). Differentially private k-means
    clustering. ACM CODASPY.
    Blum, Dwork, McSherry & Nissim (2005). Practical privacy: the SuLQ
    framework. PODS.
    Feldman, Fiat, Kaplan & Nissim (2009). Private coresets. STOC.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.cluster import PrivateKMeans
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(m, 0.05, (2000, 2)) for m in (0.2, 0.8)])
    >>> km = PrivateKMeans(2, epsilon=1.0, bounds_X=(0, 1)).fit(X)
    >>> km.privacy_spent_
    PrivacyBudget(epsilon=1.0, delta=0.0)
    >>> np.sort(km.cluster_centers_[:, 0]).round(1)
    array([0.2, 0.8])
    """

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "epsilon": [
            Interval(numbers.Real, 0, None, closed="neither"),
            Options(numbers.Real, {np.inf}),
        ],
        "bounds_X": [BOUNDS, None],
        "n_iter": [Interval(numbers.Integral, 1, MAX_ITER, closed="both"), None],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self, n_clusters=8, *, epsilon=1.0, bounds_X=None, n_iter=None,
        random_state=None,
    ):  # fmt: skip
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.bounds_X = bounds_X
        self.n_iter = n_iter
        self.random_state = random_state

    @property
    def _n_features_out(self):
        return self.n_clusters

    def _plan(self, n, d_active):
        """``T``, the coreset depth, ``mu`` and the mechanisms of the coreset
        and of one Lloyd release (None at ``epsilon=inf``): public values only."""
        k = self.n_clusters
        T = self.n_iter or kmeans_iterations(n, d_active, k, self.epsilon)
        share = self.epsilon / (T + 1)
        depth = coreset_depth(n, d_active, share)
        mu = kmeans_count_weight(d_active)
        if math.isinf(self.epsilon):
            return T, depth, mu, None, None
        sens = kmeans_sensitivity(d_active, mu)
        start = LaplaceMechanism(share, sens, dimension=2**depth * (1 + d_active))
        step = LaplaceMechanism(share, sens, dimension=k * (1 + d_active))
        return T, depth, mu, start, step

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y=None):
        """Release the centres: spends ``epsilon``.

        Parameters
        ----------
        X : array-like or dask array/dataframe of shape (n_samples, n_features)
            A dask collection is reduced on its workers (``bounds_X`` must be
            declared; see Notes): only the cell statistics come back.
        y : None
            Ignored.

        Returns
        -------
        self
        """
        from skdp.cluster._kmeans_dask import DaskRows, MemoryRows, unit_rows

        on_dask = is_dask_collection(X)
        if on_dask:
            n, d, X = dask_shape(self, X)
            if self.bounds_X is None:
                raise ValueError(
                    "PrivateKMeans on dask input needs declared bounds_X: reading "
                    "them off the data would leak them."
                )
        else:
            X = validate_data(self, X, dtype=np.float64)
            n, d = X.shape
        if n < self.n_clusters:
            raise ValueError(
                f"n_samples={n} should be >= n_clusters={self.n_clusters}."
            )
        lower, upper = feature_bounds(self, X, d)
        centre, half = (lower + upper) / 2, (upper - lower) / 2
        active = half > 0
        T, depth, mu, start_mech, mech = self._plan(n, int(active.sum()))
        scale = half[active]
        if on_dask:  # a full validation pass on the workers (nothing spent yet)
            rows = DaskRows.validated(X, n, lower, upper, active, scale)
        else:
            rows = MemoryRows(unit_rows(X, lower, upper, active), scale)
        # every input and parameter is validated: record the spend (a refused
        # spend stops the release before any noise is drawn), then draw
        spend = PrivacyBudget(float(self.epsilon), 0.0)
        events = None if mech is None else [start_mech] + [mech] * T
        self.privacy_spent_ = record_spend(spend, type(self).__name__, mechanism=events)
        rng = noise_generator(self.random_state)
        start = self._coreset_start(rows, scale, depth, mu, start_mech, rng)
        final, iters = self._lloyd(rows, start, T, mu, mech, rng)
        self.bounds_ = (lower, upper)
        self.coreset_depth_ = depth
        self.n_iter_ = iters
        self.initial_centers_ = self._to_user(start, centre, half, active)
        self.cluster_centers_ = self._to_user(final, centre, half, active)
        self.labels_ = rows.labels(final)
        return self

    @staticmethod
    def _to_user(C, centre, half, active):
        out = np.tile(centre, (C.shape[0], 1))
        out[:, active] += C * half[active]
        return out

    def _release(self, stats, mech, rng):
        return stats if mech is None else mech.randomize(stats, random_state=rng)

    def _floor(self, mech, mu):
        return 0.0 if mech is None else math.sqrt(mech.variance) / mu

    def _coreset_start(self, rows, scale, depth, mu, mech, rng):
        from skdp._trees import random_structure

        d, k = scale.size, self.n_clusters
        if d == 0:
            return np.zeros((k, 0))
        box = np.ones(d)
        feature, threshold = random_structure(-box, box, depth, rng)
        m = 2**depth
        stats = rows.tree_statistics(feature, threshold, m, mu)
        noisy = self._release(stats, mech, rng)
        counts = noisy[:m] / mu
        keep = counts > max(self._floor(mech, mu), 0.0)
        points = np.clip(noisy[m:].reshape(m, d)[keep] / counts[keep, None], -1, 1)
        if np.unique(points, axis=0).shape[0] < k:
            return packed_centres(k, d, rng)
        return _weighted_kmeans(points * scale, counts[keep], k, rng) / scale

    def _lloyd(self, rows, centres, T, mu, mech, rng):
        floor = self._floor(mech, mu)
        for it in range(T):
            stats, changed = rows.lloyd_statistics(centres, mu, mech is None)
            if changed == 0:
                return centres, it  # no row changed cluster (epsilon=inf only)
            centres = _update(self._release(stats, mech, rng), centres, mu, floor)
        return centres, T

    def _distances(self, X):
        check_is_fitted(self, "privacy_spent_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        C = self.cluster_centers_
        sq = (
            np.einsum("ij,ij->i", X, X)[:, None]
            - 2.0 * X @ C.T
            + np.einsum("ij,ij->i", C, C)[None, :]
        )
        return np.maximum(sq, 0.0)

    def predict(self, X):
        """Index of the nearest released centre of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of int, shape (n_samples,)
        """
        return np.argmin(self._distances(X), axis=1)

    def transform(self, X):
        """Euclidean distance of each row to each released centre.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_clusters)
        """
        return np.sqrt(self._distances(X))

    def score(self, X, y=None):
        """Minus the sum of squared distances of the rows to their nearest centre.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        float
        """
        return -float(np.sum(np.min(self._distances(X), axis=1)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
