"""The test suite runs with reproducible noise switched on (explicit opt-in).

Sampling tests use fixed seeds with tolerances argued from n, and the
reproducibility properties (dask == in-memory, dealer == central, federated ==
in-process, pins) are asserted bit for bit: both need the seeds to drive the
noise. The environment variable is set here, before any test starts a worker
process, so that those processes inherit it. The tests of the default policy
(``tests/utils/test_seed_policy.py``) switch it off with ``config_context``.
"""

import os

os.environ["SKDP_REPRODUCIBLE_NOISE"] = "1"

import pytest  # noqa: E402

# the dask tests' shared cluster and time bound (fixtures `client`, `time_limit`)
pytest_plugins = ["tests.dask_cluster"]


@pytest.fixture(autouse=True)
def _reproducible_noise_after_each_test():
    """A test (or a documentation snippet) that switches the opt-in off with
    ``skdp.set_config`` must not leave the rest of the suite on fresh noise."""
    yield
    os.environ["SKDP_REPRODUCIBLE_NOISE"] = "1"
