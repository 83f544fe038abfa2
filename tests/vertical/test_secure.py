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
