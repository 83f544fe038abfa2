"""The secure scalar-product backends and the divisible noise shares."""

import math

import numpy as np
import pytest
from scipy import stats

from skdp.mechanisms import GaussianMechanism, LaplaceMechanism
from skdp.vertical._protocol import _noise_shares
from skdp.vertical._secure import PlaintextBackend, make_backend


def _block_inputs(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    # data on a 2^-8 grid: exactly representable in the bfv fixed point
    U = np.round(rng.uniform(-1, 1, (n, 3)) * 256) / 256
    V = np.round(rng.uniform(-1, 1, (n, 2)) * 256) / 256
    return U, V, rng


def _run_block(backend, U, V, rng, g=2.0**-27):
    backend.setup([g], value_bound=U.shape[0], noise_bound=1e3, rng=rng)
    share_enc = g * rng.integers(-1000, 1000, (3, 2))
    share_eval = g * rng.integers(-1000, 1000, (3, 2))
    encrypted = backend.encrypt_columns(U, 0.125, rng)
    mask = backend.make_mask((3, 2), rng, g)
    masked = backend.mask_share(share_enc, mask, g)
    result = backend.evaluate(encrypted, V, 1.0, share_eval, mask, rng, g)
    out = backend.decrypt_sums(result, masked, g)
    return out, 0.125 * U.T @ V + share_enc + share_eval, masked


def test_plaintext_backend_is_exact():
    U, V, rng = _block_inputs()
    out, expected, _ = _run_block(PlaintextBackend(), U, V, rng)
    np.testing.assert_array_equal(out, expected)


def test_unknown_backend():
    with pytest.raises(ValueError, match="secure_backend"):
        make_backend("paillier")


def test_bfv_backend_is_exact_and_masks_every_slot():
    pytest.importorskip("tenseal")
    from skdp.vertical._secure import BFVBackend

    U, V, rng = _block_inputs()
    backend = BFVBackend()
    out, expected, masked = _run_block(backend, U, V, rng)
    np.testing.assert_array_equal(out, expected)
    # the server's view of one result: slots are uniform except for their sum
    g_units = backend._units[2.0**-27]
    encrypted = backend.encrypt_columns(U, 0.125, rng)
    result = backend.evaluate(
        encrypted, V, 1.0, np.zeros((3, 2)), np.zeros((3, 2), np.int64), rng, 2**-27
    )
    s = backend._seal
    ct = backend._load(s.Ciphertext, result[0])
    plain = s.Plaintext()
    backend._decryptor.decrypt(ct, plain)
    slots = np.array(backend._encoder.decode_uint64(plain), dtype=np.float64)
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
    # the masked share is uniform too (not the noise share itself)
    assert np.all(masked >= 0) and np.all(masked < t)


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
