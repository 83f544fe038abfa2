"""Which envelope columns get a range release, and how much of the budget.

A range inside a declared envelope is released only where its part of the
budget can find one (``MIN_N_EPSILON_ENVELOPE``) and a cheap private test
says the envelope is loose.

Tightening a range inside its envelope (``private_bounds(envelope=...)``)
pays only where the data fill a small part of the envelope; where they fill
most of it, the share spent on the range is lost to the fit for nothing (a
label range from documentation that is the data's own range, a feature whose
documented range it spans). Before a range is released, one Laplace count
per column asks whether the data sit in half the envelope; only the columns
that do get the rest of their part of the budget.
"""

import math

import numpy as np

__all__ = [
    "ENVELOPE_PART",
    "LOOSE_FRACTION",
    "MIN_N_EPSILON_ENVELOPE",
    "TEST_N_EPSILON",
    "TEST_SHARE",
    "column_shares",
    "drop_hopeless_envelopes",
    "half_window_count",
    "looseness_test",
    "looseness_n_epsilon",
]

# An envelope column whose n * epsilon_column is below this is not estimated
# (it keeps its envelope and costs nothing; the others get its share). Below
# MIN_N_EPSILON the level is q = 1/4, so a perfect quartile pair beats "keep
# the envelope" by at most exp(eps_c q n / 2) = exp(n eps_c / 8). Its handicap
# in a typical envelope (a [0, 1] encoding, or a label's documented range) is
# about e^16: FALLBACK_WEIGHT (Sum mu)^2 ~ 10 (4 decades * ln 10)^2 ~ e^6.7
# against the base mass of the pairs that score within a nat of the best,
# ~(1e-2)^2 ~ e^-9.2 (the candidates within 2 / eps_c ranks of a quartile:
# 2% of the rows at n eps_c = 100, about 1% of the value's magnitude). So
# below n eps_c = 8 * 16 = 128 the fallback is the likely outcome even for a
# perfect pair and the share would be spent for nothing. Measured (10 seeds,
# bench_small_data, share 0.2) in the cells whose ranges got 64-128 each:
# Adult at eps 0.1 lost 0.0114 accuracy against declared ranges, diamonds at
# eps 0.1 gained 1%, HMDA at eps 1 gained 0.004, census2000 at eps 0.1 lost
# 0.1%; none gained enough to pay for the share. Features are dropped before
# the label (the label's range moves every coefficient's noise).
MIN_N_EPSILON_ENVELOPE = 128.0  # 2 * KAPPA of private_bounds

# The windows: half the envelope wide, starting at every eighth of it (five
# windows), so that any interval up to 3/8 of the envelope wide lies inside
# one of them.
WINDOW_WIDTH = 0.5
WINDOW_STEP = 0.125
# A column is loose when its noisy count says at least this fraction of the
# rows lie in one window: its range can then be at least about twice tighter.
LOOSE_FRACTION = 0.9
# The test's least budget, n * epsilon_test: Laplace noise of scale n / 32,
# so that a column entirely inside one window is found loose with
# probability 1 - exp(-0.1 * 32) / 2 = 0.98, and one with only 70% of its
# rows in the best window is called loose with probability
# exp(-0.2 * 32) / 2 < 0.001.
TEST_N_EPSILON = 32.0
# Above 16 * 32 = 512 the test gets this share of the column's part, so that
# its errors fall with the budget: a column entirely in one window (an
# envelope at least twice too wide: its rows fill at most 3/8 of it) keeps
# its envelope with probability exp(-0.1 * N_t) / 2, N_t = max(32, x / 16)
# for x = n * eps_c: 2.0% up to x = 512, 0.1% at 1,000, 2e-6 at 2,000.
TEST_SHARE = 1.0 / 16.0
# The least n * epsilon_column of an envelope column: its test and its pair.
ENVELOPE_PART = MIN_N_EPSILON_ENVELOPE + TEST_N_EPSILON


def looseness_n_epsilon(n_epsilon_column):
    """The looseness test's ``n * epsilon``: ``max(TEST_N_EPSILON, TEST_SHARE
    * n_epsilon_column)``, a function of public quantities (``n`` and the
    column's part of epsilon)."""
    return max(TEST_N_EPSILON, TEST_SHARE * float(n_epsilon_column))


def half_window_count(x, lower, upper):
    """``g(x) = max_k #{i : x_i in W_k}``, the most rows in one window.

    ``W_k = [lower + k s w, lower + (k s + h) w]`` with ``w = upper - lower``,
    ``h = WINDOW_WIDTH``, ``s = WINDOW_STEP`` and ``k = 0 .. (1 - h) / s``:
    public windows, a function of the envelope only. Replacing one row
    changes each count by at most 1, hence their maximum by at most 1
    (sensitivity 1).
    """
    x = np.asarray(x, dtype=np.float64)
    width = float(upper) - float(lower)
    n_windows = int(round((1.0 - WINDOW_WIDTH) / WINDOW_STEP)) + 1
    starts = float(lower) + width * WINDOW_STEP * np.arange(n_windows)
    ends = starts + width * WINDOW_WIDTH
    inside = (x[:, None] >= starts[None, :]) & (x[:, None] <= ends[None, :])
    return int(inside.sum(axis=0).max())


def looseness_test(x, lower, upper, epsilon, rng):
    """The noisy fraction of rows in the fullest window, and whether it is
    at least ``LOOSE_FRACTION``.

    ``(g(x) + Laplace(1 / epsilon)) / n``: the Laplace mechanism on a
    sensitivity-1 count (:func:`half_window_count`), ``epsilon``-DP for
    replace-one neighbours (``n`` public); the comparison is post-processing.

    Returns
    -------
    fraction : float
        The released noisy fraction.
    loose : bool
    """
    n = len(x)
    noisy = half_window_count(x, lower, upper) + rng.laplace(scale=1.0 / epsilon)
    fraction = float(noisy) / n
    return fraction, fraction >= LOOSE_FRACTION


def drop_hopeless_envelopes(estimated, in_envelope, label_column, label_first, n_eps):
    """The estimated columns without the envelope columns whose share of
    ``n_eps`` (``n * epsilon``) would be below ``ENVELOPE_PART`` (the test's
    ``TEST_N_EPSILON`` and the pair's ``MIN_N_EPSILON_ENVELOPE``):
    features first, then (with their shares given to the rest) the label.
    A function of public quantities."""
    estimated = estimated.copy()
    if math.isinf(n_eps):  # no privacy: every range is found exactly
        return estimated
    for drop_label in (False, True):
        if not estimated.any():
            break
        share = column_shares(estimated, label_first)
        low = estimated & in_envelope & (n_eps * share < ENVELOPE_PART)
        if not drop_label and label_column is not None:
            low[label_column] = False
        estimated &= ~low
    return estimated


def column_shares(estimated, label_column=None):
    """Each column's share of epsilon: equal over the estimated columns (0
    elsewhere), or half for ``label_column`` and the rest equally."""
    share = estimated.astype(np.float64)
    others = int(estimated.sum()) - int(
        label_column is not None and bool(estimated[label_column])
    )
    if label_column is not None and estimated[label_column] and others:
        share[label_column] = others
    return share / share.sum()
