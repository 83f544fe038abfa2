"""Private hyperparameter search: random stopping and the exponential mechanism."""

import contextlib
import functools
import math

import numpy as np
from sklearn.base import (
    BaseEstimator,
    MetaEstimatorMixin,
    clone,
    is_classifier,
    is_regressor,
)
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.utils import indexable
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples, check_is_fitted

from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, _tracking, record_spend
from skdp.accounting._ledger import BudgetTracker
from skdp.model_selection._accounting import (
    expected_trials,
    largest_base_epsilon,
    pure_selection_epsilon,
    tnb_gamma,
    tnb_pmf,
    tnb_selection_dp,
)
from skdp.utils import noise_generator
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.sklearn_compat import (
    RANDOM_STATE,
    HasMethods,
    Integral,
    Interval,
    Real,
    StrOptions,
    fit_context,
    safe_indexing,
)

__all__ = ["PrivateGridSearchCV", "PrivateRandomizedSearchCV"]

_SCORINGS = ("accuracy", "neg_mean_squared_error", "neg_mean_absolute_error")


@contextlib.contextmanager
def _captured_spends():
    """Record the releases made inside in a private tracker, and nowhere else.

    The search records its own guarantee once; the base runs' spends are
    accounted by the selection theorem, not by composition. The tracker is
    returned so that the search checks each base run spent what it was given.
    Only releases made in this thread are captured (the base runs run here);
    in a worker process that adopted an outer block, the base runs' spends
    also reach that block (conservative).
    """
    tracker = BudgetTracker(limit=None, accountant="basic", delta=0.0, strict=True)
    token = _tracking._context.set((tracker,))
    try:
        yield tracker
    finally:
        _tracking._context.reset(token)
        with tracker._lock:
            tracker._closed = True


def _estimator_has(method):
    def check(self):
        if hasattr(self, "best_estimator_"):
            getattr(self.best_estimator_, method)
        else:
            getattr(self.estimator, method)
        return True

    return check


#: the distributions of the number of trials random stopping chooses from:
#: TNB(eta, gamma) with these eta, and a mean of these multiples of the number
#: of candidates (unless given), capped at 10 x the number of candidates
_ETAS = (0.0, 0.5, 1.0)
_MEAN_FACTORS = (1.5, 3.0, 6.0)


@functools.lru_cache(maxsize=64)
def _random_stopping_plan(epsilon, delta, m, mean, cap):
    """The random-stopping plan for a total budget: public, from parameters only.

    Among the truncated negative binomial distributions TNB(eta, gamma) with
    eta in ``_ETAS`` and mean ``mean`` (or, if None, in ``_MEAN_FACTORS`` x m),
    capped at ``cap``, the one that maximises ``eps0 * coverage``: each base
    run's budget times the probability that a given candidate is tried at
    least once (a public proxy of the released model's quality).
    """
    means = [mean] if mean is not None else [f * m for f in _MEAN_FACTORS]
    best = None
    for eta in _ETAS:
        for target in means:
            gamma = tnb_gamma(eta, target)
            pmf = tnb_pmf(eta, gamma, cap)
            eps0 = largest_base_epsilon(
                lambda e, pmf=pmf: pure_selection_epsilon(e, pmf), epsilon, 1e-4
            )
            misses = ((m - 1) / m) ** np.arange(1, len(pmf) + 1)
            coverage = 1.0 - float(np.dot(pmf, misses))
            if best is None or eps0 * coverage > best["eps0"] * best["coverage"]:
                best = {
                    "eps0": eps0,
                    "eta": eta,
                    "gamma": gamma,
                    "pmf": pmf,
                    "coverage": coverage,
                    "capped": True,
                    "delta": 0.0,
                }
    if delta > 0:
        eta, gamma = best["eta"], best["gamma"]
        eps0_rdp = largest_base_epsilon(
            lambda e: tnb_selection_dp(e, eta, gamma, delta), epsilon, 1e-4
        )
        if eps0_rdp > best["eps0"]:
            pmf = tnb_pmf(eta, gamma)
            misses = ((m - 1) / m) ** np.arange(1, len(pmf) + 1)
            best = {
                **best,
                "eps0": eps0_rdp,
                "pmf": pmf,
                "coverage": 1.0 - float(np.dot(pmf, misses)),
                "capped": False,
                "delta": delta,
            }
    return best


class _BasePrivateSearch(MetaEstimatorMixin, BudgetTrackingMixin, BaseEstimator):
    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict", "get_params", "set_params"])],
        "epsilon": [Interval(Real, 0, np.inf, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "scoring": [StrOptions(set(_SCORINGS)), None],
        "method": [StrOptions({"auto", "random_stopping", "exponential"})],
        "epsilon_param": [str, None],
        "label_range": [tuple, list, None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "expected_trials": [Interval(Real, 1, None, closed="neither"), None],
        "max_trials": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": RANDOM_STATE,
    }

    # -- what the search fits ------------------------------------------------
    def _candidates(self):
        raise NotImplementedError

    def _privacy_params(self):
        """The names of the estimator's epsilon and delta parameters."""
        params = self.estimator.get_params(deep=True)
        if self.epsilon_param is not None:
            if self.epsilon_param not in params:
                raise ValueError(
                    f"epsilon_param={self.epsilon_param!r} is not a parameter of "
                    f"{type(self.estimator).__name__}."
                )
            name = self.epsilon_param
        elif "epsilon" in params:
            name = "epsilon"
        else:
            found = sorted(p for p in params if p.endswith("__epsilon"))
            if len(found) != 1:
                what = "none" if not found else ", ".join(found)
                raise ValueError(
                    "epsilon_param is needed: the estimator has no epsilon parameter "
                    f"and {what} among its nested ones (exactly one is looked for)."
                )
            name = found[0]
        prefix = name[: -len("epsilon")] if name.endswith("epsilon") else None
        delta_name = None
        if prefix is not None and prefix + "delta" in params:
            delta_name = prefix + "delta"
        seeds = sorted(
            p for p in params if p == "random_state" or p.endswith("__random_state")
        )
        return name, delta_name, seeds

    def _check_candidates(self, candidates, reserved):
        if not candidates:
            raise ValueError("param_grid gives no candidate.")
        for candidate in candidates:
            for key in candidate:
                if key in reserved:
                    raise ValueError(
                        f"the candidates may not set {key!r}: the search sets the "
                        "estimator's privacy parameters and seeds itself (epsilon is "
                        "the search's total; every base run of the random-stopping "
                        "theorem needs the same budget)."
                    )

    def _score_spec(self):
        """(scoring name, lower, upper) of the bounded validation score."""
        scoring = self.scoring
        if scoring is None:
            if is_classifier(self.estimator):
                scoring = "accuracy"
            elif is_regressor(self.estimator):
                scoring = "neg_mean_squared_error"
            else:
                raise ValueError(
                    "scoring is needed: the estimator is neither a classifier nor a "
                    "regressor."
                )
        if scoring == "accuracy":
            if self.label_range is not None:
                raise ValueError("label_range applies to regression scores only.")
            return scoring, None, None
        label_range = self.label_range
        if label_range is None:
            params = self.estimator.get_params(deep=True)
            found = [
                params[p]
                for p in sorted(params)
                if (p == "bounds_y" or p.endswith("__bounds_y"))
                and params[p] is not None
            ]
            if len(found) != 1:
                raise ValueError(
                    f"label_range is needed for scoring={scoring!r}: the score is "
                    "clipped to it to bound its sensitivity (none found in the "
                    "estimator's bounds_y)."
                )
            label_range = found[0]
        try:
            lower, upper = (float(v) for v in label_range)
        except (TypeError, ValueError):
            raise ValueError(
                f"label_range must be (lower, upper), got {label_range!r}."
            ) from None
        if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
            raise ValueError(
                f"label_range must be finite with lower < upper, got {label_range!r}."
            )
        return scoring, lower, upper

    def _bounded_score(self, estimator, X, y, spec):
        """The score in [-1, 1]-bounded units (sensitivity 1 / n) and its scale."""
        scoring, lower, upper = spec
        pred = np.asarray(estimator.predict(X))
        y = np.asarray(y)
        if scoring == "accuracy":
            return float(np.mean(pred == y)), 1.0
        width = upper - lower
        err = np.abs(np.clip(pred, lower, upper) - np.clip(y, lower, upper)) / width
        if scoring == "neg_mean_squared_error":
            return -float(np.mean(err**2)), width**2
        return -float(np.mean(err)), width

    # -- the plan: public, from the parameters only ----------------------------
    def _plan(self, m):
        epsilon, delta = float(self.epsilon), float(self.delta)
        if math.isinf(epsilon):
            return {"method": "exhaustive", "base_epsilon": math.inf, "delta": 0.0}
        if m == 1:
            return {"method": "single", "base_epsilon": epsilon, "delta": delta}
        mean = None if self.expected_trials is None else float(self.expected_trials)
        cap = 10 * m if self.max_trials is None else int(self.max_trials)
        if cap < 2:
            raise ValueError(f"max_trials must be >= 2, got {cap}.")
        rs = _random_stopping_plan(epsilon, delta, m, mean, cap)
        eps0, coverage = rs["eps0"], rs["coverage"]
        method = self.method
        if method == "auto":
            # public proxy of each released model's (rows x budget): the
            # exponential mechanism trains each candidate on 1/m of the training
            # rows at the full epsilon; random stopping trains on all of them at
            # eps0, and has tried the best candidate with probability `coverage`
            method = (
                "exponential" if epsilon / m >= eps0 * coverage else "random_stopping"
            )
        if method == "exponential":
            return {"method": method, "base_epsilon": epsilon, "delta": delta}
        return {
            "method": "random_stopping",
            "base_epsilon": eps0,
            "delta": rs["delta"],
            "capped": rs["capped"],
            "eta": rs["eta"],
            "gamma": rs["gamma"],
            "pmf": rs["pmf"],
            "expected_trials": expected_trials(rs["pmf"]),
            "coverage": coverage,
        }

    # -- fitting ----------------------------------------------------------------
    def _fit_one(self, params, X, y, fit_params, rng, budget, names):
        eps_name, delta_name, seed_names = names
        estimator = clone(self.estimator)
        settings = dict(params)
        settings[eps_name] = budget[0]
        if delta_name is not None:
            settings[delta_name] = budget[1]
        for name in seed_names:
            settings[name] = int(rng.integers(2**31 - 1))
        estimator.set_params(**settings)
        with _captured_spends() as spent:
            estimator.fit(X, y, **fit_params)
        if not spent.spends:
            raise ValueError(
                f"{type(self.estimator).__name__} recorded no privacy spend when "
                f"fitted with {eps_name}={budget[0]!r}: the search needs a skdp "
                "private estimator (one that records its release)."
            )
        total = spent.basic_total
        if total.epsilon > budget[0] * (1 + 1e-9) or total.delta > budget[1] + 1e-15:
            raise RuntimeError(
                f"the base run spent {total}, more than the {budget} it was given "
                f"through {eps_name!r}: the search's guarantee would not hold."
            )
        return estimator

    @fit_context(prefer_skip_nested_validation=False)
    @atomic_fit
    def fit(self, X, y, **fit_params):
        """Select hyperparameters privately and release the selected model.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        **fit_params : passed to every base run's ``fit``.

        Returns
        -------
        self
        """
        candidates = self._candidates()
        names = self._privacy_params()
        self._check_candidates(
            candidates, {n for n in (names[0], names[1], *names[2]) if n is not None}
        )
        spec = self._score_spec()
        X, y = indexable(X, y)
        n = _num_samples(X)
        m = len(candidates)
        plan = self._plan(m)
        n_val = int(math.ceil(float(self.validation_fraction) * n))
        if plan["method"] not in ("single",) and (
            n_val < 1 or n - n_val < 2 * (m if plan["method"] == "exponential" else 1)
        ):
            raise ValueError(
                f"{n} samples are too few for validation_fraction="
                f"{self.validation_fraction} and {m} candidates."
            )
        # Everything above is public (parameters, n): the guarantee is recorded,
        # and refused over a cap, before any draw.
        method = plan["method"]
        if method == "exhaustive":
            spend, budget = PrivacyBudget(math.inf, 0.0), (math.inf, 0.0)
        elif method == "random_stopping":
            # base runs are pure eps0-DP; delta (if any) is the RDP conversion's
            spend = PrivacyBudget(float(self.epsilon), plan["delta"])
            budget = (plan["base_epsilon"], 0.0)
        else:
            # disjoint rows: the estimator may use the search's delta itself
            base_delta = float(self.delta) if names[1] is not None else 0.0
            spend = PrivacyBudget(float(self.epsilon), base_delta)
            budget = (float(self.epsilon), base_delta)
        self.privacy_spent_ = record_spend(spend, type(self).__name__, mechanism=None)

        rng = noise_generator(self.random_state)
        order = rng.permutation(n)
        val, train = order[:n_val], order[n_val:]
        X_val, y_val = safe_indexing(X, val), safe_indexing(y, val)
        released = np.full(m, np.nan)
        if method == "single":
            best = 0
            model = self._fit_one(candidates[0], X, y, fit_params, rng, budget, names)
        elif method == "exhaustive":
            X_tr, y_tr = safe_indexing(X, train), safe_indexing(y, train)
            scores = []
            models = []
            for params in candidates:
                est = self._fit_one(params, X_tr, y_tr, fit_params, rng, budget, names)
                models.append(est)
                scores.append(self._bounded_score(est, X_val, y_val, spec)[0])
            best = int(np.argmax(scores))
            model = models[best]
            released[:] = scores
        elif method == "exponential":
            chunks = np.array_split(train, m)
            utilities = []
            models = []
            for params, rows in zip(candidates, chunks):
                est = self._fit_one(
                    params,
                    safe_indexing(X, rows),
                    safe_indexing(y, rows),
                    fit_params,
                    rng,
                    budget,
                    names,
                )
                models.append(est)
                utilities.append(self._bounded_score(est, X_val, y_val, spec)[0])
            sensitivity = 1.0 / n_val
            logits = float(self.epsilon) * np.asarray(utilities) / (2 * sensitivity)
            best = int(np.argmax(logits + rng.gumbel(size=m)))  # exponential mech.
            model = models[best]
        else:
            X_tr, y_tr = safe_indexing(X, train), safe_indexing(y, train)
            eps0 = plan["base_epsilon"]
            n_trials = self._draw_trials(plan, rng)
            best_score, best, model = -np.inf, None, None
            for _ in range(n_trials):
                index = int(rng.integers(m))
                est = self._fit_one(
                    candidates[index], X_tr, y_tr, fit_params, rng, budget, names
                )
                score = self._bounded_score(est, X_val, y_val, spec)[0]
                noisy = score + rng.laplace(0.0, 1.0 / (n_val * eps0))
                if noisy > best_score:
                    best_score, best, model = noisy, index, est
            released[best] = best_score
            del n_trials  # not released: the guarantee needs K hidden
        scale = 1.0 if spec[0] == "accuracy" else self._score_unit(spec)
        self.best_estimator_ = model
        self.best_index_ = best
        self.best_params_ = dict(candidates[best])
        self.best_score_ = float(released[best] * scale)
        self.method_ = method
        self.base_epsilon_ = float(plan["base_epsilon"])
        self.expected_n_trials_ = float(
            plan.get(
                "expected_trials",
                {"single": 1, "exhaustive": m, "exponential": m}.get(method, np.nan),
            )
        )
        self.scoring_ = spec[0]
        self.n_validation_ = n_val if method != "single" else 0
        self.cv_results_ = self._results(candidates, released * scale, best)
        return self

    @staticmethod
    def _draw_trials(plan, rng):
        """K from the plan's distribution (exactly: capped pmf or TNB sampler)."""
        if plan["capped"]:
            return 1 + int(rng.choice(len(plan["pmf"]), p=plan["pmf"]))
        if plan["eta"] == 0:
            return int(rng.logseries(1.0 - plan["gamma"]))
        while True:  # the negative binomial conditioned on K >= 1
            k = int(rng.negative_binomial(plan["eta"], plan["gamma"]))
            if k >= 1:
                return k

    def _score_unit(self, spec):
        scoring, lower, upper = spec
        width = upper - lower
        return width**2 if scoring == "neg_mean_squared_error" else width

    @staticmethod
    def _results(candidates, released, best):
        results = {"params": list(candidates)}
        keys = sorted({k for c in candidates for k in c})
        for key in keys:
            column = np.ma.MaskedArray(np.empty(len(candidates), dtype=object))
            column.mask = True
            for i, c in enumerate(candidates):
                if key in c:
                    column[i] = c[key]
            results[f"param_{key}"] = column
        results["mean_test_score"] = np.asarray(released, dtype=float)
        results["selected"] = np.arange(len(candidates)) == best
        return results

    # -- delegation ---------------------------------------------------------------
    @available_if(_estimator_has("predict"))
    def predict(self, X):
        """Predict with the released model (``best_estimator_``)."""
        check_is_fitted(self)
        return self.best_estimator_.predict(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the released model."""
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X)

    @available_if(_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """Log class probabilities of the released model."""
        check_is_fitted(self)
        return self.best_estimator_.predict_log_proba(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """Decision function of the released model."""
        check_is_fitted(self)
        return self.best_estimator_.decision_function(X)

    @available_if(_estimator_has("score"))
    def score(self, X, y):
        """The released model's own ``score`` on ``(X, y)`` (no privacy: your data)."""
        check_is_fitted(self)
        return self.best_estimator_.score(X, y)

    @property
    def classes_(self):
        """Classes of the released classifier."""
        check_is_fitted(self)
        return self.best_estimator_.classes_

    @property
    def n_features_in_(self):
        """Number of features the released model was fitted on."""
        check_is_fitted(self)
        return self.best_estimator_.n_features_in_

    @property
    def feature_names_in_(self):
        """Feature names the released model was fitted on (if any)."""
        check_is_fitted(self)
        return self.best_estimator_.feature_names_in_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self.estimator.__sklearn_tags__()
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        tags.input_tags.pairwise = inner.input_tags.pairwise
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        tags.non_deterministic = inner.non_deterministic
        return tags


_COMMON_PARAMETERS = """
    epsilon : float > 0
        The total epsilon of the whole search (selection and released model
        together). ``np.inf``: the non-private search (every candidate fitted
        on the training part, scored exactly, the best released).
    delta : float in [0, 1), default=0.0
        The total delta. Random stopping uses it only if the Renyi-DP bound
        (Papernot & Steinke, Theorem 2) then gives the base runs a larger
        budget than the pure bound; the exponential mechanism and a single
        candidate pass it to the estimator's own ``delta`` parameter (the
        sibling of ``epsilon_param``), if it has one.
    scoring : {"accuracy", "neg_mean_squared_error", "neg_mean_absolute_error"} \
or None, default=None
        The validation score, bounded so that its sensitivity is known. None:
        accuracy for a classifier, clipped negative mean squared error for a
        regressor.
    method : {"auto", "random_stopping", "exponential"}, default="auto"
        The selection (see Notes). ``"auto"`` compares each released model's
        public "training rows x budget" under both and takes the larger.
    epsilon_param : str or None, default=None
        The estimator parameter the search sets to each base run's budget.
        None: ``epsilon``, or else the one nested parameter ending in
        ``__epsilon`` (a Pipeline's private step); an error if there is none or
        more than one. Its sibling ``delta`` (``<prefix>delta``), if any, is set
        too. The candidates may not set either, nor any ``random_state``.
    label_range : (float, float) or None, default=None
        Regression scores only: predictions and labels are clipped to it, so
        the score is bounded. None: the estimator's ``bounds_y`` (or the one
        nested ``__bounds_y``).
    validation_fraction : float in (0, 1), default=0.2
        The share of rows (``ceil(fraction * n)``, chosen uniformly at random,
        independently of the data) kept for the validation scores.
    expected_trials : float > 1 or None, default=None
        Random stopping: the mean of the (uncapped) logarithmic distribution
        of the number of base runs. None: three times the number of
        candidates.
    max_trials : int >= 2 or None, default=None
        Random stopping: the cap on the number of base runs (the accounting is
        that of the capped distribution). None: ten times the number of
        candidates.
    random_state : None, int, RandomState or Generator, default=None
        Source of the split, the number of trials, the candidates drawn, the
        score noise and the base runs' seeds, under skdp's seed policy
        (:func:`~skdp.utils.noise_generator`: OS entropy unless reproducible
        noise is switched on)."""

_COMMON_ATTRIBUTES = """
    best_estimator_ : estimator
        The released model: the selected base run's fit (trained on the
        training part, or on its share of it for the exponential mechanism).
        There is no refit on all rows (that would be another release).
    best_params_ : dict
        The selected candidate.
    best_index_ : int
        Its index in ``cv_results_["params"]``.
    best_score_ : float
        Random stopping: the selected run's released noisy validation score
        (in the scoring's units; ``neg_mean_squared_error`` in ``y``'s units
        squared). The exponential mechanism releases no score: NaN.
    cv_results_ : dict of arrays
        Released quantities only: ``params``, ``param_<name>`` (masked
        arrays), ``mean_test_score`` (the released noisy score of the selected
        candidate, NaN for all others: their scores are not released) and
        ``selected``.
    method_ : str
        ``"random_stopping"``, ``"exponential"``, ``"single"`` (one
        candidate: fitted on all rows at the full budget, nothing to select)
        or ``"exhaustive"`` (``epsilon=np.inf``).
    base_epsilon_ : float
        The epsilon each base run was fitted (and scored) with.
    expected_n_trials_ : float
        The mean number of base runs (public). The number actually run is not
        stored: releasing it would void the guarantee.
    scoring_ : str
    n_validation_ : int
        Validation rows (public: a fixed fraction of n).
    privacy_spent_ : PrivacyBudget
        The guarantee of the whole search, recorded once in every active
        :func:`~skdp.accounting.track_budget` block before anything is drawn.
    classes_ : ndarray
        Classifiers only.
    n_features_in_ : int"""

_NOTES = """
    Neighbouring data sets differ by replacing one record; ``n`` is public.
    The rows are split at random, independently of the data, into a training
    part and a validation part of ``ceil(validation_fraction * n)`` rows.

    **Base run.** Draw a candidate uniformly, fit a clone with it and with
    ``epsilon_param = eps0`` on the training part, compute the bounded score
    ``s`` on the validation part and release ``(model, s + Laplace(1 /
    (n_val eps0)))``. Accuracy, and the clipped errors ``|y - p| / w`` (MAE)
    and ``(|y - p| / w)^2`` (MSE) with ``w`` the width of ``label_range``, lie
    in ``[0, 1]`` per row, so the mean over the validation rows changes by at
    most ``1 / n_val`` when one row is replaced. Replacing a training row
    changes only the fit (``eps0``-DP by the estimator's own guarantee; the
    score is a function of the model and of the unchanged validation rows:
    post-processing); replacing a validation row changes only the score
    (``eps0``-DP by the Laplace mechanism). Each record lies in one part, so
    a base run is ``eps0``-DP (parallel composition); given the split,
    independent repetitions of it are i.i.d., and the bound below holds for
    every split, hence for the random one. The search checks that every base
    run recorded at most ``eps0`` (a private tracker takes the base runs'
    records; only the search's total reaches the ledgers).

    **Random stopping** (Liu & Talwar 2019; Papernot & Steinke 2022). Run
    ``K`` base runs and release the one with the highest noisy score (with
    its score). ``K`` follows a truncated negative binomial distribution
    ``TNB(eta, gamma)``, ``P[K = k] ∝ (1 - gamma)^k prod_{l<k} (l + eta) / (l
    + 1)`` (``eta = 0``: logarithmic; ``eta = 1``: geometric), capped at
    ``max_trials``. With ``f`` the generating function of ``K`` and ``F`` the
    distribution function of one run's score, the release has density
    ``f'(F(s))`` relative to one run, and ``eps0``-DP bounds both factors: the
    whole is ``(eps0 + log R)``-DP with ``R = sup_x f'(x_max(x)) / f'(x)``,
    ``x_max(x) = min(e^eps0 x, 1 - e^-eps0 (1 - x))`` (geometric ``K``: ``R <=
    e^(2 eps0)``, Liu & Talwar's ``3 eps0``; TNB: ``(2 + eta) eps0``, Papernot
    & Steinke; the cap lowers it). ``R`` is bounded numerically on a grid,
    rigorously from above, and ``eps0`` is the largest value whose bound is at
    most ``epsilon``. The distribution is chosen from the number of candidates
    ``m`` only (public): ``eta`` in {0, 0.5, 1} and a mean of 1.5, 3 or 6
    times ``m`` (or ``expected_trials``), the pair maximising ``eps0`` times
    the probability that a given candidate is tried at least once. At
    ``epsilon = 1`` this gives ``eps0`` = 0.58 (2 candidates), 0.51 (3), 0.50
    (4), 0.40 (10: ``eta = 0.5``, mean 29); at ``epsilon = 5``: 3.33, 2.62,
    2.57, 2.04. With ``delta > 0`` the Renyi-DP bound of the uncapped
    distribution (Papernot & Steinke, Theorem 2, with the tight Renyi
    divergence of ``eps0``-DP runs, converted by Canonne, Kamath & Steinke
    2020) is computed too and used (with the uncapped distribution) if it
    allows a larger ``eps0``; with pure base runs it seldom does, and the
    guarantee is then ``(epsilon, 0)``.
    The number of runs is never released: the guarantee needs it hidden.

    **Exponential mechanism** (Chaudhuri, Monteleoni & Sarwate 2011;
    Chaudhuri & Vinterbo 2013). The training part is cut into one disjoint
    chunk per candidate; candidate ``i`` is fitted on chunk ``i`` at the full
    ``(epsilon, delta)``; one candidate is chosen with probability ``∝
    exp(epsilon u_i / (2 / n_val))`` from the exact bounded validation scores
    ``u_i`` (sensitivity ``1 / n_val``) and its model released. A record lies
    in one chunk or in the validation part, so the whole is ``(epsilon,
    delta)``-DP by parallel composition. Better with few candidates.

    ``method="auto"`` takes the exponential mechanism when ``epsilon / m >=
    eps0 * coverage`` (``m`` candidates, ``coverage`` the probability that
    random stopping tries a given candidate at least once): a public proxy of
    the released model's rows times budget. One candidate: it is fitted on
    all rows at ``(epsilon, delta)``; nothing is selected.

    Only released quantities are stored: ``cv_results_`` holds no score of an
    unreleased run. The base runs' seeds are drawn from the search's
    generator, so two runs never share noise."""

_REFERENCES = """
    .. [1] J. Liu and K. Talwar, "Private selection from private candidates",
       STOC 2019.
    .. [2] N. Papernot and T. Steinke, "Hyperparameter tuning with Renyi
       differential privacy", ICLR 2022.
    .. [3] K. Chaudhuri and S. A. Vinterbo, "A stability-based validation
       procedure for differentially private machine learning", NeurIPS 2013.
    .. [4] K. Chaudhuri, C. Monteleoni and A. D. Sarwate, "Differentially
       private empirical risk minimization", JMLR 2011.
    .. [5] C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for
       differential privacy", NeurIPS 2020."""


class PrivateGridSearchCV(_BasePrivateSearch):
    __doc__ = f"""Differentially private selection over a parameter grid.

    ``fit`` chooses a candidate of ``param_grid`` and releases a model fitted
    with it; the choice, the model and its score together are ``(epsilon,
    delta)``-DP. The total does not grow with the number of candidates: the
    base runs get what the selection theorem leaves (about ``epsilon / 2``
    each, see Notes). scikit-learn's ``GridSearchCV`` over a private
    estimator chooses on exact validation scores, so its choice is not
    private.

    Parameters
    ----------
    estimator : skdp private estimator or Pipeline holding one
        Fitted as clones, each with its privacy parameter set by the search.
    param_grid : dict or list of dicts
        As in scikit-learn's ``GridSearchCV`` (public: it is not data).
{_COMMON_PARAMETERS}

    Attributes
    ----------
{_COMMON_ATTRIBUTES}

    See Also
    --------
    PrivateRandomizedSearchCV : candidates sampled from distributions.

    Notes
    -----
{_NOTES}

    References
    ----------
{_REFERENCES}

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp.accounting import track_budget
    >>> from skdp.linear_model import OPLogisticRegression
    >>> from skdp.model_selection import PrivateGridSearchCV
    >>> X, y = make_classification(n_samples=4000, n_features=5, random_state=0)
    >>> X = X / 4
    >>> search = PrivateGridSearchCV(
    ...     OPLogisticRegression(bounds_X=(-2, 2), classes=[0, 1]),
    ...     {{"alpha": [10.0, 30.0, 100.0]}}, epsilon=1.0, random_state=0)
    >>> with track_budget(epsilon=1.0) as spent:
    ...     _ = search.fit(X, y)
    >>> spent.total, search.method_
    (PrivacyBudget(epsilon=1.0, delta=0.0), 'random_stopping')
    >>> round(search.base_epsilon_, 2)
    0.51
    >>> sorted(search.best_params_)
    ['alpha']
    """

    _parameter_constraints = {
        **_BasePrivateSearch._parameter_constraints,
        "param_grid": [dict, list],
    }

    def __init__(
        self,
        estimator,
        param_grid,
        *,
        epsilon,
        delta=0.0,
        scoring=None,
        method="auto",
        epsilon_param=None,
        label_range=None,
        validation_fraction=0.2,
        expected_trials=None,
        max_trials=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.scoring = scoring
        self.method = method
        self.epsilon_param = epsilon_param
        self.label_range = label_range
        self.validation_fraction = validation_fraction
        self.expected_trials = expected_trials
        self.max_trials = max_trials
        self.random_state = random_state

    def _candidates(self):
        return list(ParameterGrid(self.param_grid))


class PrivateRandomizedSearchCV(_BasePrivateSearch):
    __doc__ = f"""Differentially private selection over sampled parameters.

    As :class:`PrivateGridSearchCV`, with ``n_iter`` candidates drawn from
    ``param_distributions`` (scikit-learn's ``ParameterSampler``, seeded by
    ``random_state``: the candidates are public, they do not depend on the
    data).

    Parameters
    ----------
    estimator : skdp private estimator or Pipeline holding one
    param_distributions : dict or list of dicts
        As in scikit-learn's ``RandomizedSearchCV``.
    n_iter : int, default=10
        Number of candidates sampled.
{_COMMON_PARAMETERS}

    Attributes
    ----------
{_COMMON_ATTRIBUTES}

    Notes
    -----
{_NOTES}

    References
    ----------
{_REFERENCES}
    """

    _parameter_constraints = {
        **_BasePrivateSearch._parameter_constraints,
        "param_distributions": [dict, list],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        estimator,
        param_distributions,
        *,
        n_iter=10,
        epsilon,
        delta=0.0,
        scoring=None,
        method="auto",
        epsilon_param=None,
        label_range=None,
        validation_fraction=0.2,
        expected_trials=None,
        max_trials=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.n_iter = n_iter
        self.epsilon = epsilon
        self.delta = delta
        self.scoring = scoring
        self.method = method
        self.epsilon_param = epsilon_param
        self.label_range = label_range
        self.validation_fraction = validation_fraction
        self.expected_trials = expected_trials
        self.max_trials = max_trials
        self.random_state = random_state

    def _candidates(self):
        seed = self.random_state
        if isinstance(seed, np.random.Generator):
            seed = int(seed.integers(2**31 - 1))
        sampler = ParameterSampler(
            self.param_distributions, self.n_iter, random_state=seed
        )
        return list(sampler)
