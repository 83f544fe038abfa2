"""PrivateLogisticRegression: the functional mechanism or objective perturbation,
chosen from public quantities."""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from skdp._fm.domain import DataDomain
from skdp._fm.estimator import atomic_fit
from skdp.accounting import BudgetTrackingMixin, on_behalf_of
from skdp.linear_model._fm_logistic import FMLogisticRegression
from skdp.linear_model._objective_perturbation import OPLogisticRegression
from skdp.linear_model._op_calibration import noise_to_signal
from skdp.linear_model._op_problem import op_domain, op_problem
from skdp.utils import check_bounds
from skdp.utils.sklearn_compat import StrOptions, fit_context, validate_data

__all__ = ["AUTO_THRESHOLD", "PrivateLogisticRegression", "noise_level"]

# OP iff its relative error proxy rho <= AUTO_THRESHOLD; read off the grid of
# benchmarks/_logistic_rule.py (every binary and multi-class real task at
# several n, synthetic tasks; see PrivateLogisticRegression's Notes).
AUTO_THRESHOLD = 40.0


def public_problem(
    n_samples,
    n_features,
    n_classes,
    epsilon,
    *,
    bounds_X=None,
    data_norm=None,
    max_nonzero=None,
    fit_intercept=True,
):
    """The :class:`~skdp.linear_model._op_calibration.OPProblem` of an OP fit,
    from public quantities only (the declared domain, ``n``, ``p``, ``C``,
    ``epsilon``): what :class:`OPLogisticRegression` would calibrate.

    Parameters as for :func:`noise_level` (at least one of ``bounds_X`` and
    ``data_norm``).
    """
    d = int(n_features)
    lower = upper = None
    if bounds_X is not None:
        lower, upper = check_bounds(bounds_X, d, name="bounds_X")
    if data_norm is not None:
        scaling = float(data_norm)
    elif lower is not None:
        scaling = float(np.max(np.maximum(np.abs(lower), np.abs(upper))))
    else:
        raise ValueError("noise_level needs bounds_X and/or data_norm.")
    declared = DataDomain(
        n_features=d,
        lower=lower,
        upper=upper,
        data_norm=data_norm,
        fit_intercept=bool(fit_intercept),
        intercept_scaling=scaling if scaling > 0 else 1.0,
        max_nonzero=max_nonzero,
    )
    return op_problem(op_domain(declared), n_samples, n_classes, epsilon)


def noise_level(
    n_samples,
    n_features,
    n_classes,
    epsilon,
    delta,
    *,
    bounds_X=None,
    data_norm=None,
    max_nonzero=None,
    fit_intercept=True,
):
    """OP's noise-to-signal ratio ``rho`` for a fit, from public quantities only.

    Parameters
    ----------
    n_samples, n_features, n_classes : int
    epsilon, delta : float
    bounds_X, data_norm, max_nonzero, fit_intercept :
        The declared domain, as for the estimators (at least one of
        ``bounds_X`` and ``data_norm``).

    Returns
    -------
    float
        ``rho = sqrt(E||b||^2) / (a W)`` (0 at ``epsilon=inf``): OP's noise
        on the coefficients relative to their guessed norm, at the ridge OP
        chooses (:func:`~skdp.linear_model._op_calibration.noise_to_signal`).

    Examples
    --------
    >>> from skdp.linear_model._private_logistic import noise_level
    >>> round(noise_level(30000, 47, 2, 1.0, 1e-9, bounds_X=(0, 1)), 2)
    0.04
    """
    problem = public_problem(
        n_samples,
        n_features,
        n_classes,
        epsilon,
        bounds_X=bounds_X,
        data_norm=data_norm,
        max_nonzero=max_nonzero,
        fit_intercept=fit_intercept,
    )
    return noise_to_signal(problem, float(epsilon), float(delta))


class PrivateLogisticRegression(ClassifierMixin, BudgetTrackingMixin, BaseEstimator):
    """Differentially private logistic regression: the better of FM and OP.

    One estimator for private logistic regression at any ``n`` and epsilon,
    the method chosen for you (how it compares, and where it is not first:
    the benchmark pages *private_logistic* and *defaults*).
    ``method="auto"`` fits objective perturbation
    (:class:`OPLogisticRegression`: the exact logistic loss, best once the
    noise is small against the signal, and on the measured grid better or
    tied in nearly every cell) or the functional mechanism
    (:class:`FMLogisticRegression`: a noisy quadratic surrogate with a
    noise-aware ridge, chosen where OP's noise swamps the signal), chosen from public
    quantities only: ``n``, the number of features and classes, ``epsilon``,
    ``delta`` and the declared domain (never the data's values; ``n`` is public
    under replace-one neighbours). ``method="fm"`` and ``method="op"`` fit one
    of them explicitly. ``delta=0`` is pure epsilon-DP (FM: Laplace; OP: K-norm
    noise); ``delta > 0`` uses the Gaussian variants (FM: analytic Gaussian;
    OP: its exact privacy profile). Two or more classes in one release.

    Parameters
    ----------
    epsilon : float, default=1.0
        In (0, inf].
    delta : float, default=0.0
        0: pure epsilon-DP. In (0, 1): (epsilon, delta)-DP; use at most
        ``1/n^2``.
    method : {"auto", "fm", "op"}, default="auto"
        ``"auto"``: OP iff its noise-to-signal ratio :func:`noise_level` is
        at most ``AUTO_THRESHOLD`` (see Notes), else FM.
    bounds_X : tuple (lower, upper), list of pairs, dict or None, default=None
        Per-feature box; data outside is clipped.
        One of: ``(lower, upper)`` (scalars or arrays of length n_features), a
        list of ``(lo, hi)`` pairs one per feature, or a dict ``{feature: (lo,
        hi)}`` naming every feature once, by column name (X a DataFrame) or by
        index (see :func:`~skdp.utils.check_bounds`).
    data_norm : float or None, default=None
        Bound on each row's L2 norm; rows are scaled down to it. With neither
        this nor ``bounds_X``, taken from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    max_nonzero : int or None, default=None
        At most this many non-zero features per row.
    fit_intercept : bool, default=True
    classes : array-like of shape (n_classes,) or None, default=None
        The labels. Declare them: which labels occur is data (None infers them
        with a :class:`~skdp.exceptions.PrivacyLeakWarning`), and declared
        classes make a fit on data where one of them is absent still succeed.
    random_state : None, int, RandomState or Generator, default=None
        Source of the noise (passed to the fitted estimator).
        Seeds the noise only under the reproducible-noise opt-in
        (:func:`skdp.set_config`); by default, fresh OS entropy.

    Attributes
    ----------
    method_ : {"fm", "op"}
        The method fitted.
    noise_level_ : float
        OP's noise-to-signal ratio ``rho`` for this fit (public).
    estimator_ : FMLogisticRegression or OPLogisticRegression
        The fitted estimator.
    classes_ : ndarray of shape (n_classes,)
    coef_, intercept_ :
        As in the fitted estimator: shapes (n_features,) and float for two
        classes, (n_classes, n_features) and (n_classes,) for more.
    privacy_spent_ : PrivacyBudget
        ``(epsilon, delta)`` (``delta`` 0 when pure): one release.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string column names.

    Notes
    -----
    **Guarantee.** Exactly the fitted estimator's: one release at
    ``(epsilon, delta)`` (see :class:`FMLogisticRegression` and
    :class:`OPLogisticRegression` for the derivations). The choice of method
    reads public quantities only, so it costs no privacy: under replace-one
    neighbours ``n`` is the same for both datasets, and the domain, classes
    and budget are declared.

    **The rule.** ``rho = sqrt(E||b||^2) / (a W)`` is OP's own data-free
    estimate of how much its noise moves the coefficients relative to their
    size (the noise ``b`` after the curvature ``a`` the domain allows, against
    the coefficient-norm guess ``W``, at the ridge OP chooses;
    :func:`noise_level`). ``method="auto"`` fits OP iff ``rho <=
    AUTO_THRESHOLD = 40``, else FM. The threshold minimizes the accuracy lost
    against the better of the two over a grid of 420 cells: every binary and
    multi-class task of ``benchmarks/_real_tasks.py`` at training sizes 250,
    1000, 4000 and the full split, five synthetic tasks (unit ball and unit box,
    2 to 6 classes), epsilon 0.5 to 10, pure and (epsilon, delta), 4 seeds
    (``benchmarks/_logistic_rule.py``; table in
    ``benchmarks/reference_results/full/private_logistic_rule.md``). With OP's
    data-free ridge OP was better or tied in nearly every cell, including
    small ``n epsilon``: its gradient noise must cover ``|sigma(x.theta) - y| <
    1`` at every ``theta`` (twice the FM's ``|1/2 - y|``), but it has no
    surrogate ceiling and noise on ``p`` numbers instead of ``~p^2 / 2``. FM's
    significant wins were few and not ordered by ``rho`` (Adult at n = 1000 to
    4000 with (epsilon, delta), weak-signal tasks at epsilon 5-10 where the
    Taylor surrogate happens to classify better), so no public quantity
    predicts them; in (epsilon, delta) mode always-OP was optimal, and in pure
    mode FM only helps where ``rho > 40`` (both near chance). The summed loss
    was 0.47 accuracy points over the 420 cells with the rule, 0.52 with OP
    always and 8.1 with FM always (accuracy as a fraction, summed over the
    cells: 0.0011 a cell with the rule).

    **Held-out check** (issue 34). The tasks above are the TUNING family of
    ``benchmarks/_task_families.py``. Re-derived on it alone
    (``benchmarks/_rederive_rules.py``: the binary tuning tasks at training
    sizes 175, 700 and the full split, epsilon 0.5-5, pure and (epsilon,
    delta), 168 cells), every threshold at or above the largest ``rho``
    seen (23) loses least (0.34 summed accuracy; 5 loses 0.52, 1 loses
    1.13); in (epsilon, delta) mode alone a threshold of 5 would lose 0.22
    instead of 0.26, a difference within the noise. So the threshold stays
    at 40. On the held-out EVALUATION family (CreditCard, k401ksubs,
    SwissLabor, Mroz, Pima, Wells, scikit-learn's breast cancer; epsilon
    0.5-5, pure and (epsilon, delta), 56 cells, 10 seeds;
    ``benchmarks/bench_defaults.py --full --kind binary``) the rule picks OP
    in every cell. Since OP draws the pure noise under ``delta > 0`` where it
    is the smaller (:class:`OPLogisticRegression`, **Noise under delta >
    0**), the default's accuracy in the 28 (epsilon, delta) cells rose by
    0.004 on average (up to 0.031, Pima at epsilon 5; at worst -0.006) and
    moved by at most 0.001 on the tuning family. The default is first or
    within 2 standard errors of the best of {FM, OP with its rule, OP with
    the smallest admissible ridge} in 48 of the 56 evaluation cells (55 of 56
    tuning; ``benchmarks/reference_results/full/defaults_binary.md``; the
    comparator "OP with the smallest admissible ridge" gained the same pure
    noise). It loses to FM on Pima (372 training rows, 7 features) with
    (epsilon, delta) at epsilon 1, 2 and 5 (0.672, 0.676, 0.729 against
    0.691, 0.713, 0.757), where ``rho`` does not tell these cells from the
    tuning cells of the same ``rho`` where OP wins; to FM on CreditCard at
    epsilon 2 with delta by 0.0025; and to OP with the smallest admissible
    ridge on breast cancer at epsilon 2 and CreditCard at epsilon 5 (both
    modes). Those last cells are a ridge no public rule finds: on the tuning
    tasks cut to 400 training rows the best ridge is 64-512 times the
    smallest admissible one (weak signal: shrink towards the majority
    class), on breast cancer, Pima and Mroz at the same ``n``, ``p`` and
    epsilon 4-16 times (strong signal); see :class:`OPLogisticRegression`,
    **Which tasks set the rule**. Learning the signal privately does not pay
    at these sizes: a pilot spending a tenth of epsilon on the norm of a
    ridge fit (``benchmarks/_op_pilot.py``) has a signal-to-noise ratio of
    1-3 at a few hundred rows; it closes most of the held-out gap
    (evaluation: 50 of 56 cells, mean shortfall 0.0024 against 0.0096) but
    loses 19 tuning cells (57 of 80 against 76), to the share's cost on the
    large tasks and to too small a ridge on small weak-signal ones.

    At ``epsilon=inf`` the rule picks OP (no noise: the exact logistic
    regression with a negligible ridge).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import train_test_split
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> from skdp.linear_model import PrivateLogisticRegression
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = PrivateLogisticRegression(epsilon=1.0, delta=1e-6, bounds_X=(0, 1),
    ...                                 classes=[0, 1], random_state=0)
    >>> clf.fit(MinMaxScaler().fit_transform(X), y).method_
    'op'
    >>> clf.privacy_spent_
    PrivacyBudget(epsilon=1.0, delta=1e-06)
    """

    _parameter_constraints = {
        **{
            name: constraint
            for name, constraint in OPLogisticRegression._parameter_constraints.items()
            if name not in ("alpha", "noise")
        },
        "method": [StrOptions({"auto", "fm", "op"})],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=0.0,
        method="auto",
        bounds_X=None,
        data_norm=None,
        max_nonzero=None,
        fit_intercept=True,
        classes=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.bounds_X = bounds_X
        self.data_norm = data_norm
        self.max_nonzero = max_nonzero
        self.fit_intercept = fit_intercept
        self.classes = classes
        self.random_state = random_state

    def _domain_kwargs(self, n_features):
        """The declared domain for the fitted estimator, ``bounds_X`` in the
        ``(lower, upper)`` form of :func:`~skdp.utils.check_bounds` (a dict by
        column name is read here, where ``feature_names_in_`` is known; the
        inner estimator is fitted on the validated array)."""
        bounds_X = self.bounds_X
        if bounds_X is not None:
            bounds_X = check_bounds(
                bounds_X,
                n_features,
                name="bounds_X",
                feature_names=getattr(self, "feature_names_in_", None),
            )
        return {
            "bounds_X": bounds_X,
            "data_norm": self.data_norm,
            "max_nonzero": self.max_nonzero,
            "fit_intercept": self.fit_intercept,
        }

    def _make(self, method, n_features):
        common = {
            **self._domain_kwargs(n_features),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "classes": self.classes,
            "random_state": self.random_state,
        }
        if method == "op":
            return OPLogisticRegression(**common)
        mechanism = "gaussian" if self.delta > 0 else "laplace"
        return FMLogisticRegression(mechanism=mechanism, **common)

    def _noise_level(self, X, n_classes):
        kwargs = self._domain_kwargs(X.shape[1])
        if self.bounds_X is None and self.data_norm is None:
            # undeclared: the fitted estimator warns that the domain leaks;
            # the rule reads the same inferred norm
            norms = np.sqrt(np.einsum("ij,ij->i", X, X))
            kwargs["data_norm"] = float(norms.max()) or 1.0
        return noise_level(
            X.shape[0], X.shape[1], n_classes, self.epsilon, self.delta, **kwargs
        )

    def _check_release(self, X, y):
        """Raise what ``fit(X, y)`` would refuse before its spend (the chosen
        estimator's own ``_check_release``); for a meta-estimator that
        releases something before it fits this one."""
        check_classification_targets(y)
        if self.classes is not None:
            n_classes = np.unique(np.asarray(self.classes)).size
        else:
            n_classes = np.unique(y).size
        method = self.method
        if method == "auto":
            rho = self._noise_level(X, max(n_classes, 2))
            method = "op" if rho <= AUTO_THRESHOLD else "fm"
        check = getattr(self._make(method, X.shape[1]), "_check_release", None)
        if check is not None:
            check(X, y)

    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Choose the method (public quantities only) and fit it: one release.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, ensure_min_samples=2)
        check_classification_targets(y)
        if self.classes is not None:
            n_classes = np.unique(np.asarray(self.classes)).size
        else:
            n_classes = np.unique(y).size  # the fitted estimator warns
        rho = self._noise_level(X, max(n_classes, 2))
        method = self.method
        if method == "auto":
            method = "op" if rho <= AUTO_THRESHOLD else "fm"
        with on_behalf_of(self):  # spends name this class, the inner in brackets
            estimator = self._make(method, X.shape[1]).fit(X, y)
        self.estimator_ = estimator
        self.method_ = method
        self.noise_level_ = rho
        self.classes_ = estimator.classes_
        self.coef_ = estimator.coef_
        self.intercept_ = estimator.intercept_
        self.privacy_spent_ = estimator.privacy_spent_
        return self

    def _validated(self, X):
        check_is_fitted(self)
        return validate_data(self, X, reset=False)

    def decision_function(self, X):
        """Scores: log-odds of ``classes_[1]`` (two classes) or softmax logits."""
        X = self._validated(X)
        return self.estimator_.decision_function(X)

    def predict(self, X):
        """The most probable class."""
        X = self._validated(X)
        return self.estimator_.predict(X)

    def predict_proba(self, X):
        """Class probabilities."""
        X = self._validated(X)
        return self.estimator_.predict_proba(X)

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`."""
        X = self._validated(X)
        return self.estimator_.predict_log_proba(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = True
        return tags
