"""Secure scalar-product backends for cross-party coefficients.

Both backends compute, for an *encryptor* party holding columns ``U`` (n x m) and
an *evaluator* party holding columns ``V`` (n x p), the matrix ``kappa U^T V``
(plus noise) such that only the server ever holds it, and only with noise:

1. the server makes a key pair and sends the public key to every party;
2. the encryptor sends ``Enc(U)`` (column-packed, chunks of ``N`` slots) and
   ``Enc(eta_enc)`` (its noise share of the block, packed in slots) to the
   evaluator, never to the server;
3. the evaluator computes ``Enc(sum_c U_ic * V_jc)`` slot-wise (ciphertext x
   plaintext products in the NTT domain, no rotations), adds the encryptor's
   share of entry ``(i, j)`` (the share ciphertext times a public one-hot
   selector), adds a plaintext slot mask that is uniform except that its slot
   sum is its own noise share ``eta_eval``, re-randomizes with a fresh
   encryption of zero, switches the modulus down and sends the result to the
   server;
4. the server decrypts and sums the slots: it obtains
   ``kappa U^T V + eta_enc + eta_eval`` and nothing else (single slots are
   uniformly masked). Neither party learns the other's noise share.

``PlaintextBackend`` is the ideal functionality of this protocol: the same
messages, kinds and steps, no cryptography (an in-process vault stands in for the
ciphertexts, whose payload never enters the transcript). It is exact and fast, for
simulation and grid searches, and offers no protection against a real adversary.
``BFVBackend`` runs the protocol with Microsoft SEAL's BFV scheme through TenSEAL
(``pip install skdp[secure]``); see its Notes for the threat model.
"""

import math
import os
import shutil
import tempfile
import weakref

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

    Only ``nbytes`` (the size of the plaintext data it stands for; the bfv
    backend's ciphertexts are far larger) and an opaque handle are visible; the
    plaintext backend keeps the content in its vault.
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

    # ---- server side ------------------------------------------------------- #
    def setup(self, granularities, value_bound, noise_bound, rng):
        """Key generation on the server; returns the public material to send."""
        return Sealed("public-key", 0, "public key (simulated)")

    def decrypt_sums(self, result, granularity):
        """Server: ``kappa U^T V + eta_enc + eta_eval``."""
        return self._vault.pop(result.handle)

    # ---- party side -------------------------------------------------------- #
    def _store(self, value, nbytes, what):
        handle = (what, len(self._vault), id(value))
        self._vault[handle] = value
        return Sealed(handle, nbytes, what)

    def encrypt_columns(self, U, scale, rng):
        # the simulation keeps a read-only reference: parties never modify blocks
        U = np.asarray(U, dtype=np.float64)
        return self._store((U, float(scale)), U.size * 8, f"Enc({U.shape[1]} columns)")

    def encrypt_share(self, share, rng, granularity):
        """Encryptor: its noise share of a block, sealed for the evaluator."""
        share = np.array(share, dtype=np.float64)
        return self._store(share, share.size * 8, f"Enc(noise share {share.shape})")

    def evaluate(self, encrypted, V, v_scale, enc_share, share, rng, granularity):
        """Evaluator: ``round_g(kappa U^T V) + eta_enc + eta_eval`` (sealed)."""
        U, u_scale = self._vault[encrypted.handle]
        exact = (u_scale * v_scale) * (U.T @ np.asarray(V, dtype=np.float64))
        g = granularity
        if g > 0:
            exact = np.round(exact / g) * g
        noisy = exact + self._vault.pop(enc_share.handle) + share
        return self._store(noisy, noisy.size * 8, f"Enc({noisy.shape} sums)")

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
    each other, never to the server, so the server never sees an input ciphertext,
    and it decrypts only slot vectors that are uniform except for their sum, the
    noisy coefficient. Each party of a pair adds its own noise share, the
    encryptor's under encryption, so neither party knows the other's share.
    Collusions: (a) parties without the server, in any number, see only
    ciphertexts besides their own data and learn nothing more. (b) The server
    with the *evaluator* of a pair can decrypt the encryptor's ciphertexts: its
    columns and noise share are lost to them (one decryption key is the weak
    point of this design; the paper's Yuan & Yu scheme splits decryption among the
    participants, which TenSEAL does not offer). (c) The server with the
    *encryptor* of a pair learns the pair's cross sums with only the evaluator's
    noise share on them (noisy, but no longer the full epsilon guarantee), and
    see below for the evaluator's columns.

    **Circuit privacy.** SEAL does not hide the evaluated function in the
    ciphertext noise: if a key holder saw both an input ciphertext and the result,
    it could solve for the evaluator's plaintext. The topology avoids this case
    (the key holder, the server, never sees inputs, and no party decrypts
    anything). In addition the evaluator re-randomizes the result with a fresh
    encryption of zero and switches the modulus down two levels, which scales the
    inherited noise by ~2^-88 below the rounding noise of the switch. This is a
    mitigation, not a proof of circuit privacy against case (c) (true noise
    flooding needs write access to the ciphertext polynomials, which TenSEAL's
    Python API does not give).
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
        self._tmp_dir = tempfile.mkdtemp(prefix="skdp-bfv-")
        # removed with the backend; TemporaryDirectory's implicit cleanup would
        # emit a ResourceWarning at every fit
        weakref.finalize(self, shutil.rmtree, self._tmp_dir, ignore_errors=True)
        self._n_files = 0

    # ---- serialization through SEAL's stream API (file based in TenSEAL) --- #
    def _path(self):
        self._n_files += 1
        return os.path.join(self._tmp_dir, f"{self._n_files}.bin")

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

    def decrypt_sums(self, result, granularity):
        """Server: decrypt every result and sum its slots."""
        units = self._units[granularity]
        s = self._seal
        m, p = result["shape"]
        out = np.empty(m * p)
        for idx, blob in enumerate(result["sums"]):
            ct = self._load(s.Ciphertext, blob)
            plain = s.Plaintext()
            self._decryptor.decrypt(ct, plain)
            total = self._sum_slots(plain)
            if total > self._t // 2:
                total -= self._t
            out[idx] = total * 2.0**-units
        return out.reshape(m, p)

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

    def _encode(self, values, ntt=False):
        plain = self._seal.Plaintext()
        self._encoder.encode(values.tolist(), plain)
        if ntt:
            self._evaluator.transform_to_ntt_inplace(
                plain, self._context.first_parms_id()
            )
        return plain

    def encrypt_share(self, share, rng, granularity):
        """Encryptor: its noise share of a block, packed in slots, encrypted."""
        units = self._units[granularity]
        ints = np.round(np.asarray(share, dtype=np.float64).ravel() * 2.0**units)
        ints = ints.astype(np.int64) % self._t
        blobs = []
        for chunk in self._chunks(ints):
            ct = self._seal.Ciphertext()
            self._party_tools().encrypt(self._encode(chunk), ct)
            blobs.append(self._dump(ct))
        return {"shares": blobs}

    def evaluate(self, encrypted, V, v_scale, enc_share, share, rng, granularity):
        """Evaluator: ``Enc(kappa U^T V + eta_enc)`` masked with ``eta_eval``,
        re-randomized and modulus-switched."""
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
        share_cts = [self._load(s.Ciphertext, blob) for blob in enc_share["shares"]]
        for ct in share_cts:
            ev.transform_to_ntt_inplace(ct)
        N = self.poly_modulus_degree
        t = self._t
        p = len(plains)
        out = []
        for i, col_cts in enumerate(inputs):
            for j, row in enumerate(plains):
                # the encryptor's share of entry (i, j), selected by a public one-hot
                which, slot = divmod(i * p + j, N)
                one_hot = np.zeros(N, dtype=np.int64)
                one_hot[slot] = 1
                acc = s.Ciphertext()
                ev.multiply_plain(share_cts[which], self._encode(one_hot, True), acc)
                for ct, plain in zip(col_cts, row):
                    if plain is not None:
                        prod = s.Ciphertext()
                        ev.multiply_plain(ct, plain, prod)
                        ev.add_inplace(acc, prod)
                ev.transform_from_ntt_inplace(acc)
                fresh = s.Ciphertext()
                enc.encrypt_zero(fresh)  # re-randomization
                ev.add_inplace(acc, fresh)
                # slot mask: uniform slots whose sum is this party's share (mod t)
                target = int(share_ints[i, j]) % t
                slots = rng.integers(0, t, size=N, dtype=np.int64)
                slots[-1] = (target - self._partial_sum(slots[:-1])) % t
                mask_plain = s.Plaintext()
                self._encoder.encode(slots.tolist(), mask_plain)
                ev.add_plain_inplace(acc, mask_plain)
                ev.mod_switch_to_next_inplace(acc)
                ev.mod_switch_to_next_inplace(acc)
                out.append(self._dump(acc))
        return {"sums": out, "shape": (len(inputs), p)}

    def _partial_sum(self, vals):
        vals = vals.astype(np.uint64)
        lo = int(np.sum(vals & np.uint64(0xFFFFFFFF)))
        hi = int(np.sum(vals >> np.uint64(32)))
        return ((hi << 32) + lo) % self._t

    def release(self, encrypted):
        return None
