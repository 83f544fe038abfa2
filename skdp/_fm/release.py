"""The one noisy release of the statistics."""

import math
from dataclasses import dataclass

import numpy as np

from skdp._fm.domain import symmetric_from_triu, triu_indices
from skdp._fm.sensitivity import balanced_linear_weight, n_released, sensitivity
from skdp.mechanisms import GaussianMechanism, LaplaceMechanism
from skdp.utils import noise_generator

__all__ = [
    "NoisyRelease",
    "add_noise",
    "draw_noise",
    "lattice_granularity",
    "make_mechanism",
    "release",
    "release_noise_std",
    "resolve_linear_weight",
]


def make_mechanism(epsilon, delta, sens, n_coordinates, mechanism="laplace"):
    """The mechanism that releases the whole vector with ``(epsilon, delta)``.

    ``"laplace"``: pure epsilon-DP, L1 sensitivity. Values are rounded to the
    mechanism's output lattice (see :class:`~skdp.mechanisms.LaplaceMechanism`),
    which moves each of the ``n_coordinates`` by at most half a lattice step; the
    mechanism pays ``n_coordinates * granularity`` of extra sensitivity for it (a
    relative ``n 2^-30 / epsilon``) in its calibration. ``"gaussian"``:
    (epsilon, delta)-DP, L2 sensitivity, analytic calibration (Balle & Wang 2018).
    A zero sensitivity (a domain of one point) is replaced by a tiny positive one.
    """
    if mechanism == "laplace":
        return LaplaceMechanism(epsilon, max(sens.l1, 1e-300), dimension=n_coordinates)
    if mechanism == "gaussian":
        return GaussianMechanism(epsilon, delta, max(sens.l2, 1e-300))
    raise ValueError(f"mechanism must be 'laplace' or 'gaussian', got {mechanism!r}.")


def lattice_granularity(mech):
    """Output lattice step of a Laplace mechanism (0 for Gaussian / no noise)."""
    return float(getattr(mech, "granularity", 0.0))


def release_noise_std(mech):
    """Standard deviation of the noise on one released coordinate."""
    return math.sqrt(mech.variance)


def draw_noise(mech, domain, random_state):
    """Draw ``(noise_A, noise_b)`` for one release, in a fixed order.

    ``noise_A`` has the ``p (p + 1) / 2`` upper-triangle entries in
    :func:`triu_indices` order and is drawn first, then ``noise_b`` (``p``
    entries, on the *weighted* scale ``c * b``). The intercept's diagonal entry
    (sensitivity 0) gets exactly 0 (its draw is still made, so the stream does not
    depend on ``fit_intercept`` semantics).
    """
    rng = noise_generator(random_state)
    p = domain.n_coef
    noise_A = np.asarray(mech.sample_noise(p * (p + 1) // 2, rng), dtype=np.float64)
    noise_b = np.asarray(mech.sample_noise(p, rng), dtype=np.float64)
    if domain.fit_intercept:
        noise_A[-1] = 0.0  # the last triu entry is (p - 1, p - 1)
    return noise_A, noise_b


def add_noise(A, b, noise_A, noise_b, *, linear_weight=1.0, granularity=0.0):
    """Release ``A[triu] + noise_A`` and ``(c b + noise_b) / c``.

    Parameters
    ----------
    A : ndarray (p, p)
        Only the upper triangle is read.
    b : ndarray (p,)
    noise_A, noise_b : ndarray
        From :func:`draw_noise` (or an identical draw elsewhere).
    linear_weight : float
        ``c``; must match the one used for the sensitivity.
    granularity : float
        Lattice step of a Laplace mechanism (:func:`lattice_granularity`); the
        exact values are rounded to the lattice before the noise is added, as the
        mechanism's floating-point defence requires. 0 disables rounding.

    Returns
    -------
    A_noisy : ndarray (p, p), symmetric
    b_noisy : ndarray (p,)
    """
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    p = b.shape[0]
    c = float(linear_weight)
    upper = A[triu_indices(p)]
    lin = c * b
    if granularity > 0:
        upper = np.round(upper / granularity) * granularity
        lin = np.round(lin / granularity) * granularity
    A_noisy = symmetric_from_triu(upper + noise_A, p)
    return A_noisy, (lin + noise_b) / c


def resolve_linear_weight(linear_weight, objective, domain, mechanism):
    """``c``: ``"auto"`` (:func:`balanced_linear_weight`, data-free) or the float."""
    if isinstance(linear_weight, str) and linear_weight == "auto":
        return balanced_linear_weight(objective, domain, mechanism)
    return float(linear_weight)


@dataclass(frozen=True)
class NoisyRelease:
    """What one release made public: the noisy ``A`` and ``b``, and its scales."""

    A: np.ndarray
    b: np.ndarray
    sensitivity: object
    linear_weight: float
    noise_std: float
    noise_std_b: float


def release(
    A, b, objective, domain, *, epsilon, delta, mechanism, linear_weight, random_state
):
    """The one noisy release of the central estimators' statistics.

    Calibrates the mechanism to the declared domain, draws the noise
    (:func:`draw_noise`: ``noise_A`` then ``noise_b`` from one generator) and
    adds it (:func:`add_noise`). ``linear_weight`` is ``c`` or ``"auto"``.

    Returns
    -------
    NoisyRelease
    """
    c = resolve_linear_weight(linear_weight, objective, domain, mechanism)
    sens = sensitivity(objective, domain, linear_weight=c)
    mech = make_mechanism(epsilon, delta, sens, n_released(domain), mechanism)
    noise_A, noise_b = draw_noise(mech, domain, random_state)
    A_hat, b_hat = add_noise(
        A, b, noise_A, noise_b, linear_weight=c, granularity=lattice_granularity(mech)
    )
    std = release_noise_std(mech)
    return NoisyRelease(A_hat, b_hat, sens, c, std, std / c)
