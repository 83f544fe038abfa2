"""A block of tied rows at a value that is not a grid candidate (a top-coded
ln wage) must not leave the quantile pair's ends to the far grid: the rows
are snapped to the grid before they are counted (found by issue 35's
must-hold sweep: 2% of CPS1988 label ranges were +-1e7 at eps 5)."""

import numpy as np
from scipy import special

from skdp._ranges.column_draws import _grid_and_prefix, snap_to_grid
from skdp._ranges.grid import KAPPA
from skdp._ranges.ranks import quantile_distance
from skdp.preprocessing import private_bounds


def _top_coded(n=20_000, seed=0):
    """ln wages: normal(6.3, 0.55), the top 1.5% set to one value off the grid."""
    y = np.random.default_rng(seed).normal(6.3, 0.55, n)
    cap = np.quantile(y, 0.985)
    top = 7.77239476
    y = np.where(y >= cap, top, np.minimum(y, top - 0.01))
    return y


def _log_p_low_end_far(y, eps, far):
    """log P(the pair's low end is a candidate in ``far``): the exact marginal
    of :func:`skdp._ranges.grid.sample_quantile_pair`'s law, by its formula."""
    grid, lw, _, _ = _grid_and_prefix()
    y = np.sort(y)
    q = KAPPA / (y.size * eps)
    la = -eps * quantile_distance(y, grid, q) / 2
    lb = -eps * quantile_distance(y, grid, 1 - q) / 2
    order = np.argsort(lb)
    lbs, lms = lb[order], lw[order]
    below = np.concatenate([[-np.inf], np.logaddexp.accumulate(lbs + lms)])
    above = np.concatenate([np.logaddexp.accumulate(lms[::-1])[::-1], [-np.inf]])
    k = np.searchsorted(lbs, la, side="left")
    log_marginal = lw + np.logaddexp(below[k], la + above[k])
    return special.logsumexp(log_marginal[far(grid)]) - special.logsumexp(log_marginal)


def test_snapping_removes_the_far_mass_that_an_off_grid_tie_block_creates():
    """Exact law, label-sized budget (n * eps_c = 10,000): unsnapped, the
    low end lands beyond the data with probability above 1e-3 (the failure);
    snapped, below 1e-4. Not smaller: the block then sits on ONE candidate
    (base mass 1/7772), and a pair with both ends far (score -q n, e^-32)
    has a base mass about e^22 times the good pairs'; the measured value is
    5.5e-5 on this column."""
    y = _top_coded()
    eps = 0.5

    def far(g):
        return (g < 3.0) | (g > 10.0)

    unsnapped = _log_p_low_end_far(y, eps, far)
    snapped = _log_p_low_end_far(snap_to_grid(y, _grid_and_prefix()[0]), eps, far)
    assert unsnapped > np.log(1e-3)
    assert snapped < np.log(1e-4)


def test_snapping_moves_each_value_to_its_nearest_candidate():
    grid = _grid_and_prefix()[0]
    v = np.array([7.77239476, 7.7725, 7.77251, -3.0, 0.0, 1e20, -1e20])
    got = snap_to_grid(v, grid)
    np.testing.assert_array_equal(
        got, [7.772, 7.772, 7.773, -3.0, 0.0, grid[-1], grid[0]]
    )


def test_released_label_ranges_stay_near_the_data_with_a_tie_block():
    """200 releases at eps 0.5 on the top-coded column: every range within a
    factor 2 of the data's span (the fences add ~4% of the pair's width)."""
    y = _top_coded()
    span = y.max() - y.min()
    for seed in range(200):
        rb = private_bounds(y[:, None], epsilon=0.5, random_state=seed)
        width = rb.upper[0] - rb.lower[0]
        assert 0.5 * span < width < 2 * span, (seed, rb.lower, rb.upper)
