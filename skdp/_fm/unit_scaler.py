"""Each feature mapped from a (released or declared) range to ``[-1, 1]``: the
public reparametrization shared by the FM estimators' private bounds and
:class:`~skdp.preprocessing.PrivateBoundsEstimator`."""

import numpy as np

__all__ = ["UnitScaler"]


class UnitScaler:
    """Each feature mapped from its range ``[lo, hi]`` to ``[-1, 1]``.

    A public reparametrization (the ranges are released before): the model
    ``x'^T w' + b'`` on ``x' = (x - m) / h`` is ``x^T w + b`` with ``w = w' / h``
    and ``b = b' - m^T w``. It makes every feature's part of the sensitivity
    the same size, so that a feature with a wide range does not drown the
    others in noise (the released entries share one noise scale). A range of
    width 0 maps its feature to 0 (a constant, coefficient 0).
    """

    def __init__(self, lower, upper):
        self.lower = np.asarray(lower, dtype=np.float64)
        self.upper = np.asarray(upper, dtype=np.float64)
        self.mid = 0.5 * (self.lower + self.upper)
        half = 0.5 * (self.upper - self.lower)
        self.constant = ~(half > 0)
        self.half = np.where(self.constant, 1.0, half)

    @property
    def unit_box(self):
        width = np.where(self.constant, 0.0, 1.0)
        return (-width, width)

    def transform(self, X):
        Z = (np.clip(X, self.lower, self.upper) - self.mid) / self.half
        np.clip(Z, -1.0, 1.0, out=Z)  # rounding may leave an end 1 ulp outside
        Z[:, self.constant] = 0.0
        return Z

    def _coef(self, coef):
        return np.asarray(coef) / self.half

    def _intercept(self, coef, intercept):
        return intercept - np.asarray(coef) @ self.mid

    def to_user_units(self, est):
        """Map a fitted estimator's model and box back to the user's units."""
        for coef_name, intercept_name in (
            ("coef_", "intercept_"),
            ("taylor_coef_", "taylor_intercept_"),
        ):
            if coef_name in est.__dict__:
                coef = self._coef(est.__dict__[coef_name])
                intercept = self._intercept(coef, est.__dict__[intercept_name])
                if np.ndim(intercept) == 0:
                    intercept = float(intercept)
                setattr(est, coef_name, coef)
                setattr(est, intercept_name, intercept)
        est.bounds_ = (self.lower.copy(), self.upper.copy())
        est.offset_X_ = self.mid.copy()
        est.scale_X_ = self.half.copy()
