"""Margin losses l(z) for binary classification, z = y f(x).

Each loss knows its value and derivative, whether it is convex, symmetric
(l(z) + l(-z) constant) and, when it is piecewise linear and convex, its affine
pieces l(z) = max_k (slopes[k] z + offsets[k]) (slopes increasing), which is what the
exact solvers use.
"""

import numpy as np
from scipy.special import expit

__all__ = [
    "BarrierHingeLoss",
    "HingeLoss",
    "LogisticLoss",
    "RampLoss",
    "SigmoidLoss",
    "SquaredLoss",
    "UnhingedLoss",
    "make_loss",
]


class MarginLoss:
    """Base class; subclasses set the flags below and implement value/derivative."""

    name = ""
    convex = False
    smooth = False
    # ``symmetric_range``: l(z) + l(-z) is constant for |z| <= symmetric_range
    # (``np.inf``: everywhere, ``0``: not symmetric)
    symmetric_range = 0.0
    symmetric_constant = np.nan

    def value(self, z):
        raise NotImplementedError

    def derivative(self, z):
        raise NotImplementedError

    @property
    def pieces(self):
        """``(slopes, offsets)`` of a convex piecewise-linear loss, else None."""
        return None

    def __call__(self, z):
        return self.value(z)

    def __repr__(self):
        return f"{type(self).__name__}()"


class PiecewiseLinearLoss(MarginLoss):
    """l(z) = max_k (slopes[k] z + offsets[k]): convex, exact LP/QP solvers apply."""

    convex = True

    def __init__(self, slopes, offsets):
        self._slopes = np.asarray(slopes, dtype=np.float64)
        self._offsets = np.asarray(offsets, dtype=np.float64)

    @property
    def pieces(self):
        return self._slopes, self._offsets

    def value(self, z):
        z = np.asarray(z, dtype=np.float64)
        return np.max(z[..., None] * self._slopes + self._offsets, axis=-1)

    def derivative(self, z):
        # a subgradient: the slope of an active piece
        z = np.asarray(z, dtype=np.float64)
        active = np.argmax(z[..., None] * self._slopes + self._offsets, axis=-1)
        return self._slopes[active]


class BarrierHingeLoss(PiecewiseLinearLoss):
    """Barrier hinge l(z) = max(-b(r + z) + r, max(b(z - r), r - z)).

    ``slope`` is the paper's b (steepness of the barrier), ``width`` its r (half
    width of the symmetric region). Convex and piecewise linear;
    l(z) + l(-z) = 2r on [-r, r] for b > 1, r > 0 (Charoenphakdee, Lee & Sugiyama
    2019). Pieces: slope -b left of z = -r b / (b - 1), slope -1 (the unhinged loss
    r - z) up to z = r, slope b after.
    """

    name = "barrier_hinge"

    def __init__(self, slope=200.0, width=50.0):
        if not slope > 1:
            raise ValueError(
                f"barrier_slope (b) must be > 1 for the barrier hinge loss, got "
                f"{slope!r}."
            )
        if not width > 0:
            raise ValueError(
                f"symmetric_width (r) must be > 0 for the barrier hinge loss, got "
                f"{width!r}."
            )
        self.slope, self.width = float(slope), float(width)
        b, r = self.slope, self.width
        self.symmetric_range = r
        self.symmetric_constant = 2 * r
        super().__init__([-b, -1.0, b], [r - b * r, r, -b * r])

    def __repr__(self):
        return f"BarrierHingeLoss(slope={self.slope!r}, width={self.width!r})"


class HingeLoss(PiecewiseLinearLoss):
    """Hinge l(z) = max(0, 1 - z): convex, not symmetric."""

    name = "hinge"

    def __init__(self):
        super().__init__([-1.0, 0.0], [1.0, 0.0])


class UnhingedLoss(PiecewiseLinearLoss):
    """Unhinged l(z) = 1 - z (van Rooyen et al. 2015): convex and symmetric.

    Unbounded below, so it needs an L2 penalty; the minimizer is closed-form.
    """

    name = "unhinged"
    symmetric_range = np.inf
    symmetric_constant = 2.0

    def __init__(self):
        super().__init__([-1.0], [1.0])


class SigmoidLoss(MarginLoss):
    """Sigmoid l(z) = 1 / (1 + e^z): symmetric (l(z) + l(-z) = 1), nonconvex."""

    name = "sigmoid"
    smooth = True
    symmetric_range = np.inf
    symmetric_constant = 1.0

    def value(self, z):
        return expit(-np.asarray(z, dtype=np.float64))

    def derivative(self, z):
        s = expit(-np.asarray(z, dtype=np.float64))
        return -s * (1.0 - s)


class RampLoss(MarginLoss):
    """Ramp l(z) = min(1, max(0, (1 - z) / 2)): symmetric (sum 1), nonconvex.

    Difference of convex functions: l(z) = max(0, 1 - z)/2 - max(0, -1 - z)/2.
    """

    name = "ramp"
    symmetric_range = np.inf
    symmetric_constant = 1.0

    def value(self, z):
        return np.clip((1.0 - np.asarray(z, dtype=np.float64)) / 2.0, 0.0, 1.0)

    def derivative(self, z):
        z = np.asarray(z, dtype=np.float64)
        return np.where(np.abs(z) < 1.0, -0.5, 0.0)


class LogisticLoss(MarginLoss):
    """Logistic l(z) = log(1 + e^{-z}): convex, smooth, proper, not symmetric."""

    name = "logistic"
    convex = True
    smooth = True

    def value(self, z):
        return np.logaddexp(0.0, -np.asarray(z, dtype=np.float64))

    def derivative(self, z):
        return -expit(-np.asarray(z, dtype=np.float64))


class SquaredLoss(MarginLoss):
    """Squared l(z) = (1 - z)^2: convex, smooth, not symmetric."""

    name = "squared"
    convex = True
    smooth = True

    def value(self, z):
        return (1.0 - np.asarray(z, dtype=np.float64)) ** 2

    def derivative(self, z):
        return -2.0 * (1.0 - np.asarray(z, dtype=np.float64))


LOSSES = {
    "barrier_hinge": BarrierHingeLoss,
    "hinge": HingeLoss,
    "logistic": LogisticLoss,
    "ramp": RampLoss,
    "sigmoid": SigmoidLoss,
    "squared": SquaredLoss,
    "unhinged": UnhingedLoss,
}


def make_loss(name, *, barrier_slope=200.0, symmetric_width=50.0):
    """The loss object for ``name`` (the barrier parameters only for the barrier
    hinge: ``barrier_slope`` is the paper's b, ``symmetric_width`` its r)."""
    if name == "barrier_hinge":
        return BarrierHingeLoss(slope=barrier_slope, width=symmetric_width)
    try:
        return LOSSES[name]()
    except KeyError:
        raise ValueError(
            f"loss must be one of {sorted(LOSSES)}, got {name!r}."
        ) from None
