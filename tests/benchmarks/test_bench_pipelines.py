"""bench_pipelines' account of diffprivlib's logistic regression, and its
time-limited child fits."""

import math
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_pipelines import dpl_lr_certified_epsilon, limited  # noqa: E402


@pytest.mark.parametrize("eps", [0.1, 0.5, 2.0, 5.0])
def test_certified_epsilon_is_nominal_for_unit_rows(eps):
    # q = 0 leaves the intercept column: q' = 1, where c q' = c q'^2
    assert dpl_lr_certified_epsilon(eps, 0.0) == pytest.approx(eps, rel=1e-12)


def test_certified_epsilon_both_branches():
    # eps' = eps - 2 log(1 + q'/4) > 0: eps' + 2 log(1 + q'^2 / 4)
    q = math.sqrt(3.0**2 + 1)
    eps = 5.0
    eps_p = eps - 2 * math.log1p(q / 4)
    assert eps_p > 0
    expected = eps_p + 2 * math.log1p(q * q / 4)
    assert dpl_lr_certified_epsilon(eps, 3.0) == pytest.approx(expected, rel=1e-12)
    # eps' <= 0: ridge c q' / (e^(eps/4) - 1), noise for eps / 2
    q = math.sqrt(20.0**2 + 1)
    expected = 0.5 + 2 * math.log1p(q * math.expm1(0.25))
    assert dpl_lr_certified_epsilon(1.0, 20.0) == pytest.approx(expected, rel=1e-12)
    assert dpl_lr_certified_epsilon(1.0, 20.0) > 1.0


def _sleep(seconds):
    time.sleep(seconds)
    return seconds


def test_limited_returns_or_stops():
    assert limited(_sleep, (0.0,), 30)[0] == 0.0
    out, seconds = limited(_sleep, (60.0,), 0.5)
    assert out is None and seconds < 30
