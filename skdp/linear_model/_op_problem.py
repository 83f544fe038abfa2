"""The public description of an objective-perturbation fit: its domain, row
bound and the data-free guess of the coefficients' norm that sets the ridge."""

import dataclasses
import math

import numpy as np

from skdp._fm.centring import centred_domain
from skdp._fm.sensitivity import default_coef_norm, max_l2_in_domain
from skdp.linear_model._op_calibration import OPProblem

__all__ = [
    "GUESS_COEF",
    "GUESS_SAMPLES_EPS",
    "augmented_row_norm",
    "coef_norm_guess",
    "op_domain",
    "op_problem",
]


def augmented_row_norm(domain):
    """``R``: the largest norm of a clipped row with its intercept column."""
    R = max_l2_in_domain(domain, np.arange(domain.n_features))
    s = domain.intercept_scaling if domain.fit_intercept else 0.0
    return math.sqrt(R * R + s * s)


def op_domain(declared):
    """The domain an OP fit works in: a declared box centred when that is free.

    With an intercept, a declared box is centred at its midpoint and, declared
    alone, mapped to ``[-1, 1]`` (a public reparametrization, see
    :class:`~skdp._fm.domain.DataDomain`); when a norm
    or ``max_nonzero`` is declared too (they do not survive the shift), the
    description with the smaller :func:`augmented_row_norm` is kept. Uses the
    declaration only, never the data.
    """
    if not declared.fit_intercept or not declared.has_box or declared.is_shifted:
        return declared
    if declared.data_norm is None and declared.max_nonzero is None:
        # centred and mapped to [-1, 1] (centred_domain's scale)
        return centred_domain(declared, "logistic_taylor")
    # the norm is in the user's units: compare with the box shifted only
    box = dataclasses.replace(declared, data_norm=None, max_nonzero=None)
    centred = centred_domain(box, "logistic_taylor", scale=False)
    return min((declared, centred), key=augmented_row_norm)


# the coefficient-norm guess W: 4 / R at p = GUESS_COEF coordinates (binary),
# raised once n epsilon exceeds GUESS_SAMPLES_EPS per noise coordinate (see
# op_problem; both read off benchmarks/_logistic_rule.py's grid)
GUESS_COEF = 30
GUESS_SAMPLES_EPS = 300.0


def coef_norm_guess(domain, n_samples, n_classes, epsilon):
    """The data-free guess ``W`` of the coefficients' norm, for the ridge.

    ``W = W_0 max(1, n epsilon / (300 k))`` with ``k = (C - 1) p`` the noise's
    dimension, ``W_0 = (4 / R_x) (p / 30)`` for two classes and
    ``4 C / R_x`` for more (reasons in :func:`op_problem`). Public: ``n``,
    ``p``, ``C``, ``epsilon`` and the declared domain only.
    """
    C = int(n_classes)
    p = domain.n_coef
    base = default_coef_norm("logistic_taylor", domain)
    base *= C if C > 2 else p / GUESS_COEF
    if not math.isfinite(epsilon):
        return base
    return base * max(1.0, n_samples * epsilon / (GUESS_SAMPLES_EPS * p * (C - 1)))


def op_problem(domain, n_samples, n_classes, epsilon):
    """The public description (:class:`OPProblem`) of a fit on ``domain``.

    The coefficient-norm guess ``W`` (for the ridge, :func:`coef_norm_guess`)
    starts from the FM's ``4 / R_x`` (log-odds of 4 at the edge of the
    domain): ``4 C / R_x`` for ``C > 2`` classes, because the norm of the
    regularized non-private softmax fits grows about linearly with ``C`` on
    the multi-class tasks measured (digits, diamonds cut, synthetic 3 and 6
    classes: 8-16, 8-30, 7-9, 11-14 against ``4 C / R_x`` = 10, 13, 8, 11;
    ``4 / R_x`` left the ridge 10-30 times too strong there), and
    ``(4 / R_x) (p / 30)`` for two classes: ``4 / R_x`` puts log-odds 4 at a
    corner of the domain, but a model that spreads its weight over ``p``
    coordinates needs a larger norm for the same log-odds on typical rows
    (not aligned with it), and on the grid of ``benchmarks/_logistic_rule.py``
    the binary tasks with ``p`` of 9-22 wanted 3-10 times more ridge than
    ``4 / R_x`` gave and those with ``p`` of 48-51 (Adult, synthetic ball
    d=50) 3-10 times less, in the same direction for real and synthetic data.

    Then ``W`` grows with the signal the noise allows: times
    ``max(1, n epsilon / (300 k))``, ``k`` the noise's dimension. A guess too
    large costs at most the noise's own effect on the coefficients,
    ``sqrt(E||b||^2) / a``, which falls like ``1 / (n epsilon)``; a guess too
    small shrinks a strong signal by a bias that does not fall with ``n``. So
    past a knee the guess grows with ``n epsilon``; the knee (``300`` per noise
    coordinate) and the linear rate are read off the grid (Notes of
    :class:`OPLogisticRegression`).
    """
    C = int(n_classes)
    return OPProblem(
        n_samples=int(n_samples),
        n_coef=domain.n_coef,
        n_classes=C,
        row_norm=augmented_row_norm(domain),
        coef_norm=coef_norm_guess(domain, int(n_samples), C, float(epsilon)),
    )
