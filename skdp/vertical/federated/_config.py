"""Party and server configurations (TOML) and a party's policy.

Every key is checked when the file is read, before any protocol step; a bad
value raises :class:`ConfigError` naming the file, the key and what was
expected. Each table declares its keys (``*_KEYS`` in :mod:`._config_reader`):
an unknown key is reported first, with the closest known key as a suggestion,
so a misspelled key is never reported as the right key missing. Beyond types and
ranges, loading checks what the run would otherwise find late:

- the TLS files: certificates where certificates belong and an unencrypted
  private key that belongs to ``tls.cert`` (:func:`~._tls.read_tls_material`);
- the server's model: the estimator's own parameter constraints
  (:func:`~._model.estimator_param_problem`: ``postprocessing``,
  ``random_state``, a ``gaussian`` mechanism needs ``0 < delta < 1``) and the
  bottom-up budgets (:func:`skdp.vertical._plan.check_public_parameters`);
- output paths: the nearest existing directory above them must be a writable
  directory (not a regular file; a probe file is created, written and removed
  there, since ``os.access`` says yes to root even under ``/proc``) with
  ``MIN_FREE_BYTES`` (16 MiB) free, and an existing output must be a file;
- the data file must be a regular file.

The listen address is bound when the run starts, also before any protocol
step (a port in use is a :class:`ConfigError` too). Relative paths are
relative to the config file. See ``doc/user_guide/federated.rst`` for an
example of each file.

A schema library was not worth a dependency here: the checks that matter cross
keys and touch files (TLS material, paths, budgets), and the estimator's own
constraints already encode the model's parameters; a declared key set per table
plus these checks is shorter than a schema with the same validators.
"""

from dataclasses import dataclass, field
from pathlib import Path

from skdp.vertical.federated._config_reader import (
    DATA_KEYS,
    DOMAIN_KEYS,
    MODEL_KEYS,
    PARTY_ENTRY_KEYS,
    PARTY_KEYS,
    POLICY_KEYS,
    SERVER_KEYS,
    TIMEOUT_KEYS,
    TLS_KEYS,
    ConfigError,
    Reader,
    is_address,
    is_number,
    is_positive,
    load_toml,
    read_bound,
    read_strings,
    suggest,
)

__all__ = [
    "ConfigError",
    "PartyConfig",
    "Policy",
    "PolicyError",
    "ServerConfig",
    "effective_objective",
    "load_party_config",
    "load_server_config",
]

# what the server config asks for; "logistic" with more than two declared
# classes runs the multinomial objective, which a party's policy names
# "multinomial" (a party that lists its objectives must opt in to it)
OBJECTIVES = ("linear", "logistic")
POLICY_OBJECTIVES = ("linear", "logistic", "multinomial")
BACKENDS = ("plaintext", "bfv")
NOISE_GENERATION = ("threshold", "distributed", "dealer")


def effective_objective(objective, classes=None):
    """The objective a request runs: ``"multinomial"`` for ``"logistic"`` with
    more than two classes, else ``objective``.

    Examples
    --------
    >>> effective_objective("logistic", ["a", "b", "c"])
    'multinomial'
    >>> effective_objective("logistic", [0, 1])
    'logistic'
    """
    # a request off the wire may carry anything: only a list counts
    if objective == "logistic" and isinstance(classes, list | tuple):
        if len(classes) > 2:
            return "multinomial"
    return objective


def _class_labels(v):
    """Two or more distinct labels, all integers or all strings."""
    ints = all(isinstance(c, int) and not isinstance(c, bool) for c in v)
    strs = all(isinstance(c, str) for c in v)
    return len(v) >= 2 and len(set(v)) == len(v) and (ints or strs)


_CLASSES_EXPECTED = "two or more distinct class labels (all integers or all strings)"


class PolicyError(RuntimeError):
    """A request falls outside a party's policy."""


@dataclass(frozen=True)
class TLSConfig:
    ca_cert: Path
    cert: Path
    key: Path

    def read(self):
        """``(ca, cert, key)`` as PEM bytes, checked (see :mod:`._tls`)."""
        from skdp.vertical.federated._tls import read_tls_material

        return read_tls_material(self.ca_cert, self.cert, self.key)


@dataclass(frozen=True)
class Timeouts:
    """Seconds (``[timeouts]`` in either config).

    ``call``: deadline of one call (plus 1 s per 5 MB sent), and how long a
    connection may go without acknowledging a keepalive ping (a frozen peer is
    noticed within ``heartbeat + call``); ``startup``: until every peer answers
    (and how long a participant that failed early stays reachable to tell
    them); ``protocol``: the whole run; ``heartbeat``: interval of the
    liveness pings and of the connections' keepalive pings (at least 1 s);
    ``handshake``: how long an incoming connection may take to complete its TLS
    handshake before the endpoint closes it (bounds what a stranger without a
    certificate can hold, see :mod:`._transport`).
    """

    call: float = 120.0
    startup: float = 60.0
    protocol: float = 3600.0
    heartbeat: float = 2.0
    handshake: float = 10.0


@dataclass(frozen=True)
class Policy:
    """What a party accepts; :meth:`check` refuses anything else.

    Parameters
    ----------
    max_epsilon : float
        Largest epsilon it accepts (top-down: the release's epsilon; bottom-up:
        its own total ``eps^(k)``).
    max_delta : float
    backends : tuple of str
    objectives : tuple of str
        Of ``"linear"``, ``"logistic"`` (two classes) and ``"multinomial"``
        (``"logistic"`` with more than two classes: the label party's one-hot
        label columns reach the label x feature products; listed separately so
        that a party accepting a binary release is not silently in a C-class
        one). Default: all three.
    min_samples : int
    noise_generation : tuple of str
        ``"dealer"`` means a noise dealer knows all the noise: accept it only if
        the dealer is trusted not to collude with the server.
    """

    max_epsilon: float
    max_delta: float = 0.0
    backends: tuple = ("bfv",)
    objectives: tuple = POLICY_OBJECTIVES
    min_samples: int = 1
    noise_generation: tuple = ("threshold", "distributed")

    def check(self, request, n_samples, own_epsilon=None):
        """Raise :class:`PolicyError` unless ``request`` is acceptable."""
        eps = float(request["epsilon"]) if own_epsilon is None else float(own_epsilon)
        problems = []
        if not eps <= self.max_epsilon:
            problems.append(f"epsilon {eps:g} exceeds max_epsilon {self.max_epsilon:g}")
        delta = float(request.get("delta", 0.0))
        if not delta <= self.max_delta:
            problems.append(f"delta {delta:g} exceeds max_delta {self.max_delta:g}")
        objective = effective_objective(
            request.get("objective"), request.get("classes")
        )
        for key, got, allowed in [
            ("backend", request.get("backend"), self.backends),
            ("objective", objective, self.objectives),
            (
                "noise_generation",
                request.get("noise_generation"),
                self.noise_generation,
            ),
        ]:
            if got not in allowed:
                problems.append(f"{key} {got!r} is not in the accepted {list(allowed)}")
        if n_samples < self.min_samples:
            problems.append(
                f"n_samples {n_samples} is below min_samples {self.min_samples}"
            )
        if problems:
            raise PolicyError("request refused by policy: " + "; ".join(problems) + ".")


@dataclass(frozen=True)
class PartyConfig:
    """A party's configuration (see :func:`load_party_config`)."""

    name: str
    listen: str
    peers: dict  # name -> address (the server and the other parties)
    tls: TLSConfig
    data_path: Path
    id_column: str
    features: tuple
    label: str | None
    label_bounds: tuple | None
    classes: tuple | None
    bounds: dict  # feature -> (lower, upper)
    data_norm: float | None
    policy: Policy
    timeouts: Timeouts = field(default_factory=Timeouts)
    server: str = "server"
    output: Path | None = None
    max_message_bytes: int = 2**30
    source: str = "<dict>"


@dataclass(frozen=True)
class PartySpec:
    name: str
    address: str


@dataclass(frozen=True)
class ServerConfig:
    """The server's configuration (see :func:`load_server_config`)."""

    name: str
    listen: str
    parties: tuple  # of PartySpec, in protocol order
    label_party: str
    tls: TLSConfig
    objective: str
    epsilon: float
    delta: float
    mechanism: str
    budget: str
    party_epsilon: tuple | None
    pairwise_epsilon: tuple | None
    backend: str
    noise_generation: str
    fit_intercept: bool
    linear_weight: object
    postprocessing: str
    random_state: int | None
    output: Path
    timeouts: Timeouts = field(default_factory=Timeouts)
    max_message_bytes: int = 2**30
    source: str = "<dict>"
    classes: tuple | None = None  # logistic: the label party's declared classes

    @property
    def n_classes(self):
        """``C`` of the declared classes (2 when none are declared)."""
        return 2 if self.classes is None else len(self.classes)

    def epsilon_lists(self):
        """The bottom-up budgets as plain lists (None when not set)."""
        pairs = self.pairwise_epsilon
        return {
            "party_epsilon": list(self.party_epsilon) if self.party_epsilon else None,
            "pairwise_epsilon": [list(r) for r in pairs] if pairs else None,
        }

    def request(self):
        """What the server asks every party to accept."""
        return {
            "objective": self.objective,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "mechanism": self.mechanism,
            "budget": self.budget,
            **self.epsilon_lists(),
            "backend": self.backend,
            "noise_generation": self.noise_generation,
            "fit_intercept": self.fit_intercept,
            "classes": None if self.classes is None else list(self.classes),
            "parties": [p.name for p in self.parties],
            "label_party": self.label_party,
        }


# ---------------------------------------------------------------- reading
def _tls(reader, base):
    from skdp.vertical.federated._tls import TLSMaterialError

    tls = reader.sub("tls", keys=TLS_KEYS)
    out = TLSConfig(
        tls.path("ca_cert", base), tls.path("cert", base), tls.path("key", base)
    )
    tls.done()
    try:
        out.read()
    except TLSMaterialError as exc:
        tls._fail(exc.key, str(exc), str(getattr(out, exc.key)))
    return out


def _timeouts(reader):
    t = reader.sub("timeouts", required=False, keys=TIMEOUT_KEYS)
    kw = {
        k: t.get(k, float, getattr(Timeouts, k), is_positive, "a positive number")
        for k in ("call", "startup", "protocol", "heartbeat", "handshake")
    }
    t.done()
    return Timeouts(**kw)


def load_party_config(path):
    """Read and check a party's TOML config; return a :class:`PartyConfig`.

    Raises :class:`ConfigError` naming the file and the key for a missing key, a
    wrong type or value, an unknown key or a missing file.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from skdp.vertical.federated._certs import init_ca, issue
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = init_ca(d), issue(d, "bank")  # ca.pem, bank.pem, bank.key
    >>> _ = (d / "bank.csv").write_text("")
    >>> _ = (d / "party.toml").write_text('''
    ... name = "bank"
    ... listen = "0.0.0.0:7001"
    ... [tls]
    ... ca_cert = "ca.pem"
    ... cert = "bank.pem"
    ... key = "bank.key"
    ... [peers]
    ... server = "coordinator.example.org:7000"
    ... [data]
    ... path = "bank.csv"
    ... id_column = "id"
    ... features = ["age"]
    ... [domain]
    ... bounds = { age = [0, 1] }
    ... [policy]
    ... max_epsilon = 1.0
    ... ''')
    >>> load_party_config(d / "party.toml").policy.max_epsilon
    1.0
    """
    table, base, source = load_toml(path)
    return party_config_from_dict(table, base, source)


def party_config_from_dict(table, base=Path("."), source="<dict>"):
    r = Reader(table, source, keys=PARTY_KEYS)
    name = r.get("name", str)
    listen = r.get("listen", str, check=is_address, expected="'host:port'")
    server = r.get("server", str, default="server")
    output = r.output("output", base, [""], default=None)
    max_mb = r.get("max_message_mb", int, 1024, lambda v: 0 < v < 2048, "in 1..2047")
    peers_r = r.sub("peers")
    peers = {}
    for peer in list(peers_r.table):
        peers[peer] = peers_r.get(peer, str, check=is_address, expected="'host:port'")
    peers_r.done()
    if server not in peers:
        r._fail(
            "peers",
            f"must give the address of the server {server!r}" + suggest(server, peers),
            peers,
        )
    if name in peers:
        r._fail(
            "peers",
            "must not list this party itself (a party's peers are the server "
            "and the other parties)",
            name,
        )
    tls = _tls(r, base)
    data = r.sub("data", keys=DATA_KEYS)
    data_path = data.path("path", base)
    if data_path.suffix.lower() not in (".csv", ".parquet", ".pq"):
        data._fail("path", "must be a .csv or .parquet file", str(data_path))
    id_column = data.get("id_column", str)
    features = data.get(
        "features", list, check=lambda v: len(v) > 0, expected="non-empty"
    )
    if not all(isinstance(f, str) for f in features) or len(set(features)) != len(
        features
    ):
        data._fail("features", "must be distinct column names", features)
    label = data.get("label", str, default=None)
    label_bounds = None
    if "label_bounds" in data.table:
        label_bounds = read_bound(data, "label_bounds", data.get("label_bounds", list))
    if label is None and label_bounds is not None:
        data._fail("label_bounds", "is only for the label party (set data.label)")
    classes = data.get("classes", list, None, _class_labels, _CLASSES_EXPECTED)
    if label is None and classes is not None:
        data._fail("classes", "is only for the label party (set data.label)")
    if id_column in features or (label is not None and label in features + [id_column]):
        data._fail("features", "must not contain the id or label column", features)
    data.done()
    dom = r.sub("domain", keys=DOMAIN_KEYS)
    bounds = {}
    if "bounds" in dom.table:
        b = dom.sub("bounds")
        for col in list(b.table):
            if col not in features:
                b._fail(
                    col,
                    f"is not one of data.features {features}" + suggest(col, features),
                )
            bounds[col] = read_bound(b, col, b.get(col, list))
        b.done()
    data_norm = dom.get("data_norm", float, None, is_positive, "a positive number")
    dom.done()
    missing = [f for f in features if f not in bounds]
    if data_norm is None and missing:
        r._fail(
            "domain",
            "must bound every feature (domain.bounds) or the row norm "
            f"(domain.data_norm); unbounded: {missing}",
        )
    pol = r.sub("policy", keys=POLICY_KEYS)
    policy = Policy(
        max_epsilon=pol.get("max_epsilon", float, check=is_positive, expected="> 0"),
        max_delta=pol.get("max_delta", float, 0.0, lambda v: 0 <= v < 1, "in [0, 1)"),
        backends=read_strings(pol, "backends", BACKENDS, ("bfv",)),
        objectives=read_strings(
            pol, "objectives", POLICY_OBJECTIVES, POLICY_OBJECTIVES
        ),
        min_samples=pol.get("min_samples", int, 1, lambda v: v >= 1, ">= 1"),
        noise_generation=read_strings(
            pol, "noise_generation", NOISE_GENERATION, ("threshold", "distributed")
        ),
    )
    pol.done()
    timeouts = _timeouts(r)
    r.done()
    return PartyConfig(
        name=name,
        listen=listen,
        peers=peers,
        tls=tls,
        data_path=data_path,
        id_column=id_column,
        features=tuple(features),
        label=label,
        label_bounds=label_bounds,
        classes=None if classes is None else tuple(classes),
        bounds=bounds,
        data_norm=data_norm,
        policy=policy,
        timeouts=timeouts,
        server=server,
        output=output,
        max_message_bytes=max_mb * 2**20,
        source=source,
    )


def load_server_config(path):
    """Read and check the server's TOML config; return a :class:`ServerConfig`.

    Raises :class:`ConfigError` naming the file and the key (see
    :func:`load_party_config` for an example).
    """
    table, base, source = load_toml(path)
    return server_config_from_dict(table, base, source)


def server_config_from_dict(table, base=Path("."), source="<dict>"):
    r = Reader(table, source, keys=SERVER_KEYS)
    name = r.get("name", str, default="server")
    listen = r.get("listen", str, check=is_address, expected="'host:port'")
    output = r.output("output", base, [".npz", ".json"])
    max_mb = r.get("max_message_mb", int, 1024, lambda v: 0 < v < 2048, "in 1..2047")
    tls = _tls(r, base)
    raw = r.get("parties", list, check=lambda v: len(v) >= 1, expected="non-empty")
    parties, label = [], []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            r._fail(f"parties[{i}]", "must be a table", entry)
        p = Reader(entry, source, f"parties[{i}].", PARTY_ENTRY_KEYS)
        spec = PartySpec(
            p.get("name", str),
            p.get("address", str, check=is_address, expected="'host:port'"),
        )
        if p.get("label", bool, False):
            label.append(spec.name)
        p.done()
        parties.append(spec)
    names = [p.name for p in parties]
    if len(set(names)) != len(names) or name in names:
        r._fail("parties", "must have distinct names, other than the server's", names)
    if len(label) != 1:
        r._fail("parties", "must mark exactly one party with label = true", label)
    m = r.sub("model", keys=MODEL_KEYS)
    objective = m.get(
        "objective", str, check=lambda v: v in OBJECTIVES, expected=str(OBJECTIVES)
    )
    budget = m.get(
        "budget", str, "top-down", lambda v: v in ("top-down", "bottom-up"),
        "'top-down' or 'bottom-up'",
    )  # fmt: skip
    epsilon = m.get("epsilon", float, 1.0, is_positive, "> 0")
    delta = m.get("delta", float, 0.0, lambda v: 0 <= v < 1, "in [0, 1)")
    party_eps = m.get("party_epsilon", list, None)
    pair_eps = m.get("pairwise_epsilon", list, None)
    if budget == "bottom-up" and (party_eps is None or pair_eps is None):
        m._fail(
            "budget", "'bottom-up' needs model.party_epsilon and model.pairwise_epsilon"
        )
    if party_eps is not None and (
        len(party_eps) != len(parties) or not all(map(is_number, party_eps))
    ):
        m._fail("party_epsilon", f"must hold one number per party ({len(parties)})")
    if pair_eps is not None and (
        len(pair_eps) != len(parties)
        or not all(
            isinstance(row, list)
            and len(row) == len(parties)
            and all(map(is_number, row))
            for row in pair_eps
        )
    ):
        m._fail(
            "pairwise_epsilon",
            f"must be a {len(parties)} x {len(parties)} matrix of numbers",
        )
    classes = m.get("classes", list, None, _class_labels, _CLASSES_EXPECTED)
    if classes is not None and objective != "logistic":
        m._fail("classes", "is only for objective = 'logistic'", classes)
    config = ServerConfig(
        name=name,
        listen=listen,
        parties=tuple(parties),
        label_party=label[0],
        tls=tls,
        objective=objective,
        epsilon=epsilon,
        delta=delta,
        mechanism=m.get(
            "mechanism",
            str,
            "laplace",
            lambda v: v in ("laplace", "gaussian"),
            "'laplace' or 'gaussian'",
        ),  # fmt: skip
        budget=budget,
        party_epsilon=tuple(float(v) for v in party_eps) if party_eps else None,
        pairwise_epsilon=(
            tuple(tuple(float(v) for v in row) for row in pair_eps)
            if pair_eps
            else None
        ),
        backend=m.get("backend", str, "bfv", lambda v: v in BACKENDS, str(BACKENDS)),
        noise_generation=m.get(
            "noise_generation",
            str,
            "threshold",
            lambda v: v in NOISE_GENERATION,
            str(NOISE_GENERATION),
        ),  # fmt: skip
        fit_intercept=m.get("fit_intercept", bool, True),
        linear_weight=m.get(
            "linear_weight",
            (str, float),
            "auto",
            lambda v: v == "auto" or (isinstance(v, float) and is_positive(v)),
            "'auto' or a positive number",
        ),  # fmt: skip
        # the in-process estimators' defaults: "average" for least squares
        postprocessing=m.get(
            "postprocessing", str, "average" if objective == "linear" else "ridge"
        ),
        random_state=m.get("random_state", int, None),
        classes=None if classes is None else tuple(classes),
        output=output,
        timeouts=_timeouts(r),
        max_message_bytes=max_mb * 2**20,
        source=source,
    )
    m.done()
    r.done()
    _check_model(m, config)
    return config


def _check_model(m, config):
    """``[model]`` within the estimator's own parameter constraints, and its
    budgets consistent (the checks the server's role would make too late)."""
    from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor
    from skdp.vertical._plan import check_public_parameters
    from skdp.vertical.federated._model import estimator_param_problem

    cls = VerticalFMRegressor if config.objective == "linear" else VerticalFMClassifier
    keys = {"secure_backend": "backend"}  # estimator parameter -> config key
    params = {
        "epsilon": config.epsilon,
        "delta": config.delta,
        "mechanism": config.mechanism,
        "budget": config.budget,
        "secure_backend": config.backend,
        "noise_generation": config.noise_generation,
        "fit_intercept": config.fit_intercept,
        "linear_weight": config.linear_weight,
        "postprocessing": config.postprocessing,
        "random_state": config.random_state,
    }
    problem = estimator_param_problem(cls, params)
    if problem is not None:
        m._fail(keys.get(problem[0], problem[0]), problem[1])
    try:
        check_public_parameters(
            budget=config.budget,
            mechanism=config.mechanism,
            noise_generation=config.noise_generation,
            party_epsilon=config.party_epsilon,
            pairwise_epsilon=config.pairwise_epsilon,
            n_parties=len(config.parties),
        )
    except ValueError as exc:
        raise ConfigError(
            f"{config.source}: keys 'model.budget', 'model.mechanism', "
            f"'model.party_epsilon', 'model.pairwise_epsilon': {exc}"
        ) from None
