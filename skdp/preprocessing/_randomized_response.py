"""k-ary randomized response for categorical features and labels."""

import numbers
import operator

import numpy as np
from sklearn.base import (
    BaseEstimator,
    OneToOneFeatureMixin,
    TransformerMixin,
)
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
)

from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.mechanisms import RandomizedResponseMechanism
from skdp.preprocessing._categorical import (
    CategoryCodec,
    as_output_labels,
    check_declared_categories,
    check_encodable,
    check_labels,
    check_no_missing,
    column_values,
    is_dataframe,
    is_real_scalar,
    map_chunks,
    unique_values,
)
from skdp.utils import check_epsilon, noise_generator
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.privacy_warnings import warn_privacy_leak
from skdp.utils.sklearn_compat import (
    RANDOM_STATE,
    Interval,
    StrOptions,
    fit_context,
    validate_data,
    wrap_transform_output,
)


def make_rr_mechanism(epsilon, n_categories):
    """The mechanism for one column (None for a single category: nothing to hide)."""
    if n_categories < 2:
        return None
    return RandomizedResponseMechanism(epsilon, n_categories)


def randomize_values(values, codec, mechanism, rng, name, out=None):
    """Encode, randomize and decode ``values`` block by block (cache friendly)."""

    def release(block):
        codes = codec.encode(block, name)
        if mechanism is not None:
            codes = mechanism.randomize(codes, random_state=rng)
        return codec.decode(codes, values.dtype)

    def release_codes(block):
        # integer codes 0..C-1 already: the mechanism range-checks them itself
        try:
            return mechanism.randomize(block, random_state=rng)
        except ValueError:
            codec.encode(block, name)  # raises the error naming the bad values
            raise

    fast = mechanism is not None and codec.identity and values.dtype.kind in "iu"
    return map_chunks(values, release_codes if fast else release, out=out)


def released_codes(codec, released, n_classes):
    """Class codes of released labels, in the smallest unsigned dtype."""
    codes = codec.encode(np.asarray(released), "released labels")
    return codes.astype(np.min_scalar_type(n_classes - 1), copy=False)


def _randomizes_features(estimator):
    """``transform`` exists only when feature columns are configured."""
    return estimator.columns is not None


class RandomizedResponse(
    OneToOneFeatureMixin,
    TransformerMixin,
    BudgetTrackingMixin,
    BaseEstimator,
    # transform is conditional (see below); sklearn's automatic set_output wrapper
    # would make it unconditional, so set_output and the wrapping are done by hand
    auto_wrap_output_keys=None,
):
    r"""k-ary randomized response on categorical columns and labels.

    Each selected value is kept with probability ``e^eps / (C - 1 + e^eps)`` and
    otherwise replaced by one of the other ``C - 1`` categories of its column,
    uniformly. Two roles, chosen by ``columns``:

    - label sampler (``columns=None``, the default): ``fit_resample(X, y)``
      returns ``(X, y_private)``; there is no ``transform``, so the object is a
      pure sampler for :class:`imblearn.pipeline.Pipeline` (which rejects steps
      having both) and for :class:`~skdp.preprocessing.PrivateLabelClassifier`;
    - feature transformer (``columns="all"`` or a list): ``transform`` releases
      the selected columns with fresh noise on each call; ``fit_resample``
      releases those columns and the labels in one step.

    Parameters
    ----------
    epsilon : float, list of float or dict, default=1.0
        Privacy parameter of each randomized column, in (0, inf]. A scalar applies
        to every randomized column (and to the labels in ``fit_resample``); a list
        gives one value per entry of ``columns``; a dict maps each randomized column
        (name or position) to its value and must name exactly those columns.
        ``inf`` releases the data unchanged.
    columns : None, "all" or list of int or str, default=None
        Feature columns to randomize (positions, or names for a DataFrame); the
        others pass through unchanged. ``None``: no feature column (label
        sampler, no ``transform``); ``"all"``: every column.
    categories : "auto", list of array-like or dict, default="auto"
        Domain of each randomized column. Declared categories are used as given
        (their order defines the codes of ``P_``). ``"auto"``, or columns missing
        from a dict, take the values present in the data at fit time and emit a
        :class:`~skdp.exceptions.PrivacyLeakWarning`: the set of values present is
        then released without noise.
    label_epsilon : float or None, default=None
        Privacy parameter for the labels in ``fit_resample``; ``None`` uses
        ``epsilon`` (which must then be a scalar).
    classes : array-like or None, default=None
        Label domain for ``fit_resample``. ``None`` infers it from ``y`` with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of the noise.
        Seeds the noise only under the reproducible-noise opt-in
        (:func:`skdp.set_config`); by default, fresh OS entropy.
        Under the opt-in an int makes every call reproducible (the same noise
        for the same data) and a Generator is advanced by each call.

    Attributes
    ----------
    columns_ : ndarray of int
        Positions of the randomized columns.
    categories_ : list of ndarray
        Domain of each randomized column (aligned with ``columns_``).
    epsilons_ : ndarray of float
        Privacy parameter of each randomized column.
    mechanisms_ : list of RandomizedResponseMechanism or None
        One per randomized column (None for a column with a single category).
    P_ : list of ndarray of shape (C_j, C_j)
        Distortion matrix of each randomized column: ``P_[j][u, v]`` is the
        probability of reporting category ``v`` when the truth is ``u`` (codes are
        positions in ``categories_[j]``). Needed by frequency estimation, forward
        loss correction and :mod:`skdp.inspection`.
    classes_ : ndarray
        Label domain (after ``fit_resample``).
    label_epsilon_ : float
        Privacy parameter used for the labels (after ``fit_resample``).
    label_mechanism_ : RandomizedResponseMechanism
        Label mechanism (after ``fit_resample``).
    label_matrix_ : ndarray of shape (n_classes, n_classes)
        Distortion matrix of the labels, ordered as ``classes_``; the ``T`` of
        forward loss correction (Patrini et al. 2017).
    label_likelihood_ : ndarray of shape (n_samples, n_classes)
        ``label_matrix_[:, y_private_i]`` for each row released by the last
        ``fit_resample``: P(released label of row i | true class k), the
        per-row form of forward loss correction (computed on access).
    privacy_spent_ : PrivacyBudget
        Guarantee of one released output: the sum of the epsilons of every
        randomized column (plus ``label_epsilon_`` after ``fit_resample``; 0
        after ``fit`` of a label sampler, which releases nothing).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.

    Notes
    -----
    For a value :math:`u` and any report :math:`v`,
    :math:`P[v \mid u] / P[v \mid u'] \le p_{\text{keep}} / p_{\text{change}} =
    e^{\varepsilon}`, so each randomized value is :math:`\varepsilon`-locally
    differentially private
    (Warner 1965; Kairouz, Oh & Viswanath 2016 for the k-ary matrix). A record
    changes in all its randomized attributes at once (replace-one neighbours), and
    the attributes are randomized independently, so the record's guarantee is the
    sum of its columns' epsilons (basic composition, tight for independent RR);
    this sum is ``privacy_spent_``. The same bound holds in the central model for
    the whole released table, because every record is randomized independently.
    Label-only use (``fit_resample`` with ``columns=None``) gives label
    differential privacy (Chaudhuri & Hsu 2011; Ghazi et al. 2021): the features
    are treated as public.

    Each ``transform`` or ``fit_resample`` call is a new release and is recorded
    with :func:`~skdp.accounting.record_spend`; ``fit`` releases nothing (apart
    from inferred categories, see above). Values outside the declared (or fitted)
    categories raise ``ValueError`` at transform time: randomized response cannot
    report a value outside its domain, and silently passing it through would
    reveal it.

    Frequencies: with :math:`\lambda` the observed report frequencies,
    :math:`\mathbb{E}[\lambda] = P^\top \pi`, so
    :math:`\hat\pi = (\lambda - q) / (p - q)` is unbiased
    (:meth:`estimate_frequencies`); the projected estimate is its Euclidean
    projection onto the simplex.

    References
    ----------
    S. L. Warner, "Randomized response: a survey technique for eliminating evasive
    answer bias", JASA 1965. P. Kairouz, S. Oh, P. Viswanath, "Extremal mechanisms
    for local differential privacy", JMLR 2016. G. Patrini et al., "Making deep
    neural networks robust to label noise: a loss correction approach", CVPR 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import RandomizedResponse
    >>> X = np.array([["a", 0], ["b", 1], ["a", 1]], dtype=object)
    >>> rr = RandomizedResponse(
    ...     epsilon=2.0, columns=[0], categories=[["a", "b"]], random_state=0
    ... )
    >>> rr.fit_transform(X).shape
    (3, 2)
    >>> rr.P_[0].round(3)
    array([[0.881, 0.119],
           [0.119, 0.881]])
    >>> y = np.array([0, 1, 1])
    >>> rr_labels = RandomizedResponse(epsilon=1.0, classes=[0, 1], random_state=0)
    >>> X_out, y_private = rr_labels.fit_resample(X, y)
    >>> X_out is X, rr_labels.privacy_spent_.epsilon
    (True, 1.0)
    """

    # the noise description fit_resample always sets (PrivateLabelClassifier
    # checks before the release that its learner will get one)
    _noise_description = ("label_matrix_", "label_likelihood_")

    _parameter_constraints: dict = {
        "epsilon": [Interval(numbers.Real, 0, np.inf, closed="right"), list, dict],
        "columns": [None, StrOptions({"all"}), "array-like"],
        "categories": [StrOptions({"auto"}), list, dict],
        "label_epsilon": [None, Interval(numbers.Real, 0, np.inf, closed="right")],
        "classes": [None, "array-like"],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        columns=None,
        categories="auto",
        label_epsilon=None,
        classes=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.columns = columns
        self.categories = categories
        self.label_epsilon = label_epsilon
        self.classes = classes
        self.random_state = random_state

    # ------------------------------------------------------------------ fitting
    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the domain and distortion matrix of every randomized column.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        X = self._validate_X(X, reset=True)
        self._fit_columns(X)
        self.privacy_spent_ = PrivacyBudget(float(np.sum(self.epsilons_)))
        return self

    @available_if(_randomizes_features)
    def fit_transform(self, X, y=None):
        """``fit(X).transform(X)``: one release of the randomized columns."""
        return self.fit(X, y).transform(X)

    @available_if(_randomizes_features)
    def transform(self, X):
        """Release the randomized columns (fresh noise unless ``random_state`` is int).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        X_private : ndarray or DataFrame of the same shape and dtypes
        """
        check_is_fitted(self, "columns_")
        X = self._validate_X(X, reset=False)
        self._check_columns(X)
        # validated, then the spend is recorded (and a cap enforced), then drawn
        record_spend(
            PrivacyBudget(float(np.sum(self.epsilons_))),
            f"{type(self).__name__}.transform",
            mechanism=self.mechanisms_,
        )
        rng = noise_generator(self.random_state)
        out = self._randomize_columns(X, rng)
        return wrap_transform_output(self, out, X)

    def set_output(self, *, transform=None):
        """Set the container of ``transform`` and ``fit_transform`` outputs.

        Without a call (or with ``"default"``) a DataFrame input gives a DataFrame
        and an array gives an array; scikit-learn's global
        ``set_config(transform_output=...)`` applies when this is not set.

        Parameters
        ----------
        transform : {"default", "pandas", "polars"} or None, default=None
            ``"pandas"`` or ``"polars"``: a DataFrame of that library with the
            input's column names (``x0, x1, ...`` for an array). ``None``: leave
            the configuration unchanged.

        Returns
        -------
        self : RandomizedResponse
        """
        if transform is None:
            return self
        if transform not in ("default", "pandas", "polars"):
            raise ValueError(
                "`transform` must be one of 'default', 'pandas', 'polars' or None, "
                f"got {transform!r}."
            )
        if not hasattr(self, "_sklearn_output_config"):
            self._sklearn_output_config = {}
        self._sklearn_output_config["transform"] = transform
        return self

    @atomic_fit
    def fit_resample(self, X, y):
        """Randomize the labels (and the selected columns) in one release.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
            Returned unchanged (the same object) when ``columns`` is None.
        y : array-like of shape (n_samples,)

        Returns
        -------
        X_out : same type as X
        y_private : ndarray (or Series if ``y`` is one) of shape (n_samples,)
            Labels from ``classes_`` (dtype of ``classes_``, or of ``y`` when
            the labels are the integer codes 0..C-1).
        """
        self._validate_params()
        X_checked = self._validate_X(X, reset=True)
        y_values, self.classes_, codec = check_labels(y, self.classes)
        check_consistent_length(X_checked, y_values)
        self._fit_columns(X_checked)
        self.label_epsilon_ = self._label_epsilon()
        self.label_mechanism_ = RandomizedResponseMechanism(
            self.label_epsilon_, self.classes_.size
        )
        self.label_matrix_ = self.label_mechanism_.matrix
        self.privacy_spent_ = PrivacyBudget(
            float(np.sum(self.epsilons_)) + self.label_epsilon_
        )

        # the columns were checked against their categories by _fit_columns;
        # the labels are checked here, so the release cannot fail half way
        check_encodable(y_values, codec, "y")
        # validated, then the spend is recorded (and a cap enforced), then drawn
        record_spend(
            self.privacy_spent_,
            f"{type(self).__name__}.fit_resample",
            mechanism=[self.label_mechanism_, *self.mechanisms_],
        )
        rng = noise_generator(self.random_state)
        X_out = self._randomize_columns(X_checked, rng) if self.columns_.size else X
        y_new = randomize_values(y_values, codec, self.label_mechanism_, rng, "y")
        self._released_codes = released_codes(codec, y_new, self.classes_.size)
        return X_out, as_output_labels(y, y_new)

    @property
    def label_likelihood_(self):
        """Per-row noise likelihoods of the last ``fit_resample``.

        ndarray of shape (n_samples, n_classes): entry [i, k] is
        P(released label of row i = the label it released | true class
        ``classes_[k]``), i.e. ``label_matrix_[:, code of y_private[i]]``
        (every row goes through the same mechanism). Computed on access from
        the released codes kept by ``fit_resample``.
        """
        check_is_fitted(self, "_released_codes")
        return self.label_matrix_[:, self._released_codes].T

    # ------------------------------------------------------------ estimation
    def estimate_frequencies(self, X=None, *, y=None, project=False):
        """Unbiased estimate of the true category frequencies from released data.

        Parameters
        ----------
        X : array-like or DataFrame, optional
            Released features (output of ``transform``).
        y : array-like, optional
            Released labels (output of ``fit_resample``).
        project : bool, default=False
            Project the raw estimate P^-1 lambda onto the probability simplex.

        Returns
        -------
        list of ndarray (one per randomized column, aligned with ``categories_``)
        for ``X``; ndarray aligned with ``classes_`` for ``y``.
        """
        check_is_fitted(self, "columns_")
        if (X is None) == (y is None):
            raise ValueError("Pass exactly one of X or y.")
        if y is not None:
            check_is_fitted(self, "label_mechanism_")
            y = np.asarray(y).ravel()
            codes = CategoryCodec(self.classes_).encode(y, "y")
            return self.label_mechanism_.estimate_frequencies(codes, project=project)
        X = self._validate_X(X, reset=False)
        estimates = []
        for j, pos in enumerate(self.columns_):
            codec = CategoryCodec(self.categories_[j])
            codes = codec.encode(column_values(X, pos), self._column_name(pos))
            mech = self.mechanisms_[j]
            if mech is None:
                estimates.append(np.ones(1))
            else:
                estimates.append(mech.estimate_frequencies(codes, project=project))
        return estimates

    # --------------------------------------------------------------- helpers
    def _validate_X(self, X, *, reset):
        if is_dataframe(X):
            # columns are read one by one; no copy of the whole frame
            validate_data(self, X, reset=reset, skip_check_array=True)
            return X
        if self.columns is None:
            # labels only: X is not read, any container the next step accepts
            return validate_data(
                self,
                X,
                reset=reset,
                accept_sparse=True,
                dtype=None,
                ensure_all_finite=False,
            )
        return validate_data(self, X, reset=reset, dtype=None, ensure_all_finite=False)

    def _column_name(self, pos):
        names = getattr(self, "feature_names_in_", None)
        return f"column {names[pos]!r}" if names is not None else f"column {pos}"

    def _resolve_key(self, key, param):
        """Position of a column given by position or name."""
        n = self.n_features_in_
        names = getattr(self, "feature_names_in_", None)
        if isinstance(key, str):
            if names is None or key not in set(names):
                raise ValueError(
                    f"{param} names column {key!r}, which is not a column of X"
                    + ("" if names is None else f" ({list(names)})")
                    + "."
                )
            return int(np.flatnonzero(names == key)[0])
        try:
            pos = operator.index(key)
        except TypeError:
            raise TypeError(
                f"{param} entries must be column positions or names, got {key!r}."
            ) from None
        if not -n <= pos < n:
            raise ValueError(f"{param} has position {pos}, but X has {n} columns.")
        return pos % n

    def _fit_columns(self, X):
        if self.columns is None:
            positions = []
        elif isinstance(self.columns, str) and self.columns == "all":
            positions = list(range(self.n_features_in_))
        else:
            keys = list(self.columns) if not isinstance(self.columns, str) else None
            if keys is None:
                raise TypeError("columns must be a list of positions or names.")
            positions = [self._resolve_key(k, "columns") for k in keys]
            if len(set(positions)) != len(positions):
                raise ValueError(f"columns lists a column twice: {self.columns!r}.")
        self.columns_ = np.asarray(positions, dtype=np.intp)
        self.epsilons_ = self._column_epsilons(positions)
        self.categories_ = self._column_categories(X, positions)
        self.mechanisms_ = [
            make_rr_mechanism(eps, cats.size)
            for eps, cats in zip(self.epsilons_, self.categories_)
        ]
        self.P_ = [
            np.ones((1, 1)) if mech is None else mech.matrix
            for mech in self.mechanisms_
        ]

    def _per_column(self, value, positions, param):
        """Expand a list/dict parameter to one entry per randomized position."""
        if isinstance(value, dict):
            resolved = {}
            for key, v in value.items():
                pos = self._resolve_key(key, param)
                if pos in resolved:
                    raise ValueError(f"{param} names column {key!r} twice.")
                resolved[pos] = v
            unknown = sorted(set(resolved) - set(positions))
            if unknown:
                raise ValueError(
                    f"{param} has keys for columns that are not randomized: "
                    f"{[self._column_name(p) for p in unknown]}; randomized columns "
                    f"are {[self._column_name(p) for p in positions]}."
                )
            return [resolved.get(pos) for pos in positions], resolved
        if len(value) != len(positions):
            hint = " (columns=None randomizes only the labels)" if not positions else ""
            raise ValueError(
                f"{param} has {len(value)} entries but {len(positions)} columns are "
                f"randomized{hint}; give one per entry of `columns`."
            )
        return list(value), None

    def _column_epsilons(self, positions):
        if is_real_scalar(self.epsilon):
            eps = check_epsilon(self.epsilon)
            return np.full(len(positions), eps, dtype=np.float64)
        values, resolved = self._per_column(self.epsilon, positions, "epsilon")
        if resolved is not None:
            missing = [p for p in positions if p not in resolved]
            if missing:
                raise ValueError(
                    "epsilon dict misses randomized columns "
                    f"{[self._column_name(p) for p in missing]}."
                )
        return np.array(
            [
                check_epsilon(v, name=f"epsilon for {self._column_name(p)}")
                for v, p in zip(values, positions)
            ],
            dtype=np.float64,
        )

    def _column_categories(self, X, positions):
        if isinstance(self.categories, str):
            declared = [None] * len(positions)
        else:
            declared, _ = self._per_column(self.categories, positions, "categories")
        out, inferred = [], []
        for pos, cats in zip(positions, declared):
            name = self._column_name(pos)
            values = column_values(X, pos)
            check_no_missing(values, f"X {name}")
            if cats is None:
                inferred.append(name)
                cats = unique_values(values, f"X {name}")
            else:
                cats = check_declared_categories(cats, f"categories for {name}")
                CategoryCodec(cats).encode(values, f"X {name}")  # covers the data?
            out.append(cats)
        if inferred:
            warn_privacy_leak(
                f"The categories of {', '.join(inferred)} were not declared, so they "
                "are taken from the data: the set of values present is released "
                "without noise and is not covered by the privacy guarantee. Declare "
                "`categories` to get the guarantee."
            )
        return out

    def _label_epsilon(self):
        if self.label_epsilon is not None:
            return check_epsilon(self.label_epsilon, name="label_epsilon")
        if not is_real_scalar(self.epsilon):
            raise ValueError(
                "epsilon is given per column, so the labels need their own "
                "`label_epsilon`."
            )
        return check_epsilon(self.epsilon)

    def _check_columns(self, X):
        """Every randomized column present and inside its categories (before
        the spend of a transform)."""
        for j, pos in enumerate(self.columns_):
            name = self._column_name(pos)
            values = column_values(X, pos)
            check_no_missing(values, f"X {name}")
            check_encodable(values, CategoryCodec(self.categories_[j]), f"X {name}")

    def _randomize_columns(self, X, rng):
        frame = is_dataframe(X)
        if frame:
            out = X.copy()
        else:
            # randomized columns are written in place; copy only the others
            out = np.empty_like(X)
            kept = np.setdiff1d(np.arange(X.shape[1]), self.columns_)
            out[:, kept] = X[:, kept]
        for j, pos in enumerate(self.columns_):
            name = self._column_name(pos)
            values = column_values(X, pos)
            check_no_missing(values, f"X {name}")
            codec = CategoryCodec(self.categories_[j])
            target = None if frame else out[:, pos]
            new = randomize_values(
                values, codec, self.mechanisms_[j], rng, f"X {name}", out=target
            )
            if frame:
                import pandas as pd

                try:
                    new = pd.Series(new, index=X.index, dtype=X.dtypes.iloc[pos])
                except (TypeError, ValueError):
                    new = pd.Series(new, index=X.index)
                out.isetitem(int(pos), new)
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.categorical = True
        if self.columns is None:
            # label sampler: X passes through unread, any content is accepted
            tags.input_tags.sparse = True
            tags.input_tags.allow_nan = True
            tags.input_tags.string = True
        return tags
