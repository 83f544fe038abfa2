"""VerticalFMClassifier on more than two classes: bottom-up budgets (one
Laplace mechanism per coefficient group at the group's restricted
sensitivity) and the exact per-party privacy (skdp.vertical._sensitivity)."""

import itertools
import math

import numpy as np
import pytest

from skdp._fm import DataDomain, Sensitivity, make_mechanism, sensitivity
from skdp._fm.multinomial import multinomial_sensitivity
from skdp.accounting import track_budget
from skdp.linear_model import FMLogisticRegression
from skdp.utils import audit_mechanism
from skdp.vertical import VerticalFMClassifier
from skdp.vertical._plan import make_plan, triu_position
from skdp.vertical._sensitivity import multinomial_party_sensitivity
from tests.linear_model._domain_points import extreme_points
from tests.vertical._data import needs_tenseal
from tests.vertical.test_multinomial import PARTS, three_classes

K = 3
PAIRS = np.full((K, K), 0.2) - 0.2 * np.eye(K)
TOTALS = np.array([1.0, 1.2, 1.4])
SIZES = [len(cols) for cols in PARTS]  # 1, 2, 3


def _plan(domain, C, c=0.5, label_party=1, budgets=(TOTALS, PAIRS), partition=PARTS):
    if budgets is not None:
        totals, pairs = budgets
        budgets = (totals - pairs.sum(axis=1), pairs)
    return make_plan(
        objective="multinomial_taylor",
        domain=domain,
        partition=[np.asarray(cols) for cols in partition],
        label_party=label_party,
        epsilon=1.0,
        delta=0.0,
        mechanism="laplace",
        linear_weight=c,
        budgets=budgets,
        n_classes=C,
    )


def _release_vector(x, label, domain, C, c):
    """One record's released coordinates: A[triu] (intercept diagonal 0), c B."""
    s = domain.intercept_scaling
    xa = np.append(x, s) if domain.fit_intercept else np.asarray(x, float)
    p = xa.size
    quad = np.outer(xa, xa)[np.triu_indices(p)] / 8
    if domain.fit_intercept:
        quad[-1] = 0.0  # s^2 / 8 for every record: public
    beta = 1.0 / C - np.eye(C)[label][: C - 1]
    return np.concatenate([quad, c * np.outer(xa, beta).ravel()])


def _group_positions(group, p):
    """Positions of a group's coordinates in _release_vector's order."""
    quad = triu_position(group.quad[0], group.quad[1], p)
    return np.concatenate([quad, p * (p + 1) // 2 + group.lin])


def _max_diff(V):
    D = V[:, None, :] - V[None, :, :]
    return np.abs(D).sum(-1).max(), np.sqrt((D**2).sum(-1)).max()


BOX = DataDomain(6, lower=-1, upper=1, fit_intercept=True, intercept_scaling=1.0)
DOMAINS = [
    BOX,
    DataDomain(6, data_norm=1.0, fit_intercept=True, intercept_scaling=1.0),
    DataDomain(6, lower=[0, -1, 0, 0.5, -2, 0], upper=[1, 1, 2, 1, 0, 3]),
    DataDomain(6, data_norm=1.5, max_nonzero=3, fit_intercept=True),
]


# ------------------------------------------------------------ group sensitivity
@pytest.mark.parametrize("C", [3, 4, 7])
def test_group_sensitivities_closed_form_on_the_box(C):
    """|x_j| <= 1, s = 1, d_k = 1, 2, 3, label party 1 (module Notes of
    skdp.vertical._sensitivity): quadratic parts d_k^2/8 + s d_k/4 (own block
    and intercept entries) and d_k d_q / 4 (cross block); linear rows
    2 c (2C - 3)/C per column of the label party's own rows and of the other's
    rows in its pairs, and 2 c s for the intercept row."""
    c, L, s = 0.5, 1, 1.0
    plan = _plan(BOX, C, c)
    row = 2 * c * (2 * C - 3) / C
    for k, dk in enumerate(SIZES):
        expected = dk * dk / 8 + s * dk / 4
        if k == L:
            expected += row * dk + 2 * c * s
        assert plan.specs["local", k]["l1"] == pytest.approx(expected, rel=1e-12)
    for k, q in itertools.combinations(range(K), 2):
        expected = SIZES[k] * SIZES[q] / 4
        if L in (k, q):
            expected += row * SIZES[q if k == L else k]
        assert plan.specs["pair", k, q]["l1"] == pytest.approx(expected, rel=1e-12)
    # on the box the groups together cost exactly the central sensitivity
    central = multinomial_sensitivity(BOX, C, linear_weight=c).l1
    assert sum(spec["l1"] for spec in plan.specs.values()) == pytest.approx(central)
    # each group: Laplace at its own budget
    for key, g in plan.groups.items():
        eps = TOTALS[key[1]] - PAIRS[key[1]].sum() if key[0] == "local" else 0.2
        assert g.mechanism.epsilon == pytest.approx(eps)
        assert g.n_coordinates == len(g.quad[0]) + len(g.lin)
        assert len(g.lin) % (C - 1) == 0


@pytest.mark.parametrize("dom", DOMAINS)
@pytest.mark.parametrize("C", [3, 5])
def test_group_sensitivities_bound_every_pair_of_records(dom, C):
    """Brute force over records (corners, interior, sphere) and all labels."""
    c = 0.7
    plan = _plan(dom, C, c)
    p = dom.n_coef
    rng = np.random.default_rng(0)
    V = np.array(
        [
            _release_vector(x, label, dom, C, c)
            for x in extreme_points(dom, rng, 100)
            for label in range(C)
        ]
    )
    for g in plan.groups.values():
        l1, l2 = _max_diff(V[:, _group_positions(g, p)])
        assert l1 <= g.mechanism.sensitivity * (1 + 1e-9)
        assert l2 <= plan.specs[g.key]["l2"] * (1 + 1e-9)


@pytest.mark.parametrize("C", [3, 4])
def test_pair_group_sensitivities_are_attained_on_the_box(C):
    # x'_q = -x_q, x'_L = x_L, the same label (not the last): the cross block
    # and the other's rows both move by twice their value
    c = 0.5
    plan = _plan(BOX, C, c)
    p = BOX.n_coef
    corners = [np.array(v, float) for v in itertools.product([-1, 1], repeat=6)]
    V = np.array([_release_vector(x, y, BOX, C, c) for x in corners for y in range(C)])
    for key, g in plan.groups.items():
        if key[0] == "pair":
            l1, _ = _max_diff(V[:, _group_positions(g, p)])
            assert l1 == pytest.approx(plan.specs[key]["l1"], rel=1e-12)


@pytest.mark.parametrize("C", [3, 6])
def test_linear_rows_closed_form_record_and_label_only(C):
    """Rows J of c B: 2 c (2C - 3)/C M_1(J) for record neighbours and
    2 c M_1(J) with x fixed (label only), attained by brute force."""
    dom = DataDomain(4, lower=-1, upper=1)
    c = 0.3
    rows = np.array([True, False, True, True])
    rec = multinomial_sensitivity(
        dom, C, linear_weight=c, quadratic=False, lin_mask=rows
    )
    lab = multinomial_sensitivity(
        dom,
        C,
        linear_weight=c,
        quadratic=False,
        lin_mask=np.zeros(4, bool),
        label_only_mask=rows,
    )
    assert rec.l1 == pytest.approx(2 * c * (2 * C - 3) / C * 3)
    assert rec.l2 == pytest.approx(2 * c * math.sqrt(C * C - C - 1) / C * math.sqrt(3))
    assert lab.l1 == pytest.approx(2 * c * 3)
    assert lab.l2 == pytest.approx(math.sqrt(2) * c * math.sqrt(3))
    corners = [np.array(v, float) for v in itertools.product([-1, 1], repeat=3)]
    labels = range(C)
    betas = {y: 1.0 / C - np.eye(C)[y][: C - 1] for y in labels}
    rec_max = max(
        np.abs(c * (np.outer(u, betas[a]) - np.outer(v, betas[b]))).sum()
        for u in corners
        for v in corners
        for a in labels
        for b in labels
    )
    lab_max = max(
        np.abs(c * np.outer(u, betas[a] - betas[b])).sum()
        for u in corners
        for a in labels
        for b in labels
    )
    assert rec_max == pytest.approx(rec.l1)
    assert lab_max == pytest.approx(lab.l1)


def test_two_classes_and_top_down_are_unchanged():
    # the central sensitivity with every row, and the binary one at C = 2
    for dom in DOMAINS:
        full = multinomial_sensitivity(dom, 4, linear_weight=0.6)
        masked = multinomial_sensitivity(
            dom, 4, linear_weight=0.6, lin_mask=np.ones(dom.n_coef, bool)
        )
        assert full == masked
        binary = sensitivity("logistic_taylor", dom, linear_weight=0.6)
        two = multinomial_sensitivity(dom, 2, linear_weight=0.6)
        assert two.l1 == pytest.approx(binary.l1, rel=1e-12)
    with pytest.raises(ValueError, match="record row or a label-only row"):
        multinomial_sensitivity(
            BOX, 3, lin_mask=np.ones(7, bool), label_only_mask=np.ones(7, bool)
        )


# ----------------------------------------------------------------- party privacy
def _party_neighbours(k, label_party, dom, C, c, rng):
    """Release vectors of records that differ only in party k's columns (and,
    for the label party, the label), grouped by the rest of the record."""
    cols = np.asarray(PARTS[k])
    groups = []
    for base in extreme_points(dom, rng, 6):
        block = [
            np.array(v, float) for v in itertools.product([-1, 1], repeat=len(cols))
        ]
        block += [base[cols], np.zeros(len(cols))]
        fixed_labels = range(C) if k != label_party else [None]
        for fixed in fixed_labels:
            vs = []
            for u in block:
                x = base.copy()
                x[cols] = u
                for y in range(C) if fixed is None else [fixed]:
                    vs.append(_release_vector(x, y, dom, C, c))
            groups.append(np.array(vs))
    return groups


@pytest.mark.parametrize("C", [3, 5])
def test_top_down_party_privacy_closed_form_and_brute_force(C):
    """|x| <= 1 box, s = 1: party k's linear part is 2 c (2C - 3)/C d_k (its
    own rows only, label fixed); the label party's is 2 c ((2C - 3)/C d_L + s
    + (d - d_L)) (others' rows with x fixed). Brute force over neighbours that
    change only party k's part: within Delta_k; its linear part attained."""
    c, L, d = 0.5, 1, 6
    plan = _plan(BOX, C, c, budgets=None)
    mech = plan.top_mechanism
    p = BOX.n_coef
    rng = np.random.default_rng(1)
    privacy = plan.party_privacy()
    for k, cols in enumerate(PARTS):
        mine = np.zeros(p, bool)
        mine[cols] = True
        qm = mine[:, None] | mine[None, :]
        qm[d:, d:] = False
        none = np.zeros((p, p), bool)
        lin = multinomial_party_sensitivity(
            BOX, C, c, none, mine, holds_labels=k == L
        ).l1
        dk = len(cols)
        if k == L:
            expected_lin = 2 * c * ((2 * C - 3) / C * dk + 1.0 + (d - dk))
            n_lin = p * (C - 1)
        else:
            expected_lin = 2 * c * (2 * C - 3) / C * dk
            n_lin = dk * (C - 1)
        assert lin == pytest.approx(expected_lin, rel=1e-12)
        quad = sensitivity(
            "logistic_taylor", BOX, quad_mask=qm, lin_mask=np.zeros(p, bool)
        ).l1
        n_k = int(np.triu(qm).sum()) + n_lin
        expected = (quad + expected_lin + n_k * mech.granularity) / mech.scale
        assert privacy[k] == pytest.approx(min(1.0, expected), rel=1e-9)
        if k != L:  # strictly below the former bound (every linear entry)
            every = multinomial_sensitivity(BOX, C, linear_weight=c, quadratic=False)
            assert expected_lin < every.l1
        # brute force over neighbours of party k's part alone
        lin_pos = np.arange(p * (p + 1) // 2, p * (p + 1) // 2 + p * (C - 1))
        worst = worst_lin = 0.0
        for V in _party_neighbours(k, L, BOX, C, c, rng):
            worst = max(worst, _max_diff(V)[0])
            worst_lin = max(worst_lin, _max_diff(V[:, lin_pos])[0])
        assert worst <= quad + lin + 1e-9
        assert worst_lin <= lin + 1e-9
        if k != L:
            assert worst_lin == pytest.approx(lin, rel=1e-12)
    # the label party's labels enter every linear entry: the least private
    assert privacy.argmax() == L


def test_label_party_pays_less_on_the_other_parties_rows():
    # their x is fixed: c x_J (beta - beta')^T, 2 c M_1(J), attained by two
    # labels below C (test_linear_rows_closed_form_record_and_label_only)
    C, c, L = 4, 0.5, 1
    dom = DataDomain(6, lower=-1, upper=1)
    p = dom.n_coef
    mine = np.zeros(p, bool)
    mine[PARTS[L]] = True
    others = multinomial_party_sensitivity(
        dom,
        C,
        c,
        np.zeros((p, p), bool),
        mine,
        holds_labels=True,
        group_rows=~mine,
    ).l1
    assert others == pytest.approx(2 * c * (6 - 2))  # < 2 c (2C - 3)/C * 4
    record = multinomial_sensitivity(
        dom, C, linear_weight=c, quadratic=False, lin_mask=~mine
    ).l1
    assert others < record


@pytest.mark.parametrize("C", [3, 4, 6])
def test_bottom_up_party_privacy(C):
    """Parties without the labels: eps^(k); the label party: eps^L plus, on
    each pair, eps_G (Delta_{G,L} + n_G g) / (Delta_G + n_G g), Delta_{G,L} =
    d_L d_q / 4 + 2 c d_q against Delta_G = d_L d_q / 4 + 2 c (2C - 3)/C d_q."""
    c, L = 0.5, 1
    plan = _plan(BOX, C, c)
    privacy = plan.party_privacy()
    for k in range(K):
        if k != L:
            assert privacy[k] == pytest.approx(TOTALS[k], rel=1e-12)
    expected = TOTALS[L] - PAIRS[L].sum()
    for q in range(K):
        if q == L:
            continue
        g = plan.groups[("pair", min(L, q), max(L, q))]
        dl, dq = SIZES[L], SIZES[q]
        mine = dl * dq / 4 + 2 * c * dq
        full = dl * dq / 4 + 2 * c * (2 * C - 3) / C * dq
        assert g.mechanism.sensitivity == pytest.approx(full, rel=1e-12)
        gran = g.n_coordinates * g.mechanism.granularity
        expected += 0.2 * (mine + gran) / (full + gran)
    assert privacy[L] == pytest.approx(expected, rel=1e-9)
    if C == 3:  # (2C - 3)/C = 1: the label party pays its whole eps^(L)
        assert privacy[L] == pytest.approx(TOTALS[L], rel=1e-9)
    else:
        assert privacy[L] < TOTALS[L]


@pytest.mark.parametrize("C", [3, 4])
def test_party_sensitivity_per_group_against_the_plan_and_brute_force(C):
    """A party without the labels enters every coordinate of its groups: its
    sensitivity there is the group's. The label party on ("pair", L, q), x_q
    fixed: brute force over its corners and labels attains Delta_{G,L}."""
    c, L = 0.5, 1
    plan = _plan(BOX, C, c)
    p = BOX.n_coef
    for key, g in plan.groups.items():
        qm = np.zeros((p, p), bool)
        qm[g.quad] = True
        rows = np.zeros(p, bool)
        rows[g.lin // (C - 1)] = True
        for k in key[1:] if key[0] == "pair" else [key[1]]:
            mine = np.zeros(p, bool)
            mine[PARTS[k]] = True
            sens = plan._multinomial_party_sensitivity(k, qm, mine, rows)
            if k != L or key[0] == "local":
                assert sens.l1 == pytest.approx(plan.specs[key]["l1"], rel=1e-12)
                continue
            q = key[2] if key[1] == L else key[1]
            pos = _group_positions(g, p)
            worst = 0.0
            for x_q in itertools.product([-1.0, 1.0], repeat=SIZES[q]):
                V = []
                for x_l in itertools.product([-1.0, 1.0], repeat=SIZES[L]):
                    x = np.zeros(6)
                    x[PARTS[q]], x[PARTS[L]] = x_q, x_l
                    V += [_release_vector(x, y, BOX, C, c)[pos] for y in range(C)]
                worst = max(worst, _max_diff(np.array(V))[0])
            assert worst == pytest.approx(sens.l1, rel=1e-12)
            assert sens.l1 <= plan.specs[key]["l1"]


def _neighbour_parts(dom, base, cols, rng):
    """Records equal to ``base`` outside ``cols``, with party parts from the
    domain's extremes (its own, negated, zero; shrunk to fit a norm bound)."""
    others = np.setdiff1d(np.arange(dom.n_features), cols)
    room = np.inf
    if dom.data_norm is not None:
        room = math.sqrt(max(dom.data_norm**2 - np.sum(base[others] ** 2), 0.0))
    parts = [x[cols] for x in extreme_points(dom, rng, 30)]
    parts += [base[cols], -base[cols], np.zeros(len(cols))]
    lo, hi = dom.feature_intervals
    out = []
    for u in parts:
        u = u * min(1.0, room / max(np.linalg.norm(u), 1e-300))
        if np.all(u >= lo[cols]) and np.all(u <= hi[cols]):
            x = base.copy()
            x[cols] = u
            out.append(x)
    return out


def _group_claim(plan, key, k):
    """Party k's epsilon on group ``key`` (Plan.party_privacy's term): the
    group's, or for the label party on a pair's rows of the other's columns
    (their x fixed) ``min(eps_G, (Delta_{G,L} + n_G g) / b_G)``."""
    g = plan.groups[key]
    eps_g = g.mechanism.epsilon
    if k != plan.label_party or key[0] == "local" or len(g.lin) == 0:
        return eps_g
    p = plan.n_coef
    qm = np.zeros((p, p), bool)
    qm[g.quad] = True
    rows = np.zeros(p, bool)
    rows[g.lin // plan.n_lin] = True
    mine = np.zeros(p, bool)
    mine[plan.partition[k]] = True
    sens = plan._multinomial_party_sensitivity(k, qm, mine, rows)
    mech = g.mechanism
    return min(eps_g, (sens.l1 + g.n_coordinates * mech.granularity) / mech.scale)


@pytest.mark.parametrize(
    "dom",
    [
        DataDomain(4, data_norm=1.0, fit_intercept=True, intercept_scaling=1.0),
        DataDomain(
            4,
            lower=[0, -1, 0.5, -2],
            upper=[1, 2, 1, 0],
            fit_intercept=True,
            intercept_scaling=2.0,
        ),
    ],
)
@pytest.mark.parametrize("C", [3, 4])
def test_bottom_up_party_privacy_bounds_every_party_neighbour(dom, C):
    """On a ball and an off-centre box, non-contiguous columns: the groups
    partition the released coordinates (the intercept's diagonal, public, in
    none); and a record that changes only party k's columns (and, for the
    label party, the label) loses, on each group, at most party k's term
    there, with every coordinate rounded to the group's lattice and divided by
    its scale (the lattice step included), the terms summing to
    party_privacy()[k]."""
    c, L = 0.7, 1
    partition = [[0, 2], [1], [3]]
    plan = _plan(dom, C, c, label_party=L, partition=partition)
    p = dom.n_coef
    n_quad = p * (p + 1) // 2
    count = np.zeros(n_quad + p * (C - 1), int)
    step, scale = np.ones(count.size), np.ones(count.size)
    for g in plan.groups.values():
        pos = _group_positions(g, p)
        assert g.mechanism.dimension == pos.size
        count[pos] += 1
        step[pos], scale[pos] = g.mechanism.granularity, g.mechanism.scale
    expected = np.ones(count.size, int)
    expected[n_quad - 1] = 0  # the intercept's diagonal s^2 / 8
    np.testing.assert_array_equal(count, expected)
    privacy = plan.party_privacy()
    rng = np.random.default_rng(3)
    for k, cols in enumerate(partition):
        mine = [key for key in plan.groups if k in key[1:]]
        claims = {key: _group_claim(plan, key, k) for key in mine}
        assert sum(claims.values()) == pytest.approx(privacy[k], rel=1e-12)
        worst = dict.fromkeys(mine, 0.0)
        for base in extreme_points(dom, rng, 25):
            xs = _neighbour_parts(dom, base, np.asarray(cols), rng)
            for fixed in [None] if k == L else range(C):
                labels = range(C) if fixed is None else [fixed]
                V = np.array(
                    [_release_vector(x, y, dom, C, c) for x in xs for y in labels]
                )
                W = np.round(V / step) * step / scale
                for key in mine:
                    Wg = W[:, _group_positions(plan.groups[key], p)]
                    loss = np.abs(Wg[:, None] - Wg[None]).sum(-1).max()
                    worst[key] = max(worst[key], loss)
        for key in mine:
            assert worst[key] <= claims[key] * (1 + 1e-9)


def test_gaussian_top_down_party_privacy():
    X, y = three_classes(n_classes=4)
    clf = VerticalFMClassifier(
        epsilon=1.0,
        delta=1e-5,
        mechanism="gaussian",
        data_norm=1.0,
        partition=PARTS,
        label_party=1,
        classes=list("abcd"),
        linear_weight=0.5,
        random_state=0,
    ).fit(X, y)
    privacy = clf.party_privacy_
    assert np.all((privacy > 0) & (privacy <= 1.0))
    # the label party's labels enter every linear coefficient
    assert privacy.argmax() == 1
    assert np.all(privacy[[0, 2]] < 1.0)


# ------------------------------------------------------------------------- audit
def _group_release(group, values_of, llr_a, llr_b):
    """Release of one group's coordinates (rounded to the lattice, plus its
    Laplace noise); the statistic is the privacy-loss ratio between the two
    inputs' exact values (optimal for Laplace; post-processing)."""
    mech = group.mechanism
    g, b = mech.granularity, mech.scale
    n_coord = group.n_coordinates

    def run(inp, n, rng):
        exact = np.round(values_of(inp) / g) * g
        noise = np.asarray(mech.sample_noise(n * n_coord, rng)).reshape(n, n_coord)
        z = exact + noise
        return (np.abs(z - llr_b).sum(1) - np.abs(z - llr_a).sum(1)) / b

    return run


def _pair_setup(C, c=0.5):
    """Two parties of one column each, label party 0, |x| <= 1, no intercept:
    group ("pair", 0, 1) is x_0 x_1 / 8 and c x_1 beta(y)^T."""
    dom = DataDomain(2, lower=-1, upper=1)
    pairs = np.array([[0.0, 0.5], [0.5, 0.0]])
    plan = _plan(
        dom,
        C,
        c,
        label_party=0,
        budgets=(np.array([1.0, 1.0]), pairs),
        partition=[[0], [1]],
    )
    group = plan.groups[("pair", 0, 1)]

    def values(inp):
        x, y = inp
        beta = 1.0 / C - np.eye(C)[y][: C - 1]
        return np.concatenate([[x[0] * x[1] / 8], c * x[1] * beta])

    return plan, group, values


@pytest.mark.parametrize(
    "who, a, b",
    [("record", ((1, 1), 0), ((1, -1), 0)), ("label party", ((1, 1), 0), ((-1, 1), 1))],
)
def test_audit_of_a_pair_group(who, a, b):
    """Record neighbours cost the group's eps_G = 0.5; neighbours that change
    only the label party's part (x_1 fixed) cost its smaller party epsilon."""
    C = 4
    plan, group, values = _pair_setup(C)
    a = (np.array(a[0], float), a[1])
    b = (np.array(b[0], float), b[1])
    diff = np.abs(values(a) - values(b)).sum()
    mech = group.mechanism
    if who == "record":
        claim = 0.5
        assert diff == pytest.approx(mech.sensitivity)  # the worst pair
    else:
        claim = plan.party_privacy()[0] - 0.5  # its share on this pair
        assert claim < 0.5
        assert diff == pytest.approx(claim * mech.scale, rel=1e-6)
    run = _group_release(group, values, values(a), values(b))
    result = audit_mechanism(run, a, b, n_samples=200_000, random_state=0)
    assert result.epsilon_lower_bound <= claim
    assert result.epsilon_lower_bound > 0.5 * claim  # the audit has power
    # and a group noised for a quarter of the sensitivity is refuted
    weak = make_mechanism(0.5, 0.0, Sensitivity(mech.sensitivity / 4, 1.0), 4)
    group.mechanism = weak
    broken = audit_mechanism(
        _group_release(group, values, values(a), values(b)),
        a,
        b,
        n_samples=200_000,
        random_state=0,
    )
    assert broken.epsilon_lower_bound > claim


# ------------------------------------------------------------------- estimator
def _bottom_up(**params):
    return VerticalFMClassifier(
        data_norm=1.0,
        partition=PARTS,
        label_party=1,
        budget="bottom-up",
        party_epsilon=TOTALS,
        pairwise_epsilon=PAIRS,
        random_state=0,
        **params,
    )


@pytest.mark.parametrize(
    "backend, noise",
    [
        ("plaintext", "threshold"),
        ("plaintext", "distributed"),
        ("plaintext", "dealer"),
        pytest.param("bfv", "threshold", marks=needs_tenseal),
    ],
)
def test_bottom_up_multinomial_fits_and_spends_as_specified(backend, noise):
    X, y = three_classes(n_classes=4)
    with track_budget() as acc:
        clf = _bottom_up(
            classes=list("abcd"), secure_backend=backend, noise_generation=noise
        ).fit(X, y)
    local = TOTALS - PAIRS.sum(axis=1)
    assert clf.privacy_spent_.epsilon == pytest.approx(local.sum() + 0.6)
    assert len(acc.spends) == 1
    assert acc.total.epsilon == pytest.approx(clf.privacy_spent_.epsilon)
    for k in range(K):
        assert clf.group_epsilon_["local", k] == pytest.approx(local[k])
    assert clf.coef_.shape == (4, 6) and clf.intercept_.shape == (4,)
    assert set(np.unique(clf.predict(X))) <= set("abcd")
    assert clf.sensitivity_ is None
    np.testing.assert_allclose(clf.party_privacy_[[0, 2]], TOTALS[[0, 2]])
    assert clf.party_privacy_[1] < TOTALS[1]  # C = 4: the label party pays less


def test_bottom_up_multinomial_with_large_budgets_is_the_exact_fit():
    X, y = three_classes(n_classes=3, seed=2)
    classes = ["a", "b", "c"]
    big = 1e9
    clf = VerticalFMClassifier(
        data_norm=1.0,
        partition=PARTS,
        label_party=2,
        budget="bottom-up",
        party_epsilon=np.full(3, 3 * big),
        pairwise_epsilon=np.full((3, 3), big) - big * np.eye(3),
        classes=classes,
        linear_weight=0.5,
        noise_generation="dealer",
        random_state=0,
    ).fit(X, y)
    exact = FMLogisticRegression(
        epsilon=np.inf, data_norm=1.0, classes=classes, linear_weight=0.5
    ).fit(X, y)
    # noise of scale ~ Delta / 1e9 on statistics of size ~ n: far below 1e-5
    np.testing.assert_allclose(clf.coef_, exact.coef_, rtol=0, atol=1e-5)
    np.testing.assert_allclose(clf.intercept_, exact.intercept_, rtol=0, atol=1e-5)


def test_same_seed_same_model_and_inputs_unchanged():
    X, y = three_classes(n_classes=3)
    X0, y0 = X.copy(), y.copy()
    a = _bottom_up(classes=["a", "b", "c"]).fit(X, y)
    b = _bottom_up(classes=["a", "b", "c"]).fit(X, y)
    other = _bottom_up(classes=["a", "b", "c"]).set_params(random_state=1).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, other.coef_)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
