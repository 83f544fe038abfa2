import signal

import numpy as np
import pytest


@pytest.fixture(scope="module")
def data():
    """A small regression set inside the box [-1, 1]^3, labels within [-2, 2]."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (240, 3))
    y = X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=240)
    return X, y


@pytest.fixture
def time_bound(request):
    """Fail (instead of hanging) past the module's ``TIME_LIMIT`` seconds."""
    limit = getattr(request.module, "TIME_LIMIT", 120)

    def expire(signum, frame):
        raise TimeoutError(f"{request.node.name}: over {limit} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(limit)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
