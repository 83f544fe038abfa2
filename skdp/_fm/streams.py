"""Independent random streams for releases that follow one another."""

import numpy as np

__all__ = ["child_generator"]


def child_generator(rng):
    """An independent generator derived from ``rng`` without drawing from it.

    ``rng.spawn(1)`` (a child of its seed sequence), so that what a first
    release draws (a range release whose number of draws depends on its
    outcome) leaves the parent's stream, and so the noise of what follows,
    unchanged; streams spawned from one seed sequence are independent, as
    composition requires. A generator without a seed sequence gives a child
    seeded from one draw of it.
    """
    try:
        return rng.spawn(1)[0]
    except (AttributeError, TypeError, ValueError):
        return type(rng)(np.random.PCG64(int(rng.integers(2**63 - 1))))
