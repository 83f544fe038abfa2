"""Sensitivities of parts of a vertical release: a coefficient group's, and the
coordinates one party's part of a record enters (its ``party_privacy_``).

Binary objectives use the core's masked :func:`~skdp._fm.sensitivity.sensitivity`.
This module adds the multinomial (softmax Taylor, ``C > 2`` classes) ones.

Notes
-----
**Released coordinates** (:mod:`skdp._fm.multinomial`): ``A = G / 8`` (upper
triangle; entries ``x_j x_k / 8`` and, with an intercept, ``s x_j / 8``) and
``c B`` with rows ``c x_j beta(y)^T`` and the intercept row ``c s beta(y)^T``,
``beta(y) = 1/C - y[:C - 1]`` (the first ``C - 1`` classes; the last column is
not released). The quadratic entries are the binary ones (``kappa = 1/8``) and
carry no label. Every linear entry carries the label.

**Groups** (bottom-up; :func:`~skdp.vertical._plan.coordinate_groups`, the
binary grouping with ``C - 1`` columns per linear row): ``("local", k)`` is
party k's block of ``A`` with its intercept entries and, for the label party
``L``, the rows of ``B`` of its own columns and the intercept row;
``("pair", k, q)`` is the cross block ``cols_k x cols_q`` of ``A`` and, when
``L`` is ``k`` or ``q``, the rows of ``B`` of the other party's columns. So the
labels enter ``("local", L)`` and every ``("pair", L, q)``; a party ``q``
without the labels enters ``("local", q)`` (quadratic only), its pairs' cross
blocks and the rows of its columns in ``("pair", L, q)``.

**A group's sensitivity** (replace-one record neighbours ``(x, y) -> (x',
y')``; the mechanism of the group is calibrated to it). Its quadratic entries:
the binary restricted bound (:func:`~skdp._fm.sensitivity.sensitivity` with
the group's ``quad_mask``). Its feature rows ``J`` of ``B``:
``||x_J beta^T - x'_J beta'^T||_1 <= ||x_J||_1 ||beta||_1 + ||x'_J||_1
||beta'||_1 <= 2 M_1(J) (2C - 3)/C``, since ``||beta||_1 = (C - 1)/C +
(C - 2)/C = (2C - 3)/C`` for a label among the first ``C - 1`` classes and
``(C - 1)/C`` for the last; in L2 ``2 M_2(J) sqrt(C^2 - C - 1)/C``
(``||beta||_2^2 <= (1 - 1/C)^2 + (C - 2)/C^2``). ``M_1(J)``, ``M_2(J)``: the
largest ``||x_J||_1``, ``||x_J||_2`` the domain allows. Both are attained at
``x' = -x`` with the same label (not the last class) on a domain symmetric
about 0 (a centred box, a ball); otherwise the per-coordinate range bound
``sum_{j in J, c} width(beta_c x_j)`` is used when smaller. Its intercept row
``c s (beta - beta')``: ``beta - beta' = e_b - e_a`` restricted to the first
``C - 1`` classes, at most ``2 c s`` (L1) and ``sqrt(2) c s`` (L2). The parts
add (L1) or add in squares (L2), as for the binary groups. For the whole
release (every row, every entry of ``A``) this is the central
:func:`~skdp._fm.multinomial.multinomial_sensitivity`; the groups are
disjoint, so ``Lap(Delta_G / eps_G)`` on each costs a record
``sum_G eps_G``.

**A party's part of a record** (``party_privacy_``): a neighbour that changes
only party k's columns (and, for ``L``, the label), the rest of the record
fixed. The coordinates that change are those party k's part enters; their
sensitivity ``Delta_k``, computed as a group's, gives ``epsilon_k =
(Delta_k + n_k g) / b`` for Laplace noise of scale ``b`` and lattice step ``g``
on the ``n_k`` coordinates (or the Gaussian epsilon at the release's sigma).

- Party ``k != L``: its entries of ``A`` and the rows of ``B`` of its own
  columns only (the label is fixed: ``(x_J - x'_J) beta^T``, up to
  ``2 M_1(J) ||beta||_1``, the same bound, attained the same way). Before, every
  row of ``B`` was counted, an upper bound.
- The label party: its entries of ``A``, its own rows and the intercept row as
  above, and every other party's rows with their ``x`` fixed:
  ``c x_J (beta - beta')^T`` has exactly ``c ||x_J||_1 ||beta - beta'||_1 <=
  2 c M_1(J)`` (L1) and ``sqrt(2) c M_2(J)`` (L2), attained by two labels among
  the first ``C - 1`` classes: ``2 c M_1(J)`` instead of ``2 c M_1(J) (2C -
  3)/C`` (equal at ``C = 3``, about half for large ``C``). The smaller of this
  and the record bound over every row (smaller under a row-norm bound alone,
  where ``M_1(L) + M_1(others) > M_1(all)``) is used; both are valid.
- Bottom-up, a party's part enters exactly the coordinates of its own groups
  (``("local", k)`` and its pairs), every coordinate of each, with the group's
  restricted sensitivity (attained by its neighbours), so it costs ``eps_G``
  there; except the label party on ``("pair", L, q)``, whose rows hold
  ``x_q`` fixed: ``min(eps_G, (Delta_{G,L} + n_G g) / b_G)`` with
  ``Delta_{G,L}`` the cross block's bound plus the label-only rows'. Party k's
  epsilon is the sum over its groups (at most its ``eps^(k)``).

Each linear part is the exact maximum of its own coordinates on a box symmetric
about 0 or a ball; a group's quadratic part is the binary core's restricted
bound, exact on such a box and valid but not always tight for a subset of pairs
under a row-norm bound (an independent brute-force review found up to 1.34x
there). The parts are added, as in every FM sensitivity of skdp, so a group's or
a party's total is an upper bound that can exceed the joint maximum when two
parts are maximized by different neighbours (the intercept row needs two labels,
the feature rows one). For two classes none of this is used: the binary
objective keeps its own sensitivities and outputs.

References
----------
Zhang, Zhang, Xiao, Yang & Winslett (2012). Functional mechanism: regression
analysis under differential privacy. VLDB.

Xu, Yuan & Wu (2021). Achieving differential privacy in vertically partitioned
multiparty learning. IEEE Big Data (arXiv:1911.04587).
"""

import hashlib
import math

import numpy as np

from skdp._fm import Sensitivity, sensitivity
from skdp._fm.multinomial import multinomial_sensitivity

__all__ = [
    "cached_sensitivity",
    "multinomial_group_sensitivity",
    "multinomial_party_sensitivity",
]

_SENSITIVITY_CACHE = {}


def cached_sensitivity(objective, domain, c, quad_mask=None, lin_mask=None):
    """The core's sensitivity, memoized: it only depends on the declared domain
    (no data), and at d = 800 one evaluation costs about a second."""
    key = [objective, domain.n_features, domain.data_norm, domain.y_bounds, c]
    key += [domain.fit_intercept, domain.intercept_scaling, domain.max_nonzero]
    for arr in (domain.lower, domain.upper, quad_mask, lin_mask):
        arr = None if arr is None else np.asarray(arr)
        key.append(None if arr is None else (arr.dtype.str, arr.shape, arr.tobytes()))
    key = hashlib.sha256(repr(key).encode()).hexdigest()
    if key not in _SENSITIVITY_CACHE:
        if len(_SENSITIVITY_CACHE) >= 256:
            _SENSITIVITY_CACHE.clear()
        _SENSITIVITY_CACHE[key] = sensitivity(
            objective, domain, linear_weight=c, quad_mask=quad_mask, lin_mask=lin_mask
        )
    return _SENSITIVITY_CACHE[key]


def _with_quadratic(domain, quad_mask, linear):
    """The (cached) binary quadratic part of ``quad_mask`` plus ``linear``."""
    p = domain.n_coef
    quad = cached_sensitivity(
        "logistic_taylor", domain, 1.0, quad_mask, np.zeros(p, bool)
    )
    return Sensitivity(
        l1=float(quad.l1 + linear.l1), l2=float(math.hypot(quad.l2, linear.l2))
    )


def multinomial_group_sensitivity(domain, n_classes, c, quad_mask, rows):
    """A group's sensitivity for record neighbours (module Notes): the entries
    ``quad_mask`` of ``A`` and the rows ``rows`` (bool, (p,)) of ``c B``, all
    ``C - 1`` columns of each.

    Examples
    --------
    Two parties of one column each in the box ``|x_j| <= 1``, no intercept,
    the labels with party 0: the group ``("pair", 0, 1)`` is ``x_0 x_1 / 8``
    and ``c x_1 beta(y)^T``, with sensitivity ``2/8 + 2 c (2C - 3)/C``.

    >>> import numpy as np
    >>> from skdp._fm import DataDomain
    >>> dom = DataDomain(2, lower=-1, upper=1, fit_intercept=False)
    >>> cross = np.array([[False, True], [False, False]])
    >>> rows = np.array([False, True])
    >>> float(multinomial_group_sensitivity(dom, 4, 0.5, cross, rows).l1)
    1.5

    The label party alone (``x_1`` fixed) moves it by ``2/8 + 2 c`` at most:

    >>> own = np.array([True, False])
    >>> float(multinomial_party_sensitivity(
    ...     dom, 4, 0.5, cross, own, holds_labels=True, group_rows=rows).l1)
    1.25
    """
    linear = multinomial_sensitivity(
        domain, n_classes, linear_weight=c, quadratic=False, lin_mask=rows
    )
    return _with_quadratic(domain, quad_mask, linear)


def multinomial_party_sensitivity(
    domain, n_classes, c, quad_mask, own_rows, *, holds_labels, group_rows=None
):
    """Sensitivity of what party k's part of a record enters, for a neighbour
    that changes only that part (module Notes).

    Parameters
    ----------
    domain : DataDomain
    n_classes : int
    c : float
        The linear weight.
    quad_mask : bool array of shape (p, p)
        The entries of ``A`` its columns enter (within the group, if any).
    own_rows : bool array of shape (p,)
        The rows of ``B`` of its own columns.
    holds_labels : bool
        Whether it is the label party (its labels enter every row of ``B``).
    group_rows : bool array of shape (p,) or None
        The rows of ``B`` in the group considered (None: every row).

    Returns
    -------
    Sensitivity
    """
    p = domain.n_coef
    d = domain.n_features
    group = np.ones(p, bool) if group_rows is None else np.asarray(group_rows, bool)
    own = np.asarray(own_rows, bool)
    if not holds_labels:
        return multinomial_group_sensitivity(
            domain, n_classes, c, quad_mask, own & group
        )
    # the label party: its rows and the intercept's as record rows, the others'
    # rows with their x fixed; or every row as record rows, whichever is smaller
    record = group & own
    if domain.fit_intercept:
        record[d] = group[d]
    label_only = group & ~record
    split = multinomial_sensitivity(
        domain,
        n_classes,
        linear_weight=c,
        quadratic=False,
        lin_mask=record,
        label_only_mask=label_only,
    )
    joint = multinomial_sensitivity(
        domain, n_classes, linear_weight=c, quadratic=False, lin_mask=group
    )
    linear = Sensitivity(l1=min(split.l1, joint.l1), l2=min(split.l2, joint.l2))
    return _with_quadratic(domain, quad_mask, linear)
