"""Parallel composition: releases on disjoint rows compose by their maximum."""

import base64

import joblib
import numpy as np
import pytest

from skdp.accounting import (
    PrivacyBudget,
    RandomizedResponseEvent,
    _ledger,
    _transport,
    on_rows,
    record_spend,
    track_budget,
)
from skdp.exceptions import BudgetExceededError
from skdp.linear_model import FMLinearRegression
from skdp.preprocessing import RandomizedResponse

pytestmark = pytest.mark.usefixtures("time_bound")  # loky workers: 120 s a test
N = 200
DELTA = 1e-5


@pytest.fixture(scope="module")
def labels():
    rng = np.random.default_rng(0)
    return np.zeros((N, 1)), rng.integers(0, 2, N)


def release_stages(X, y, stages, **budget):
    """RR at epsilon 1 on each stage's rows, each declared with on_rows."""
    with track_budget(**budget) as acc:
        for rows in stages:
            with on_rows(rows):
                rr = RandomizedResponse(epsilon=1.0, classes=[0, 1], random_state=0)
                rr.fit_resample(X[rows], y[rows])
    return acc


@pytest.mark.parametrize(
    "budget",
    [{"epsilon": 1.0}, {"epsilon": 1.0, "delta": DELTA, "accountant": "pld"}],
    ids=["basic", "pld"],
)
def test_disjoint_stages_cost_their_maximum(labels, budget):
    # issue 28: two RR releases on disjoint rows under a cap of 1 (was refused at 2)
    X, y = labels
    halves = np.array_split(np.random.default_rng(1).permutation(N), 2)
    acc = release_stages(X, y, halves, **budget)
    one = release_stages(X, y, halves[:1], **budget)
    assert len(acc.spends) == 2 and len(one.spends) == 1
    assert acc.total == one.total <= PrivacyBudget(1.0, DELTA)  # one RR's guarantee
    assert [rows.size for rows in acc.rows] == [N // 2, N // 2]


@pytest.mark.parametrize(
    "budget",
    [{}, {"delta": DELTA, "accountant": "pld"}],
    ids=["basic", "pld"],
)
def test_overlapping_rows_still_add(labels, budget):
    X, y = labels
    first, second = np.arange(0, 101), np.arange(100, N)  # row 100 in both
    acc = release_stages(X, y, [first, second], **budget)
    with track_budget(**budget) as both:  # the same releases on all rows
        for _ in range(2):
            record_spend(
                PrivacyBudget(1.0), "rr", mechanism=RandomizedResponseEvent(1.0, 2)
            )
    assert acc.total == both.total
    assert acc.basic_total == PrivacyBudget(2.0)
    with pytest.raises(BudgetExceededError, match="past the limit"):
        release_stages(X, y, [first, second], epsilon=1.0)


def test_a_release_on_all_rows_adds_to_every_stage():
    with track_budget() as acc:
        record_spend(PrivacyBudget(0.5), "everyone")
        for stage in np.array_split(np.arange(N), 4):
            with on_rows(stage):
                record_spend(PrivacyBudget(1.0), "stage")
        record_spend(PrivacyBudget(0.25, 1e-6), "everyone again")
    assert acc.total == PrivacyBudget(1.75, 1e-6)


def test_cells_match_a_brute_force_over_rows():
    # the worst row's sequential composition, over random overlapping releases
    rng = np.random.default_rng(0)
    universe = 30
    for _ in range(20):
        releases = []
        with track_budget() as acc:
            for _ in range(rng.integers(1, 9)):
                eps = float(rng.uniform(0.1, 1.0))
                rows = None
                if rng.random() < 0.8:
                    rows = rng.choice(
                        universe, rng.integers(0, universe), replace=False
                    )
                releases.append((eps, rows))
                record_spend(PrivacyBudget(eps), "r", rows=rows)
        per_row = [
            sum(eps for eps, rows in releases if rows is None or row in rows)
            for row in range(universe + 1)  # row 30: named by no release
        ]
        assert acc.total.epsilon == pytest.approx(max(per_row), rel=1e-12)


def test_pld_cells_match_a_brute_force_over_rows():
    from skdp.accounting._pld import pld_epsilon

    rng = np.random.default_rng(1)
    events = [RandomizedResponseEvent(float(e), 3) for e in rng.uniform(0.2, 1, 6)]
    rows = [rng.choice(12, 6, replace=False) for _ in events]
    with track_budget(accountant="pld", delta=DELTA) as acc:
        for event, r in zip(events, rows):
            record_spend(PrivacyBudget(event.epsilon), "rr", mechanism=event, rows=r)
    worst = max(
        min(
            pld_epsilon([e for e, r in zip(events, rows) if row in r], DELTA),
            sum(e.epsilon for e, r in zip(events, rows) if row in r),
        )
        for row in range(12)
    )
    assert acc.total.epsilon == pytest.approx(worst, rel=1e-9)


def test_positions_map_through_the_declared_rows():
    ids = np.array([40, 10, 30, 20])
    with track_budget() as acc:
        with on_rows(ids):
            record_spend(PrivacyBudget(1.0), "a", rows=[0, 1])  # ids 40 and 10
            record_spend(PrivacyBudget(1.0), "b", rows=np.array([0, 0, 1, 1], bool))
            record_spend(PrivacyBudget(1.0), "c")  # all four declared rows
        record_spend(PrivacyBudget(1.0), "d", rows=[1, 2])  # ids themselves
    assert [r.tolist() for r in acc.rows] == [
        [10, 40],
        [20, 30],
        [10, 20, 30, 40],
        [1, 2],
    ]
    assert acc.total == PrivacyBudget(2.0)


def _stage(est, rows):
    # the estimator carries the block's handle to the worker
    record_spend(PrivacyBudget(1.0), "stage", rows=rows)
    return est


def test_rows_reach_the_ledger_from_worker_processes():
    halves = np.array_split(np.arange(N), 2)
    with track_budget(epsilon=1.0) as acc:
        joblib.Parallel(n_jobs=2, backend="loky")(
            joblib.delayed(_stage)(FMLinearRegression(), rows) for rows in halves
        )
    assert acc.total == PrivacyBudget(1.0)
    assert sorted(r.tolist() for r in acc.rows) == [h.tolist() for h in halves]


def test_too_many_cells_count_on_every_row(monkeypatch):
    monkeypatch.setattr(_ledger, "MAX_CELLS", 3)
    with track_budget() as acc:
        for stage in np.array_split(np.arange(N), 4):
            record_spend(PrivacyBudget(1.0), "stage", rows=stage)
    # cells: stages 1, 2 and the unnamed rows; the third stage counts everywhere
    assert acc.total == PrivacyBudget(3.0)


@pytest.mark.parametrize(
    "rows, exc, match",
    [
        (np.zeros((2, 2), int), ValueError, "1-D"),
        ([0.5, 1.5], TypeError, "integer row ids"),
        (["a"], TypeError, "integer row ids"),
        ([3, -1], ValueError, "rows must hold row ids >= 0"),
        (np.array([2**64 - 1], np.uint64), ValueError, "below 2\\*\\*63"),
    ],
)
def test_bad_rows(rows, exc, match):
    with pytest.raises(exc, match=match):
        record_spend(PrivacyBudget(1.0), "x", rows=rows)
    with pytest.raises(exc, match=match):
        with on_rows(rows):
            pass


def test_positions_outside_the_declared_rows():
    with track_budget(), on_rows([3, 4]):
        with pytest.raises(ValueError, match="positions in the 2 rows"):
            record_spend(PrivacyBudget(1.0), "x", rows=[2])


def test_negative_ids_do_not_alias_a_row():
    # issue 40: on 100 rows, -1 and 99 name one record; 0380120 composed them
    # in parallel (total 1.0, not 2.0)
    with track_budget() as acc:
        with on_rows([99]):
            record_spend(PrivacyBudget(1.0), "row 99")
        with pytest.raises(ValueError, match="rows must hold row ids >= 0"):
            with on_rows([-1]):
                record_spend(PrivacyBudget(1.0), "row -1")
        with pytest.raises(ValueError, match="rows must hold row ids >= 0"):
            record_spend(PrivacyBudget(1.0), "row -1", rows=[-1])
    assert acc.spends == [("row 99", PrivacyBudget(1.0))]


def test_a_mask_must_have_one_entry_per_row():
    # issue 40: a mask of the wrong length was accepted
    with track_budget() as acc:
        with on_rows(np.arange(10, 20)):  # the release is given these 10 rows
            for length in (4, 12):
                mask = np.zeros(length, bool)
                mask[:2] = True
                with pytest.raises(ValueError, match=f"length {length}.*10 rows"):
                    record_spend(PrivacyBudget(1.0), "x", rows=mask)
            record_spend(PrivacyBudget(1.0), "ok", rows=np.arange(10) < 5)
            with pytest.raises(ValueError, match="declared row id 19"):
                with on_rows(np.ones(15, bool)):  # cannot cover row 19
                    pass
        first_half = np.arange(100) < 50
        with on_rows(first_half):  # a mask over the data set: it has 100 rows
            with pytest.raises(ValueError, match="length 99.*100 rows"):
                with on_rows(np.ones(99, bool)):
                    pass
            with pytest.raises(ValueError, match="ids of the 100 rows"):
                with on_rows([20, 150]):
                    pass
    assert [r.tolist() for r in acc.rows] == [list(range(10, 15))]


def test_nested_blocks_intersect():
    # issue 40: the inner block replaced the outer one
    with track_budget() as acc:
        with on_rows(np.arange(50)):
            with on_rows(np.arange(25, 75)):  # both promises hold: rows 25..49
                record_spend(PrivacyBudget(1.0), "inner")
                record_spend(PrivacyBudget(1.0), "inner rows", rows=[0, 30])
            record_spend(PrivacyBudget(1.0), "outer")
        with on_rows(np.arange(50, 100)):
            record_spend(PrivacyBudget(1.0), "second half")
    assert [r.tolist() for r in acc.rows] == [
        list(range(25, 50)),
        [25],  # positions 0 and 30 of the inner block: ids 25 and 55
        list(range(50)),
        list(range(50, 100)),
    ]
    assert acc.total == PrivacyBudget(3.0)  # row 25; the second half is disjoint


def test_a_nested_block_on_other_rows_is_refused():
    # positions given as ids: a stage on rows 50..99 declares its own rows
    # 0..49. Replacing the outer block (0380120), the release counted on rows
    # 0..49 and composed in parallel with the other releases on rows 50..99
    with track_budget() as acc:
        with on_rows(np.arange(50, 100)):
            record_spend(PrivacyBudget(1.0), "second half")
            with pytest.raises(ValueError, match="share no row"):
                with on_rows(np.arange(50)):
                    record_spend(PrivacyBudget(1.0), "second half again")
            with on_rows(np.arange(40, 60)):
                with pytest.raises(ValueError, match="outside an enclosing"):
                    record_spend(PrivacyBudget(1.0), "rows 40..49", rows=range(10))
    assert acc.spends == [("second half", PrivacyBudget(1.0))]


def test_the_ledger_refuses_negative_ids_from_a_worker():
    wire = base64.b64encode(np.array([-1, 5], "<i8").tobytes()).decode("ascii")
    with pytest.raises(ValueError, match="negative"):
        _transport.rows_from_wire(wire)
    assert _transport.rows_from_wire(
        _transport.rows_to_wire(np.array([5, 0]))
    ).tolist() == [0, 5]
