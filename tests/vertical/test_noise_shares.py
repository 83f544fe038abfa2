"""Noise shares: exact distributions of their sums, and a colluding party's view."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from skdp.mechanisms import GaussianMechanism, LaplaceMechanism
from skdp.utils import audit_mechanism
from skdp.vertical._noise_shares import noise_share, shares_per_mechanism

SIZE = 60_000


def _coarse_laplace(scale=2.0):
    # noise_share reads only granularity and scale: a unit lattice makes the
    # discrete Laplace's pmf checkable cell by cell
    return SimpleNamespace(granularity=1.0, scale=scale)


def _discrete_laplace_pmf(k, scale):
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(k)


def _chi2_pvalue(samples, pmf, max_abs):
    """Chi-square goodness of fit on cells -max_abs..max_abs plus two tails."""
    ks = np.arange(-max_abs, max_abs + 1)
    expected = pmf(ks)
    counts = np.array([(samples == k).sum() for k in ks], dtype=float)
    tail_p = (1 - expected.sum()) / 2
    low, high = (samples < -max_abs).sum(), (samples > max_abs).sum()
    counts = np.concatenate([[low], counts, [high]])
    expected = np.concatenate([[tail_p], expected, [tail_p]]) * samples.size
    return stats.chisquare(counts, expected).pvalue


@pytest.mark.parametrize("m", [2, 3, 5])
def test_any_m_minus_1_threshold_shares_are_the_discrete_laplace(m):
    mech = _coarse_laplace()
    rng = np.random.default_rng(m)
    shares = [noise_share(mech, SIZE, m, "threshold", rng) for _ in range(m)]
    pmf = lambda k: _discrete_laplace_pmf(k, mech.scale)  # noqa: E731
    for left_out in range(m):
        partial = sum(s for i, s in enumerate(shares) if i != left_out)
        assert np.all(partial == np.round(partial))  # on the lattice
        # a wrong shape (e.g. 1/m) is rejected at this n: see the test below
        assert _chi2_pvalue(partial, pmf, 12) > 1e-4


def test_the_chi_square_check_rejects_distributed_shares_as_threshold():
    # the goodness-of-fit check is not vacuous: one of two "distributed" shares
    # (shape 1/2) is visibly less than the mechanism at this n
    mech = _coarse_laplace()
    rng = np.random.default_rng(0)
    partial = noise_share(mech, SIZE, 2, "distributed", rng)
    pmf = lambda k: _discrete_laplace_pmf(k, mech.scale)  # noqa: E731
    assert _chi2_pvalue(partial, pmf, 12) < 1e-6


@pytest.mark.parametrize("m", [2, 4])
def test_distributed_shares_sum_to_the_discrete_laplace(m):
    mech = _coarse_laplace()
    rng = np.random.default_rng(10 + m)
    total = sum(noise_share(mech, SIZE, m, "distributed", rng) for _ in range(m))
    pmf = lambda k: _discrete_laplace_pmf(k, mech.scale)  # noqa: E731
    assert _chi2_pvalue(total, pmf, 12) > 1e-4


@pytest.mark.parametrize("m", [2, 3, 5])
def test_all_m_threshold_shares_cost_m_over_m_minus_1_in_variance(m):
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=3.0)
    rng = np.random.default_rng(20 + m)
    total = sum(noise_share(mech, SIZE, m, "threshold", rng) for _ in range(m))
    target = mech.variance * m / (m - 1)
    # sd of a sample variance: sigma^2 sqrt((kurtosis - 1) / n); the kurtosis of
    # a sum of discrete Laplace-like terms is at most the Laplace's, 6
    sd = math.sqrt(5 / SIZE) * target
    assert abs(total.var() - target) < 5 * sd
    assert abs(total.mean()) < 5 * math.sqrt(target / SIZE)


def test_lattice_laplace_shares_match_the_mechanism_in_ks():
    mech = LaplaceMechanism(epsilon=0.5, sensitivity=2.0)
    rng = np.random.default_rng(3)
    partial = sum(noise_share(mech, SIZE, 4, "threshold", rng) for _ in range(3))
    assert np.all(np.round(partial / mech.granularity) * mech.granularity == partial)
    assert stats.ks_2samp(partial, mech.sample_noise(SIZE, rng)).pvalue > 1e-4


@pytest.mark.parametrize("m", [2, 3])
def test_gaussian_threshold_shares(m):
    mech = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=2.0)
    rng = np.random.default_rng(30 + m)
    shares = [noise_share(mech, SIZE, m, "threshold", rng) for _ in range(m)]
    partial = sum(shares[1:])
    assert stats.kstest(partial / mech.sigma, "norm").pvalue > 1e-4
    total = sum(shares) / (mech.sigma * math.sqrt(m / (m - 1)))
    assert stats.kstest(total, "norm").pvalue > 1e-4


def test_a_single_owner_adds_the_mechanism_itself():
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    for generation in ("threshold", "distributed"):
        a = noise_share(mech, 50, 1, generation, np.random.default_rng(0))
        np.testing.assert_array_equal(a, mech.sample_noise(50, 0))


def test_shares_per_mechanism():
    assert shares_per_mechanism(1, "threshold") == 1
    assert shares_per_mechanism(4, "threshold") == 3
    assert shares_per_mechanism(4, "distributed") == 4
    with pytest.raises(ValueError, match="n_contributors"):
        shares_per_mechanism(0, "threshold")
    with pytest.raises(ValueError, match="noise_generation"):
        shares_per_mechanism(2, "dealer")


def _colluder_view(generation, mech):
    """What a party of the pair that colludes with the server sees of one cross
    coefficient: the release minus its own share (it knows it)."""

    def release(value, n, rng):
        on_lattice = np.round(value / mech.granularity) * mech.granularity
        # the other party's share; the colluder's own share is subtracted away
        return on_lattice + noise_share(mech, n, 2, generation, rng)

    return release


def test_audit_of_a_colluding_partys_view_stays_within_epsilon():
    # one cross coefficient whose exact value moves by the sensitivity between
    # neighbouring records; the per-party claim for it is the mechanism's epsilon
    eps, sens = 1.0, 2.0
    mech = LaplaceMechanism(epsilon=eps, sensitivity=sens)
    view = _colluder_view("threshold", mech)
    result = audit_mechanism(view, 0.0, sens, n_samples=100_000, random_state=0)
    assert result.epsilon_lower_bound <= eps
    # and the audit is not vacuous: it finds a good part of epsilon ...
    assert result.epsilon_lower_bound > 0.5 * eps
    # ... and it catches the weaker "distributed" shares (the finding)
    weak = audit_mechanism(
        _colluder_view("distributed", mech), 0.0, sens, n_samples=100_000
    )
    assert weak.epsilon_lower_bound > eps


def test_audit_of_a_colluders_view_with_a_fitted_plan():
    # K = 2 parties with one column each in [-1, 1]: the cross coefficient
    # kappa sum_i x_i0 x_i1 moves by at most 2 kappa when party 0's part of one
    # record changes. Party 1 colluding with the server sees it with party 0's
    # threshold share only; the audit of that view stays within party 0's
    # stated epsilon (and within the coordinate's own 2 kappa / b).
    from skdp.vertical import VerticalFMRegressor

    rng = np.random.default_rng(0)
    X, y = rng.uniform(-1, 1, (50, 2)), rng.uniform(-1, 1, 50)
    est = VerticalFMRegressor(
        epsilon=1.0,
        bounds_X=(-1, 1),
        bounds_y=(-1, 1),
        linear_weight=0.5,
        partition=[[0], [1]],
        random_state=0,
    ).fit(X, y)
    from skdp.vertical._plan import make_plan

    plan = make_plan(
        objective="squared",
        domain=_domain_of(est),
        partition=est.partition_,
        label_party=0,
        epsilon=1.0,
        delta=0.0,
        mechanism="laplace",
        linear_weight=0.5,
        budgets=None,
    )
    mech = plan.groups[("pair", 0, 1)].mechanism
    from skdp._fm import objective_constants

    kappa, _ = objective_constants("squared")
    view = _colluder_view("threshold", mech)
    result = audit_mechanism(view, 0.0, 2 * kappa, n_samples=100_000, random_state=1)
    assert result.epsilon_lower_bound <= est.party_privacy_[0]
    assert result.epsilon_lower_bound <= 2 * kappa / mech.scale
    assert result.epsilon_lower_bound > 0.5 * 2 * kappa / mech.scale


def _domain_of(est):
    from skdp._fm import DataDomain

    return DataDomain(
        n_features=est.n_features_in_,
        lower=est.bounds_[0],
        upper=est.bounds_[1],
        y_bounds=est.bounds_y_,
        fit_intercept=True,
        intercept_scaling=est.intercept_scaling_,
    )
