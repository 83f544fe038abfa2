"""Secure scalar-product backends for cross-party coefficients.

Both backends compute, for an *encryptor* party holding columns ``U`` (n x m) and
an *evaluator* party holding columns ``V`` (n x p), the matrix ``kappa U^T V``
(plus noise) such that only the server ever holds it, and only with noise:

1. the server makes a key pair and sends the public material to every party;
2. the encryptor sends ``Enc(U)`` (column-packed, chunks of ``N`` slots) to the
   evaluator, and a pairwise mask ``rho`` (uniform) to the evaluator;
3. the encryptor sends ``eta_enc + rho`` (its noise share, masked) to the server;
4. the evaluator computes ``Enc(sum_c U_ic * V_jc)`` slot-wise (ciphertext x
   plaintext products, no rotations), adds a plaintext slot mask whose slot sum is
   ``eta_eval - rho`` (its own noise share minus the pairwise mask; every slot is
   otherwise uniform), re-randomizes with a fresh encryption of zero, switches the
   modulus down and sends the ciphertexts to the server;
5. the server decrypts, sums the slots and adds the masked share: it obtains
   ``kappa U^T V + eta_enc + eta_eval`` and nothing else (single slots are
   uniformly masked).

``PlaintextBackend`` is the ideal functionality of this protocol: the same
messages, kinds and steps, no cryptography (an in-process vault stands in for the
ciphertexts, whose payload never enters the transcript). It is exact and fast, for
simulation and grid searches, and offers no protection against a real adversary.
``BFVBackend`` runs the protocol with Microsoft SEAL's BFV scheme through TenSEAL
(``pip install skdp[secure]``); see its Notes for the threat model.
"""

import math
import os
import tempfile

import numpy as np

__all__ = ["BFVBackend", "PlaintextBackend", "make_backend", "require_backend"]

_SECURE_HINT = (
    'secure_backend="bfv" needs TenSEAL: install the optional extra with '
    "`pip install skdp[secure]` (or `pip install tenseal`)."
)


def require_backend(name):
    """Fail early, with the install hint, if ``name`` needs a missing package."""
    if name == "bfv":
        try:
            import tenseal.sealapi  # noqa: F401
        except ImportError as exc:
            raise ImportError(_SECURE_HINT) from exc


def make_backend(name):
    """Return a fresh backend instance for ``"plaintext"`` or ``"bfv"``."""
    if name == "plaintext":
        return PlaintextBackend()
    if name == "bfv":
        return BFVBackend()
    raise ValueError(f"secure_backend must be 'plaintext' or 'bfv', got {name!r}.")


class Sealed:
    """A message payload that stands for data the receiver cannot read.

    Only ``nbytes`` (what the real protocol would send) and an opaque handle are
    visible; the plaintext backend keeps the content in its vault.
    """

    __slots__ = ("handle", "nbytes", "what")

    def __init__(self, handle, nbytes, what):
        self.handle, self.nbytes, self.what = handle, int(nbytes), what

    def __repr__(self):
        return f"Sealed({self.what}, {self.nbytes} bytes)"


def _payload_nbytes(payload):
    if isinstance(payload, Sealed):
        return payload.nbytes
    if isinstance(payload, bytes | bytearray):
        return len(payload)
    if isinstance(payload, np.ndarray):
        return payload.nbytes
    if isinstance(payload, list | tuple):
        return sum(_payload_nbytes(p) for p in payload)
    if isinstance(payload, dict):
        return sum(_payload_nbytes(p) for p in payload.values())
    return 8


class PlaintextBackend:
    """Ideal-functionality backend: same message flow, no cryptography.

    The cross sums are computed in floating point, rounded to the noise lattice
    (as the centralized release does) and masked with lattice-valued masks, so
    the server's arithmetic is exact and the release equals the centralized one.
    """

    name = "plaintext"

    def __init__(self):
        self._vault = {}
        self._mask_scale = 1.0

    # ---- server side ------------------------------------------------------- #
    def setup(self, granularities, value_bound, noise_bound, rng):
        """Key generation on the server; returns the public material to send."""
        # masks on the lattice (exact float sums) or, without lattice, of the
        # order of the noise (only float rounding error)
        self._mask_scale = max(noise_bound, 1.0)
        return Sealed("public-key", 0, "public key (simulated)")

    def decrypt_sums(self, result, masked_share, granularity):
        """Server: ``kappa U^T V + eta_eval - rho`` plus ``eta_enc + rho``."""
        return self._vault.pop(result.handle) + masked_share

    # ---- party side -------------------------------------------------------- #
    def encrypt_columns(self, U, scale, rng):
        handle = ("enc", id(U), len(self._vault))
        self._vault[handle] = (np.array(U, dtype=np.float64), float(scale))
        return Sealed(handle, U.size * 8, f"Enc({U.shape[1]} columns)")

    def make_mask(self, shape, rng, granularity):
        g = granularity
        if g > 0:
            return g * rng.integers(-(2**40), 2**40, size=shape).astype(np.float64)
        return self._mask_scale * rng.uniform(-1024.0, 1024.0, size=shape)

    def mask_share(self, share, mask, granularity):
        """Encryptor: its noise share plus the pairwise mask, server-readable."""
        return np.asarray(share, dtype=np.float64) + mask

    def evaluate(self, encrypted, V, v_scale, share, mask, rng, granularity):
        """Evaluator: ``round_g(kappa U^T V) + share - mask`` (sealed)."""
        U, u_scale = self._vault[encrypted.handle]
        exact = (u_scale * v_scale) * (U.T @ np.asarray(V, dtype=np.float64))
        g = granularity
        if g > 0:
            exact = np.round(exact / g) * g
        handle = ("res", id(V), len(self._vault))
        self._vault[handle] = exact + share - mask
        return Sealed(handle, exact.size * 8, f"Enc({exact.shape} sums)")

    def release(self, encrypted):
        """Forget encrypted columns once every evaluator has used them."""
        self._vault.pop(encrypted.handle, None)


class BFVBackend:
    """TenSEAL/SEAL BFV backend: real homomorphic encryption.

    Parameters (fixed): ``poly_modulus_degree = 8192`` (8192 slots), SEAL's default
    128-bit-secure coefficient modulus for that degree (218 bits), a 57-bit
    batching plain modulus ``t``.

    Notes
    -----
    **Encoding.** Values are fixed point: the encryptor's columns are truncated
    toward zero to the grid ``2^-f_u``, the evaluator's to ``2^-f_v``, with
    ``2^-(f_u + f_v)`` equal to the noise lattice (so the exact sum lies on the
    lattice and the release is the centralized one for data on those grids;
    truncation toward zero keeps every row inside the declared box and ball).
    Sums are exact integers modulo ``t``; the setup checks that
    ``n max|u| max|v| / g`` plus the noise stays below ``t / 2``.

    **Threat model.** Honest-but-curious server and parties. The server holds the
    only secret key; parties encrypt under its public key and send ciphertexts to
    each other, never to the server, so the server never sees an input ciphertext.
    The server decrypts only masked slot vectors whose slot sum is the noisy
    coefficient. Collusions: server + evaluator learn the encryptor's noise share
    plus mask and so the cross sum up to the encryptor's share of the noise;
    server + encryptor likewise up to the evaluator's share (with the default
    distributed noise no single party knows a cross coefficient's noise); two
    parties without the server learn nothing (they only see ciphertexts and
    uniform masks); the server with every party but one learns that party's
    cross sums with noise reduced to its own share.

    **Circuit privacy.** SEAL does not hide the evaluated function in the
    ciphertext noise: if a key holder saw both an input ciphertext and the result,
    it could solve for the evaluator's plaintext. The topology avoids this case
    (the key holder, the server, never sees inputs, and no party decrypts
    anything). In addition the evaluator re-randomizes the result with a fresh
    encryption of zero and switches the modulus down two levels, which scales the
    inherited noise by ~2^-88 below the rounding noise of the switch. This is a
    mitigation, not a proof of circuit privacy against a server colluding with an
    encryptor (true noise flooding needs access to the ciphertext polynomials,
    which TenSEAL's Python API does not give).
    """

    name = "bfv"
    poly_modulus_degree = 8192
    plain_modulus_bits = 57

    def __init__(self):
        try:
            import tenseal.sealapi as sealapi
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(_SECURE_HINT) from exc
        self._seal = sealapi
        self._tmp = tempfile.TemporaryDirectory(prefix="skdp-bfv-")
        self._n_files = 0

    # ---- serialization through SEAL's stream API (file based in TenSEAL) --- #
    def _path(self):
        self._n_files += 1
        return os.path.join(self._tmp.name, f"{self._n_files}.bin")

    def _dump(self, obj):
        path = self._path()
        obj.save(path)
        with open(path, "rb") as fh:
            data = fh.read()
        os.remove(path)
        return data

    def _load(self, cls, data):
        path = self._path()
        with open(path, "wb") as fh:
            fh.write(data)
        obj = cls()
        obj.load(self._context, path)
        os.remove(path)
        return obj

    # ---- server side ------------------------------------------------------- #
    def setup(self, granularities, value_bound, noise_bound, rng):
        """Server: make the key pair; return the serialized public key.

        ``granularities``: the noise lattices of the coefficient groups (0: none);
        ``value_bound``: bound on any exact cross coefficient; ``noise_bound``: on
        its noise (a tail bound).
        """
        s = self._seal
        N = self.poly_modulus_degree
        parms = s.EncryptionParameters(s.SCHEME_TYPE.BFV)
        parms.set_poly_modulus_degree(N)
        parms.set_coeff_modulus(s.CoeffModulus.BFVDefault(N, s.SEC_LEVEL_TYPE.TC128))
        t = s.PlainModulus.Batching(N, self.plain_modulus_bits)
        parms.set_plain_modulus(t)
        self._t = int(t.value())
        self._context = s.SEALContext(parms, True, s.SEC_LEVEL_TYPE.TC128)
        keygen = s.KeyGenerator(self._context)
        self._secret_key = keygen.secret_key()
        public_key = s.PublicKey()
        keygen.create_public_key(public_key)
        self._decryptor = s.Decryptor(self._context, self._secret_key)
        self._encoder = s.BatchEncoder(self._context)
        self._evaluator = s.Evaluator(self._context)
        limit = max(value_bound + noise_bound, 1e-300)
        # a value v travels as the integer v * 2**units; without a lattice the
        # finest grid that fits the plain modulus
        self._units = {}
        for g in granularities:
            if g > 0:
                units = round(-math.log2(g))
                if 2.0**-units != g:
                    raise ValueError("the noise lattice step must be a power of two.")
            else:
                units = math.floor(math.log2(self._t / 8 / limit))
            if limit * 2.0**units >= self._t / 8:
                raise ValueError(
                    'secure_backend="bfv": the cross sums (up to '
                    f"{limit:.3g} in absolute value) do not fit the "
                    f"{self.plain_modulus_bits}-bit plaintext modulus at the noise "
                    "lattice's precision; use fewer rows, a smaller domain or "
                    'secure_backend="plaintext".'
                )
            self._units[g] = int(units)
        # the encryptor's fixed-point bits: half of the coarsest grid
        self._f_u = min(self._units.values()) // 2
        payload = self._dump(public_key)
        self._public_key_bytes = payload
        return payload

    def _sum_slots(self, plain):
        vals = np.asarray(self._encoder.decode_uint64(plain), dtype=np.uint64)
        lo = int(np.sum(vals & np.uint64(0xFFFFFFFF)))
        hi = int(np.sum(vals >> np.uint64(32)))
        return ((hi << 32) + lo) % self._t

    def decrypt_sums(self, result, masked_share, granularity):
        """Server: decrypt every result, sum its slots, add the masked share."""
        units = self._units[granularity]
        s = self._seal
        m, p = masked_share.shape
        out = np.empty((m, p))
        for idx, blob in enumerate(result):
            i, j = divmod(idx, p)
            ct = self._load(s.Ciphertext, blob)
            plain = s.Plaintext()
            self._decryptor.decrypt(ct, plain)
            total = (self._sum_slots(plain) + int(masked_share[i, j])) % self._t
            if total > self._t // 2:
                total -= self._t
            out[i, j] = total * 2.0**-units
        return out

    # ---- party side -------------------------------------------------------- #
    def _party_tools(self):
        # one encryptor per process stands for the parties' encryptors, all built
        # from the public key only (the secret key is never used on this side)
        if not hasattr(self, "_encryptor"):
            s = self._seal
            public_key = self._load(s.PublicKey, self._public_key_bytes)
            self._encryptor = s.Encryptor(self._context, public_key)
        return self._encryptor

    def _to_int(self, values, bits):
        scaled = np.trunc(np.asarray(values, dtype=np.float64) * 2.0**bits)
        return scaled.astype(np.int64)

    def _chunks(self, column):
        N = self.poly_modulus_degree
        n_chunks = max(1, math.ceil(column.shape[0] / N))
        padded = np.zeros(n_chunks * N, dtype=np.int64)
        padded[: column.shape[0]] = column
        return padded.reshape(n_chunks, N)

    def encrypt_columns(self, U, scale, rng):
        """Encryptor: ``Enc`` of every column of ``U`` (kept with its scale)."""
        s = self._seal
        encryptor = self._party_tools()
        U = np.asarray(U, dtype=np.float64)
        columns = []
        f_u = self._f_u
        for col in U.T:
            blobs = []
            for chunk in self._chunks(self._to_int(col, f_u)):
                plain = s.Plaintext()
                self._encoder.encode(chunk.tolist(), plain)
                ct = s.Ciphertext()
                encryptor.encrypt(plain, ct)
                blobs.append(self._dump(ct))
            columns.append(blobs)
        return {"columns": columns, "scale": float(scale)}

    def make_mask(self, shape, rng, granularity):
        return rng.integers(0, self._t, size=shape, dtype=np.int64)

    def mask_share(self, share, mask, granularity):
        units = self._units[granularity]
        ints = np.round(np.asarray(share, dtype=np.float64) * 2.0**units)
        return (ints.astype(np.int64) % self._t + mask) % self._t

    def evaluate(self, encrypted, V, v_scale, share, mask, rng, granularity):
        """Evaluator: masked, re-randomized, modulus-switched ``Enc(U^T V)``."""
        units = self._units[granularity]
        s = self._seal
        ev, enc = self._evaluator, self._party_tools()
        # u is encoded with f_u bits; the evaluator's integers carry the rest of
        # the scale and both constants: u_int v_int = value 2^units
        f_v = units - self._f_u
        factor = 2.0**f_v * encrypted["scale"] * v_scale
        v_ints = np.trunc(np.asarray(V, dtype=np.float64) * factor).astype(np.int64)
        plains = []
        for col in v_ints.T:
            row = []
            for chunk in self._chunks(col):
                if not chunk.any():
                    row.append(None)
                    continue
                plain = s.Plaintext()
                self._encoder.encode(chunk.tolist(), plain)
                # products in the NTT domain are pointwise (6x faster)
                ev.transform_to_ntt_inplace(plain, self._context.first_parms_id())
                row.append(plain)
            plains.append(row)
        share_ints = np.round(np.asarray(share) * 2.0**units).astype(np.int64)
        inputs = []
        for col in encrypted["columns"]:
            cts = [self._load(s.Ciphertext, blob) for blob in col]
            for ct in cts:
                ev.transform_to_ntt_inplace(ct)
            inputs.append(cts)
        N = self.poly_modulus_degree
        t = self._t
        out = []
        for i, col_cts in enumerate(inputs):
            for j, row in enumerate(plains):
                acc = None
                for ct, plain in zip(col_cts, row):
                    if plain is not None:
                        prod = s.Ciphertext()
                        ev.multiply_plain(ct, plain, prod)
                        if acc is None:
                            acc = prod
                        else:
                            ev.add_inplace(acc, prod)
                fresh = s.Ciphertext()
                enc.encrypt_zero(fresh)  # re-randomization (and a non-empty sum)
                if acc is None:
                    acc = fresh
                else:
                    ev.transform_from_ntt_inplace(acc)
                    ev.add_inplace(acc, fresh)
                # slot mask: uniform slots whose sum is share - mask (mod t)
                target = (int(share_ints[i, j]) - int(mask[i, j])) % t
                slots = rng.integers(0, t, size=N, dtype=np.int64)
                slots[-1] = (target - self._partial_sum(slots[:-1])) % t
                mask_plain = s.Plaintext()
                self._encoder.encode(slots.tolist(), mask_plain)
                ev.add_plain_inplace(acc, mask_plain)
                ev.mod_switch_to_next_inplace(acc)
                ev.mod_switch_to_next_inplace(acc)
                out.append(self._dump(acc))
        return out

    def _partial_sum(self, vals):
        vals = vals.astype(np.uint64)
        lo = int(np.sum(vals & np.uint64(0xFFFFFFFF)))
        hi = int(np.sum(vals >> np.uint64(32)))
        return ((hi << 32) + lo) % self._t

    def release(self, encrypted):
        return None
