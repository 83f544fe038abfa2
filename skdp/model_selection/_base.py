"""The private search's machinery, shared by the grid and randomized searches."""

import math

import numpy as np
from sklearn.base import (
    BaseEstimator,
    MetaEstimatorMixin,
    clone,
    is_classifier,
    is_regressor,
)
from sklearn.utils import indexable
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples, check_is_fitted

from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.model_selection._accounting import expected_trials
from skdp.model_selection._capture import captured_spends
from skdp.model_selection._plan import random_stopping_plan
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

__all__ = ["BasePrivateSearch"]

_SCORINGS = ("accuracy", "neg_mean_squared_error", "neg_mean_absolute_error")


def _estimator_has(method):
    def check(self):
        if hasattr(self, "best_estimator_"):
            getattr(self.best_estimator_, method)
        else:
            getattr(self.estimator, method)
        return True

    return check


class BasePrivateSearch(MetaEstimatorMixin, BudgetTrackingMixin, BaseEstimator):
    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict", "get_params", "set_params"])],
        "epsilon": [Interval(Real, 0, np.inf, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "scoring": [StrOptions(set(_SCORINGS)), None],
        "method": [StrOptions({"auto", "random_stopping", "exponential"})],
        "epsilon_param": [str, None],
        "label_range": [tuple, list, None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "refit_share": [Interval(Real, 0, 1, closed="left")],
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
        with captured_spends() as spent:
            pred = np.asarray(estimator.predict(X))
        if spent.spends:
            raise ValueError(
                f"{type(self.estimator).__name__} releases at predict time "
                f"({spent.spends[0][0]}): the validation score would then not be "
                "eps0-DP; the search supports estimators that release in fit only."
            )
        y = np.asarray(y)
        if scoring == "accuracy":
            return float(np.mean(pred == y)), 1.0
        width = upper - lower
        err = np.abs(np.clip(pred, lower, upper) - np.clip(y, lower, upper)) / width
        if scoring == "neg_mean_squared_error":
            return -float(np.mean(err**2)), width**2
        return -float(np.mean(err)), width

    # -- the plan: public, from the parameters only ----------------------------
    def _plan(self, m, epsilon=None, delta=None):
        """The selection's method and budgets (``epsilon``, ``delta``: its total)."""
        if epsilon is None:
            epsilon, delta = self._selection_budget(m)
        if math.isinf(epsilon):
            return {"method": "exhaustive", "base_epsilon": math.inf, "delta": 0.0}
        if m == 1:
            return {"method": "single", "base_epsilon": epsilon, "delta": delta}
        mean = None if self.expected_trials is None else float(self.expected_trials)
        cap = 10 * m if self.max_trials is None else int(self.max_trials)
        if cap < 2:
            raise ValueError(f"max_trials must be >= 2, got {cap}.")
        rs = random_stopping_plan(epsilon, delta, m, mean, cap)
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
        # clone the values (estimators in a grid are shared between runs)
        settings = {k: clone(v, safe=False) for k, v in params.items()}
        settings[eps_name] = budget[0]
        if delta_name is not None:
            settings[delta_name] = budget[1]
        for name in seed_names:
            settings[name] = int(rng.integers(2**31 - 1))
        estimator.set_params(**settings)
        with captured_spends() as spent:
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
        sel_eps, sel_delta = self._selection_budget(m)
        plan = self._plan(m, sel_eps, sel_delta)
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
            spend = PrivacyBudget(sel_eps, plan["delta"])
            budget = (plan["base_epsilon"], 0.0)
        else:
            # disjoint rows: the estimator may use the search's delta itself
            base_delta = sel_delta if names[1] is not None else 0.0
            spend = PrivacyBudget(sel_eps, base_delta)
            budget = (sel_eps, base_delta)
        refit = self._refits(method)
        if refit:  # basic composition with the refit on all rows
            refit_budget = (
                float(self.epsilon) - sel_eps if method != "exhaustive" else math.inf,
                (float(self.delta) - sel_delta) if names[1] is not None else 0.0,
            )
            # recorded as the total itself (the two epsilons add up to it; this
            # avoids a last-bit excess over a cap set to exactly epsilon)
            spend = PrivacyBudget(
                float(self.epsilon) if method != "exhaustive" else math.inf,
                spend.delta + refit_budget[1],
            )
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
            logits = sel_eps * np.asarray(utilities) / (2 * sensitivity)
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
        if refit:
            model = self._fit_one(
                candidates[best], X, y, fit_params, rng, refit_budget, names
            )
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

    def _selection_budget(self, m):
        """(epsilon, delta) of the selection: all of it, less the refit's share."""
        share = 0.0 if m == 1 else float(self.refit_share)
        return float(self.epsilon) * (1 - share), float(self.delta) * (1 - share)

    def _refits(self, method):
        return float(self.refit_share) > 0 and method != "single"

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
