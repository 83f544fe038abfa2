"""More than two classes across processes: the server's and the label party's
declared classes, the "multinomial" policy name, the one-hot labels, and a
3-class release over mutual TLS that equals the in-process estimator's."""

import copy
import json

import numpy as np
import pytest

from skdp.vertical.federated._config import (
    ConfigError,
    Policy,
    PolicyError,
    effective_objective,
    load_party_config,
    load_server_config,
)
from skdp.vertical.federated._data import PartyData
from skdp.vertical.federated._node import FederatedError
from skdp.vertical.federated._roles import (
    check_label_request,
    encode_labels,
    label_info,
    plan_policy,
)
from tests.vertical.federated._harness import make_certs, write_toml
from tests.vertical.federated.test_config import PARTY, SERVER

CLASSES = ["bronze", "gold", "silver"]


@pytest.fixture
def files(tmp_path):
    make_certs(tmp_path, ["bank"])  # real TLS files: loading parses them
    (tmp_path / "bank.csv").write_text("x")
    return tmp_path


def _label_party(files, classes=CLASSES, **policy):
    table = copy.deepcopy(PARTY)
    del table["data"]["label_bounds"]
    if classes is not None:
        table["data"]["classes"] = list(classes)
    table["policy"].update(policy)
    return load_party_config(write_toml(files / "party.toml", table))


def _server(files, **model):
    table = copy.deepcopy(SERVER)
    table["model"].update({"objective": "logistic", **model})
    return load_server_config(write_toml(files / "server.toml", table))


# ------------------------------------------------------------------ configs
def test_multinomial_configs_parse(files):
    party = _label_party(files)
    assert party.classes == tuple(CLASSES)
    assert "multinomial" in party.policy.objectives  # the default allows it
    server = _server(files, classes=CLASSES)
    assert server.classes == tuple(CLASSES) and server.n_classes == 3
    request = server.request()
    assert request["objective"] == "logistic" and request["classes"] == CLASSES
    assert effective_objective("logistic", request["classes"]) == "multinomial"
    binary = _server(files)
    assert binary.classes is None and binary.request()["classes"] is None
    assert effective_objective("logistic", [0, 1]) == "logistic"
    assert effective_objective("linear", None) == "linear"


@pytest.mark.parametrize(
    "model, match",
    [
        ({"classes": ["a"]}, "'model.classes' must be two or more distinct"),
        ({"classes": ["a", "b", "a"]}, "'model.classes' must be two or more"),
        ({"classes": [0, "b", "c"]}, "all integers or all strings"),
        ({"classes": "abc"}, "'model.classes' must be a list"),
        (
            {"objective": "linear", "classes": [0, 1, 2]},
            "'model.classes' is only for objective = 'logistic'",
        ),
    ],
)
def test_bad_multinomial_server_config_names_the_key(files, model, match):
    with pytest.raises(ConfigError, match=match):
        _server(files, **model)


@pytest.mark.parametrize("classes", [[0, 1], [0, 1, 2]])
def test_bottom_up_with_declared_classes_is_accepted(files, classes):
    server = _server(
        files,
        classes=classes,
        budget="bottom-up",
        party_epsilon=[1.0, 1.0],
        pairwise_epsilon=[[0, 0.5], [0.5, 0]],
    )
    assert server.n_classes == len(classes) and server.budget == "bottom-up"


@pytest.mark.parametrize(
    "classes, match",
    [
        (["a", "a", "b"], "'data.classes' must be two or more distinct"),
        ([1.5, 2.5, 3.5], "'data.classes' must be two or more distinct"),
        ([True, False], "'data.classes' must be two or more distinct"),
    ],
)
def test_bad_party_classes_name_the_key(files, classes, match):
    with pytest.raises(ConfigError, match=match):
        _label_party(files, classes=classes)


def test_policy_objective_multinomial(files):
    with pytest.raises(ConfigError, match="'policy.objectives' must list values"):
        _label_party(files, objectives=["softmax"])
    binary_only = Policy(max_epsilon=1.0, objectives=("logistic",))
    request = {
        "epsilon": 1.0,
        "backend": "bfv",
        "objective": "logistic",
        "noise_generation": "threshold",
    }
    binary_only.check(request | {"classes": [0, 1]}, n_samples=10)
    binary_only.check(request | {"classes": None}, n_samples=10)
    with pytest.raises(PolicyError, match="objective 'multinomial' is not in the"):
        binary_only.check(request | {"classes": CLASSES}, n_samples=10)
    Policy(max_epsilon=1.0, objectives=("multinomial",)).check(
        request | {"classes": CLASSES}, n_samples=10
    )


# ------------------------------------------------------- the label party
def _request(classes, objective="logistic"):
    return {"objective": objective, "classes": classes}


def test_label_party_refuses_classes_other_than_its_own(files):
    party = _label_party(files)
    check_label_request(party, _request(list(reversed(CLASSES))))  # same set
    with pytest.raises(PolicyError, match="differ from this party's data.classes"):
        check_label_request(party, _request(["bronze", "gold", "platinum"]))
    with pytest.raises(PolicyError, match="differ from"):
        check_label_request(party, _request(["bronze", "gold"]))
    with pytest.raises(PolicyError, match="must declare the same model.classes"):
        check_label_request(party, _request(None))
    undeclared = _label_party(files, classes=None)
    with pytest.raises(PolicyError, match="declare the same data.classes"):
        check_label_request(undeclared, _request(CLASSES))
    check_label_request(undeclared, _request(None))  # binary, as before
    check_label_request(_label_party(files, classes=[0, 1]), _request(None))


def test_label_party_one_hot_encodes_the_first_classes(files):
    party = _label_party(files)
    y = np.array(["silver", "bronze", "gold", "silver"])
    data = PartyData(ids=["1", "2", "3", "4"], X=np.zeros((4, 2)), y=y)
    labels = encode_labels(party, _request(CLASSES), data)
    # sorted classes bronze, gold, silver: silver (the last) is the reference
    np.testing.assert_array_equal(labels, [[0, 0], [1, 0], [0, 1], [0, 0]])
    assert label_info(party, data) == {"classes": CLASSES}
    # integer labels in the file, declared as strings
    numbered = _label_party(files, classes=["1", "2", "3"])
    data = PartyData(ids=["1", "2", "3"], X=np.zeros((3, 2)), y=np.array([3, 1, 2]))
    np.testing.assert_array_equal(
        encode_labels(numbered, _request(["1", "2", "3"]), data),
        [[0, 0], [1, 0], [0, 1]],
    )


def test_undeclared_label_is_an_error_without_its_value(files):
    party = _label_party(files)
    y = np.array(["gold", "secret-tier", "bronze"])
    data = PartyData(ids=["1", "2", "3"], X=np.zeros((3, 2)), y=y)
    for call in (
        lambda: encode_labels(party, _request(CLASSES), data),
        lambda: label_info(party, data),
    ):
        with pytest.raises(ValueError, match="not in data.classes") as info:
            call()
        assert "secret-tier" not in str(info.value)
    # more than two classes are never taken from the data
    undeclared = _label_party(files, classes=None)
    with pytest.raises(ValueError, match="declare data.classes"):
        label_info(undeclared, data)


def test_plan_policy_checks_the_multinomial_plan(files):
    party = _label_party(files)
    request = {
        "objective": "logistic",
        "classes": CLASSES,
        "backend": "bfv",
        "noise_generation": "threshold",
        "budget": "top-down",
        "mechanism": "laplace",
        "epsilon": 1.0,
    }
    check = plan_policy(party, request)
    plan = {
        "objective": "multinomial_taylor",
        "n_lin": 2,
        "backend": "bfv",
        "noise_generation": "threshold",
        "privacy": {
            "budget": "top-down",
            "mechanism": "laplace",
            "epsilon": 1.0,
            "delta": 0.0,
        },
        "n_samples": 100,
    }
    check(plan)
    with pytest.raises(PolicyError, match="n_lin 1 differs from the accepted 2"):
        check(plan | {"n_lin": 1})
    with pytest.raises(PolicyError, match="objective 'logistic_taylor' differs"):
        check(plan | {"objective": "logistic_taylor", "n_lin": 1})


# ------------------------------------------------------------ processes
def _three_classes(n, sizes, seed=0):
    """Blocks in [-1, 1] and integer labels 0, 1, 2 from a noisy softmax."""
    rng = np.random.default_rng(seed)
    blocks = [rng.uniform(-1, 1, (n, s)) for s in sizes]
    X = np.hstack(blocks)
    scores = X @ (3.0 * rng.normal(size=(3, X.shape[1]))).T + rng.gumbel(size=(n, 3))
    return blocks, X, np.argmax(scores, axis=1)


def _needs_network():
    pytest.importorskip("grpc")
    pytest.importorskip("cryptography")


def test_processes_release_the_in_process_multinomial_model(tmp_path):
    """Three classes over mutual TLS, one process per participant (bfv, dealer
    noise, random_state=0, as the binary end-to-end test): the model file is the
    in-process VerticalFMClassifier's, and loads as a fitted 3-class model."""
    _needs_network()
    pytest.importorskip("tenseal")
    import pandas as pd
    from sklearn.utils.validation import check_is_fitted

    from skdp.vertical import VerticalFMClassifier, load_model
    from tests.vertical.federated._harness import Deployment, launch, wait_all
    from tests.vertical.federated.test_runtime import PROCESS_TIMEOUT, _partition

    sizes = [2, 1, 2]
    blocks, X, y = _three_classes(200, sizes)
    assert set(y) == {0, 1, 2}
    dep = Deployment(
        tmp_path, blocks, y, backend="bfv", objective="logistic", classes=[0, 1, 2]
    )
    out = wait_all(launch(dep.write()), PROCESS_TIMEOUT)
    for name, (code, _, err) in out.items():
        assert code == 0, f"{name} exited {code}: {err[-2000:]}"
    ref = VerticalFMClassifier(
        epsilon=1.0,
        bounds_X=(-1.0, 1.0),
        partition=_partition(sizes),
        noise_generation="dealer",
        secure_backend="bfv",
        classes=[0, 1, 2],
        random_state=0,
    ).fit(X, y)
    model = load_model(tmp_path / "model")
    assert type(model) is VerticalFMClassifier
    check_is_fitted(model)
    assert model.coef_.shape == ref.coef_.shape == (3, 5)
    assert model.intercept_.shape == (3,)
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    np.testing.assert_array_equal(model.intercept_, ref.intercept_)
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
    assert model.classes == [0, 1, 2]  # declared: a clone refits on them
    np.testing.assert_array_equal(model.party_privacy_, ref.party_privacy_)
    assert model.privacy_spent_ == ref.privacy_spent_
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    np.testing.assert_array_equal(model.predict(frame), ref.predict(X))
    proba = model.predict_proba(frame)
    assert proba.shape == (200, 3)
    np.testing.assert_allclose(proba, ref.predict_proba(X), rtol=1e-12)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    meta = json.loads((tmp_path / "model.json").read_text())
    assert meta["classes"] == [0, 1, 2] and len(meta["intercept"]) == 3
    # every party received the released model from the protocol
    for name in dep.names:
        got = json.loads((tmp_path / f"{name}-out.json").read_text())
        np.testing.assert_array_equal(got["result"]["coef"], ref.coef_)


def _threads(tmp_path, edit):
    from tests.vertical.federated._harness import Deployment
    from tests.vertical.federated.test_runtime import _run_threads

    blocks, _, y = _three_classes(40, [1, 2])
    timeouts = {"startup": 10.0, "call": 20.0, "heartbeat": 0.5, "protocol": 60.0}
    dep = Deployment(
        tmp_path,
        blocks,
        y,
        objective="logistic",
        classes=[0, 1, 2],
        timeouts=timeouts,
    )
    edit(dep)
    return dep, _run_threads(dep)


def test_multinomial_plaintext_run_in_threads(tmp_path):
    """The default ``plaintext`` backend and the declared classes as strings of
    the integer labels: the release equals the in-process one."""
    _needs_network()
    from skdp.vertical import VerticalFMClassifier, load_model

    def edit(dep):
        dep.parties[0]["data"]["classes"] = ["0", "1", "2"]
        dep.server["model"]["classes"] = ["2", "1", "0"]

    dep, results = _threads(tmp_path, edit)
    for name, res in results.items():
        assert not isinstance(res, BaseException), (name, res)
    _, X, y = _three_classes(40, [1, 2])
    ref = VerticalFMClassifier(
        epsilon=1.0,
        bounds_X=(-1.0, 1.0),
        partition=[[0], [1, 2]],
        noise_generation="dealer",
        classes=["0", "1", "2"],
        random_state=0,
    ).fit(X, y.astype(str))
    model = load_model(tmp_path / "model")
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    np.testing.assert_array_equal(model.intercept_, ref.intercept_)
    np.testing.assert_array_equal(model.classes_, ["0", "1", "2"])


def test_multinomial_bottom_up_run_in_threads(tmp_path):
    """Bottom-up budgets with three classes: the release equals the in-process
    estimator's (dealer noise, same seed) and each party's level is the plan's."""
    _needs_network()
    from skdp.vertical import VerticalFMClassifier, load_model

    party_eps = [1.0, 0.8]
    pairs = [[0.0, 0.3], [0.3, 0.0]]

    def edit(dep):
        dep.server["model"].update(
            budget="bottom-up", party_epsilon=party_eps, pairwise_epsilon=pairs
        )

    dep, results = _threads(tmp_path, edit)
    for name, res in results.items():
        assert not isinstance(res, BaseException), (name, res)
    _, X, y = _three_classes(40, [1, 2])
    ref = VerticalFMClassifier(
        bounds_X=(-1.0, 1.0),
        partition=[[0], [1, 2]],
        budget="bottom-up",
        party_epsilon=party_eps,
        pairwise_epsilon=pairs,
        noise_generation="dealer",
        classes=[0, 1, 2],
        random_state=0,
    ).fit(X, y)
    model = load_model(tmp_path / "model")
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    np.testing.assert_array_equal(model.intercept_, ref.intercept_)
    np.testing.assert_array_equal(model.party_privacy_, ref.party_privacy_)
    assert np.all(model.party_privacy_ <= np.asarray(party_eps) + 1e-12)


@pytest.mark.parametrize(
    "where, value, refuser, cause",
    [
        (
            "server",
            [0, 1, 3],
            "org-0",
            "the server's model.classes [0, 1, 3] differ from this party's "
            "data.classes [0, 1, 2]",
        ),
        (
            "policy",
            ["linear", "logistic"],
            "org-1",
            "objective 'multinomial' is not in the accepted ['linear', 'logistic']",
        ),
        ("binary", None, "org-0", "must declare the same model.classes"),
    ],
)
def test_multinomial_request_refused(tmp_path, where, value, refuser, cause):
    _needs_network()
    from tests.vertical.federated.test_runtime import _all_failed

    def edit(dep):
        if where == "server":
            dep.server["model"]["classes"] = value
        elif where == "policy":
            dep.parties[1]["policy"]["objectives"] = value
        else:
            del dep.server["model"]["classes"]

    dep, results = _threads(tmp_path, edit)
    _all_failed(results, dep)
    # the refusal, or the refuser's abort that follows it, whichever the
    # server reads first: both name the refuser and the cause
    error = str(results["server"])
    assert error.startswith((f"{refuser} refused the request", f"{refuser} aborted"))
    assert cause in error


def _merged(base, snippet):
    """``base`` TOML with the tables of ``snippet`` laid over it."""
    import tomllib

    table = tomllib.loads(base)
    for key, value in tomllib.loads(snippet).items():
        if isinstance(value, dict):
            table[key] = {**table.get(key, {}), **value}
        else:
            table[key] = value
    return table


def test_the_guide_multinomial_configs_are_valid(tmp_path):
    """The user guide's 3-class snippets, laid over its full configs, parse; the
    label party accepts the server's request."""
    from tests.vertical.federated.test_config import _doc_blocks

    blocks = _doc_blocks()
    party = next(b for b in blocks if b.startswith('name = "bank"'))
    server = next(b for b in blocks if b.startswith('name = "server"'))
    party_snippet = next(b for b in blocks if 'label = "tier"' in b)
    server_snippet = next(b for b in blocks if b.startswith("[model]"))
    make_certs(tmp_path / "certs", ["bank", "server"])
    (tmp_path / "bank.csv").write_text("customer_id,age,income,tier\n")
    p = load_party_config(
        write_toml(tmp_path / "party.toml", _merged(party, party_snippet))
    )
    s = load_server_config(
        write_toml(tmp_path / "server.toml", _merged(server, server_snippet))
    )
    assert p.classes == ("bronze", "gold", "silver") and p.label == "tier"
    assert s.classes == p.classes and s.n_classes == 3
    request = s.request()
    p.policy.check(request, n_samples=p.policy.min_samples)
    check_label_request(p, request)


def test_server_checks_the_label_partys_classes(files):
    """A label party that accepts with classes other than the request's (one
    that does not follow the protocol) stops the server before any plan."""
    from skdp.vertical.federated._roles import server_roles

    go = {"": {"partition": [[0, 1], [2]], "n_features": 3}}
    with pytest.raises(FederatedError, match="not the declared model.classes"):
        server_roles(
            _server(files, classes=CLASSES), {"bank": {"classes": [0, 1]}} | go
        )
    with pytest.raises(FederatedError, match="but the request is binary"):
        server_roles(_server(files), {"bank": {"classes": CLASSES}} | go)
    roles = server_roles(
        _server(files, classes=CLASSES, backend="plaintext"),
        {"bank": {"classes": list(reversed(CLASSES))}} | go,
    )
    server = roles["server"]
    assert server.objective == "multinomial_taylor" and server.n_classes == 3
