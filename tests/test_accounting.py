import math

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
    with track_budget(epsilon=1.0) as acc:
        record_spend(PrivacyBudget(0.4), "a")
        record_spend(PrivacyBudget(0.5), "b")
        with pytest.raises(BudgetExceededError, match="limit"):
            record_spend(PrivacyBudget(0.2), "c")
    assert [s for s, _ in acc.spends] == ["a", "b"]
    assert acc.total.epsilon == pytest.approx(0.9)
    assert acc.remaining.epsilon == pytest.approx(0.1)


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
        with pytest.raises(BudgetExceededError):
            record_spend(PrivacyBudget(0.1, 1e-5), "g")


def test_record_spend_type():
    with pytest.raises(TypeError, match="PrivacyBudget"):
        record_spend(1.0)
