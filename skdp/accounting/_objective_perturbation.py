"""The privacy profile of objective perturbation with Gaussian noise, as an event.

:class:`ObjectivePerturbationEvent` describes one release of
:class:`~skdp.linear_model.OPLogisticRegression` with ``delta > 0``: the
estimator calibrates its noise with :meth:`~ObjectivePerturbationEvent.delta`,
and a PLD accountant (``track_budget(accountant="pld")``) composes it through
:meth:`~ObjectivePerturbationEvent.privacy_loss_survival`, so the release is
accounted for as what it is, not only by its ``(epsilon, delta)``.

It lives in its own module; the only line outside it registers the class with
the ledger's wire format (``_EVENT_TYPES`` in :mod:`skdp.accounting._events`).
"""

import functools
import math
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from scipy import optimize, special

from skdp.accounting import _events
from skdp.accounting._events import PrivacyEvent, _check_positive

__all__ = ["ObjectivePerturbationEvent"]

# the survival bound of T is below 1e-300 beyond this many units
_T_MAX = 40.0
# tail mass of the privacy loss left to the PLD's infinity mass (pessimistic)
_PLD_TAIL = 1e-15
# 32-point Gauss-Legendre rule on [-1, 1]
_GL_X, _GL_W = np.polynomial.legendre.leggauss(32)


@dataclass(frozen=True)
class ObjectivePerturbationEvent(PrivacyEvent):
    """One objective-perturbation release with Gaussian noise (replace-one).

    Parameters
    ----------
    jacobian_epsilon : float
        ``eps_J >= 0``, the bound on the log-Jacobian ratio of the two output
        densities (e.g. ``log(1 + R^2 / (4 lambda))`` for binary logistic
        regression).
    noise_multiplier : float
        ``sigma / Delta``: the noise standard deviation of the linear
        perturbation over the replace-one L2 sensitivity ``Delta`` of the loss
        gradient (``mu = 1 / noise_multiplier``).
    tail_terms : int
        ``K``: the noise term of the privacy loss is at most ``mu T`` with
        ``P(T > a) <= K Phi(-a)`` (2 for binary, ``2 (C - 1)`` for ``C``
        classes).
    chi_df : int
        ``k``: also ``P(T > a) <= P(chi_k > a)`` (the dimension of the span of
        the gradient differences: 2, or ``2 (C - 1)``).
    output_noise_multiplier : float, default=inf
        ``sigma_out / Delta_out`` of a Gaussian output perturbation composed
        with the release (approximate minima perturbation); ``inf`` for none.

    Notes
    -----
    **Privacy loss.** For neighbours ``D, D'`` and an output ``theta`` the
    privacy loss ``log p_D(theta) / p_D'(theta)`` is at most
    ``l = eps_J + mu^2 / 2 + mu T`` where, under ``theta ~ M(D)``, ``T >= 0``
    satisfies ``P(T > a) <= S_T(a) = min(1, K Phi(-a), P(chi_k > a))`` (the
    derivation is in :class:`~skdp.linear_model.OPLogisticRegression`).
    Hence the law of ``l`` with survival ``S_l(t) = S_T((t - eps_J - mu^2/2) /
    mu)`` stochastically dominates the privacy loss of both ``M(D)`` against
    ``M(D')`` and the reverse (replace-one is symmetric), and since
    ``(1 - e^(eps - l))_+`` is non-decreasing in ``l``, for every real eps::

        delta(eps) = E[(1 - e^(eps - l))_+]
                   = (1 - e^kappa)_+
                     + int_0^inf mu e^(kappa - mu a) 1{kappa < mu a} S_T(a) da
        with kappa = eps - eps_J - mu^2 / 2

    (integration by parts). This is the hockey-stick divergence of a pair
    ``(P, Q)``: ``P`` the law of ``l``, ``dQ/dP = e^(-l)`` and the missing mass
    ``1 - E_P[e^(-l)]`` of ``Q`` put on a point outside ``P``'s support (which
    changes no divergence ``H_(e^eps)(P || Q)``). So ``(P, Q)`` is a dominating
    pair of the release (Zhu, Dong & Wang 2022) and composes as one: the PLD
    accountant uses the pessimistic discretization of ``l``.

    **Output perturbation.** With a Gaussian output step of multiplier
    ``m`` (a mechanism of its own, adaptively composed), the loss becomes
    ``l + l_G`` with ``l_G ~ N(1/(2 m^2), 1/m^2)`` independent; the integral
    above then has ``delta_G(kappa - mu a)`` (the Gaussian mechanism's profile,
    Balle & Wang 2018) in place of ``(1 - e^(kappa - mu a))_+``::

        delta(eps) = delta_G(kappa) + int_0^inf mu e^(kappa - mu a)
                     Phi(-(kappa - mu a) m - 1/(2m)) S_T(a) da.

    References
    ----------
    Redberg, Koskela & Wang (2023). Improving the privacy and practicality of
    objective perturbation for differentially private linear learners. NeurIPS.

    Zhu, Dong & Wang (2022). Optimal accounting of differential privacy via
    characteristic function. AISTATS.

    Examples
    --------
    >>> from skdp.accounting import ObjectivePerturbationEvent
    >>> event = ObjectivePerturbationEvent(0.1, 4.0, 2, 2)
    >>> bool(event.delta(1.0) < 1e-3)
    True
    """

    jacobian_epsilon: float
    noise_multiplier: float
    tail_terms: int
    chi_df: int
    output_noise_multiplier: float = math.inf
    _fields = (
        "jacobian_epsilon",
        "noise_multiplier",
        "tail_terms",
        "chi_df",
        "output_noise_multiplier",
    )

    def __post_init__(self):
        for name in ("jacobian_epsilon", "noise_multiplier"):
            object.__setattr__(self, name, _check_positive(name, getattr(self, name)))
        m = _check_positive(
            "output_noise_multiplier", self.output_noise_multiplier, allow_inf=True
        )
        if not m > 0:
            raise ValueError("output_noise_multiplier must be > 0 (inf: none).")
        object.__setattr__(self, "output_noise_multiplier", m)
        for name in ("tail_terms", "chi_df"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}.")
            object.__setattr__(self, name, int(value))

    # ------------------------------------------------------------ the loss
    @property
    def mu(self):
        """``Delta / sigma``."""
        return math.inf if self.noise_multiplier == 0 else 1.0 / self.noise_multiplier

    @property
    def is_non_private(self):
        return self.noise_multiplier == 0

    def log_survival_t(self, a):
        """``log S_T(a)``: the log of the survival bound of ``T`` (vectorized)."""
        a = np.asarray(a, dtype=np.float64)
        pos = np.maximum(a, 0.0)
        union = math.log(self.tail_terms) + special.log_ndtr(-pos)
        chi = _log_chi_survival(pos, self.chi_df)
        out = np.minimum(0.0, np.minimum(union, chi))
        return np.where(a < 0, 0.0, out)

    def privacy_loss_survival(self, t):
        """``P(l > t)`` for the dominating privacy loss ``l`` (vectorized)."""
        a = (np.asarray(t, dtype=np.float64) - self._loss_floor) / self.mu
        return np.exp(self.log_survival_t(a))

    @property
    def _loss_floor(self):
        return self.jacobian_epsilon + 0.5 * self.mu**2

    # --------------------------------------------------------- the profile
    def delta(self, epsilon):
        """The privacy profile: ``delta(epsilon)`` of the dominating pair.

        Parameters
        ----------
        epsilon : float
            Any real number (the profile is defined for negative ones too).

        Returns
        -------
        float
            An upper bound on ``delta`` for which the release is
            ``(epsilon, delta)``-DP, computed by adaptive quadrature (relative
            accuracy about 1e-10).
        """
        mu = self.mu
        m = self.output_noise_multiplier
        kappa = float(epsilon) - self._loss_floor
        finite_m = math.isfinite(m)
        if finite_m:
            base = _gaussian_profile(kappa, m)
            lo = max(0.0, (kappa - 40.0 / m) / mu)
        else:
            base = -math.expm1(kappa) if kappa < 0 else 0.0
            lo = max(0.0, kappa / mu)
        if lo >= _T_MAX:
            return float(min(base, 1.0))
        hi = lo + _T_MAX
        # composite Gauss-Legendre, with nodes where the integrand bends: the
        # kinks of S_T's minimum and (output noise) the step of Phi at kappa/mu
        edges = [lo + w for w in (0, 0.25, 0.5, 1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32)]
        edges += list(self._kinks)
        if finite_m:
            centre, width = kappa / mu, 1.0 / (m * mu)
            edges += [centre + j * width for j in (-16, -8, -4, -2, -1, 0, 1, 2, 4)]
        edges = np.unique(np.clip(np.array(edges + [hi]), lo, hi))
        left, right = edges[:-1], edges[1:]
        a = (left[:, None] + right[:, None]) / 2 + np.outer(right - left, _GL_X) / 2
        weights = np.outer(right - left, _GL_W) / 2
        log_f = math.log(mu) + kappa - mu * a + self.log_survival_t(a)
        if finite_m:
            log_f = log_f + special.log_ndtr(-(kappa - mu * a) * m - 0.5 / m)
        scale = float(log_f.max())
        if not math.isfinite(scale):  # no mass left (below 1e-300)
            return float(min(base, 1.0))
        total = float(np.sum(weights * np.exp(log_f - scale)))
        return float(min(base + math.exp(scale) * total, 1.0))

    @property
    def _kinks(self):
        return _kinks(self.tail_terms, self.chi_df)

    # ------------------------------------------------------ the accountant
    def to_dp_event(self):
        import dp_accounting

        return dp_accounting.UnsupportedDpEvent()

    def _pld(self, interval):
        from dp_accounting.pld import privacy_loss_distribution as pld

        # pessimistic: the loss in ((j - 1) h, j h] is counted as j h
        floor = self._loss_floor
        low = math.floor(floor / interval)
        # T beyond a_max has survival below the tail left to infinity_mass
        a_max = optimize.brentq(
            lambda a: float(self.log_survival_t(a)) - math.log(_PLD_TAIL), 0.0, _T_MAX
        )
        t = np.arange(low, math.ceil((floor + self.mu * a_max) / interval) + 1)
        survival = self.privacy_loss_survival(t * interval)
        mass = survival[:-1] - survival[1:]
        keep = mass > 0
        loss_probs = dict(zip((t[1:][keep]).tolist(), mass[keep].tolist()))
        infinity = float(survival[-1])
        out = pld.PrivacyLossDistribution.create_from_rounded_probability(
            loss_probs, infinity, interval, pessimistic_estimate=True
        )
        if math.isfinite(self.output_noise_multiplier):
            out = out.compose(
                pld.from_gaussian_mechanism(
                    self.output_noise_multiplier,
                    value_discretization_interval=interval,
                )
            )
        return out


def _log_chi_survival(a, df):
    """``log P(chi_df > a)`` (vectorized; -inf below 1e-308)."""
    with np.errstate(divide="ignore"):
        return np.log(special.gammaincc(0.5 * df, 0.5 * a * a))


@functools.lru_cache(maxsize=256)
def _kinks(tail_terms, chi_df):
    """Where ``S_T``'s minimum switches branch (1, K Phi(-a), chi)."""
    kinks = []
    if tail_terms > 1:
        kinks.append(float(special.ndtri(1.0 - 1.0 / tail_terms)))

    def gap(a):
        union = math.log(tail_terms) + special.log_ndtr(-a)
        return union - _log_chi_survival(a, chi_df)

    grid = np.linspace(1e-6, 30.0, 301)
    values = gap(grid)
    for i in np.flatnonzero(np.sign(values[:-1]) != np.sign(values[1:])):
        kinks.append(optimize.brentq(lambda a: float(gap(a)), grid[i], grid[i + 1]))
    return tuple(kinks)


def _gaussian_profile(epsilon, noise_multiplier):
    """delta(epsilon) of the Gaussian mechanism of multiplier ``sigma / Delta``."""
    m = noise_multiplier
    first = special.ndtr(-epsilon * m + 0.5 / m)
    second = math.exp(epsilon + special.log_ndtr(-epsilon * m - 0.5 / m))
    return max(float(first - second), 0.0)


# the ledger protocol rebuilds events by class name
_events._EVENT_TYPES[ObjectivePerturbationEvent.__name__] = ObjectivePerturbationEvent
