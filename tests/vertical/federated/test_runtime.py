"""The federated runtime end to end on 127.0.0.1: a server and parties as separate
processes (or, for the refusals, as threads of this process), over mutual TLS
with throwaway certificates and ephemeral ports. Every run is bounded in time and
leaves nothing running."""

import json
import threading
import time
import warnings

import numpy as np
import pytest

pytest.importorskip("grpc")
pytest.importorskip("cryptography")

import pandas as pd  # noqa: E402
from sklearn.utils.validation import check_is_fitted  # noqa: E402

from skdp.exceptions import PrivacyLeakWarning  # noqa: E402
from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor  # noqa: E402
from skdp.vertical.federated import (  # noqa: E402
    FederatedError,
    load_model,
    load_party_config,
    load_server_config,
    run_party,
    run_server,
)
from tests.vertical._leaks import (  # noqa: E402
    assert_leaks_nothing,
    numeric_leaves,
    secrets,
)
from tests.vertical.federated._harness import (  # noqa: E402
    Deployment,
    kill_all,
    launch,
    make_certs,
    wait_all,
    wait_exits,
)

PROCESS_TIMEOUT = 240  # seconds for a whole multi-process run (loaded machine)


def _data(n, sizes, objective, seed=0):
    rng = np.random.default_rng(seed)
    blocks = [rng.uniform(-1, 1, (n, s)) for s in sizes]
    X = np.hstack(blocks)
    w = rng.normal(size=X.shape[1])
    if objective == "linear":
        y = np.clip(0.3 * X @ w + rng.normal(0, 0.1, n), -1, 1)
    else:
        y = (X @ w > 0).astype(int)
    return blocks, X, y


def _partition(sizes):
    edges = np.concatenate([[0], np.cumsum(sizes)])
    return [list(range(a, b)) for a, b in zip(edges, edges[1:])]


@pytest.mark.parametrize(
    "backend, objective, n", [("plaintext", "linear", 300), ("bfv", "logistic", 200)]
)
def test_processes_release_the_in_process_model(tmp_path, backend, objective, n):
    pytest.importorskip("tenseal") if backend == "bfv" else None
    sizes = [2, 1, 2]
    blocks, X, y = _data(n, sizes, objective)
    dep = Deployment(tmp_path, blocks, y, backend=backend, objective=objective)
    procs = launch(dep.write())
    out = wait_all(procs, PROCESS_TIMEOUT)
    for name, (code, _, err) in out.items():
        assert code == 0, f"{name} exited {code}: {err[-2000:]}"
    model = load_model(tmp_path / "model")
    kw = dict(
        epsilon=1.0,
        bounds_X=(-1.0, 1.0),
        partition=_partition(sizes),
        noise_generation="dealer",
        secure_backend=backend,
        random_state=0,
    )
    if objective == "linear":
        ref = VerticalFMRegressor(bounds_y=(-1.0, 1.0), **kw).fit(X, y)
    else:
        if "classes" in VerticalFMClassifier().get_params():
            kw["classes"] = [0, 1]  # as the label party's config declares
        with warnings.catch_warnings():  # older estimators infer the classes
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            ref = VerticalFMClassifier(**kw).fit(X, y)
        np.testing.assert_array_equal(model.classes_, ref.classes_)
    assert type(model) is type(ref)
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    assert model.intercept_ == ref.intercept_
    np.testing.assert_array_equal(model.party_privacy_, ref.party_privacy_)
    assert model.privacy_spent_ == ref.privacy_spent_
    check_is_fitted(model)
    names = [f"x{j}" for j in range(X.shape[1])]
    np.testing.assert_array_equal(model.feature_names_in_, names)
    frame = pd.DataFrame(X, columns=names)
    # same coefficients; a DataFrame's memory layout changes the last bit of X @ w
    np.testing.assert_allclose(model.predict(frame), ref.predict(X), rtol=1e-12)
    with warnings.catch_warnings():  # fitted with names, given an array
        warnings.simplefilter("ignore", UserWarning)
        np.testing.assert_array_equal(model.predict(X), ref.predict(X))
    # every party received the released model from the protocol
    for name in dep.names:
        got = json.loads((tmp_path / f"{name}-out.json").read_text())
        np.testing.assert_allclose(got["result"]["coef"], ref.coef_, rtol=1e-15)
        assert got["traffic"]["sent"] > 0 and got["traffic"]["received"] > 0


def test_killed_party_releases_nothing(tmp_path):
    """Party org-2 stalls in the middle of the protocol (toy roles: it has sent
    its neighbour message, not its answer to the server); killing it there makes
    every other process exit non-zero naming the cause, and no model is written."""
    blocks, _, y = _data(40, [1, 1, 1], "linear")
    dep = Deployment(tmp_path, blocks, y)
    marker = tmp_path / "org-2-stalling"
    procs = launch(
        dep.write(),
        module="tests.vertical.federated._toy",
        extra_env={"SKDP_TOY_STALL": "org-2", "SKDP_TOY_STALL_MARKER": str(marker)},
    )
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while not marker.exists() and time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs.values()):
                break
            time.sleep(0.2)
        assert marker.exists(), "org-2 never reached the middle of the protocol"
        procs["org-2"].kill()
        out = wait_all(procs, PROCESS_TIMEOUT)
    finally:
        kill_all(procs)
    assert out["org-2"][0] != 0
    for name in ["server", "org-0", "org-1"]:
        code, _, err = out[name]
        assert code != 0, f"{name} exited 0 after a party was killed"
        assert "org-2" in err, err[-2000:]
    assert not (tmp_path / "model.json").exists()
    assert not (tmp_path / "model.npz").exists()


# ------------------------------------------------------------------ in threads
def _run_threads(dep, timeout=120, party_overrides=None, verbose=0):
    """Run the server and the parties as threads; ``{name: exception or result}``."""
    paths = dep.write()
    results = {}

    def target(name, fn, cfg):
        try:
            results[name] = fn(cfg, verbose=verbose)
        except BaseException as exc:  # collected for the assertions
            results[name] = exc

    threads = [
        threading.Thread(
            target=target,
            args=("server", run_server, load_server_config(paths["server"])),
            daemon=True,
        )
    ]
    for name in dep.names:
        cfg = load_party_config(paths[name])
        threads.append(
            threading.Thread(target=target, args=(name, run_party, cfg), daemon=True)
        )
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "a participant did not stop"
    return results


def _small(tmp_path, **kw):
    blocks, _, y = _data(30, [1, 2], "linear")
    timeouts = {"startup": 10.0, "call": 20.0, "heartbeat": 0.5, "protocol": 60.0}
    return Deployment(tmp_path, blocks, y, timeouts=timeouts, **kw)


def _all_failed(results, dep):
    for name in ["server", *dep.names]:
        assert isinstance(results[name], FederatedError), (name, results[name])
    assert not (dep.dir / "model.json").exists()


def test_request_over_policy_is_refused(tmp_path):
    """Through the console scripts: every process exits 1 naming the cause."""
    dep = _small(tmp_path, epsilon=1.5)
    dep.parties[1]["policy"]["max_epsilon"] = 1.0
    out = wait_all(launch(dep.write()), PROCESS_TIMEOUT)
    for name, (code, _, err) in out.items():
        assert code == 1, f"{name} exited {code}: {err[-2000:]}"
        # each names the refusing party and the reason (directly or via the abort)
        assert "epsilon 1.5 exceeds max_epsilon 1" in err, (name, err[-2000:])
    assert "org-1" in out["server"][2]
    assert not (tmp_path / "model.json").exists()


def test_backend_outside_policy_is_refused(tmp_path):
    dep = _small(tmp_path)
    dep.parties[0]["policy"]["backends"] = ["bfv"]
    results = _run_threads(dep)
    _all_failed(results, dep)
    assert "org-0" in str(results["server"])
    assert "backend 'plaintext' is not in the accepted ['bfv']" in str(
        results["server"]
    )


def test_mismatched_ids_are_refused(tmp_path):
    n = 30
    ids = [[f"r{i:06d}" for i in range(n)] for _ in range(2)]
    ids[1][7] = "someone-else"
    dep = _small(tmp_path, ids=ids)
    results = _run_threads(dep)
    _all_failed(results, dep)
    text = " ".join(str(results[n]) for n in dep.names)
    assert "record ids differ between" in text
    assert "not the same ids" in text


def test_different_row_counts_are_refused(tmp_path):
    dep = _small(tmp_path)
    dep.parties[1]["data"]["path"] = "short.csv"
    lines = (tmp_path / "org-1.csv").read_text().splitlines()
    (tmp_path / "short.csv").write_text("\n".join(lines[:-3]) + "\n")
    results = _run_threads(dep)
    _all_failed(results, dep)
    assert "holds 27 records" in " ".join(str(results[n]) for n in dep.names)


def test_wrong_ca_is_refused(tmp_path):
    dep = _small(tmp_path)
    other = make_certs(tmp_path / "other", ["org-1"])
    dep.parties[1]["tls"] = {
        "ca_cert": "other/ca.pem",
        "cert": "other/org-1.pem",
        "key": "other/org-1.key",
    }
    results = _run_threads(dep)
    _all_failed(results, dep)
    assert other.exists()
    assert "CERTIFICATE_VERIFY_FAILED" in str(results["org-1"]) or "certificate" in str(
        results["org-1"]
    )


def test_wrong_peer_name_is_refused(tmp_path):
    """org-1's address for the server leads to org-0: a valid certificate of the
    same CA, but not for the pinned name "server"."""
    dep = _small(tmp_path)
    dep.parties[1]["peers"]["server"] = dep.addresses["org-0"]
    results = _run_threads(dep)
    _all_failed(results, dep)
    assert "cannot authenticate server" in str(results["org-1"])
    assert "certificate is not valid for 'server'" in str(results["org-1"])


def test_wire_never_carries_raw_data_or_exact_cross_sums(tmp_path, monkeypatch):
    """bfv run (threads): every message as decoded from the wire. No length-n
    vector, no raw column or fixed-point column inside a ciphertext, and nothing
    the server receives equals an exact cross-party sum."""
    pytest.importorskip("tenseal")
    from skdp.vertical.federated._node import Node

    seen = []
    original = Node._on_message

    def capture(self, message, nbytes):
        seen.append((self.name, message))
        return original(self, message, nbytes)

    monkeypatch.setattr(Node, "_on_message", capture)
    n, sizes = 64, [2, 1, 2]
    blocks, X, y = _data(n, sizes, "linear")
    X = np.round(X * 256) / 256
    y = np.round(y * 256) / 256
    blocks = [X[:, cols] for cols in _partition(sizes)]
    timeouts = {"startup": 20.0, "call": 60.0, "heartbeat": 0.5, "protocol": 120.0}
    dep = Deployment(
        tmp_path,
        blocks,
        y,
        backend="bfv",
        noise_generation="distributed",
        timeouts=timeouts,
    )
    dep.server["model"]["linear_weight"] = 0.5
    results = _run_threads(dep, timeout=180)
    assert not isinstance(results["server"], BaseException), results["server"]
    kinds = {m.kind for _, m in seen}
    assert {"encrypted columns", "encrypted labels", "encrypted masked sums"} <= kinds
    parts = _partition(sizes)
    columns, exact = secrets(X, y, parts, "squared", label_party=0, linear_weight=0.5)
    checked = 0
    for receiver, message in seen:
        for leaf in numeric_leaves(message.payload):
            checked += 1
            assert_leaks_nothing(
                leaf, columns, exact, n, receiver == "server", message.kind
            )
    assert checked > 50


def test_bottom_up_budgets_in_threads(tmp_path):
    """Bottom-up budgets travel from the server config to each party's role; the
    release equals the in-process estimator's (dealer noise, same seed)."""
    sizes = [1, 2, 1]
    blocks, X, y = _data(60, sizes, "linear")
    party_eps = [1.0, 0.9, 0.8]
    pairs = [[0.0, 0.2, 0.3], [0.2, 0.0, 0.1], [0.3, 0.1, 0.0]]
    timeouts = {"startup": 20.0, "call": 30.0, "heartbeat": 0.5, "protocol": 120.0}
    dep = Deployment(tmp_path, blocks, y, timeouts=timeouts)
    dep.server["model"].update(
        budget="bottom-up", party_epsilon=party_eps, pairwise_epsilon=pairs
    )
    results = _run_threads(dep)
    for name, res in results.items():
        assert not isinstance(res, BaseException), (name, res)
    ref = VerticalFMRegressor(
        bounds_X=(-1.0, 1.0),
        bounds_y=(-1.0, 1.0),
        partition=_partition(sizes),
        budget="bottom-up",
        party_epsilon=party_eps,
        pairwise_epsilon=pairs,
        noise_generation="dealer",
        random_state=0,
    ).fit(X, y)
    model = load_model(tmp_path / "model")
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    assert model.intercept_ == ref.intercept_
    np.testing.assert_allclose(model.party_privacy_, party_eps)
    assert model.privacy_spent_ == ref.privacy_spent_


def test_ranges_excluding_zero_are_centred_in_threads(tmp_path):
    """Declared ranges away from 0 (features and labels): each party centres its
    own columns (the label party its labels) from its own config, and the model
    file is the in-process estimator's, in the user's units."""
    sizes = [2, 1, 1]
    blocks, X, y = _data(80, sizes, "linear")
    blocks = [b + 3.0 for b in blocks]
    X, y = X + 3.0, y + 10.0
    dep = Deployment(tmp_path, blocks, y, bounds=(2.0, 4.0), label_bounds=(9.0, 11.0))
    results = _run_threads(dep)
    for name, res in results.items():
        assert not isinstance(res, BaseException), (name, res)
    ref = VerticalFMRegressor(
        bounds_X=(2.0, 4.0),
        bounds_y=(9.0, 11.0),
        partition=_partition(sizes),
        noise_generation="dealer",
        random_state=0,
    ).fit(X, y)
    assert ref.offset_y_ == 10.0
    np.testing.assert_array_equal(ref.offset_X_, np.full(4, 3.0))
    model = load_model(tmp_path / "model")
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    assert model.intercept_ == ref.intercept_
    with warnings.catch_warnings():  # fitted with names, given an array
        warnings.simplefilter("ignore", UserWarning)
        np.testing.assert_array_equal(model.predict(X), ref.predict(X))
    np.testing.assert_array_equal(model.bounds_[0], np.full(4, 2.0))
    assert model.bounds_y_ == (9.0, 11.0)
    np.testing.assert_array_equal(model.offset_X_, ref.offset_X_)
    assert model.offset_y_ == ref.offset_y_
    assert model.privacy_spent_ == ref.privacy_spent_


def test_a_malformed_payload_over_mtls_releases_nothing_and_names_the_sender(
    tmp_path, monkeypatch
):
    """org-1 (party 1) sends its noisy local coefficients times 1e12 over the
    real gRPC/mTLS transport (threads of this process): the server refuses them
    on receipt, every participant fails naming org-1, no model is written."""
    from skdp.vertical._party import PartyRole

    honest = PartyRole._local

    def forged(self):
        out = honest(self)
        if self.index == 1:
            out = {**out, "quad": out["quad"] * 1e12}
        return out

    monkeypatch.setattr(PartyRole, "_local", forged)
    dep = _small(tmp_path)
    results = _run_threads(dep, timeout=90)
    _all_failed(results, dep)
    assert not (dep.dir / "model.npz").exists()
    why = "party 1 (org-1) sent invalid noisy local coefficients: 'quad' is out of"
    assert why in str(results["server"]), results["server"]
    for name in dep.names:
        # from the server's abort, or relayed by a party whose send it refused
        assert why in str(results[name]), results[name]


@pytest.mark.parametrize(
    "who, case", [("org-0", "lin_scalar"), ("org-1", "quad_string")]
)
def test_a_malformed_payload_between_processes_ends_every_process(tmp_path, who, case):
    """Separate processes over mTLS (the console entry point): a party sends
    malformed local coefficients (org-0, the label party: ``lin`` as a scalar;
    org-1: ``quad`` as a string). Every process exits 1 within 10 s of the
    send naming the sender, and no model is written."""
    index = {"org-0": 0, "org-1": 1}[who]
    blocks, _, y = _data(40, [1, 1, 1], "linear")
    timeouts = {"startup": 60.0, "call": 30.0, "heartbeat": 1.0, "protocol": 300.0}
    dep = Deployment(tmp_path, blocks, y, timeouts=timeouts)
    marker = tmp_path / "forged"
    procs = launch(
        dep.write(),
        module="tests.vertical.federated._forge",
        extra_env={"SKDP_FORGE": f"{who}:{case}", "SKDP_FORGE_MARKER": str(marker)},
    )
    names = ["server", *dep.names]
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while not marker.exists() and time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs.values()):
                break
            time.sleep(0.05)
        sent_at = time.monotonic()
        assert marker.exists(), f"{who} never sent its local coefficients"
        out = wait_exits(procs, names, 10.0, since=sent_at)
    finally:
        kill_all(procs)
    why = f"party {index} ({who}) sent invalid noisy local coefficients"
    for name in names:
        code, seconds, err = out[name]
        assert code == 1, f"{name} exited {code} ({seconds:.1f} s): {err[-2000:]}"
        assert why in err, (name, err[-2000:])
    assert not (tmp_path / "model.json").exists()
    assert not (tmp_path / "model.npz").exists()


def test_bad_data_file_fails_everyone(tmp_path):
    dep = _small(tmp_path)
    path = tmp_path / "org-1.csv"
    lines = path.read_text().splitlines()
    cells = lines[5].split(",")
    cells[1] = "oops"
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    results = _run_threads(dep)
    _all_failed(results, dep)
    assert "column 'x1' row 5 is not a finite number" in str(results["org-1"])
    assert "'oops'" not in str(results["org-1"])  # never a cell value
    for name in ["server", "org-0"]:
        assert "org-1 aborted the run: column 'x1'" in str(results[name])
        assert "org-1.csv" not in str(results[name])  # nor another's path


def test_verbose_reports_each_participants_protocol_steps(tmp_path, capsys):
    dep = _small(tmp_path)
    results = _run_threads(dep, verbose=1)
    assert not any(isinstance(r, BaseException) for r in results.values()), results
    err = capsys.readouterr().err
    for name in ["server", *dep.names]:
        assert f"{name}: step 'release'" in err or f"{name}: step 'local'" in err


# ------------------------------------------------------------------ frozen peer
FROZEN_TIMEOUTS = {"startup": 90.0, "call": 10.0, "heartbeat": 1.0, "protocol": 600.0}


def test_frozen_party_ends_every_other_process(tmp_path):
    """org-1 stops itself with SIGSTOP at its first protocol step (it keeps its
    connections: a hung VM, a half-open link) while org-0 streams it 48 MB of
    random bytes (a large ciphertext), far more than TCP and HTTP/2 buffer. The
    send is blocked in flow control, where a deadline alone never fires; the
    keepalive pings and the watchdog end it. Every other process exits non-zero
    within call + heartbeat + 10 s of the freeze, and no model is written."""
    blocks, _, y = _data(40, [1, 1, 1], "linear")
    dep = Deployment(tmp_path, blocks, y, timeouts=dict(FROZEN_TIMEOUTS))
    marker = tmp_path / "org-1-frozen"
    procs = launch(
        dep.write(),
        module="tests.vertical.federated._toy",
        extra_env={
            "SKDP_TOY_FREEZE": "org-1",
            "SKDP_TOY_FREEZE_MARKER": str(marker),
            "SKDP_TOY_BIG_MB": "48",
        },
    )
    others = ["server", "org-0", "org-2"]
    bound = FROZEN_TIMEOUTS["call"] + FROZEN_TIMEOUTS["heartbeat"] + 10
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while not marker.exists() and time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs.values()):
                break
            time.sleep(0.05)
        frozen_at = time.monotonic()
        assert marker.exists(), "org-1 never reached its first protocol step"
        out = wait_exits(procs, others, bound, since=frozen_at)
    finally:
        kill_all(procs)  # SIGKILL ends the stopped process too
    for name in others:
        code, seconds, err = out[name]
        assert code is not None, (
            f"{name} still ran {bound:g} s after the freeze: {err[-2000:]}"
        )
        assert code == 1, f"{name} exited {code}: {err[-2000:]}"
        assert "org-1" in err, err[-2000:]
    assert not (tmp_path / "model.json").exists()
    assert not (tmp_path / "model.npz").exists()


# ------------------------------------------------------------ bind, early failures
def test_a_second_server_on_a_bound_port_exits_2_naming_the_port(tmp_path):
    """A leftover server holds the port: the new one must not share it
    (SO_REUSEPORT is off) and stops before any protocol step, exit status 2."""
    import socket

    dep = _small(tmp_path)
    dep.server["timeouts"]["startup"] = 600.0  # the first one waits meanwhile
    paths = dep.write()
    port = int(dep.addresses["server"].rsplit(":", 1)[1])
    first = launch({"server": paths["server"]})
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while time.monotonic() < deadline and first["server"].poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break  # the first server listens
            time.sleep(0.1)
        second = launch({"server": paths["server"]})
        out = wait_all(second, PROCESS_TIMEOUT)
    finally:
        kill_all(first)
    code, _, err = out["server"]
    assert code == 2, err[-2000:]
    assert f"port {port} is already in use" in err and "key 'listen'" in err


def _read_lines(proc, lines):
    import threading

    def read():
        for line in proc.stderr:
            lines.append(line)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


def _first_then_the_others(paths, name, wait_first=True):
    """Launch ``name`` alone, wait until it has failed and says it stays
    reachable, then launch the others; ``(returncode of name, its stderr,
    {other: (returncode, stdout, stderr)})``, nothing left running (without
    ``wait_first``, ``name`` is killed once the others have ended)."""
    first = launch({name: paths[name]})
    lines = []
    reader = _read_lines(first[name], lines)
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while time.monotonic() < deadline and first[name].poll() is None:
            if any("staying reachable" in line for line in lines):
                break
            time.sleep(0.1)
        assert any("staying reachable" in line for line in lines), "".join(lines)
        later = launch({n: p for n, p in paths.items() if n != name})
        out = wait_all(later, PROCESS_TIMEOUT)
        if wait_first:
            first[name].wait(timeout=PROCESS_TIMEOUT)
    finally:
        kill_all(first)
        reader.join(10)
    return first[name].returncode if wait_first else None, "".join(lines), out


def test_an_early_failure_reaches_peers_started_later(tmp_path):
    """org-1's data file has a bad cell: it fails before any peer listens,
    prints the cause at once and stays reachable; the server and org-0, started
    afterwards, learn the cause at their first contact (exit 1 naming it, long
    before their ``startup`` of 240 s would end) and no process prints the
    value."""
    blocks, _, y = _data(30, [1, 2], "linear")
    timeouts = {"startup": 240.0, "call": 20.0, "heartbeat": 0.5, "protocol": 600.0}
    dep = Deployment(tmp_path, blocks, y, timeouts=timeouts)
    path = tmp_path / "org-1.csv"
    lines = path.read_text().splitlines()
    cells = lines[5].split(",")
    cells[1] = "SECRET-4711"
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    code, first_err, out = _first_then_the_others(dep.write(), "org-1")
    assert code == 1
    assert "column 'x1' row 5 is not a finite number" in first_err
    for name in ["server", "org-0"]:
        code, _, err = out[name]
        assert code == 1, err[-2000:]
        assert "org-1 aborted the run: column 'x1' of its data file" in err, err
        assert "org-1.csv" not in err  # never another participant's path
    for err in [first_err, *(o[2] for o in out.values())]:
        assert "SECRET-4711" not in err


def test_an_expired_certificate_is_named_by_everyone(tmp_path):
    """org-1's certificate has expired: org-1 says so at once (no peer would
    tell it: they only close the handshake) and stays reachable; the server and
    org-0, started later, fail at their first handshake with it naming the
    cause instead of waiting out ``startup``."""
    from tests.vertical.federated._harness import issue_certificate

    blocks, _, y = _data(30, [1, 2], "linear")
    timeouts = {"startup": 240.0, "call": 20.0, "heartbeat": 0.5, "protocol": 600.0}
    dep = Deployment(tmp_path, blocks, y, timeouts=timeouts)
    issue_certificate(dep.certs, "org-1-old", "org-1", ["org-1"], days=(-30, -1))
    dep.parties[1]["tls"].update(cert="certs/org-1-old.pem", key="certs/org-1-old.key")
    # org-1 stays reachable for its whole startup (no peer can be told over
    # TLS); the test ends it once the others have exited
    _, first_err, out = _first_then_the_others(dep.write(), "org-1", False)
    assert "certificate has expired" in first_err
    for name in ["server", "org-0"]:
        code, _, err = out[name]
        assert code == 1, err[-2000:]
        assert "certificate has expired" in err and "org-1" in err, err[-2000:]
