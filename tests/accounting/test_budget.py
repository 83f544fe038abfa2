import math
import warnings

import pytest

from skdp import BudgetExceededError, PrivacyBudget, track_budget
from skdp.accounting import record_spend


def test_composition_adds():
    total = PrivacyBudget(0.5, 1e-6) + PrivacyBudget(1.0, 2e-6)
    assert total == PrivacyBudget(1.5, 3e-6)
    assert sum([PrivacyBudget(0.1)] * 3).epsilon == pytest.approx(0.3)


def test_partial_order():
    a, b = PrivacyBudget(1.0, 0.0), PrivacyBudget(2.0, 1e-5)
    assert a <= b and a < b and b >= a and b > a
    c = PrivacyBudget(0.5, 1e-3)
    assert not (c <= b) and not (b <= c)
    assert PrivacyBudget(1.0) <= PrivacyBudget(1.0) and not PrivacyBudget(
        1.0
    ) < PrivacyBudget(1.0)


def test_infinite_epsilon_allowed():
    assert PrivacyBudget(math.inf).epsilon == math.inf


@pytest.mark.parametrize(
    "epsilon, delta, exc",
    [
        (-1.0, 0.0, ValueError),
        (float("nan"), 0.0, ValueError),
        (1.0, 1.0, ValueError),
        (1.0, -1e-9, ValueError),
        ("1", 0.0, TypeError),
        (1.0, None, TypeError),
    ],
)
def test_bad_budget(epsilon, delta, exc):
    with pytest.raises(exc):
        PrivacyBudget(epsilon, delta)


def test_tracker_records_and_limits():
    with track_budget(epsilon=1.0, strict=False) as acc:
        record_spend(PrivacyBudget(0.4), "a")
        record_spend(PrivacyBudget(0.5), "b")
        with pytest.raises(BudgetExceededError, match="limit"):
            record_spend(PrivacyBudget(0.2), "c")
        record_spend(PrivacyBudget(0.1), "d")  # strict=False: still fits
    assert [s for s, _ in acc.spends] == ["a", "b", "d"]
    assert acc.total.epsilon == pytest.approx(1.0)
    assert acc.remaining.epsilon == pytest.approx(0.0)
    assert len(acc.refusals) == 1


def test_strict_refusal_closes_the_tracker():
    with track_budget(epsilon=1.0) as acc:
        record_spend(PrivacyBudget(0.9), "a")
        with pytest.raises(BudgetExceededError, match="limit"):
            record_spend(PrivacyBudget(0.2), "b")
        with pytest.raises(BudgetExceededError, match="already refused"):
            record_spend(PrivacyBudget(0.05), "c")  # would fit, still refused
    assert [s for s, _ in acc.spends] == ["a"]
    assert acc.swallowed == []  # the user caught it: the block ends normally


def test_refusal_then_other_error_is_reported_as_budget_error():
    with pytest.raises(BudgetExceededError, match="refused") as info:
        with track_budget(epsilon=1.0):
            with pytest.raises(BudgetExceededError):
                record_spend(PrivacyBudget(2.0), "a")
            raise ValueError("All the 6 fits failed.")
    assert isinstance(info.value.__cause__, ValueError)


def test_nested_trackers_and_no_tracking_outside():
    with track_budget() as outer:
        with track_budget(epsilon=0.5) as inner:
            record_spend(PrivacyBudget(0.3), "x")
            with pytest.raises(BudgetExceededError):
                record_spend(PrivacyBudget(0.3), "y")
        record_spend(PrivacyBudget(0.3), "z")
    # the refused spend is recorded nowhere
    assert [s for s, _ in outer.spends] == ["x", "z"]
    assert [s for s, _ in inner.spends] == ["x"]
    record_spend(PrivacyBudget(1.0), "untracked")  # no tracker active: no error
    assert len(outer.spends) == 2


def test_delta_limit():
    with track_budget(epsilon=10.0, delta=1e-6):
        with pytest.raises(BudgetExceededError, match="delta=1e-05"):
            record_spend(PrivacyBudget(0.1, 1e-5), "g")


def test_a_refusal_takes_back_the_spend_already_recorded_elsewhere():
    # the outer tracker is asked first and accepts; the inner one refuses
    with track_budget() as outer:
        with track_budget(epsilon=0.5, strict=False) as inner:
            record_spend(PrivacyBudget(0.4), "a")
            with pytest.raises(BudgetExceededError):
                record_spend(PrivacyBudget(0.4), "b")
    assert [s for s, _ in inner.spends] == ["a"]
    assert [s for s, _ in outer.spends] == ["a"]


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"accountant": "rdp"}, ValueError),
        ({"accountant": "pld"}, ValueError),  # needs delta > 0
        ({"accountant": "pld", "delta": 1.0}, ValueError),
        ({"epsilon": -1.0}, ValueError),
    ],
)
def test_bad_track_budget_arguments(kwargs, exc):
    with pytest.raises(exc):
        with track_budget(**kwargs):
            pass


def test_record_spend_type():
    with pytest.raises(TypeError, match="PrivacyBudget"):
        record_spend(1.0)
    with track_budget():
        with pytest.raises(ValueError, match="mechanism must be"):
            record_spend(PrivacyBudget(1.0), "x", mechanism="cauchy")
        with pytest.raises(TypeError, match="mechanism must be"):
            record_spend(PrivacyBudget(1.0), "x", mechanism=3.0)


def test_a_target_delta_above_the_caps_never_fits():
    # a tracker built directly, PLD target delta above the cap's delta: only
    # basic composition can keep the total within the cap
    from skdp.accounting import BudgetTracker, describe_release

    tracker = BudgetTracker(
        limit=PrivacyBudget(5.0, 1e-6), accountant="pld", delta=1e-5
    )
    budget = PrivacyBudget(1.0, 5e-7)
    events = describe_release("gaussian", budget)
    tracker._try_record(budget, "g", events)
    tracker._try_record(budget, "g", events)  # basic: (2, 1e-6), within
    with pytest.raises(BudgetExceededError, match="past the limit"):
        tracker._try_record(budget, "g", events)


def test_repr_rounds_to_12_significant_digits_and_keeps_the_values():
    spent = sum([PrivacyBudget(1.925, 1e-6)] * 16)
    assert spent.delta != 1.6e-05  # float dust of the sum, kept exactly
    assert repr(spent) == "PrivacyBudget(epsilon=30.8, delta=1.6e-05)"
    assert repr(PrivacyBudget(0.1) + PrivacyBudget(0.2)) == (
        "PrivacyBudget(epsilon=0.3, delta=0.0)"
    )
    assert repr(PrivacyBudget(1.0)) == "PrivacyBudget(epsilon=1.0, delta=0.0)"
    assert repr(PrivacyBudget(math.inf)) == "PrivacyBudget(epsilon=inf, delta=0.0)"
    # a delta just below 1 is never shown as the invalid 1.0
    near_one = PrivacyBudget(1.0, 0.6) + PrivacyBudget(1.0, 0.6)
    assert "delta=1.0)" not in repr(near_one)


def test_spends_name_the_estimator_the_user_fitted():
    """Issue 39: a meta-estimator's spends are labelled with its own class,
    the inner release in brackets (not the inner class alone)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from skdp.linear_model import OPLogisticRegression, PrivateLogisticRegression
    from skdp.preprocessing import (
        PrivateBoundsEstimator,
        PrivateBoundsWarning,
        PrivateLabelClassifier,
        RandomizedResponse,
    )

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (500, 3))
    y = (X[:, 0] > 0).astype(int)
    cases = [
        (
            PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], bounds_X=(-1, 1)),
            ["PrivateLogisticRegression ({})"],
        ),
        (
            PrivateLabelClassifier(
                LogisticRegression(), RandomizedResponse(classes=[0, 1])
            ),
            ["PrivateLabelClassifier (RandomizedResponse.fit_resample)"],
        ),
        (
            # nested: the outermost owner names the spend
            # epsilon 10: 500 rows x 3 columns at the default share give each
            # range n * epsilon = 333, above the refusal threshold (144)
            PrivateBoundsEstimator(
                PrivateLogisticRegression(epsilon=10.0, classes=[0, 1])
            ),
            ["PrivateBoundsEstimator.bounds", "PrivateBoundsEstimator ({})"],
        ),
        (
            OPLogisticRegression(epsilon=1.0, classes=[0, 1], bounds_X=(-1, 1)),
            ["OPLogisticRegression"],
        ),
    ]
    for est, expected in cases:
        with track_budget() as acc, warnings.catch_warnings():
            # 500 rows are few for private ranges: the labels are under test
            warnings.simplefilter("ignore", PrivateBoundsWarning)
            est.fit(X, y)
        sources = [source for source, _ in acc.spends]
        inner = [s for s in sources if "(" in s]
        kinds = ("OPLogisticRegression", "FMLogisticRegression")
        labels = {e.format(k) for e in expected for k in kinds}
        assert set(sources) <= labels and len(sources) == len(expected), sources
        assert all(s.endswith(")") for s in inner)
