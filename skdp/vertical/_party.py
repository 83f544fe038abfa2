"""A data holder of the vertical protocol as a state machine (:class:`PartyRole`).

A party holds some columns of every record (the *label party* also the labels).
It tells the server the domain it declares, receives the plan (with its slice
of the centred domain: it shifts and clips its columns and labels to it) and
the public context, noises its single-party coefficients, encrypts
its columns (labels) for the parties it pairs with, evaluates the encrypted
columns it receives against its own, and finally receives the released model.
"""

import math

import numpy as np

from skdp._fm import objective_constants
from skdp.utils import clip_to_bounds, clip_to_norm
from skdp.vertical._checks import (
    PAYLOAD_RTOL,
    check_payload_array,
    noise_tail_bound,
)
from skdp.vertical._messages import DEALER, SERVER, Role, party_name
from skdp.vertical._noise_shares import noise_share
from skdp.vertical._plan import group_key, mechanism_from_spec, round_to_lattice
from skdp.vertical._secure import make_party_backend

__all__ = ["PartyRole", "clip_block"]


def clip_block(X, *, lower, upper, data_norm, n_features, copy=True):
    """Clip one party's columns to its part of the declared domain.

    A box is per coordinate, so it is applied exactly. No party sees a whole
    row, so a row-norm bound ``R`` is enforced as ``||x^(k)|| <= R sqrt(d_k/d)``
    per block: the product of these balls lies inside the declared ball (the
    guarantee is unchanged) and rows already inside it are untouched.
    """
    block = X
    if lower is not None:
        block = clip_to_bounds(block, lower, upper)
    if data_norm is not None:
        radius = data_norm * math.sqrt(block.shape[1] / n_features)
        block = clip_to_norm(block, radius, copy=copy and block is X)
    elif block is X:
        block = np.array(X, dtype=np.float64, copy=copy)
    return block


class PartyRole(Role):
    """Party ``index`` of the vertical protocol.

    Parameters
    ----------
    index : int
        Its position ``k``; its role name is ``"party k"``.
    columns : array-like of int
        The global indices of the columns it holds (public: the partition).
    X : ndarray of shape (n_samples, len(columns))
        Its columns, in record order (aligned with every other party's). They
        are shifted and clipped once the plan fixes the domain the fit works in
        (the declared one or its centred shift, :meth:`_clip_to_plan`); the
        input is not modified.
    n_features : int
        ``d``, the total number of columns over all parties (public).
    lower, upper : array-like of shape (len(columns),) or None
        Its declared box.
    data_norm : float or None
        The declared bound ``R`` on a whole row's L2 norm (every party declares
        the same ``R``; it clips its block to ``R sqrt(d_k / d)``).
    labels : ndarray of shape (n_samples,) or (n_samples, C - 1) or None
        Only for the label party: regression targets, 0/1 class labels, or for
        ``C > 2`` classes the one-hot of the first ``C - 1``.
    y_bounds : (float, float) or None
        The label party's declared label range (regression); labels are
        shifted by its midpoint when the plan centres them, then clipped.
    budget : array-like or None
        Bottom-up: ``[eps^(k), eps^k0, eps^k1, ...]`` (its total, then its row
        of pairwise budgets, 0 for itself). None for top-down.
    rng : numpy.random.Generator
        Its own randomness (noise shares, slot masks).
    policy : callable or None
        ``policy(plan)`` is called with the plan payload before anything is
        computed; raising refuses the plan (the run aborts).
    copy : bool, default=True
        False lets the party clip ``X`` in place (the in-process estimators hand
        over a fresh block).

    Attributes
    ----------
    result : dict or None
        The released model the server sends at the end.
    """

    def __init__(
        self,
        index,
        columns,
        X,
        *,
        n_features,
        lower=None,
        upper=None,
        data_norm=None,
        labels=None,
        y_bounds=None,
        budget=None,
        rng=None,
        policy=None,
        copy=True,
    ):
        super().__init__()
        self.index = int(index)
        self.name = party_name(index)
        self.columns = np.asarray(columns, dtype=np.intp)
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.columns):
            raise ValueError(
                f"{self.name}: X must have one column per held column "
                f"({len(self.columns)}), got shape {X.shape}."
            )
        if lower is not None:
            lower = np.broadcast_to(np.asarray(lower, float), (X.shape[1],)).copy()
            upper = np.broadcast_to(np.asarray(upper, float), (X.shape[1],)).copy()
        self._domain = {
            "lower": lower,
            "upper": upper,
            "data_norm": None if data_norm is None else float(data_norm),
            "y_bounds": None if y_bounds is None else [float(v) for v in y_bounds],
        }
        self._n_features = int(n_features)
        # clipped (and centred) once the plan fixes the domain the fit works in
        self._raw = X
        self._copy = bool(copy)
        self._X = None
        self._labels = None
        if labels is not None:
            labels = np.asarray(labels, dtype=np.float64)
            if labels.ndim not in (1, 2) or labels.shape[0] != X.shape[0]:
                raise ValueError(
                    f"{self.name}: labels must have shape ({X.shape[0]},) (or "
                    f"({X.shape[0]}, C - 1), one-hot, for more than two classes), "
                    f"got {labels.shape}."
                )
            self._labels = labels
        self._budget = None if budget is None else np.asarray(budget, dtype=float)
        self._rng = rng if rng is not None else np.random.default_rng()
        self._policy = policy
        self._plan = None
        self._backend = None
        self._dealer_noise = None
        self._pending = []  # cross messages that arrived before the plan
        self._inbox = {}  # (group, what) -> {"columns": ..., "shares": {...}}
        self._shares = None
        self._mechanisms = None

    @property
    def is_label_party(self):
        return self._labels is not None

    # ---------------------------------------------------------------- steps
    def _start(self):
        payload = {
            "index": self.index,
            "n_samples": int(self._raw.shape[0]),
            "columns": self.columns.astype(np.int64),
            "holds_labels": self.is_label_party,
            **self._domain,
            "budget": self._budget,
        }
        return [self._send("declare", SERVER, "declaration", payload)]

    def _clip_to_plan(self, domain):
        """Shift and clip its columns (labels) to the domain the fit works in.

        The server centres the declared domain as the central estimators do
        (:func:`skdp._fm.centring.centred_domain`) and sends each party its
        slice: ``x_offset`` (0 or the midpoints of its own declared box),
        ``x_scale`` (1, or the half-widths of its box when the server maps the
        centred box to ``[-1, 1]``), the shifted (scaled) box and the row-norm
        bound (None when the centred box alone describes the data), and to the
        label party ``y_offset`` (0 or the midpoint of its ``y_bounds``) and
        the shifted ``y_bounds``. A slice that is not such a shift of its own
        declaration is refused: the sensitivity is computed for the plan's
        domain, so the data must be clipped to it.
        """
        mine = self._domain
        offset = np.asarray(domain["x_offset"], dtype=np.float64)
        scale = np.asarray(
            domain.get("x_scale", np.ones(len(self.columns))), dtype=np.float64
        )
        lower, upper, data_norm = domain["lower"], domain["upper"], domain["data_norm"]
        problems = []
        if offset.shape != (len(self.columns),) or scale.shape != offset.shape:
            problems.append("x_offset or x_scale has the wrong length")
        elif mine["lower"] is None:
            ok = lower is None and upper is None and np.all(offset == 0)
            ok = ok and data_norm == mine["data_norm"] and np.all(scale == 1)
            if not ok:
                problems.append("the domain is not the declared row-norm bound")
        else:
            lower = np.asarray(lower, dtype=np.float64)
            upper = np.asarray(upper, dtype=np.float64)
            mid = 0.5 * (mine["lower"] + mine["upper"])
            half = 0.5 * (mine["upper"] - mine["lower"])
            centred = bool(np.any(offset != 0)) or data_norm != mine["data_norm"]
            ones = np.ones_like(mid)
            if np.any(scale != 1):
                # the centred box mapped to [-1, 1] (the server scales every
                # party's box or none; a party's own may have half-widths 1)
                want = (mid, half, -ones, ones)
            elif centred:
                want = (mid, ones, mine["lower"] - mid, mine["upper"] - mid)
            else:
                want = (np.zeros_like(mid), ones, mine["lower"], mine["upper"])
            got = (offset, scale, lower, upper)
            if not all(np.array_equal(a, b) for a, b in zip(got, want)):
                problems.append(
                    "the box is not the declared one, its centred shift or that "
                    "shift mapped to [-1, 1]"
                )
            if data_norm not in (None, mine["data_norm"]):
                problems.append("the row-norm bound is not the declared one")
        y_offset = float(domain.get("y_offset", 0.0))
        y_bounds = domain.get("y_bounds")
        if self.is_label_party and mine["y_bounds"] is not None:
            yl, yu = mine["y_bounds"]
            ymid = 0.5 * (yl + yu)
            if y_offset not in (0.0, ymid) or list(y_bounds) != [
                yl - y_offset,
                yu - y_offset,
            ]:
                problems.append(
                    "y_bounds is not the declared range or its centred shift"
                )
        elif y_offset != 0.0:
            problems.append("a label offset for a party that declared no label range")
        if problems:
            raise ValueError(
                f"{self.name} refuses the plan's domain: " + "; ".join(problems)
            )
        # the ranges the encoded columns must stay in (bfv's fixed point)
        self._x_bounds = None if lower is None else (lower, upper)
        self._y_range = y_bounds if self.is_label_party else None
        X = self._raw
        if np.any(offset != 0):
            X = X - offset  # the public shift (a copy)
        if np.any(scale != 1):
            X = X / scale  # the public scale (a copy)
        self._X = clip_block(
            X,
            lower=lower,
            upper=upper,
            data_norm=data_norm,
            n_features=self._n_features,
            copy=self._copy and X is self._raw,
        )
        if self._labels is not None and y_bounds is not None:
            self._labels = np.clip(self._labels - y_offset, *y_bounds)

    def _receive(self, message):
        kind = message.kind
        if kind == "plan":
            if self._policy is not None:
                self._policy(message.payload)
            self._clip_to_plan(message.payload["domain"])
            self._plan = message.payload
        elif kind == "public context":
            self._backend = make_party_backend(message.payload)
        elif kind == "noise":
            self._dealer_noise = message.payload
        elif kind in ("encrypted columns", "encrypted labels", "encrypted noise share"):
            self._pending.append(message)
        elif kind == "released model":
            self.result = message.payload
            self.finished = True
            return []
        else:
            raise ValueError(f"unexpected {kind!r} from {message.sender}")
        if not self._ready:
            return []
        out = []
        if self._shares is None:
            out += self._local_and_encrypt()
        pending, self._pending = self._pending, []
        self._step = "cross"
        for msg in pending:
            out += self._collect(msg)
        return out

    @property
    def _ready(self):
        if self._plan is None or self._backend is None:
            return False
        return self._plan["noise_generation"] != "dealer" or (
            self._dealer_noise is not None
        )

    # -------------------------------------------------------------- noise
    def _my_groups(self):
        """``[(name, group dict)]`` of the groups it contributes to, in the
        plan's order: its own group first, then its pairs."""
        return [(g["name"], g) for g in self._plan["groups"]]

    def _draw_shares(self):
        """Every noise share it adds, drawn at one point in a fixed order (its
        own group's quad then lin, the pairs' quad blocks, the pairs' lin
        blocks), so the draws do not depend on the order messages arrive in."""
        plan = self._plan
        shares = {}
        generation = plan["noise_generation"]
        groups = self._my_groups()
        order = [(name, "quad") for name, g in groups if g["key"][0] == "local"]
        order += [(name, "lin") for name, g in groups if g["key"][0] == "local"]
        order += [(name, "quad") for name, g in groups if g["key"][0] == "pair"]
        order += [(name, "lin") for name, g in groups if g["key"][0] == "pair"]
        for name, what in order:
            g = dict(groups)[name]
            size = len(g["rows"]) if what == "quad" else len(g["lin"])
            if what == "lin" and size == 0:
                continue
            if generation == "dealer":
                shares[name, what] = self._dealer_share(name, g, what, size)
            else:
                mech = self._mechanisms[name]
                m = len(g["contributors"])
                shares[name, what] = noise_share(mech, size, m, generation, self._rng)
        return shares

    def _dealer_share(self, name, g, what, size):
        """The dealer's noise for a block, checked: the group's last
        contributor must receive a float64 array of the block's size, finite
        and inside the noise's tail bound
        (:func:`~skdp.vertical._checks.noise_tail_bound`); the others none (they
        add nothing)."""
        noise = self._dealer_noise.get(f"{name} {what}")
        if int(g["contributors"][-1]) != self.index:
            if noise is not None and np.size(noise):
                raise ValueError(
                    f"{DEALER} sent noise for {name!r} ({what}), whose last "
                    f"contributor is party {g['contributors'][-1]}"
                )
            return np.zeros(size)
        mech = self._mechanisms[name]
        bound = noise_tail_bound(mech) * (1.0 + PAYLOAD_RTOL)
        if noise is None:
            raise ValueError(f"{DEALER} sent no noise for {name!r} ({what})")
        return check_payload_array(
            noise,
            f"{DEALER} sent invalid noise for {name!r} ({what})",
            shape=(size,),
            bound=bound,
        )

    # ------------------------------------------------------ local and cross
    def _local_and_encrypt(self):
        plan = self._plan
        if plan["objective"] != "squared" and self.is_label_party:
            if not np.all((self._labels == 0) | (self._labels == 1)):
                raise ValueError("logistic labels must be encoded as 0/1.")
            multinomial = plan["objective"] == "multinomial_taylor"
            if multinomial and (
                self._labels.ndim != 2
                or self._labels.shape[1] != self._n_lin
                or np.any(self._labels.sum(axis=1) > 1)
            ):
                raise ValueError(
                    f"multinomial labels must be one-hot of shape (n, "
                    f"{self._n_lin}), got shape {self._labels.shape}."
                )
            if not multinomial and self._labels.ndim != 1:
                raise ValueError("binary labels must have shape (n,).")
        self._mechanisms = {
            g["name"]: mechanism_from_spec(g["mechanism"]) for g in plan["groups"]
        }
        self._step = "local"
        self._shares = self._draw_shares()
        out = [self._send("local", SERVER, "noisy local coefficients", self._local())]
        self._step = "cross"
        label = plan["label_party"]
        # each is encrypted once and sent to every evaluator
        encrypted = labels = None
        for name, g in self._my_groups():
            if g["key"][0] != "pair":
                continue
            k, q = g["key"][1:]
            if k == self.index:
                if encrypted is None:
                    encrypted = self._backend.encrypt_columns(
                        self._X, plan["kappa"], bounds=self._x_bounds
                    )
                shape = (len(self.columns), len(g["rows"]) // len(self.columns))
                out += self._encrypted_pair(
                    name, "quad", shape, q, encrypted, "columns"
                )
            if self.is_label_party and len(g["lin"]):
                if labels is None:
                    labels = self._backend.encrypt_columns(
                        self._beta_y, plan["linear_weight"], bounds=self._beta_bounds
                    )
                other = q if k == label else k
                n_lin = self._n_lin
                shape = (n_lin, len(g["lin"]) // n_lin)
                out += self._encrypted_pair(name, "lin", shape, other, labels, "labels")
        return out

    @property
    def _n_lin(self):
        """Linear columns per coefficient row (``C - 1`` multinomial, else 1)."""
        return int(self._plan.get("n_lin", 1))

    @property
    def _beta_y(self):
        """``beta(y)`` as an (n, n_lin) matrix (one column unless multinomial)."""
        _, beta = objective_constants(self._plan["objective"])
        out = beta(self._labels)
        return out.reshape(len(out), -1)

    @property
    def _beta_bounds(self):
        """The range of ``beta(y)``: ``-2 y`` over the (shifted) ``y_bounds``
        for least squares; None for the classifiers, whose ``beta`` ranges
        (``[-1/2, 1/2]``, ``[1/C - 1, 1/C]``) contain 0."""
        if self._plan["objective"] != "squared" or self._y_range is None:
            return None
        yl, yu = (float(v) for v in self._y_range)
        return np.array([-2.0 * yu]), np.array([-2.0 * yl])

    def _encrypted_pair(self, name, what, shape, evaluator, encrypted, noun):
        """Encryptor: its input and its noise share of the block, encrypted."""
        share = self._shares[name, what].reshape(shape)
        share = self._backend.encrypt_share(share, self._granularity(name))
        receiver = party_name(evaluator)
        head = {"group": name, "what": what}
        return [
            self._send(
                "cross", receiver, f"encrypted {noun}", {**head, "data": encrypted}
            ),
            self._send(
                "cross", receiver, "encrypted noise share", {**head, "data": share}
            ),
        ]

    def _granularity(self, name):
        return float(getattr(self._mechanisms[name], "granularity", 0.0))

    def _local(self):
        """Noisy single-party coefficients ``{"quad", "lin"}``."""
        plan = self._plan
        name, g = next((n, g) for n, g in self._my_groups() if g["key"][0] == "local")
        gran = self._granularity(name)
        kappa, c = plan["kappa"], plan["linear_weight"]
        rows, cols = np.asarray(g["rows"]), np.asarray(g["cols"])
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
        quad = round_to_lattice(values, gran) + self._shares[name, "quad"]
        lin = np.empty(0)
        lin_idx = np.asarray(g["lin"], dtype=np.intp)
        if len(lin_idx):
            n_lin = self._n_lin
            lin_rows, lin_cls = lin_idx // n_lin, lin_idx % n_lin
            lin_vals = np.empty(len(lin_idx))
            features = lin_rows != d
            if n_lin == 1:  # the binary products, as the centralized statistics
                beta_y = self._beta_y[:, 0]
                X_beta = (self._X.T @ beta_y)[:, None]
                beta_sum = np.array([beta_y.sum()])
            else:
                beta_y = self._beta_y
                X_beta = self._X.T @ beta_y
                beta_sum = beta_y.sum(axis=0)
            lin_vals[features] = (
                c * X_beta[position[lin_rows[features]], lin_cls[features]]
            )
            lin_vals[~features] = c * (scaling * beta_sum[lin_cls[~features]])
            lin = round_to_lattice(lin_vals, gran) + self._shares[name, "lin"]
        return {"group": name, "quad": quad, "lin": lin}

    def _check_input(self, message, g, what):
        """A peer's input to a block this party evaluates, checked on receipt.

        The sender must be the block's encryptor (the pair's other party for
        ``"quad"``, the label party for ``"lin"``), this party its evaluator,
        and the data what the plan says: ``n`` rows of the encryptor's columns
        (``C - 1`` label columns) scaled by the plan's ``kappa`` (linear
        weight), a noise share of the block's shape, finite (plaintext) or with
        the plan's number of ciphertexts (bfv): see the backends'
        ``check_columns`` and ``check_share``. Anything else raises a
        ValueError naming the sender.
        """
        plan = self._plan
        name = g["name"]
        k, q = (int(i) for i in g["key"][1:])
        if what == "quad":
            encryptor, evaluator = k, q
        elif what == "lin" and len(g["lin"]):
            label = int(plan["label_party"])
            encryptor, evaluator = label, (q if k == label else k)
        else:
            raise ValueError(f"{message.sender} sent data for {name!r} ({what!r:.20})")
        if evaluator != self.index or message.sender != party_name(encryptor):
            raise ValueError(
                f"{message.sender} sent {message.kind!r} for {name!r} ({what}), "
                f"which party {encryptor} encrypts for party {evaluator}"
            )
        kinds = ("encrypted columns" if what == "quad" else "encrypted labels",)
        if message.kind not in (*kinds, "encrypted noise share"):
            raise ValueError(
                f"{message.sender} sent {message.kind!r} for {name!r} ({what})"
            )
        n_rows = len(g["rows"]) if what == "quad" else len(g["lin"])
        width = n_rows // len(self.columns)
        who = f"{message.sender} sent invalid {message.kind} for {name!r} ({what})"
        data = message.payload.get("data")
        if message.kind == "encrypted noise share":
            self._backend.check_share(data, (width, len(self.columns)), who)
        else:
            scale = plan["kappa"] if what == "quad" else plan["linear_weight"]
            self._backend.check_columns(
                data, (self._raw.shape[0], width), float(scale), who
            )

    def _collect(self, message):
        """Evaluator: gather a block's encrypted input and the others' shares."""
        payload = message.payload
        name, what = payload["group"], payload["what"]
        g = dict(self._my_groups()).get(name)
        if g is None or self.index not in g["contributors"]:
            raise ValueError(
                f"{message.sender} sent data for a foreign group {name!r:.40}"
            )
        self._check_input(message, g, what)
        slot = self._inbox.setdefault((name, what), {"columns": None, "shares": {}})
        if message.kind == "encrypted noise share":
            if message.sender in slot["shares"]:
                raise ValueError(f"{message.sender} sent its share of {name!r} twice")
            slot["shares"][message.sender] = payload["data"]
        else:
            if slot["columns"] is not None:
                raise ValueError(f"{message.sender} sent its input to {name!r} twice")
            slot["columns"] = payload["data"]
        others = [party_name(k) for k in g["contributors"] if k != self.index]
        if slot["columns"] is None or set(slot["shares"]) != set(others):
            return []
        del self._inbox[name, what]
        k, q = group_key(name)[1:]
        if what == "quad":
            shape = (len(g["rows"]) // len(self.columns), len(self.columns))
        else:
            shape = (self._n_lin, len(self.columns))
        share = self._shares[name, what].reshape(shape)
        try:
            result = self._backend.evaluate(
                slot["columns"],
                self._X,
                1.0,
                [slot["shares"][o] for o in others],
                share,
                self._rng,
                self._granularity(name),
                bounds=self._x_bounds,
            )
        except Exception as exc:
            # the inputs passed their checks on receipt; a ciphertext that
            # cannot be loaded or evaluated is still the sender's
            raise ValueError(
                f"the ciphertexts {' and '.join(others)} sent for {name!r} ({what}) "
                f"could not be evaluated ({type(exc).__name__}: {str(exc):.200})"
            ) from exc
        head = {"group": name, "what": what}
        return [
            self._send(
                "cross", SERVER, "encrypted masked sums", {**head, "data": result}
            )
        ]
