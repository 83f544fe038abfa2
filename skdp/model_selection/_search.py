"""Private hyperparameter search: random stopping and the exponential mechanism."""

import numpy as np
from sklearn.model_selection import ParameterGrid, ParameterSampler

from skdp.model_selection._base import BasePrivateSearch
from skdp.model_selection._docstrings import (
    COMMON_ATTRIBUTES,
    COMMON_PARAMETERS,
    NOTES,
    REFERENCES,
)
from skdp.utils.sklearn_compat import Integral, Interval

__all__ = ["PrivateGridSearchCV", "PrivateRandomizedSearchCV"]


class PrivateGridSearchCV(BasePrivateSearch):
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
{COMMON_PARAMETERS}

    Attributes
    ----------
{COMMON_ATTRIBUTES}

    See Also
    --------
    PrivateRandomizedSearchCV : candidates sampled from distributions.

    Notes
    -----
{NOTES}

    References
    ----------
{REFERENCES}

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
        **BasePrivateSearch._parameter_constraints,
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
        refit_share=0.0,
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
        self.refit_share = refit_share
        self.expected_trials = expected_trials
        self.max_trials = max_trials
        self.random_state = random_state

    def _candidates(self):
        return list(ParameterGrid(self.param_grid))


class PrivateRandomizedSearchCV(BasePrivateSearch):
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
{COMMON_PARAMETERS}

    Attributes
    ----------
{COMMON_ATTRIBUTES}

    Notes
    -----
{NOTES}

    References
    ----------
{REFERENCES}
    """

    _parameter_constraints = {
        **BasePrivateSearch._parameter_constraints,
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
        refit_share=0.0,
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
        self.refit_share = refit_share
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
