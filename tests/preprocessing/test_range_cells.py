"""The range releases drawn on cells, many columns at once (issue 35 item 4):
the cells' counts are the scores' by definition, and the draws follow the
exact laws of the per-candidate mechanisms."""

import numpy as np
import pytest
from scipy import stats

from skdp._ranges.cells import (
    cell_log_mass,
    draw_in_cells,
    grid_cells,
    prefix_mass,
    rank_distance,
)
from skdp._ranges.centre_width import WIDTH_FENCE, centre_width_cells
from skdp._ranges.column_draws import _pair_cells
from skdp._ranges.grid import (
    _fallback_log_weight,
    candidate_grid,
    pair_log_probabilities,
)
from skdp._ranges.ranks import quantile_distance
from skdp.preprocessing import private_bounds
from tests.preprocessing.test_centre_width import _joint_log_probabilities
from tests.preprocessing.test_private_bounds import SMALL_GRID, SMALL_LOGW, VALUES


def _chi2_pvalue(counts, p, n):
    """Chi-square p-value of ``counts`` against the law ``p`` (cells with
    fewer than 5 expected draws pooled into one)."""
    expected = p * n
    keep = expected >= 5
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    if expected[-1] < 5:
        observed[-2] += observed[-1]
        expected[-2] += expected[-1]
        observed, expected = observed[:-1], expected[:-1]
    return stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue


@pytest.mark.parametrize("grid", ["small", "full"])
def test_cell_counts_are_the_scores_of_every_candidate(grid):
    """Each candidate's cell gives its ``quantile_distance`` exactly, for
    data with ties, values on and off the grid, at several levels."""
    rng = np.random.default_rng(0)
    if grid == "small":
        g, logw = SMALL_GRID, SMALL_LOGW
        X = rng.choice(np.r_[VALUES, 0.25, 2.5, -3.0, 9.0], size=(9, 6))
    else:
        g, logw = candidate_grid()
        X = np.column_stack(
            [
                np.round(rng.normal(50, 10, 40), 1),  # on the grid, ties
                rng.normal(0, 1e-3, 40),  # around 0, off the grid
                np.where(rng.random(40) < 0.7, 0.0, rng.lognormal(3, 1, 40)),
            ]
        )
    S = np.sort(X, axis=0)
    lo, hi, below, upto = grid_cells(S, g)
    prefix = prefix_mass(logw)
    for c in range(S.shape[1]):
        # the cells partition the grid in order
        sizes = hi[c] - lo[c]
        assert lo[c, 0] == 0 and hi[c, -1] == g.size and np.all(sizes >= 0)
        assert np.all(lo[c, 1:] == hi[c, :-1])
        owner = np.repeat(np.arange(sizes.size), sizes)
        for level in (0.1, 0.25, 0.5, 0.75):
            t = level * S.shape[0]
            want = quantile_distance(S[:, c], g, level)
            got = rank_distance(below[c], upto[c], t)[owner]
            np.testing.assert_array_equal(got, want)
        mass = np.exp(cell_log_mass(lo[c], hi[c], logw, prefix))
        np.testing.assert_allclose(
            mass, np.bincount(owner, np.exp(logw), sizes.size), rtol=1e-9, atol=0
        )


def test_a_candidate_is_drawn_in_its_cell_by_its_base_mass():
    g, logw = candidate_grid()
    prefix = prefix_mass(logw)
    lo = np.searchsorted(g, 999.0)  # 999.0 .. 1002 (weights 1/9990 .. 1/1002)
    hi = np.searchsorted(g, 1003.0)
    rng = np.random.default_rng(0)
    n = 40_000
    idx = draw_in_cells(np.full(n, lo), np.full(n, hi), prefix, rng)
    assert idx.min() >= lo and idx.max() < hi
    p = np.exp(logw[lo:hi]) / np.exp(logw[lo:hi]).sum()
    assert _chi2_pvalue(np.bincount(idx - lo, minlength=hi - lo), p, n) > 1e-3


@pytest.mark.parametrize("with_fallback", [False, True])
def test_pair_on_cells_draws_the_exact_law_in_every_column(with_fallback):
    """Three columns drawn together, 20,000 times: each column's (low, high)
    and keep-the-envelope outcome against ``pair_log_probabilities``."""
    rng = np.random.default_rng(1)
    X = rng.choice(VALUES, size=(9, 3))
    X[:, 2] = X[:, 0]  # the same data twice: the same law
    S = np.sort(X, axis=0)
    eps = np.array([0.8, 2.0, 0.8])
    q = np.full(3, 0.25)
    prefix = prefix_mass(SMALL_LOGW)
    laws, fallbacks = [], None
    if with_fallback:
        fallbacks = []
    for c in range(3):
        d_low = quantile_distance(S[:, c], SMALL_GRID, 0.25)
        d_high = quantile_distance(S[:, c], SMALL_GRID, 0.75)
        if with_fallback:
            score = -max(d_low[0], d_high[-1])
            pairs, keep = pair_log_probabilities(
                d_low, d_high, eps[c], SMALL_LOGW, fallback_score=score
            )
            laws.append(np.append(np.exp(pairs).ravel(), np.exp(keep)))
            fallbacks.append(_fallback_log_weight(SMALL_LOGW, eps[c], score))
        else:
            laws.append(
                np.exp(
                    pair_log_probabilities(d_low, d_high, eps[c], SMALL_LOGW)
                ).ravel()
            )
    n = 20_000
    G = SMALL_GRID.size
    counts = np.zeros((3, G * G + 1))
    fb = None if fallbacks is None else np.array(fallbacks)
    for _ in range(n):
        a, b, kept = _pair_cells(S, eps, q, SMALL_GRID, SMALL_LOGW, prefix, rng, fb)
        for c in range(3):
            counts[c, G * G if kept[c] else a[c] * G + b[c]] += 1
    for c in range(3):
        p = laws[c]
        k = p.size
        assert _chi2_pvalue(counts[c, :k], p, n) > 1e-4
    # columns 0 and 2 (same data, same epsilon) drew independently
    assert not np.array_equal(counts[0], counts[2])


def test_centre_width_on_cells_draws_the_exact_joint_law():
    """The median and half-width of two columns at once, 20,000 draws,
    against the exact joint law of the per-candidate mechanism."""
    x = np.array([-1.0, 0.0, 0.0, 1.0, 2.0])
    eps = 1.5
    p = np.exp(_joint_log_probabilities(x, eps))  # (centre, width)
    zero = int(np.searchsorted(SMALL_GRID, 0.0))
    widths = SMALL_GRID[zero:]
    prefix = prefix_mass(SMALL_LOGW)
    S = np.column_stack([x, x])
    rng = np.random.default_rng(0)
    n = 20_000
    counts = np.zeros((2,) + p.shape)
    for _ in range(n):
        lo, hi = centre_width_cells(
            S, np.array([eps, eps]), SMALL_GRID, SMALL_LOGW, prefix, zero, rng
        )
        m, w = (lo + hi) / 2, (hi - lo) / (2 * WIDTH_FENCE)
        for c in range(2):
            i = np.argmin(np.abs(SMALL_GRID - m[c]))
            k = np.argmin(np.abs(widths - w[c]))
            counts[c, i, k] += 1
    for c in range(2):
        assert _chi2_pvalue(counts[c].ravel(), p.ravel(), n) > 1e-4


def test_wide_releases_are_chunked_and_reproducible(monkeypatch):
    """Columns split over several chunks give ranges of the right kind, the
    same for the same seed."""
    import skdp._ranges.column_draws as draws

    monkeypatch.setattr(draws, "CHUNK_CELLS", 2 * (2 * 300 + 1))  # 2 columns a chunk
    X = np.random.default_rng(0).normal(50, 10, (300, 7))
    a = private_bounds(X, epsilon=7 * 2.0, random_state=0)  # n eps_c = 600
    b = private_bounds(X, epsilon=7 * 2.0, random_state=0)
    np.testing.assert_array_equal(a.lower, b.lower)
    assert np.all(a.lower < np.quantile(X, 0.05, axis=0))
    assert np.all(a.upper > np.quantile(X, 0.95, axis=0))
