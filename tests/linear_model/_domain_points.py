"""Rows inside a declared FM domain, biased to its extremes, for brute-force
sensitivity tests (shared by the Taylor, multinomial and Newton blocks)."""

import numpy as np


def sparsify(x, k):
    """Keep the ``k`` largest entries of ``x`` in absolute value."""
    if k is not None and k < x.size:
        x = x.copy()
        x[np.argsort(np.abs(x))[:-k]] = 0.0
    return x


def extreme_points(dom, rng, n, cycle_kinds=False):
    """``n`` rows of ``dom``: box corners, interior points and (for a norm bound)
    points on the sphere; the kind is drawn at random, or cycled in order."""
    d = dom.n_features
    lo, hi = dom.feature_intervals
    pts = []
    for i in range(n):
        kind = i % 3 if cycle_kinds else rng.integers(3)
        if kind == 0:
            x = np.where(rng.random(d) < 0.5, lo, hi)
        elif kind == 1:
            x = rng.uniform(lo, hi)
        else:
            x = np.clip(rng.normal(size=d) * (rng.random(d) < 0.5), lo, hi)
        x = sparsify(x, dom.max_nonzero)
        if dom.data_norm is not None:
            norm = np.linalg.norm(x)
            if norm > 0 and (kind == 2 or norm > dom.data_norm):
                # onto the sphere, then back into the box (which only shrinks it)
                x = np.clip(x * dom.data_norm / norm, lo, hi)
        pts.append(x)
    return pts
