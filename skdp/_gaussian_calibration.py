"""Calibration of the Gaussian mechanism: pure maths, no skdp imports.

Shared by :mod:`skdp.accounting` (describing and composing Gaussian releases)
and :mod:`skdp.mechanisms` (which re-exports both functions publicly), so that
the accounting package never imports the mechanisms: the mechanisms sit above
the accounting, which sits above this module.
"""

import math

from scipy import optimize, special

__all__ = ["analytic_sigma", "gaussian_delta"]


def gaussian_delta(sigma, epsilon, sensitivity=1.0):
    """The exact delta of the Gaussian mechanism with noise ``sigma`` at ``epsilon``.

    delta(sigma) = Phi(D/2s - eps s/D) - e^eps Phi(-D/2s - eps s/D)  (Balle & Wang
    2018, Theorem 8), evaluated in log space so that large epsilon does not overflow.
    """
    if sigma <= 0:
        return 1.0
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    first = special.ndtr(a - b)
    second = math.exp(epsilon + special.log_ndtr(-a - b))
    return max(first - second, 0.0)


def analytic_sigma(epsilon, delta, sensitivity=1.0):
    """Smallest sigma with ``gaussian_delta(sigma) <= delta`` (Balle & Wang 2018).

    delta(sigma) decreases in sigma, so the root is bracketed and found with Brent's
    method; the result is then nudged up until the exact condition holds in floating
    point, so the returned sigma is always valid (never below the true root).
    """

    def excess(log_sigma):
        return gaussian_delta(math.exp(log_sigma), epsilon, sensitivity) - delta

    lo, hi = math.log(sensitivity) - 10.0, math.log(sensitivity) + 10.0
    while excess(lo) < 0:
        lo -= 10.0
    while excess(hi) > 0:
        hi += 10.0
    log_sigma = optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-14)
    sigma = math.exp(log_sigma)
    while gaussian_delta(sigma, epsilon, sensitivity) > delta:
        sigma = math.nextafter(sigma, math.inf) * (1 + 1e-12)
    return sigma
