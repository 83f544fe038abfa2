"""Exact tests of the random-stopping accounting (skdp.model_selection._accounting).

The bounds are checked against computations that share no code with them: the
output distribution of "best of K runs" enumerated over every sequence of runs
on a tiny discrete case, closed-form generating functions, and scipy's
distributions.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from skdp.model_selection._accounting import (
    expected_trials,
    largest_base_epsilon,
    pure_dp_rdp,
    pure_selection_epsilon,
    tnb_gamma,
    tnb_pmf,
    tnb_selection_dp,
    tnb_selection_rdp,
)


def _rr_pair(eps0, n_outputs, rng):
    """Two distributions over outputs 0..n_outputs-1 with every ratio <= e^eps0.

    A random distribution ``p`` and ``p'`` obtained by tilting it by factors in
    ``[e^-eps0/2, e^eps0/2]`` (some at the extremes), renormalised and checked.
    """
    while True:
        p = rng.dirichlet(np.ones(n_outputs))
        tilt = rng.choice([-0.5, 0.5, rng.uniform(-0.5, 0.5)], size=n_outputs)
        q = p * np.exp(eps0 * tilt)
        q /= q.sum()
        if np.all(np.abs(np.log(p / q)) <= eps0):
            return p, q


def _best_of_sequences(base, pmf):
    """P[released output = y]: every sequence of k runs, the best by output order.

    Outputs are 0..len(base)-1 ordered by their index (a total order of
    (score, candidate) pairs, as in the search with distinct noisy scores).
    """
    out = np.zeros(len(base))
    for k, pk in enumerate(pmf, start=1):
        for seq in itertools.product(range(len(base)), repeat=k):
            out[max(seq)] += pk * np.prod(base[list(seq)])
    return out


@pytest.mark.parametrize("eps0", [0.3, 1.0])
@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0])
def test_pure_bound_holds_on_enumerated_outputs(eps0, eta):
    """Two candidates x three scores = 6 outputs, K <= 5: every sequence enumerated."""
    rng = np.random.default_rng(0)
    pmf = tnb_pmf(eta, 0.3, max_trials=5)
    bound = pure_selection_epsilon(eps0, pmf)
    for _ in range(5):
        p, q = _rr_pair(eps0, 6, rng)
        a, b = _best_of_sequences(p, pmf), _best_of_sequences(q, pmf)
        assert a.sum() == pytest.approx(1.0) and b.sum() == pytest.approx(1.0)
        assert np.max(np.abs(np.log(a / b))) <= bound + 1e-12
    # and the bound is not vacuous: below basic composition over the cap
    assert bound < 5 * eps0


def test_deterministic_number_of_trials_is_basic_composition():
    # K = k always: the best of k runs is k eps0-DP, and no better in the worst case
    for k in (1, 2, 4):
        pmf = np.zeros(k)
        pmf[-1] = 1.0
        assert pure_selection_epsilon(0.7, pmf) == pytest.approx(k * 0.7, rel=1e-2)


@pytest.mark.parametrize("gamma", [0.5, 0.1, 0.01])
def test_geometric_is_within_liu_talwar(gamma):
    k = np.arange(1, 20001)
    pmf = gamma * (1 - gamma) ** (k - 1)
    pmf /= pmf.sum()
    eps0 = 0.4
    assert pure_selection_epsilon(eps0, pmf) <= 3 * eps0 + 1e-9
    if gamma == 0.01:  # nearly attained for a small stopping probability
        assert pure_selection_epsilon(eps0, pmf) > 2.9 * eps0


@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0])
def test_capped_tnb_is_within_papernot_steinke(eta):
    pmf = tnb_pmf(eta, tnb_gamma(eta, 20.0), max_trials=200)
    assert pure_selection_epsilon(0.5, pmf) <= (2 + eta) * 0.5 + 1e-9


def test_tnb_pmf_matches_scipy():
    k = np.arange(1, 301)
    for eta, gamma in [(0.5, 0.1), (1.0, 0.2), (2.0, 0.05)]:
        nb = stats.nbinom(eta, gamma)
        expected = nb.pmf(k) / nb.sf(0)
        np.testing.assert_allclose(tnb_pmf(eta, gamma, 300), expected / expected.sum())
    gamma = 0.02
    expected = stats.logser(1 - gamma).pmf(k)
    np.testing.assert_allclose(tnb_pmf(0.0, gamma, 300), expected / expected.sum())


@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0])
def test_tnb_gamma_gives_the_mean(eta):
    gamma = tnb_gamma(eta, 12.0)
    assert expected_trials(tnb_pmf(eta, gamma)) == pytest.approx(12.0, rel=1e-6)


def test_rdp_of_pure_dp_is_that_of_randomized_response():
    eps0 = 0.8
    p = np.array([math.exp(eps0), 1.0]) / (1 + math.exp(eps0))
    q = p[::-1]
    for order in (1.5, 2.0, 8.0, 64.0):
        direct = math.log(np.sum(p**order * q ** (1 - order))) / (order - 1)
        assert pure_dp_rdp(eps0, order) == pytest.approx(direct, rel=1e-10)
    assert pure_dp_rdp(eps0, 1e6) <= eps0


def _pgf(eta, gamma):
    """Closed-form generating function of the uncapped TNB (independent of tnb_pmf)."""
    if eta == 0:
        return lambda x: math.log(1 - (1 - gamma) * x) / math.log(gamma)
    return lambda x: ((1 - (1 - gamma) * x) ** -eta - 1) / (gamma**-eta - 1)


@pytest.mark.parametrize("eta", [0.0, 1.0])
def test_rdp_bound_holds_on_exact_output_distribution(eta):
    """Best of K ~ TNB on a discrete worst-ish pair: P[A = y] = f(b) - f(a)."""
    rng = np.random.default_rng(1)
    eps0, gamma = 0.5, 0.05
    f = _pgf(eta, gamma)
    for _ in range(3):
        p, q = _rr_pair(eps0, 8, rng)
        cp, cq = (
            np.concatenate([[0], np.cumsum(p)]),
            np.concatenate([[0], np.cumsum(q)]),
        )
        a = np.array([f(cp[i + 1]) - f(cp[i]) for i in range(8)])
        b = np.array([f(cq[i + 1]) - f(cq[i]) for i in range(8)])
        for order in (2.0, 5.0, 20.0):
            divergence = math.log(np.sum(a**order * b ** (1 - order))) / (order - 1)
            assert divergence <= tnb_selection_rdp(eps0, eta, gamma, order) + 1e-12
        # (eps, delta): the hockey-stick divergence at the converted epsilon
        delta = 1e-5
        eps = tnb_selection_dp(eps0, eta, gamma, delta)
        assert np.sum(np.maximum(a - math.exp(eps) * b, 0)) <= delta


def test_largest_base_epsilon_satisfies_the_bound():
    pmf = tnb_pmf(0.0, tnb_gamma(0.0, 9.0), max_trials=30)
    for total in (0.5, 1.0, 5.0):
        eps0 = largest_base_epsilon(lambda e: pure_selection_epsilon(e, pmf), total)
        assert pure_selection_epsilon(eps0, pmf) <= total
        assert pure_selection_epsilon(eps0 * 1.001, pmf) > total
        assert 0.45 * total < eps0 < 0.75 * total
