"""Random generators: the seed policy for noise, and plain seeding for the rest.

The seed policy (every release's noise goes through :func:`noise_generator`):

* By default a release draws its noise from fresh operating-system entropy,
  whatever ``random_state`` says. ``random_state=0`` passed out of habit does not
  make the noise known, and no two releases (two epsilons, two folds of a
  ``GridSearchCV``, two estimators, two calls) share noise draws, so their
  composition is what the ledger records.
* Reproducible noise (tests, papers) is an explicit opt-in:
  ``skdp.set_config(reproducible_noise=True)``, ``skdp.config_context(...)`` or the
  environment variable ``SKDP_REPRODUCIBLE_NOISE=1``. Then ``random_state`` seeds
  the noise as in scikit-learn, and every release that uses a seed warns with
  :class:`~skdp.exceptions.ReproducibleNoiseWarning`.

Randomness that releases nothing (synthetic data, a solver's initialisation, a
Monte-Carlo estimate of a public quantity) keeps :func:`check_random_state`.
"""

import numbers

import numpy as np

from skdp._config import _reproducible_noise
from skdp.exceptions import ReproducibleNoiseWarning

__all__ = ["check_random_state", "noise_generator"]


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
    _check_seed(seed)
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**63 - 1, dtype=np.int64))
    return np.random.default_rng(int(seed))


def _check_seed(seed):
    if seed is None or isinstance(seed, (np.random.Generator, np.random.RandomState)):
        return
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"random_state must be a non-negative int, got {seed}.")
        return
    raise TypeError(
        "random_state must be None, an int, a numpy RandomState or a numpy "
        f"Generator, got {type(seed).__name__}."
    )


class NoiseGenerator(np.random.Generator):
    """A generator made under the seed policy by :func:`noise_generator`.

    Passed down to the helpers of one release, it is used as it is (no second
    warning, no second entropy draw); its children (``spawn``) are of this
    type too.
    """


def noise_generator(random_state):
    """The generator a release draws its noise from, under skdp's seed policy.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        The estimator's or function's ``random_state``. Validated in every case;
        used only when reproducible noise is switched on (see the module
        docstring): by default the noise comes from fresh OS entropy.

    Returns
    -------
    NoiseGenerator
        A generator made by this function is returned as it is. Under the opt-in a
        user's ``Generator`` is wrapped around its own bit generator, so draws
        advance it and equal its own draws bit for bit.
    """
    if isinstance(random_state, NoiseGenerator):
        return random_state
    _check_seed(random_state)
    if random_state is None or not _reproducible_noise():
        return NoiseGenerator(np.random.PCG64(np.random.SeedSequence()))
    _warn_known_seed(random_state)
    if isinstance(random_state, np.random.Generator):
        return NoiseGenerator(random_state.bit_generator)
    return NoiseGenerator(check_random_state(random_state).bit_generator)


def _warn_known_seed(random_state):
    import warnings

    from skdp.utils.privacy_warnings import external_stacklevel

    shown = random_state
    if not isinstance(shown, numbers.Integral):
        shown = type(shown).__name__
    warnings.warn(
        f"reproducible noise is on (SKDP_REPRODUCIBLE_NOISE / skdp.set_config): "
        f"this release draws its noise from random_state={shown}, so anyone who "
        "knows the seed can remove the noise and the release is not differentially "
        "private against them. Switch it off for real releases.",
        ReproducibleNoiseWarning,
        stacklevel=external_stacklevel(2),
    )


def release_generator(random_state, index):
    """The noise generator of the ``index``-th release added to one model.

    For estimators that add a release per call (``partial_fit``):
    :func:`noise_generator` of ``random_state`` (fresh OS entropy unless
    reproducible noise is switched on). Under the opt-in an int seed would draw
    the same noise for every release, and the releases of two batches would
    then differ by the exact difference of their statistics. So release
    ``index >= 1`` of an int seed draws from the seed sequence ``(seed,
    index)``; release 0 is :func:`noise_generator`'s, and a RandomState or
    Generator advances with every draw.
    """
    seed = random_state
    if (
        index
        and isinstance(seed, numbers.Integral)
        and not isinstance(seed, bool)
        and seed >= 0
    ):
        seed = np.random.Generator(
            np.random.PCG64(np.random.SeedSequence([int(seed), int(index)]))
        )
    return noise_generator(seed)
