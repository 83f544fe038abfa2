"""The role state machines and the driver: one protocol in and across processes."""

import base64
import json
import re

import numpy as np
import pytest

from skdp._fm import objective_constants
from skdp.utils import check_random_state
from skdp.vertical import ProtocolError, VerticalFMRegressor
from skdp.vertical._dealer import DealerRole
from skdp.vertical._driver import Transcript, drive
from skdp.vertical._messages import (
    SERVER,
    Message,
    Role,
    abort_message,
    check_payload,
    party_name,
)
from skdp.vertical._party import PartyRole
from skdp.vertical._protocol import run_in_process, spawn_role_rngs
from skdp.vertical._server import ServerRole
from tests.vertical._data import BACKENDS, grid_regression, needs_tenseal

PARAMS = dict(epsilon=2.0, bounds_X=(-1, 1), bounds_y=(-1, 1), linear_weight=0.5)


def _roles(X, y, parts, *, backend, noise, seed, label_party=1, policy=None):
    """Every role built by hand from public parameters, as a deployment would."""
    rng = check_random_state(seed)
    party_rngs, _ = spawn_role_rngs(rng, len(parts))
    roles = [
        PartyRole(
            k,
            cols,
            X[:, cols],
            n_features=X.shape[1],
            lower=-1.0,
            upper=1.0,
            labels=y if k == label_party else None,
            y_bounds=(-1, 1) if k == label_party else None,
            rng=party_rngs[k],
            policy=policy,
        )
        for k, cols in enumerate(parts)
    ]
    roles.append(
        ServerRole(
            objective="squared",
            partition=parts,
            label_party=label_party,
            epsilon=2.0,
            linear_weight=0.5,
            backend=backend,
            noise_generation=noise,
        )
    )
    if noise == "dealer":
        roles.append(DealerRole(rng))
    return roles


@pytest.mark.parametrize(
    "backend, noise",
    [
        ("plaintext", "dealer"),
        ("plaintext", "threshold"),
        ("plaintext", "distributed"),
        pytest.param("bfv", "dealer", marks=needs_tenseal),
    ],
)
def test_hand_built_roles_release_the_estimators_model(backend, noise):
    X, y, parts = grid_regression(300, seed=4)
    est = VerticalFMRegressor(
        partition=parts,
        label_party=1,
        secure_backend=backend,
        noise_generation=noise,
        random_state=7,
        **PARAMS,
    ).fit(X, y)
    results = drive(_roles(X, y, parts, backend=backend, noise=noise, seed=7))
    model = results[SERVER]
    np.testing.assert_array_equal(model["coef"], est.coef_)
    assert model["intercept"] == est.intercept_
    # every party receives the released model
    for k in range(len(parts)):
        np.testing.assert_array_equal(results[party_name(k)]["coef"], est.coef_)
    np.testing.assert_array_equal(model["party_privacy"], est.party_privacy_)


# ---- a wire codec: JSON plus base64 blobs, nothing else ---------------------- #
def _encode(value):
    if isinstance(value, np.ndarray):
        return {
            "__array__": value.dtype.str,
            "shape": list(value.shape),
            "data": base64.b64encode(value.tobytes()).decode(),
        }
    if isinstance(value, bytes):
        return {"__bytes__": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _decode(value):
    if isinstance(value, dict):
        if "__array__" in value:
            raw = base64.b64decode(value["data"])
            arr = np.frombuffer(raw, dtype=np.dtype(value["__array__"]))
            return arr.reshape(value["shape"]).copy()
        if "__bytes__" in value:
            return base64.b64decode(value["__bytes__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


class _OverTheWire(Role):
    """Wraps a role so that every message it receives went through JSON."""

    def __init__(self, role):
        super().__init__()
        self.role, self.name = role, role.name

    def start(self):
        return self.role.start()

    def receive(self, message):
        text = json.dumps(_encode(message.payload), allow_nan=True)
        wired = Message(
            message.step,
            message.sender,
            message.receiver,
            message.kind,
            _decode(json.loads(text)),
        )
        out = self.role.receive(wired)
        self.finished, self.result = self.role.finished, self.role.result
        return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_payloads_survive_a_json_wire_and_give_the_same_model(backend):
    X, y, parts = grid_regression(300, seed=4)
    direct = drive(_roles(X, y, parts, backend=backend, noise="dealer", seed=3))
    wired = drive(
        [
            _OverTheWire(role)
            for role in _roles(X, y, parts, backend=backend, noise="dealer", seed=3)
        ]
    )
    np.testing.assert_array_equal(wired[SERVER]["coef"], direct[SERVER]["coef"])
    assert wired[SERVER]["intercept"] == direct[SERVER]["intercept"]


# ---- keys where they belong ------------------------------------------------- #
def _walk(obj, seen=None):
    """Every object reachable from ``obj`` through attributes and containers."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, dict):
        children = list(obj.values())
    elif isinstance(obj, list | tuple | set):
        children = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        children = list(vars(obj).values())
    else:
        children = []
    for child in children:
        yield from _walk(child, seen)


def _blobs(payload):
    for obj in _walk(payload):
        if isinstance(obj, bytes):
            yield obj


@needs_tenseal
def test_the_secret_key_lives_only_in_the_server_role():
    import tenseal.sealapi as seal

    X, y, parts = grid_regression(300, seed=4)
    run = run_in_process(
        X,
        y,
        keep_payloads=True,
        **_run_params(parts, backend="bfv", noise="threshold"),
    )
    server = run.roles[SERVER]
    holder = server._key_holder
    assert isinstance(holder._secret_key, seal.SecretKey)
    secret = holder._dump(holder._secret_key)
    for name, role in run.roles.items():
        if name == SERVER:
            continue
        kinds = {type(obj) for obj in _walk(role)}
        assert seal.SecretKey not in kinds, name
        assert seal.Decryptor not in kinds, name
        assert seal.KeyGenerator not in kinds, name
        assert seal.Encryptor in kinds, name  # it did build its own tools
    # no message carries the secret key (nor a sizeable piece of it)
    n_blobs = 0
    for message in run.transcript:
        for blob in _blobs(message.payload):
            n_blobs += 1
            assert secret not in blob
            assert secret[len(secret) // 2 : len(secret) // 2 + 64] not in blob
    assert n_blobs > 0
    # the parties got the public context as bytes
    contexts = [m for m in run.transcript if m.kind == "public context"]
    assert len(contexts) == len(parts)
    assert all(isinstance(m.payload["public_key"], bytes) for m in contexts)


def _run_params(parts, *, backend, noise):
    from skdp._fm import DataDomain

    d = sum(len(c) for c in parts)
    domain = DataDomain(
        n_features=d,
        lower=-np.ones(d),
        upper=np.ones(d),
        y_bounds=(-1.0, 1.0),
        fit_intercept=True,
        intercept_scaling=1.0,
    )
    return dict(
        objective="squared",
        partition=parts,
        label_party=1,
        domain=domain,
        epsilon=2.0,
        delta=0.0,
        mechanism="laplace",
        budget="top-down",
        party_epsilon=None,
        pairwise_epsilon=None,
        linear_weight=0.5,
        postprocessing="ridge",
        backend=backend,
        noise_generation=noise,
        rng=np.random.default_rng(0),
    )


# ---- what a party colluding with the server sees ---------------------------- #
def test_threshold_shares_leave_a_full_share_after_removing_a_colluders():
    X, y, parts = grid_regression(400, d=9, seed=4)
    run = run_in_process(
        X,
        y,
        keep_payloads=True,
        **_run_params(parts, backend="plaintext", noise="threshold"),
    )
    kappa, _ = objective_constants("squared")
    g = run.plan.top_mechanism.granularity
    checked = 0
    for message in run.transcript:
        if message.kind != "encrypted masked sums":
            continue
        name, what = message.payload["group"], message.payload["what"]
        if what != "quad":
            continue
        _, k, q = (int(v) if v.isdigit() else v for v in name.split())
        Xk, Xq = np.clip(X[:, parts[k]], -1, 1), np.clip(X[:, parts[q]], -1, 1)
        exact = np.round(kappa * Xk.T @ Xq / g) * g
        noisy = message.payload["data"]["sums"]
        evaluator, encryptor = run.roles[party_name(q)], run.roles[party_name(k)]
        # the colluding evaluator removes its own share: what is left is exactly
        # the encryptor's share, a full draw of the mechanism (see the share tests)
        left = noisy - exact - evaluator._shares[name, "quad"].reshape(noisy.shape)
        own = encryptor._shares[name, "quad"].reshape(noisy.shape)
        np.testing.assert_allclose(left, own, rtol=0, atol=4 * g)
        checked += 1
    assert checked == 3


# ---- failures: nothing is released ----------------------------------------- #
def test_a_policy_refusal_aborts_naming_the_party_and_the_step():
    X, y, parts = grid_regression(300, seed=4)

    def policy(plan):
        if plan["privacy"]["epsilon"] > 1.0:
            raise ValueError(f"epsilon {plan['privacy']['epsilon']} exceeds 1.0")

    roles = _roles(X, y, parts, backend="plaintext", noise="threshold", seed=0)
    roles[2]._policy = policy
    with pytest.raises(ProtocolError, match=r"party 2 failed during step 'plan'.*1\.0"):
        drive(roles)
    assert roles[-1].result is None


def test_mismatched_declarations_are_refused():
    X, y, parts = grid_regression(300, seed=4)
    roles = _roles(X, y, parts, backend="plaintext", noise="threshold", seed=0)
    roles[1] = PartyRole(
        1,
        parts[1],
        X[:-1, parts[1]],  # one record short
        n_features=X.shape[1],
        lower=-1.0,
        upper=1.0,
        labels=y[:-1],
        y_bounds=(-1, 1),
    )
    with pytest.raises(ProtocolError, match="different numbers of records"):
        drive(roles)
    roles = _roles(X, y, parts, backend="plaintext", noise="threshold", seed=0)
    roles[0].columns = roles[0].columns + 1
    with pytest.raises(ProtocolError, match="declares columns"):
        drive(roles)


class _Echo(Role):
    def __init__(self, name, to=None, payload=None, finish=True):
        super().__init__()
        self.name, self.to, self.payload, self.finish = name, to, payload, finish

    def _start(self):
        if self.to is None:
            return []
        self.finished = True  # a sender has nothing more to do
        return [self._send("plan", self.to, "hello", self.payload or {})]

    def _receive(self, message):
        self.finished = self.finish
        return []


def test_driver_refuses_unknown_receivers_and_stalls():
    with pytest.raises(ProtocolError, match="unknown receiver 'nobody'"):
        drive([_Echo("a", to="nobody")])
    with pytest.raises(ProtocolError, match="stalled: b did not finish"):
        drive([_Echo("a", to="b"), _Echo("b", finish=False)])


def test_payloads_are_data_only():
    with pytest.raises(ProtocolError, match="a failed during step 'start'.*data only"):
        drive([_Echo("a", to="b", payload={"x": object()}), _Echo("b")])
    with pytest.raises(TypeError, match="keys must be str"):
        check_payload({1: 2})
    with pytest.raises(TypeError, match="numeric or bool dtype"):
        check_payload({"x": np.array(["a"])})
    with pytest.raises(TypeError, match="numpy scalar"):
        check_payload({"x": [np.float64(1.0)]})
    check_payload({"a": [1, 2.0, None, True, "s", b"x", np.zeros(2)], "b": {}})


def test_abort_reaches_a_role_as_protocol_error():
    role = _Echo("b")
    with pytest.raises(ProtocolError, match="server aborted the protocol.*disk full"):
        role.receive(abort_message(SERVER, "b", "disk full"))
    assert role.finished and role.result is None


def test_message_bytes_and_transcript():
    message = Message("plan", "a", "b", "k", {"x": np.zeros(4), "y": b"abc", "z": 1})
    assert message.nbytes == 32 + 3 + 8
    t = Transcript()
    drive([_Echo("a", to="b", payload={"x": np.zeros(4)}), _Echo("b")], t)
    assert t.bytes_sent() == {"a": 32} and t.bytes_received() == {"b": 32}
    assert t.bytes_by_kind() == {"hello": 32}


# ---- payloads checked on receipt: a malformed one ends the run, naming its sender
class _Tamper(Role):
    """Wraps a role and rewrites the payload of the messages of one kind it sends
    (a party that does not follow the protocol)."""

    def __init__(self, role, kind, edit):
        super().__init__()
        self.role, self.name, self.kind, self.edit = role, role.name, kind, edit

    def _out(self, messages):
        return [
            Message(m.step, m.sender, m.receiver, m.kind, self.edit(dict(m.payload)))
            if m.kind == self.kind
            else m
            for m in messages
        ]

    def start(self):
        return self._out(self.role.start())

    def receive(self, message):
        out = self._out(self.role.receive(message))
        self.finished, self.result = self.role.finished, self.role.result
        return out


def _set(key, fn):
    def edit(payload):
        payload[key] = fn(payload[key])
        return payload

    return edit


def _one_inf(a):
    a = a.copy()
    a[1] = np.inf
    return a


MALFORMED_LOCAL = {
    # the four payloads of issue 36, each released a model before
    "lin_scalar": (1, "lin", lambda a: 0.0, "got a float"),
    "quad_one_inf": (0, "quad", _one_inf, r"non-finite value at \(1,\)"),
    "quad_string": (2, "quad", lambda a: "0.5", "got a str"),
    "quad_times_1e12": (2, "quad", lambda a: a * 1e12, "out of range at"),
    # and their neighbours
    "quad_float32": (0, "quad", lambda a: a.astype(np.float32), "dtype float32"),
    "quad_short": (0, "quad", lambda a: a[:-1], "got shape"),
    "lin_list": (1, "lin", lambda a: a.tolist(), "got a list"),
}


@pytest.mark.parametrize("case", list(MALFORMED_LOCAL))
def test_a_malformed_local_payload_ends_the_run_naming_its_sender(case):
    k, key, fn, why = MALFORMED_LOCAL[case]
    X, y, parts = grid_regression(300, seed=4)
    roles = _roles(X, y, parts, backend="plaintext", noise="threshold", seed=0)
    roles[k] = _Tamper(roles[k], "noisy local coefficients", _set(key, fn))
    server = roles[-1]
    with pytest.raises(ProtocolError) as info:
        drive(roles)
    text = str(info.value)
    assert "server failed during step 'local'" in text
    assert f"party {k} sent invalid noisy local coefficients: '{key}'" in text
    assert re.search(why, text), text
    assert "no model was released" in text
    assert server.result is None and not server.finished


def _tight(values, bound):
    assert np.all(np.abs(values) <= bound)
    np.testing.assert_allclose(np.abs(values), bound, rtol=3e-9)


def test_the_payload_bounds_hold_for_honest_parties_and_are_public():
    """Every honest payload lies inside its bound, with room to spare only for
    the noise: at epsilon=inf (no noise) a row of ones on every column reaches
    ``n`` times the per-row bound exactly."""
    n, parts = 50, [np.array([0, 1]), np.array([2])]
    X = np.ones((n, 3))
    y = np.ones(n)
    roles = [
        PartyRole(
            k,
            cols,
            X[:, cols],
            n_features=3,
            lower=-1.0,
            upper=1.0,
            labels=y if k == 1 else None,
            y_bounds=(-1, 1) if k == 1 else None,
            rng=np.random.default_rng(k),
        )
        for k, cols in enumerate(parts)
    ]
    server = ServerRole(
        objective="squared",
        partition=parts,
        label_party=1,
        epsilon=np.inf,
        linear_weight=0.5,
        postprocessing="none",
    )
    t = Transcript(keep_payloads=True)
    drive([*roles, server], t)
    checked = 0
    for m in t:
        if m.kind == "noisy local coefficients":
            k = int(m.sender.split()[-1])
            quad, lin = server.plan.payload_bounds(("local", k), n)
            _tight(m.payload["quad"], quad)
            if k == 1:
                _tight(m.payload["lin"], lin)
            checked += 1
        elif m.kind == "encrypted masked sums":
            quad, lin = server.plan.payload_bounds(("pair", 0, 1), n)
            bound = quad if m.payload["what"] == "quad" else lin
            sums = m.payload["data"]["sums"].ravel()
            _tight(sums, bound)
            checked += 1
    assert checked == 4


MALFORMED_SUMS = {
    "scalar": (lambda a: 0.0, "the sums must be an array, got float"),
    "one_inf": (
        lambda a: np.where(np.arange(a.size).reshape(a.shape) == 0, np.inf, a),
        "non-finite",
    ),
    "times_1e12": (lambda a: a * 1e12, "out of range"),
    "transposed": (
        lambda a: a.T.copy() if a.shape[0] != a.shape[1] else a[:, :1],
        "got shape",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED_SUMS))
def test_malformed_cross_sums_end_the_run_naming_the_evaluator(case):
    fn, why = MALFORMED_SUMS[case]
    X, y, parts = grid_regression(300, seed=4)
    roles = _roles(X, y, parts, backend="plaintext", noise="threshold", seed=0)

    def edit(payload):
        if payload["group"] == "pair 0 2" and payload["what"] == "quad":
            payload["data"] = {**payload["data"], "sums": fn(payload["data"]["sums"])}
        return payload

    roles[2] = _Tamper(roles[2], "encrypted masked sums", edit)
    with pytest.raises(ProtocolError) as info:
        drive(roles)
    text = str(info.value)
    assert "server failed during step 'cross'" in text, text
    assert "party 2 sent invalid sums for 'pair 0 2' (quad)" in text, text
    assert why in text, text
    assert roles[3].result is None


def _edit_data(group, key, fn):
    def edit(payload):
        if payload["group"] == group and payload["what"] == "quad":
            payload["data"] = {**payload["data"], key: fn(payload["data"][key])}
        return payload

    return edit


MALFORMED_INPUTS = {
    "columns_scalar": ("encrypted columns", "columns", lambda a: 0.0, "got a float"),
    "columns_one_nan": (
        "encrypted columns",
        "columns",
        lambda a: np.where(np.arange(a.size).reshape(a.shape) == 3, np.nan, a),
        "non-finite value at (1, 1)",
    ),
    "columns_short": ("encrypted columns", "columns", lambda a: a[:-1], "got shape"),
    "scale": ("encrypted columns", "scale", lambda v: v * 1e12, "scale is not the"),
    "share_scalar": ("encrypted noise share", "share", lambda a: 0.0, "got a float"),
    "share_inf": ("encrypted noise share", "share", lambda a: a + np.inf, "non-fin"),
}


@pytest.mark.parametrize("case", list(MALFORMED_INPUTS))
def test_a_malformed_input_to_an_evaluator_ends_the_run_naming_its_sender(case):
    kind, key, fn, why = MALFORMED_INPUTS[case]
    X, y, parts = grid_regression(300, seed=4)
    roles = _roles(X, y, parts, backend="plaintext", noise="threshold", seed=0)
    # party 0 encrypts its columns for party 2, the evaluator of "pair 0 2"
    roles[0] = _Tamper(roles[0], kind, _edit_data("pair 0 2", key, fn))
    with pytest.raises(ProtocolError) as info:
        drive(roles)
    text = str(info.value)
    assert "party 2 failed during step 'cross'" in text, text
    assert f"party 0 sent invalid {kind} for 'pair 0 2' (quad)" in text, text
    assert why in text, text
    assert roles[3].result is None


def test_only_the_encryptor_of_a_block_may_send_its_input():
    X, y, parts = grid_regression(300, seed=4)
    roles = _roles(X, y, parts, backend="plaintext", noise="threshold", seed=0)

    def resend(payload):
        return payload

    class _Impostor(_Tamper):
        # party 1 also sends party 0's "pair 0 2" columns to party 2, as itself
        def _out(self, messages):
            out = list(messages)
            for m in messages:
                if m.kind == "encrypted columns" and m.payload["group"] == "pair 1 2":
                    forged = {**m.payload, "group": "pair 0 2"}
                    out.append(Message(m.step, m.sender, m.receiver, m.kind, forged))
            return out

    roles[1] = _Impostor(roles[1], None, resend)
    with pytest.raises(ProtocolError) as info:
        drive(roles)
    text = str(info.value)
    assert "party 2 failed during step" in text, text
    assert (
        "party 1 sent 'encrypted columns' for 'pair 0 2' (quad), which party 0 "
        "encrypts for party 2"
    ) in text, text


MALFORMED_NOISE = {
    "missing": (lambda a: None, "sent no noise for"),
    "scalar": (lambda a: 0.0, "got a float"),
    "times_1e12": (lambda a: a * 1e12 + 1.0, "out of range"),
}


@pytest.mark.parametrize("case", list(MALFORMED_NOISE))
def test_malformed_dealer_noise_ends_the_run_naming_the_dealer(case):
    fn, why = MALFORMED_NOISE[case]
    X, y, parts = grid_regression(300, seed=4)
    roles = _roles(X, y, parts, backend="plaintext", noise="dealer", seed=0)

    def edit(payload):
        key = "local 0 quad"
        if key in payload:
            value = fn(payload[key])
            if value is None:
                del payload[key]  # no noise: the party would release exact sums
            else:
                payload[key] = value
        return payload

    roles[-1] = _Tamper(roles[-1], "noise", edit)
    with pytest.raises(ProtocolError) as info:
        drive(roles)
    text = str(info.value)
    assert "party 0 failed during step" in text, text
    assert "noise dealer sent" in text and "'local 0' (quad)" in text, text
    assert why in text, text
    assert roles[3].result is None
