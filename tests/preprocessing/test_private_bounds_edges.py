"""The edges of the range release (issue 40): categorical columns, the order
validate / record / draw, ranges of width 0, complex and string input, child
streams of a Generator seed, and the exact keep-the-envelope score."""

import copy

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skdp.accounting import track_budget
from skdp.linear_model import (
    FMLinearRegression,
    OPLogisticRegression,
    PrivateLogisticRegression,
)
from skdp.preprocessing import (
    PrivateBoundsEstimator,
    RegressionLabelRelease,
    private_bounds,
)


def _rooms(n_repeat=1):
    return pd.DataFrame({"rooms": [1, 2, 3, 2, 55] * n_repeat}).astype("category")


# --------------------------------------------------------------------------- #
# 3. a range of width 0 is refused where it is declared
# --------------------------------------------------------------------------- #
def _xy(n=50):
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (n, 2))
    return X, X[:, 0] - X[:, 1], (X[:, 0] > 0.5).astype(int)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: FMLinearRegression(bounds_X=(1, 1), bounds_y=(-1, 1)), "bounds_X"),
        (
            lambda: FMLinearRegression(bounds_X=([0, 1], [1, 1]), bounds_y=(-1, 1)),
            r"bounds_X .*indices \[1\]",
        ),
        (lambda: FMLinearRegression(bounds_X=(0, 1), bounds_y=(2, 2)), "bounds_y"),
        (
            lambda: FMLinearRegression(
                bounds_X=(1, 1), bounds_y=(-1, 1), tighten_bounds=True
            ),
            "bounds_X",
        ),
        (
            lambda: FMLinearRegression(
                bounds_X="private", bounds_y=(-1, 1), public_bounds={0: (1, 1)}
            ),
            "public_bounds",
        ),
        (
            lambda: OPLogisticRegression(
                bounds_X=(1, 1), delta=1e-6, classes=[0, 1], epsilon=1.0
            ),
            "bounds_X",
        ),
        (
            lambda: PrivateLogisticRegression(
                bounds_X=(1, 1), delta=1e-6, classes=[0, 1], epsilon=1.0
            ),
            "bounds_X",
        ),
        (
            lambda: PrivateBoundsEstimator(
                OPLogisticRegression(delta=1e-6, classes=[0, 1]), envelope=(1, 1)
            ),
            "envelope",
        ),
    ],
)
def test_a_declared_range_of_width_zero_is_refused(make, match):
    X, y_reg, y_clf = _xy()
    est = make()
    y = y_reg if isinstance(est, FMLinearRegression) else y_clf
    with track_budget() as acc, pytest.raises(ValueError, match=match):
        est.set_params(random_state=0).fit(X, y)
    assert acc.spends == []


def test_label_release_and_private_bounds_refuse_width_zero():
    X, y, _ = _xy()
    with pytest.raises(ValueError, match="label_bounds"):
        RegressionLabelRelease(label_bounds=(1, 1), random_state=0).fit_resample(X, y)
    for kwargs, name in (
        ({"public_bounds": {0: (1, 1)}}, "public_bounds"),
        ({"envelope": {1: (2, 2)}}, "envelope"),
    ):
        with track_budget() as acc, pytest.raises(ValueError, match=name):
            private_bounds(X, epsilon=1.0, random_state=0, **kwargs)
        assert acc.spends == []


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
