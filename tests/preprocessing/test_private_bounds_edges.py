"""The edges of the range release (issue 40): categorical columns, the order
validate / record / draw, ranges of width 0, complex and string input, child
streams of a Generator seed, and the exact keep-the-envelope score."""

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skdp._ranges import private_bounds as pb
from skdp._ranges.envelope_budget import TEST_N_EPSILON
from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import BudgetExceededError
from skdp.linear_model import (
    FMLinearRegression,
    OPLogisticRegression,
    PrivateLogisticRegression,
)
from skdp.preprocessing import (
    PrivateBoundsEstimator,
    RegressionLabelRelease,
    private_bounds,
    schema_bounds,
)


def _rooms(n_repeat=1):
    return pd.DataFrame({"rooms": [1, 2, 3, 2, 55] * n_repeat}).astype("category")


# --------------------------------------------------------------------------- #
# 1. a categorical column's categories are data unless declared public
# --------------------------------------------------------------------------- #
def test_categorical_column_is_released_privately_not_read_off_its_categories():
    """The issue's repro: ``.astype("category")`` takes the categories from
    the values, so (min, max) of the categories is the data's exact range.
    It must cost epsilon (recorded), not be returned for free."""
    with track_budget() as acc, warnings.catch_warnings():
        # n * eps = 5: far below the refusal threshold; released all the same
        res = private_bounds(
            _rooms(), epsilon=1.0, random_state=0, small_budget="ignore"
        )
    assert res.estimated.tolist() == [True]
    assert res.epsilon == 1.0 and res.epsilon_per_column.tolist() == [1.0]
    assert acc.spends == [("private_bounds", PrivacyBudget(1.0, 0.0))]


@pytest.mark.parametrize("declared", [True, ["rooms"], [0], "rooms"])
def test_categories_declared_public_cost_nothing(declared):
    with track_budget() as acc:
        res = private_bounds(
            _rooms(), epsilon=1.0, public_categories=declared, random_state=0
        )
    assert (res.lower.tolist(), res.upper.tolist()) == ([1.0], [55.0])
    assert res.estimated.tolist() == [False] and res.epsilon == 0.0
    assert acc.spends == []
    assert schema_bounds(_rooms(), public_categories=declared) == {0: (1.0, 55.0)}


def test_schema_bounds_reads_only_booleans_by_default():
    df = pd.DataFrame(
        {
            "owner": [True, False],
            "rooms": pd.Categorical([2, 3], categories=[1, 2, 3, 4]),
        }
    )
    assert schema_bounds(df) == {0: (0.0, 1.0)}
    assert schema_bounds(df, public_categories=True) == {
        0: (0.0, 1.0),
        1: (1.0, 4.0),
    }


@pytest.mark.parametrize(
    "X, declared, match",
    [
        (pd.DataFrame({"a": [1.0, 2.0]}), ["a"], "not categorical"),
        (pd.DataFrame({"a": pd.Categorical(["x", "y"])}), True, "not numbers"),
        (pd.DataFrame({"a": [1.0, 2.0]}), ["b"], "not a column name"),
        (pd.DataFrame({"a": [1.0, 2.0]}), [3], "column index 3"),
        (np.ones((2, 1)), True, "not one"),
    ],
)
def test_public_categories_refuses_what_it_cannot_mean(X, declared, match):
    with track_budget() as acc, pytest.raises(ValueError, match=match):
        private_bounds(X, epsilon=1.0, public_categories=declared, random_state=0)
    assert acc.spends == []


def test_fm_private_bounds_release_a_categorical_column():
    """``FMLinearRegression(bounds_X="private")`` on a categorical frame: the
    column's range is released (the share recorded), not (1, 55) for free;
    declared in ``public_bounds`` it is free again."""
    df = _rooms(60)
    y = np.random.default_rng(0).normal(size=len(df))
    params = dict(epsilon=5.0, bounds_X="private", bounds_y=(-3, 3), random_state=0)
    with track_budget() as acc:
        reg = FMLinearRegression(**params).fit(df, y)
    assert reg.bounds_privacy_spent_ == PrivacyBudget(1.0, 0.0)
    assert acc.spends[0] == ("FMLinearRegression.bounds", PrivacyBudget(1.0, 0.0))
    public = FMLinearRegression(**params, public_bounds={"rooms": (1, 55)}).fit(df, y)
    assert public.bounds_privacy_spent_ == PrivacyBudget(0.0, 0.0)
    assert (public.bounds_[0].tolist(), public.bounds_[1].tolist()) == ([1.0], [55.0])


def test_private_bounds_estimator_releases_a_categorical_column():
    df = _rooms(60)
    y = (np.arange(len(df)) % 2).astype(int)
    op = OPLogisticRegression(epsilon=5.0, delta=1e-6, classes=[0, 1], random_state=0)
    with track_budget() as acc:
        est = PrivateBoundsEstimator(op, random_state=0).fit(df, y)
    assert est.bounds_privacy_spent_ == PrivacyBudget(1.0, 0.0)
    assert acc.spends[0] == ("PrivateBoundsEstimator.bounds", PrivacyBudget(1.0))


# --------------------------------------------------------------------------- #
# 2. validate, record (checking the cap), then draw
# --------------------------------------------------------------------------- #
def _envelope_data(kind, n=2000):
    rng = np.random.default_rng(1)
    if kind == "fills":  # the looseness test keeps the envelope
        return rng.uniform(0.0, 10.0, (n, 1))
    if kind == "tight":  # the test finds it loose: the pair is drawn
        return rng.normal(5.0, 0.2, (n, 1))
    return np.full((n, 1), 3.0)


@pytest.mark.parametrize("cap", [TEST_N_EPSILON / 2000 * 2, 0.5, 0.99])
def test_refusal_under_a_cap_does_not_depend_on_the_data(cap):
    """n = 2000, epsilon 1 inside an envelope: the test costs 32 / n = 0.016.
    Under a cap between that and epsilon the old release recorded 0.016
    (kept envelope: accepted) or 1.0 (loose: refused), after drawing. Now
    every data set is refused, nothing is recorded and nothing is drawn
    (the caller's generator is untouched)."""
    for kind in ("fills", "tight", "constant"):
        X = _envelope_data(kind)
        gen = np.random.default_rng(7)
        before = copy.deepcopy(gen.bit_generator.state)
        with track_budget(cap, strict=False) as acc:
            with pytest.raises(BudgetExceededError):
                private_bounds(
                    X, epsilon=1.0, envelope={0: (0.0, 10.0)}, random_state=gen
                )
        assert acc.spends == [], kind
        assert gen.bit_generator.state == before, kind


def test_the_whole_epsilon_is_recorded_whatever_the_test_says():
    outcomes = {}
    for kind in ("fills", "tight", "constant"):
        with track_budget(1.0) as acc:
            res = private_bounds(
                _envelope_data(kind),
                epsilon=1.0,
                envelope={0: (0.0, 10.0)},
                random_state=0,
            )
        assert acc.spends == [("private_bounds", PrivacyBudget(1.0, 0.0))], kind
        assert res.epsilon == 1.0, kind
        outcomes[kind] = res.epsilon_unused
    # the test's outcome shows only in the unused part (information only)
    # n * eps_c = 2,000: the test gets 1/16 of the part (> TEST_N_EPSILON)
    assert 2000 / 16 > TEST_N_EPSILON
    assert outcomes["fills"] == pytest.approx(1.0 - 1.0 / 16)
    assert outcomes["tight"] == 0.0


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
# 4. / 5. complex and string input: a clear ValueError before any spend
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "X, match",
    [
        (np.ones((50, 1)) + 1j, "Complex data not supported: X column 0"),
        (
            pd.DataFrame({"a": np.ones(50), "z": np.ones(50) * (1 + 2j)}),
            r"Complex data not supported: X column 'z' \(index 1\)",
        ),
        (
            np.array([[1.0, 1 + 1j]] * 50, dtype=object),
            "Complex data not supported: X column 1",
        ),
    ],
)
def test_complex_input_is_refused_before_spending(X, match):
    with track_budget() as acc, pytest.raises(ValueError, match=match):
        private_bounds(X, epsilon=1.0, random_state=0)
    assert acc.spends == []


def test_a_string_categorical_column_is_named_in_a_value_error():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {"x": rng.normal(size=300), "town": pd.Categorical(rng.choice(["a", "b"], 300))}
    )
    with track_budget() as acc:
        with pytest.raises(ValueError, match=r"X column 'town' \(index 1\) holds non"):
            private_bounds(df, epsilon=1.0, random_state=0)
        # the estimator's own input check (scikit-learn's message) comes first
        with pytest.raises(ValueError, match="could not convert string to float"):
            FMLinearRegression(
                bounds_X="private", bounds_y=(-3, 3), random_state=0
            ).fit(df, rng.normal(size=300))
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


# --------------------------------------------------------------------------- #
# 7. the exact keep-the-envelope score
# --------------------------------------------------------------------------- #
def _rank_distance(x, c, level):
    """Independent of skdp: how far, in ranks, ``c`` is from the quantile."""
    below = sum(v < c for v in x)
    upto = sum(v <= c for v in x)
    target = level * len(x)
    return max(0.0, below - target, target - upto)


def test_keep_the_envelope_score_is_exact_where_rows_are_clipped(monkeypatch):
    """20 rows in the envelope [0, 10], three below it and two above (clipped
    to its ends). n * epsilon = 200, the test's 32 forced "loose": the pair
    gets n * eps = 168, so q = 1/4 (q n = 5). The envelope's score is
    -max(d_q(0), d_{1-q}(10)) on the clipped rows: 3 rows sit at 0
    (d = 5 - 3 = 2), 18 lie below 10 and 20 at or below it (d = 18 - 15 =
    3): -3, whatever the number of rows clipped beyond that."""
    x = np.array(
        [-4.0, -1.0, -0.5, 12.0, 30.0]
        + [0.4, 0.9, 1.3, 2.2, 2.8, 3.1, 3.9, 4.6, 5.2, 5.9, 6.3, 7.1, 7.7, 8.4, 9.3]
    )
    monkeypatch.setattr(pb, "looseness_test", lambda *a: (1.0, True))
    import skdp._ranges.column_draws as draws

    seen = []
    draw = draws._pair_cells

    def spy(S, epsilon, q, grid, log_weight, prefix, rng, fallback=None):
        seen.append((float(epsilon[0]), fallback))
        return draw(S, epsilon, q, grid, log_weight, prefix, rng, fallback)

    monkeypatch.setattr(draws, "_pair_cells", spy)
    pb.private_bounds(x[:, None], epsilon=10.0, envelope={0: (0, 10)}, random_state=0)
    clipped = np.clip(x, 0.0, 10.0)
    q = 0.25
    expected = -max(
        _rank_distance(clipped, 0.0, q), _rank_distance(clipped, 10.0, 1 - q)
    )
    assert expected == -3.0
    [(epsilon, fallback)] = seen
    assert epsilon == pytest.approx(10.0 - TEST_N_EPSILON / 20, rel=1e-12)
    assert pb.quantile_level(20, epsilon) == q
    # its weight: FALLBACK_WEIGHT times the pairs' base mass, eps * u / 2
    grid, log_weight = pb.envelope_grid(0.0, 10.0)
    total_mass = np.logaddexp.reduce(log_weight)
    assert fallback[0] == pytest.approx(
        np.log(10.0) + 2 * total_mass + 0.5 * epsilon * expected, rel=1e-12
    )


def test_a_column_mostly_one_value_gets_a_range_of_positive_width():
    # 90% of the rows hold 20: the median-width release (small n * eps) and the
    # quantile pair (larger) both land on the one value; a range of width 0
    # was released (56 of these 120 calls before) and every estimator then
    # refused it (the small-data benchmark's FM private column on CASchools)
    x = np.full(300, 20.0)
    x[:30] = np.linspace(0, 60, 30)
    for seed in range(40):
        for eps in (0.3, 1.0, 5.0):
            r = private_bounds(
                x[:, None], epsilon=eps, random_state=seed, small_budget="ignore"
            )
            assert r.upper[0] > r.lower[0]
    X = np.column_stack([x, np.random.default_rng(0).normal(size=300)])
    y = X[:, 1] * 0.5
    FMLinearRegression(
        epsilon=5.0, bounds_X="private", bounds_y=(-3, 3), random_state=0
    ).fit(X, y)
