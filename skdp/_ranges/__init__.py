"""skdp-internal range releases: per-column ranges from data, privately.

Below the estimator packages (the FM core and ``skdp.preprocessing`` both use
it); the public names are re-exported by :mod:`skdp.preprocessing`.
"""
