"""The budget a fit keeps after releasing its ranges (shared by the FM
estimators and :class:`~skdp.preprocessing.PrivateBoundsEstimator`)."""

__all__ = ["epsilon_left"]


def epsilon_left(epsilon, share, bounds_epsilon):
    """What a fit after a range release gets: ``epsilon * (1 - share)`` when
    the release spent its whole share, all of ``epsilon`` when it spent
    nothing (every range kept its envelope), else ``epsilon -
    bounds_epsilon`` (envelopes kept after their looseness test return the
    rest of their part: the fit's budget depends on the released test, which
    basic composition allows, see ``private_bounds``)."""
    if bounds_epsilon == 0.0:
        return epsilon
    if bounds_epsilon >= epsilon * float(share):
        return epsilon * (1.0 - float(share))
    return epsilon - bounds_epsilon
