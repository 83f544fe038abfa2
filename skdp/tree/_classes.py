"""PrivateDecisionTreeClassifier: a random tree with private leaf counts."""

import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from skdp._trees import (
    MAX_DEPTH,
    TREE_LEAF_SIGNAL,
    apply_tree,
    auto_depth,
    leaf_class_counts,
    leaf_proba,
    pooled_prior,
    random_structure,
    release_leaf_counts,
    validated_fit_inputs,
)
from skdp._trees_dask import dask_leaf_counts, dask_tree_inputs
from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
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

__all__ = ["PrivateDecisionTreeClassifier"]

TREE_CONSTRAINTS = {
    "epsilon": [
        Interval(numbers.Real, 0, None, closed="neither"),
        Options(numbers.Real, {np.inf}),
    ],
    "bounds_X": [BOUNDS, None],
    "classes": ["array-like", None],
    "max_depth": [Interval(numbers.Integral, 1, MAX_DEPTH, closed="both"), None],
    "random_state": RANDOM_STATE,
}


class PrivateDecisionTreeClassifier(
    ClassifierMixin, BudgetTrackingMixin, BaseEstimator
):
    """A random decision tree whose leaves hold differentially private class counts.

    The structure reads no data: each internal node splits on a feature drawn
    uniformly (among those of non-zero declared width) at a threshold drawn
    uniformly inside the node's cell of the declared box. The data enter
    through **one** release: the table of counts of the training rows per
    (leaf, class), with discrete Laplace noise. Probabilities are the
    normalised released counts of a row's leaf (post-processing). The tree of
    :class:`~skdp.ensemble.PrivateRandomForestClassifier` (diffprivlib's
    ``DecisionTreeClassifier``); a forest predicts better.

    Parameters
    ----------
    epsilon : float, default=1.0
        In (0, inf]. ``np.inf``: exact counts (the same random structure).
    bounds_X : tuple (lower, upper), list of pairs, dict or None, default=None
        The declared range of each feature: the box the thresholds are drawn
        in; data outside are clipped to it inside ``fit``. Any form of
        :func:`~skdp.utils.check_bounds`. None: taken from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning` (not private).
    classes : array-like of shape (n_classes,) or None, default=None
        The labels. Declare them: which labels occur is data (None infers
        them with a :class:`~skdp.exceptions.PrivacyLeakWarning`).
    max_depth : int or None, default=None
        Depth of the (complete) tree, at most 20. None: from ``n`` and
        ``epsilon`` (:func:`skdp._trees.auto_depth` with one tree: public).
    random_state : None, int, RandomState or Generator, default=None
        Seeds the structure and the noise only under skdp's reproducible-noise
        opt-in (``skdp.set_config(reproducible_noise=True)``); by default they
        come from fresh OS entropy whatever this says (see
        :doc:`/user_guide/noise_and_seeds`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    max_depth_ : int
        The depth used.
    feature_ : ndarray of int, shape (2^max_depth_ - 1,)
        Split feature of each internal node (heap order: the children of node
        ``i`` are ``2 i + 1``, left, and ``2 i + 2``, right).
    threshold_ : ndarray of shape (2^max_depth_ - 1,)
        Split threshold of each internal node: a row goes right when its
        feature is above it.
    leaf_counts_ : ndarray of int, shape (2^max_depth_, n_classes)
        The released counts (may be negative; leaves left to right).
    class_prior_ : ndarray of shape (n_classes,)
        The class frequencies of the released table (summed over the leaves,
        negative totals set to 0): the prior of the leaves' probabilities.
    bounds_ : tuple of ndarray
        The ranges used (declared or inferred).
    privacy_spent_ : PrivacyBudget
        ``(epsilon, 0)``, recorded in any active
        :func:`~skdp.accounting.track_budget`.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

    Notes
    -----
    **Release and sensitivity.** The structure is drawn before the data are
    read and does not depend on them, so each row falls in exactly one leaf
    whatever the others are. Replace-one neighbours (``n`` public): the
    replaced row leaves one (leaf, class) cell (-1) and its replacement
    enters one (+1): the count table has L1 sensitivity 2
    (:func:`skdp._trees.leaf_sensitivity`; checked by brute force in the
    tests). Discrete Laplace noise ``P(k) ∝ exp(-epsilon |k| / 2)`` on every
    cell (empty leaves too) makes the table epsilon-DP with integer outputs.
    diffprivlib labels each leaf with permute-and-flip on its counts at
    sensitivity 1 with the monotonic rule, which holds for add/remove
    neighbours; under replace-one it is ``2 epsilon``.

    **Depth.** ``2^-D n`` rows per leaf against the count noise's standard
    deviation ``2 sqrt(2) / epsilon``: the deepest ``D`` with ``n 2^-D >= c
    2 sqrt(2) / epsilon`` (``c = 1``, chosen on the tuning family: see
    ``skdp._trees.TREE_LEAF_SIGNAL``; a forest's trees use 0.5).

    **Dask input** (``fit`` only). After a validation pass over every block
    (before the spend), the structure is drawn, then each block's rows are
    counted per (leaf, class) on its worker and the tables summed there; the
    counts are integers, so the table is the in-memory one exactly, and the
    draws (structure, then noise) are the in-memory fit's: with the same
    ``random_state`` under the reproducible-noise opt-in the fitted tree is
    the in-memory one bit for bit.

    **Post-processing.** ``predict_proba`` is the leaf's released counts
    (negative values set to 0) shrunk towards ``class_prior_``: ``(c + a
    pi) / (N + a)`` with ``a`` half the standard deviation of one count's
    noise (``skdp._trees.leaf_proba``), so that a leaf holding only noise
    predicts about the prior, not a coin flip.

    References
    ----------
    Fan, Wang, Yu & Ma (2003). Is random model better? On its accuracy and
    efficiency. ICDM.
    Jagannathan, Pillaipakkamnatt & Wright (2009). A practical differentially
    private random decision tree classifier. ICDM Workshops.
    Fletcher & Islam (2019). Decision tree classification with differential
    privacy: a survey. ACM Computing Surveys.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.tree import PrivateDecisionTreeClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, (5000, 2))
    >>> y = (X[:, 0] > 0.5).astype(int)
    >>> clf = PrivateDecisionTreeClassifier(
    ...     epsilon=1.0, bounds_X=(0, 1), classes=[0, 1]
    ... ).fit(X, y)
    >>> clf.privacy_spent_
    PrivacyBudget(epsilon=1.0, delta=0.0)
    >>> clf.leaf_counts_.shape == (2**clf.max_depth_, 2)
    True
    """

    _parameter_constraints = dict(TREE_CONSTRAINTS)

    def __init__(
        self, *, epsilon=1.0, bounds_X=None, classes=None, max_depth=None,
        random_state=None,
    ):  # fmt: skip
        self.epsilon = epsilon
        self.bounds_X = bounds_X
        self.classes = classes
        self.max_depth = max_depth
        self.random_state = random_state

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Draw the structure and release the leaf counts: spends ``epsilon``.

        **Dask input.** A dask array/dataframe ``X`` with a dask array/series
        ``y`` never comes to this process (see Notes): one pass on the workers
        checks every block (NaN, infinity, labels outside ``classes``: it
        fails before anything is spent or drawn), a second counts each
        block's rows per (leaf, class) there; only the summed table comes
        back. ``bounds_X`` and ``classes`` must be declared.

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
        depth = self.max_depth or auto_depth(
            n, self.epsilon, leaf_signal=TREE_LEAF_SIGNAL
        )
        # validated: record the spend (a refused spend draws nothing), then draw
        self.privacy_spent_ = record_spend(
            PrivacyBudget(float(self.epsilon), 0.0),
            type(self).__name__,
            mechanism=None if math.isinf(self.epsilon) else "laplace",
        )
        rng = noise_generator(self.random_state)
        structure = random_structure(lower, upper, depth, rng)  # reads no data
        if on_dask:
            (counts,) = dask_leaf_counts(
                rows, None, [structure], lower, upper, classes.size
            )
        else:
            leaves = apply_tree(np.clip(X, lower, upper), *structure)
            counts = leaf_class_counts(leaves, codes, 2**depth, classes.size)
        self.feature_, self.threshold_ = structure
        self.leaf_counts_ = release_leaf_counts(counts, self.epsilon, rng)
        self.class_prior_ = pooled_prior([self.leaf_counts_])
        self.classes_, self.n_classes_ = classes, classes.size
        self.max_depth_, self.bounds_ = depth, (lower, upper)
        return self

    def apply(self, X):
        """Index of the leaf of each row (``0 .. 2^max_depth_ - 1``, left to right).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of int, shape (n_samples,)
        """
        check_is_fitted(self, "privacy_spent_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return apply_tree(X, self.feature_, self.threshold_)

    def predict_proba(self, X):
        """Class probabilities: the row's leaf's released counts, shrunk to the prior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        leaves = self.apply(X)
        return leaf_proba(self.leaf_counts_[leaves], self.class_prior_, self.epsilon)

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

    def get_depth(self):
        """The depth of the tree (``max_depth_``)."""
        check_is_fitted(self, "privacy_spent_")
        return self.max_depth_

    def get_n_leaves(self):
        """The number of leaves, ``2^max_depth_``."""
        return 2 ** self.get_depth()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.input_tags.allow_nan = False
        return tags
