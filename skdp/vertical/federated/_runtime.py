"""Run one participant of the vertical protocol: ``run_party`` / ``run_server``.

A run has four phases (every message over mutually authenticated TLS, see
:mod:`~skdp.vertical.federated._node`):

1. **connect**: every participant waits until its peers answer, each pinned by
   the CA and its expected name;
2. **session**: the server sends every party its *request* (objective and
   declared classes, epsilon, delta, backend, noise generation, the parties and
   their role names); each party checks the request against its policy (the
   label party also against its declared classes), aligns its record ids with
   the other parties (:mod:`~skdp.vertical.federated._alignment`) and answers
   ``accept`` or ``refuse`` (with the reason, and then exits non-zero);
3. **protocol**: once every party accepted, each process hosts its role of the
   vertical protocol (built by :mod:`~skdp.vertical.federated._roles`) and
   routes the role's messages to the participants hosting their receivers,
   exactly as the in-process driver does;
4. **release**: each party tells the server when its role has finished; only
   then does the server write the model (``output.npz`` + ``output.json``) and
   tell the parties, which then exit. Any failure before that: nothing is
   written, every participant is told to abort and exits non-zero.

Before phase 1 each participant binds its listen address (a port in use is a
:class:`~._config.ConfigError`) and checks that its own certificate is valid
for its name under its CA (:func:`~._tls.check_own_certificate`). What a
failure says to whom follows one rule (:mod:`~._errors`).
"""

import json
import sys
import time
import traceback
from collections import deque
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np

from skdp.vertical._driver import ProgressLog
from skdp.vertical._messages import Message, party_name
from skdp.vertical.federated._alignment import STEP as ALIGN
from skdp.vertical.federated._alignment import AlignmentError, PairwiseAlignment
from skdp.vertical.federated._config import (
    ConfigError,
    PolicyError,
    load_party_config,
    load_server_config,
)
from skdp.vertical.federated._data import convert_labels, read_party_data
from skdp.vertical.federated._errors import DataError, public_cause
from skdp.vertical.federated._model import save_model
from skdp.vertical.federated._node import CONTROL, FederatedError, Node
from skdp.vertical.federated._roles import (
    check_label_request,
    label_info,
    model_file,
    party_role,
    server_roles,
)
from skdp.vertical.federated._tls import (
    check_own_certificate,
    dns_names,
    named_participants,
)
from skdp.vertical.federated._transport import ListenError

__all__ = ["FederatedError", "run_party", "run_server"]

SESSION = "session"
_RUNTIME_STEPS = (SESSION, CONTROL, ALIGN)


@contextmanager
def _aborting_on_failure(node, name):
    """Any failure tells every peer to abort (with the cause's public text, see
    :mod:`._errors`) and leaves as one FederatedError (with the local text)."""
    try:
        yield
    except BaseException as exc:
        node.abort_all(public_cause(exc))
        if isinstance(exc, FederatedError):
            raise
        raise FederatedError(f"{name}: {_cause(exc)}") from exc
    finally:
        node.close()


def _cause(exc):
    """The text of ``exc`` for this participant's own output."""
    if isinstance(exc, FederatedError | AlignmentError | PolicyError | DataError):
        return str(exc)
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        return f"interrupted ({type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}"


def _start_node(config, peers):
    """This participant's node; a listen address it cannot bind is a config
    error (exit status 2), found before any protocol step."""
    try:
        return Node(
            config.name,
            config.listen,
            peers,
            config.tls,
            config.timeouts,
            config.max_message_bytes,
        )
    except ListenError as exc:
        raise ConfigError(f"{config.source}: key 'listen': {exc}") from None


def _check_certificate(config, participants):
    """Its own certificate must be valid for its name under its CA and name no
    other participant (``participants``: every one this participant knows)."""
    problem = check_own_certificate(
        config.name, config.tls.ca_cert, config.tls.cert, config.tls.key
    )
    if problem is None:
        named = named_participants(
            dns_names(config.tls.cert.read_bytes()), {config.name, *participants}
        )
        others = [n for n in named if n != config.name]
        if others:
            problem = (
                f"its certificate also names {', '.join(others)}: a participant's "
                "certificate must name exactly one participant, its own"
            )
    if problem is not None:
        raise FederatedError(
            f"{config.name}: {problem} (tls.cert {config.tls.cert}, tls.ca_cert "
            f"{config.tls.ca_cert}); no peer will accept it",
            public=f"{config.name}: {problem}",
        )


class _Clock:
    """Wall time of each phase; ``startup`` (imports, data) when ``started`` is
    the ``time.perf_counter()`` of the process's entry point."""

    def __init__(self, started=None):
        self.seconds = {}
        self._last = time.perf_counter()
        if started is not None:
            self.seconds["startup"] = self._last - started

    def __call__(self, phase):
        now = time.perf_counter()
        self.seconds[phase] = now - self._last
        self._last = now


def drive_remote(node, roles, verbose=0):
    """Run the roles hosted here; messages to other participants go over TLS.

    The same first-in first-out routing as :func:`skdp.vertical._driver.drive`
    for the local roles; remote messages are delivered in the order each sender
    sent them.
    """
    local = deque()
    log = ProgressLog(verbose, prefix=node.name)

    def dispatch(messages):
        for message in messages:
            if message.receiver in roles:
                local.append(message)
            else:
                node.send(message)

    for role in roles.values():
        dispatch(role.start())
    while not all(role.finished for role in roles.values()):
        if local:
            message = local.popleft()
        else:
            message = node.next_message(
                lambda m: m.step not in _RUNTIME_STEPS and m.receiver in roles
            )
        log.delivered(message)
        dispatch(roles[message.receiver].receive(message))
    return {name: role.result for name, role in roles.items()}


# ====================================================================== party
def _check_request(config, request, data):
    """The request's parties and roles must match this party's config."""
    parties = request.get("parties")
    roles = request.get("roles")
    if not isinstance(parties, list) or config.name not in parties:
        raise FederatedError(
            f"{config.name}: the request does not list this party ({parties})."
        )
    unknown = [p for p in parties if p != config.name and p not in config.peers]
    if unknown:
        raise FederatedError(
            f"{config.name}: the request lists parties not in this party's peers: "
            f"{unknown}."
        )
    index = parties.index(config.name)
    expected = {"server": config.server}
    expected.update({party_name(k): p for k, p in enumerate(parties)})
    if not isinstance(roles, dict) or any(
        roles.get(r) != p for r, p in expected.items()
    ):
        raise FederatedError(f"{config.name}: inconsistent role table {roles}.")
    if any(p != config.server for r, p in roles.items() if r not in expected):
        raise FederatedError(
            f"{config.name}: only the server may host extra roles: {roles}."
        )
    is_label = request.get("label_party") == config.name
    if is_label != (config.label is not None):
        raise FederatedError(
            f"{config.name}: the server names {request.get('label_party')!r} as "
            "the label party, but this party's config "
            + ("has" if config.label else "has no")
            + " label column."
        )
    return index, parties


def run_party(config, *, make_role=None, started=None, verbose=0):
    """Host one party: read its data, check the request, run its role.

    Parameters
    ----------
    config : PartyConfig or path
        See :func:`~skdp.vertical.federated._config.load_party_config`.
    make_role : callable or None
        ``make_role(config, request, data, index) -> Role``; default: the vertical
        protocol's party role.
    started : float or None
        ``time.perf_counter()`` when the process started (for the timings).

    Returns
    -------
    dict
        ``{"result": what the protocol gave this party, "traffic": bytes sent
        and received}``.

    Raises
    ------
    FederatedError
        Any failure or abort, anywhere; nothing was released.

    Examples
    --------
    Each organisation runs its own party (the configs are described in the
    deployment guide); the call returns once the server has released the model:

    >>> from skdp.vertical.federated import run_party
    >>> out = run_party("party.toml")  # doctest: +SKIP
    >>> out["traffic"]["sent"]  # doctest: +SKIP
    103842611
    """
    if not hasattr(config, "peers"):
        config = load_party_config(config)
    make_role = make_role or party_role
    node = _start_node(config, config.peers)
    clock = _Clock(started)
    with _aborting_on_failure(node, config.name):
        _check_certificate(config, config.peers)
        # a bad data file fails the run like anything else (peers are told)
        data = read_party_data(
            config.data_path, config.id_column, config.features, config.label, "raw"
        )
        clock("data")
        node.wait_for_peers(
            programs={
                p: "skdp-server" if p == config.server else "skdp-party"
                for p in config.peers
            }
        )
        clock("connect")
        node.watch([config.server])
        request_msg = node.next_message(
            lambda m: m.step == SESSION and m.sender == config.server
        )
        request = request_msg.payload
        index, parties = _check_request(config, request, data)
        node.hosts.update(request["roles"])
        if config.label is not None:
            kind = "number" if request.get("objective") == "linear" else "class"
            y = convert_labels(config.data_path, config.label, data.y, kind, data.rows)
            data = replace(data, y=y)
        own_eps = None
        if request.get("budget") == "bottom-up" and request.get("party_epsilon"):
            own_eps = request["party_epsilon"][index]
        try:
            config.policy.check(request, len(data.ids), own_eps)
            check_label_request(config, request)  # its classes, not another's
        except PolicyError as exc:
            node.send(
                Message(
                    SESSION, config.name, config.server, "refuse", {"cause": str(exc)}
                ),
                to=config.server,
            )
            raise FederatedError(f"{config.name}: {exc}") from None
        # alignment with the other parties of this run
        others = [p for p in parties if p != config.name]
        align = PairwiseAlignment(config.name, others, data.ids)

        def send_align(out):
            for to, kind, payload in out:
                node.send(Message(ALIGN, config.name, to, kind, payload), to=to)

        send_align(align.start())
        while not align.done:
            m = node.next_message(lambda m: m.step == ALIGN)
            send_align(align.receive(m.sender, m.kind, m.payload))
        node.send(
            Message(
                SESSION,
                config.name,
                config.server,
                "accept",
                {"n_samples": len(data.ids), "features": list(config.features)}
                | label_info(config, data),
            ),
            to=config.server,
        )
        go = node.next_message(lambda m: m.step == SESSION and m.kind == "go")
        role = make_role(config, request | go.payload, data, index)
        clock("session")
        results = drive_remote(node, {role.name: role}, verbose)
        clock("protocol")
        node.send(Message(CONTROL, config.name, config.server, "done", {}))
        node.next_message(lambda m: m.step == CONTROL and m.kind == "released")
        clock("release")
        node.unwatch()
        out = {
            "result": results[role.name],
            "traffic": node.traffic(),
            "seconds": clock.seconds,
        }
        if config.output is not None:
            _write_json(config.output, out)
        return out


def _write_json(path, obj):
    def default(v):
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, bytes):
            return f"<{len(v)} bytes>"
        return str(v)

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, default=default, indent=2) + "\n")


# ====================================================================== server
def run_server(config, *, make_roles=None, make_model=None, started=None, verbose=0):
    """Host the server: send the request, run its role(s), write the model.

    Parameters
    ----------
    config : ServerConfig or path
        See :func:`~skdp.vertical.federated._config.load_server_config`.
    make_roles : callable or None
        ``make_roles(config, accepted) -> {role name: Role}`` (the server role,
        and the noise dealer for ``noise_generation = "dealer"``); default: the
        vertical protocol's.
    make_model : callable or None
        ``make_model(config, accepted, result) -> dict`` for
        :func:`~skdp.vertical.federated._model.save_model`.
    started : float or None
        ``time.perf_counter()`` when the process started (for the timings).

    Returns
    -------
    dict
        ``{"model": the saved model, "paths": (npz, json), "traffic": bytes
        sent and received, "seconds": wall time of each phase (connect,
        session, protocol, release)}``.

    Raises
    ------
    FederatedError
        Any failure, refusal or abort, anywhere; nothing was released.

    Examples
    --------
    >>> from skdp.vertical import load_model
    >>> from skdp.vertical.federated import run_server
    >>> out = run_server("server.toml")  # doctest: +SKIP
    >>> load_model(out["paths"][0]).coef_.shape  # doctest: +SKIP
    (20,)
    """
    if not hasattr(config, "parties"):
        config = load_server_config(config)
    make_roles = make_roles or server_roles
    make_model = make_model or model_file
    peers = {p.name: p.address for p in config.parties}
    clock = _Clock(started)
    node = _start_node(config, peers)
    with _aborting_on_failure(node, config.name):
        _check_certificate(config, peers)
        node.wait_for_peers(programs=dict.fromkeys(peers, "skdp-party"))
        clock("connect")
        node.watch(peers)
        roles_table = {"server": config.name}
        roles_table.update(
            {party_name(k): p.name for k, p in enumerate(config.parties)}
        )
        if config.noise_generation == "dealer":
            from skdp.vertical._messages import DEALER

            roles_table[DEALER] = config.name
        node.hosts.update(roles_table)
        request = config.request() | {"roles": roles_table}
        for p in config.parties:
            node.send(Message(SESSION, config.name, p.name, "request", request))
        accepted = {}
        while len(accepted) < len(config.parties):
            m = node.next_message(lambda m: m.step == SESSION)
            if m.kind == "refuse":
                raise FederatedError(
                    f"{m.sender} refused the request: {m.payload.get('cause')}"
                )
            if m.kind == "accept":
                accepted[m.sender] = m.payload
        ns = {p: a.get("n_samples") for p, a in accepted.items()}
        if len(set(ns.values())) != 1:
            raise FederatedError(f"the parties hold different numbers of rows: {ns}.")
        sizes = [len(accepted[p.name].get("features", [])) for p in config.parties]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        go = {
            "partition": [list(range(a, b)) for a, b in zip(offsets, offsets[1:])],
            "n_features": int(offsets[-1]),
        }
        clock("session")
        roles = make_roles(config, accepted | {"": go})
        for p in config.parties:
            node.send(Message(SESSION, config.name, p.name, "go", go))
        results = drive_remote(node, roles, verbose)
        done = set()
        while len(done) < len(config.parties):
            m = node.next_message(lambda m: m.step == CONTROL and m.kind == "done")
            done.add(m.sender)
        clock("protocol")
        model = make_model(config, accepted, results)
        node.unwatch()
        paths = save_model(config.output, model)
        clock("release")
        for p in config.parties:
            try:
                node.send(Message(CONTROL, config.name, p.name, "released", {}))
            except FederatedError as exc:  # the model is out; tell the operator
                print(f"{config.name}: warning: {exc}", file=sys.stderr)
        return {
            "model": model,
            "paths": [str(p) for p in paths],
            "traffic": node.traffic(),
            "seconds": clock.seconds,
        }


def announce_config_error(kind, path, exc, log=None):
    """Tell the peers that this participant's config has an error, so that they
    stop at once with the cause instead of waiting ``timeouts.startup`` for a
    participant that never answers.

    Possible when the config still names the participant, its ``listen``
    address, usable TLS files and its peers (:func:`~._config.read_contact`):
    the participant listens, sends every peer an abort naming the key (its
    ``public`` text: never a path or a value), answers every call with it, and
    stays reachable up to ``timeouts.startup`` for peers not up yet, like any
    failure before every peer has answered. Returns whether it could listen.
    """
    from skdp.vertical.federated._contact import read_contact

    contact = read_contact(kind, path)
    if contact is None:
        return False
    detail = getattr(exc, "public", None)
    cause = (
        f"its config has an error: {detail}; it stopped before the run (exit status 2)"
        if detail
        else "its config has an error (its own output names the key); it "
        "stopped before the run (exit status 2)"
    )
    try:
        node = Node(
            contact.name,
            contact.listen,
            contact.peers,
            contact.tls,
            contact.timeouts,
            contact.max_message_bytes,
        )
    except Exception:  # cannot listen (the port in use): nobody to answer
        return False
    try:
        node.abort_all(
            f"{contact.name}: {cause}", log, headline="its config has an error"
        )
    except BaseException:  # interrupted while waiting for late peers
        pass
    finally:
        node.close()
    return True


def format_failure(who, exc):
    """One line for stderr: who failed and why (plus the traceback if unexpected)."""
    if isinstance(exc, FederatedError):
        return f"{who}: error: {exc}"
    return f"{who}: error: {_cause(exc)}\n{traceback.format_exc()}"
