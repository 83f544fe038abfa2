"""Exact survival probabilities and recommended budgets of label release."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from skdp.preprocessing import (
    changed_labels_log_pmf,
    label_flip_probability,
    label_survival_probability,
    recommended_epsilon,
)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("n", [1, 4, 5])
@pytest.mark.parametrize("fraction", [0.0, 0.5, 0.6, 1.0])
def test_survival_equals_brute_force_exponential_mechanism(n, n_classes, fraction):
    eps = 1.3
    y = np.zeros(n, dtype=int)
    outputs = np.array(list(itertools.product(range(n_classes), repeat=n)))
    agreements = (outputs == y).sum(axis=1)
    weights = np.exp(eps * agreements / 2)
    brute = weights[agreements >= fraction * n].sum() / weights.sum()
    assert label_survival_probability(n, eps, n_classes, fraction) == pytest.approx(
        brute, rel=1e-12
    )


@pytest.mark.parametrize("n", [7, 50, 333])
@pytest.mark.parametrize(("epsilon", "n_classes"), [(0.2, 2), (2.0, 5), (9.0, 3)])
def test_survival_equals_log_pmf_tail(n, epsilon, n_classes):
    pmf = np.exp(changed_labels_log_pmf(n, epsilon, n_classes))
    for fraction in (0.25, 0.5, 0.9):
        max_changes = n - math.ceil(fraction * n)
        expected = pmf[: max_changes + 1].sum()
        got = label_survival_probability(n, epsilon, n_classes, fraction)
        assert got == pytest.approx(expected, rel=1e-10, abs=1e-300)


def test_fraction_edges_and_float_rounding():
    p = label_flip_probability(1.0, 2)
    assert label_survival_probability(10, 1.0, 2, 0.0) == 1.0
    assert label_survival_probability(10, 1.0, 2, 1.0) == pytest.approx((1 - p) ** 10)
    # 0.3 * 10 = 3.0000000000000004 must still mean "at least 3 survive"
    assert label_survival_probability(10, 1.0, 2, 0.3) == pytest.approx(
        stats.binom.cdf(7, 10, p)
    )
    assert label_survival_probability(10, np.inf, 3, 1.0) == 1.0


def test_exponential_is_randomized_response_at_half_epsilon():
    for n, eps, C in [(20, 1.0, 2), (300, 0.4, 4)]:
        exponential = label_survival_probability(n, 2 * eps, C, 0.5)
        rr = label_survival_probability(n, eps, C, 0.5, mechanism="randomized_response")
        assert exponential == pytest.approx(rr, rel=1e-12)


@pytest.mark.parametrize("n", [10, 101, 1000, 10**5])
@pytest.mark.parametrize("target", [0.9, 0.99, 0.999999])
def test_recommended_epsilon_is_the_smallest_reaching_target(n, target):
    eps = recommended_epsilon(n, target, 2, 0.5)
    assert eps > 0
    assert label_survival_probability(n, eps, 2, 0.5) >= target
    assert label_survival_probability(n, eps * (1 - 1e-9), 2, 0.5) < target
    rr_eps = recommended_epsilon(n, target, 2, 0.5, mechanism="randomized_response")
    assert rr_eps == pytest.approx(eps / 2, rel=1e-9)


def test_recommended_epsilon_decreases_with_n_at_half():
    # more labels concentrate the survivor fraction: less budget for the same odds
    values = [recommended_epsilon(n, 0.99, 2, 0.5) for n in (11, 101, 1001, 10001)]
    assert all(a > b for a, b in zip(values, values[1:]))


def test_recommended_epsilon_zero_when_any_budget_suffices():
    # with p_flip <= 1/2 at any epsilon, 10% survivors out of 1000 is near certain
    assert recommended_epsilon(1000, 0.9, 2, 0.1) == 0.0


@pytest.mark.parametrize(
    ("func", "kwargs", "match"),
    [
        (label_survival_probability, {"n": 0, "epsilon": 1.0}, "n must be"),
        (label_survival_probability, {"n": 5, "epsilon": 0.0}, "epsilon"),
        (label_survival_probability, {"n": 5, "epsilon": 1, "fraction": 1.5}, "frac"),
        (label_survival_probability, {"n": 5, "epsilon": 1, "n_classes": 1}, "n_cla"),
        (
            label_survival_probability,
            {"n": 5, "epsilon": 1, "mechanism": "laplace"},
            "mechanism",
        ),
        (recommended_epsilon, {"n": 5, "target": 1.0}, "target"),
        (recommended_epsilon, {"n": 5, "target": 0.0}, "target"),
        (changed_labels_log_pmf, {"n": 2.5, "epsilon": 1.0}, "n must be"),
    ],
)
def test_bad_arguments(func, kwargs, match):
    with pytest.raises(ValueError, match=match):
        func(**kwargs)
