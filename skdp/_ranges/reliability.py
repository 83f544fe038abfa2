"""When a private range can work: the failure bound and the refusal threshold.

A range released on the open grid (no envelope) with ``x = n * eps_c`` (``n``
rows, ``eps_c`` the column's part of epsilon) **fails** when its draw misses
its targets by a large part of the data:

- median and half-width (``x < CENTRE_WIDTH_BELOW``): the median lands
  outside the central half of the rows, ``d_{1/2}(m) >= n / 4``, or the
  half-width holds fewer than a quarter or more than three quarters of the
  rows, ``d(w) >= n / 4``;
- quantile pair at level ``q``: an end lands ``n / 8`` ranks (or, for ``q <
  1/8``, ``(1/4 - q) n``) or more from its target, or beyond the data.

Outside these events the range holds more than a quarter of the rows and is
at most 8 times as wide as the rows' range (whatever their distribution),
and for a normal-shaped column it contains the central half of the rows
``[Q_{1/4}, Q_{3/4}]`` (the fences ``4 w``, ``k(q) (b - a)`` reach past
them; checked for the normal). That is the **coverage guarantee**: ``P(the
range contains the central half) >= 1 - beta(x, n)``.

Derivation (the exponential mechanism's utility bound, McSherry & Talwar
2007, with the grid's base measure ``mu``): a mechanism ``P(g) ∝ mu_g exp(-e
d(g) / 2)`` puts on a bad set ``B`` at most ``sum_B mu e^{-e d / 2} /
(mu(G_r) e^{-e r / 2})``, ``G_r`` the candidates within ``r`` ranks of the
target. Bad candidates inside the rows' range (base mass ``Lambda``) are at
least ``s`` ranks off; those beyond the rows (mass at most ``M``, the whole
grid: 83.9, or 42.5 for widths) are the full distance off (``n / 2`` for the
median and the width, ``q n`` for a pair end). The two centre-width draws
get ``e = eps_c / 2`` each, ``s = n / 4`` and ``r = n / 16``::

    beta_cw(x, n) = (rho_m + rho_w) e^{-3x/64} + (M / om_m + M_w / om_w) e^{-7x/64}

with ``rho = Lambda / om`` and ``om`` the mass of ``G_{n/16}``. The pair
draws both ends with the whole ``eps_c`` from ``mu_a mu_b exp(-eps_c
max(d_a, d_b) / 2)``: the marginal of one end is ``∝ mu_a F(d_a)`` with
``F(delta) / F(r) <= (2 Lambda / om) e^{-eps_c (delta - r) / 2} + (M / om)
e^{-eps_c (q n - r) / 2}`` (the other end ranges over at most the rows'
range until it too is beyond them), so per end::

    (Lambda / om) (2 Lambda / om) e^{-x (s - r) / (2n)}
        + (M / om) ((2 Lambda + M) / om) e^{-x (q n - r) / (2n)}

minimised over ``r`` in a public list, and twice that for two ends.

The masses are data-dependent; the bound is stated for a **reference
column**: normal, with standard deviation at least ``REFERENCE_CV`` = 0.1
of its mean's magnitude (wages, log-prices, test scores of 500 +- 100;
columns around 0 have more mass near their centre and do better). Then
``Lambda = 2 z_n c`` (the rows' range, ``z_n = Phi^{-1}(1 - 1/(2n))``),
``om_m = 0.315 c`` (the central eighth of the rows), ``om_w = 0.294`` (the
widths holding 7/16 to 9/16 of the rows; scale-free), the widths' inside
mass ``ln(0.32 n / 0.63) + ln(z_n / 1.15)``, and for a pair end at level
``q`` ``om(r) = 2 (r / n) c / phi(Phi^{-1}(q))``. ``c`` cancels in every
``Lambda / om`` and stays in ``M / om``: a column whose spread is a
fraction ``c < REFERENCE_CV`` of its magnitude (years, 2000 +- 10) has those
terms ``REFERENCE_CV / c`` times larger.

Numbers (``n = 1,000``): ``beta_cw`` = 0.47 at ``x = 100``, 0.12 at 128,
0.041 at 150, 0.0039 at 200; the pair's bound is 3.4 (vacuous) at 160,
0.036 at 240, 0.015 at 256 and 0.0011 at 300 (at most 0.033 and 0.0024 for
any ``n`` up to 10^6). So the median and half-width are used up to
``CENTRE_WIDTH_BELOW`` = 256, the pair above, and the failure bound is below
``BETA`` = 5% from ``min_n_epsilon(n)`` on (146 at ``n = 1,000``; 142 at
300, 151 at 10,000, 158 at 10^6): the **refusal threshold**.
Below it a range is not released (``ValueError`` before any spend); inside
an envelope the envelope is kept at no cost instead
(:mod:`~skdp._ranges.envelope_budget`).

The bound is conservative (union bounds over whole regions): measured on the
53 numeric columns and labels of ``bench_small_data``, the centre-width
release failed (more than 30 times too wide or under half the rows) in 4% of
draws at ``x = 128`` and 6% at 100, where the bound says 12% and 47% for the
reference column.
"""

import functools
import math

import numpy as np
from scipy import stats

from skdp._ranges.grid import CENTRE_WIDTH_BELOW, candidate_grid, quantile_level

__all__ = [
    "BETA",
    "REFERENCE_CV",
    "centre_width_failure_bound",
    "failure_bound",
    "min_n_epsilon",
    "pair_failure_bound",
]

# the failure probability a released range may have at the threshold
BETA = 0.05
# the reference column's standard deviation over its mean's magnitude
REFERENCE_CV = 0.1
# the pair's slack for the good set: ranks within r of the target, r from
# these fractions of n (and of q n)
_R_FRACTIONS = (1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256, 1 / 512)
_R_OF_Q = (1 / 2, 1 / 4, 1 / 8, 1 / 16)


@functools.cache
def _grid_masses():
    """``(M, M_w)``: base mass of the whole grid and of its widths (>= 0)."""
    grid, log_weight = candidate_grid()
    weight = np.exp(log_weight)
    return float(weight.sum()), float(weight[grid >= 0].sum())


def _z_n(n):
    """The normal reference's extreme, ``Phi^{-1}(1 - 1 / (2 n))``."""
    return float(stats.norm.ppf(1.0 - 0.5 / max(int(n), 2)))


def centre_width_failure_bound(n_epsilon, n):
    """``beta_cw(x, n)``: the median and half-width's failure bound for the
    reference column (module docstring)."""
    x = float(n_epsilon)
    M, M_w = _grid_masses()
    z = _z_n(n)
    c = REFERENCE_CV
    band = float(stats.norm.ppf(9 / 16) - stats.norm.ppf(7 / 16))  # 0.315
    om_m = band * c
    om_w = math.log(stats.norm.ppf(25 / 32) / stats.norm.ppf(23 / 32))  # 0.294
    rho_m = 2.0 * z * c / om_m
    inside_w = math.log(stats.norm.ppf(5 / 8) * 2 * n / 1.25) + math.log(
        z / stats.norm.ppf(7 / 8)
    )
    rho_w = max(inside_w, 0.0) / om_w
    return (rho_m + rho_w) * math.exp(-3 * x / 64) + (M / om_m + M_w / om_w) * math.exp(
        -7 * x / 64
    )


def pair_failure_bound(n_epsilon, n, q):
    """The quantile pair's failure bound (both ends) at level ``q`` for the
    reference column (module docstring)."""
    x = float(n_epsilon)
    M, _ = _grid_masses()
    c = REFERENCE_CV
    lam = 2.0 * _z_n(n) * c
    s = max(1 / 8, 1 / 4 - q)
    density = 1.0 / float(stats.norm.pdf(stats.norm.ppf(q)))
    best = math.inf
    for r in _R_FRACTIONS + tuple(f * q for f in _R_OF_Q):
        if r > q or r >= s:
            continue
        om = 2.0 * r * c * density
        beyond = math.exp(-x * (q - r) / 2)
        end = (lam / om) * (
            (2 * lam / om) * math.exp(-x * (s - r) / 2) + (M / om) * beyond
        ) + (M / om) * ((lam + M) / om) * beyond
        best = min(best, end)
    return 2.0 * best


def failure_bound(n_epsilon, n):
    """The failure bound of the release :func:`private_bounds` makes for a
    column with ``n * eps_c = n_epsilon`` and no envelope (the median and
    half-width below ``CENTRE_WIDTH_BELOW``, the pair above); 0 for an
    infinite budget."""
    x = float(n_epsilon)
    if math.isinf(x):
        return 0.0
    if x < CENTRE_WIDTH_BELOW:
        return min(1.0, centre_width_failure_bound(x, n))
    return min(1.0, pair_failure_bound(x, n, quantile_level(n, x / n)))


@functools.lru_cache(maxsize=256)
def min_n_epsilon(n):
    """The refusal threshold: the least ``n * eps_c`` (to 0.01) at which a
    column of ``n`` rows without an envelope gets a range with failure
    bound at most ``BETA`` (the bound falls with ``n * eps_c``)."""
    lo, hi = 1.0, 4096.0
    while hi - lo > 0.01:
        mid = 0.5 * (lo + hi)
        if failure_bound(mid, n) <= BETA:
            hi = mid
        else:
            lo = mid
    return hi
