"""RR-on-bins for continuous labels (Ghazi et al., ICLR 2023) and its private prior."""

import math

import numpy as np

from skdp.mechanisms import LaplaceMechanism

__all__ = [
    "RROnBins",
    "optimal_bins",
    "private_label_histogram",
]

# Points of the grid on which the bins are optimized: bin edges fall between
# them, so the rounding error of a label is at most half the range / 256, far
# below the noise of any finite epsilon (the DP costs O(points^3)).
GRID_POINTS = 256


def histogram_cells(n_samples, prior_epsilon, max_cells=GRID_POINTS):
    """Number of equal-width cells of the private label histogram.

    Each count gets Laplace noise of scale 2 / prior_epsilon (mean absolute
    value 2 / prior_epsilon), so the total absolute noise over m cells is
    2 m / prior_epsilon. Keeping it below a quarter of the n counted labels,
    m <= n prior_epsilon / 8, bounds the share of the prior that is noise; at
    least one cell, at most ``max_cells``. Uses public quantities only.
    """
    if math.isinf(prior_epsilon):
        return max_cells
    return int(np.clip(math.floor(n_samples * prior_epsilon / 8), 1, max_cells))


def noisy_label_counts(y, bounds, n_cells, epsilon, rng):
    """Label counts over ``n_cells`` equal cells of ``bounds`` plus Laplace
    noise of scale 2 / epsilon (L1 sensitivity 2 under replace-one): the only
    step of the prior that reads the labels. ``y`` must already be clipped.

    Returns ``(noisy_counts, mechanism)``.
    """
    lo, hi = bounds
    edges = np.linspace(lo, hi, n_cells + 1)
    cells = np.clip(np.searchsorted(edges, y, side="right") - 1, 0, n_cells - 1)
    counts = np.bincount(cells, minlength=n_cells).astype(np.float64)
    mechanism = LaplaceMechanism(epsilon, sensitivity=2.0, dimension=n_cells)
    return mechanism.randomize(counts, random_state=rng), mechanism


def kept_counts(noisy, scale):
    """The noisy counts above the threshold ``scale * ln(n_cells)``, others 0.

    An empty cell passes the threshold with probability exp(-ln m) / 2 =
    1 / (2 m): about half a cell of pure noise survives in all, instead of a
    mass of scale / 2 in every empty cell that clipping at 0 alone would leave.
    """
    n_cells = noisy.size
    threshold = scale * math.log(n_cells) if n_cells > 1 else 0.0
    return np.where(noisy > threshold, noisy, 0.0)


def cautious_counts(noisy, kept, n_samples):
    """``kept`` with the dropped mass, about n minus the kept counts (n is
    public), put back on the dropped cells in proportion to their noisy counts
    clipped at 0: every cell that might hold a tail gets some of it."""
    dropped = kept == 0
    missing = max(n_samples - kept.sum(), 0.0)
    weight = np.where(dropped, np.maximum(noisy, 0.0), 0.0)
    if missing > 0 and dropped.any():
        if weight.sum() <= 0:
            weight = dropped.astype(np.float64)
        return kept + missing * weight / weight.sum()
    return kept


def pooled_counts(noisy, kept, n_samples, scale):
    """``kept`` with the dropped mass put back where the noisy counts, pooled,
    show it: an estimate of the label law rather than a cautious bound.

    Each dropped cell's weight is the mean of the signed noisy counts of the
    dropped cells in a window of w = 2 floor(sqrt(m) / 2) + 1 cells around it
    (about sqrt(m): sqrt(m) windows of sqrt(m) cells balance resolution
    against noise), minus one standard deviation of that mean's noise,
    scale * sqrt(2 / w), clipped at 0. A window of empty cells has signed
    counts of mean 0, so it gets weight with probability about 16% and then
    little (E[max(Z - 1, 0)] = 0.083 standard deviations, against scale / 2
    per empty cell for the clipped counts of ``cautious_counts``): on a
    declared range much wider than the labels' spread, pure noise no longer
    puts phantom tails at its far ends. A real tail of c labels per cell keeps
    a weight of about c minus the standard deviation. The dropped mass is
    n minus the kept counts, as for the cautious prior; if no window shows
    any, the kept counts are returned.
    """
    m = kept.size
    dropped = kept == 0
    missing = max(n_samples - kept.sum(), 0.0)
    radius = max(1, math.isqrt(m) // 2)
    signed = np.concatenate([[0.0], np.cumsum(np.where(dropped, noisy, 0.0))])
    number = np.concatenate([[0.0], np.cumsum(dropped.astype(np.float64))])
    left = np.clip(np.arange(m) - radius, 0, m)
    right = np.clip(np.arange(m) + radius + 1, 0, m)
    size = np.maximum(number[right] - number[left], 1.0)
    mean = (signed[right] - signed[left]) / size
    weight = np.where(dropped, np.maximum(mean - scale * np.sqrt(2.0 / size), 0.0), 0.0)
    if missing > 0 and weight.sum() > 0:
        return kept + missing * weight / weight.sum()
    return kept


def private_label_histogram(y, bounds, n_cells, epsilon, rng):
    """Label counts over ``n_cells`` equal cells of ``bounds``, released with
    Laplace noise (sensitivity 2 under replace-one), then post-processed.

    ``y`` must already be clipped to ``bounds``. A noisy count at or below
    ``scale * ln(n_cells)`` is set to 0 (``kept_counts``): an empty cell passes
    that threshold with probability 1 / (2 m), so about half a cell of pure
    noise survives in all, instead of a mass of scale / 2 in every empty cell
    that clipping at 0 alone would leave (a prior spread over the whole
    declared range when the labels fill a small part of it).

    The threshold also drops the true counts of sparse cells (a distribution's
    tails). Since n is public, the dropped mass is about n minus the kept
    counts; the *cautious* prior puts it back on the dropped cells, in
    proportion to their noisy counts clipped at 0 (``cautious_counts``).

    Returns
    -------
    prior : ndarray of shape (n_cells,)
        The kept counts, normalized (uniform if none is kept).
    cautious : ndarray of shape (n_cells,)
        ``prior`` with the dropped mass put back, normalized.
    mechanism : LaplaceMechanism
    """
    noisy, mechanism = noisy_label_counts(y, bounds, n_cells, epsilon, rng)
    kept = kept_counts(noisy, mechanism.scale)
    if kept.sum() <= 0:
        uniform = np.full(n_cells, 1.0 / n_cells)
        return uniform, uniform, mechanism
    cautious = cautious_counts(noisy, kept, y.size)
    return kept / kept.sum(), cautious / cautious.sum(), mechanism


def refine_prior(cell_prior, n_points=GRID_POINTS):
    """Spread each cell's mass uniformly over its share of a finer grid.

    Returns ``(points, mass)``: ``n_points`` equally spaced midpoints in
    [0, 1] (the unit range; scale to the label bounds) and their masses.
    """
    n_cells = cell_prior.size
    points = (np.arange(n_points) + 0.5) / n_points
    cell_of_point = np.minimum((points * n_cells).astype(np.int64), n_cells - 1)
    per_cell = np.bincount(cell_of_point, minlength=n_cells)
    mass = cell_prior[cell_of_point] / per_cell[cell_of_point]
    return points, mass


def optimal_bins(points, mass, epsilon):
    """RR-on-bins with the least expected squared error under a prior.

    The label domain ``points`` (sorted) with probabilities ``mass`` is cut into
    k contiguous bins with one output each; a label is reported as its bin's
    output with probability e^eps / (e^eps + k - 1), otherwise as one of the
    other k - 1 outputs uniformly. The expected squared error is

        1 / (e^eps + k - 1) * sum_j [ (e^eps - 1) sum_{y in B_j} p_y (o_j - y)^2
                                      + sum_y p_y (o_j - y)^2 ],

    which separates over bins: for a fixed partition each output is a weighted
    mean, o_j = ((e^eps - 1) S1_j + M1) / ((e^eps - 1) S0_j + 1) (S0_j, S1_j the
    bin's mass and first moment, M1 the prior mean), and the best partition into
    k bins is found by dynamic programming over the sorted points (the optimal
    bins are intervals, Ghazi et al. 2023, Theorem 3), for every k; the k with
    the least error wins.

    Parameters
    ----------
    points : ndarray of shape (m,)
        Sorted label values.
    mass : ndarray of shape (m,)
        Their prior probabilities (summing to 1).
    epsilon : float
        In (0, inf).

    Returns
    -------
    cuts : ndarray of int of shape (k + 1,)
        Bin j holds ``points[cuts[j]:cuts[j + 1]]`` (cuts[0] = 0, cuts[-1] = m).
    outputs : ndarray of shape (k,)
        Increasing outputs of the bins.
    expected_error : float
        The expected squared error of one released label under the prior.
    """
    points = np.asarray(points, dtype=np.float64)
    mass = np.asarray(mass, dtype=np.float64)
    m = points.size
    # everything is divided by e^eps: weights 1 - e^-eps (own bin) and e^-eps
    damp = math.exp(-epsilon)
    own, rest = -math.expm1(-epsilon), damp
    # centre and scale: the prefix sums then stay well conditioned
    centre = float(mass @ points)
    scale = float(np.ptp(points)) or 1.0
    v = (points - centre) / scale
    s0 = np.concatenate([[0.0], np.cumsum(mass)])
    s1 = np.concatenate([[0.0], np.cumsum(mass * v)])
    s2 = np.concatenate([[0.0], np.cumsum(mass * v * v)])
    m1, m2 = s1[-1], s2[-1]
    # cost[l, i]: bin of points l..i-1 (l < i), times e^-eps
    a = own * (s0[None, :] - s0[:, None]) + rest
    b = own * (s1[None, :] - s1[:, None]) + rest * m1
    c = own * (s2[None, :] - s2[:, None]) + rest * m2
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = np.maximum(c - b * b / a, 0.0)
        out = b / a
    valid = np.arange(m + 1)[:, None] < np.arange(m + 1)[None, :]
    cost = np.where(valid, cost, np.inf)
    best = cost[0].copy()  # best[i]: first i points in k bins
    choices = []
    best_total, best_choices = math.inf, None
    for k in range(1, m + 1):
        if k > 1:
            candidates = best[:, None] + cost
            choice = np.argmin(candidates, axis=0)
            best = candidates[choice, np.arange(m + 1)]
            choices.append(choice)
        total = best[m] / (1.0 + (k - 1) * damp)
        if total < best_total:
            best_total, best_choices = total, list(choices)
    cuts = [m]  # backtrack from the last point: each level gives a left edge
    for choice in reversed(best_choices):
        cuts.append(int(choice[cuts[-1]]))
    cuts = np.array([0, *cuts[::-1]])
    outputs = out[cuts[:-1], cuts[1:]] * scale + centre
    return cuts, outputs, float(best_total) * scale * scale


class RROnBins:
    """The label channel of RR-on-bins: bins over a label range, one output each.

    Parameters
    ----------
    edges : ndarray of shape (k + 1,)
        Increasing bin edges; the first and last are the label bounds.
    outputs : ndarray of shape (k,)
    epsilon : float
        In (0, inf].

    Attributes
    ----------
    p_keep : float
        e^eps / (e^eps + k - 1): probability of reporting the label's own bin.
    p_other : float
        1 / (e^eps + k - 1): probability of each other output.
    """

    def __init__(self, edges, outputs, epsilon):
        self.edges = np.asarray(edges, dtype=np.float64)
        self.outputs = np.asarray(outputs, dtype=np.float64)
        self.epsilon = epsilon
        k = self.outputs.size
        if math.isinf(epsilon):
            self.p_keep, self.p_other = 1.0, 0.0
        else:
            damp = math.exp(-epsilon)
            self.p_keep = 1.0 / (1.0 + (k - 1) * damp)
            self.p_other = damp / (1.0 + (k - 1) * damp)

    def bin_of(self, y):
        """Bin index of each (clipped) label."""
        k = self.outputs.size
        return np.clip(np.searchsorted(self.edges, y, side="right") - 1, 0, k - 1)

    def randomize_index(self, y, rng):
        """Index of the output released for each (clipped) label."""
        bins = self.bin_of(y)
        k = self.outputs.size
        if k == 1 or self.p_other == 0:
            return bins
        u = rng.random(bins.size)
        # below p_keep: own bin; otherwise the remainder picks another output
        offset = np.floor((u - self.p_keep) / ((k - 1) * self.p_other) * (k - 1))
        offset = np.clip(offset.astype(np.int64), 0, k - 2) + 1
        return np.where(u < self.p_keep, bins, (bins + offset) % k)

    def randomize(self, y, rng):
        """Released outputs for labels ``y`` (already clipped to the range)."""
        return self.outputs[self.randomize_index(y, rng)]

    @property
    def matrix(self):
        """``M[j, l]`` = P(report output l | label in bin j)."""
        k = self.outputs.size
        return np.full((k, k), self.p_other) + np.eye(k) * (self.p_keep - self.p_other)
