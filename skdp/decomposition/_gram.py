"""The statistic of PrivatePCA: the Gram matrix of clipped, shifted rows.

Its domain (:class:`GramDomain`), sensitivities, the constant column ``s``
that centres through the same release, the release itself and the mergeable
sums a dask fit reduces on the workers (:class:`GramSums`). The privacy
argument is in :class:`~skdp.decomposition.PrivatePCA`'s Notes.
"""

import math

import numpy as np
from scipy.optimize import minimize_scalar
from sklearn.utils import check_array

from skdp._moments import chan_merge
from skdp.mechanisms import GaussianMechanism
from skdp.utils import clip_to_norm

__all__ = [
    "GramDomain",
    "GramSums",
    "gram_domain",
    "gram_sensitivity",
    "gram_statistic",
    "intercept_scale",
    "release_gram",
]


class GramDomain:
    """The public geometry of the rows whose augmented Gram matrix is released.

    Parameters
    ----------
    centre : ndarray of shape (n_features,)
        Public shift subtracted from every (clipped) row.
    row_norm : float
        ``R``: bound on ``||x - centre||_2``.
    half_widths : ndarray of shape (n_features,) or None
        Per-feature bound on ``|x_j - centre_j|`` (a box), or None.
    """

    def __init__(self, centre, row_norm, half_widths):
        self.centre = centre
        self.row_norm = float(row_norm)
        self.half_widths = half_widths

    @property
    def n_features(self):
        return self.centre.shape[0]


def gram_domain(lower=None, upper=None, data_norm=None, n_features=None, shift=True):
    """The :class:`GramDomain` of the declared box and/or row-norm bound.

    Box only (and ``shift``): rows are shifted by the box's midpoint (public,
    free), and ``R = ||half-widths||_2``. With a row-norm bound ``data_norm``
    (which bounds ``||x||``, not ``||x - c||``), or without ``shift`` (no
    centring: the Gram of the rows themselves), rows are not shifted: ``R`` is
    ``data_norm``, or ``||max(|lower|, |upper|)||_2`` if a box is declared and
    that is smaller.
    """
    if lower is None:
        centre = np.zeros(n_features)
        return GramDomain(centre, data_norm, None)
    if data_norm is None and shift:
        centre = (lower + upper) / 2
        half = (upper - lower) / 2
        return GramDomain(centre, float(np.linalg.norm(half)), half)
    reach = np.maximum(np.abs(lower), np.abs(upper))
    norm = float(np.linalg.norm(reach))
    if data_norm is not None:
        norm = min(float(data_norm), norm)
    return GramDomain(np.zeros(lower.shape[0]), norm, reach)


def gram_sensitivity(domain, scale, norm):
    """Sensitivity of the released part of the Gram of the rows ``[x - c, s]``.

    Released: the ``d x d`` block ``sum_i z_i z_i^T`` and (if ``s > 0``) the
    column ``s sum_i z_i``; the corner ``n s^2`` is public. Replace-one
    neighbours: ``v = [z, s]`` replaced by ``u = [y, s]``.

    Parameters
    ----------
    domain : GramDomain
    scale : float
        ``s >= 0``, the constant column (0: no centring).
    norm : {"fro", "l1"}
        ``"fro"``: the Frobenius norm of ``vv^T - uu^T`` (the L2 sensitivity of
        the isometric vector of the symmetric matrix, see
        :class:`PrivatePCA`); ``"l1"``: the L1 norm of its upper triangle.

    Returns
    -------
    float

    Notes
    -----
    **Frobenius.** ``||vv^T - uu^T||_F^2 = ||v||^4 + ||u||^4 - 2 (v.u)^2`` with
    ``||v||^2 = ||z||^2 + s^2 <= R^2 + s^2`` and ``v.u = z.y + s^2``. If
    ``s <= R``, ``z.y = -s^2`` is reachable with ``||z|| = ||y|| = R`` (for
    ``d >= 2``), so the maximum is ``sqrt(2) (R^2 + s^2)``. If ``s > R``,
    ``|v.u| >= s^2 - ||z|| ||y||`` and, with ``a = ||z||, b = ||y||`` and
    ``z = -y`` direction, ``(a^2 + s^2)^2 + (b^2 + s^2)^2 - 2 (s^2 - a b)^2``
    increases in ``a`` and ``b``: ``8 R^2 s^2``, i.e. ``2 sqrt(2) R s``.

    **L1 of the upper triangle** (entries ``i <= j``, corner excluded). With
    ``a_i = |z_i - y_i|`` and ``b_i = |z_i + y_i|``, the identity
    ``z_i z_j - y_i y_j = ((z_i - y_i)(z_j + y_j) + (z_i + y_i)(z_j - y_j)) / 2``
    bounds an off-diagonal change by ``(a_i b_j + b_i a_j) / 2``; a diagonal
    one is exactly ``|z_i^2 - y_i^2| = a_i b_i``, a column one ``s a_i``. With
    ``A = sum a_i``, ``B = sum b_i`` (``sum_{i<j} (a_i b_j + b_i a_j) = A B -
    sum a_i b_i``) the total is at most ``A B / 2 + sum_i a_i b_i / 2 + s A``.
    Now ``a_i + b_i = 2 m_i`` with ``m_i = max(|z_i|, |y_i|)``, so with ``M =
    sum m_i``: ``B <= 2 M - A``, ``a_i b_i <= m_i^2``, and ``A (2 M - A) / 2 +
    s A <= (M + s)^2 / 2`` (a concave quadratic in ``A``; at its vertex ``A = M
    + s`` if ``s <= M``, else at ``A = 2 M``, where ``2 M s <= (M + s)^2 / 2``).
    Hence ``Delta_1 <= (M + s)^2 / 2 + sum_i m_i^2 / 2``.

    - Box ``|z_i| <= r_i``: ``m_i <= r_i``, ``Delta_1 = (||r||_1 + s)^2 / 2 +
      ||r||_2^2 / 2`` (half the naive ``(||r||_1 + s)^2 - s^2``, which adds
      ``|z_i z_j| + |y_i y_j|`` entry by entry).
    - Norm ``||z|| <= R``: ``sum m_i^2 <= ||z||^2 + ||y||^2 <= 2 R^2`` and
      ``M <= sqrt(d) sqrt(sum m_i^2) <= sqrt(2 d) R``: ``Delta_1 = (sqrt(2 d) R
      + s)^2 / 2 + R^2``.

    With both, the smaller bound holds. Neither is attained in general (the
    tests compare them with brute force on tiny data).
    """
    R, s, d = domain.row_norm, float(scale), domain.n_features
    if norm == "fro":
        if s <= R:
            return math.sqrt(2.0) * (R**2 + s**2)
        return 2.0 * math.sqrt(2.0) * R * s
    bound = (math.sqrt(2 * d) * R + s) ** 2 / 2 + R**2
    if domain.half_widths is not None:
        r = domain.half_widths
        box = (float(np.sum(r)) + s) ** 2 / 2 + float(np.sum(r**2)) / 2
        bound = min(bound, box)
    return bound


def intercept_scale(domain, norm):
    """The constant column ``s`` of the released Gram of ``[x - c, s]``.

    Chosen from public values only: it minimizes ``Delta(s) (1 + 2 R / (s
    sqrt(d)))`` over ``s`` in ``[R / 1000, R]``, a worst-case proxy of the error
    of the centred covariance. The noise on the Gram block has Frobenius norm
    about ``b d`` (``b`` the noise scale); centring with the noisy sums adds
    ``2 ||mu|| ||e|| / (s n)`` with ``||e|| ~ b sqrt(d)`` and ``||mu|| <= R``,
    so the two terms weigh ``1`` and ``2 R / (s sqrt(d))`` relative to ``b d``.
    A larger ``s`` shrinks the second term and raises ``Delta``.
    """
    R, d = domain.row_norm, domain.n_features
    if R <= 0:
        return 1.0

    def cost(u):
        return gram_sensitivity(domain, u * R, norm) * (1 + 2 / (u * math.sqrt(d)))

    res = minimize_scalar(cost, bounds=(1e-3, 1.0), method="bounded")
    return float(res.x) * R


def gram_statistic(Z, scale):
    """The released statistic: the Gram matrix of the rows ``[z, scale]``.

    Parameters
    ----------
    Z : ndarray of shape (n_samples, n_features)
        Clipped, shifted rows.
    scale : float
        ``s``; 0 gives the ``d x d`` Gram ``Z^T Z`` only.

    Returns
    -------
    ndarray of shape (q, q), q = n_features (+ 1 if ``scale > 0``)
        Symmetric; its corner ``n s^2`` (public, not released) is set to 0.
    """
    n, d = Z.shape
    if scale <= 0:
        return Z.T @ Z
    gram = np.zeros((d + 1, d + 1))
    gram[:d, :d] = Z.T @ Z
    gram[:d, d] = gram[d, :d] = scale * Z.sum(axis=0)
    return gram


def release_gram(gram, mech, rng, *, augmented):
    """``gram`` plus the symmetric noise of ``mech`` (see :class:`PrivatePCA`).

    Gaussian: ``(W + W^T) / 2`` with ``W`` i.i.d. ``N(0, sigma^2)``. Laplace:
    i.i.d. (lattice) Laplace on the upper triangle, mirrored. With
    ``augmented=True`` (the Gram of ``[z, s]``) the corner ``n s^2`` is public
    and not released: it is returned as 0. ``gram`` may carry leading batch
    dimensions (independent releases, for audits).
    """
    q = gram.shape[-1]
    rows, cols = np.triu_indices(q)
    if augmented:
        keep = ~((rows == q - 1) & (cols == q - 1))
        rows, cols = rows[keep], cols[keep]
    if isinstance(mech, GaussianMechanism):
        W = mech.sample_noise(gram.shape, random_state=rng)
        noisy = gram + (W + np.swapaxes(W, -1, -2)) / 2
    else:
        noisy = np.zeros(gram.shape)
        values = mech.randomize(gram[..., rows, cols], random_state=rng)
        noisy[..., rows, cols] = values
        noisy[..., cols, rows] = values
    if augmented:
        noisy[..., -1, -1] = 0.0
    return noisy


class GramSums:
    """Mergeable sums of the clipped, shifted rows ``z`` of a :class:`PrivatePCA`.

    ``n`` rows; ``gram``: the released statistic (:func:`gram_statistic`;
    None when not computed); ``mean`` and ``m2``: the exact mean of ``z`` and
    its centred cross-products ``sum_i (z_i - mean)(z_i - mean)^T`` (for
    ``epsilon=inf``; None otherwise). ``+`` merges disjoint rows: the Gram
    matrices add, the mean and ``m2`` by Chan, Golub & LeVeque's pairwise
    update (as stable as centring all rows at once).
    """

    __slots__ = ("n", "gram", "mean", "m2")

    def __init__(self, n, gram=None, mean=None, m2=None):
        self.n = n
        self.gram = gram
        self.mean = mean
        self.m2 = m2

    def __add__(self, other):
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        gram = None if self.gram is None else self.gram + other.gram
        mean, m2 = chan_merge(self, other, outer=True)
        return GramSums(self.n + other.n, gram, mean, m2)


def _merge_gram(*parts):
    return sum(parts[1:], parts[0])


def _block_gram(
    X, *, lower, upper, data_norm, centre, scale, exact, centering, validated=False
):
    """:class:`GramSums` of one block of rows (validated here unless told)."""
    if not validated:
        X = check_array(X, dtype=np.float64, ensure_min_samples=0)
    n = X.shape[0]
    if n == 0:
        return GramSums(0)
    Z = X if lower is None else np.clip(X, lower, upper)
    if data_norm is not None:
        Z = clip_to_norm(Z, data_norm)
    Z = Z - centre
    if not exact:
        return GramSums(n, gram=gram_statistic(Z, scale))
    mu = Z.mean(axis=0) if centering else np.zeros(Z.shape[1])
    Zc = Z - mu
    return GramSums(n, mean=mu, m2=Zc.T @ Zc)
