"""PrivatePipeline: a scikit-learn Pipeline whose steps must all be private."""

import math
import time

from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, check_memory

from skdp.accounting import BudgetTrackingMixin
from skdp.exceptions import PrivacyLeakError
from skdp.pipeline._check import (
    _SHAPE_ONLY,
    DATA_INDEPENDENT,
    LABEL_PRIVATE,
    NOT_PRIVATE,
    PRIVATE,
    _check_step,
    _declared,
    _is_label_wrapper,
    _leaves,
    _tags,
    _undeclared_domain,
    check_privacy,
)
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.sklearn_compat import fit_context

__all__ = ["PrivatePipeline", "make_private_pipeline"]

_LEAKS = (NOT_PRIVATE, LABEL_PRIVATE)
# the parameters through which a step declares the domain of X
_X_DOMAIN = ("bounds_X", "data_norm")
# how check_privacy names them when undeclared
_X_DOMAIN_NAMES = ("bounds_X/data_norm", "bounds_X", "data_norm")


def _is_skip(est):
    return est is None or (isinstance(est, str) and est in ("passthrough", "drop"))


def _infinite_epsilon(est):
    params = est.get_params(deep=False) if hasattr(est, "get_params") else {}
    eps = params.get("epsilon")
    try:
        return eps is not None and math.isinf(float(eps))
    except (TypeError, ValueError):
        return False


def _takes_domain(est):
    """Whether ``est`` declares X's domain by parameters that are all unset."""
    if _is_skip(est) or not hasattr(est, "get_params"):
        return False
    params = est.get_params(deep=False)
    present = [p for p in _X_DOMAIN if p in params]
    return bool(present) and all(params[p] is None for p in present)


def _plan_step(est, handed):
    """``(status, reason)`` a leaf step will have once fitted, decided before any
    fit. ``handed``: the previous step will hand it its domain."""
    if _is_skip(est):
        return DATA_INDEPENDENT, f"{est!r}: no fit"
    declared = getattr(est, "__skdp_privacy__", None)
    if callable(declared):
        try:
            step = _declared("", est, declared())
            return step.status, step.reason
        except AttributeError:  # NotFittedError included: it answers once
            # fitted, and is checked again then
            if _infinite_epsilon(est):
                return NOT_PRIVATE, "epsilon=inf (no noise)"
            return PRIVATE, "declares itself after fit (checked then)"
    if _is_label_wrapper(est):
        return LABEL_PRIVATE, "label differential privacy: features without noise"
    if isinstance(est, BudgetTrackingMixin):
        if _infinite_epsilon(est):
            return NOT_PRIVATE, "epsilon=inf (no noise)"
        missing = _undeclared_domain(est)
        if handed:
            missing = [m for m in missing if m not in _X_DOMAIN_NAMES]
        if missing:
            return (
                NOT_PRIVATE,
                f"{' and '.join(missing)} not declared: taken from the data",
            )
        return PRIVATE, "a differentially private estimator"
    tags = _tags(est)
    if tags is not None and not tags.requires_fit:
        return DATA_INDEPENDENT, "stateless (requires_fit=False)"
    if type(est).__name__ in _SHAPE_ONLY and type(est).__module__.startswith(
        "sklearn."
    ):
        return DATA_INDEPENDENT, "learns the number of features only"
    return NOT_PRIVATE, "its fitted attributes would be computed without noise"


def _domain_params(est, domain):
    """The parameters that declare ``domain`` (an ``output_domain()``) to ``est``."""
    params = est.get_params(deep=False)
    box, norm = domain.get("bounds_X"), domain.get("data_norm")
    if box is not None:
        box = tuple(list(map(float, side)) for side in box)
    if "bounds_X" in params and "data_norm" in params:
        out = {"bounds_X": box, "data_norm": norm}
    elif "bounds_X" in params:
        # |x_j| <= ||x||: a row-norm bound gives a box
        out = {"bounds_X": box if box is not None else (-norm, norm)}
    else:
        if norm is None:
            norm = math.sqrt(sum(max(abs(a), abs(b)) ** 2 for a, b in zip(*box)))
        out = {"data_norm": float(norm)}
    return {k: v for k, v in out.items() if v is not None}


def _fit_transform_one(transformer, X, y, params):
    if hasattr(transformer, "fit_transform"):
        return transformer.fit_transform(X, y, **params), transformer
    return transformer.fit(X, y, **params).transform(X), transformer


def _has(method):
    def check(self):
        pipe = self.pipeline_ if hasattr(self, "pipeline_") else self.pipeline
        getattr(pipe, method)
        return True

    return check


class PrivatePipeline(MetaEstimatorMixin, BaseEstimator):
    """A pipeline that refuses, before anything is fitted, a step that would leak.

    Holds a scikit-learn :class:`~sklearn.pipeline.Pipeline` (``pipeline``) and
    fits a clone of it (``pipeline_``) step by step:

    1. **Check, before any fit.** Every step (every leaf of nested pipelines,
       unions, column transformers and private pipelines, named
       ``outer__inner``) gets the status
       :func:`~skdp.pipeline.check_privacy` would give it once fitted: private,
       data-independent, or fitted on the data without privacy (a scikit-learn
       ``StandardScaler``, a skdp estimator with ``epsilon=np.inf`` or with a
       domain left to be read off the data, a label-privacy wrapper). If any
       step would leak and its name is not in ``allow``, fit raises
       :class:`~skdp.exceptions.PrivacyLeakError` naming the steps: nothing has
       been fitted and nothing spent.
    2. **Domain hand-off.** After a private step with an ``output_domain()``
       (:class:`~skdp.preprocessing.PrivateStandardScaler`,
       :class:`~skdp.preprocessing.PrivateMinMaxScaler`,
       :class:`~skdp.decomposition.PrivatePCA`) is fitted, the next step's
       ``bounds_X`` / ``data_norm`` are set to that domain if the user left all
       of them None (on the clone: never on the user's object). So only the
       first step needs declared ranges, and no later step reads its ranges off
       the data. ``"passthrough"`` steps pass the domain on; any other step
       stops it.
    3. **Budget.** Each step records its own spend in any active
       :func:`~skdp.accounting.track_budget`; ``privacy_spent_`` is their basic
       composition, as :func:`~skdp.pipeline.check_privacy` computes it.

    Use :func:`make_private_pipeline` to build one as you would a
    :func:`~sklearn.pipeline.make_pipeline`.

    Parameters
    ----------
    pipeline : Pipeline
        The steps, memory and verbosity. Not modified (its steps are not
        fitted): the fitted steps are those of ``pipeline_``.
    allow : list of str or None, default=None
        Names of steps allowed to be fitted without privacy (for a nested
        composite, its name or ``outer__inner``). Their leak is not hidden:
        ``privacy_spent_`` is then ``PrivacyBudget(inf)``.

    Attributes
    ----------
    pipeline_ : Pipeline
        The fitted clone of ``pipeline`` (predictions go through it).
    privacy_spent_ : PrivacyBudget
        Basic composition (epsilons and deltas add) of the private steps'
        spends; ``PrivacyBudget(inf)`` if an allowed step was fitted without
        privacy (the fitted pipeline is then not differentially private). With
        no allowed leak, it equals the total that an active ``track_budget``
        (basic composition) records for the fit.
    privacy_report_ : PrivacyReport
        :func:`~skdp.pipeline.check_privacy` of ``pipeline_``.
    domains_ : dict
        Step name -> the domain parameters handed to it.
    classes_ : ndarray
        Of the final step (classifiers).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string column names.

    Notes
    -----
    **Why a class holding a Pipeline.** scikit-learn's ``Pipeline`` fits all
    steps in one call, so the domain of a step cannot be set from the previous
    step's release, and skdp does not subclass concrete scikit-learn
    estimators (a change in ``Pipeline``'s internals would break the
    subclass). Holding a ``Pipeline`` keeps its nested parameters
    (``set_params(pipeline__pca__epsilon=0.5)``), its repr and the fitted
    ``pipeline_`` usable wherever a ``Pipeline`` is expected.

    **Privacy.** Each step clips to its domain and is private with respect to
    its input rows; a step's input is the output of earlier releases applied
    to the same records, so the pipeline is private by adaptive (basic)
    composition. A handed domain is a function of the earlier steps' declared
    domains and their released statistics only (post-processing): it costs
    nothing, and it holds for any record, whatever rows were outside it.

    **Memory.** ``pipeline.memory`` caches the fits of data-independent and
    allowed steps, as scikit-learn's ``Pipeline`` does. Private steps are
    always refitted: a cached release would be reused without its spend in
    ``track_budget``.

    **Outside estimators** declaring themselves with ``__skdp_privacy__()``
    (see :func:`~skdp.pipeline.check_privacy`) are checked before the fit if
    the method answers on an unfitted estimator, otherwise right after their
    own fit (a leak found then raises before the next step is fitted, the
    earlier steps having spent).

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdp.datasets import make_private_classification
    >>> from skdp.linear_model import PrivateLogisticRegression
    >>> from skdp.pipeline import make_private_pipeline
    >>> from skdp.preprocessing import PrivateStandardScaler
    >>> X, y, _ = make_private_classification(2000, 3, random_state=0)
    >>> pipe = make_private_pipeline(
    ...     PrivateStandardScaler(epsilon=0.5, bounds_X=(-3, 3)),
    ...     PrivateLogisticRegression(epsilon=1.0, classes=[0, 1]),
    ... ).fit(X, y)
    >>> pipe.privacy_spent_
    PrivacyBudget(epsilon=1.5, delta=0.0)
    >>> leaky = make_private_pipeline(
    ...     StandardScaler(),
    ...     PrivateLogisticRegression(bounds_X=(-3, 3), classes=[0, 1]),
    ... )
    >>> leaky.fit(X, y)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    skdp.exceptions.PrivacyLeakError: PrivatePipeline: step 'standardscaler' would be...
    """

    _parameter_constraints = {
        "pipeline": [Pipeline],
        "allow": [list, tuple, None],
    }

    def __init__(self, pipeline, *, allow=None):
        self.pipeline = pipeline
        self.allow = allow

    # -- fit -----------------------------------------------------------------------
    def _plan(self, steps):
        """``[(name, status, reason)]`` of every leaf, before any fit."""
        plan = []
        handing = False
        for name, est in steps:
            if isinstance(est, PrivatePipeline):  # its own plan, hand-offs inside
                for leaf, status, reason in est._plan(est.pipeline.steps):
                    plan.append((f"{name}__{leaf}", status, reason))
                handing = False
                continue
            if isinstance(est, Pipeline | _composites()):
                for leaf, part in _leaves(name, est):
                    plan.append((leaf, *_plan_step(part, False)))
                handing = False
                continue
            status, reason = _plan_step(est, handing and _takes_domain(est))
            plan.append((name, status, reason))
            if not _is_skip(est):
                handing = status == PRIVATE and callable(
                    getattr(est, "output_domain", None)
                )
        return plan

    def _allowed(self, name, names):
        allow = set(self.allow or ())
        return name in allow or name.split("__", 1)[0] in allow

    def _refuse(self, leaks, after_fit=False):
        lines = [f"  {name}: {status} ({reason})" for name, status, reason in leaks]
        when = (
            "was fitted without privacy (found after its fit: the steps before "
            "it have spent)"
            if after_fit
            else "would be fitted on the data without privacy; nothing was fitted "
            "and nothing spent"
        )
        steps = ", ".join(repr(name) for name, _, _ in leaks)
        noun = "step" if len(leaks) == 1 else "steps"
        raise PrivacyLeakError(
            f"PrivatePipeline: {noun} {steps} {when}:\n"
            + "\n".join(lines)
            + "\nUse its private counterpart, declare its domain, or list it in "
            "allow= to fit it anyway (privacy_spent_ is then infinite)."
        )

    @staticmethod
    def _step_params(names, params):
        out = {name: {} for name in names}
        for key, value in params.items():
            step, sep, param = key.partition("__")
            if not sep or step not in out:
                raise ValueError(
                    f"Fit parameter {key!r} must be 'stepname__parameter' with a "
                    f"step among {names}."
                )
            out[step][param] = value
        return out

    @fit_context(prefer_skip_nested_validation=False)
    @atomic_fit
    def fit(self, X, y=None, **params):
        """Check every step, then fit them in order, handing on the domain.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or None
        **params : dict
            ``stepname__parameter`` fit parameters of the steps.

        Returns
        -------
        self

        Raises
        ------
        PrivacyLeakError
            Before any fit, if a step not in ``allow`` would be fitted without
            privacy.
        """
        pipeline = clone(self.pipeline)
        names = [name for name, _ in pipeline.steps]
        unknown = [a for a in (self.allow or ()) if a.split("__", 1)[0] not in names]
        if unknown:
            raise ValueError(f"allow names no step: {unknown}; the steps: {names}.")
        plan = self._plan(pipeline.steps)
        leaks = [p for p in plan if p[1] in _LEAKS and not self._allowed(p[0], names)]
        if leaks:
            self._refuse(leaks)
        statuses = {name: status for name, status, _ in plan}
        step_params = self._step_params(names, params)
        cached = check_memory(pipeline.memory).cache(_fit_transform_one)
        domain = None
        self.domains_ = {}
        Xt = X
        steps = list(pipeline.steps)
        start = time.perf_counter()
        for i, (name, est) in enumerate(steps):
            if _is_skip(est):
                continue
            if domain is not None and _takes_domain(est):
                handed = _domain_params(est, domain)
                est.set_params(**handed)
                self.domains_[name] = handed
            if i == len(steps) - 1:
                est.fit(Xt, y, **step_params[name])
            else:
                fit_one = (
                    cached if statuses.get(name) != PRIVATE else _fit_transform_one
                )
                Xt, est = fit_one(est, Xt, y, step_params[name])
                steps[i] = (name, est)
            if pipeline.verbose:
                print(
                    f"[PrivatePipeline] (step {i + 1} of {len(steps)}) Processing "
                    f"{name}, total={time.perf_counter() - start:5.1f}s"
                )
            found = [_check_step(leaf, part) for leaf, part in _leaves(name, est)]
            late = [
                (s.name, s.status, s.reason)
                for s in found
                if s.status in _LEAKS and not self._allowed(s.name, names)
            ]
            if late:
                self._refuse(late, after_fit=True)
            domain = None
            if len(found) == 1 and found[0].status == PRIVATE:
                output = getattr(est, "output_domain", None)
                domain = output() if callable(output) else None
            # "passthrough" keeps the domain: handled by the `continue` above
        pipeline.steps = steps
        self.pipeline_ = pipeline
        self.privacy_report_ = check_privacy(pipeline)
        self.privacy_spent_ = self.privacy_report_.total
        return self

    def __sklearn_is_fitted__(self):
        return hasattr(self, "pipeline_")

    # -- delegation ----------------------------------------------------------------
    @available_if(_has("predict"))
    def predict(self, X, **params):
        """Predict with the fitted pipeline (no privacy cost)."""
        check_is_fitted(self)
        return self.pipeline_.predict(X, **params)

    @available_if(_has("predict_proba"))
    def predict_proba(self, X, **params):
        """Class probabilities of the fitted pipeline."""
        check_is_fitted(self)
        return self.pipeline_.predict_proba(X, **params)

    @available_if(_has("predict_log_proba"))
    def predict_log_proba(self, X, **params):
        """Log class probabilities of the fitted pipeline."""
        check_is_fitted(self)
        return self.pipeline_.predict_log_proba(X, **params)

    @available_if(_has("decision_function"))
    def decision_function(self, X, **params):
        """Decision function of the fitted pipeline."""
        check_is_fitted(self)
        return self.pipeline_.decision_function(X, **params)

    @available_if(_has("score"))
    def score(self, X, y=None, **params):
        """The final step's ``score`` on the transformed ``X`` (your data: no
        privacy)."""
        check_is_fitted(self)
        return self.pipeline_.score(X, y, **params)

    @available_if(_has("transform"))
    def transform(self, X, **params):
        """Transform ``X`` through every step (no privacy cost)."""
        check_is_fitted(self)
        return self.pipeline_.transform(X, **params)

    @available_if(_has("transform"))
    def fit_transform(self, X, y=None, **params):
        """Fit (see :meth:`fit`), then transform ``X``."""
        return self.fit(X, y, **params).transform(X)

    @available_if(_has("inverse_transform"))
    def inverse_transform(self, X, **params):
        """Map ``X`` back through every step's ``inverse_transform``."""
        check_is_fitted(self)
        return self.pipeline_.inverse_transform(X, **params)

    def get_feature_names_out(self, input_features=None):
        """Output feature names of the fitted pipeline."""
        check_is_fitted(self)
        return self.pipeline_.get_feature_names_out(input_features)

    @property
    def named_steps(self):
        """The steps by name: fitted ones after ``fit``, else the declared ones."""
        pipe = self.pipeline_ if hasattr(self, "pipeline_") else self.pipeline
        return pipe.named_steps

    @property
    def classes_(self):
        """Classes of the final step."""
        check_is_fitted(self)
        return self.pipeline_.classes_

    @property
    def n_features_in_(self):
        """Number of features seen by the first step."""
        check_is_fitted(self)
        return self.pipeline_.n_features_in_

    @property
    def feature_names_in_(self):
        """Feature names seen by the first step (if any)."""
        check_is_fitted(self)
        return self.pipeline_.feature_names_in_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:
            inner = get_tags(self.pipeline)
        except Exception:  # not a Pipeline (refused by fit's validation)
            return tags
        tags.estimator_type = inner.estimator_type
        tags.target_tags = inner.target_tags
        tags.transformer_tags = inner.transformer_tags
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        tags.input_tags = inner.input_tags
        tags.non_deterministic = inner.non_deterministic
        return tags


def _composites():
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion

    return FeatureUnion | ColumnTransformer


def make_private_pipeline(*steps, allow=None, memory=None, verbose=False):
    """Build a :class:`PrivatePipeline` from estimators, as ``make_pipeline`` does.

    Parameters
    ----------
    *steps : estimators
        Named after their lowercased class names (scikit-learn's
        :func:`~sklearn.pipeline.make_pipeline`).
    allow : list of str or None, default=None
        Names of steps allowed to be fitted without privacy (the fitted
        pipeline's ``privacy_spent_`` is then infinite).
    memory : str, joblib.Memory or None, default=None
        Caches the fits of data-independent and allowed steps (never those of
        private steps: see :class:`PrivatePipeline`).
    verbose : bool, default=False
        Print the time elapsed after each step's fit.

    Returns
    -------
    PrivatePipeline
        Holding ``make_pipeline(*steps, memory=memory, verbose=verbose)``.

    Examples
    --------
    >>> from skdp.decomposition import PrivatePCA
    >>> from skdp.linear_model import PrivateLogisticRegression
    >>> from skdp.pipeline import make_private_pipeline
    >>> from skdp.preprocessing import PrivateStandardScaler
    >>> pipe = make_private_pipeline(
    ...     PrivateStandardScaler(epsilon=0.5, bounds_X=(0, 10)),
    ...     PrivatePCA(2, epsilon=0.5, delta=1e-9),
    ...     PrivateLogisticRegression(epsilon=1.0, classes=[0, 1]),
    ... )
    >>> list(pipe.named_steps)
    ['privatestandardscaler', 'privatepca', 'privatelogisticregression']
    """
    return PrivatePipeline(
        make_pipeline(*steps, memory=memory, verbose=verbose), allow=allow
    )
