"""Algorithm 1 of Xu, Yuan & Wu (2021) as messages between role state machines.

Roles (:mod:`skdp.vertical._messages` defines the API): ``K`` parties
(:class:`~skdp.vertical._party.PartyRole`) hold disjoint column blocks of the
same rows, one of them, the *label party*, also the labels; the *server*
(:class:`~skdp.vertical._server.ServerRole`) coordinates, decrypts and releases;
with ``noise_generation="dealer"`` a *noise dealer*
(:class:`~skdp.vertical._dealer.DealerRole`) draws the noise. The roles only
exchange messages; :func:`~skdp.vertical._driver.drive` delivers them in one
process (this module builds the roles for the estimators), the federated
runtime over gRPC.

Steps (Algorithm 1 of the paper):

1. ``declare``: every party tells the server its declared domain (its box,
   the row-norm bound, the label bounds), its number of records and, bottom-up,
   its budgets.
2. ``plan``: the server centres the assembled domain as the central
   estimators do (``skdp._fm.centring.centred_domain``), splits the objective
   ``w^T A w + b^T w`` into single-party coefficients (a party's own block of
   ``A``, its intercept entries and, for the label party, its linear entries)
   and cross-party coefficients (feature x feature blocks between two
   parties, label x feature for parties without the label), fixes the
   mechanism of every coefficient group, makes the backend's keys and sends
   every party its part of the plan (with its slice of the centred domain, to
   which it shifts and clips its columns and labels) and the public context
   (and the dealer its plan).
3. ``noise`` (dealer only): the dealer sends each party its noise.
4. ``local``: each party computes its single-party coefficients, rounds them to
   the noise lattice, adds its noise and sends them to the server.
5. ``cross``: for each pair the party with the lower index encrypts its columns
   (the label party its weighted labels) and its noise share for the evaluator,
   the other party; the evaluator computes the encrypted sums plus both shares
   and sends them to the server, which obtains only noisy sums (see
   :mod:`skdp.vertical._secure`).
6. ``release``: the server assembles the noisy quadratic, post-processes and
   solves it (the functional-mechanism core does both) and sends the released
   model to every party.
"""

from dataclasses import dataclass

import numpy as np

from skdp.vertical._dealer import DealerRole
from skdp.vertical._driver import Transcript, drive
from skdp.vertical._messages import DEALER, SERVER, Message, ProtocolError, party_name
from skdp.vertical._party import PartyRole
from skdp.vertical._plan import NoiseGroup, coordinate_groups, group_key
from skdp.vertical._server import ServerRole

__all__ = [
    "DEALER",
    "SERVER",
    "InProcessRun",
    "Message",
    "NoiseGroup",
    "ProtocolError",
    "Transcript",
    "coordinate_groups",
    "make_roles",
    "party_name",
    "run_in_process",
    "spawn_role_rngs",
]


def spawn_role_rngs(rng, n_parties):
    """Independent generators ``(parties, server)`` derived from ``rng``.

    Spawning does not advance ``rng``: the dealer (if any) draws from ``rng``
    itself, exactly as the centralized estimator would.
    """
    seeds = rng.spawn(n_parties + 1)
    return seeds[:n_parties], seeds[-1]


def make_roles(
    X,
    y,
    *,
    objective,
    partition,
    label_party,
    domain,
    epsilon,
    delta,
    mechanism,
    budget,
    party_epsilon,
    pairwise_epsilon,
    linear_weight,
    postprocessing,
    backend,
    noise_generation,
    rng,
    n_classes=2,
):
    """Every role of one in-process run, as ``{name: role}``.

    ``X``: all columns side by side (each party gets a fresh copy of its block
    and clips it); ``y``: the label party's labels; ``domain``: the declared
    :class:`DataDomain`, unshifted (each party declares its slice; the server
    centres it). ``n_classes > 2`` (with ``objective="multinomial_taylor"``):
    ``y`` is the one-hot of the first ``C - 1`` classes, shape (n, C - 1).
    """
    d = X.shape[1]
    party_rngs, _ = spawn_role_rngs(rng, len(partition))
    roles = {}
    for k, cols in enumerate(partition):
        budget_k = None
        if budget == "bottom-up":
            pairs = np.asarray(pairwise_epsilon, dtype=np.float64)
            total = float(np.asarray(party_epsilon, dtype=np.float64)[k])
            budget_k = np.concatenate([[total], pairs[k]])
        is_label = k == label_party
        party = PartyRole(
            k,
            cols,
            X[:, cols],  # fancy indexing: a fresh copy this party owns
            n_features=d,
            lower=None if domain.lower is None else domain.lower[cols],
            upper=None if domain.upper is None else domain.upper[cols],
            data_norm=domain.data_norm,
            labels=y if is_label else None,
            y_bounds=domain.y_bounds if is_label else None,
            budget=budget_k,
            rng=party_rngs[k],
            copy=False,
        )
        roles[party.name] = party
    roles[SERVER] = ServerRole(
        objective=objective,
        partition=partition,
        label_party=label_party,
        n_samples=X.shape[0],
        fit_intercept=domain.fit_intercept,
        epsilon=epsilon,
        delta=delta,
        mechanism=mechanism,
        budget=budget,
        linear_weight=linear_weight,
        postprocessing=postprocessing,
        backend=backend,
        noise_generation=noise_generation,
        n_classes=n_classes,
    )
    if noise_generation == "dealer":
        roles[DEALER] = DealerRole(rng)
    return roles


@dataclass
class InProcessRun:
    """What one in-process run returns: the released ``model`` (the server's
    result), the server's ``plan`` and the ``transcript``."""

    model: dict
    plan: object
    transcript: Transcript
    roles: dict

    @property
    def group_epsilon(self):
        """``{("local", k) | ("pair", k, l): epsilon}``."""
        return {group_key(n): e for n, e in self.model["group_epsilon"].items()}


def run_in_process(X, y, *, keep_payloads=False, verbose=0, **params):
    """Build the roles (:func:`make_roles`) and drive them to the release."""
    roles = make_roles(X, y, **params)
    transcript = Transcript(keep_payloads=keep_payloads)
    results = drive(roles, transcript, verbose=verbose)
    return InProcessRun(results[SERVER], roles[SERVER].plan, transcript, roles)
