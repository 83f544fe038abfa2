"""Scores used by the label-noise and label-privacy literature that sklearn lacks."""

import numpy as np
from sklearn.metrics import balanced_accuracy_score, make_scorer

__all__ = [
    "balanced_error_rate",
    "balanced_error_scorer",
    "debiased_balanced_error_rate",
]


def balanced_error_rate(y_true, y_pred, *, sample_weight=None):
    """Balanced error rate: the mean over classes of the per-class error rate.

    For two classes BER = (FPR + FNR) / 2 (Brodersen et al. 2010; Menon et al.
    2013). It equals ``1 - balanced_accuracy_score`` and is 0.5 for any constant
    prediction, whatever the class balance.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
    y_pred : array-like of shape (n_samples,)
    sample_weight : array-like of shape (n_samples,), default=None

    Returns
    -------
    float in [0, 1]

    Examples
    --------
    >>> from skdp.metrics import balanced_error_rate
    >>> balanced_error_rate([0, 0, 0, 1], [0, 0, 0, 0])
    0.5
    >>> balanced_error_rate([0, 0, 1, 1], [0, 1, 1, 1])
    0.25
    """
    return float(
        1.0 - balanced_accuracy_score(y_true, y_pred, sample_weight=sample_weight)
    )


def debiased_balanced_error_rate(y_noisy, y_pred, *, flip_rate):
    """Estimate the clean-label BER from labels flipped with probability ``flip_rate``.

    If each binary label is flipped independently with probability rho < 1/2
    (binary randomized response; the exponential label mechanism at eps is RR at
    eps/2), the expected noisy per-class error rates are affine in the clean ones
    and E[BER_noisy] = rho + (1 - 2 rho) BER_clean exactly when the two classes are
    equally frequent (approximately otherwise: the noisy per-class rates mix the
    classes in proportion to their sizes). Inverting gives the estimate
    (BER_noisy - rho) / (1 - 2 rho), for validating models on privatized labels.

    Parameters
    ----------
    y_noisy : array-like of shape (n_samples,)
        Privatized binary labels.
    y_pred : array-like of shape (n_samples,)
    flip_rate : float in [0, 0.5)

    Returns
    -------
    float (can leave [0, 1] by sampling error)

    Examples
    --------
    >>> from skdp.metrics import debiased_balanced_error_rate
    >>> debiased_balanced_error_rate([0, 1, 1, 0], [0, 1, 0, 0], flip_rate=0.0)
    0.25
    """
    rho = float(flip_rate)
    if not 0.0 <= rho < 0.5:
        raise ValueError(f"flip_rate must be in [0, 0.5), got {flip_rate!r}.")
    if np.unique(np.asarray(y_noisy)).size > 2:
        raise ValueError("debiased_balanced_error_rate needs binary labels.")
    return (balanced_error_rate(y_noisy, y_pred) - rho) / (1.0 - 2.0 * rho)


balanced_error_scorer = make_scorer(balanced_error_rate, greater_is_better=False)
balanced_error_scorer.__doc__ = "Scorer for GridSearchCV: minus the balanced error."
