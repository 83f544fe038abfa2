"""Discrete Laplace (two-sided geometric) noise on integer counts (skdp-internal).

Shared by the private histograms (:mod:`skdp.tools`) and the leaf counts of the
private trees (:mod:`skdp.tree`, :mod:`skdp.ensemble`).
"""

import math

__all__ = ["integer_laplace_noise"]


def integer_laplace_noise(shape, epsilon, sensitivity, rng):
    """Two-sided geometric (discrete Laplace) noise on the integers.

    ``P(k) ∝ exp(-epsilon |k| / sensitivity)``, drawn as the difference of two
    geometric variables with success probability ``1 - exp(-epsilon /
    sensitivity)``. For integer counts of L1 sensitivity ``sensitivity``, a
    shift of the vector by ``s`` (``|s|_1 <= sensitivity``) changes the
    probability of any output by at most ``exp(epsilon)``: pure epsilon-DP,
    with integer outputs (no floating-point support to leak through; the
    probabilities are numpy's inversion of the geometric, as for
    :class:`~skdp.mechanisms.LaplaceMechanism`).
    """
    p = -math.expm1(-epsilon / sensitivity)
    return rng.geometric(p, size=shape) - rng.geometric(p, size=shape)
