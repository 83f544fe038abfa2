"""Every release under track_budget is recorded once, wherever it runs."""

import multiprocessing
import os
import pickle
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import joblib
import numpy as np
import pytest
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GridSearchCV,
    RandomizedSearchCV,
    cross_validate,
)

from skdp.accounting import (
    LedgerUnreachableError,
    PrivacyBudget,
    _process,
    _tracking,
    _transport,
    record_spend,
    track_budget,
)
from skdp.exceptions import BudgetExceededError
from skdp.linear_model import FMLinearRegression
from skdp.preprocessing import PrivateLabelClassifier, RandomizedResponse
from skdp.vertical import VerticalFMRegressor

EPSILONS = [0.5, 1.0]
CV = 3


pytestmark = pytest.mark.usefixtures("time_bound")  # 120 s a test


def fm(**kw):
    return FMLinearRegression(bounds_X=(-1, 1), bounds_y=(-2, 2), random_state=0, **kw)


def true_search_total(search):
    """Every (fold, candidate) fit plus the refit, by basic composition."""
    return CV * sum(EPSILONS) + search.best_params_["epsilon"]


def fit_in_thread(X, y):
    return fm(epsilon=0.25).fit(X, y)


@pytest.mark.parametrize("backend", ["loky", "threading", "multiprocessing"])
@pytest.mark.parametrize("n_jobs", [1, 2, -1])
def test_grid_search_records_every_fit(data, backend, n_jobs):
    X, y = data
    with joblib.parallel_backend(backend):
        with track_budget() as acc:
            search = GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=CV, n_jobs=n_jobs)
            search.fit(X, y)
    assert len(acc.spends) == CV * len(EPSILONS) + 1
    assert acc.total.epsilon == pytest.approx(true_search_total(search))


def test_randomized_search_and_cross_validate(data):
    X, y = data
    with track_budget() as acc:
        RandomizedSearchCV(
            fm(), {"epsilon": EPSILONS}, n_iter=2, cv=CV, n_jobs=2, random_state=0
        ).fit(X, y)
        cross_validate(fm(epsilon=0.25), X, y, cv=4, n_jobs=2)
    assert len(acc.spends) == CV * 2 + 1 + 4
    assert acc.total.epsilon >= CV * sum(EPSILONS) + 0.5 + 4 * 0.25 - 1e-12


def test_nested_searches(data):
    X, y = data
    inner = GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=2, n_jobs=2)
    with track_budget() as acc:
        cross_validate(inner, X, y, cv=2, n_jobs=2)
    # per outer fold: 2 folds x 2 candidates + 1 refit
    assert len(acc.spends) == 2 * (2 * 2 + 1)
    assert acc.total.epsilon >= 2 * (2 * sum(EPSILONS) + 0.5)


def test_eight_fits_in_four_threads(data):
    X, y = data
    with track_budget() as acc:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: fit_in_thread(X, y), range(8)))
    assert len(acc.spends) == 8
    assert acc.total.epsilon == pytest.approx(2.0)


def _fit_in_own_block(X, y):
    with track_budget() as inner:
        fm(epsilon=1.0).fit(X, y)
    return inner


def test_a_block_opened_in_a_thread_nests_in_the_outer_block(data):
    # issue 22: five threads each open their own block around a fit of epsilon 1
    X, y = data
    with pytest.raises(BudgetExceededError, match="past the limit"):
        with track_budget(epsilon=1.0) as outer:
            with ThreadPoolExecutor(2) as pool:
                futures = [pool.submit(_fit_in_own_block, X, y) for _ in range(5)]
                for future in futures:
                    future.result()
    assert outer.spends == [("FMLinearRegression", PrivacyBudget(1.0))]
    assert outer.refusals  # the second release was the one refused
    # without a cap, every thread's release is in the outer block and its own
    with track_budget() as outer:
        with ThreadPoolExecutor(2) as pool:
            inners = list(pool.map(_fit_in_own_block, [X] * 5, [y] * 5))
    assert len(outer.spends) == 5 and outer.total == PrivacyBudget(5.0)
    # a thread cannot tell which blocks were open where it was started, so a
    # block it opens nests in every open block, a sibling thread's included:
    # each inner block holds its own release and maybe a sibling's (conservative)
    assert all(1 <= len(inner.spends) <= 5 for inner in inners)


def test_private_label_classifier_search(data):
    X, y = data
    labels = (y > 0).astype(int)
    clf = PrivateLabelClassifier(
        LogisticRegression(), RandomizedResponse(epsilon=1.0, classes=[0, 1])
    )
    with track_budget() as acc:
        search = GridSearchCV(clf, {"privatizer__epsilon": EPSILONS}, cv=CV, n_jobs=2)
        search.fit(X, labels)
    assert len(acc.spends) == CV * len(EPSILONS) + 1
    best = search.best_params_["privatizer__epsilon"]
    assert acc.total.epsilon == pytest.approx(CV * sum(EPSILONS) + best)


def test_vertical_estimator_search(data):
    X, y = data
    est = VerticalFMRegressor(
        partition=[[0], [1, 2]], bounds_X=(-1, 1), bounds_y=(-2, 2), random_state=0
    )
    with track_budget() as acc:
        search = GridSearchCV(est, {"epsilon": EPSILONS}, cv=CV, n_jobs=2).fit(X, y)
    assert len(acc.spends) == CV * len(EPSILONS) + 1
    assert acc.total.epsilon == pytest.approx(true_search_total(search))


@pytest.mark.parametrize("backend", ["loky", "threading"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cap_stops_the_search_before_the_excess_release(data, backend, n_jobs):
    X, y = data
    limit = PrivacyBudget(2.0)
    search = GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=CV, n_jobs=n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        warnings.simplefilter("ignore", UserWarning)  # "non-finite test scores"
        with pytest.raises(BudgetExceededError):
            with joblib.parallel_backend(backend):
                with track_budget(limit.epsilon) as acc:
                    search.fit(X, y)
    assert acc.total <= limit
    assert acc.refusals
    # the refit was refused too: no fitted model comes out of the search
    assert not hasattr(getattr(search, "best_estimator_", None), "coef_")


def test_cap_without_refit_fails_when_the_block_ends(data):
    X, y = data
    search = GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=CV, n_jobs=2, refit=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        warnings.simplefilter("ignore", UserWarning)  # "non-finite test scores"
        with pytest.raises(BudgetExceededError, match="refused"):
            with track_budget(2.0) as acc:
                search.fit(X, y)  # NaN scores, no exception here
    assert np.isnan(search.cv_results_["mean_test_score"]).any()
    assert acc.total.epsilon <= 2.0


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cross_validate_refusal_fails_when_the_block_ends(data, n_jobs):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(BudgetExceededError, match="error_score"):
            with track_budget(1.0) as acc:
                result = cross_validate(fm(epsilon=0.5), X, y, cv=3, n_jobs=n_jobs)
    assert np.isnan(result["test_score"]).sum() == 1
    assert len(acc.spends) == 2 and len(acc.swallowed) == 1


def test_pickled_estimator_is_recorded_once_in_the_same_process(data):
    X, y = data
    with track_budget() as acc:
        clone = pickle.loads(pickle.dumps(fm(epsilon=0.5)))
        clone.fit(X, y)
    assert len(acc.spends) == 1
    # outside a block the pickle carries nothing
    assert _tracking._STATE_KEY not in fm().__getstate__()


def _fit_and_report(est, X, y):
    est.fit(X, y)
    return est.privacy_spent_


def test_process_pool_with_pickled_estimators(data):
    X, y = data
    ctx = multiprocessing.get_context("spawn")
    with track_budget() as acc:
        with ProcessPoolExecutor(2, mp_context=ctx) as pool:
            spent = list(
                pool.map(_fit_and_report, [fm(epsilon=0.5)] * 2, [X] * 2, [y] * 2)
            )
    assert spent == [PrivacyBudget(0.5)] * 2
    assert len(acc.spends) == 2


def _fit_in_child(X, y, queue):
    try:
        fm(epsilon=0.5).fit(X, y)
        queue.put("ok")
    except BaseException as exc:  # report to the parent
        queue.put(repr(exc))


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork"
)
def test_forked_child_records_in_the_parent(data):
    X, y = data
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
        with track_budget() as acc:
            child = ctx.Process(target=_fit_in_child, args=(X, y, queue))
            child.start()
            child.join(60)
    assert queue.get(timeout=10) == "ok"
    assert child.exitcode == 0
    assert [budget for _, budget in acc.spends] == [PrivacyBudget(0.5)]


def _parent_handle(path):
    # a handle naming this process's parent: this process is then its worker
    owner = _process.identity(os.getppid())
    return _transport.RemoteLedger("0" * 32, path, owner)


@pytest.mark.skipif(not _process.SUPPORTED, reason="needs Linux peer credentials")
def test_unreachable_ledger_refuses_the_release(tmp_path):
    handle = _parent_handle(str(tmp_path / "no-such-socket"))
    assert handle.binds_here()
    _tracking._adopt((handle,))
    try:
        with pytest.raises(LedgerUnreachableError, match="cannot be reached"):
            record_spend(PrivacyBudget(1.0), "x")
    finally:
        _tracking._inherited.pop(handle.id, None)


@pytest.mark.skipif(not _process.SUPPORTED, reason="needs Linux peer credentials")
def test_a_socket_served_by_another_process_is_not_trusted():
    # this process's own listener, but the handle names the parent as owner:
    # the client checks who serves the socket and refuses
    path, _ = _transport.ensure_server()
    handle = _parent_handle(path)
    with pytest.raises(LedgerUnreachableError, match="served by pid"):
        handle._try_record(PrivacyBudget(1.0), "x", ())


def test_handle_of_an_ended_process_refuses_every_release():
    # a worker whose ancestor (the ledger's process) has ended cannot tell a
    # block that ended from an owner killed inside it: it refuses (issue 40;
    # 0380120 took it for an ended block and released, unrecorded and uncapped)
    child = multiprocessing.get_context("spawn").Process(target=int)
    child.start()
    child.join(60)
    gone = _transport.RemoteLedger(
        "1" * 32, "/nonexistent", _process.ProcessId("m", child.pid, 1)
    )
    assert not gone.binds_here()
    _tracking._inherited[gone.id] = gone  # as if adopted before the owner ended
    try:
        for _ in range(2):  # every release, not only the first
            with pytest.raises(LedgerUnreachableError, match="has ended"):
                record_spend(PrivacyBudget(1.0), "x")
        assert _tracking._inherited[gone.id] is gone
    finally:
        _tracking._inherited.pop(gone.id, None)


def test_workers_drop_the_handle_when_the_block_ends(data):
    # the same loky workers serve a search inside a block, then one outside
    X, y = data
    with track_budget() as first:
        GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=CV, n_jobs=2).fit(X, y)
    search = GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=CV, n_jobs=2).fit(X, y)
    assert search.best_estimator_.privacy_spent_.epsilon in EPSILONS
    assert len(first.spends) == CV * len(EPSILONS) + 1
    with track_budget() as second:  # and a new block is recorded afresh
        GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=CV, n_jobs=2).fit(X, y)
    assert len(second.spends) == CV * len(EPSILONS) + 1
    assert len(first.spends) == CV * len(EPSILONS) + 1


@pytest.mark.slow
def test_dask_backend(data):
    distributed = pytest.importorskip("distributed")
    X, y = data
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    )
    with cluster, distributed.Client(cluster):
        with joblib.parallel_backend("dask"):
            with track_budget() as acc:
                search = GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=CV, n_jobs=-1)
                search.fit(X, y)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FitFailedWarning)
                warnings.simplefilter("ignore", UserWarning)
                with pytest.raises(BudgetExceededError):
                    with track_budget(2.0) as capped:
                        GridSearchCV(fm(), {"epsilon": EPSILONS}, cv=CV, n_jobs=-1).fit(
                            X, y
                        )
    assert len(acc.spends) == CV * len(EPSILONS) + 1
    assert acc.total.epsilon == pytest.approx(true_search_total(search))
    assert capped.total.epsilon <= 2.0
