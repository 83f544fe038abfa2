"""Noise shares: how the contributors of a coefficient group split its noise.

A cross-party coefficient is noised by the parties of its pair, each adding a
*share* that no one else sees. Two ways to draw the shares:

``"distributed"`` (sum to the mechanism): the ``m`` shares sum exactly to the
mechanism's noise. Nobody knows the total, but a contributor that knows its own
share and obtains the noisy coefficient (a party colluding with the server) sees
it with only ``m - 1`` shares of noise on it: less than the mechanism's.

``"threshold"`` (any ``m - 1`` carry the mechanism): every ``m - 1`` of the ``m``
shares already sum to the mechanism's noise, so a contributor that removes its
own share still faces the full mechanism; the total is the mechanism's noise
plus one independent extra share (variance ``m / (m - 1)`` times the
mechanism's). With one contributor (a party's own coefficients) both are the
mechanism itself.

Notes
-----
**Discrete Laplace** (the Laplace mechanism's lattice noise): on the lattice
``g Z`` the mechanism adds ``g (G_1 - G_2)`` with ``G_i`` i.i.d. geometric,
``P[G = j] = (1 - q) q^j``, ``q = exp(-g / b)``. The geometric law is the
negative binomial ``NB(1, q)`` (failures before one success) and the negative
binomial is infinitely divisible in its shape: for independent
``N_i ~ NB(r_i, q)``, ``sum_i N_i ~ NB(sum_i r_i, q)`` (the probability
generating functions ``((1 - q) / (1 - q s))^{r_i}`` multiply). Hence

* a share ``g (N - N')`` with ``N, N' ~ NB(r, q)`` i.i.d.;
* ``"distributed"``: ``r = 1 / m``, so the ``m`` shares sum to
  ``g (NB(1) - NB(1)) = g (G_1 - G_2)``, the mechanism exactly;
* ``"threshold"``: ``r = 1 / (m - 1)``, so any ``m - 1`` shares sum to the
  mechanism exactly, and all ``m`` to ``g (NB(m/(m-1)) - NB(m/(m-1)))``, whose
  variance ``2 g^2 (m/(m-1)) q / (1 - q)^2`` is ``m / (m - 1)`` times the
  mechanism's (``Var NB(r, q) = r q / (1 - q)^2``). Every share is on the lattice,
  so sums stay exact in floating point.

**Gaussian**: ``N(0, sigma^2 / m)`` shares (``"distributed"``) or
``N(0, sigma^2 / (m - 1))`` (``"threshold"``): any ``m - 1`` of the latter sum to
``N(0, sigma^2)``, all ``m`` to ``N(0, sigma^2 m / (m - 1))``.

**Guarantee.** Adding independent noise to the output of an
``(epsilon, delta)``-DP mechanism is post-processing. With ``"threshold"`` shares,
the view of a contributor ``j`` that learns the noisy coefficient is
``exact + sum_{i != j} share_i``, which *is* the mechanism, so it is
``(epsilon, delta)``-DP; everyone else sees that plus ``share_j``. Two colluding
contributors of the same group remove two shares: the rest carries
``(m - 2) / (m - 1)`` of the mechanism's shape (nothing when ``m = 2``).

References
----------
Inusah & Kozubowski (2006). A discrete analogue of the Laplace distribution.
Journal of Statistical Planning and Inference 136(3), 1090-1102.
Goryczka & Xiong (2017). A comprehensive comparison of multiparty secure additions
with differential privacy. IEEE Transactions on Dependable and Secure Computing
14(5), 463-477.
"""

import math

import numpy as np

__all__ = ["noise_share", "shares_per_mechanism"]


def shares_per_mechanism(n_contributors, noise_generation):
    """How many shares make up the mechanism's noise: ``m`` (distributed),
    ``m - 1`` (threshold), 1 for a single owner. A share's negative-binomial
    shape (and Gaussian variance fraction) is its inverse."""
    m = int(n_contributors)
    if m < 1:
        raise ValueError(f"n_contributors must be >= 1, got {n_contributors!r}.")
    if m == 1:
        return 1
    if noise_generation == "threshold":
        return m - 1
    if noise_generation == "distributed":
        return m
    raise ValueError(
        "noise_generation must be 'threshold' or 'distributed' for shares, got "
        f"{noise_generation!r}."
    )


def noise_share(mech, size, n_contributors, noise_generation, rng):
    """One contributor's share of ``mech``'s noise on ``size`` coordinates.

    Parameters
    ----------
    mech : LaplaceMechanism or GaussianMechanism
    size : int
    n_contributors : int
        ``m``, the number of contributors of the group.
    noise_generation : {"threshold", "distributed"}
    rng : numpy.random.Generator
        The contributor's own generator.
    """
    if n_contributors == 1:
        # a single owner adds the mechanism's noise, drawn as the mechanism does
        return np.asarray(mech.sample_noise(size, rng), dtype=np.float64)
    divisor = shares_per_mechanism(n_contributors, noise_generation)
    if hasattr(mech, "granularity"):
        if mech.scale == 0:
            return np.zeros(size)
        q_success = -math.expm1(-mech.granularity / mech.scale)
        r = 1.0 / divisor
        diff = rng.negative_binomial(r, q_success, size) - rng.negative_binomial(
            r, q_success, size
        )
        return diff.astype(np.float64) * mech.granularity
    sigma = getattr(mech, "sigma", 0.0)
    if sigma == 0:
        return np.zeros(size)
    return rng.normal(0.0, sigma / math.sqrt(divisor), size)
