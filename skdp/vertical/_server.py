"""The server of the vertical protocol as a state machine (:class:`ServerRole`).

The server holds no data. From the public parameters and the parties'
declarations it makes the plan (the declared domain, the coefficient groups and
their mechanisms) and the backend's keys, sends every party its part of the plan
and the public context, collects the noisy single-party coefficients and
decrypts the noisy cross sums, post-processes and solves the noisy quadratic
with the functional-mechanism core, and sends the released model to every
party.
"""

import numpy as np

from skdp._fm import (
    centred_domain,
    objective_constants,
    solve_release,
    symmetric_from_triu,
)
from skdp._fm.multinomial import solve_multinomial
from skdp.vertical._checks import check_payload_array
from skdp.vertical._messages import DEALER, SERVER, Role, party_name
from skdp.vertical._plan import (
    assemble_domain,
    check_bottom_up,
    check_public_parameters,
    group_key,
    group_name,
    make_plan,
    round_to_lattice,
    triu_position,
)
from skdp.vertical._secure import make_key_holder

__all__ = ["ServerRole", "threat_model"]


def threat_model(noise_generation, backend):
    """Against whom ``party_privacy`` holds: ``{adversary: statement}``.

    Adversaries are honest-but-curious: they follow the protocol and pool what
    they see. "holds" means that the columns of every party outside the
    adversary (and the labels, if the label party is outside) enjoy that party's
    ``party_privacy`` epsilon. See the user guide's threat-model table.
    """
    coalition = {
        "threshold": "holds for every party outside the coalition: each cross "
        "coefficient carries a full-noise share from each party of its pair",
        "distributed": "weaker: a cross coefficient of a coalition member keeps "
        "only the other party's share, part of the mechanism's noise",
        "dealer": "broken for the cross coefficients whose dealer noise a "
        "coalition member added (it knows that noise)",
    }[noise_generation]
    if backend == "bfv":
        coalition += (
            "; and the server's key decrypts the ciphertexts a coalition member "
            "evaluated (columns of lower-indexed parties, the labels): exposed"
        )
    out = {
        "outsiders": "holds (they see the released model only)",
        "server": "holds (noisy coefficients; slot-masked sums)",
        "parties without the server": "holds (ciphertexts, own data, the model)",
        "parties with the server": coalition,
    }
    if noise_generation == "dealer":
        out["dealer with the server"] = "nothing holds: the dealer knows all noise"
    if backend == "plaintext":
        out["backend"] = (
            "plaintext is the ideal functionality (simulation): the statements hold "
            "for an ideal secure product; across processes it sends the encryptor's "
            "columns, and the label party's labels (as c beta(y)), in the clear to "
            "the evaluating party"
        )
    return out


class ServerRole(Role):
    """The server: plan, keys, decryption, post-processing and release.

    Parameters
    ----------
    objective : {"squared", "logistic_taylor", "multinomial_taylor"}
        ``"multinomial_taylor"`` goes with ``n_classes > 2``: the label party
        holds the one-hot of the first ``C - 1`` classes; top-down the release
        is :func:`skdp._fm.multinomial.release_multinomial`'s, bottom-up each
        group's Laplace mechanism has its restricted multinomial sensitivity
        (:mod:`skdp.vertical._sensitivity`).
    partition : list of array-like of int
        The global column indices each party holds (public); party k holds
        ``partition[k]``.
    label_party : int
    n_samples : int or None
        Expected number of records (every party must declare it); None accepts
        what the parties agree on.
    fit_intercept : bool
    epsilon, delta : float
        Top-down budget of the whole record (``delta`` for Gaussian only).
    mechanism : {"laplace", "gaussian"}
    budget : {"top-down", "bottom-up"}
        Bottom-up: the parties' budgets arrive in their declarations.
    linear_weight : "auto" or float
    postprocessing : {"average", "eb", "ridge", "trim", "none"} or None
        ``"average"`` and ``"eb"`` for least squares only, as centrally. None:
        the estimators' default, ``"average"`` for least squares, ``"ridge"``
        otherwise.
    backend : {"plaintext", "bfv"}
    noise_generation : {"threshold", "distributed", "dealer"}
        ``"dealer"`` needs a :class:`~skdp.vertical._dealer.DealerRole` in the run.
    n_classes : int, default=2
        ``C`` of the multinomial objective (2 otherwise).
    party_names : list of str or None
        The participant hosting each party (the federated runtime's names),
        added to the errors that name a party: ``"party 1 (bank)"``.

    Notes
    -----
    Every coefficient a party sends is checked on receipt
    (:func:`~skdp.vertical._checks.check_payload_array`): a float64 array of
    exactly the plan's shape for its group, every entry finite and inside
    :meth:`Plan.payload_bounds <skdp.vertical._plan.Plan.payload_bounds>` (n
    times the per-row bound the declared domain implies, plus the noise's tail
    bound). A payload that fails ends the run (a ``ProtocolError`` naming the
    sending party); nothing is released.

    Attributes
    ----------
    plan : Plan or None
        The plan once every party has declared.
    result : dict or None
        The released model: ``coef`` (ndarray), ``intercept`` (float),
        ``privacy`` (``epsilon``, ``delta``, ``mechanism``, ``budget``,
        ``noise_generation``, ``threat_model``), ``party_privacy`` (ndarray),
        ``group_epsilon`` (``{"local k" | "pair k l": epsilon}``),
        ``sensitivity`` (``{"l1", "l2"}`` or None), ``noise_std``,
        ``linear_weight``, ``objective``, ``partition``, ``label_party``,
        ``n_samples``, ``domain`` (the declared ``lower``, ``upper``,
        ``data_norm``, ``y_bounds`` in the user's units; ``fit_intercept``; the
        ``intercept_scaling``, ``x_offset``, ``x_scale`` and ``y_offset`` of
        the centred domain the fit worked in). ``coef`` and ``intercept`` are in the
        user's units.
    """

    name = SERVER

    def __init__(
        self,
        *,
        objective,
        partition,
        label_party=0,
        n_samples=None,
        fit_intercept=True,
        epsilon=1.0,
        delta=0.0,
        mechanism="laplace",
        budget="top-down",
        linear_weight="auto",
        postprocessing=None,
        backend="plaintext",
        noise_generation="threshold",
        n_classes=2,
        party_names=None,
    ):
        super().__init__()
        self.party_names = None if party_names is None else list(party_names)
        if objective not in ("squared", "logistic_taylor", "multinomial_taylor"):
            raise ValueError(f"unknown objective {objective!r}.")
        n_classes = int(n_classes)
        if (objective == "multinomial_taylor") != (n_classes > 2):
            raise ValueError(
                'objective="multinomial_taylor" goes with n_classes > 2, got '
                f"objective={objective!r}, n_classes={n_classes}."
            )
        self.objective = objective
        self.n_classes = n_classes
        self.partition = [np.asarray(cols, dtype=np.intp) for cols in partition]
        self.n_parties = len(self.partition)
        self.label_party = int(label_party)
        if not 0 <= self.label_party < self.n_parties:
            raise ValueError(f"label_party must be in [0, {self.n_parties}).")
        self.n_samples = None if n_samples is None else int(n_samples)
        self.fit_intercept = bool(fit_intercept)
        self.epsilon, self.delta = epsilon, delta
        self.mechanism, self.budget = mechanism, budget
        if postprocessing is None:  # the estimators' defaults
            postprocessing = "average" if objective == "squared" else "ridge"
        self.linear_weight, self.postprocessing = linear_weight, postprocessing
        self.backend_name, self.noise_generation = backend, noise_generation
        check_public_parameters(
            budget=budget,
            mechanism=mechanism,
            noise_generation=noise_generation,
            party_epsilon=None,
            pairwise_epsilon=None,
            n_parties=self.n_parties,
            budgets_declared_later=True,
        )
        self.plan = None
        self._declarations = {}
        self._received = set()

    # ------------------------------------------------------------------ plan
    def _receive(self, message):
        kind = message.kind
        if kind == "declaration":
            return self._declare(message)
        if self.plan is None:
            raise ValueError(f"{kind!r} from {message.sender} before the plan")
        if kind == "noisy local coefficients":
            self._store_local(message)
        elif kind == "encrypted masked sums":
            self._store_cross(message)
        else:
            raise ValueError(f"unexpected {kind!r} from {message.sender}")
        if self._received != self._expected:
            return []
        return self._release()

    def _declare(self, message):
        dec = message.payload
        k = int(dec["index"])
        if message.sender != party_name(k) or not 0 <= k < self.n_parties:
            raise ValueError(f"{message.sender} declared itself as party {k}")
        if k in self._declarations:
            raise ValueError(f"{message.sender} declared twice")
        if not np.array_equal(np.asarray(dec["columns"]), self.partition[k]):
            raise ValueError(
                f"{message.sender} declares columns {list(dec['columns'])}, the "
                f"partition gives it {list(self.partition[k])}"
            )
        if bool(dec["holds_labels"]) != (k == self.label_party):
            raise ValueError(
                f"{message.sender} {'holds' if dec['holds_labels'] else 'lacks'} the "
                f"labels but the label party is party {self.label_party}"
            )
        self._declarations[k] = dec
        if len(self._declarations) < self.n_parties:
            return []
        return self._make_plan()

    def _make_plan(self):
        decs = [self._declarations[k] for k in range(self.n_parties)]
        ns = {int(dec["n_samples"]) for dec in decs}
        if len(ns) != 1 or (self.n_samples is not None and ns != {self.n_samples}):
            raise ValueError(
                f"the parties declare different numbers of records: {sorted(ns)}"
                + ("" if self.n_samples is None else f" (expected {self.n_samples})")
            )
        self.n_samples = ns.pop()
        if self.n_samples < 2:
            raise ValueError("the protocol needs at least 2 records.")
        budgets = None
        if self.budget == "bottom-up":
            rows = [np.asarray(dec["budget"], dtype=np.float64) for dec in decs]
            budgets = check_bottom_up(
                [row[0] for row in rows], [row[1:] for row in rows], self.n_parties
            )
        self._declared = assemble_domain(
            decs, self.partition, self.label_party, fit_intercept=self.fit_intercept
        )
        if self.objective == "squared" and self._declared.y_bounds is None:
            raise ValueError("the label party must declare y_bounds for regression.")
        # centred as the central estimators centre it; each party shifts its own
        # columns (labels) by the offsets of its slice (_domain_slice)
        domain = centred_domain(
            self._declared, self.objective, self.mechanism, self.linear_weight
        )
        self.plan = plan = make_plan(
            objective=self.objective,
            domain=domain,
            partition=self.partition,
            label_party=self.label_party,
            epsilon=self.epsilon,
            delta=self.delta,
            mechanism=self.mechanism,
            linear_weight=self.linear_weight,
            budgets=budgets,
            n_classes=self.n_classes,
        )
        self._key_holder = make_key_holder(self.backend_name)
        granularities = sorted(
            {self._granularity(gr.mechanism) for gr in plan.groups.values()}
        )
        noise_bound = max(
            (60.0 * getattr(gr.mechanism, "scale", 0.0))
            + 12.0 * getattr(gr.mechanism, "sigma", 0.0)
            for gr in plan.groups.values()
        )
        if self.noise_generation == "threshold" and self.n_parties > 1:
            noise_bound *= 2.0  # m shares of 1/(m-1) each: at most twice the noise
        context = self._key_holder.setup(
            granularities, plan.value_bound(self.n_samples), noise_bound
        )
        p = plan.n_coef
        self._upper = np.full(p * (p + 1) // 2, np.nan)
        self._lin = np.full(p * plan.n_lin, np.nan)
        kappa, _ = objective_constants(self.objective)
        if self.fit_intercept:
            # the intercept's diagonal: kappa s^2 n, public (sensitivity 0)
            g = self._granularity(plan.groups[("local", self.label_party)].mechanism)
            s = domain.intercept_scaling
            value = round_to_lattice(np.array([kappa * s**2 * self.n_samples]), g)
            self._upper[triu_position([p - 1], [p - 1], p)] = value
        self._expected = {("local", k) for k in range(self.n_parties)}
        for key, gr in plan.groups.items():
            if key[0] == "pair":
                self._expected.add((group_name(key), "quad"))
                if len(gr.lin):
                    self._expected.add((group_name(key), "lin"))
        out = []
        common = {
            "objective": self.objective,
            "kappa": float(kappa),
            "n_lin": int(plan.n_lin),
            "linear_weight": float(plan.linear_weight),
            "intercept_scaling": float(domain.intercept_scaling),
            "n_features": int(domain.n_features),
            "n_samples": self.n_samples,
            "label_party": self.label_party,
            "noise_generation": self.noise_generation,
            "backend": self.backend_name,
            "privacy": self._privacy(),
        }
        for k in range(self.n_parties):
            mine = [
                self._group_payload(key, gr)
                for key, gr in plan.groups.items()
                if k in gr.contributors
            ]
            payload = {**common, "domain": self._domain_slice(k), "groups": mine}
            out.append(self._send("plan", party_name(k), "plan", payload))
            out.append(self._send("plan", party_name(k), "public context", context))
        if self.noise_generation == "dealer":
            payload = {
                "budget": self.budget,
                "top_mechanism": plan.top_spec,
                "n_coef": int(p),
                "n_lin": int(plan.n_lin),
                "fit_intercept": self.fit_intercept,
                "n_parties": self.n_parties,
                "groups": [self._group_payload(k, g) for k, g in plan.groups.items()],
            }
            out.append(self._send("plan", DEALER, "dealer plan", payload))
        return out

    def _domain_slice(self, k):
        """Party k's part of the domain the fit works in (see PartyRole)."""
        domain, cols = self.plan.domain, self.partition[k]
        offset, scale = np.zeros(len(cols)), np.ones(len(cols))
        if domain.x_offset is not None:
            offset = domain.x_offset[cols]
        if domain.x_scale is not None:
            scale = domain.x_scale[cols]
        out = {
            "x_offset": offset,
            "x_scale": scale,
            "lower": None if domain.lower is None else domain.lower[cols],
            "upper": None if domain.upper is None else domain.upper[cols],
            "data_norm": domain.data_norm,
            "y_offset": 0.0,
            "y_bounds": None,
        }
        if k == self.label_party and domain.y_bounds is not None:
            out["y_offset"] = float(domain.y_offset)
            out["y_bounds"] = [float(v) for v in domain.y_bounds]
        return out

    @staticmethod
    def _granularity(mech):
        return float(getattr(mech, "granularity", 0.0))

    def _group_payload(self, key, group):
        return {
            "name": group_name(key),
            "key": list(key),
            "contributors": [int(k) for k in group.contributors],
            "rows": np.asarray(group.quad[0], dtype=np.int64),
            "cols": np.asarray(group.quad[1], dtype=np.int64),
            "lin": np.asarray(group.lin, dtype=np.int64),
            "mechanism": self.plan.specs[key],
        }

    def _privacy(self):
        epsilon, delta = self.plan.spend()
        return {
            "epsilon": epsilon,
            "delta": delta,
            "mechanism": self.mechanism,
            "budget": self.budget,
            "noise_generation": self.noise_generation,
        }

    # ------------------------------------------------------------- collect
    def _who(self, k):
        """``"party k"``, with its participant's name when known."""
        name = party_name(k)
        if self.party_names is not None and 0 <= k < len(self.party_names):
            name += f" ({self.party_names[k]})"
        return name

    def _sender_index(self, message):
        for k in range(self.n_parties):
            if message.sender == party_name(k):
                return k
        raise ValueError(f"{message.kind!r} from {message.sender!r}, not a party")

    def _store_local(self, message):
        k = self._sender_index(message)
        if ("local", k) in self._received:
            raise ValueError(f"{self._who(k)} sent its coefficients twice")
        key = ("local", k)
        group = self.plan.groups[key]
        rows, cols = group.quad
        payload = message.payload
        what = f"{self._who(k)} sent invalid noisy local coefficients:"
        if payload.get("group", group_name(key)) != group_name(key):
            raise ValueError(f"{what} they name the group {payload['group']!r:.40}")
        quad_bound, lin_bound = self.plan.payload_bounds(key, self.n_samples)
        quad = check_payload_array(
            payload.get("quad"), f"{what} 'quad'", shape=(len(rows),), bound=quad_bound
        )
        lin = check_payload_array(
            payload.get("lin"),
            f"{what} 'lin'",
            shape=(len(group.lin),),
            bound=lin_bound,
        )
        self._upper[triu_position(rows, cols, self.plan.n_coef)] = quad
        if len(group.lin):
            self._lin[group.lin] = lin
        self._received.add(("local", k))

    def _store_cross(self, message):
        payload = message.payload
        name, what = payload.get("group"), payload.get("what")
        if (name, what) not in self._expected or (name, what) in self._received:
            raise ValueError(
                f"unexpected sums for {name!r:.40} ({what!r:.20}) from {message.sender}"
            )
        key = group_key(name)
        group = self.plan.groups[key]
        evaluator = self._evaluator(key, what)
        if message.sender != party_name(evaluator):
            raise ValueError(f"{message.sender} is not the evaluator of {name!r}")
        sender = f"{self._who(evaluator)} sent invalid sums for {name!r} ({what})"
        try:
            noisy = self._key_holder.decrypt_sums(
                payload["data"], self._granularity(group.mechanism)
            )
        except Exception as exc:
            raise ValueError(
                f"{sender}: they cannot be decrypted ({type(exc).__name__}: "
                f"{str(exc):.200})"
            ) from exc
        quad_bound, lin_bound = self.plan.payload_bounds(key, self.n_samples)
        _, k, q = key
        if what == "quad":  # kappa X_k^T X_q, the encryptor k's rows
            shape = (len(self.partition[k]), len(self.partition[q]))
            bound = quad_bound
        else:  # c beta(y)^T X_other, one row per linear column
            shape = (self.plan.n_lin, len(group.lin) // self.plan.n_lin)
            bound = lin_bound
        noisy = check_payload_array(
            noisy, sender, shape=shape, bound=bound.reshape(shape)
        ).ravel()
        if what == "quad":
            rows, cols = group.quad
            self._upper[triu_position(rows, cols, self.plan.n_coef)] = noisy
        else:
            self._lin[group.lin] = noisy
        self._received.add((name, what))

    def _evaluator(self, key, what):
        _, k, q = key
        if what == "quad":
            return q
        return q if k == self.label_party else k

    # ------------------------------------------------------------- release
    def _release(self):
        plan = self.plan
        if np.isnan(self._upper).any() or np.isnan(self._lin).any():
            raise ValueError("the server did not receive every coefficient")
        c = plan.linear_weight
        A_hat = symmetric_from_triu(self._upper, plan.n_coef)
        b_hat = self._lin / c
        noise_std, noise_std_b = plan.noise_std(self.noise_generation)
        # the centralized estimator's post-processing and solve
        domain, declared = plan.domain, self._declared
        # solved in the centred domain, mapped back to the user's units
        if self.objective == "multinomial_taylor":
            coef, intercept = solve_multinomial(
                A_hat,
                b_hat.reshape(plan.n_coef, plan.n_lin),
                domain,
                self.n_classes,
                noise_std=noise_std,
                noise_std_b=noise_std_b / c,
                n=self.n_samples,
                method=self.postprocessing,
            )
        else:
            coef, intercept = solve_release(
                A_hat,
                b_hat,
                self.objective,
                domain,
                noise_std=noise_std,
                noise_std_b=noise_std_b / c,
                n=self.n_samples,
                method=self.postprocessing,
            )
        sens = plan.sensitivity
        model = {
            "coef": np.asarray(coef, dtype=np.float64),
            "intercept": intercept,
            "objective": self.objective,
            "n_classes": self.n_classes,
            "privacy": {
                **self._privacy(),
                "threat_model": threat_model(self.noise_generation, self.backend_name),
            },
            "party_privacy": np.asarray(plan.party_privacy(), dtype=np.float64),
            "group_epsilon": {
                group_name(key): float(gr.mechanism.epsilon)
                for key, gr in plan.groups.items()
            },
            "sensitivity": None if sens is None else {"l1": sens.l1, "l2": sens.l2},
            "noise_std": float(noise_std),
            "linear_weight": float(c),
            "partition": [cols.astype(np.int64) for cols in self.partition],
            "label_party": self.label_party,
            "n_samples": self.n_samples,
            "domain": {
                "lower": declared.lower,
                "upper": declared.upper,
                "data_norm": declared.data_norm,
                "y_bounds": (
                    None if declared.y_bounds is None else list(declared.y_bounds)
                ),
                "fit_intercept": domain.fit_intercept,
                "intercept_scaling": float(domain.intercept_scaling),
                "x_offset": domain.x_offset,
                "x_scale": domain.x_scale,
                "y_offset": float(domain.y_offset),
            },
        }
        self.result = model
        self.finished = True
        return [
            self._send("release", party_name(k), "released model", model)
            for k in range(self.n_parties)
        ]
