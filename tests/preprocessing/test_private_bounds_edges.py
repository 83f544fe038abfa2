"""The edges of the range release (issue 40): categorical columns, the order
validate / record / draw, ranges of width 0, complex and string input, child
streams of a Generator seed, and the exact keep-the-envelope score."""

import copy

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skdp.linear_model import (
    FMLinearRegression,
)


def _rooms(n_repeat=1):
    return pd.DataFrame({"rooms": [1, 2, 3, 2, 55] * n_repeat}).astype("category")


# --------------------------------------------------------------------------- #
# 6. the range release's stream: a function of the parent's state
# --------------------------------------------------------------------------- #
def _state_only_copy(gen, memo=None):
    """A deep copy as numpy < 2 makes it: the bit generator's state is kept,
    its seed sequence is not (a fresh one from OS entropy)."""
    bit_generator = type(gen.bit_generator)()
    bit_generator.state = copy.deepcopy(gen.bit_generator.state)
    return type(gen)(bit_generator)


def test_child_stream_is_a_function_of_the_parent_state():
    from skdp._fm.streams import child_generator

    parent = np.random.default_rng(0)
    a, b = _state_only_copy(parent), _state_only_copy(parent)
    np.testing.assert_array_equal(
        child_generator(a).random(5), child_generator(b).random(5)
    )
    # the parents' own draws are those of the seed, untouched
    np.testing.assert_array_equal(a.random(3), np.random.default_rng(0).random(3))
    # a second child before the parent draws again is another stream
    first, second = child_generator(parent), child_generator(parent)
    assert not np.array_equal(first.random(5), second.random(5))


@pytest.mark.parametrize("numpy_1_copy", [False, True])
def test_two_clones_seeded_with_a_generator_give_identical_models(
    monkeypatch, numpy_1_copy
):
    """``clone`` deep-copies a Generator; on numpy < 2 the copy loses the seed
    sequence that ``Generator.spawn`` uses, so the range release of two
    clones drew different streams. Emulated here on any numpy."""
    if numpy_1_copy:
        monkeypatch.setitem(
            copy._deepcopy_dispatch, np.random.Generator, _state_only_copy
        )
    rng = np.random.default_rng(0)
    X = rng.normal(50.0, 10.0, (2000, 2))
    y = X @ [0.1, -0.2] + rng.normal(size=2000)
    est = FMLinearRegression(
        epsilon=2.0,
        bounds_X="private",
        bounds_y=(-30, 30),
        random_state=np.random.default_rng(0),
    )
    a, b = clone(est).fit(X, y), clone(est).fit(X, y)
    np.testing.assert_array_equal(a.bounds_[0], b.bounds_[0])
    np.testing.assert_array_equal(a.bounds_[1], b.bounds_[1])
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_
