"""PrivateRandomForestClassifier: random trees on disjoint rows, private leaf counts."""

import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from skdp._trees import (
    MAX_DEPTH,
    apply_tree,
    auto_depth,
    fit_random_tree,
    leaf_frequencies,
    pooled_prior,
    random_structure,
    release_leaf_counts,
    validated_fit_inputs,
)
from skdp._trees_dask import dask_leaf_counts, dask_parts, dask_tree_inputs
from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.tree import PrivateDecisionTreeClassifier
from skdp.utils import noise_generator
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.dask_rows import is_dask_collection
from skdp.utils.sklearn_compat import (
    BOUNDS,
    RANDOM_STATE,
    Interval,
    Options,
    fit_context,
    validate_data,
)

__all__ = ["PrivateRandomForestClassifier"]


class PrivateRandomForestClassifier(
    ClassifierMixin, BudgetTrackingMixin, BaseEstimator
):
    """Random trees on disjoint parts of the rows, leaves labelled by private counts.

    The private counterpart of diffprivlib's ``RandomForestClassifier``
    (after Fletcher & Islam): the rows are split at random into
    ``n_estimators`` parts of (nearly) equal size, one per tree; each tree is
    a :class:`~skdp.tree.PrivateDecisionTreeClassifier` of its part (a
    structure that reads no data, then one release of its (leaf, class)
    counts at the full ``epsilon``). A row's probabilities are the average
    over the trees of its leaf's released class frequencies
    (post-processing).

    Parameters
    ----------
    n_estimators : int, default=10
        The number of trees (and of parts of the rows).
    epsilon : float, default=1.0
        In (0, inf]; every tree releases at ``epsilon`` on its own rows.
        ``np.inf``: exact counts.
    bounds_X : tuple (lower, upper), list of pairs, dict or None, default=None
        The declared range of each feature: the box the thresholds are drawn
        in; data outside are clipped to it inside ``fit``. Any form of
        :func:`~skdp.utils.check_bounds`. None: taken from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning` (not private).
    classes : array-like of shape (n_classes,) or None, default=None
        The labels. Declare them: which labels occur is data (None infers
        them with a :class:`~skdp.exceptions.PrivacyLeakWarning`).
    max_depth : int or None, default=None
        Depth of every tree, at most 20. None: from ``n``, ``epsilon`` and
        ``n_estimators`` (public; see Notes).
    random_state : None, int, RandomState or Generator, default=None
        Seeds the parts, the structures and the noise only under skdp's
        reproducible-noise opt-in (``skdp.set_config(reproducible_noise=True)``);
        by default they come from fresh OS entropy whatever this says (see
        :doc:`/user_guide/noise_and_seeds`).

    Attributes
    ----------
    estimators_ : list of PrivateDecisionTreeClassifier
        The fitted trees (each with its released ``leaf_counts_`` and its
        ``privacy_spent_`` on its own rows).
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    max_depth_ : int
        The depth used.
    class_prior_ : ndarray of shape (n_classes,)
        The class frequencies of all released tables (negative totals set to
        0): the vote of a leaf with no positive count.
    bounds_ : tuple of ndarray
        The ranges used (declared or inferred).
    privacy_spent_ : PrivacyBudget
        ``(epsilon, 0)`` for the whole forest, recorded once in any active
        :func:`~skdp.accounting.track_budget`.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

    Notes
    -----
    **Privacy (parallel composition).** The parts are a random permutation
    of the row positions cut into ``T = n_estimators`` blocks, drawn without
    looking at the data; the structures too. Under replace-one neighbours
    (``n`` public) the replaced row is in exactly one part, so only that
    tree's count table changes, by at most 2 in L1 (see
    :class:`~skdp.tree.PrivateDecisionTreeClassifier`): each table is
    epsilon-DP in its own rows and the forest is epsilon-DP. Giving all trees
    all rows would cost ``T epsilon`` (or ``epsilon / T`` per tree): with
    Laplace noise the forest's summed evidence then has the same
    signal-to-noise ratio as with disjoint parts (``T`` times the counts,
    ``T`` times the noise scale, over ``T`` trees), so the parts lose nothing
    and keep one release per row.

    **Dask input** (``fit`` only). The parts cannot be one permutation of
    all rows without bringing ``n`` indices to one place, so each block of
    rows draws its own: block ``b`` gets the generator
    ``SeedSequence(s, spawn_key=(o_b,))`` (``s`` two 63-bit words drawn from the
    noise generator after the spend, ``o_b`` the position of the block's
    first row: public), and its rows get the tree labels ``position mod T``
    in an order drawn from that stream. The parts have exactly the in-memory
    sizes (those of ``np.array_split``) and depend on the seed and the block
    layout only, never on the data, so parallel composition holds as above;
    but a part is no longer a uniformly random subset of the rows (every
    block sends ``1/T`` of its rows to every tree) and the parts differ from
    the in-memory ones (and change when the data are chunked differently).
    The draws come in another order too (the parts' seed, the ``T``
    structures, then the ``T`` noise tables), so a dask fit equals an
    in-memory fit only given the same parts: the count tables are integers,
    summed over the blocks exactly.

    **Depth.** The forest's vote at a point sums ``T`` leaves, each with
    count noise of standard deviation about ``2 sqrt(2) / epsilon``, against
    about ``n 2^-D`` rows in all: the deepest ``D`` with ``n 2^-D >= c sqrt(T)
    2 sqrt(2) / epsilon`` (``c = 0.5``; :func:`skdp._trees.auto_depth`).
    diffprivlib fixes ``max_depth=5``.

    **Vote** (post-processing). Tree ``t`` gives its leaf's class
    frequencies ``c_t / N_t`` (negative counts set to 0, ``N_t`` their total;
    ``pi = class_prior_`` when no count is positive:
    ``skdp._trees.leaf_frequencies``); ``predict_proba`` is the mean over the
    trees. A leaf that holds only noise votes in a random direction, which
    cancels over the trees. Two alternatives were measured and dropped:
    shrinking each leaf towards ``pi`` (as the single tree does) moves every
    tree the same way, towards the majority class, and the mean does not
    average that away (held-out breast cancer, epsilon 0.5: accuracy 0.73
    shrunk, 0.78 not; equal within 0.002 on the tuning family); summing the
    counts over the trees lets the large, coarse leaves outvote the fine ones
    (1-3 points lower on Adult).
    diffprivlib gives each tree one vote for its leaf's permute-and-flip
    label (calibrated for add/remove neighbours: ``2 epsilon`` under
    replace-one).

    References
    ----------
    Fletcher & Islam (2017). Differentially private random decision forests
    using smooth sensitivity. Expert Systems with Applications.
    Jagannathan, Pillaipakkamnatt & Wright (2009). A practical differentially
    private random decision tree classifier. ICDM Workshops.
    McSherry (2009). Privacy integrated queries (parallel composition). SIGMOD.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.ensemble import PrivateRandomForestClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, (20_000, 2))
    >>> y = (X[:, 0] + X[:, 1] > 1).astype(int)
    >>> clf = PrivateRandomForestClassifier(
    ...     epsilon=1.0, bounds_X=(0, 1), classes=[0, 1]
    ... ).fit(X, y)
    >>> clf.privacy_spent_
    PrivacyBudget(epsilon=1.0, delta=0.0)
    >>> bool(clf.score(X, y) > 0.8)
    True
    """

    _parameter_constraints = {
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "epsilon": [
            Interval(numbers.Real, 0, None, closed="neither"),
            Options(numbers.Real, {np.inf}),
        ],
        "bounds_X": [BOUNDS, None],
        "classes": ["array-like", None],
        "max_depth": [Interval(numbers.Integral, 1, MAX_DEPTH, closed="both"), None],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self, n_estimators=10, *, epsilon=1.0, bounds_X=None, classes=None,
        max_depth=None, random_state=None,
    ):  # fmt: skip
        self.n_estimators = n_estimators
        self.epsilon = epsilon
        self.bounds_X = bounds_X
        self.classes = classes
        self.max_depth = max_depth
        self.random_state = random_state

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Draw the parts and structures, release every tree's leaf counts.

        Spends ``epsilon`` (parallel composition over the parts).

        **Dask input.** A dask array/dataframe ``X`` with a dask array/series
        ``y`` never comes to this process: one pass on the workers checks
        every block (NaN, infinity, labels outside ``classes``: it fails
        before anything is spent or drawn), a second counts each block's rows
        per (tree, leaf, class) there, each row in the tree of a data-free
        draw made per block (see Notes); only the summed tables come back.
        ``bounds_X`` and ``classes`` must be declared.

        Parameters
        ----------
        X : array-like or dask array/dataframe of shape (n_samples, n_features)
        y : array-like or dask array/series of shape (n_samples,)

        Returns
        -------
        self
        """
        on_dask = is_dask_collection(X) or is_dask_collection(y)
        if on_dask:  # a full validation pass on the workers (nothing drawn yet)
            rows, n, classes, lower, upper = dask_tree_inputs(self, X, y)
        else:
            X, codes, classes, lower, upper = validated_fit_inputs(self, X, y)
            n = X.shape[0]
        T = self.n_estimators
        depth = self.max_depth or auto_depth(n, self.epsilon, T)
        # validated: record the spend (a refused spend draws nothing), then draw
        spend = PrivacyBudget(float(self.epsilon), 0.0)
        self.privacy_spent_ = record_spend(
            spend,
            type(self).__name__,
            mechanism=None if math.isinf(self.epsilon) else "laplace",
        )
        rng = noise_generator(self.random_state)
        if on_dask:
            fitted = self._dask_trees(rows, classes, lower, upper, depth, rng)
        else:
            X = np.clip(X, lower, upper)
            fitted = [
                fit_random_tree(
                    X[part],
                    codes[part],
                    lower,
                    upper,
                    depth,
                    classes.size,
                    self.epsilon,
                    rng,
                )  # fmt: skip
                for part in np.array_split(rng.permutation(n), T)
            ]
        trees = []
        for feature, threshold, counts in fitted:
            tree = PrivateDecisionTreeClassifier(
                epsilon=self.epsilon,
                bounds_X=self.bounds_X,
                classes=self.classes,
                max_depth=depth,
            )
            tree.feature_, tree.threshold_, tree.leaf_counts_ = (
                feature, threshold, counts,
            )  # fmt: skip
            tree.classes_, tree.n_classes_ = classes, classes.size
            tree.max_depth_, tree.bounds_ = depth, (lower, upper)
            tree.n_features_in_ = self.n_features_in_
            if hasattr(self, "feature_names_in_"):
                tree.feature_names_in_ = self.feature_names_in_
            tree.privacy_spent_ = spend
            tree.class_prior_ = pooled_prior([tree.leaf_counts_])
            trees.append(tree)
        self.estimators_ = trees
        self.class_prior_ = pooled_prior([t.leaf_counts_ for t in trees])
        self.classes_, self.n_classes_ = classes, classes.size
        self.max_depth_, self.bounds_ = depth, (lower, upper)
        return self

    def _dask_trees(self, rows, classes, lower, upper, depth, rng):
        """``(feature, threshold, released counts)`` of every tree, the rows
        (validated dask ``[X | code]``) counted on the workers in one pass.

        Draws, in this order: the seed of the parts (two 63-bit words), the ``T``
        structures, then the ``T`` noise tables (tree order)."""
        T = self.n_estimators
        entropy = [int(v) for v in rng.integers(0, 2**63, size=2)]
        parts = dask_parts(rows.chunks[0], entropy, T) if T > 1 else None
        structures = [random_structure(lower, upper, depth, rng) for _ in range(T)]
        tables = dask_leaf_counts(rows, parts, structures, lower, upper, classes.size)
        return [
            (feature, threshold, release_leaf_counts(table, self.epsilon, rng))
            for (feature, threshold), table in zip(structures, tables, strict=True)
        ]

    def predict_proba(self, X):
        """Class probabilities: the mean of the trees' leaf frequencies.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self, "privacy_spent_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        total = np.zeros((X.shape[0], self.n_classes_))
        for tree in self.estimators_:
            counts = tree.leaf_counts_[apply_tree(X, tree.feature_, tree.threshold_)]
            total += leaf_frequencies(counts, self.class_prior_)
        return total / len(self.estimators_)

    def predict(self, X):
        """The class of largest probability.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.input_tags.allow_nan = False
        return tags
