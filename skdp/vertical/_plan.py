"""The public plan of a vertical release: domain, coefficient groups, mechanisms.

Everything here depends only on public parameters (objective, budgets, the
declared domain, the column partition, n), never on data, so the server computes
it from the parties' declarations and any party can recompute what it is told.
"""

import math
from dataclasses import dataclass

import numpy as np

from skdp._fm import (
    DataDomain,
    Sensitivity,
    balanced_linear_weight,
    make_mechanism,
    n_released,
    objective_constants,
    release_noise_std,
)
from skdp._fm.multinomial import (
    balanced_multinomial_weight,
    multinomial_n_released,
    multinomial_sensitivity,
)
from skdp.mechanisms import gaussian_delta
from skdp.vertical._checks import PAYLOAD_RTOL, noise_tail_bound
from skdp.vertical._sensitivity import (
    cached_sensitivity,
    multinomial_group_sensitivity,
    multinomial_party_sensitivity,
)

__all__ = [
    "NOISE_GENERATIONS",
    "NoiseGroup",
    "Plan",
    "assemble_domain",
    "check_bottom_up",
    "check_public_parameters",
    "coordinate_groups",
    "group_key",
    "group_name",
    "make_plan",
    "mechanism_from_spec",
    "mechanism_spec",
    "round_to_lattice",
    "triu_position",
]

NOISE_GENERATIONS = ("threshold", "distributed", "dealer")


# --------------------------------------------------------------------------- #
# coefficient groups
# --------------------------------------------------------------------------- #
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


def group_name(key):
    """``("pair", 0, 2)`` -> ``"pair 0 2"`` (a str key for message payloads)."""
    return " ".join(str(part) for part in key)


def group_key(name):
    """Inverse of :func:`group_name`."""
    kind, *idx = name.split()
    return (kind, *(int(i) for i in idx))


def coordinate_groups(partition, label_party, fit_intercept, n_lin=1):
    """Split the released coordinates into single-party and pair groups.

    Returns ``{key: (contributors, (rows, cols), lin)}`` with keys
    ``("local", k)`` (party k's own block of ``A``, its intercept entries and,
    for the label party, its linear entries and the intercept's) and
    ``("pair", k, l)``, ``k < l`` (the cross block of ``A`` in the order the
    secure product returns it, and, when one of the two holds the label, the
    linear entries of the other's columns). The intercept's diagonal (no noise,
    sensitivity 0) belongs to no group.

    ``n_lin``: linear columns per coefficient row (``C - 1`` for the multinomial
    objective, else 1); the linear entry of row ``j``, column ``c`` has the
    global index ``j * n_lin + c`` (row-major, as the centralized release). A
    local group lists them row by row, a pair group class by class (the order
    of the secure product ``beta^T X``).
    """
    d = sum(len(cols) for cols in partition)
    out = {}
    for k, cols in enumerate(partition):
        r, c = np.triu_indices(len(cols))
        rows, cols_ = list(cols[r]), list(cols[c])
        if fit_intercept:
            rows += list(cols)
            cols_ += [d] * len(cols)
        lin = []
        if k == label_party:
            lin_rows = list(cols) + ([d] if fit_intercept else [])
            lin = [j * n_lin + c for j in lin_rows for c in range(n_lin)]
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
                other = np.asarray(partition[q], dtype=np.intp)
            elif label_party == q:
                other = np.asarray(partition[k], dtype=np.intp)
            else:
                other = np.empty(0, dtype=np.intp)
            lin = (other[None, :] * n_lin + np.arange(n_lin)[:, None]).ravel()
            out[("pair", k, q)] = ((k, q), (rows, cols), np.asarray(lin, dtype=np.intp))
    return out


def triu_position(rows, cols, p):
    """Index of ``(r, c)``, ``r <= c``, in ``numpy.triu_indices(p)`` order."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    return rows * p - rows * (rows - 1) // 2 + (cols - rows)


def round_to_lattice(values, granularity):
    """Round to the noise lattice, as the centralized release does."""
    if granularity > 0:
        return np.round(values / granularity) * granularity
    return values


# --------------------------------------------------------------------------- #
# mechanisms as data
# --------------------------------------------------------------------------- #
def mechanism_spec(mech, sens, n_coordinates, name):
    """The parameters that rebuild ``mech`` exactly (:func:`mechanism_from_spec`)."""
    return {
        "mechanism": name,
        "epsilon": float(mech.epsilon),
        "delta": float(getattr(mech, "delta", 0.0)),
        "l1": float(sens.l1),
        "l2": float(sens.l2),
        "n_coordinates": int(n_coordinates),
    }


def mechanism_from_spec(spec):
    """The mechanism of a group, from its spec (same construction, same bits)."""
    return make_mechanism(
        spec["epsilon"],
        spec["delta"],
        Sensitivity(l1=spec["l1"], l2=spec["l2"]),
        spec["n_coordinates"],
        spec["mechanism"],
    )


# --------------------------------------------------------------------------- #
# budgets
# --------------------------------------------------------------------------- #
def check_bottom_up(party_epsilon, pairwise_epsilon, n_parties):
    """Validate bottom-up budgets; return ``(local eps^k, pairwise eps^kl)``.

    ``eps^(k) = eps^k + sum_l eps^kl``: party k's total ``party_epsilon[k]`` minus
    the pairwise budgets it agreed with the others is what it spends on its
    single-party coefficients.
    """
    if party_epsilon is None or pairwise_epsilon is None:
        raise ValueError(
            'budget="bottom-up" needs party_epsilon (each party\'s total '
            "eps^(k)) and pairwise_epsilon (the eps^kl agreed by each pair)."
        )
    totals = np.asarray(party_epsilon, dtype=np.float64)
    pairs = np.asarray(pairwise_epsilon, dtype=np.float64)
    K = n_parties
    if totals.shape != (K,):
        raise ValueError(
            f"party_epsilon must have one entry per party ({K}), got shape "
            f"{totals.shape}."
        )
    if pairs.shape != (K, K):
        raise ValueError(
            f"pairwise_epsilon must be a ({K}, {K}) matrix, got shape {pairs.shape}."
        )
    if not (np.all(np.isfinite(totals)) and np.all(totals > 0)):
        raise ValueError(f"party_epsilon must be finite and > 0, got {totals}.")
    off = ~np.eye(K, dtype=bool)
    if not np.all(np.isfinite(pairs[off])) or np.any(pairs[off] <= 0):
        raise ValueError(
            "pairwise_epsilon must be finite and > 0 off the diagonal: every pair "
            "shares cross coefficients that need a budget."
        )
    if np.any(pairs[np.eye(K, dtype=bool)] != 0):
        raise ValueError("pairwise_epsilon must be 0 on the diagonal.")
    if not np.allclose(pairs, pairs.T, rtol=1e-12, atol=0):
        k, q = np.argwhere(~np.isclose(pairs, pairs.T, rtol=1e-12, atol=0))[0]
        raise ValueError(
            f"inconsistent bottom-up budgets: party {k} offers eps^{k}{q} = "
            f"{pairs[k, q]} but party {q} offers {pairs[q, k]}; each pair must "
            "agree on one value (pairwise_epsilon must be symmetric)."
        )
    local = totals - pairs.sum(axis=1)
    if np.any(local <= 0):
        k = int(np.flatnonzero(local <= 0)[0])
        raise ValueError(
            f"inconsistent bottom-up budgets: party {k}'s pairwise budgets sum to "
            f"{pairs[k].sum():.6g}, which leaves nothing of its total "
            f"eps^({k}) = {totals[k]:.6g} for its single-party coefficients."
        )
    return local, pairs


def bottom_up_spend(local, pairs):
    """The record's epsilon under bottom-up budgets: every single-party budget
    ``eps^k`` once and every pair's ``eps^kl`` once (each group of coefficients
    is released once, and a record touches every group)."""
    return float(np.sum(local) + np.triu(pairs, 1).sum())


def check_public_parameters(
    *,
    budget,
    mechanism,
    noise_generation,
    party_epsilon,
    pairwise_epsilon,
    n_parties,
    budgets_declared_later=False,
):
    """Refuse inconsistent public parameters (ValueError naming the parameter).

    Returns the bottom-up ``(local, pairs)`` budgets, or None for top-down (or
    when ``budgets_declared_later``: the server learns them from the parties).
    """
    if noise_generation not in NOISE_GENERATIONS:
        raise ValueError(
            f"noise_generation must be one of {NOISE_GENERATIONS}, got "
            f"{noise_generation!r}."
        )
    if budget == "top-down":
        if party_epsilon is not None or pairwise_epsilon is not None:
            raise ValueError(
                "party_epsilon and pairwise_epsilon are only used with "
                'budget="bottom-up".'
            )
        return None
    if budget != "bottom-up":
        raise ValueError(f"budget must be 'top-down' or 'bottom-up', got {budget!r}.")
    if mechanism != "laplace":
        raise ValueError('budget="bottom-up" supports mechanism="laplace" only.')
    if budgets_declared_later:
        return None
    return check_bottom_up(party_epsilon, pairwise_epsilon, n_parties)


# --------------------------------------------------------------------------- #
# the declared domain
# --------------------------------------------------------------------------- #
def assemble_domain(declarations, partition, label_party, *, fit_intercept):
    """The record's declared domain from each party's declaration of its own
    columns, in the user's units (the server then centres it).

    ``declarations[k]``: ``{"lower", "upper"}`` (party k's box, or None),
    ``"data_norm"`` (the record's row-norm bound ``R``, or None; the same for
    every party) and, from the label party, ``"y_bounds"``. The intercept column's
    value is ``R`` if declared, else the largest absolute bound (as centrally).
    """
    d = sum(len(cols) for cols in partition)
    boxes = [dec.get("lower") is not None for dec in declarations]
    if any(boxes) and not all(boxes):
        raise ValueError("either every party declares a box for its columns or none.")
    norms = {dec.get("data_norm") for dec in declarations}
    if len(norms) != 1:
        raise ValueError(f"the parties declare different data_norm values: {norms}.")
    data_norm = norms.pop()
    lower = upper = None
    if all(boxes):
        lower, upper = np.empty(d), np.empty(d)
        for cols, dec in zip(partition, declarations):
            lower[cols] = np.asarray(dec["lower"], dtype=np.float64)
            upper[cols] = np.asarray(dec["upper"], dtype=np.float64)
    if data_norm is not None:
        scaling = float(data_norm)
    else:
        scaling = float(np.max(np.maximum(np.abs(lower), np.abs(upper))))
    y_bounds = declarations[label_party].get("y_bounds")
    return DataDomain(
        n_features=d,
        lower=lower,
        upper=upper,
        data_norm=data_norm,
        y_bounds=None if y_bounds is None else tuple(float(v) for v in y_bounds),
        fit_intercept=bool(fit_intercept),
        intercept_scaling=scaling if scaling > 0 else 1.0,
    )


# --------------------------------------------------------------------------- #
# the plan
# --------------------------------------------------------------------------- #
def gaussian_epsilon(sigma, delta, sens, epsilon_max):
    """Smallest epsilon with ``gaussian_delta(sigma, epsilon, sens) <= delta``."""
    if gaussian_delta(sigma, 0.0, sens) <= delta:
        return 0.0
    lo, hi = 0.0, epsilon_max
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(sigma, mid, sens) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


@dataclass
class Plan:
    """Everything the server decides before any data moves.

    ``groups``: ``{key: NoiseGroup}``; ``specs``: ``{key: mechanism spec}``;
    ``sensitivity``: of the whole release (top-down) or None; ``top_mechanism``:
    the one mechanism of a top-down release (the dealer draws from it);
    ``budgets``: bottom-up ``(local, pairs)`` or None.
    """

    objective: str
    domain: DataDomain
    partition: list
    label_party: int
    linear_weight: float
    groups: dict
    specs: dict
    sensitivity: object
    top_mechanism: object
    top_spec: dict
    budgets: object
    epsilon: float
    delta: float
    mechanism: str
    n_classes: int = 2

    @property
    def n_coef(self):
        return self.domain.n_coef

    @property
    def n_lin(self):
        """Linear columns per coefficient row (``C - 1``, or 1)."""
        return self.n_classes - 1 if self.objective == "multinomial_taylor" else 1

    def _label_bound(self):
        """``max |beta(y)|`` over the (centred) label range the plan declares."""
        _, beta = objective_constants(self.objective)
        if self.objective == "multinomial_taylor":
            return 1.0  # |1/C - y_c| <= 1 - 1/C
        y_bounds = self.domain.y_bounds or (0.0, 1.0)
        y_bounds = np.asarray(y_bounds, dtype=np.float64)
        return float(np.max(np.abs(beta(y_bounds))))

    def value_bound(self, n_samples):
        """Bound on the absolute value of any exact cross coefficient (from the
        declared domain and n, not the data: the bfv setup depends on it)."""
        kappa, _ = objective_constants(self.objective)
        lo, hi = self.domain.feature_intervals
        m_x = float(np.max(np.maximum(np.abs(lo), np.abs(hi))))
        m_beta = self._label_bound()
        return n_samples * m_x * max(m_x * kappa, m_beta * self.linear_weight)

    def payload_bounds(self, key, n_samples):
        """``(quad, lin)``: bounds on the absolute value of each noisy coefficient
        of group ``key`` that a contributor (or the pair's evaluator) may send.

        Only public quantities enter: the plan's (centred) domain, ``n`` and the
        group's mechanism. Every party clips its columns (labels) to the plan's
        domain, so one row adds at most ``kappa m_r m_c`` to the entry ``(r, c)``
        of ``A`` and ``c m_j max|beta(y)|`` to the linear entry of row ``j``,
        where ``m_j = max(|lo_j|, |hi_j|)`` is the largest absolute value of
        feature ``j`` inside the declared box and ball
        (:attr:`~skdp._fm.DataDomain.feature_intervals`), ``m_d`` the intercept
        column's ``intercept_scaling``, ``c`` the linear weight and ``beta(y)``
        ranges over the declared labels (``y_bounds``; 0/1 or one-hot labels for
        the classifiers). A party's exact sum is at most ``n`` times that. The
        released value adds the noise lattice's rounding (``g / 2``) and the
        noise of each contributor, each at most the tail bound ``60 b + 12
        sigma`` of the group's mechanism (Laplace scale ``b``, Gaussian
        ``sigma``): a Laplace draw exceeds ``60 b`` with probability ``e^-60``,
        a Gaussian ``12 sigma`` with less, so an honest party never exceeds the
        bound. A relative slack of ``1e-9`` (plus ``1e-9`` of
        :meth:`value_bound` and the noise bound) covers floating-point rounding
        of the sums and bfv's fixed-point grid. Anything larger (or not finite)
        did not come from data in the declared domain: the receiver refuses it.
        """
        group = self.groups[key]
        kappa, _ = objective_constants(self.objective)
        domain = self.domain
        lo, hi = domain.feature_intervals
        m = np.empty(self.n_coef)
        m[: domain.n_features] = np.maximum(np.abs(lo), np.abs(hi))
        if domain.fit_intercept:
            m[domain.n_features] = domain.intercept_scaling
        rows, cols = (np.asarray(i, dtype=np.intp) for i in group.quad)
        lin_rows = np.asarray(group.lin, dtype=np.intp) // self.n_lin
        n = float(n_samples)
        quad = n * kappa * m[rows] * m[cols]
        lin = n * self.linear_weight * self._label_bound() * m[lin_rows]
        mech = group.mechanism
        granularity = float(getattr(mech, "granularity", 0.0))
        tail = noise_tail_bound(mech)
        noise = len(group.contributors) * tail + granularity
        # floating point, and bfv's fixed-point grid (far finer than this)
        atol = PAYLOAD_RTOL * (self.value_bound(n_samples) + noise)
        slack = 1.0 + PAYLOAD_RTOL
        return quad * slack + noise + atol, lin * slack + noise + atol

    def noise_std(self, noise_generation="dealer"):
        """``(std on A, std on c b)`` for the post-processing: the mechanism's
        (root mean square over the groups), or with ``"threshold"`` shares the
        noise actually released (``m / (m - 1)`` times the variance on a group
        with ``m >= 2`` contributors)."""
        threshold = noise_generation == "threshold"
        if self.budgets is None and not threshold:
            std = release_noise_std(self.top_mechanism)
            return std, std

        def std(g):
            out = release_noise_std(g.mechanism)
            m = len(g.contributors)
            return out * math.sqrt(m / (m - 1)) if threshold and m > 1 else out

        quad = [(len(g.quad[0]), std(g)) for g in self._gs]
        lin = [(len(g.lin), std(g)) for g in self._gs]
        return tuple(
            math.sqrt(sum(n * s * s for n, s in pairs) / sum(n for n, _ in pairs))
            for pairs in (quad, lin)
        )

    @property
    def _gs(self):
        return list(self.groups.values())

    def spend(self):
        """``(epsilon, delta)`` of the whole record."""
        if self.budgets is None:
            delta = self.delta if self.mechanism == "gaussian" else 0.0
            if math.isinf(self.epsilon):
                delta = 0.0
            return float(self.epsilon), float(delta)
        return bottom_up_spend(*self.budgets), 0.0

    def party_privacy(self):
        """Each party's epsilon (see the estimators' ``party_privacy_``)."""
        multinomial = self.objective == "multinomial_taylor"
        if self.budgets is not None:
            local, pairs = self.budgets
            if multinomial:
                return self._multinomial_bottom_up_privacy()
            return local + pairs.sum(axis=1)
        domain, c = self.domain, self.linear_weight
        p, d = domain.n_coef, domain.n_features
        mech = self.top_mechanism
        out = np.empty(len(self.partition))
        for k, cols in enumerate(self.partition):
            mine = np.zeros(p, bool)
            mine[cols] = True
            qm = mine[:, None] | mine[None, :]
            lm = mine.copy()
            if k == self.label_party:
                lm[:] = True  # every linear entry holds its labels
            qm[d:, d:] = False
            n_lin_k = int(lm.sum())
            if multinomial:
                sens_k = self._multinomial_party_sensitivity(k, qm, mine)
                n_lin_k *= self.n_lin
            else:
                sens_k = cached_sensitivity(self.objective, domain, c, qm, lm)
            if math.isinf(self.epsilon):
                out[k] = np.inf
            elif self.mechanism == "laplace":
                n_k = int(np.triu(qm).sum() + n_lin_k)
                eps_k = (sens_k.l1 + n_k * mech.granularity) / mech.scale
                out[k] = min(self.epsilon, eps_k)
            else:
                out[k] = gaussian_epsilon(
                    mech.sigma, self.delta, sens_k.l2, self.epsilon
                )
        return out

    def _multinomial_party_sensitivity(self, k, quad_mask, rows, group_rows=None):
        """Sensitivity of the coordinates party k's part of a record enters, for
        a neighbour that changes only that part (module Notes of
        :mod:`skdp.vertical._sensitivity`).

        ``quad_mask``: the entries of ``A`` it enters; ``rows``: bool (p,), its
        own coefficient rows; ``group_rows``: bool (p,), the linear rows counted
        (default every row: the whole release; for a group, the group's rows).
        """
        return multinomial_party_sensitivity(
            self.domain,
            self.n_classes,
            self.linear_weight,
            quad_mask,
            rows,
            holds_labels=k == self.label_party,
            group_rows=group_rows,
        )

    def _multinomial_bottom_up_privacy(self):
        """Bottom-up, multinomial: party k's epsilon is the sum over the groups
        its part enters of what its neighbours cost there: ``eps_G`` (its own
        group; a pair's for a party without the labels) or, for the label party
        on a pair's rows of the other's columns (the other's ``x`` fixed),
        ``(Delta_{G,L} + n_G g) / b_G`` at most ``eps_G``."""
        local, pairs = self.budgets
        p = self.n_coef
        out = np.empty(len(self.partition))
        for k in range(len(self.partition)):
            total = float(local[k])
            for key, g in self.groups.items():
                if key[0] != "pair" or k not in key[1:]:
                    continue
                eps_g = float(pairs[key[1], key[2]])
                if k != self.label_party or len(g.lin) == 0:
                    total += eps_g
                    continue
                qm = np.zeros((p, p), bool)
                qm[g.quad] = True
                group_rows = np.zeros(p, bool)
                group_rows[g.lin // self.n_lin] = True
                mine = np.zeros(p, bool)
                mine[self.partition[k]] = True
                sens = self._multinomial_party_sensitivity(k, qm, mine, group_rows)
                mech = g.mechanism
                eps_k = (sens.l1 + g.n_coordinates * mech.granularity) / mech.scale
                total += min(eps_g, eps_k)
            out[k] = total
        return out


def make_plan(
    *,
    objective,
    domain,
    partition,
    label_party,
    epsilon,
    delta,
    mechanism,
    linear_weight,
    budgets,
    n_classes=2,
):
    """Groups and their mechanisms for a release (no data involved).

    ``budgets``: None (top-down: one mechanism for every group, calibrated to the
    whole release) or the bottom-up ``(local, pairs)`` of
    :func:`check_bottom_up` (one Laplace mechanism per group).
    ``n_classes``: ``C`` of the ``"multinomial_taylor"`` objective. Top-down
    the release, its sensitivity and its mechanism are those of
    :func:`skdp._fm.multinomial.release_multinomial`; bottom-up each group's
    is :func:`~skdp.vertical._sensitivity.multinomial_group_sensitivity`.
    """
    multinomial = objective == "multinomial_taylor"
    if linear_weight == "auto":
        if multinomial:
            c = balanced_multinomial_weight(domain, n_classes, mechanism)
        else:
            c = balanced_linear_weight(objective, domain, mechanism)
    else:
        c = float(linear_weight)
    n_lin = n_classes - 1 if multinomial else 1
    coords = coordinate_groups(partition, label_party, domain.fit_intercept, n_lin)
    p = domain.n_coef
    specs, mechs = {}, {}
    sens = top = top_spec = None
    if budgets is None:
        if multinomial:
            sens = multinomial_sensitivity(domain, n_classes, linear_weight=c)
            n = multinomial_n_released(domain, n_classes)
        else:
            sens = cached_sensitivity(objective, domain, c)
            n = n_released(domain)
        top = make_mechanism(epsilon, delta, sens, n, mechanism)
        top_spec = mechanism_spec(top, sens, n, mechanism)
        for key in coords:
            mechs[key], specs[key] = top, top_spec
    else:
        local, pairs = budgets
        for key, (_, (rows, cols), lin) in coords.items():
            qm = np.zeros((p, p), bool)
            qm[rows, cols] = True
            lm = np.zeros(p, bool)
            if multinomial:
                lm[lin // n_lin] = True  # the group's rows, all C - 1 columns
                sens_g = multinomial_group_sensitivity(domain, n_classes, c, qm, lm)
            else:
                lm[lin] = True
                sens_g = cached_sensitivity(objective, domain, c, qm, lm)
            eps = local[key[1]] if key[0] == "local" else pairs[key[1], key[2]]
            n = len(rows) + len(lin)
            mechs[key] = make_mechanism(eps, 0.0, sens_g, n, "laplace")
            specs[key] = mechanism_spec(mechs[key], sens_g, n, "laplace")
    groups = {
        key: NoiseGroup(key, contrib, quad, lin, mechs[key])
        for key, (contrib, quad, lin) in coords.items()
    }
    return Plan(
        objective=objective,
        domain=domain,
        partition=[np.asarray(cols) for cols in partition],
        label_party=int(label_party),
        linear_weight=c,
        groups=groups,
        specs=specs,
        sensitivity=sens,
        top_mechanism=top,
        top_spec=top_spec,
        budgets=budgets,
        epsilon=float(epsilon),
        delta=float(delta),
        mechanism=mechanism,
        n_classes=int(n_classes),
    )
