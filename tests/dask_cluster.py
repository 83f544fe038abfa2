"""The real dask cluster the dask tests share, and their time bound.

A test module imports :func:`client` (a module-scoped fixture: a LocalCluster
with two worker processes, closed after the module, and checked to leave no
worker process running) and, where its computations could block,
:func:`time_limit` (each test fails after ``TEST_SECONDS`` instead of hanging),
and :func:`no_client_arrays` where the test asserts that nothing of the data is
computed in the test's own process.
"""

import os
import signal

import pytest

TEST_SECONDS = 120  # a test that hangs on the cluster fails instead


@pytest.fixture(scope="module")
def client():
    """A real LocalCluster with two worker processes, closed after the module."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        death_timeout=30,
    )
    client = distributed.Client(cluster, timeout="30s")
    pids = list(client.run(os.getpid).values())
    try:
        yield client
    finally:
        client.close(timeout=30)
        cluster.close(timeout=30)
    for pid in pids:  # nothing left running
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.fixture
def time_limit():
    """Each test is bounded in time (SIGALRM interrupts a blocked compute)."""

    def expire(signum, frame):
        raise TimeoutError(f"test took more than {TEST_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(TEST_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def no_client_arrays(monkeypatch):
    """A dask array turned into numpy or computed in this process fails the
    test: the statistics must come from the workers' reductions only."""
    da = pytest.importorskip("dask.array")

    def refuse(self, *args, **kwargs):
        raise AssertionError("a dask array of the data was computed on the client")

    monkeypatch.setattr(da.Array, "__array__", refuse)
    monkeypatch.setattr(da.Array, "compute", refuse)
