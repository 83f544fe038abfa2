"""Algorithm 1 of the seed as explicit messages between parties and a server.

Roles: ``K`` parties hold disjoint column blocks of the same rows (one of them,
the *label party*, also holds the labels); the *server* coordinates, decrypts and
releases the model. Every message goes through a :class:`Transcript` that records
sender, receiver, kind and size (and, on request, the payload itself, so tests can
check what each role saw).

Steps (seed Algorithm 1):

1. ``plan``: the server splits the objective ``w^T A w + b^T w`` into single-party
   coefficients (a party's own block of ``A``, its intercept entries and, for the
   label party, its linear entries) and cross-party coefficients (feature x
   feature blocks between two parties, label x feature for parties without the
   label), fixes the noise of every coefficient group (top-down) or receives the
   parties' budgets (bottom-up), and sends every party its plan and the public
   key of the secure backend.
2. ``local``: each party computes its single-party coefficients, rounds them to
   the noise lattice, adds its noise and sends them to the server.
3. ``cross``: for each pair the party with the lower index encrypts its columns
   (the label party its weighted labels) and the other party evaluates the
   scalar products; both add a noise share, the server only obtains noisy sums
   (see :mod:`skdp.vertical._secure`).
4. ``solve``: the server assembles the noisy quadratic, post-processes it and
   solves in closed form (the functional-mechanism core does both).
"""

import math
from dataclasses import dataclass, field

import numpy as np

from skdp._fm import (
    lattice_granularity,
    objective_constants,
    symmetric_from_triu,
)
from skdp.vertical._secure import _payload_nbytes, make_backend

__all__ = [
    "NoiseGroup",
    "Party",
    "ProtocolError",
    "Server",
    "Transcript",
    "coordinate_groups",
    "run",
]

SERVER = "server"
DEALER = "noise dealer"


def party_name(k):
    return f"party {k}"


class ProtocolError(RuntimeError):
    """A party or the server failed during the protocol; nothing was released."""


@dataclass(frozen=True)
class Message:
    """One message: who sent what kind of data to whom, and how many bytes."""

    step: str
    sender: str
    receiver: str
    kind: str
    nbytes: int
    payload: object = field(default=None, repr=False, compare=False)


class Transcript:
    """Every message of one protocol run, in order.

    Parameters
    ----------
    keep_payloads : bool
        Keep the payloads (what the receiver got) for inspection. Off by default:
        the bfv ciphertexts of a large fit take hundreds of megabytes.
    """

    def __init__(self, keep_payloads=False):
        self.keep_payloads = keep_payloads
        self.messages = []

    def send(self, step, sender, receiver, kind, payload):
        """Record a message and hand its payload to the receiver."""
        self.messages.append(
            Message(
                step,
                sender,
                receiver,
                kind,
                _payload_nbytes(payload),
                payload if self.keep_payloads else None,
            )
        )
        return payload

    def __len__(self):
        return len(self.messages)

    def __iter__(self):
        return iter(self.messages)

    @property
    def total_bytes(self):
        return sum(m.nbytes for m in self.messages)

    def bytes_sent(self):
        """``{participant: bytes sent}``."""
        out = {}
        for m in self.messages:
            out[m.sender] = out.get(m.sender, 0) + m.nbytes
        return out

    def bytes_received(self):
        """``{participant: bytes received}``."""
        out = {}
        for m in self.messages:
            out[m.receiver] = out.get(m.receiver, 0) + m.nbytes
        return out

    def bytes_by_kind(self):
        """``{message kind: bytes}``."""
        out = {}
        for m in self.messages:
            out[m.kind] = out.get(m.kind, 0) + m.nbytes
        return out

    def summary(self):
        """Rows ``(participant, sent bytes, received bytes, messages sent)``."""
        sent, received = self.bytes_sent(), self.bytes_received()
        names = sorted(set(sent) | set(received))
        count = {}
        for m in self.messages:
            count[m.sender] = count.get(m.sender, 0) + 1
        return [(n, sent.get(n, 0), received.get(n, 0), count.get(n, 0)) for n in names]

    def __repr__(self):
        return f"Transcript({len(self.messages)} messages, {self.total_bytes} bytes)"


@dataclass
class NoiseGroup:
    """A set of released coordinates with one mechanism and its contributors.

    ``quad``: ``(rows, cols)`` global upper-triangle coordinates of ``A``;
    ``lin``: global indices of ``b``. ``contributors``: parties adding a share
    of the noise (a single owner, or the two parties of a pair).
    """

    key: tuple
    contributors: tuple
    quad: tuple
    lin: np.ndarray
    mechanism: object

    @property
    def n_coordinates(self):
        return len(self.quad[0]) + len(self.lin)


def coordinate_groups(partition, label_party, fit_intercept):
    """Split the released coordinates into single-party and pair groups.

    Returns ``{key: (contributors, (rows, cols), lin)}`` with keys
    ``("local", k)`` (party k's own block of ``A``, its intercept entries and,
    for the label party, its linear entries and the intercept's) and
    ``("pair", k, l)``, ``k < l`` (the cross block of ``A`` in the order the
    secure product returns it, and, when one of the two holds the label, the
    linear entries of the other's columns). The intercept's diagonal (no noise,
    sensitivity 0) belongs to no group.
    """
    d = sum(len(cols) for cols in partition)
    out = {}
    for k, cols in enumerate(partition):
        r, c = np.triu_indices(len(cols))
        rows, cols_ = list(cols[r]), list(cols[c])
        if fit_intercept:
            rows += list(cols)
            cols_ += [d] * len(cols)
        lin = list(cols) + ([d] if fit_intercept else []) if k == label_party else []
        out[("local", k)] = (
            (k,),
            (np.asarray(rows, dtype=np.intp), np.asarray(cols_, dtype=np.intp)),
            np.asarray(lin, dtype=np.intp),
        )
    for k in range(len(partition)):
        for q in range(k + 1, len(partition)):
            rows = np.minimum.outer(partition[k], partition[q]).ravel()
            cols = np.maximum.outer(partition[k], partition[q]).ravel()
            if label_party == k:
                lin = partition[q]
            elif label_party == q:
                lin = partition[k]
            else:
                lin = np.empty(0, dtype=np.intp)
            out[("pair", k, q)] = ((k, q), (rows, cols), np.asarray(lin, dtype=np.intp))
    return out


def _triu_position(rows, cols, p):
    """Index of ``(r, c)``, ``r <= c``, in ``numpy.triu_indices(p)`` order."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    return rows * p - rows * (rows - 1) // 2 + (cols - rows)


def _round(values, granularity):
    # the centralized release rounds exact values to the lattice (add_noise)
    if granularity > 0:
        return np.round(values / granularity) * granularity
    return values


def _noise_shares(mech, size, n_shares, rng):
    """One party's share of noise that sums, over ``n_shares`` parties, to ``mech``.

    Lattice Laplace: ``g (G1 - G2)`` with geometric ``G`` is infinitely divisible:
    a geometric (failures before the first success) is the sum of ``n`` i.i.d.
    negative binomials with ``1/n`` successes, so each party draws
    ``g (NB(1/n) - NB(1/n))`` (the discrete analogue of Laplace as a sum of Gamma
    differences). Gaussian: ``N(0, sigma^2 / n)``.
    """
    if n_shares == 1:
        return np.asarray(mech.sample_noise(size, rng), dtype=np.float64)
    if hasattr(mech, "granularity"):
        if mech.scale == 0:
            return np.zeros(size)
        p = -math.expm1(-mech.granularity / mech.scale)
        r = 1.0 / n_shares
        diff = rng.negative_binomial(r, p, size) - rng.negative_binomial(r, p, size)
        return diff.astype(np.float64) * mech.granularity
    sigma = getattr(mech, "sigma", 0.0)
    if sigma == 0:
        return np.zeros(size)
    return rng.normal(0.0, sigma / math.sqrt(n_shares), size)


class Party:
    """A data holder: its columns (clipped to its part of the domain), maybe y.

    Parameters
    ----------
    index : int
    columns : ndarray of int
        Global column indices it holds.
    X : ndarray (n_samples, len(columns))
    beta_y : ndarray or None
        ``beta(y)`` for the label party (see the core's objective table).
    rng : numpy.random.Generator
        The party's own randomness (noise shares, masks).
    """

    def __init__(self, index, columns, X, beta_y, rng):
        self.index = index
        self.name = party_name(index)
        self.columns = np.asarray(columns)
        self._X = X
        self._beta_y = beta_y
        self._rng = rng
        self._plan = None
        self._noise = {}
        self._encrypted = None
        self._encrypted_labels = None

    @property
    def is_label_party(self):
        return self._beta_y is not None

    def receive_plan(self, plan, public_key, backend):
        self._plan = plan
        self._public_key = public_key
        self._backend = backend

    def receive_dealer_noise(self, noise):
        self._noise = dict(noise)

    def _share(self, group, what):
        """This party's noise share for ``group`` (``what``: "quad"/"lin")."""
        key = (group.key, what)
        if key in self._noise:
            return self._noise[key]
        size = len(group.quad[0]) if what == "quad" else len(group.lin)
        if self._plan["noise_generation"] == "dealer":
            return np.zeros(size)
        return _noise_shares(group.mechanism, size, len(group.contributors), self._rng)

    def local_coefficients(self):
        """Step 2: noisy single-party coefficients ``(quad values, lin values)``."""
        plan = self._plan
        group = plan["groups"][("local", self.index)]
        g = lattice_granularity(group.mechanism)
        kappa, c = plan["kappa"], plan["linear_weight"]
        rows, cols = group.quad
        d, scaling = plan["n_features"], plan["intercept_scaling"]
        position = np.full(d + 1, -1)
        position[self.columns] = np.arange(len(self.columns))
        # same products and order of operations as the centralized statistics
        gram = self._X.T @ self._X
        to_intercept = cols == d
        values = np.empty(len(rows))
        own = ~to_intercept
        values[own] = kappa * gram[position[rows[own]], position[cols[own]]]
        if to_intercept.any():
            col_sums = scaling * self._X.sum(axis=0)
            values[to_intercept] = kappa * col_sums[position[rows[to_intercept]]]
        quad = _round(values, g) + self._share(group, "quad")
        lin = np.empty(0)
        if len(group.lin):
            lin_vals = np.empty(len(group.lin))
            features = group.lin != d
            X_beta = self._X.T @ self._beta_y
            lin_vals[features] = c * X_beta[position[group.lin[features]]]
            lin_vals[~features] = c * (scaling * self._beta_y.sum())
            lin = _round(lin_vals, g) + self._share(group, "lin")
        return {"quad": quad, "lin": lin}

    # ---- cross-party coefficients (step 3) --------------------------------- #
    def encrypted_features(self):
        """Encryptor: ``Enc(kappa-scaled columns)``, made once for all evaluators."""
        if self._encrypted is None:
            self._encrypted = self._backend.encrypt_columns(
                self._X, self._plan["kappa"], self._rng
            )
        return self._encrypted

    def encrypted_labels(self):
        """Label party as encryptor of ``beta(y)`` (scale c), made once."""
        if self._encrypted_labels is None:
            self._encrypted_labels = self._backend.encrypt_columns(
                self._beta_y[:, None], self._plan["linear_weight"], self._rng
            )
        return self._encrypted_labels

    def encrypted_share(self, group, what, shape):
        """Encryptor: its noise share of the pair's block, encrypted."""
        g = lattice_granularity(group.mechanism)
        share = self._share(group, what).reshape(shape)
        return self._backend.encrypt_share(share, self._rng, g)

    def evaluate(self, group, what, encrypted, encrypted_share, shape):
        """Evaluator: encrypted sums with both noise shares, slot-masked."""
        g = lattice_granularity(group.mechanism)
        share = self._share(group, what).reshape(shape)
        return self._backend.evaluate(
            encrypted, self._X, 1.0, encrypted_share, share, self._rng, g
        )


class Server:
    """Coordinates the protocol, holds the backend's secret key, releases."""

    name = SERVER

    def __init__(self, backend, n_coef):
        self.backend = backend
        self.n_coef = n_coef
        p = n_coef
        self._upper = np.full(p * (p + 1) // 2, np.nan)
        self._lin = np.full(p, np.nan)

    def setup_keys(self, granularities, value_bound, noise_bound, rng):
        return self.backend.setup(granularities, value_bound, noise_bound, rng)

    def receive_local(self, group, payload):
        rows, cols = group.quad
        self._upper[_triu_position(rows, cols, self.n_coef)] = payload["quad"]
        if len(group.lin):
            self._lin[group.lin] = payload["lin"]

    def receive_cross(self, group, what, coords, result):
        """Decrypt a pair's masked sums and store the noisy coefficients."""
        g = lattice_granularity(group.mechanism)
        noisy = self.backend.decrypt_sums(result, g)
        if what == "quad":
            rows, cols = coords
            self._upper[_triu_position(rows, cols, self.n_coef)] = noisy.ravel()
        else:
            self._lin[coords] = noisy.ravel()

    def set_public(self, index, value):
        """A coefficient with sensitivity 0 (the intercept's diagonal)."""
        self._upper[_triu_position([index], [index], self.n_coef)] = value

    def noisy_objective(self, linear_weight):
        if np.isnan(self._upper).any() or np.isnan(self._lin).any():
            raise ProtocolError(
                "the server did not receive every coefficient; nothing released."
            )
        A = symmetric_from_triu(self._upper, self.n_coef)
        return A, self._lin / linear_weight


def _call(who, step, fn, *args):
    """Run one participant's step; any failure aborts the whole protocol."""
    try:
        return fn(*args)
    except ProtocolError:
        raise
    except Exception as exc:
        raise ProtocolError(
            f"{who} failed during step {step!r} ({type(exc).__name__}: {exc}); "
            "the protocol was aborted and no model was released."
        ) from exc


def run(
    blocks,
    partition,
    beta_y,
    label_party,
    *,
    objective,
    linear_weight,
    intercept_scaling,
    fit_intercept,
    groups,
    noise_generation,
    dealer_noise,
    backend,
    value_bound,
    rng,
    keep_payloads=False,
    party_budgets=None,
):
    """Run the protocol once; return ``(A_noisy, b_noisy, transcript)``.

    Parameters
    ----------
    blocks : list of ndarray
        Each party's clipped columns (``blocks[k]`` has ``len(partition[k])``
        columns).
    partition : list of ndarray of int
    beta_y : ndarray
        ``beta(y)`` of the label party.
    label_party : int
    groups : dict
        ``{key: NoiseGroup}`` with keys ``("local", k)`` and ``("pair", k, l)``.
    noise_generation : {"distributed", "dealer"}
    dealer_noise : callable or None
        For ``"dealer"``: ``dealer_noise(group) -> (quad_noise, lin_noise)``.
    backend : str
        ``"plaintext"`` or ``"bfv"``.
    value_bound : float
        Bound on the absolute value of any exact cross coefficient.
    rng : numpy.random.Generator
        Seeds the parties' generators.
    keep_payloads : bool
        Keep message payloads in the transcript.
    party_budgets : list or None
        Bottom-up: what each party tells the server (its total and its row of
        pairwise budgets), sent before the plan.
    """
    transcript = Transcript(keep_payloads=keep_payloads)
    n_parties = len(partition)
    d = sum(len(cols) for cols in partition)
    p = d + int(fit_intercept)
    kappa, _ = objective_constants(objective)
    backend_obj = _call(SERVER, "plan", make_backend, backend)
    server = Server(backend_obj, p)
    seeds = rng.spawn(n_parties + 1)
    parties = [
        Party(
            k, partition[k], blocks[k], beta_y if k == label_party else None, seeds[k]
        )
        for k in range(n_parties)
    ]

    # ---- step 1: plan and keys --------------------------------------------- #
    if party_budgets is not None:
        for party in parties:
            transcript.send(
                "plan",
                party.name,
                SERVER,
                "budget",
                np.asarray(party_budgets[party.index], dtype=np.float64),
            )
    granularities = sorted(
        {lattice_granularity(gr.mechanism) for gr in groups.values()}
    )
    noise_bound = max(
        60.0 * getattr(gr.mechanism, "scale", 0.0)
        + 12.0 * getattr(gr.mechanism, "sigma", 0.0)
        for gr in groups.values()
    )
    public_key = _call(
        SERVER,
        "plan",
        server.setup_keys,
        granularities,
        value_bound,
        noise_bound,
        seeds[-1],
    )
    plan = {
        "objective": objective,
        "kappa": kappa,
        "linear_weight": linear_weight,
        "intercept_scaling": intercept_scaling,
        "n_features": d,
        "groups": groups,
        "noise_generation": noise_generation,
    }
    for party in parties:
        mine = {key: gr for key, gr in groups.items() if party.index in gr.contributors}
        plan_k = dict(plan, groups=mine)
        transcript.send("plan", SERVER, party.name, "plan", _plan_payload(mine))
        transcript.send("plan", SERVER, party.name, "public key", public_key)
        party.receive_plan(plan_k, public_key, backend_obj)
    if noise_generation == "dealer":
        for party in parties:
            noise = {}
            for key, gr in groups.items():
                if gr.contributors[-1] == party.index:
                    quad, lin = dealer_noise(gr)
                    noise[(key, "quad")] = quad
                    noise[(key, "lin")] = lin
            transcript.send(
                "plan",
                DEALER,
                party.name,
                "noise",
                list(noise.values()) or [np.empty(0)],
            )
            party.receive_dealer_noise(noise)

    # ---- step 2: single-party coefficients --------------------------------- #
    for party in parties:
        payload = _call(party.name, "local", party.local_coefficients)
        transcript.send(
            "local", party.name, SERVER, "noisy local coefficients", payload
        )
        server.receive_local(groups[("local", party.index)], payload)
    if fit_intercept:
        g = lattice_granularity(groups[("local", label_party)].mechanism)
        n = blocks[0].shape[0]
        server.set_public(d, _round(np.array([kappa * intercept_scaling**2 * n]), g))

    # ---- step 3: cross-party coefficients ---------------------------------- #
    def cross(enc_party, eval_party, group, what, shape, make_encrypted, kind, coords):
        encrypted = _call(enc_party.name, "cross", make_encrypted)
        transcript.send("cross", enc_party.name, eval_party.name, kind, encrypted)
        share = _call(
            enc_party.name, "cross", enc_party.encrypted_share, group, what, shape
        )
        transcript.send(
            "cross", enc_party.name, eval_party.name, "encrypted noise share", share
        )
        result = _call(
            eval_party.name,
            "cross",
            eval_party.evaluate,
            group,
            what,
            encrypted,
            share,
            shape,
        )
        transcript.send(
            "cross", eval_party.name, SERVER, "encrypted masked sums", result
        )
        _call(SERVER, "cross", server.receive_cross, group, what, coords, result)

    for k in range(n_parties):
        for q in range(k + 1, n_parties):
            group = groups[("pair", k, q)]
            cross(
                parties[k],
                parties[q],
                group,
                "quad",
                (len(partition[k]), len(partition[q])),
                parties[k].encrypted_features,
                "encrypted columns",
                group.quad,
            )
    label = parties[label_party]
    for party in parties:
        if party.index != label_party:
            cross(
                label,
                party,
                groups[("pair", *sorted((label_party, party.index)))],
                "lin",
                (1, len(partition[party.index])),
                label.encrypted_labels,
                "encrypted labels",
                partition[party.index],
            )
    for party in parties:
        for encrypted in (party._encrypted, party._encrypted_labels):
            if encrypted is not None:
                backend_obj.release(encrypted)

    # ---- step 4: assemble (the estimator solves and releases) -------------- #
    A_noisy, b_noisy = _call(SERVER, "solve", server.noisy_objective, linear_weight)
    return A_noisy, b_noisy, transcript


def _plan_payload(groups):
    """What a party learns from the plan: its coordinates and noise parameters."""
    out = {}
    for key, group in groups.items():
        mech = group.mechanism
        params = [
            mech.epsilon,
            getattr(mech, "scale", 0.0),
            getattr(mech, "sigma", 0.0),
        ]
        out[str(key)] = {
            "rows": np.asarray(group.quad[0], dtype=np.int32),
            "cols": np.asarray(group.quad[1], dtype=np.int32),
            "lin": np.asarray(group.lin, dtype=np.int32),
            "mechanism": np.asarray(params, dtype=np.float64),
        }
    return out
