"""Independent random streams for releases that follow one another."""

import numbers

import numpy as np

__all__ = ["child_generator"]

# The spawn key of every child: its seed sequence is never one that
# ``SeedSequence(entropy)`` (spawn key ``()``) or its ``spawn`` children
# (keys ``(k,)``, small k) give for the same entropy.
CHILD_SPAWN_KEY = (0x736B6470, 0x63686C64)  # "skdp", "chld"


def _state_words(value, out):
    """Append ``value`` (a bit generator's state: dicts, ints, arrays, names)
    to ``out`` as 32-bit words, each item prefixed by its length, so that two
    different states never give the same words."""
    if isinstance(value, dict):
        for key in sorted(value):
            _state_words(key, out)
            _state_words(value[key], out)
    elif isinstance(value, str):
        _state_words(list(value.encode()), out)
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = int(value)
        sign, value = int(value < 0), abs(value)
        words = []
        while True:
            words.append(value & 0xFFFFFFFF)
            value >>= 32
            if not value:
                break
        out.extend([len(words), sign, *words])
    elif isinstance(value, bool | np.bool_):
        out.extend([1, 0, int(value)])
    else:  # arrays and sequences of integers
        items = np.asarray(value).ravel().tolist()
        out.append(len(items))
        for item in items:
            _state_words(item, out)
    return out


def child_generator(rng):
    """An independent generator derived from ``rng`` without drawing from it.

    The child is seeded with a :class:`numpy.random.SeedSequence` whose
    entropy is the parent's bit-generator state (and the number of children
    its seed sequence has spawned, if it has one) and whose spawn key is
    ``CHILD_SPAWN_KEY``: a deterministic function of the parent's state on
    every supported numpy, so that two copies of a parent in the same state
    (two ``sklearn.base.clone`` of an estimator seeded with a ``Generator``)
    give the same child. ``Generator.spawn`` is not: it uses the parent's
    seed sequence, which a deep copy on numpy < 2 does not keep (it gets a
    fresh one from OS entropy), so two clones spawned different children.

    The parent's draws are unchanged (nothing is drawn from it): what a
    first release draws from the child (a range release whose number of
    draws depends on its outcome) leaves the parent's stream, and so the
    noise of what follows, as it was. The child's stream is the output of
    the seed sequence's hash of the parent's state, independent of the
    parent's own stream for every practical purpose. A second child taken
    before the parent draws again differs from the first: the spawn counter
    of the parent's seed sequence (advanced here, as ``spawn`` does) is part
    of the entropy.

    Parameters
    ----------
    rng : numpy.random.Generator

    Returns
    -------
    numpy.random.Generator
        Of the same type as ``rng`` (a ``NoiseGenerator`` stays one), on a
        bit generator of the same type.
    """
    bit_generator = rng.bit_generator
    words = _state_words(bit_generator.state, [])
    seed_seq = getattr(bit_generator, "seed_seq", None)
    if seed_seq is None:  # numpy < 1.25 names it privately
        seed_seq = getattr(bit_generator, "_seed_seq", None)
    spawned = getattr(seed_seq, "n_children_spawned", None)
    if isinstance(spawned, numbers.Integral):
        _state_words(int(spawned), words)
        seed_seq.spawn(1)  # count this child: the next one differs
    child_seq = np.random.SeedSequence(words, spawn_key=CHILD_SPAWN_KEY)
    return type(rng)(type(bit_generator)(child_seq))
