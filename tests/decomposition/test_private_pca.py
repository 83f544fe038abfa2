"""PrivatePCA (Analyze Gauss): exact sensitivities, spends, audits, utility."""

import itertools
import math
import warnings

import numpy as np
import pytest
from sklearn.decomposition import PCA

from skdp.accounting import PrivacyBudget, track_budget
from skdp.decomposition import PrivatePCA
from skdp.decomposition._private_pca import (
    gram_domain,
    gram_sensitivity,
    gram_statistic,
    intercept_scale,
    release_gram,
)
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.mechanisms import GaussianMechanism, LaplaceMechanism
from skdp.utils import audit_mechanism


def _three_directions(n, d=20, seed=0, scale=1.0):
    """Three strong directions (sd 0.5, 0.4, 0.3), isotropic noise sd 0.05,
    mean 0.1 per feature; ``scale`` shrinks the rows (``1/2.5``: every row norm
    below 1 at d = 20)."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(d, 3)))
    X = (rng.normal(size=(n, 3)) * [0.5, 0.4, 0.3]) @ Q.T
    X += 0.05 * rng.normal(size=(n, d)) + 0.1
    return X * scale


def _captured_share(X, components, k=3):
    """Variance the private top-k components capture, over the non-private's."""
    C = np.cov(X.T)
    ref = PCA(k, svd_solver="full").fit(X).components_
    return np.trace(components[:k] @ C @ components[:k].T) / np.trace(ref @ C @ ref.T)


# --- epsilon = inf: scikit-learn's PCA -------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        {"bounds_X": (-5, 5)},
        {"data_norm": 100.0},
        {"bounds_X": (-5, 5), "data_norm": 100.0},
    ],
)
def test_infinite_epsilon_equals_sklearn(kw):
    X = _three_directions(500, d=6, seed=1)
    ours = PrivatePCA(epsilon=np.inf, **kw).fit(X)
    ref = PCA(svd_solver="full").fit(X)
    signs = np.sign(np.sum(ours.components_ * ref.components_, axis=1))
    np.testing.assert_allclose(
        ours.components_ * signs[:, None], ref.components_, atol=1e-8
    )
    for attr in (
        "explained_variance_",
        "explained_variance_ratio_",
        "singular_values_",
        "mean_",
    ):
        np.testing.assert_allclose(getattr(ours, attr), getattr(ref, attr), atol=1e-8)
    np.testing.assert_allclose(ours.transform(X) * signs, ref.transform(X), atol=1e-8)
    Xt = ours.transform(X)
    np.testing.assert_allclose(ours.inverse_transform(Xt), X, atol=1e-8)
    assert ours.privacy_spent_ == PrivacyBudget(math.inf)


def test_infinite_epsilon_with_fewer_components_and_no_centring():
    X = _three_directions(400, d=5, seed=2)
    ours = PrivatePCA(2, epsilon=np.inf, bounds_X=(-5, 5)).fit(X)
    ref = PCA(2, svd_solver="full").fit(X)
    signs = np.sign(np.sum(ours.components_ * ref.components_, axis=1))
    np.testing.assert_allclose(
        ours.components_ * signs[:, None], ref.components_, atol=1e-8
    )
    np.testing.assert_allclose(ours.noise_variance_, ref.noise_variance_, atol=1e-8)
    # no centring: the right singular vectors of the (uncentred) data, also
    # in a box that is not centred at 0 (no shift by its midpoint)
    for bounds in [(-5, 5), (-2, 8)]:
        ours = PrivatePCA(2, epsilon=np.inf, centering=False, bounds_X=bounds).fit(X)
        vt = np.linalg.svd(X, full_matrices=False)[2][:2]
        signs = np.sign(np.sum(ours.components_ * vt, axis=1))
        np.testing.assert_allclose(ours.components_ * signs[:, None], vt, atol=1e-8)
        np.testing.assert_array_equal(ours.mean_, np.zeros(5))
        Xt = ours.transform(X)
        np.testing.assert_allclose(Xt, X @ ours.components_.T, atol=1e-12)
    assert ours.row_norm_ == pytest.approx(8 * math.sqrt(5))


# --- exact: sensitivities by brute force -----------------------------------------


def _released_vector(Z, s):
    """The released entries of the Gram of ``[z, s]`` (upper triangle, corner
    excluded) and the isometric vector (off-diagonal entries times sqrt 2)."""
    G = gram_statistic(Z, s)
    q = G.shape[0]
    rows, cols = np.triu_indices(q)
    keep = ~((rows == q - 1) & (cols == q - 1)) if s > 0 else np.ones_like(rows, bool)
    rows, cols = rows[keep], cols[keep]
    entries = G[rows, cols]
    return entries, entries * np.where(rows == cols, 1.0, math.sqrt(2.0))


def _brute_force(candidates, base, s):
    """Largest L1 (entries) and L2 (isometric) change over replaced last rows."""
    vectors = [_released_vector(np.vstack([base, c]), s) for c in candidates]
    l1 = np.array([v[0] for v in vectors])
    l2 = np.array([v[1] for v in vectors])
    best1 = max(np.abs(l1 - e).sum(axis=1).max() for e in l1)
    best2 = max(np.sqrt(((l2 - e) ** 2).sum(axis=1)).max() for e in l2)
    return best1, best2


def test_row_norm_domain_sensitivities_by_brute_force():
    # d = 2, ||z|| <= 1: the Frobenius bound sqrt(2) (R^2 + s^2) is attained by
    # ||z|| = ||y|| = 1 with z.y = -s^2, which the candidates contain
    domain = gram_domain(data_norm=1.0, n_features=2)
    base = np.array([[0.3, -0.2], [0.1, 0.5]])
    for norm in ("fro", "l1"):
        s = intercept_scale(domain, norm)
        angles = np.linspace(0, 2 * np.pi, 73)
        candidates = [
            r * np.array([np.cos(a), np.sin(a)]) for r in (0, 0.5, 1) for a in angles
        ]
        theta = math.acos(-(s**2))
        candidates += [
            np.array([1.0, 0.0]),
            np.array([math.cos(theta), math.sin(theta)]),
        ]
        l1, l2 = _brute_force(candidates, base, s)
        if norm == "fro":
            claimed = gram_sensitivity(domain, s, "fro")
            assert claimed == pytest.approx(math.sqrt(2) * (1 + s**2))
            assert l2 == pytest.approx(claimed, rel=1e-12)  # attained
        else:
            claimed = gram_sensitivity(domain, s, "l1")
            assert claimed == pytest.approx((2 + s) ** 2 / 2 + 1)
            assert l1 <= claimed * (1 + 1e-12)  # a bound, not attained
    # without centring (s = 0): sqrt(2) R^2, attained by orthogonal rows
    l1, l2 = _brute_force(candidates, base, 0.0)
    assert l2 == pytest.approx(gram_sensitivity(domain, 0.0, "fro"), rel=1e-12)
    assert l1 <= gram_sensitivity(domain, 0.0, "l1") * (1 + 1e-12)


def test_box_domain_sensitivities_by_brute_force():
    # d = 2, box with half-widths (1, 2) around its midpoint
    lower, upper = np.array([-1.0, 0.0]), np.array([1.0, 4.0])
    domain = gram_domain(lower, upper)
    np.testing.assert_array_equal(domain.centre, [0.0, 2.0])
    assert domain.row_norm == pytest.approx(math.sqrt(5))
    base = np.array([[0.3, -0.2], [0.1, 0.5]])
    grid = [np.linspace(-r, r, 21) for r in (1.0, 2.0)]
    candidates = [np.array(p) for p in itertools.product(*grid)]
    for norm in ("fro", "l1"):
        s = intercept_scale(domain, norm)
        l1, l2 = _brute_force(candidates, base, s)
        if norm == "fro":
            claimed = gram_sensitivity(domain, s, "fro")
            assert l2 <= claimed * (1 + 1e-12)
            assert l2 >= 0.85 * claimed  # the row-norm bound is close for a box
        else:
            claimed = gram_sensitivity(domain, s, "l1")
            assert claimed == pytest.approx(((3 + s) ** 2 + 5) / 2)
            assert l1 <= claimed * (1 + 1e-12)


def test_sensitivity_when_the_constant_exceeds_the_row_bound():
    # s > R: 2 sqrt(2) R s, attained by z = -y with ||z|| = R
    domain = gram_domain(data_norm=0.5, n_features=2)
    s = 1.0
    z = np.array([0.5, 0.0])
    base = np.zeros((1, 2))
    _, l2 = _brute_force([z, -z], base, s)
    assert gram_sensitivity(domain, s, "fro") == pytest.approx(2 * math.sqrt(2) * 0.5)
    assert l2 == pytest.approx(gram_sensitivity(domain, s, "fro"), rel=1e-12)


def test_gaussian_noise_is_isometric():
    # diagonal variance sigma^2, off-diagonal sigma^2 / 2, corner not released
    mech = GaussianMechanism(1.0, 1e-5, 1.0)
    rng = np.random.default_rng(0)
    noise = release_gram(np.zeros((40_000, 3, 3)), mech, rng, augmented=True)
    var = noise.var(axis=0) / mech.sigma**2
    n = 40_000  # the sd of a sample variance is about sqrt(2 / n) relative
    tol = 5 * math.sqrt(2 / n)
    assert abs(var[0, 0] - 1) < tol and abs(var[1, 1] - 1) < tol
    assert abs(var[0, 1] - 0.5) < 0.5 * tol and abs(var[0, 2] - 0.5) < 0.5 * tol
    assert var[2, 2] == 0
    np.testing.assert_array_equal(noise, np.swapaxes(noise, 1, 2))


# --- accounting ------------------------------------------------------------------


@pytest.mark.parametrize("delta", [0.0, 1e-8])
def test_recorded_spend_equals_the_guarantee(delta):
    X = _three_directions(1000, d=4)
    with track_budget() as acc:
        pca = PrivatePCA(2, epsilon=0.8, delta=delta, bounds_X=(-2, 2)).fit(X)
    assert acc.spends == [("PrivatePCA", PrivacyBudget(0.8, delta))]
    assert pca.privacy_spent_ == acc.total == PrivacyBudget(0.8, delta)


@pytest.mark.parametrize("delta", [0.0, 1e-8])
def test_cap_refuses_before_any_draw(monkeypatch, delta):
    drawn = []
    for cls, name in (
        (LaplaceMechanism, "randomize"),
        (GaussianMechanism, "sample_noise"),
    ):
        monkeypatch.setattr(cls, name, lambda self, *a, **k: drawn.append(1) or 1 / 0)
    pca = PrivatePCA(2, epsilon=1.0, delta=delta, bounds_X=(-2, 2))
    with track_budget(epsilon=0.5, delta=1e-5), pytest.raises(BudgetExceededError):
        pca.fit(_three_directions(500, d=4))
    assert drawn == []
    assert not hasattr(pca, "components_") and not hasattr(pca, "privacy_spent_")


# --- empirical privacy audit of the release --------------------------------------


def _audit(mech, data_a, data_b, s, n_samples, seed):
    """Audit ``release_gram`` on two neighbouring data sets with the
    log-likelihood-ratio statistic (the most powerful one)."""
    ga, gb = gram_statistic(data_a, s), gram_statistic(data_b, s)
    q = ga.shape[0]
    rows, cols = np.triu_indices(q)
    keep = ~((rows == q - 1) & (cols == q - 1))
    rows, cols = rows[keep], cols[keep]

    def release(data, n, rng):
        g = gram_statistic(data, s)
        return release_gram(np.broadcast_to(g, (n, q, q)), mech, rng, augmented=True)

    if isinstance(mech, GaussianMechanism):
        w = np.where(rows == cols, 1.0, 2.0)  # the isometric inner product

        def llr(out):
            diff = (ga - gb)[rows, cols]
            mid = ((ga + gb) / 2)[rows, cols]
            return ((out[:, rows, cols] - mid) * diff * w).sum(axis=1)
    else:

        def llr(out):
            o = out[:, rows, cols]
            a, b = ga[rows, cols], gb[rows, cols]
            return (np.abs(o - b) - np.abs(o - a)).sum(axis=1) / mech.scale

    return audit_mechanism(
        release,
        data_a,
        data_b,
        n_samples=n_samples,
        statistic=llr,
        delta=mech.delta,
        random_state=seed,
    )


def test_audit_gaussian_release_on_the_worst_pair():
    domain = gram_domain(data_norm=1.0, n_features=2)
    pca = PrivatePCA(epsilon=1.0, delta=1e-3, data_norm=1.0)
    s = intercept_scale(domain, "fro")
    mech = pca._mechanism(domain, s)
    theta = math.acos(-(s**2))  # the attaining pair of the Frobenius bound
    base = np.array([[0.3, -0.2]])
    a = np.vstack([base, [1.0, 0.0]])
    b = np.vstack([base, [math.cos(theta), math.sin(theta)]])
    res = _audit(mech, a, b, s, 200_000, seed=3)
    assert res.epsilon_lower_bound <= 1.0
    assert res.epsilon_lower_bound > 0.5  # the pair is the worst case: 0.72 here


def test_audit_laplace_release():
    domain = gram_domain(np.array([-1.0, -1.0]), np.array([1.0, 1.0]))
    pca = PrivatePCA(epsilon=1.0, bounds_X=(-1, 1))
    s = intercept_scale(domain, "l1")
    mech = pca._mechanism(domain, s)
    # the pair of corner rows with the largest L1 change of the released entries
    corners = [np.array(c) for c in itertools.product([-1.0, 0.0, 1.0], repeat=2)]
    base = np.array([[0.3, -0.2]])
    pairs = itertools.product(corners, corners)
    a_row, b_row = max(
        pairs,
        key=lambda p: np.abs(
            _released_vector(np.vstack([base, p[0]]), s)[0]
            - _released_vector(np.vstack([base, p[1]]), s)[0]
        ).sum(),
    )
    res = _audit(
        mech, np.vstack([base, a_row]), np.vstack([base, b_row]), s, 200_000, 4
    )
    assert res.epsilon_lower_bound <= 1.0
    # this pair changes the entries by 5.59 in L1 against the bound 6.11: the
    # audit sees most of it (0.81 with this seed)
    assert res.epsilon_lower_bound > 0.6


# --- utility: the targets ------------------------------------------------


def test_box_ranges_capture_90_percent_at_n_1e5():
    # n = 10^5, d = 20, epsilon = 1, delta = 1/n^2, box ranges [-1.5, 1.5]
    # (no row outside): five independent releases, each must reach 90%
    n = 100_000
    X = _three_directions(n, seed=5)
    assert np.abs(X).max() < 1.5
    shares = [
        _captured_share(
            X,
            PrivatePCA(
                3, epsilon=1.0, delta=1 / n**2, bounds_X=(-1.5, 1.5), random_state=seed
            )
            .fit(X)
            .components_,
        )
        for seed in range(5)
    ]
    assert min(shares) >= 0.9, shares


def test_row_norm_bound_captures_90_percent_at_n_1e4():
    n = 10_000
    X = _three_directions(n, seed=6, scale=1 / 2.5)
    assert np.linalg.norm(X, axis=1).max() < 1
    shares = [
        _captured_share(
            X,
            PrivatePCA(3, epsilon=1.0, delta=1 / n**2, data_norm=1.0, random_state=seed)
            .fit(X)
            .components_,
        )
        for seed in range(5)
    ]
    assert min(shares) >= 0.9, shares


def test_private_mean_within_noise_tolerance():
    n = 20_000
    X = _three_directions(n, d=5, seed=7)
    pca = PrivatePCA(2, epsilon=1.0, delta=1e-8, bounds_X=(-2, 2), random_state=1).fit(
        X
    )
    # the column s sum z carries noise sd sigma / sqrt(2): the mean's sd is that / (s n)
    sd = pca.noise_scale_ / math.sqrt(2) / (pca.intercept_scale_ * n)
    assert np.all(np.abs(pca.mean_ - X.mean(axis=0)) < 5 * sd)


# --- behaviour -------------------------------------------------------------------


def test_inputs_unchanged_and_clipping():
    X = _three_directions(1000, d=4)
    X[:3] *= 50  # outside the box
    before = X.copy()
    kw = {"n_components": 2, "epsilon": 1.0, "delta": 1e-8, "bounds_X": (-2, 2)}
    a = PrivatePCA(random_state=0, **kw).fit(X)
    b = PrivatePCA(random_state=0, **kw).fit(np.clip(X, -2, 2))
    np.testing.assert_array_equal(a.components_, b.components_)
    Xt = a.transform(X)
    a.inverse_transform(Xt)
    np.testing.assert_array_equal(X, before)


def test_same_seed_same_release_different_seeds_differ():
    X = _three_directions(1000, d=4)
    kw = {"n_components": 2, "epsilon": 1.0, "bounds_X": (-2, 2)}
    a = PrivatePCA(random_state=1, **kw).fit(X)
    b = PrivatePCA(random_state=1, **kw).fit(X)
    c = PrivatePCA(random_state=2, **kw).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert not np.array_equal(a.components_, c.components_)


def test_components_are_orthonormal_and_variances_non_negative():
    X = _three_directions(200, d=6)
    pca = PrivatePCA(epsilon=0.1, bounds_X=(-2, 2), random_state=0).fit(X)
    np.testing.assert_allclose(
        pca.components_ @ pca.components_.T, np.eye(6), atol=1e-12
    )
    assert np.all(pca.explained_variance_ >= 0)
    assert np.all(np.diff(pca.explained_variance_) <= 0)
    assert pca.explained_variance_ratio_.sum() == pytest.approx(1.0)


def test_undeclared_domain_warns_and_declared_does_not():
    X = _three_directions(300, d=4)
    with pytest.warns(PrivacyLeakWarning, match="bounds_X"):
        pca = PrivatePCA(2).fit(X)
    np.testing.assert_array_equal(pca.bounds_[0], X.min(axis=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        PrivatePCA(2, bounds_X=(-2, 2)).fit(X)
        PrivatePCA(2, data_norm=5.0).fit(X)


def test_set_output_pandas():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(_three_directions(300, d=4), columns=list("abcd"))
    pca = PrivatePCA(2, bounds_X=(-2, 2), random_state=0).set_output(transform="pandas")
    out = pca.fit_transform(X)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["privatepca0", "privatepca1"]


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"n_components": 5}, ValueError, "n_components=5 must be at most"),
        ({"n_components": 0}, ValueError, "n_components"),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"delta": 1.5}, ValueError, "delta"),
        ({"data_norm": -1.0}, ValueError, "data_norm"),
        ({"bounds_X": (2.0, -2.0)}, ValueError, "lower < upper"),
        ({"bounds_X": ([0, 0], [1, 1])}, ValueError, "length 4"),
        ({"centering": "yes"}, ValueError, "centering"),
    ],
)
def test_bad_parameters_raise_clear_errors(params, error, match):
    with pytest.raises(error, match=match):
        PrivatePCA(**params).fit(_three_directions(50, d=4))


@pytest.mark.parametrize("delta", [0.0, 1e-8])
def test_seed_policy_same_seed_gives_different_noise_by_default(delta):
    import skdp

    X = _three_directions(500, d=4)
    kw = {"epsilon": 1.0, "delta": delta, "bounds_X": (-2, 2), "random_state": 0}
    with skdp.config_context(reproducible_noise=False):
        fits = [PrivatePCA(2, **kw).fit(X) for _ in range(2)]
    assert not np.array_equal(fits[0].mean_, fits[1].mean_)
