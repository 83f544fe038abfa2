"""The budget a fit keeps after releasing its ranges (shared by the FM
estimators and :class:`~skdp.preprocessing.PrivateBoundsEstimator`)."""

__all__ = ["epsilon_left"]


def epsilon_left(epsilon, share, bounds_epsilon):
    """What a fit after a range release gets: ``epsilon * (1 - share)``, or
    all of ``epsilon`` when the release spent nothing (``bounds_epsilon``
    0: every range kept its envelope)."""
    if bounds_epsilon == 0.0:
        return epsilon
    return epsilon * (1.0 - float(share))
