"""Privacy accounting of private hyperparameter selection (skdp-internal).

Random stopping (Liu & Talwar 2019; Papernot & Steinke 2022): run a random
number ``K`` of independent base runs, each ``eps0``-DP and returning ``(model,
noisy score)``; release only the best. With ``f(x) = E[x^K]`` the probability
generating function of ``K``, the output of the whole has density
``f'(F(s))`` with respect to one base run's output distribution, where ``F(s)``
is the probability that one base run scores at most ``s`` (for a discrete
score, ``f(F(s)) - f(F(s^-))`` by a total order of the outputs; see
:func:`pure_selection_epsilon`). Every bound below follows from that identity.
"""

import math

import numpy as np
from scipy.optimize import brentq, minimize_scalar
from scipy.special import gammaln, logsumexp

__all__ = [
    "expected_trials",
    "logarithmic_pmf",
    "tnb_gamma",
    "tnb_pmf",
    "pure_dp_rdp",
    "pure_selection_epsilon",
    "rdp_to_dp",
    "tnb_selection_rdp",
    "tnb_selection_dp",
]

# where the ratio f'(x_max(x)) / f'(x) is bounded: dense in the middle and
# geometric towards both ends (the ratio's supremum is near 1 for heavy tails
# and near 0 for light ones)
_GRID = np.unique(
    np.concatenate(
        [
            np.linspace(0.0, 1.0, 4001),
            np.geomspace(1e-12, 1.0, 4000),
            1.0 - np.geomspace(1e-12, 1.0, 4000),
        ]
    ).clip(0.0, 1.0)
)


def logarithmic_pmf(gamma, max_trials=None):
    """``P[K = k]`` of the logarithmic distribution, optionally capped.

    ``P[K = k] = (1 - gamma)^k / (k log(1 / gamma))``, ``k >= 1``: the truncated
    negative binomial distribution of Papernot & Steinke with ``eta = 0``. With
    ``max_trials``, the distribution conditioned on ``K <= max_trials`` (renormalised).

    Returns
    -------
    ndarray of shape (max_trials,)
        ``pmf[k - 1] = P[K = k]``. Without ``max_trials``, up to the ``k`` where
        the remaining mass is below 1e-16 (for display and means only).
    """
    if not 0.0 < gamma < 1.0:
        raise ValueError(f"gamma must be in (0, 1), got {gamma!r}.")
    if max_trials is None:
        max_trials = int(min(1e6, max(10, 40.0 / gamma)))
    k = np.arange(1, int(max_trials) + 1)
    log_p = k * math.log1p(-gamma) - np.log(k)
    return np.exp(log_p - logsumexp(log_p))


def tnb_pmf(eta, gamma, max_trials=None):
    """``P[K = k]`` of the truncated negative binomial ``TNB(eta, gamma)``.

    ``P[K = k] ∝ (1 - gamma)^k prod_{l < k} (l + eta) / (l + 1)`` for ``k >= 1``
    (Papernot & Steinke 2022; ``eta = 0``: logarithmic, ``eta = 1``:
    geometric), ``eta >= 0``. With ``max_trials``: conditioned on ``K <=
    max_trials``.
    """
    if eta == 0:
        return logarithmic_pmf(gamma, max_trials)
    if not (eta > 0 and 0.0 < gamma < 1.0):
        raise ValueError(f"need eta >= 0 and gamma in (0, 1), got {eta!r}, {gamma!r}.")
    if max_trials is None:
        max_trials = int(min(1e6, max(10, (40.0 + 10 * eta) / gamma)))
    k = np.arange(1, int(max_trials) + 1)
    log_p = k * math.log1p(-gamma) + gammaln(k + eta) - gammaln(k + 1)
    return np.exp(log_p - logsumexp(log_p))


def tnb_gamma(eta, mean):
    """The ``gamma`` of the uncapped ``TNB(eta, gamma)`` with ``E[K] = mean``."""
    if mean <= 1.0:
        raise ValueError(f"the mean number of trials must be > 1, got {mean!r}.")
    return math.exp(
        brentq(
            lambda lg: math.log(_tnb_mean(eta, math.exp(lg))) - math.log(mean),
            -50.0,
            -1e-9,
        )
    )


def expected_trials(pmf):
    """``E[K]`` of a pmf given as ``pmf[k - 1] = P[K = k]``."""
    return float(np.dot(np.arange(1, len(pmf) + 1), pmf))


def _generating_derivative(pmf, x):
    # f'(x) = sum_k k p_k x^(k-1), by Horner's rule (highest degree first)
    coefficients = (np.arange(1, len(pmf) + 1) * pmf)[::-1]
    return np.polyval(coefficients, x)


def pure_selection_epsilon(eps0, pmf):
    """Pure-DP guarantee of releasing the best of ``K ~ pmf`` ``eps0``-DP runs.

    Parameters
    ----------
    eps0 : float
        Each base run's pure epsilon.
    pmf : ndarray
        ``pmf[k - 1] = P[K = k]``, finite support, ``P[K = 1] > 0``.

    Returns
    -------
    float
        ``eps0 + log sup_x f'(x_max(x)) / f'(x)``, with ``x_max(x) =
        min(e^eps0 x, 1 - e^-eps0 (1 - x))``, bounded from above on a grid
        (on ``[x_i, x_{i+1}]`` the ratio is at most ``f'(x_max(x_{i+1})) /
        f'(x_i)``, ``f'`` being increasing), so the value returned is a valid
        bound, not an estimate.

    Notes
    -----
    For an output ``y`` let ``a = P[Q(D) < y]``, ``b = P[Q(D) <= y]`` (a total
    order of the base run's outputs: by score, ties by any fixed order), and
    ``a', b'`` the same on the neighbour ``D'``. Then ``P[A(D) = y] = f(b) - f(a)
    = (b - a) int_0^1 f'(a + (b - a) u) du``. By ``eps0``-DP applied to the
    events ``{= y}``, ``{< y}``, ``{<= y}``, ``{>= y}``, ``{> y}``: ``b - a <=
    e^eps0 (b' - a')`` and every ``t = a + (b - a) u`` satisfies ``t <= e^eps0
    t'`` and ``1 - t >= e^-eps0 (1 - t')`` with ``t' = a' + (b' - a') u``, so
    ``t <= x_max(t')`` and ``f'(t) <= R f'(t')`` with ``R`` the supremum above.
    Hence ``P[A(D) = y] <= e^eps0 R P[A(D') = y]`` (continuous outputs: the same
    with densities). For the geometric distribution ``R <= e^(2 eps0)``
    (Liu & Talwar's ``3 eps0``); for the truncated negative binomial ``R <=
    e^((1 + eta) eps0)`` (Papernot & Steinke's ``(2 + eta) eps0``); a cap on
    ``K`` lowers ``R``.
    """
    pmf = np.asarray(pmf, dtype=float)
    x = _GRID  # x[0] = 0
    x_max = np.minimum(math.exp(eps0) * x, 1.0 - math.exp(-eps0) * (1.0 - x))
    lower = _generating_derivative(pmf, x[1:-1])
    upper = _generating_derivative(pmf, x_max[2:])
    # on [0, x_1]: x_max(x) <= e^eps0 x, and with c_k = k p_k and k0 the
    # smallest k with p_k > 0, f'(e^eps0 x) / f'(x) <= e^((k0 - 1) eps0) (1 +
    # sum_{k > k0} c_k e^((k - k0) eps0) x_1^(k - k0) / c_k0)
    k = np.arange(1, len(pmf) + 1)
    k0 = int(np.flatnonzero(pmf > 0)[0]) + 1
    c = k * pmf
    tail = k > k0
    first = (k0 - 1) * eps0 + math.log1p(
        float(
            np.sum(c[tail] * np.exp((k[tail] - k0) * (eps0 + math.log(x[1]))))
            / c[k0 - 1]
        )
    )
    return float(eps0 + max(first, float(np.max(np.log(upper / lower)))))


def pure_dp_rdp(eps0, order):
    """The Renyi divergence of order ``order`` an ``eps0``-DP run can have.

    ``(1 / (order - 1)) log(cosh((order - 1/2) eps0) / cosh(eps0 / 2))``: binary
    randomized response, which every ``eps0``-DP pair of distributions is a
    post-processing of (Kairouz, Oh & Viswanath 2015), attains it. Order 1:
    ``eps0 tanh(eps0 / 2)``.
    """
    if order == 1:
        return eps0 * math.tanh(eps0 / 2.0)

    def log_cosh(z):
        z = abs(z)
        return z + math.log1p(math.exp(-2.0 * z)) - math.log(2.0)

    value = (log_cosh((order - 0.5) * eps0) - log_cosh(eps0 / 2.0)) / (order - 1.0)
    return min(eps0, value)


def _tnb_mean(eta, gamma):
    if eta == 0:
        return (1.0 / gamma - 1.0) / math.log(1.0 / gamma)
    return eta * (1.0 - gamma) / (gamma * (1.0 - gamma**eta))


def tnb_selection_rdp(eps0, eta, gamma, order):
    """Renyi-DP of the best of ``K ~ TNB(eta, gamma)`` ``eps0``-DP runs.

    Papernot & Steinke (2022), Theorem 2: if the base run is ``(lambda,
    eps)``- and ``(lambda_hat, eps_hat)``-RDP, the selection is ``(lambda,
    eps')``-RDP with ``eps' = eps + (1 + eta)(1 - 1/lambda_hat) eps_hat + (1 +
    eta) log(1/gamma) / lambda_hat + log(E[K]) / (lambda - 1)``; minimised here
    over ``lambda_hat`` in ``[1, 10^4]``, the base run's RDP being
    :func:`pure_dp_rdp` (uncapped ``K``).
    """
    if order <= 1:
        raise ValueError(f"order must be > 1, got {order!r}.")

    def second(lam_hat):
        return (1.0 + eta) * (
            (1.0 - 1.0 / lam_hat) * pure_dp_rdp(eps0, lam_hat)
            + math.log(1.0 / gamma) / lam_hat
        )

    best = minimize_scalar(second, bounds=(1.0, 1e4), method="bounded")
    second_term = min(best.fun, second(1.0), second(1e4))
    return (
        pure_dp_rdp(eps0, order)
        + second_term
        + math.log(_tnb_mean(eta, gamma)) / (order - 1.0)
    )


def rdp_to_dp(rdp, order, delta):
    """``(eps, delta)``-DP from ``(order, rdp)``-RDP.

    Canonne, Kamath & Steinke (2020), Proposition 12: ``eps = rdp + log((order -
    1) / order) - (log delta + log order) / (order - 1)``.
    """
    return (
        rdp
        + math.log((order - 1.0) / order)
        - (math.log(delta) + math.log(order)) / (order - 1.0)
    )


_ORDERS = np.exp(np.linspace(math.log(1.05), math.log(5000.0), 150))


def tnb_selection_dp(eps0, eta, gamma, delta):
    """``eps`` of the ``(eps, delta)`` guarantee of TNB random stopping.

    :func:`tnb_selection_rdp` converted by :func:`rdp_to_dp` and minimised over
    150 Renyi orders in ``[1.05, 5000]``.
    """
    return min(
        rdp_to_dp(tnb_selection_rdp(eps0, eta, gamma, lam), lam, delta)
        for lam in _ORDERS
    )


def largest_base_epsilon(bound, epsilon, rtol=1e-6):
    """The largest ``eps0`` with ``bound(eps0) <= epsilon`` (``bound`` increasing).

    Bisection to a relative precision of ``rtol`` from below: the value returned
    always satisfies the bound.
    """
    lo, hi = 0.0, float(epsilon)
    if bound(hi) <= epsilon:
        return hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if bound(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo <= rtol * hi:
            break
    return lo


def _tnb_log_pmf(eta, gamma, k):
    # for tests: log P[K = k] of the truncated negative binomial, eta > 0
    return (
        gammaln(k + eta)
        - gammaln(eta)
        - gammaln(k + 1)
        + eta * math.log(gamma)
        + k * math.log1p(-gamma)
        - math.log1p(-(gamma**eta))
    )
