"""The exponential mechanism, sampled in log space with the Gumbel-max trick."""

import numpy as np
from scipy import special

from skdp.mechanisms._base import Mechanism
from skdp.utils import check_epsilon, check_sensitivity, noise_generator


class ExponentialMechanism(Mechanism):
    r"""Select a candidate with probability proportional to exp(eps u / (2 Delta)).

    Parameters
    ----------
    epsilon : float
        In (0, inf]. ``inf`` returns an argmax (ties broken uniformly at random).
    sensitivity : float, default=1.0
        Sensitivity Delta of the utility of any candidate.
    monotonic : bool, default=False
        If every utility moves in the same direction between neighbours, the factor
        2 can be dropped: P ∝ exp(eps u / Delta) is still eps-DP.

    Notes
    -----
    The ratio of selection probabilities between neighbours is at most
    :math:`e^{\varepsilon/2}` from the numerator times :math:`e^{\varepsilon/2}` from
    the normalizer, hence :math:`\varepsilon`-DP (McSherry & Talwar 2007). Sampling adds
    i.i.d. Gumbel noise to the log weights and takes the argmax, which draws exactly
    from the softmax and never exponentiates, so huge utilities or epsilons do not
    overflow. Utilities of ``-inf`` mark excluded candidates.

    Examples
    --------
    >>> from skdp.mechanisms import ExponentialMechanism
    >>> mech = ExponentialMechanism(epsilon=2.0)
    >>> mech.probabilities([0.0, 1.0]).round(3)
    array([0.269, 0.731])
    """

    def __init__(self, epsilon, sensitivity=1.0, monotonic=False):
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = check_sensitivity(sensitivity)
        self.monotonic = bool(monotonic)
        self.delta = 0.0

    def _repr_params(self):
        return {
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "monotonic": self.monotonic,
        }

    def _log_weights(self, utilities):
        u = np.asarray(utilities, dtype=np.float64)
        if u.ndim == 0 or u.shape[-1] == 0:
            raise ValueError("utilities must have at least one candidate (last axis).")
        if np.any(np.isnan(u)) or np.any(u == np.inf):
            raise ValueError("utilities must not contain NaN or +inf.")
        if np.any(np.all(u == -np.inf, axis=-1)):
            raise ValueError("utilities must have at least one finite candidate.")
        factor = 1.0 if self.monotonic else 2.0
        if np.isinf(self.epsilon):
            # argmax with uniform tie-breaking: best candidates weigh 1, others 0
            best = u == u.max(axis=-1, keepdims=True)
            return np.where(best, 0.0, -np.inf)
        return self.epsilon * u / (factor * self.sensitivity)

    def probabilities(self, utilities):
        """Selection probabilities (softmax over the last axis, log-space stable)."""
        logw = self._log_weights(utilities)
        return np.exp(logw - special.logsumexp(logw, axis=-1, keepdims=True))

    def select(self, utilities, random_state=None):
        """Index of the selected candidate (one per leading index of ``utilities``)."""
        rng = noise_generator(random_state)
        logw = self._log_weights(utilities)
        return np.argmax(logw + rng.gumbel(size=logw.shape), axis=-1)
