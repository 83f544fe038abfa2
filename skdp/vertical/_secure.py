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

Each backend has two sides, so that keys stay with their owner: the *key
holder* (the server: key generation, the only secret key, decryption) and the
*party* side, built from the public context the key holder sends as bytes
(encryption and evaluation under the public key only). Everything that travels
is data: ``bytes`` serialized by SEAL, arrays, numbers.

``"plaintext"`` is the ideal functionality of this protocol: the same messages,
kinds and steps, no cryptography: a "ciphertext" is the data itself, marked
``{"simulated": True, ...}``. It is exact and fast, for simulation and grid
searches, and offers no protection against a real adversary (across processes
the columns travel in the clear to the other party). ``"bfv"`` runs the protocol
with Microsoft SEAL's BFV scheme through TenSEAL (skdp's ``secure`` extra);
see :class:`BFVKeyHolder` for the threat model.
"""

import math
import os
import shutil
import tempfile
import weakref

import numpy as np

from skdp.utils.extras import install_hint
from skdp.vertical._checks import check_payload_array

__all__ = [
    "BFVKeyHolder",
    "BFVParty",
    "PlaintextKeyHolder",
    "PlaintextParty",
    "fixed_point",
    "make_key_holder",
    "make_party_backend",
    "require_backend",
]

_SECURE_HINT = f'secure_backend="bfv" needs TenSEAL: {install_hint("secure")}.'
_BACKENDS = ("plaintext", "bfv")


def require_backend(name):
    """Fail early, with the install hint, if ``name`` needs a missing package."""
    if name == "bfv":
        try:
            import tenseal.sealapi  # noqa: F401
        except ImportError as exc:
            raise ImportError(_SECURE_HINT) from exc


def _check_name(name):
    if name not in _BACKENDS:
        raise ValueError(f"secure_backend must be 'plaintext' or 'bfv', got {name!r}.")


def make_key_holder(name):
    """The server's side of backend ``name`` (holds the secret key)."""
    _check_name(name)
    return PlaintextKeyHolder() if name == "plaintext" else BFVKeyHolder()


def make_party_backend(public_context):
    """A party's side of the backend, from the key holder's public context."""
    name = public_context.get("backend")
    _check_name(name)
    if name == "plaintext":
        return PlaintextParty(public_context)
    return BFVParty(public_context)


def _check_dict(data, keys, who):
    if not isinstance(data, dict) or set(data) != set(keys):
        got = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{who}: expected the entries {sorted(keys)}, got {got}")


def _check_scale(got, want, who):
    if not isinstance(got, float) or got != want:
        raise ValueError(f"{who}: its scale is not the plan's ({want:g})")


def _check_blobs(blobs, count, who, what):
    if (
        not isinstance(blobs, list)
        or len(blobs) != count
        or not all(isinstance(b, bytes) for b in blobs)
    ):
        raise ValueError(f"{who}: {what} must be a list of {count} ciphertexts")


# --------------------------------------------------------------------------- #
# plaintext: the ideal functionality
# --------------------------------------------------------------------------- #
class PlaintextKeyHolder:
    """Ideal-functionality key holder: no key, the sums arrive in the clear.

    The cross sums are computed in floating point, rounded to the noise lattice
    (as the centralized release does) and noised with lattice-valued shares, so
    the server's arithmetic is exact and the release equals the centralized one.
    """

    name = "plaintext"

    def setup(self, granularities, value_bound, noise_bound):
        """Key generation on the server; returns the public context to send."""
        return {"backend": self.name}

    def decrypt_sums(self, result, granularity):
        """Server: ``kappa U^T V + shares`` (as sent: the server checks them)."""
        sums = result["sums"]
        if not isinstance(sums, np.ndarray):
            raise TypeError(f"the sums must be an array, got {type(sums).__name__}")
        return sums


class PlaintextParty:
    """Ideal-functionality party side: "ciphertexts" are the data themselves."""

    name = "plaintext"

    def __init__(self, public_context):
        self.public_context = public_context

    def check_columns(self, encrypted, shape, scale, who):
        """Evaluator, on receipt: the encryptor's columns are a float64 array of
        ``shape`` (n rows), finite, with the plan's ``scale``."""
        _check_dict(encrypted, ("simulated", "columns", "scale"), who)
        check_payload_array(encrypted["columns"], f"{who}: 'columns'", shape=shape)
        _check_scale(encrypted["scale"], scale, who)

    def check_share(self, enc_share, shape, who):
        """Evaluator, on receipt: a noise share of the block's ``shape``."""
        _check_dict(enc_share, ("simulated", "share"), who)
        check_payload_array(enc_share["share"], f"{who}: 'share'", shape=shape)

    def encrypt_columns(self, U, scale, bounds=None):
        # a read-only reference in one process: parties never modify blocks;
        # exact arithmetic, so the declared bounds need no enforcing here
        U = np.asarray(U, dtype=np.float64)
        return {"simulated": True, "columns": U, "scale": float(scale)}

    def encrypt_share(self, share, granularity):
        """Encryptor: its noise share of a block, for the evaluator."""
        return {"simulated": True, "share": np.array(share, dtype=np.float64)}

    def evaluate(
        self, encrypted, V, v_scale, enc_shares, share, rng, granularity, bounds=None
    ):
        """Evaluator: ``round_g(kappa U^T V) + shares of the others + own``."""
        U, u_scale = encrypted["columns"], encrypted["scale"]
        exact = (u_scale * v_scale) * (U.T @ np.asarray(V, dtype=np.float64))
        g = granularity
        if g > 0:
            exact = np.round(exact / g) * g
        noisy = exact
        for enc_share in enc_shares:
            noisy = noisy + enc_share["share"]
        noisy = noisy + share
        return {"simulated": True, "sums": noisy}


# --------------------------------------------------------------------------- #
# BFV through TenSEAL's SEAL API
# --------------------------------------------------------------------------- #
class _SealIO:
    """Serialization through SEAL's stream API (file based in TenSEAL)."""

    def __init__(self):
        try:
            import tenseal.sealapi as sealapi
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(_SECURE_HINT) from exc
        self._seal = sealapi
        self._tmp_dir = tempfile.mkdtemp(prefix="skdp-bfv-")
        # removed with this object; TemporaryDirectory's implicit cleanup would
        # emit a ResourceWarning at every fit
        weakref.finalize(self, shutil.rmtree, self._tmp_dir, ignore_errors=True)
        self._n_files = 0

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

    def _load_parms(self, data):
        path = self._path()
        with open(path, "wb") as fh:
            fh.write(data)
        parms = self._seal.EncryptionParameters(self._seal.SCHEME_TYPE.BFV)
        parms.load(path)
        os.remove(path)
        return parms

    def _sum_slots(self, vals):
        vals = np.asarray(vals, dtype=np.uint64)
        lo = int(np.sum(vals & np.uint64(0xFFFFFFFF)))
        hi = int(np.sum(vals >> np.uint64(32)))
        return ((hi << 32) + lo) % self._t


def fixed_point(values, multiplier, bounds=None):
    """The integers ``values * multiplier`` truncated toward zero, kept inside
    the declared per-column range.

    Truncation toward zero keeps a value inside any range that contains 0 (a
    centred box, a ball), so the fixed-point record stays in the domain the
    sensitivity is computed for. A range that excludes 0 (a box declared without
    an intercept, so not centred) is not closed under it: ``trunc`` of its lower
    end ``0.3`` falls below ``0.3``, and a product of two such values can move
    by more than the range bound allows. So the integers are also clipped to
    ``[ceil(lower * m), floor(upper * m)]``: every encoded value lies in
    ``[lower, upper]`` and every range or norm bound of the data holds for the
    encoded data. ``multiplier`` must be > 0.
    """
    m = float(multiplier)
    if not m > 0:
        raise ValueError(f"the fixed-point multiplier must be > 0, got {m!r}.")
    ints = np.trunc(np.asarray(values, dtype=np.float64) * m)
    if bounds is not None:
        lower, upper = (np.asarray(b, dtype=np.float64) for b in bounds)
        lo, hi = np.ceil(lower * m), np.floor(upper * m)
        if np.any(lo > hi):
            raise ValueError(
                "a declared range is narrower than the fixed-point grid "
                f"(1 / {m:g}); widen it."
            )
        ints = np.clip(ints, lo, hi)
    return ints.astype(np.int64)


class BFVKeyHolder(_SealIO):
    """The server's side of the TenSEAL/SEAL BFV backend: the only secret key.

    Parameters (fixed): ``poly_modulus_degree = 8192`` (8192 slots), SEAL's default
    128-bit-secure coefficient modulus for that degree (218 bits), a 57-bit
    batching plain modulus ``t``.

    Notes
    -----
    **Encoding.** Values are fixed point: the encryptor's columns are truncated
    toward zero to the grid ``2^-f_u``, the evaluator's to ``2^-f_v``, with
    ``2^-(f_u + f_v)`` equal to the noise lattice (so the exact sum lies on the
    lattice and the release is the centralized one for data on those grids;
    truncation toward zero, clipped to a declared range that excludes 0, keeps
    every row inside the declared box and ball: :func:`fixed_point`).
    Sums are exact integers modulo ``t``; the setup checks that
    ``n max|u| max|v| / g`` plus the noise stays below ``t / 2``.

    **Keys.** The key holder makes the key pair and sends the *public context*:
    the encryption parameters and the public key, serialized by SEAL, plus the
    fixed-point layout. Parties build their own SEAL context, encryptor and
    evaluator from it (:class:`BFVParty`); the secret key never leaves this
    object.

    **Threat model.** Honest-but-curious server and parties. Parties encrypt
    under the server's public key and send ciphertexts to each other, never to
    the server, so the server never sees an input ciphertext, and it decrypts
    only slot vectors that are uniform except for their sum, the noisy
    coefficient. Each party of a pair adds its own noise share, the encryptor's
    under encryption, so neither party knows the other's share. Collusions:
    (a) parties without the server, in any number, see only ciphertexts besides
    their own data and learn nothing more. (b) The server with the *evaluator*
    of a pair can decrypt the encryptor's ciphertexts: its columns and noise
    share are lost to them (one decryption key is the weak point of this design;
    the paper's Yuan & Yu scheme splits decryption among the participants, which
    TenSEAL does not offer). (c) The server with the *encryptor* of a pair
    learns the pair's cross sums with the evaluator's noise share on them: with
    ``noise_generation="threshold"`` that share alone is the full mechanism, so
    the evaluator's columns keep their epsilon there.

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

    def setup(self, granularities, value_bound, noise_bound):
        """Make the key pair; return the public context (data only).

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
        return {
            "backend": self.name,
            "parms": self._dump(parms),
            "public_key": self._dump(public_key),
            "units": [[float(g), int(u)] for g, u in self._units.items()],
            # the encryptor's fixed-point bits: half of the coarsest grid
            "f_u": int(min(self._units.values()) // 2),
        }

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
            total = self._sum_slots(self._encoder.decode_uint64(plain))
            if total > self._t // 2:
                total -= self._t
            out[idx] = total * 2.0**-units
        return out.reshape(m, p)


class BFVParty(_SealIO):
    """A party's side of the BFV backend, built from the public context only.

    It holds SEAL's encryption parameters, the server's public key, an encoder,
    an evaluator and an encryptor: nothing that can decrypt.
    """

    name = "bfv"
    poly_modulus_degree = BFVKeyHolder.poly_modulus_degree

    def __init__(self, public_context):
        super().__init__()
        s = self._seal
        parms = self._load_parms(public_context["parms"])
        if parms.poly_modulus_degree() != self.poly_modulus_degree:
            raise ValueError("unexpected poly_modulus_degree in the public context.")
        self._context = s.SEALContext(parms, True, s.SEC_LEVEL_TYPE.TC128)
        if not self._context.parameters_set():
            raise ValueError("the public context's parameters are not valid.")
        self._t = int(parms.plain_modulus().value())
        public_key = self._load(s.PublicKey, public_context["public_key"])
        self._encryptor = s.Encryptor(self._context, public_key)
        self._encoder = s.BatchEncoder(self._context)
        self._evaluator = s.Evaluator(self._context)
        self._units = {float(g): int(u) for g, u in public_context["units"]}
        self._f_u = int(public_context["f_u"])

    def _n_chunks(self, size):
        return max(1, math.ceil(size / self.poly_modulus_degree))

    def check_columns(self, encrypted, shape, scale, who):
        """Evaluator, on receipt: one list of ``ceil(n / N)`` ciphertexts per
        encrypted column (``shape = (n, columns)``), with the plan's ``scale``
        (a corrupt ciphertext is found when it is loaded: the error names the
        sender too)."""
        _check_dict(encrypted, ("columns", "scale"), who)
        n, width = shape
        columns = encrypted["columns"]
        if not isinstance(columns, list) or len(columns) != width:
            raise ValueError(f"{who}: 'columns' must list {width} encrypted columns")
        for col in columns:
            _check_blobs(col, self._n_chunks(n), who, "each column")
        _check_scale(encrypted["scale"], scale, who)

    def check_share(self, enc_share, shape, who):
        """Evaluator, on receipt: ``ceil(size / N)`` ciphertexts of the block's
        share (``shape``: the block's)."""
        _check_dict(enc_share, ("shares",), who)
        count = self._n_chunks(math.prod(shape))
        _check_blobs(enc_share["shares"], count, who, "'shares'")

    def _chunks(self, column):
        N = self.poly_modulus_degree
        n_chunks = max(1, math.ceil(column.shape[0] / N))
        padded = np.zeros(n_chunks * N, dtype=np.int64)
        padded[: column.shape[0]] = column
        return padded.reshape(n_chunks, N)

    def _encode(self, values, ntt=False):
        plain = self._seal.Plaintext()
        self._encoder.encode(values.tolist(), plain)
        if ntt:
            self._evaluator.transform_to_ntt_inplace(
                plain, self._context.first_parms_id()
            )
        return plain

    def encrypt_columns(self, U, scale, bounds=None):
        """Encryptor: ``Enc`` of every column of ``U`` (kept with its scale).

        ``bounds``: the declared ``(lower, upper)`` of ``U``'s columns, or None
        when every range contains 0 (:func:`fixed_point`)."""
        s = self._seal
        U = fixed_point(U, 2.0**self._f_u, bounds)
        columns = []
        for col in U.T:
            blobs = []
            for chunk in self._chunks(col):
                ct = s.Ciphertext()
                self._encryptor.encrypt(self._encode(chunk), ct)
                blobs.append(self._dump(ct))
            columns.append(blobs)
        return {"columns": columns, "scale": float(scale)}

    def encrypt_share(self, share, granularity):
        """Encryptor: its noise share of a block, packed in slots, encrypted."""
        units = self._units[granularity]
        ints = np.round(np.asarray(share, dtype=np.float64).ravel() * 2.0**units)
        ints = ints.astype(np.int64) % self._t
        blobs = []
        for chunk in self._chunks(ints):
            ct = self._seal.Ciphertext()
            self._encryptor.encrypt(self._encode(chunk), ct)
            blobs.append(self._dump(ct))
        return {"shares": blobs}

    def evaluate(
        self, encrypted, V, v_scale, enc_shares, share, rng, granularity, bounds=None
    ):
        """Evaluator: ``Enc(kappa U^T V + other shares)`` masked with its own
        share, re-randomized and modulus-switched. ``bounds``: the declared
        ``(lower, upper)`` of ``V``'s columns, as for :meth:`encrypt_columns`."""
        units = self._units[granularity]
        s = self._seal
        ev, enc = self._evaluator, self._encryptor
        # u is encoded with f_u bits; the evaluator's integers carry the rest of
        # the scale and both constants: u_int v_int = value 2^units
        f_v = units - self._f_u
        factor = 2.0**f_v * encrypted["scale"] * v_scale
        v_ints = fixed_point(V, factor, bounds)
        plains = []
        for col in v_ints.T:
            row = []
            for chunk in self._chunks(col):
                if not chunk.any():
                    row.append(None)
                    continue
                # products in the NTT domain are pointwise (6x faster)
                row.append(self._encode(chunk, ntt=True))
            plains.append(row)
        share_ints = np.round(np.asarray(share) * 2.0**units).astype(np.int64)
        inputs = []
        for col in encrypted["columns"]:
            cts = [self._load(s.Ciphertext, blob) for blob in col]
            for ct in cts:
                ev.transform_to_ntt_inplace(ct)
            inputs.append(cts)
        # the other contributors' shares, added up under encryption
        share_cts = None
        for enc_share in enc_shares:
            cts = [self._load(s.Ciphertext, blob) for blob in enc_share["shares"]]
            if share_cts is None:
                share_cts = cts
            else:
                for acc, ct in zip(share_cts, cts):
                    ev.add_inplace(acc, ct)
        for ct in share_cts:
            ev.transform_to_ntt_inplace(ct)
        N = self.poly_modulus_degree
        t = self._t
        p = len(plains)
        out = []
        for i, col_cts in enumerate(inputs):
            for j, row in enumerate(plains):
                # the others' share of entry (i, j), selected by a public one-hot
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
                slots[-1] = (target - self._sum_slots(slots[:-1])) % t
                mask_plain = s.Plaintext()
                self._encoder.encode(slots.tolist(), mask_plain)
                ev.add_plain_inplace(acc, mask_plain)
                ev.mod_switch_to_next_inplace(acc)
                ev.mod_switch_to_next_inplace(acc)
                out.append(self._dump(acc))
        return {"sums": out, "shape": [len(inputs), p]}
