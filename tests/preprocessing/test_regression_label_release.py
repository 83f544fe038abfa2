"""RegressionLabelRelease and PrivateLabelRegressor: optimal bins by brute force,
exact channels, sampling laws, audits, the automatic choice, API."""

import itertools
import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import (
    BudgetExceededError,
    PrivacyLeakWarning,
    ReproducibleNoiseWarning,
)
from skdp.preprocessing import PrivateLabelRegressor, RegressionLabelRelease
from skdp.preprocessing._regression_label_release import (
    auto_prior_share,
    debiased_values,
    report_moments,
)
from skdp.preprocessing._rr_on_bins import (
    RROnBins,
    cautious_counts,
    histogram_cells,
    kept_counts,
    noisy_label_counts,
    optimal_bins,
    pooled_counts,
    private_label_histogram,
    refine_prior,
)
from skdp.utils import audit_mechanism


# ------------------------------------------------------------- optimal bins
def _expected_error(points, mass, cuts, outputs, epsilon):
    """E[(report - y)^2] of RR-on-bins, summed term by term."""
    k, e = len(outputs), math.exp(epsilon)
    total = 0.0
    for j in range(k):
        for y, p in zip(points[cuts[j] : cuts[j + 1]], mass[cuts[j] : cuts[j + 1]]):
            for other, o in enumerate(outputs):
                prob = (e if other == j else 1.0) / (e + k - 1)
                total += p * prob * (o - y) ** 2
    return total


def _brute_force(points, mass, epsilon):
    """Best partition into intervals and best outputs (least squares per bin)."""
    m, best = points.size, math.inf
    a = math.expm1(epsilon)
    for k in range(1, m + 1):
        for inner in itertools.combinations(range(1, m), k - 1):
            cuts = [0, *inner, m]
            outputs = [
                (a * mass[c0:c1] @ points[c0:c1] + mass @ points)
                / (a * mass[c0:c1].sum() + 1)
                for c0, c1 in zip(cuts[:-1], cuts[1:])
            ]
            best = min(best, _expected_error(points, mass, cuts, outputs, epsilon))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_optimal_bins_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 8))
    points = np.sort(rng.normal(5.0, 3.0, size=m))
    mass = rng.dirichlet(np.full(m, 0.7))
    epsilon = float(rng.choice([0.1, 0.5, 1.0, 3.0, 8.0]))
    cuts, outputs, error = optimal_bins(points, mass, epsilon)
    assert cuts[0] == 0 and cuts[-1] == m and np.all(np.diff(cuts) > 0)
    assert np.all(np.diff(outputs) >= -1e-12)
    reported = _expected_error(points, mass, cuts, outputs, epsilon)
    assert error == pytest.approx(reported, rel=1e-9, abs=1e-12)
    assert error == pytest.approx(_brute_force(points, mass, epsilon), rel=1e-9)


def test_optimal_bins_limits():
    points = np.linspace(0.0, 1.0, 20)
    mass = np.full(20, 0.05)
    # tiny epsilon: every output within O(eps) of the prior mean, error ~ Var
    cuts, outputs, error = optimal_bins(points, mass, 1e-4)
    np.testing.assert_allclose(outputs, 0.5, atol=1e-3)
    variance = float(mass @ (points - 0.5) ** 2)
    assert variance * (1 - 1e-3) <= error <= variance
    # large epsilon: every point its own output, no error left
    cuts, outputs, error = optimal_bins(points, mass, 40.0)
    assert len(outputs) == 20
    np.testing.assert_allclose(outputs, points, atol=1e-12)
    assert error < 1e-12


# ------------------------------------------------------------------ channels
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("k", [1, 2, 5])
def test_bin_channel_ratio_is_at_most_e_eps(epsilon, k):
    channel = RROnBins(np.linspace(0, 1, k + 1), np.linspace(0.1, 0.9, k), epsilon)
    M = channel.matrix
    np.testing.assert_allclose(M.sum(axis=1), 1.0)
    ratio = M.max(axis=0) / M.min(axis=0)
    assert np.all(ratio <= math.exp(epsilon) * (1 + 1e-12))
    if k > 1:
        assert ratio.max() == pytest.approx(math.exp(epsilon))


def test_bin_channel_draws_follow_the_matrix():
    epsilon, n = 1.0, 60_000
    channel = RROnBins([0.0, 0.3, 0.5, 1.0], [0.1, 0.4, 0.8], epsilon)
    rng = np.random.default_rng(0)
    for label, row in zip([0.05, 0.45, 0.95], channel.matrix):
        reports = channel.randomize(np.full(n, label), rng)
        counts = np.array([np.sum(reports == o) for o in channel.outputs])
        assert counts.sum() == n
        sd = np.sqrt(n * row * (1 - row))
        assert np.all(np.abs(counts - n * row) <= 5 * sd)


def test_bins_of_labels_at_the_edges():
    channel = RROnBins([0.0, 0.5, 1.0], [0.2, 0.8], np.inf)
    np.testing.assert_array_equal(
        channel.bin_of(np.array([0.0, 0.49, 0.5, 1.0])), [0, 0, 1, 1]
    )


def test_audit_bin_channel():
    epsilon = 1.0
    channel = RROnBins([0.0, 0.5, 1.0], [0.25, 0.75], epsilon)

    def draw(label, n_samples, rng):
        return channel.randomize(np.full(n_samples, label), rng)

    result = audit_mechanism(draw, 0.1, 0.9, n_samples=200_000, random_state=0)
    assert result.epsilon_lower_bound <= epsilon
    assert result.epsilon_lower_bound > 0.9 * epsilon


# ----------------------------------------------------------- prior histogram
def test_histogram_sensitivity_is_two():
    # replacing one label moves one count down and one up: L1 change 2
    y = np.array([0.1, 0.2, 0.7, 0.95])
    edges = np.linspace(0, 1, 6)
    for i, new in itertools.product(range(4), np.linspace(0, 1, 11)):
        y2 = y.copy()
        y2[i] = new
        c1 = np.histogram(y, edges)[0]
        c2 = np.histogram(y2, edges)[0]
        assert np.abs(c1 - c2).sum() <= 2


def test_audit_prior_histogram():
    epsilon = 0.5
    ya = np.array([0.1, 0.5, 0.9])
    yb = np.array([0.9, 0.5, 0.9])

    def draw(labels, n_samples, rng):
        out = np.empty(n_samples)
        for i in range(n_samples):
            prior, _, _ = private_label_histogram(labels, (0.0, 1.0), 2, epsilon, rng)
            out[i] = prior[0]
        return out

    result = audit_mechanism(draw, ya, yb, n_samples=5_000, random_state=0)
    assert result.epsilon_lower_bound <= epsilon


def test_histogram_threshold_removes_the_noise_of_empty_cells():
    # every label in the first of 100 cells: clipping at 0 alone would leave
    # about scale / 2 of mass in each of the 99 empty cells
    n = 5000
    y = np.full(n, 0.05)
    prior, cautious, mechanism = private_label_histogram(
        y, (0.0, 10.0), 100, 0.2, np.random.default_rng(0)
    )
    assert 99 * mechanism.scale / 2 / n > 0.09  # what clipping would leave
    # a surviving empty cell (Poisson(1/2) of them) holds ~ 1% of the mass:
    # five or more survive with probability < 2e-4
    assert prior[0] > 0.95
    # nothing was dropped: the cautious prior adds at most the noise's share
    assert cautious[0] > 0.9


def test_cautious_prior_puts_the_dropped_tail_back():
    # 2% of the labels spread thinly over a tail: each tail cell falls under
    # the threshold, the kept prior loses them, the cautious one does not
    rng = np.random.default_rng(0)
    n = 10_000
    y = np.concatenate([np.full(n - 200, 0.05), rng.uniform(0.5, 1.0, 200)])
    prior, cautious, _ = private_label_histogram(y, (0.0, 1.0), 50, 0.5, rng)
    tail = slice(25, 50)
    assert prior[tail].sum() < 0.01  # most of the true 2% is dropped
    assert 0.012 < cautious[tail].sum() < 0.03


def _pooled_by_hand(noisy, kept, n, scale):
    """pooled_counts written as loops over cells and windows."""
    m = kept.size
    radius = max(1, math.isqrt(m) // 2)
    weight = np.zeros(m)
    for j in range(m):
        if kept[j] != 0:
            continue
        window = [
            i for i in range(j - radius, j + radius + 1)
            if 0 <= i < m and kept[i] == 0
        ]  # fmt: skip
        mean = sum(noisy[i] for i in window) / len(window)
        weight[j] = max(mean - scale * math.sqrt(2 / len(window)), 0.0)
    missing = max(n - kept.sum(), 0.0)
    if missing > 0 and weight.sum() > 0:
        return kept + missing * weight / weight.sum()
    return kept


@pytest.mark.parametrize("seed", range(6))
def test_pooled_counts_match_loops(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 70))
    scale = float(rng.uniform(1, 50))
    counts = rng.integers(0, 400, m) * (rng.random(m) < 0.5)
    noisy = counts + rng.laplace(scale=scale, size=m)
    kept = kept_counts(noisy, scale)
    n = int(counts.sum())
    np.testing.assert_allclose(
        pooled_counts(noisy, kept, n, scale), _pooled_by_hand(noisy, kept, n, scale)
    )


def test_pooled_counts_by_hand():
    # 16 cells: windows of 2 * 2 + 1 = 5 cells; scale 10: sd of a window's
    # mean of 5 dropped cells 10 * sqrt(2 / 5) = 6.32
    scale = 10.0
    kept = np.zeros(16)
    kept[6:10] = 1000.0
    noisy = kept.copy()
    noisy[:6] = [3, -3, 3, -3, 3, -3]  # noise that cancels: no window shows mass
    noisy[10:] = [-3, 3, -3, 3, -3, 3]
    np.testing.assert_array_equal(pooled_counts(noisy, kept, 4100, scale), kept)
    # a tail of 40 per cell right of the kept cells, nothing on the left
    noisy[10:] = 40.0
    pooled = pooled_counts(noisy, kept, 4100, scale)
    assert pooled[:6].sum() == 0 and pooled[10:].sum() == pytest.approx(100.0)
    # cell 10's window holds cells 10-12 (3 dropped): 40 - 10 sqrt(2 / 3)
    weight = (
        pooled[10:]
        / 100.0
        * (
            40 * 6
            - 10 * (2 * math.sqrt(2 / 3) + 2 * math.sqrt(2 / 4) + 2 * math.sqrt(2 / 5))
        )
    )
    assert weight[0] == pytest.approx(40 - 10 * math.sqrt(2 / 3))
    assert weight[2] == pytest.approx(40 - 10 * math.sqrt(2 / 5))


def test_pooled_prior_puts_no_phantom_tail_on_a_wide_range():
    # labels N(6.5, 0.7) declared on [0, 9.9] (a log income): cells below 3.5
    # are empty (true mass 3e-6). The cautious prior gives them the positive
    # noise of every empty cell, the pooled one only windows whose mean noise
    # passes one standard deviation. Over 200 draws the standard error of each
    # mean share is < 0.0009 (per-draw s.d. < 0.012): the bounds are > 4 s.e.
    # from the means (0.021 and 0.0077)
    n, bounds, m, epsilon = 20_000, (0.0, 9.9), 64, 0.025
    far = np.linspace(*bounds, m + 1)[:-1] < 3.5
    cautious_far, pooled_far = [], []
    for seed in range(200):
        y = np.clip(np.random.default_rng(10_000 + seed).normal(6.5, 0.7, n), *bounds)
        rng = np.random.default_rng(seed)
        noisy, mechanism = noisy_label_counts(y, bounds, m, epsilon, rng)
        kept = kept_counts(noisy, mechanism.scale)
        cautious = cautious_counts(noisy, kept, n)
        pooled = pooled_counts(noisy, kept, n, mechanism.scale)
        cautious_far.append(cautious[far].sum() / cautious.sum())
        pooled_far.append(pooled[far].sum() / pooled.sum())
    assert np.mean(cautious_far) > 0.017
    assert np.mean(pooled_far) < 0.0115


def test_histogram_cells_rule():
    assert histogram_cells(10, 0.1) == 1
    assert histogram_cells(8000, 0.1) == 100
    assert histogram_cells(10**7, 1.0) == 256
    assert histogram_cells(100, np.inf) == 256


def test_refined_prior_keeps_the_cell_masses():
    cell_prior = np.array([0.5, 0.0, 0.3, 0.2])
    points, mass = refine_prior(cell_prior, n_points=16)
    assert mass.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(mass.reshape(4, 4).sum(axis=1), cell_prior)


def test_auto_prior_share_rule():
    assert auto_prior_share(100, 0.1) == 0.5
    assert auto_prior_share(10**6, 1.0) == 0.05
    assert auto_prior_share(500, 1.0) == pytest.approx(64 / 500)


def test_report_moments_by_hand():
    channel = RROnBins([0.0, 0.5, 1.0], [0.25, 0.75], math.log(3.0))
    points, mass = np.array([0.2, 0.8]), np.array([0.5, 0.5])
    bias2, linear, variance = report_moments(points, mass, channel, channel.outputs)
    # keep 3/4: report 0.25 w.p. 3/4 for y = 0.2, mean 0.375: b = +-0.175
    assert bias2 == pytest.approx(((0.375 - 0.2) ** 2 + (0.625 - 0.8) ** 2) / 2)
    # b = -0.175 (y - 0.5) / 0.3 is linear in y: all of it is linear
    assert linear == pytest.approx(bias2)
    assert variance == pytest.approx(0.5**2 * 3 / 16)  # two reports 0.5 apart
    # debiased: bin means 0.2 and 0.8, p - q = 1/2, v = (mu - 1/4 * 1) / (1/2)
    values, means = debiased_values(points, mass, channel)
    np.testing.assert_allclose(means, [0.2, 0.8])
    np.testing.assert_allclose(values, [-0.1, 1.1])
    bias2, linear, variance = report_moments(points, mass, channel, values)
    assert bias2 == pytest.approx(0.0, abs=1e-15) and linear <= bias2
    assert variance == pytest.approx(1.2**2 * 3 / 16)


def test_debiased_values_of_an_empty_bin_keep_its_output():
    channel = RROnBins([0.0, 0.5, 1.0], [0.25, 0.75], 1.0)
    _, means = debiased_values(np.array([0.1, 0.2]), np.array([0.5, 0.5]), channel)
    np.testing.assert_allclose(means, [0.15, 0.75])


# ------------------------------------------------------------------ sampler
def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 3))
    y = 2.0 + X @ [1.0, 2.0, -1.0] + rng.normal(scale=0.3, size=n)
    return X, y


@pytest.mark.parametrize("mechanism", ["laplace", "rr_on_bins", "auto"])
def test_one_spend_of_epsilon(mechanism):
    X, y = _data()
    release = RegressionLabelRelease(
        epsilon=0.8, label_bounds=(0.0, 6.0), mechanism=mechanism, random_state=0
    )
    with track_budget() as acc:
        X_out, released = release.fit_resample(X, y)
    assert X_out is X and released.shape == y.shape
    assert [s[1] for s in acc.spends] == [PrivacyBudget(0.8)]
    assert release.privacy_spent_ == PrivacyBudget(0.8)
    assert release.prior_epsilon_ + release.label_epsilon_ == pytest.approx(0.8)


def test_gaussian_spends_epsilon_delta():
    X, y = _data()
    release = RegressionLabelRelease(
        epsilon=1.0, delta=1e-6, mechanism="gaussian", label_bounds=(0.0, 6.0)
    )
    with track_budget(delta=1e-5) as acc:
        release.fit_resample(X, y)
    assert acc.spends[0][1] == PrivacyBudget(1.0, 1e-6)
    from skdp.mechanisms import analytic_sigma

    assert release.noise_scale_ == pytest.approx(analytic_sigma(1.0, 1e-6, 6.0))


def test_delta_only_with_gaussian():
    X, y = _data(100)
    with pytest.raises(ValueError, match="delta"):
        RegressionLabelRelease(delta=1e-5, label_bounds=(0, 6)).fit_resample(X, y)
    with pytest.raises(ValueError, match="delta"):
        RegressionLabelRelease(mechanism="gaussian", label_bounds=(0, 6)).fit_resample(
            X, y
        )


def test_laplace_labels_are_unbiased_with_the_stated_scale():
    n = 200_000
    X, y = np.zeros((n, 1)), np.full(n, 1.5)
    release = RegressionLabelRelease(
        epsilon=0.5, label_bounds=(0.0, 4.0), mechanism="laplace", random_state=0
    )
    _, released = release.fit_resample(X, y)
    scale = 4.0 / 0.5
    assert release.noise_scale_ == pytest.approx(scale, rel=1e-6)
    # 5 sigma of the mean and of the mean absolute deviation (Laplace: b)
    assert abs(released.mean() - 1.5) < 5 * math.sqrt(2) * scale / math.sqrt(n)
    assert abs(np.abs(released - 1.5).mean() - scale) < 5 * scale / math.sqrt(n)


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_audit_additive_label_noise(mechanism):
    # each entry of a released vector is one label's release: the two extreme
    # labels of the range (and one far outside, clipped) as neighbours
    epsilon, delta = 1.0, (1e-3 if mechanism == "gaussian" else 0.0)
    release = RegressionLabelRelease(
        epsilon=epsilon,
        delta=delta,
        label_bounds=(0.0, 1.0),
        mechanism=mechanism,
        random_state=np.random.default_rng(0),
    )

    def draw(label, n_samples, rng):
        return release.fit_resample(
            np.zeros((n_samples, 1)), np.full(n_samples, label)
        )[1]

    result = audit_mechanism(
        draw, 0.0, 50.0, n_samples=200_000, delta=delta, random_state=0
    )
    assert result.epsilon_lower_bound <= epsilon
    assert result.epsilon_lower_bound > 0.5 * epsilon  # the audit has power


def test_labels_outside_the_bounds_are_clipped():
    X = np.zeros((4, 1))
    y = np.array([-100.0, 0.5, 2.0, 100.0])
    release = RegressionLabelRelease(epsilon=np.inf, label_bounds=(0.0, 1.0))
    _, released = release.fit_resample(X, y)
    np.testing.assert_array_equal(released, [0.0, 0.5, 1.0, 1.0])
    assert release.mechanism_ == "none"


def test_debiased_reports_have_the_bin_mean_as_mean():
    n = 100_000
    X = np.zeros((n, 1))
    rng = np.random.default_rng(1)
    y = rng.uniform(0, 1, size=n)
    release = RegressionLabelRelease(
        epsilon=2.0,
        label_bounds=(0.0, 1.0),
        mechanism="rr_on_bins",
        debias=True,
        random_state=0,
    )
    _, released = release.fit_resample(X, y)
    assert release.debiased_ and release.bin_outputs_.size > 1
    assert set(np.unique(released)) <= set(release.report_values_)
    channel = RROnBins(release.bin_edges_, release.bin_outputs_, 1.0)
    bins = channel.bin_of(y)
    spread = np.ptp(release.report_values_)
    for j, mean in enumerate(release.bin_means_):
        sel = released[bins == j]
        if sel.size < 1000:
            continue
        # the prior's bin mean is that of the data's, up to the prior's noise
        assert abs(sel.mean() - mean) < 5 * spread / math.sqrt(sel.size) + 0.02


def test_raw_bin_reports_are_the_papers_outputs():
    X, y = _data(2000)
    release = RegressionLabelRelease(
        epsilon=2.0,
        label_bounds=(0.0, 6.0),
        mechanism="rr_on_bins",
        debias=False,
        random_state=0,
    )
    _, released = release.fit_resample(X, y)
    assert set(np.unique(released)) <= set(release.bin_outputs_)
    np.testing.assert_array_equal(release.report_values_, release.bin_outputs_)
    assert np.all(np.diff(release.bin_edges_) > 0)
    assert release.bin_edges_[0] == 0.0 and release.bin_edges_[-1] == 6.0


def test_auto_follows_its_predicted_risks():
    # small n and epsilon: the labels' spread is small next to the range, the
    # bins win; large n and epsilon: Laplace noise averages out
    rng = np.random.default_rng(0)
    for n, epsilon, expected in [(2000, 0.2, "rr_on_bins"), (100_000, 4.0, "laplace")]:
        X = rng.uniform(size=(n, 2))
        y = 3.0 + X @ [0.5, 0.5] + rng.normal(scale=0.2, size=n)
        release = RegressionLabelRelease(
            epsilon=epsilon, label_bounds=(0.0, 10.0), random_state=0
        )
        release.fit_resample(X, y)
        risks = release.predicted_risk_
        best = min(risks, key=risks.get)
        assert release.mechanism_ == expected
        assert best.startswith(expected)
        if expected == "rr_on_bins":
            assert release.debiased_ == (best == "rr_on_bins_debiased")


def _one_cell_cases():
    # (n, epsilon, d, prior_share): n * share * epsilon < 16, one cell
    for n, epsilon, d in itertools.product([3, 30], [0.5, 2.0, 8.0], [1, 4]):
        for share in ("auto", 0.05):
            s = auto_prior_share(n, epsilon) if share == "auto" else share
            if histogram_cells(n, s * epsilon) == 1:
                yield n, epsilon, d, share


def test_one_cell_choice_is_public_and_spends_epsilon_once():
    cases = list(_one_cell_cases())
    assert len(cases) >= 8
    for n, epsilon, d, share in cases:
        X = np.zeros((n, d))
        outcomes = []
        for y in (np.zeros(n), np.linspace(0, 1, n), np.ones(n)):
            release = RegressionLabelRelease(
                epsilon=epsilon,
                label_bounds=(0.0, 1.0),
                prior_share=share,
                random_state=0,
            )
            with track_budget() as acc:
                release.fit_resample(X, y)
            assert [s[1] for s in acc.spends] == [PrivacyBudget(epsilon)]
            assert release.prior_epsilon_ == 0.0
            assert release.label_epsilon_ == epsilon
            np.testing.assert_array_equal(release.prior_, [1.0])
            outcomes.append(
                (release.mechanism_, release.debiased_, release.predicted_risk_)
            )
        # labels all 0, spread, all 1: the same choice and the same risks
        assert outcomes[0] == outcomes[1] == outcomes[2]


def test_one_cell_rr_on_bins_channel_has_ratio_e_eps():
    release = RegressionLabelRelease(
        epsilon=2.0, label_bounds=(0.0, 1.0), mechanism="rr_on_bins", random_state=0
    )
    release.fit_resample(np.zeros((5, 1)), np.linspace(0, 1, 5))
    channel = RROnBins(release.bin_edges_, release.bin_outputs_, 2.0)
    ratio = channel.matrix.max(axis=0) / channel.matrix.min(axis=0)
    np.testing.assert_allclose(ratio, math.exp(2.0))


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 8.0])
def test_public_choice_is_monotone_in_n(epsilon):
    # a tiny prior share keeps the histogram at one cell for every n here, so
    # the choice is public; with the (uniform) prior fixed, the bins' risk is
    # L + c_B / n and Laplace's c_L / n: once Laplace wins, it wins for every
    # larger n, and it does win on large data
    picks = []
    for n in np.unique(np.geomspace(2, 3e5, 16).astype(int)):
        release = RegressionLabelRelease(
            epsilon=epsilon, label_bounds=(0.0, 1.0), prior_share=1e-6
        )
        release.fit_resample(np.zeros((n, 1)), np.full(n, 0.5))
        assert release.prior_epsilon_ == 0.0
        picks.append(release.mechanism_ == "laplace")
    assert picks == sorted(picks) and picks[0] is False and picks[-1] is True


def test_releases_with_one_random_state_share_the_labels_noise():
    X, y = _data(20_000)
    kw = dict(epsilon=4.0, label_bounds=(0.0, 6.0), random_state=3)
    auto = RegressionLabelRelease(**kw)
    y_auto = auto.fit_resample(X, y)[1]
    assert auto.mechanism_ == "laplace" and auto.label_epsilon_ < 4.0
    y_laplace = RegressionLabelRelease(**kw, mechanism="laplace").fit_resample(X, y)[1]
    # the same uniforms through the inverse CDFs of two scales: the noises
    # are (almost) proportional
    clipped = np.clip(y, 0.0, 6.0)
    r = np.corrcoef(y_auto - clipped, y_laplace - clipped)[0, 1]
    assert r > 0.99
    # RR-on-bins with and without debiasing: the same bins, the same reports
    kw["epsilon"] = 0.5
    a, b = (
        RegressionLabelRelease(**kw, mechanism="rr_on_bins", debias=flag)
        for flag in (True, False)
    )
    ya, yb = a.fit_resample(X, y)[1], b.fit_resample(X, y)[1]
    np.testing.assert_array_equal(a.bin_edges_, b.bin_edges_)
    index_a = np.searchsorted(np.sort(a.report_values_), ya)
    index_b = np.searchsorted(np.sort(b.report_values_), yb)
    order_a, order_b = np.argsort(a.report_values_), np.argsort(b.report_values_)
    np.testing.assert_array_equal(order_a[index_a], order_b[index_b])


def test_rr_on_bins_never_picks_laplace():
    X, y = _data(20_000)
    release = RegressionLabelRelease(
        epsilon=4.0, label_bounds=(0.0, 6.0), mechanism="rr_on_bins", random_state=0
    )
    release.fit_resample(X, y)
    assert release.mechanism_ == "rr_on_bins"
    assert release.predicted_risk_["laplace"] < release.predicted_risk_["rr_on_bins"]


def test_seeds_reproduce_and_differ():
    X, y = _data(500)
    kw = dict(epsilon=1.0, label_bounds=(0.0, 6.0))
    a = RegressionLabelRelease(**kw, random_state=1).fit_resample(X, y)[1]
    b = RegressionLabelRelease(**kw, random_state=1).fit_resample(X, y)[1]
    c = RegressionLabelRelease(**kw, random_state=2).fit_resample(X, y)[1]
    np.testing.assert_array_equal(a, b)
    assert np.any(a != c)


def test_inputs_are_not_modified():
    X, y = _data(300)
    X0, y0 = X.copy(), y.copy()
    RegressionLabelRelease(label_bounds=(0.0, 3.0), random_state=0).fit_resample(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_undeclared_bounds_warn():
    X, y = _data(100)
    with pytest.warns(PrivacyLeakWarning, match="label_bounds"):
        RegressionLabelRelease(random_state=0).fit_resample(X, y)


@pytest.mark.parametrize(
    ("bounds", "error"),
    [((1.0, 0.0), ValueError), ((0.0, np.inf), ValueError), (("a", 1), TypeError)],
)
def test_bad_bounds_are_refused(bounds, error):
    X, y = _data(50)
    with pytest.raises(error, match="label_bounds"):
        RegressionLabelRelease(label_bounds=bounds).fit_resample(X, y)


def test_non_numeric_or_missing_labels_are_refused():
    X = np.zeros((3, 1))
    with pytest.raises(ValueError, match="real numbers"):
        RegressionLabelRelease(label_bounds=(0, 1)).fit_resample(X, ["a", "b", "c"])
    with pytest.raises(ValueError, match="NaN"):
        RegressionLabelRelease(label_bounds=(0, 1)).fit_resample(X, [0.1, np.nan, 0.2])


def test_refused_budget_releases_nothing():
    X, y = _data(100)
    release = RegressionLabelRelease(label_bounds=(0.0, 6.0))
    with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
        release.fit_resample(X, y)
    assert not hasattr(release, "mechanism_")


def test_series_labels_stay_series():
    pd = pytest.importorskip("pandas")
    X, y = _data(200)
    labels = pd.Series(y, name="target")
    _, released = RegressionLabelRelease(
        label_bounds=(0.0, 6.0), random_state=0
    ).fit_resample(pd.DataFrame(X), labels)
    assert isinstance(released, pd.Series) and released.name == "target"


@pytest.mark.slow
def test_audit_whole_rr_on_bins_release():
    # end to end on neighbouring label vectors (three rows: the histogram
    # would have one cell, so none is released and the labels get all of eps;
    # test_audit_prior_histogram audits the histogram)
    epsilon, runs = 1.0, 20_000
    X = np.zeros((3, 1))
    ya, yb = np.array([0.1, 0.5, 0.9]), np.array([0.9, 0.5, 0.9])
    release = RegressionLabelRelease(
        epsilon=epsilon,
        label_bounds=(0.0, 1.0),
        mechanism="rr_on_bins",
        debias=False,
        random_state=np.random.default_rng(0),
    )

    def draw(labels, n_samples, rng):
        return np.array(
            [release.fit_resample(X, labels)[1][0] for _ in range(n_samples)]
        )

    result = audit_mechanism(draw, ya, yb, n_samples=runs, random_state=0)
    assert result.epsilon_lower_bound <= epsilon


# ------------------------------------------------------------------ wrapper
def test_regressor_fits_on_released_labels():
    X, y = _data(4000)
    reg = PrivateLabelRegressor(
        LinearRegression(),
        RegressionLabelRelease(epsilon=4.0, random_state=0),
        label_bounds=(0.0, 6.0),
    ).fit(X, y)
    assert reg.privacy_spent_ == PrivacyBudget(4.0)
    assert reg.privatizer_.label_bounds_ == (0.0, 6.0)
    assert reg.score(X, y) > 0.6
    assert reg.n_features_in_ == 3


def test_regressor_at_infinite_epsilon_is_the_clean_fit():
    X, y = _data(500)
    reg = PrivateLabelRegressor(
        Ridge(alpha=1.0),
        RegressionLabelRelease(epsilon=np.inf),
        label_bounds=(-100.0, 100.0),
    ).fit(X, y)
    np.testing.assert_allclose(reg.estimator_.coef_, Ridge(alpha=1.0).fit(X, y).coef_)


def test_regressor_bounds_conflict_is_refused():
    X, y = _data(100)
    reg = PrivateLabelRegressor(
        LinearRegression(),
        RegressionLabelRelease(label_bounds=(0.0, 5.0)),
        label_bounds=(0.0, 6.0),
    )
    with pytest.raises(ValueError, match="label_bounds"):
        reg.fit(X, y)


def test_regressor_in_pipeline_and_grid_search_over_epsilon():
    X, y = _data(1500)
    pipe = make_pipeline(
        StandardScaler(),
        PrivateLabelRegressor(
            LinearRegression(),
            RegressionLabelRelease(random_state=0),
            label_bounds=(0.0, 6.0),
        ),
    )
    grid = GridSearchCV(
        pipe, {"privatelabelregressor__privatizer__epsilon": [0.5, 4.0]}, cv=2
    )
    with track_budget() as acc:
        grid.fit(X, y)
    # 2 values x 2 folds + the refit, one spend each
    assert len(acc.spends) == 5
    assert grid.best_params_["privatelabelregressor__privatizer__epsilon"] == 4.0


def test_regressor_default_privatizer_warns_without_bounds():
    X, y = _data(200)
    with pytest.warns(PrivacyLeakWarning):
        reg = PrivateLabelRegressor(LinearRegression()).fit(X, y)
    assert reg.privacy_spent_ == PrivacyBudget(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        PrivateLabelRegressor(LinearRegression(), label_bounds=(0.0, 6.0)).fit(X, y)
