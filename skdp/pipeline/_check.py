"""check_privacy: which steps of a fitted pipeline are private, and the total."""

import dataclasses
import math

from sklearn.exceptions import NotFittedError
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted

from skdp.accounting import PrivacyBudget

__all__ = [
    "DATA_INDEPENDENT",
    "LABEL_PRIVATE",
    "NOT_FITTED",
    "NOT_PRIVATE",
    "PRIVATE",
    "PrivacyReport",
    "StepPrivacy",
    "check_privacy",
]

#: Status of a step whose fit was a differentially private release.
PRIVATE = "private"
#: Status of a step whose fitted state does not depend on the rows.
DATA_INDEPENDENT = "data-independent"
#: Status of a step fitted on the data without privacy (a leak).
NOT_PRIVATE = "fitted on data without privacy"
#: Status of a label-privacy step: labels private, features used without noise.
LABEL_PRIVATE = "labels private, features without privacy"
#: Status of a step that needs fitting and is not fitted.
NOT_FITTED = "not fitted"

# scikit-learn transformers whose fit learns only the number of features
# (public): nothing about the rows
_SHAPE_ONLY = frozenset({"PolynomialFeatures"})
# the parameters of skdp estimators that declare the data's domain; None means
# "taken from the data" (with a PrivacyLeakWarning at fit)
_DOMAIN_ALTERNATIVES = (("bounds_X", "data_norm"), ("bounds_y",), ("classes",))


@dataclasses.dataclass(frozen=True)
class StepPrivacy:
    """What one fitted step released.

    Attributes
    ----------
    name : str
        The step's name (``outer__inner`` inside nested pipelines and unions).
    estimator : object
        The fitted step.
    status : str
        One of :data:`PRIVATE`, :data:`DATA_INDEPENDENT`, :data:`NOT_PRIVATE`,
        :data:`LABEL_PRIVATE`, :data:`NOT_FITTED`.
    spent : PrivacyBudget or None
        The step's own guarantee (private and label-private steps).
    reason : str
        Why the step got its status.
    """

    name: str
    estimator: object
    status: str
    spent: PrivacyBudget | None
    reason: str


@dataclasses.dataclass(frozen=True)
class PrivacyReport:
    """The result of :func:`check_privacy`.

    Attributes
    ----------
    steps : tuple of StepPrivacy
    total : PrivacyBudget or None
        Basic (sequential) composition of the private steps' budgets when every
        step is private or data-independent; ``PrivacyBudget(inf)`` when a step
        was fitted on the data without privacy (or protects the labels only);
        None when a step is not fitted.
    """

    steps: tuple
    total: PrivacyBudget | None

    @property
    def is_private(self):
        """Whether the whole fitted pipeline is ``total``-DP (finite epsilon)."""
        return self.total is not None and not math.isinf(self.total.epsilon)

    @property
    def leaking_steps(self):
        """Names of the steps fitted without (full) privacy."""
        return [s.name for s in self.steps if s.status in (NOT_PRIVATE, LABEL_PRIVATE)]

    def __str__(self):
        width = max([len(s.name) for s in self.steps] + [4])
        lines = []
        for s in self.steps:
            spent = ""
            if s.spent is not None:
                spent = f" (epsilon={s.spent.epsilon:g}, delta={s.spent.delta:g})"
            lines.append(f"{s.name:<{width}}  {s.status}{spent}: {s.reason}")
        if self.total is None:
            lines.append(f"{'total':<{width}}  unknown: a step is not fitted")
        elif self.is_private:
            lines.append(
                f"{'total':<{width}}  epsilon={self.total.epsilon:g}, "
                f"delta={self.total.delta:g} (basic composition)"
            )
        else:
            lines.append(
                f"{'total':<{width}}  not differentially private: "
                + ", ".join(self.leaking_steps)
            )
        return "\n".join(lines)


def check_privacy(estimator):
    """Report, step by step, what a fitted pipeline released, and the total.

    Parameters
    ----------
    estimator : Pipeline, FeatureUnion, ColumnTransformer, PrivatePipeline or estimator
        A fitted scikit-learn composite or
        :class:`~skdp.pipeline.PrivatePipeline` (nested ones are walked) or a
        single fitted estimator.

    Returns
    -------
    PrivacyReport
        ``report.steps`` (one :class:`StepPrivacy` per leaf step), ``report.total``
        and ``report.is_private``; ``print(report)`` shows a table.

    Notes
    -----
    Each leaf step gets one status, decided in this order:

    1. ``None``, ``"passthrough"`` or ``"drop"``: data-independent.
    2. **The tag.** An estimator that defines ``__skdp_privacy__()`` declares
       itself: the method returns a :class:`~skdp.accounting.PrivacyBudget`
       (the step's fit was a release with that guarantee), the string
       ``"data-independent"`` (its fitted state does not depend on the rows), or
       None (fitted without privacy); it raises
       :class:`~sklearn.exceptions.NotFittedError` before ``fit``. This is how
       an estimator from outside skdp takes part in the check (and how an skdp
       estimator overrides the rules below).
    3. Not fitted (``check_is_fitted`` fails, for a step that needs fitting).
    4. A label privatizer (:class:`~skdp.preprocessing.PrivateLabelClassifier`,
       :class:`~skdp.preprocessing.PrivateLabelRegressor`): the labels are
       private, the features are used without privacy.
    5. ``privacy_spent_`` (every skdp DP estimator): private with that budget,
       unless epsilon is infinite, or a domain parameter (``bounds_X`` with
       ``data_norm``, ``bounds_y``, ``classes``) was left None so that the domain
       was taken from the data (the fit warned with a
       :class:`~skdp.exceptions.PrivacyLeakWarning`): then fitted without
       privacy.
    6. scikit-learn's ``requires_fit=False`` tag (``FunctionTransformer``,
       ``Normalizer``, ...) or a transformer that learns only the number of
       features (``PolynomialFeatures``): data-independent.
    7. Anything else fitted: fitted on the data without privacy (a
       ``StandardScaler``'s means and variances, a search's selection).

    The total is the basic composition (epsilons and deltas add) of the private
    steps: every step reads every record (branches of a union or a column
    transformer read other columns of the same records). A tighter accountant
    applies to the spends recorded by :func:`~skdp.accounting.track_budget`.
    The check reads the fitted steps only; spends made by a search over them
    (each candidate's fit) are not visible here: record them with
    ``track_budget``.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdp.datasets import make_private_classification
    >>> from skdp.linear_model import OPLogisticRegression
    >>> from skdp.pipeline import check_privacy
    >>> X, y, _ = make_private_classification(500, 3, random_state=0)
    >>> op = OPLogisticRegression(epsilon=1.0, data_norm=3.0, classes=[0, 1])
    >>> pipe = make_pipeline(StandardScaler(), op).fit(X, y)
    >>> report = check_privacy(pipe)
    >>> report.is_private, report.leaking_steps
    (False, ['standardscaler'])
    """
    steps = tuple(_check_step(name, step) for name, step in _leaves("", estimator))
    if any(s.status == NOT_FITTED for s in steps):
        total = None
    elif any(s.status in (NOT_PRIVATE, LABEL_PRIVATE) for s in steps):
        total = PrivacyBudget(math.inf)
    else:
        total = PrivacyBudget(0.0)
        for s in steps:
            if s.status == PRIVATE:
                total = total + s.spent
    return PrivacyReport(steps=steps, total=total)


def _join(prefix, name):
    return f"{prefix}__{name}" if prefix else name


def _leaves(prefix, est):
    """``(name, step)`` of every leaf of nested pipelines, unions and column
    transformers (the fitted ones where they are fitted)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    from skdp.pipeline._private_pipeline import PrivatePipeline

    if isinstance(est, PrivatePipeline):
        inner = getattr(est, "pipeline_", est.pipeline)
        yield from _leaves(prefix, inner)
    elif isinstance(est, Pipeline):
        for name, step in est.steps:
            yield from _leaves(_join(prefix, name), step)
    elif isinstance(est, FeatureUnion):
        for name, step in est.transformer_list:
            yield from _leaves(_join(prefix, name), step)
    elif isinstance(est, ColumnTransformer):
        parts = getattr(est, "transformers_", est.transformers)
        for name, step, _ in parts:
            yield from _leaves(_join(prefix, name), step)
    else:
        yield prefix or type(est).__name__.lower(), est


def _check_step(name, est):
    if est is None or (isinstance(est, str) and est in ("passthrough", "drop")):
        return StepPrivacy(name, est, DATA_INDEPENDENT, None, f"{est!r}: no fit")
    declared = getattr(est, "__skdp_privacy__", None)
    if callable(declared):
        try:
            value = declared()
        except NotFittedError:
            return StepPrivacy(name, est, NOT_FITTED, None, "fit it first")
        return _declared(name, est, value)
    tags = _tags(est)
    needs_fit = tags is None or tags.requires_fit
    if needs_fit and not _is_fitted(est):
        return StepPrivacy(name, est, NOT_FITTED, None, "fit it first")
    if _is_label_wrapper(est):
        return StepPrivacy(
            name,
            est,
            LABEL_PRIVATE,
            getattr(est, "privacy_spent_", None),
            "label differential privacy: the features are fitted without noise",
        )
    spent = getattr(est, "privacy_spent_", None)
    if isinstance(spent, PrivacyBudget):
        if math.isinf(spent.epsilon):
            return StepPrivacy(name, est, NOT_PRIVATE, None, "epsilon=inf (no noise)")
        undeclared = _undeclared_domain(est)
        if undeclared:
            return StepPrivacy(
                name,
                est,
                NOT_PRIVATE,
                None,
                f"{' and '.join(undeclared)} not declared: taken from the data",
            )
        return StepPrivacy(name, est, PRIVATE, spent, "one or more DP releases")
    if not needs_fit:
        return StepPrivacy(
            name, est, DATA_INDEPENDENT, None, "stateless (requires_fit=False)"
        )
    if type(est).__name__ in _SHAPE_ONLY and type(est).__module__.startswith(
        "sklearn."
    ):
        return StepPrivacy(
            name, est, DATA_INDEPENDENT, None, "learns the number of features only"
        )
    return StepPrivacy(
        name,
        est,
        NOT_PRIVATE,
        None,
        "its fitted attributes are computed from the data without noise",
    )


def _declared(name, est, value):
    if isinstance(value, PrivacyBudget):
        if math.isinf(value.epsilon):
            return StepPrivacy(name, est, NOT_PRIVATE, None, "declares epsilon=inf")
        return StepPrivacy(name, est, PRIVATE, value, "declared by __skdp_privacy__")
    if value == DATA_INDEPENDENT:
        return StepPrivacy(
            name, est, DATA_INDEPENDENT, None, "declared by __skdp_privacy__"
        )
    if value is None:
        return StepPrivacy(name, est, NOT_PRIVATE, None, "declared by __skdp_privacy__")
    raise TypeError(
        f"{type(est).__name__}.__skdp_privacy__() must return a PrivacyBudget, "
        f"'data-independent' or None, got {value!r}."
    )


def _tags(est):
    try:
        return get_tags(est)
    except Exception:  # not a scikit-learn estimator
        return None


def _is_fitted(est):
    try:
        check_is_fitted(est)
    except NotFittedError:
        return False
    except TypeError:  # not an estimator: nothing to check
        return True
    return True


def _is_label_wrapper(est):
    from skdp.preprocessing import PrivateLabelClassifier, PrivateLabelRegressor

    return isinstance(est, PrivateLabelClassifier | PrivateLabelRegressor)


def _undeclared_domain(est):
    """The domain parameters an skdp estimator left to be read off the data."""
    if not hasattr(est, "get_params"):
        return []
    params = est.get_params(deep=False)
    missing = []
    for names in _DOMAIN_ALTERNATIVES:
        present = [n for n in names if n in params]
        if present and all(params[n] is None for n in present):
            missing.append("/".join(present))
    return missing
