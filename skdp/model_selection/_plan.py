"""The random-stopping plan: public, from the parameters only (skdp-internal)."""

import functools

import numpy as np

from skdp.model_selection._accounting import (
    largest_base_epsilon,
    pure_selection_epsilon,
    tnb_gamma,
    tnb_pmf,
    tnb_selection_dp,
)

__all__ = ["random_stopping_plan"]

#: the distributions of the number of trials random stopping chooses from:
#: TNB(eta, gamma) with these eta, and a mean of these multiples of the number
#: of candidates (unless given), capped at 10 x the number of candidates
_ETAS = (0.0, 0.5, 1.0)
_MEAN_FACTORS = (1.5, 3.0, 6.0)


@functools.lru_cache(maxsize=64)
def random_stopping_plan(epsilon, delta, m, mean, cap):
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
