"""The secure scalar-product backends and the divisible noise shares."""

import math

import numpy as np
import pytest
from scipy import stats

from skdp.mechanisms import GaussianMechanism, LaplaceMechanism
from skdp.vertical._noise_shares import noise_share
from skdp.vertical._secure import make_key_holder, make_party_backend


def _noise_shares(mech, size, n_shares, rng):
    return noise_share(mech, size, n_shares, "distributed", rng)


def _block_inputs(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    # data on a 2^-8 grid: exactly representable in the bfv fixed point
    U = np.round(rng.uniform(-1, 1, (n, 3)) * 256) / 256
    V = np.round(rng.uniform(-1, 1, (n, 2)) * 256) / 256
    return U, V, rng


def _run_block(name, U, V, rng, g=2.0**-27, n_encryptors=1):
    holder = make_key_holder(name)
    context = holder.setup([g], value_bound=U.shape[0], noise_bound=1e3)
    enc_party = make_party_backend(context)
    eval_party = make_party_backend(context)
    shares = [g * rng.integers(-1000, 1000, (3, 2)) for _ in range(n_encryptors)]
    share_eval = g * rng.integers(-1000, 1000, (3, 2))
    encrypted = enc_party.encrypt_columns(U, 0.125)
    enc_shares = [enc_party.encrypt_share(share, g) for share in shares]
    result = eval_party.evaluate(encrypted, V, 1.0, enc_shares, share_eval, rng, g)
    out = holder.decrypt_sums(result, g)
    return out, 0.125 * U.T @ V + sum(shares) + share_eval, holder, eval_party


def test_plaintext_backend_is_exact():
    U, V, rng = _block_inputs()
    out, expected, _, _ = _run_block("plaintext", U, V, rng)
    np.testing.assert_array_equal(out, expected)


def test_unknown_backend():
    with pytest.raises(ValueError, match="secure_backend"):
        make_key_holder("paillier")
    with pytest.raises(ValueError, match="secure_backend"):
        make_party_backend({"backend": "paillier"})


@pytest.mark.parametrize("name", ["plaintext", "bfv"])
def test_evaluator_adds_several_encrypted_shares(name):
    if name == "bfv":
        pytest.importorskip("tenseal")
    U, V, rng = _block_inputs(n=500)
    out, expected, _, _ = _run_block(name, U, V, rng, n_encryptors=3)
    np.testing.assert_array_equal(out, expected)


def test_bfv_backend_is_exact_and_masks_every_slot():
    pytest.importorskip("tenseal")
    U, V, rng = _block_inputs()
    out, expected, backend, party = _run_block("bfv", U, V, rng)
    np.testing.assert_array_equal(out, expected)
    # the server's view of one result: slots are uniform except for their sum
    g = 2.0**-27
    g_units = backend._units[g]
    encrypted = party.encrypt_columns(U, 0.125)
    zeros = np.zeros((3, 2))
    enc_share = party.encrypt_share(zeros, g)
    result = party.evaluate(encrypted, V, 1.0, [enc_share], zeros, rng, g)
    s = backend._seal
    ct = backend._load(s.Ciphertext, result["sums"][0])
    plain = s.Plaintext()
    backend._decryptor.decrypt(ct, plain)
    exact_slots = backend._encoder.decode_uint64(plain)
    slots = np.array(exact_slots, dtype=np.float64)
    products = np.zeros(backend.poly_modulus_degree)
    np.add.at(
        products,
        np.arange(U.shape[0]) % backend.poly_modulus_degree,
        0.125 * U[:, 0] * V[:, 0] * 2.0**g_units,
    )
    assert np.mean(np.isclose(slots, np.mod(products, backend._t))) < 0.01
    # slots look uniform on [0, t): mean t/2 within 5 sigma
    t = backend._t
    assert abs(slots.mean() - t / 2) < 5 * t / math.sqrt(12 * slots.size)
    # ... and their sum is the exact entry (the shares were zero)
    total = sum(int(v) for v in exact_slots) % t
    assert total == round(0.125 * U[:, 0] @ V[:, 0] * 2.0**g_units) % t


@pytest.mark.parametrize("n_shares", [2, 4])
def test_laplace_shares_sum_to_the_lattice_laplace(n_shares):
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=3.0)
    rng = np.random.default_rng(1)
    size = 40_000
    total = sum(_noise_shares(mech, size, n_shares, rng) for _ in range(n_shares))
    # on the lattice, mean 0, variance 2 b^2 within 5 sigma (Var(X^2) = 20 b^4)
    assert np.all(np.round(total / mech.granularity) * mech.granularity == total)
    assert abs(total.mean()) < 5 * math.sqrt(mech.variance / size)
    var_sd = math.sqrt(20 / size) * mech.scale**2
    assert abs(total.var() - mech.variance) < 5 * var_sd
    reference = mech.sample_noise(size, rng)
    assert stats.ks_2samp(total, reference).pvalue > 1e-4
    # one share alone is clearly not the full noise (its variance is 1/n)
    single = _noise_shares(mech, size, n_shares, rng)
    assert single.var() < mech.variance / n_shares + 5 * var_sd


def test_gaussian_shares_sum_to_the_gaussian():
    mech = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=2.0)
    rng = np.random.default_rng(2)
    size = 40_000
    total = _noise_shares(mech, size, 2, rng) + _noise_shares(mech, size, 2, rng)
    assert stats.kstest(total / mech.sigma, "norm").pvalue > 1e-4


def test_audit_of_a_cross_coefficient_released_with_two_shares():
    # one cross coefficient whose exact value moves by the sensitivity between
    # neighbours, released as value + share_enc + share_eval: the audited epsilon
    # lower bound must not exceed the claim
    from skdp.utils import audit_mechanism

    eps, sens = 1.0, 2.0
    mech = LaplaceMechanism(epsilon=eps, sensitivity=sens)

    def release(value, n, rng):
        on_lattice = np.round(value / mech.granularity) * mech.granularity
        return (
            on_lattice + _noise_shares(mech, n, 2, rng) + _noise_shares(mech, n, 2, rng)
        )

    result = audit_mechanism(release, 0.0, sens, n_samples=100_000, random_state=0)
    assert result.epsilon_lower_bound <= eps
    # and the audit is not vacuous: it finds a good part of epsilon
    assert result.epsilon_lower_bound > 0.5 * eps


def test_bfv_fit_leaves_no_resource_warning_and_no_temporary_files(
    tmp_path, monkeypatch
):
    import gc
    import tempfile
    import warnings

    pytest.importorskip("tenseal")
    from skdp.datasets import make_private_regression
    from skdp.vertical import VerticalFMRegressor

    # a private temp root: other processes' bfv fits cannot interfere
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    X, y, _, parts = make_private_regression(200, 4, n_parties=2, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        reg = VerticalFMRegressor(
            epsilon=1.0,
            data_norm=1.0,
            bounds_y=(-1, 1),
            partition=parts,
            secure_backend="bfv",
            random_state=0,
        ).fit(X, y)
        gc.collect()  # an implicit TemporaryDirectory cleanup would warn here
    assert reg.coef_.shape == (4,)
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert list(tmp_path.iterdir()) == []


def test_fixed_point_stays_in_a_declared_range_that_excludes_zero():
    """Truncation toward 0 leaves [0.3, 1] (trunc(0.3 m) / m < 0.3); the clip
    keeps every encoded value in the declared range, and is a no-op for a range
    that contains 0 (where truncation alone stays inside)."""
    from skdp.vertical._secure import fixed_point

    m = 2.0**20 * 0.125 * 3  # not a power of two: the grid misses both ends
    lower, upper = np.array([0.3, -1.0]), np.array([1.0, 1.0])
    rng = np.random.default_rng(0)
    values = rng.uniform(lower, upper, (1000, 2))
    values[:2] = [lower, upper]
    plain = np.trunc(values * m)
    assert plain[0, 0] / m < 0.3  # the bug the clip fixes
    ints = fixed_point(values, m, (lower, upper))
    assert np.all(ints / m >= lower) and np.all(ints / m <= upper)
    assert np.max(np.abs(ints - plain)) <= 1  # moved by one grid step at most
    np.testing.assert_array_equal(ints[:, 1], plain[:, 1])  # contains 0: trunc
    np.testing.assert_array_equal(fixed_point(values, m), plain)
    with pytest.raises(ValueError, match="narrower than the fixed-point grid"):
        fixed_point([[0.5]], 4.0, (np.array([0.3]), np.array([0.4])))
    with pytest.raises(ValueError, match="multiplier must be > 0"):
        fixed_point([[0.5]], -1.0)


def test_bfv_fixed_point_release_stays_within_the_group_sensitivity():
    """The worst replace-one change of a cross entry computed as bfv computes it
    (u with f_u bits, v with the rest, both clipped to the box) stays within
    the group's sensitivity on an off-centre box without an intercept (where
    the range bound is the binding one). Found by an independent review:
    without the clip the change exceeded the sensitivity by a relative 8e-6."""
    from skdp._fm import DataDomain
    from skdp.vertical._plan import make_plan
    from skdp.vertical._secure import fixed_point

    lower, upper = np.array([0.3, 0.3, -1.0]), np.array([1.0, 1.0, 1.0])
    domain = DataDomain(3, lower=lower, upper=upper)
    pairs = np.full((3, 3), 0.3) - 0.3 * np.eye(3)
    for objective, C in (("multinomial_taylor", 3), ("logistic_taylor", 2)):
        plan = make_plan(
            objective=objective,
            domain=domain,
            partition=[np.array([0]), np.array([1]), np.array([2])],
            label_party=2,
            epsilon=1.0,
            delta=0.0,
            mechanism="laplace",
            linear_weight=0.6,
            budgets=(np.array([0.5, 0.5, 0.5]), pairs),
            n_classes=C,
        )
        units = {
            key: round(-math.log2(g.mechanism.granularity))
            for key, g in plan.groups.items()
        }
        f_u = min(units.values()) // 2  # the key holder's layout
        group = plan.groups["pair", 0, 1]
        f_v = units["pair", 0, 1] - f_u
        ends = [0.3, 1.0]
        values = []
        for a in ends:
            for b in ends:
                u = fixed_point([[a]], 2.0**f_u, (lower[:1], upper[:1]))[0, 0]
                v = fixed_point([[b]], 2.0**f_v / 8, (lower[1:2], upper[1:2]))[0, 0]
                values.append(u * v * 2.0 ** -units["pair", 0, 1])
        assert max(values) - min(values) <= group.mechanism.sensitivity


def test_parties_pass_their_declared_ranges_to_the_bfv_encoding(monkeypatch):
    """Every bfv encoding of a party's columns is clipped to its (uncentred,
    no-intercept) box, and the least-squares labels to -2 y_bounds."""
    pytest.importorskip("tenseal")
    from skdp.vertical import VerticalFMRegressor, _secure

    seen = []
    original = _secure.fixed_point

    def spy(values, multiplier, bounds=None):
        seen.append(None if bounds is None else tuple(np.asarray(b) for b in bounds))
        return original(values, multiplier, bounds)

    monkeypatch.setattr(_secure, "fixed_point", spy)
    rng = np.random.default_rng(0)
    X = rng.uniform(0.3, 1.0, (200, 3))
    y = X @ [1.0, -0.5, 0.2] + 2.0
    VerticalFMRegressor(
        epsilon=1.0,
        bounds_X=(0.3, 1.0),
        bounds_y=(1.0, 4.0),
        fit_intercept=False,
        partition=[[0], [1, 2]],
        secure_backend="bfv",
        random_state=0,
    ).fit(X, y)
    assert seen and all(b is not None for b in seen)
    x_ranges = [b for b in seen if np.all(b[0] == 0.3)]
    label_ranges = [b for b in seen if np.all(b[0] == -8.0)]
    assert x_ranges and all(np.all(b[1] == 1.0) for b in x_ranges)
    assert label_ranges and all(np.all(b[1] == -2.0) for b in label_ranges)
    assert len(x_ranges) + len(label_ranges) == len(seen)
