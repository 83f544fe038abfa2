"""Noise and regularization of objective perturbation, from public quantities.

Everything here is a function of the public description of a release
(:class:`OPProblem`: ``n``, ``p``, ``C``, the row-norm bound, a data-free guess
of the coefficient norm) and of ``(epsilon, delta)``; never of the data. The
derivations are in :class:`~skdp.linear_model.OPLogisticRegression`'s Notes.
"""

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from skdp.accounting import ObjectivePerturbationEvent
from skdp.linear_model._op_solver import gradient_tolerance

__all__ = [
    "OUTPUT_EPSILON_SHARE",
    "OUTPUT_NOISE_MULTIPLIER",
    "OPCalibration",
    "OPProblem",
    "calibrate",
]

# Gaussian output perturbation (approximate minima perturbation): noise
# multiplier sigma_out / (2 tau / lam). Its privacy loss is N(5e-7, 1e-6), composed
# exactly in the calibration (it costs ~0.005 in epsilon at delta = 1e-10), while
# sigma_out = 2000 tau / lam stays ~2% of the objective noise's effect on theta
# even at n = 180,000 (tau is 1e-13 of the gradient's scale).
OUTPUT_NOISE_MULTIPLIER = 1000.0
# pure epsilon: the share of epsilon spent on the output perturbation (its
# noise norm is then at most a few % of the objective noise's effect at n = 180,000)
OUTPUT_EPSILON_SHARE = 0.005
# relative precision of the noise calibration (sigma is rounded up)
_SIGMA_RTOL = 1e-9
# sigma is raised by this relative margin after the bisection: the profile's
# quadrature is accurate to ~1e-9 relative (tests: adaptive quadrature of the
# loss density, fine Simpson), and 1e-6 more sigma lowers delta by ~1e-5
# relative or more (d log delta / d log sigma is ~10-40 in the tail)
_SIGMA_MARGIN = 1e-6


@dataclass(frozen=True)
class OPProblem:
    """The public description of one objective-perturbation release.

    Parameters
    ----------
    n_samples : int
        ``n`` (public under replace-one neighbours).
    n_coef : int
        ``p``: coefficients per class, the intercept column included.
    n_classes : int
        ``C``; 2 is one coefficient vector (log-odds of the second class),
        more is one row per class constrained to sum to 0.
    row_norm : float
        ``R``: every clipped row (intercept column included) has
        ``||x|| <= R``.
    coef_norm : float
        A data-free guess ``W`` of the coefficients' norm, for the ridge.
    """

    n_samples: int
    n_coef: int
    n_classes: int
    row_norm: float
    coef_norm: float

    @property
    def multinomial(self):
        return self.n_classes > 2

    @property
    def noise_dim(self):
        """``k``: coordinates of the perturbation (``p`` or ``(C - 1) p``)."""
        return self.n_coef * (self.n_classes - 1)

    @property
    def sensitivity(self):
        """``Delta``: replace-one L2 sensitivity of the loss gradient."""
        factor = 2.0 * math.sqrt(2.0) if self.multinomial else 2.0
        return factor * self.row_norm

    @property
    def row_gradient_bound(self):
        """Largest norm of one record's loss gradient (``R`` or ``sqrt(2) R``)."""
        return self.sensitivity / 2.0

    @property
    def tail_terms(self):
        """``K``: ``P(T > a) <= K Phi(-a)``."""
        return 2 * (self.n_classes - 1)

    @property
    def chi_df(self):
        """Dimension of the span of the gradient differences."""
        return 2 * (self.n_classes - 1)

    def jacobian_epsilon(self, lam):
        """``eps_J``: ``log(1 + R^2 / (4 lam))``, ``(C - 1) log(1 + R^2 / (C lam))``."""
        R2 = self.row_norm**2
        if self.multinomial:
            C = self.n_classes
            return (C - 1) * math.log1p(R2 / (C * lam))
        return math.log1p(R2 / (4.0 * lam))

    def lambda_for_jacobian(self, eps_j):
        """The ``lam`` whose :meth:`jacobian_epsilon` is ``eps_j``."""
        R2 = self.row_norm**2
        if self.multinomial:
            C = self.n_classes
            return R2 / (C * math.expm1(eps_j / (C - 1)))
        return R2 / (4.0 * math.expm1(eps_j))

    @property
    def curvature(self):
        """A data-free guess ``a`` of the mean eigenvalue of the loss Hessian.

        The Hessian's trace is at most ``n kappa R^2`` (``kappa = 1/4`` for the
        logistic loss; ``1 - 1/C`` over ``C - 1`` directions for the softmax),
        spread over the ``k`` coordinates: ``n R^2 / (4 p)`` and
        ``n R^2 / (C p)``. An upper bound, as the FM's prior eigenvalue.
        """
        R2 = self.row_norm**2
        if self.multinomial:
            return self.n_samples * R2 / (self.n_classes * self.n_coef)
        return self.n_samples * R2 / (4.0 * self.n_coef)


@dataclass(frozen=True)
class OPCalibration:
    """Ridge, noise and output perturbation of one release (all public).

    ``noise_std`` (Gaussian, ``delta > 0``) or ``noise_rate`` (pure: density
    proportional to ``exp(-noise_rate ||b||)``) for the objective;
    ``output_noise_std`` or ``output_rate`` likewise for the output
    perturbation of sensitivity ``2 tau / lam``.
    """

    lam: float
    jacobian_epsilon: float
    tau: float
    noise_std: float = 0.0
    noise_rate: float = math.inf
    output_noise_std: float = 0.0
    output_rate: float = math.inf
    event: object = None

    @property
    def output_sensitivity(self):
        return 2.0 * self.tau / self.lam


def _gaussian_event(problem, lam, sigma):
    return ObjectivePerturbationEvent(
        problem.jacobian_epsilon(lam),
        sigma / problem.sensitivity,
        problem.tail_terms,
        problem.chi_df,
        OUTPUT_NOISE_MULTIPLIER,
    )


def gaussian_sigma(problem, epsilon, delta, lam):
    """Smallest ``sigma`` with ``delta(epsilon) <= delta`` on the OP profile.

    Bisection on ``log sigma`` (the profile decreases in ``sigma``), then
    raised by a relative ``1e-6`` (more than the quadrature's error) and
    checked, so that the returned ``sigma`` satisfies the condition. Raises
    ValueError when no ``sigma`` does (``eps_J`` too close to ``epsilon``).
    """
    return _gaussian_sigma(problem, float(epsilon), float(delta), float(lam))


@functools.lru_cache(maxsize=4096)
def _gaussian_sigma(problem, epsilon, delta, lam):
    def excess(log_sigma):
        event = _gaussian_event(problem, lam, math.exp(log_sigma))
        return math.log(max(event.delta(epsilon), 1e-300)) - math.log(delta)

    limit = _gaussian_event(problem, lam, 1e300)  # sigma -> inf: only eps_J left
    if limit.delta(epsilon) >= delta:
        raise ValueError(
            f"lambda={lam:.4g} leaves no room for noise: its Jacobian term "
            f"{problem.jacobian_epsilon(lam):.4g} uses up epsilon={epsilon}."
        )
    hi = math.log(problem.sensitivity)
    while excess(hi) > 0:
        hi += 2.0
    lo = hi - 2.0
    while excess(lo) <= 0:
        lo -= 2.0
    log_sigma = optimize.brentq(excess, lo, hi, xtol=1e-12, rtol=_SIGMA_RTOL)
    sigma = math.exp(log_sigma) * (1.0 + _SIGMA_MARGIN)
    while excess(math.log(sigma)) > 0:
        sigma *= 1.0 + 10 * _SIGMA_RTOL
    return sigma


def pure_rate(problem, epsilon, lam):
    """``gamma`` of the objective noise: ``(eps - eps_out - eps_J) / Delta``."""
    budget = epsilon * (1.0 - OUTPUT_EPSILON_SHARE) - problem.jacobian_epsilon(lam)
    if not budget > 0:
        raise ValueError(
            f"lambda={lam:.4g} leaves no room for noise: its Jacobian term "
            f"{problem.jacobian_epsilon(lam):.4g} uses up epsilon={epsilon}."
        )
    return budget / problem.sensitivity


def noise_moment(problem, epsilon, delta, lam):
    """``E||b||^2`` of the objective noise at ``lam``: ``k sigma^2`` (Gaussian)
    or ``k (k + 1) / gamma^2`` (pure, ``||b||`` ~ Gamma(k, 1/gamma))."""
    k = problem.noise_dim
    if delta > 0:
        return k * gaussian_sigma(problem, epsilon, delta, lam) ** 2
    return k * (k + 1) / pure_rate(problem, epsilon, lam) ** 2


def smallest_lambda(problem, epsilon, delta):
    """The infimum of the ``lam`` that leave room for noise."""
    if delta > 0:
        # sigma -> inf leaves delta_G(eps - eps_J) of the output step: solve
        # for eps_J by bisection on that Gaussian term alone
        def gap(eps_j):
            event = ObjectivePerturbationEvent(
                eps_j,
                1e300,
                problem.tail_terms,
                problem.chi_df,
                OUTPUT_NOISE_MULTIPLIER,
            )
            return event.delta(epsilon) - delta

        eps_j = optimize.brentq(gap, 0.0, epsilon + 1.0, xtol=1e-12)
    else:
        eps_j = epsilon * (1.0 - OUTPUT_EPSILON_SHARE)
    return problem.lambda_for_jacobian(eps_j)


def choose_lambda(problem, epsilon, delta):
    """The data-free ridge: minimizer of the risk proxy over feasible ``lam``.

    ``risk(lam) = (lam^2 W^2 + E||b(lam)||^2) / (a + lam)^2``: for a quadratic
    of curvature ``a I`` the perturbed minimizer's squared error is the
    ridge bias ``lam^2 ||theta||^2 / (a + lam)^2`` plus the noise
    ``E||b||^2 / (a + lam)^2``, with the guesses ``W = coef_norm`` and ``a =``
    :attr:`OPProblem.curvature`. ``E||b||^2`` grows without bound as
    ``lam`` falls to :func:`smallest_lambda` (the Jacobian term takes the whole
    budget), so the minimum balances the privacy cost of a small ridge
    against its bias, and shrinks harder when the noise dominates (small
    ``n epsilon``). Golden-section search on ``log lam``.
    """
    return _choose_lambda(problem, float(epsilon), float(delta))


@functools.lru_cache(maxsize=1024)
def _choose_lambda(problem, epsilon, delta):
    lam_min = smallest_lambda(problem, epsilon, delta)

    def risk(log_lam):
        try:
            return risk_proxy(problem, epsilon, delta, math.exp(log_lam))
        except ValueError:
            return math.inf

    grid = math.log(lam_min) + np.log(1.0 + np.geomspace(1e-3, 1e8, 23))
    values = [risk(g) for g in grid]
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    if hi > lo:
        res = optimize.minimize_scalar(
            risk, bounds=(lo, hi), method="bounded", options={"xatol": 1e-3}
        )
        if res.fun <= values[i]:
            return float(math.exp(res.x))
    return float(math.exp(grid[i]))


def risk_proxy(problem, epsilon, delta, lam):
    """``(lam^2 W^2 + E||b||^2) / (a + lam)^2`` (see :func:`choose_lambda`)."""
    V = noise_moment(problem, epsilon, delta, lam)
    return (lam * lam * problem.coef_norm**2 + V) / (problem.curvature + lam) ** 2


def noise_delta(problem, epsilon, delta, lam="auto"):
    """The ``delta`` to calibrate with: ``0.0`` (pure noise) or ``delta``.

    Pure epsilon-DP implies (epsilon, delta)-DP, so under ``delta > 0`` the
    release may use either noise. The Gaussian's ``E||b||^2`` grows like
    ``k`` against the pure noise's ``k (k + 1)``, but its ``sigma`` carries
    ``sqrt(2 log(1.25 / delta))``: the Gaussian wins in many dimensions, the
    pure noise in few.
    Both are compared on the risk proxy at their own chosen ridge
    (:func:`risk_proxy`, the criterion :func:`choose_lambda` minimizes), or
    at the given ridge; no constant is fitted. A given ridge too small for
    the pure noise (below its :func:`smallest_lambda`) keeps the Gaussian.
    """
    if not delta > 0 or math.isinf(epsilon):
        return delta
    if lam == "auto":
        gauss = risk_proxy(
            problem, epsilon, delta, choose_lambda(problem, epsilon, delta)
        )
        pure = risk_proxy(problem, epsilon, 0.0, choose_lambda(problem, epsilon, 0.0))
    else:
        lam = float(lam)
        if not lam > smallest_lambda(problem, epsilon, 0.0):
            return delta
        gauss = noise_moment(problem, epsilon, delta, lam)
        pure = noise_moment(problem, epsilon, 0.0, lam)
    return 0.0 if pure < gauss else delta


def noise_to_signal(problem, epsilon, delta):
    """``rho = sqrt(E||b||^2) / (a W)`` at the chosen ridge.

    The objective noise's effect on the coefficients (``||b|| / a`` for a
    quadratic of curvature ``a``, before ridge shrinkage) relative to their
    guessed norm ``W``; 0 at ``epsilon = inf``. Public quantities only: the
    statistic of :class:`~skdp.linear_model.PrivateLogisticRegression`'s
    automatic choice.
    """
    if math.isinf(epsilon):
        return 0.0
    delta = noise_delta(problem, epsilon, delta)
    lam = choose_lambda(problem, epsilon, delta)
    V = noise_moment(problem, epsilon, delta, lam)
    return math.sqrt(V) / (problem.curvature * problem.coef_norm)


def calibrate(problem, epsilon, delta, lam="auto"):
    """The ridge, noise and output perturbation of one release.

    Parameters
    ----------
    problem : OPProblem
    epsilon : float
        In (0, inf].
    delta : float
        0 for pure epsilon-DP, else in (0, 1).
    lam : "auto" or float
        ``"auto"``: :func:`choose_lambda`.

    Returns
    -------
    OPCalibration
    """
    if math.isinf(epsilon):
        lam = no_noise_lambda(problem) if lam == "auto" else float(lam)
        return OPCalibration(lam=lam, jacobian_epsilon=0.0, tau=0.0)
    if lam == "auto":
        lam = choose_lambda(problem, epsilon, delta)
    lam = float(lam)
    eps_j = problem.jacobian_epsilon(lam)
    if delta > 0:
        sigma = gaussian_sigma(problem, epsilon, delta, lam)
        tau = gradient_tolerance(
            problem.n_samples,
            problem.row_gradient_bound,
            sigma * math.sqrt(problem.noise_dim),
        )
        return OPCalibration(
            lam=lam,
            jacobian_epsilon=eps_j,
            tau=tau,
            noise_std=sigma,
            output_noise_std=OUTPUT_NOISE_MULTIPLIER * 2.0 * tau / lam,
            event=_gaussian_event(problem, lam, sigma),
        )
    gamma = pure_rate(problem, epsilon, lam)
    tau = gradient_tolerance(
        problem.n_samples, problem.row_gradient_bound, problem.noise_dim / gamma
    )
    return OPCalibration(
        lam=lam,
        jacobian_epsilon=eps_j,
        tau=tau,
        noise_rate=gamma,
        output_rate=OUTPUT_EPSILON_SHARE * epsilon / (2.0 * tau / lam),
    )


def no_noise_lambda(problem):
    """The ridge at ``epsilon = inf``: ``1e-6 a``, a tiny multiple of the
    curvature guess, only to keep the minimizer unique (separable data)."""
    return 1e-6 * problem.curvature
