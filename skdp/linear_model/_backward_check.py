"""The backward-corrected fit's check: is the model better than a constant?

Reads only what the fit has (X, the released labels, the transition matrix and
the fitted parameters): label-DP post-processing. The derivation and the
thresholds are argued in the Notes of ``LossCorrectedLogisticRegression``.
"""

import warnings

import numpy as np

from skdp.linear_model._corrected_objective import approximate_loo_logits
from skdp.utils.privacy_warnings import external_stacklevel

__all__ = ["check_backward_fit", "corrected_accuracy_gain"]

#: Warn when the corrected accuracy gain over the constant prediction is at
#: most this many of its standard errors (see ``corrected_accuracy_gain``).
MIN_GAIN_IN_SE = 2.0
#: Warn when one class gets at least this share of the training rows (and its
#: corrected frequency is below it): the model then differs from a constant
#: on at most 1% of the rows.
NEAR_ONE_CLASS_SHARE = 0.99
# the warnings' leading words (the benchmark matches them)
ONE_CLASS = "The backward-corrected model predicts one class on every training row"
NEAR_ONE_CLASS = "The backward-corrected model predicts nearly one class"
NO_BETTER = (
    "The backward-corrected model is estimated to be no better than predicting "
    "the most frequent class"
)


def corrected_accuracy_gain(predicted, y_codes, T, sample_weight):
    """Unbiased clean accuracies of predictions from released labels only.

    Parameters
    ----------
    predicted : ndarray of int of shape (n_samples,)
        Predicted classes (positions in the class list) of the training rows.
    y_codes : ndarray of int of shape (n_samples,)
        Released labels r_i (positions in the class list).
    T : ndarray of shape (n_classes, n_classes)
        T[k, j] = P(released j | true k), invertible.
    sample_weight : ndarray of shape (n_samples,)

    Returns
    -------
    accuracy : float
        sum_i s_i A[r_i, pred_i] / S, A = T^{-1}, S = sum_i s_i.
    majority_accuracy : float
        The largest corrected class frequency max_k sum_i s_i A[r_i, k] / S:
        the same estimate for the best constant prediction.
    gain_se : float
        Standard error of ``accuracy - majority_accuracy`` from the per-row
        differences d_i = A[r_i, pred_i] - A[r_i, m]:
        sqrt(sum_i s_i^2 (d_i - d_bar)^2) / S.
    frequencies : ndarray of shape (n_classes,)
        The corrected class frequencies sum_i s_i A[r_i, :] / S (the
        corrected accuracies of every constant prediction).

    Notes
    -----
    For a prediction k of a row with true class y, the indicator is
    l(y) = 1{k == y}, l = e_k. The released label r has P(r = j | y) = T[y, j],
    so E[(T^{-1} l)[r] | y] = sum_j T[y, j] (T^{-1} l)_j = (T T^{-1} l)_y = l(y):
    (T^{-1} e_k)[r] = A[r, k] is an unbiased estimate of 1{k == y} for every
    true class, whatever the features, and the weighted mean over the rows of
    the clean accuracy of any predictions fixed before the release.
    """
    A = np.linalg.inv(T)
    total = float(sample_weight.sum())
    rows = A[y_codes]  # row i: the corrected indicators of every prediction
    frequencies = sample_weight @ rows / total
    majority = int(frequencies.argmax())
    per_row = rows[np.arange(len(rows)), predicted]
    gain = per_row - rows[:, majority]
    mean_gain = float(sample_weight @ gain) / total
    gain_se = float(np.sqrt(sample_weight**2 @ (gain - mean_gain) ** 2)) / total
    accuracy = float(sample_weight @ per_row) / total
    return accuracy, float(frequencies[majority]), gain_se, frequencies


def _predicted_codes(Z):
    """Predicted class positions from logits (one column: the logit of class 1)."""
    return (Z[:, 0] > 0).astype(np.intp) if Z.shape[1] == 1 else Z.argmax(axis=1)


def check_backward_fit(model, X, y_codes, sample_weight, objective, theta):
    """Set the corrected accuracies; warn when the model is estimably no
    better than the constant prediction, or (nearly) one class.

    Reads only X, the released labels, T and the fitted parameters
    (post-processing; see the class Notes). Three warnings, at most one
    per fit: one class on every training row, one class on at least
    ``NEAR_ONE_CLASS_SHARE`` of them, or a leave-one-out corrected
    accuracy gain over the corrected majority class of at most
    ``MIN_GAIN_IN_SE`` standard errors.
    """
    Z = X @ model.coef_.T + model.intercept_
    T = model.transition_matrix_
    predicted = _predicted_codes(Z)
    in_sample = corrected_accuracy_gain(predicted, y_codes, T, sample_weight)
    model.corrected_train_accuracy_ = in_sample[0]
    loo = approximate_loo_logits(objective, theta)
    if loo is None:  # no Hessian: the in-sample (optimistic) estimate
        model.corrected_loo_accuracy_ = np.nan
        estimate, majority_accuracy, gain_se, frequencies = in_sample
    else:
        estimate, majority_accuracy, gain_se, frequencies = corrected_accuracy_gain(
            _predicted_codes(loo), y_codes, T, sample_weight
        )
        model.corrected_loo_accuracy_ = estimate
    model.corrected_majority_accuracy_ = majority_accuracy
    majority = int(frequencies.argmax())
    gain = estimate - model.corrected_majority_accuracy_
    numbers = (
        f"estimated clean accuracy {estimate:.3f} "
        f"({'in-sample' if loo is None else 'leave-one-out'}) against "
        f"{model.corrected_majority_accuracy_:.3f} for always predicting "
        f"{model.classes_[[majority]].tolist()[0]!r} (difference {gain:+.3f}, "
        "standard error "
        f"{gain_se:.3f})"
    )
    advice = "Spend more epsilon, use more rows, or try correction='forward'."
    n_classes = model.classes_.size
    shares = np.bincount(predicted, weights=sample_weight, minlength=n_classes)
    shares = shares / shares.sum()
    top = int(shares.argmax())
    if np.unique(y_codes).size > 1 and shares[top] == 1.0:
        message = (
            f"{ONE_CLASS} although the released labels hold several: at "
            "this epsilon and sample size the corrected labels carry too "
            "little information for the features to move the prediction "
            f"({numbers})."
        )
    elif (
        shares[top] >= NEAR_ONE_CLASS_SHARE and frequencies[top] < NEAR_ONE_CLASS_SHARE
    ):
        message = (
            f"{NEAR_ONE_CLASS} ({model.classes_[[top]].tolist()[0]!r} on "
            f"{shares[top]:.1%} of the training rows, whose corrected "
            f"frequency is {frequencies[top]:.3f}): "
            f"it is practically a constant model ({numbers})."
        )
    elif gain <= MIN_GAIN_IN_SE * gain_se:
        message = (
            f"{NO_BETTER}: {numbers}, a gain of at most {MIN_GAIN_IN_SE} "
            "standard errors."
        )
    else:
        return
    warnings.warn(f"{message} {advice}", UserWarning, stacklevel=external_stacklevel())
