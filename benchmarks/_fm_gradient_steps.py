"""An experiment, not an skdp option: private gradient (MM) steps after the Taylor FM.

Round 1 is ``FMLogisticRegression``'s Taylor release at ``(1 - share)`` of the
budget. Its noisy quadratic ``A`` (post-processed: PSD projection and ridge) is
``X^T X / 8`` plus noise, and ``2 A = X^T X / 4`` is Bohning & Lindsay's (1988)
majorizer of the logistic Hessian (``p (1 - p) <= 1/4``). So the Taylor
minimizer is one majorize-minimize step from ``w = 0``, and every further step
needs only a release of the gradient ``g = sum_i (p_i - y_i) x_i`` at the
current (public) ``w``, whose replace-one sensitivity is the linear part of
:func:`skdp._fm.newton.newton_sensitivity` (``|p - y| <= 1``): ``steps``
releases at ``share * epsilon / steps`` (and delta) each, basic composition.
The step is ``w <- w - relax (2 A)^{-1} g``; ``relax`` in (0, 2] keeps the
exact-gradient step a descent step of the majorizer.

``benchmarks/bench_fm_newton.py`` measures it next to the single release and
the Newton refinement. It reaches into skdp's private FM core on purpose: it is
kept here to reproduce a measured negative result, not offered to users.
"""

import math

import numpy as np
from scipy.special import expit

from skdp._fm import newton
from skdp._fm.release import make_mechanism
from skdp._fm.sensitivity import default_coef_norm, prior_eigenvalue
from skdp._fm.solve import solve_noisy_quadratic, to_user_model
from skdp._fm.statistics import clip_to_domain
from skdp.linear_model import FMLogisticRegression
from skdp.linear_model._fm import _BaseFM


class FMGradientSteps(FMLogisticRegression):
    """``FMLogisticRegression`` plus ``steps`` private majorize-minimize steps."""

    def __init__(self, *, steps=1, share=0.5, relax=1.5, **kwargs):
        super().__init__(**kwargs)
        self.steps = steps
        self.share = share
        self.relax = relax

    def _noisy_solution(self, stats, domain, rng, data=None):
        exact = math.isinf(self.epsilon)
        keep = 1.0 if exact else 1.0 - self.share
        noisy, coef, intercept = _BaseFM._noisy_solution(
            self,
            stats,
            domain,
            rng,
            epsilon=self.epsilon * keep,
            delta=self.delta * keep,
        )
        X, y = clip_to_domain(*data, "logistic_taylor", domain)
        Z = newton.augment(X, domain)
        w = newton.to_domain_coordinates(coef, intercept, domain)
        sens = newton.newton_sensitivity(domain, quadratic=False)
        if not exact:
            each = self.share / self.steps
            mech = make_mechanism(
                self.epsilon * each, self.delta * each, sens, Z.shape[1], self.mechanism
            )
        for _ in range(self.steps):
            g = Z.T @ (expit(Z @ w) - y)
            if not exact:
                g = g + np.asarray(mech.sample_noise(g.shape[0], rng), float)
            # -(2 A)^{-1} g with A post-processed exactly as round 1's solve
            step = solve_noisy_quadratic(
                noisy.A,
                g,
                noise_std=noisy.noise_std,
                noise_std_b=noisy.noise_std_b,
                method=self.postprocessing,
                coef_norm=default_coef_norm("logistic_taylor", domain),
                prior_eig=prior_eigenvalue("logistic_taylor", domain, stats.n),
            )
            w = w + self.relax * step
        coef, intercept = to_user_model(w, domain)
        return noisy, coef, intercept
