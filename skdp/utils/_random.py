"""One random generator per call, made from ``random_state``."""

import numbers

import numpy as np

__all__ = ["check_random_state"]


def check_random_state(seed):
    """Turn ``seed`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    seed : None, int, numpy.random.RandomState or numpy.random.Generator
        ``None``: fresh OS entropy. ``int``: a reproducible generator.
        ``Generator``: returned as is (draws advance it). ``RandomState``: a new
        Generator seeded from it (this advances the RandomState, as scikit-learn
        does when it derives seeds).

    Returns
    -------
    numpy.random.Generator
    """
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**63 - 1, dtype=np.int64))
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"random_state must be a non-negative int, got {seed}.")
        return np.random.default_rng(int(seed))
    raise TypeError(
        "random_state must be None, an int, a numpy RandomState or a numpy "
        f"Generator, got {type(seed).__name__}."
    )
