"""The vertical protocol's roles as the federated runtime hosts them.

:func:`party_role` builds a party's :class:`~skdp.vertical._party.PartyRole`
from its config, the accepted request and its data; :func:`server_roles` the
server's :class:`~skdp.vertical._server.ServerRole` (and the noise dealer for
``noise_generation = "dealer"``); :func:`model_file` turns the server's release
into the model file's contents. A party's role checks the plan it receives
against the request it accepted and its policy (:func:`plan_policy`).

Classes (``objective = "logistic"``) are declared in config, never taken from the
data when more than two: the label party's ``data.classes`` and, for more than
two, the server's ``model.classes`` too. The request carries the server's
classes, so every party knows before it accepts whether the run is binary or
multinomial (its policy names the latter ``"multinomial"``), and the label party
refuses a request whose classes are not its own (:func:`check_label_request`).
No label value ever leaves the label party: it checks its labels against the
declared classes itself, and its error names the config key, not the values.
"""

import math

import numpy as np

from skdp.vertical.federated._config import PolicyError, effective_objective
from skdp.vertical.federated._errors import DataError
from skdp.vertical.federated._node import FederatedError

__all__ = [
    "check_label_request",
    "encode_labels",
    "label_info",
    "model_file",
    "party_role",
    "plan_policy",
    "server_roles",
]


def label_info(config, data):
    if config.label is None:
        return {}
    if config.label_bounds is not None:
        return {"label_bounds": list(config.label_bounds)}
    classes = _classes(config, data)
    return {"classes": [c.item() if hasattr(c, "item") else c for c in classes]}


def _comparable(y, classes):
    """Labels comparable with the declared classes: a file's integer labels
    match declared strings ``"1"``, ``"2"``, ... as their text."""
    y = np.asarray(y)
    if classes.dtype.kind == "U" and y.dtype.kind != "U":
        y = y.astype(str)
    return y


def _classes(config, data, warn=True):
    """The sorted classes: declared in the config, else (two only, with a
    warning) the data's.

    An undeclared label is an error naming the key ``data.classes``; the
    message omits the label values, since every participant receives it.
    """
    if config.classes is not None:
        classes = np.unique(np.asarray(config.classes))
        y = _comparable(data.y, classes)
        if y.dtype.kind != classes.dtype.kind or not np.isin(y, classes).all():
            text = (
                f"{config.name}: the label column {config.label!r} holds labels "
                f"that are not in data.classes {classes.tolist()} (values not "
                "shown: this message reaches every participant); declare every "
                "class in data.classes."
            )
            raise DataError(text, text)
        return classes
    from skdp.utils.privacy_warnings import warn_privacy_leak

    classes = np.unique(data.y)
    if classes.size != 2:
        text = (
            f"{config.name}: data.classes is not declared and the label column "
            f"{config.label!r} does not hold exactly 2 classes; declare "
            "data.classes (more than two run the multinomial objective and must "
            "be declared: classes are never taken from the data)."
        )
        raise DataError(text, text)
    if warn:
        warn_privacy_leak(
            f"{config.name}: data.classes was not declared, so the two labels are "
            "taken from the data: which labels occur leaks. Declare data.classes."
        )
    return classes


def _same_classes(a, b):
    return (
        isinstance(a, list | tuple)
        and isinstance(b, list | tuple)
        and len(a) == len(b)
        and set(a) == set(b)
    )


def check_label_request(config, request):
    """The label party accepts a logistic request only for its declared classes.

    The request carries the server's ``model.classes`` (None: a binary run with
    the label party's classes). Raises :class:`PolicyError` (the party refuses
    the request, naming both config keys) when they differ, when the label
    party declared none, or when it declared more than two and the request is
    binary.
    """
    if config.label is None or request.get("objective") != "logistic":
        return
    wanted, mine = request.get("classes"), config.classes
    if wanted is None:
        if mine is not None and len(mine) > 2:
            raise PolicyError(
                f"{config.name} refuses the request: data.classes declares "
                f"{len(mine)} classes {list(mine)} but the request is binary; the "
                "server config must declare the same model.classes to run the "
                "multinomial objective."
            )
        return
    if mine is None:
        raise PolicyError(
            f"{config.name} refuses the request: the server declares model.classes "
            f"{wanted}; declare the same data.classes in this party's config."
        )
    if not _same_classes(wanted, list(mine)):
        raise PolicyError(
            f"{config.name} refuses the request: the server's model.classes "
            f"{wanted} differ from this party's data.classes {list(mine)}."
        )


def encode_labels(config, request, data):
    """The label party's labels as its role takes them: numbers (linear), 0/1
    for ``classes[1]`` (two classes) or the one-hot of the first ``C - 1``
    sorted classes (multinomial), every label checked against ``data.classes``."""
    y = np.asarray(data.y)
    objective = effective_objective(request["objective"], request.get("classes"))
    if objective == "linear":
        return y
    classes = _classes(config, data, warn=False)  # warned at accept
    y = _comparable(y, classes)
    if objective == "logistic":
        return (y == classes[1]).astype(np.float64)
    return (y[:, None] == classes[None, :-1]).astype(np.float64)


_OBJECTIVE = {
    "linear": "squared",
    "logistic": "logistic_taylor",
    "multinomial": "multinomial_taylor",
}


def _n_lin(request):
    """Linear columns per coefficient row the request implies (``C - 1``)."""
    classes = request.get("classes")
    if effective_objective(request["objective"], classes) == "multinomial":
        return len(classes) - 1
    return 1


def plan_policy(config, request):
    """``policy(plan)`` for the party role: the plan the server actually sends
    must be the request this party accepted, and within its policy."""
    policy = config.policy
    objective = effective_objective(request["objective"], request.get("classes"))

    def check(plan):
        privacy = plan.get("privacy", {})
        problems = []
        for key, got, want in [
            ("objective", plan.get("objective"), _OBJECTIVE[objective]),
            ("n_lin", plan.get("n_lin", 1), _n_lin(request)),
            ("backend", plan.get("backend"), request["backend"]),
            (
                "noise_generation",
                plan.get("noise_generation"),
                request["noise_generation"],
            ),
            ("budget", privacy.get("budget"), request["budget"]),
            ("mechanism", privacy.get("mechanism"), request["mechanism"]),
        ]:
            if got != want:
                problems.append(f"{key} {got!r} differs from the accepted {want!r}")
        if request["budget"] == "top-down":
            eps = float(privacy.get("epsilon", math.inf))
            if not eps <= min(policy.max_epsilon, float(request["epsilon"])):
                problems.append(f"epsilon {eps:g} exceeds the accepted")
            delta = float(privacy.get("delta", 1.0))
            if not delta <= policy.max_delta:
                problems.append(
                    f"delta {delta:g} exceeds max_delta {policy.max_delta:g}"
                )
            for g in plan.get("groups", []):
                if not float(g["mechanism"]["epsilon"]) <= policy.max_epsilon:
                    problems.append(f"group {g['name']} has epsilon above max_epsilon")
        if int(plan.get("n_samples", 0)) < policy.min_samples:
            problems.append(f"n_samples below min_samples {policy.min_samples}")
        if problems:
            raise PolicyError(
                f"{config.name} refuses the plan: " + "; ".join(problems) + "."
            )

    return check


def party_role(config, request, data, index):
    from skdp.vertical._party import PartyRole

    columns = request["partition"][index]
    lower = upper = None
    if config.bounds:
        lower = [config.bounds[f][0] for f in config.features]
        upper = [config.bounds[f][1] for f in config.features]
    labels = None
    if config.label is not None:
        labels = encode_labels(config, request, data)
    budget = None
    if request["budget"] == "bottom-up":
        budget = [request["party_epsilon"][index], *request["pairwise_epsilon"][index]]
    return PartyRole(
        index,
        columns,
        data.X,
        n_features=request["n_features"],
        lower=lower,
        upper=upper,
        data_norm=config.data_norm,
        labels=labels,
        y_bounds=config.label_bounds if config.label is not None else None,
        budget=budget,
        rng=np.random.default_rng(),  # this party's own entropy, no one else's
        policy=plan_policy(config, request),
        copy=False,
    )


def server_roles(config, accepted):
    from skdp.utils import noise_generator
    from skdp.vertical._dealer import DealerRole
    from skdp.vertical._messages import DEALER, SERVER
    from skdp.vertical._server import ServerRole

    names = [p.name for p in config.parties]
    if config.objective == "logistic":
        # the label party checked the request's classes; a mismatch here is a
        # label party that does not follow the protocol
        sent = accepted[config.label_party].get("classes")
        declared = config.classes
        if declared is not None and not _same_classes(sent, list(declared)):
            raise FederatedError(
                f"{config.label_party} accepted with classes {sent}, not the "
                f"declared model.classes {list(declared)}."
            )
        if declared is None and not (_same_classes(sent, sent) and len(sent) == 2):
            raise FederatedError(
                f"{config.label_party} accepted with classes {sent}, but the "
                "request is binary (the server config declares no model.classes)."
            )
    objective = effective_objective(config.objective, config.classes)
    roles = {
        SERVER: ServerRole(
            objective=_OBJECTIVE[objective],
            partition=accepted[""]["partition"],
            label_party=names.index(config.label_party),
            fit_intercept=config.fit_intercept,
            epsilon=config.epsilon,
            delta=config.delta,
            mechanism=config.mechanism,
            budget=config.budget,
            linear_weight=config.linear_weight,
            postprocessing=config.postprocessing,
            backend=config.backend,
            noise_generation=config.noise_generation,
            n_classes=config.n_classes,
            party_names=names,
        )
    }
    if config.noise_generation == "dealer":
        # the dealer draws as the in-process estimator does for random_state
        roles[DEALER] = DealerRole(noise_generator(config.random_state))
    return roles


def model_file(config, accepted, results):
    """The server's release as a model file (see :mod:`._model`)."""
    from skdp.vertical._messages import SERVER

    res = results[SERVER]
    names = [p.name for p in config.parties]
    label = accepted[config.label_party]
    domain = res["domain"]
    privacy = dict(res["privacy"])
    features = [f for n in names for f in accepted[n].get("features", [])]
    params = {
        "epsilon": config.epsilon,
        "delta": config.delta,
        "mechanism": config.mechanism,
        "fit_intercept": config.fit_intercept,
        "linear_weight": res["linear_weight"],
        "postprocessing": config.postprocessing,
        "partition": [[int(c) for c in cols] for cols in res["partition"]],
        "label_party": int(res["label_party"]),
        "budget": config.budget,
        **config.epsilon_lists(),
        "secure_backend": config.backend,
        "noise_generation": config.noise_generation,
        "random_state": config.random_state,
        "data_norm": domain["data_norm"],
    }
    model = {
        "estimator": (
            "VerticalFMRegressor"
            if config.objective == "linear"
            else "VerticalFMClassifier"
        ),
        "coef": res["coef"],
        "intercept": res["intercept"],
        "n_features_in": len(features),
        "feature_names": features,
        "parties": names,
        "partition": params["partition"],
        "label_party": params["label_party"],
        "params": params,
        "privacy_spent": {"epsilon": privacy["epsilon"], "delta": privacy["delta"]},
        "privacy": privacy,
        "party_privacy": res["party_privacy"],
        "group_epsilon": res["group_epsilon"],
        "sensitivity": res["sensitivity"],
        "noise_std": res["noise_std"],
        "n_samples": res["n_samples"],
        "data_norm": domain["data_norm"],
        "intercept_scaling": domain["intercept_scaling"],
        "bounds_lower": domain["lower"],
        "bounds_upper": domain["upper"],
        "offset_X": domain.get("x_offset"),
        "offset_y": domain.get("y_offset", 0.0),
    }
    if config.objective == "linear":
        model["bounds_y"] = domain["y_bounds"]
        params["bounds_y"] = domain["y_bounds"]
    else:
        classes = label.get("classes")
        if config.classes is not None:  # the declared ones, sorted as fitted
            classes = np.unique(np.asarray(config.classes)).tolist()
        model["classes"] = classes
        params["classes"] = classes
    return model
