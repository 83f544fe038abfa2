"""The budget a fit keeps after releasing its ranges (shared by the FM
estimators and :class:`~skdp.preprocessing.PrivateBoundsEstimator`)."""

__all__ = ["epsilon_left"]


def epsilon_left(epsilon, share, bounds_epsilon):
    """What a fit after a range release gets.

    All of ``epsilon`` when the release recorded nothing (no range was
    estimated: a function of ``n``, ``epsilon`` and the declared ranges),
    else ``epsilon * (1 - share)``: ``private_bounds`` records its whole
    ``epsilon * share`` before its first draw, so the ledger holds
    ``bounds_epsilon + epsilon * (1 - share) = epsilon`` and the fit never
    uses budget the ledger does not hold. The part of the share an envelope
    kept after its looseness test leaves unused
    (``PrivateBounds.epsilon_unused``) is not given to the fit: how much is
    left depends on the released test, and a fit that recorded it would let
    a cap's refusal reveal the test's outcome (before, it was given back).

    Parameters
    ----------
    epsilon : float
        The estimator's total epsilon.
    share : float
        The share of it given to the range release.
    bounds_epsilon : float
        What the range release recorded (``PrivateBounds.epsilon``).

    Returns
    -------
    float

    Examples
    --------
    >>> epsilon_left(1.0, 0.2, 0.2), epsilon_left(1.0, 0.2, 0.0)
    (0.8, 1.0)
    """
    if bounds_epsilon == 0.0:
        return epsilon
    return epsilon * (1.0 - float(share))
