"""Per-sample losses of fitted linear models, written in terms of their scores.

A linear model with parameters ``theta`` of shape (K, D) scores a row ``x`` as
``z = theta @ x1`` with ``x1 = [x, 1]`` (the 1 only with an intercept). Every
adapter describes the objective the scikit-learn estimator *actually* minimizes,

    J(theta) = sum_i c_i * loss(z_i, y_i) + 0.5 * sum(penalty * theta**2),

with per-row weights ``c_i`` and a diagonal quadratic penalty. The gradient of one
loss term is ``residual(z, y) (outer) x1`` and its Hessian
``curvature(z) (kron) x1 x1^T``, which is all the influence machinery needs.

New twice-differentiable linear models are added by subclassing
:class:`LinearLossAdapter` and calling :func:`register_loss_adapter`.
"""

import numbers

import numpy as np
from scipy.special import expit, log_expit, logsumexp, softmax
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge

__all__ = [
    "LinearLossAdapter",
    "LogisticRegressionAdapter",
    "RidgeAdapter",
    "LinearRegressionAdapter",
    "register_loss_adapter",
    "make_loss_adapter",
    "check_supported_estimator",
]


class LinearLossAdapter:
    """Interface: the loss, derivatives and penalty of a fitted linear model.

    Subclasses implement the methods below; ``estimator`` is the fitted model.

    Attributes
    ----------
    is_classifier : bool
        Labels are class codes 0..C-1 (classifiers) or real values (regressors).
    n_outputs : int
        K, the number of score columns.
    fit_intercept : bool
    sum_zero_scores : bool
        The loss is invariant to adding a constant to all K scores (softmax); the
        Hessian then has null directions that no gradient touches.
    """

    is_classifier = False
    sum_zero_scores = False

    @classmethod
    def check_unfitted(cls, estimator):
        """Raise ValueError if the (unfitted) estimator's parameters are unsupported."""

    def __init__(self, estimator):
        self.estimator = estimator
        self.fit_intercept = bool(getattr(estimator, "fit_intercept", True))

    def theta(self):
        """Fitted parameters as an array of shape (K, D), intercept last."""
        raise NotImplementedError

    def penalty(self, n_features):
        """Diagonal of the quadratic penalty's Hessian, shape (K, D)."""
        raise NotImplementedError

    def row_weights(self, y, sample_weight):
        """Per-row weight c_i of the loss in the objective, shape (n,)."""
        raise NotImplementedError

    def loss(self, Z, y):
        """Per-row loss for scores Z (n, K), shape (n,)."""
        raise NotImplementedError

    def residual(self, Z, y):
        """d loss / d z, shape (n, K)."""
        raise NotImplementedError

    def curvature(self, Z):
        """d^2 loss / d z^2, shape (n, K, K) (it does not depend on y here)."""
        raise NotImplementedError

    def test_loss(self, Z, y):
        """Loss used to measure test performance (default: the training loss)."""
        return self.loss(Z, y)


def _is_l2_logistic(est):
    """Return (supported, reason) for a LogisticRegression's effective penalty."""
    penalty = getattr(est, "penalty", "l2")
    l1_ratio = getattr(est, "l1_ratio", None)
    if penalty == "deprecated":  # scikit-learn >= 1.8: l1_ratio and C decide
        if est.C == np.inf or l1_ratio in (0, 0.0, None):
            return True, ""
        return False, f"l1_ratio={l1_ratio!r} (an L1 part is not twice differentiable)"
    if penalty in ("l2", None, "none"):
        return True, ""
    if penalty == "elasticnet" and l1_ratio in (0, 0.0):
        return True, ""
    return False, f"penalty={penalty!r} (not twice differentiable)"


def _no_penalty(est):
    penalty = getattr(est, "penalty", "l2")
    return penalty is None or penalty == "none" or est.C == np.inf


class LogisticRegressionAdapter(LinearLossAdapter):
    """LogisticRegression with an L2 penalty or none, binary or multinomial.

    Objective (scikit-learn's, for every solver that supports L2):
    ``C * sum_i s_i w_{y_i} logloss_i + 0.5 ||W||_F^2`` with sample weights s_i and
    class weights w_y; the intercept is not penalized, except by ``liblinear``,
    which penalizes ``b / intercept_scaling`` like a coefficient.
    """

    is_classifier = True

    @classmethod
    def check_unfitted(cls, estimator):
        ok, reason = _is_l2_logistic(estimator)
        if not ok:
            raise ValueError(
                f"LogisticRegression with {reason} is not supported: influence "
                "functions need a twice-differentiable objective; use an L2 penalty."
            )
        if isinstance(estimator.class_weight, str):
            raise ValueError(
                "LogisticRegression(class_weight='balanced') is not supported: the "
                "weights would change with the perturbed labels; pass a dict."
            )

    def __init__(self, estimator):
        super().__init__(estimator)
        self.classes = estimator.classes_
        self.binary = len(self.classes) == 2
        self.n_outputs = 1 if self.binary else len(self.classes)
        self.sum_zero_scores = not self.binary
        self.C = np.inf if _no_penalty(estimator) else float(estimator.C)
        multi_class = getattr(estimator, "multi_class", "deprecated")
        if not self.binary and (
            multi_class == "ovr" or estimator.solver == "liblinear"
        ):
            raise ValueError(
                "One-vs-rest LogisticRegression (multi_class='ovr' or liblinear with "
                "3+ classes) is not supported: fit the multinomial model."
            )

    def theta(self):
        coef = np.asarray(self.estimator.coef_, dtype=np.float64)
        if not self.fit_intercept:
            return coef.copy()
        intercept = np.asarray(self.estimator.intercept_, dtype=np.float64)
        return np.hstack([coef, intercept.reshape(-1, 1)])

    def penalty(self, n_features):
        # scale the objective by 1/C so that an unpenalized fit stays finite
        D = n_features + self.fit_intercept
        pen = np.zeros((self.n_outputs, D))
        if np.isinf(self.C):
            return pen
        pen[:, :n_features] = 1.0 / self.C
        if self.fit_intercept and self.estimator.solver == "liblinear":
            pen[:, -1] = 1.0 / (self.C * self.estimator.intercept_scaling**2)
        return pen

    def row_weights(self, y, sample_weight):
        c = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight)
        cw = self.estimator.class_weight
        if isinstance(cw, dict):
            per_class = np.array([cw.get(k, 1.0) for k in self.classes], dtype=float)
            c = c * per_class[np.asarray(y, dtype=np.intp)]
        return np.asarray(c, dtype=np.float64)

    def _logits(self, Z):
        if self.binary:
            return np.hstack([np.zeros_like(Z), Z])
        return Z

    def proba(self, Z):
        """Class probabilities, shape (n, C)."""
        return softmax(self._logits(Z), axis=1)

    def loss(self, Z, y):
        y = np.asarray(y, dtype=np.intp)
        if self.binary:
            z = Z[:, 0]
            return -log_expit(np.where(y == 1, z, -z))
        L = self._logits(Z)
        return logsumexp(L, axis=1) - L[np.arange(len(y)), y]

    def residual(self, Z, y):
        y = np.asarray(y, dtype=np.intp)
        if self.binary:
            return (expit(Z[:, 0]) - y)[:, None]
        R = softmax(Z, axis=1)
        R[np.arange(len(y)), y] -= 1.0
        return R

    def curvature(self, Z):
        if self.binary:
            p = expit(Z[:, 0])
            return (p * (1 - p))[:, None, None]
        P = softmax(Z, axis=1)
        return (
            np.einsum("nk,kl->nkl", P, np.eye(P.shape[1]))
            - P[:, :, None] * P[:, None, :]
        )

    # forward loss correction (Patrini et al. 2017): loss(T^T p(x), y~)
    def forward_loss(self, Z, y, T):
        """-log (T^T p)_y for each row; T has shape (C, C) or (E, C, C) -> (E, n)."""
        q = self._forward_q(Z, y, T)
        return -np.log(q)

    def _forward_q(self, Z, y, T):
        P = self.proba(Z)  # (n, C)
        T = np.asarray(T).reshape((-1,) + np.shape(T)[-2:])  # (E, C, C)
        # q[e, i] = sum_c P[i, c] T[e, c, y_i]
        Ty = T[:, :, np.asarray(y, dtype=np.intp)]  # (E, C, n)
        return np.einsum("nc,ecn->en", P, Ty)

    def forward_residual(self, Z, y, T):
        """d/dz of the corrected loss, shape (E, n, K).

        With q = (T^T p)_y: d(-log q)/d logit_k = p_k (1 - T[k, y] / q); the binary
        score is logit 1 (logit 0 is fixed at 0).
        """
        P = self.proba(Z)
        T = np.asarray(T).reshape((-1,) + np.shape(T)[-2:])
        Ty = T[:, :, np.asarray(y, dtype=np.intp)]  # (E, C, n)
        q = np.einsum("nc,ecn->en", P, Ty)
        R = P[None, :, :] * (1.0 - np.transpose(Ty, (0, 2, 1)) / q[:, :, None])
        return R[:, :, 1:] if self.binary else R


class _SquaredLossAdapter(LinearLossAdapter):
    """Squared error sum_i s_i (y_i - z_i)^2 (+ penalty), single target."""

    n_outputs = 1

    def theta(self):
        coef = np.asarray(self.estimator.coef_, dtype=np.float64).reshape(1, -1)
        if not self.fit_intercept:
            return coef.copy()
        b = float(np.ravel(self.estimator.intercept_)[0])
        return np.hstack([coef, [[b]]])

    def row_weights(self, y, sample_weight):
        if sample_weight is None:
            return np.ones(len(y))
        return np.asarray(sample_weight, dtype=np.float64)

    def loss(self, Z, y):
        return (np.asarray(y, dtype=np.float64) - Z[:, 0]) ** 2

    def residual(self, Z, y):
        return (2.0 * (Z[:, 0] - np.asarray(y, dtype=np.float64)))[:, None]

    def curvature(self, Z):
        return np.full((Z.shape[0], 1, 1), 2.0)


class RidgeAdapter(_SquaredLossAdapter):
    """Ridge: ``sum_i s_i (y_i - x_i w - b)^2 + alpha ||w||^2`` (b not penalized)."""

    @classmethod
    def check_unfitted(cls, estimator):
        if getattr(estimator, "positive", False):
            raise ValueError("Ridge(positive=True) is constrained; not supported.")
        if not isinstance(estimator.alpha, numbers.Real):
            raise ValueError("Ridge with one alpha per target is not supported.")

    def penalty(self, n_features):
        pen = np.zeros((1, n_features + self.fit_intercept))
        pen[:, :n_features] = 2.0 * float(self.estimator.alpha)
        return pen


class LinearRegressionAdapter(_SquaredLossAdapter):
    """LinearRegression: ``sum_i s_i (y_i - x_i w - b)^2``; no penalty, so the
    Hessian is singular for collinear features (use ``damping > 0``)."""

    @classmethod
    def check_unfitted(cls, estimator):
        if getattr(estimator, "positive", False):
            raise ValueError("LinearRegression(positive=True) is not supported.")

    def penalty(self, n_features):
        return np.zeros((1, n_features + self.fit_intercept))


_REGISTRY = {
    LogisticRegression: LogisticRegressionAdapter,
    Ridge: RidgeAdapter,
    LinearRegression: LinearRegressionAdapter,
}


def register_loss_adapter(estimator_class, adapter_class):
    """Declare how to read the objective of ``estimator_class`` (exact type match).

    Parameters
    ----------
    estimator_class : type
        A linear scikit-learn-style estimator with ``coef_`` and ``intercept_``.
    adapter_class : subclass of LinearLossAdapter
    """
    if not (
        isinstance(adapter_class, type) and issubclass(adapter_class, LinearLossAdapter)
    ):
        raise TypeError("adapter_class must subclass LinearLossAdapter.")
    _REGISTRY[estimator_class] = adapter_class


def _supported_names():
    return ", ".join(sorted(cls.__name__ for cls in _REGISTRY))


def check_supported_estimator(estimator):
    """Return the adapter class for an unfitted estimator or raise TypeError."""
    adapter = _REGISTRY.get(type(estimator))
    if adapter is None:
        raise TypeError(
            f"RRInfluenceEstimator does not support {type(estimator).__name__}; "
            f"supported estimators: {_supported_names()} (or a Pipeline ending in "
            "one of them; add others with register_loss_adapter)."
        )
    adapter.check_unfitted(estimator)
    return adapter


def make_loss_adapter(fitted_estimator):
    """Adapter instance for a fitted, supported estimator."""
    adapter = check_supported_estimator(fitted_estimator)
    instance = adapter(fitted_estimator)
    coef = np.asarray(fitted_estimator.coef_)
    if not instance.is_classifier and coef.ndim == 2 and coef.shape[0] > 1:
        raise ValueError("Multi-target regression is not supported; fit one target.")
    return instance
