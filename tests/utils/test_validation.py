import numpy as np
import pytest

from skdp import PrivacyLeakWarning
from skdp.utils import (
    check_bounds,
    check_data_norm,
    check_delta,
    check_epsilon,
    check_int,
    check_random_state,
    check_sensitivity,
    clip_to_bounds,
    clip_to_norm,
    infer_bounds,
    infer_data_norm,
)


@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_check_epsilon_rejects_non_positive_and_nan(value):
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon(value)


@pytest.mark.parametrize("value", ["1", None, True, [1.0]])
def test_check_epsilon_rejects_non_numbers(value):
    with pytest.raises(TypeError, match="epsilon"):
        check_epsilon(value)


def test_check_epsilon_inf_switch():
    assert check_epsilon(np.inf) == np.inf
    with pytest.raises(ValueError, match="my_eps"):
        check_epsilon(np.inf, name="my_eps", allow_inf=False)
    assert check_epsilon(np.float32(0.5)) == 0.5


@pytest.mark.parametrize("value", [1, 2.0, True, np.True_, "3", None])
def test_check_int_rejects_small_non_integers_and_booleans(value):
    with pytest.raises(ValueError, match=r"n_categories must be an int >= 2, got"):
        check_int(value, "n_categories", 2)


def test_check_int_returns_a_python_int():
    got = check_int(np.int64(5), "dimension", 1)
    assert got == 5 and type(got) is int


@pytest.mark.parametrize("value", [-0.1, 1.0, 2.0, float("nan")])
def test_check_delta(value):
    with pytest.raises(ValueError, match="delta"):
        check_delta(value)


def test_check_delta_zero():
    assert check_delta(0.0) == 0.0
    with pytest.raises(ValueError, match="delta"):
        check_delta(0.0, allow_zero=False)


@pytest.mark.parametrize("value", [0.0, -1.0, np.inf])
def test_check_sensitivity_and_norm(value):
    with pytest.raises(ValueError, match="sensitivity"):
        check_sensitivity(value)
    with pytest.raises(ValueError, match="data_norm"):
        check_data_norm(value)


def test_check_bounds_broadcast_and_errors():
    lower, upper = check_bounds((-1, [1, 2, 3]), 3)
    np.testing.assert_array_equal(lower, [-1, -1, -1])
    np.testing.assert_array_equal(upper, [1, 2, 3])
    with pytest.raises(ValueError, match="lower < upper"):
        check_bounds((1, 0), 2, name="bounds_X")
    with pytest.raises(ValueError, match="length 3"):
        check_bounds(([0, 0], 1), 3)
    with pytest.raises(TypeError, match="tuple"):
        check_bounds(1.0, 3)
    with pytest.raises(ValueError, match="finite"):
        check_bounds((-np.inf, 1), 3)


def test_clipping_returns_copies():
    X = np.array([[2.0, -3.0], [0.1, 0.2]])
    before = X.copy()
    clipped = clip_to_bounds(X, np.array([-1, -1]), np.array([1, 1]))
    np.testing.assert_array_equal(clipped, [[1, -1], [0.1, 0.2]])
    normed = clip_to_norm(X, 1.0)
    np.testing.assert_allclose(
        np.linalg.norm(normed, axis=1), [1.0, np.hypot(0.1, 0.2)]
    )
    np.testing.assert_allclose(normed[0], X[0] / np.linalg.norm(X[0]))
    np.testing.assert_array_equal(X, before)


def test_inferred_bounds_warn():
    X = np.array([[0.0, 5.0], [2.0, -1.0]])
    with pytest.warns(PrivacyLeakWarning, match="not differentially private"):
        lower, upper = infer_bounds(X)
    np.testing.assert_array_equal(lower, [0, -1])
    np.testing.assert_array_equal(upper, [2, 5])
    with pytest.warns(PrivacyLeakWarning):
        assert infer_data_norm(X) == pytest.approx(np.hypot(0, 5))


def test_check_random_state_types():
    g = np.random.default_rng(0)
    assert check_random_state(g) is g
    a = check_random_state(5).random(3)
    np.testing.assert_array_equal(a, check_random_state(5).random(3))
    assert isinstance(check_random_state(np.random.RandomState(0)), np.random.Generator)
    assert isinstance(check_random_state(None), np.random.Generator)
    with pytest.raises(TypeError, match="random_state"):
        check_random_state("seed")
    with pytest.raises(ValueError, match="random_state"):
        check_random_state(-1)


@pytest.mark.parametrize(
    "bounds, bad",
    [((1, 1), [0, 1, 2]), (([0, 2, 0], [1, 2, 1]), [1]), ((0.5, [1, 0.5, 2]), [1])],
)
def test_check_bounds_refuses_a_range_of_width_zero(bounds, bad):
    """lower == upper would clip every value of a feature to one constant."""
    match = (
        rf"bounds_X must have lower < upper .*indices \[{', '.join(map(str, bad))}\]"
    )
    with pytest.raises(ValueError, match=match):
        check_bounds(bounds, 3, name="bounds_X")
