"""The Gaussian mechanism with three calibrations of sigma."""

import math

import numpy as np

from skdp._gaussian_calibration import analytic_sigma
from skdp.accounting import GaussianEvent
from skdp.mechanisms._base import Mechanism
from skdp.utils import check_delta, check_epsilon, check_sensitivity, noise_generator

CALIBRATIONS = ("analytic", "classic", "simple")


class GaussianMechanism(Mechanism):
    r"""(epsilon, delta)-DP Gaussian mechanism for values with bounded L2 sensitivity.

    Parameters
    ----------
    epsilon : float
        In (0, inf]. ``inf`` adds no noise.
    delta : float
        In (0, 1).
    sensitivity : float, default=1.0
        L2 sensitivity of the released vector.
    calibration : {"analytic", "classic", "simple"}, default="analytic"
        How sigma is chosen:

        - ``"analytic"`` (Balle & Wang 2018): the smallest sigma satisfying the exact
          condition, valid for every epsilon; 20-37% less noise than the others at
          epsilon <= 1.
        - ``"classic"`` (Dwork & Roth 2014, Thm A.1):
          ``sigma = D sqrt(2 ln(1.25/delta)) / eps``; valid only for eps < 1, so a
          larger epsilon raises ValueError.
        - ``"simple"`` (a simpler sufficient bound):
          ``sigma^2 = D^2 (2 ln(1/delta) + eps) / eps^2``; proven for eps, delta
          in (0, 1), so a larger epsilon raises too.

    Attributes
    ----------
    sigma : float
        Noise standard deviation per coordinate.
    variance : float
        ``sigma ** 2``.

    Notes
    -----
    Every calibration satisfies (Balle & Wang 2018, Thm 8), for sensitivity
    :math:`\Delta` and noise scale :math:`\sigma`:

    .. math::

        \Phi\left(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\right)
        - e^{\varepsilon}\,
        \Phi\left(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\right)
        \le \delta,

    which is necessary and sufficient; the tests check it over a grid. Noise is drawn
    with numpy's floating-point normal sampler; unlike :class:`LaplaceMechanism` no
    lattice defence against floating-point attacks is applied.

    References
    ----------
    Balle & Wang (2018). Improving the Gaussian mechanism for differential privacy:
    analytical calibration and optimal denoising. ICML.

    Examples
    --------
    >>> from skdp.mechanisms import GaussianMechanism
    >>> round(GaussianMechanism(epsilon=1.0, delta=1e-5).sigma, 2)
    3.73
    """

    def __init__(self, epsilon, delta, sensitivity=1.0, calibration="analytic"):
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta, allow_zero=False)
        self.sensitivity = check_sensitivity(sensitivity)
        if calibration not in CALIBRATIONS:
            raise ValueError(
                f"calibration must be one of {CALIBRATIONS}, got {calibration!r}."
            )
        self.calibration = calibration
        self.sigma = self._calibrate()

    def _repr_params(self):
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sensitivity": self.sensitivity,
            "calibration": self.calibration,
        }

    def _calibrate(self):
        eps, delta, sens = self.epsilon, self.delta, self.sensitivity
        if math.isinf(eps):
            return 0.0
        if self.calibration == "analytic":
            return analytic_sigma(eps, delta, sens)
        if eps >= 1:
            raise ValueError(
                f"calibration={self.calibration!r} is only valid for epsilon < 1, got "
                f"epsilon={eps}; use calibration='analytic'."
            )
        if self.calibration == "classic":
            return sens * math.sqrt(2 * math.log(1.25 / delta)) / eps
        return sens * math.sqrt(2 * math.log(1 / delta) + eps) / eps

    @property
    def variance(self):
        return self.sigma**2

    @property
    def privacy_event(self):
        """``GaussianEvent(sigma / sensitivity)``: its exact privacy loss."""
        return GaussianEvent(self.sigma / self.sensitivity)

    def sample_noise(self, size, random_state=None):
        rng = noise_generator(random_state)
        return rng.normal(0.0, self.sigma, size=size) if self.sigma else np.zeros(size)

    def randomize(self, value, random_state=None):
        """Return ``value`` (scalar or array) plus i.i.d. N(0, sigma^2) noise."""
        value = np.asarray(value, dtype=np.float64)
        if not np.all(np.isfinite(value)):
            raise ValueError("value must be finite to be randomized.")
        out = value + self.sample_noise(value.shape, random_state)
        return float(out) if out.ndim == 0 else out
