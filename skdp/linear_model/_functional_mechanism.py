"""The functional mechanism (Zhang et al. 2012) for quadratic objectives.

This module is the shared, estimator-free core of :class:`FMLinearRegression`,
:class:`FMLogisticRegression` and the vertically partitioned estimators. Every
function is pure (no hidden state); randomness enters only through an explicit
generator, so a distributed protocol that draws noise with the same generator
reproduces the centralized release bit for bit.

The objective
-------------
Both objectives are sums of per-record quadratics in the coefficients ``w``::

    sum_i f(x_i, y_i, w) = w^T A w + b^T w + const

=====================  ===================  =======================
``objective``          ``A``                ``b``
=====================  ===================  =======================
``"squared"``          ``X^T X``            ``-2 X^T y``
``"logistic_taylor"``  ``X^T X / 8``        ``X^T (1/2 - y)``, y in {0, 1}
=====================  ===================  =======================

(the second is the order-2 Taylor expansion at 0 of the logistic loss,
``log(1 + e^z) - y z ~= log 2 + (1/2 - y) z + z^2 / 8``). The minimizer is
``w = -A^{-1} b / 2``. We write ``A = kappa X^T X`` and ``b = X^T beta(y)`` with
``kappa = 1, beta(y) = -2 y`` (squared) or ``kappa = 1/8, beta(y) = 1/2 - y``.

Intercept
---------
``fit_intercept`` appends a constant column of value ``s = intercept_scaling`` to
every row *inside* the declared domain (the intercept is then ``s * w[-1]``): the
sensitivity below accounts for every coefficient the column touches, so there is
no hidden extra spend. The entry ``A[-1, -1] = kappa s^2 n`` is the same for every
pair of neighbouring datasets (replace-one neighbours, ``n`` is public), so it has
sensitivity 0 and is released without noise. ``data_norm`` bounds the feature part
of a row only; the constant column is accounted for exactly.

What is released
----------------
The released vector is ``theta = (A[triu], c * b)``: the ``m = p (p + 1) / 2``
distinct upper-triangle entries of ``A`` in ``numpy.triu_indices(p)`` order
(row-major, diagonal included; ``p`` = number of coefficients, intercept last),
followed by the ``p`` entries of ``b`` multiplied by ``c = linear_weight``. Noise
is i.i.d. on every coordinate of ``theta``; dividing the noisy linear part by ``c``
afterwards is post-processing. ``c`` trades noise between ``A`` and ``b`` at no
privacy cost (see :func:`balanced_linear_weight`).

Typical use (what the estimators do)::

    domain = DataDomain(n_features=d, data_norm=1.0, y_bounds=(-1, 1))
    A, b = sufficient_statistics(X, y, "squared")            # or sum over chunks
    sens = sensitivity("squared", domain, linear_weight=c)
    mech = make_mechanism(epsilon, delta, sens, n_released(domain), "laplace")
    noise_A, noise_b = draw_noise(mech, domain, rng)
    A_hat, b_hat = add_noise(A, b, noise_A, noise_b, linear_weight=c,
                             granularity=lattice_granularity(mech))
    w = solve_noisy_quadratic(A_hat, b_hat, noise_std=release_noise_std(mech),
                              noise_std_b=release_noise_std(mech) / c,
                              coef_norm=default_coef_norm("squared", domain))

with ``c = balanced_linear_weight("squared", domain, "laplace")``. Draw order:
one generator, ``noise_A`` (triu order) then ``noise_b``; the intercept's diagonal
gets 0. Neighbours are replace-one (n is public). Post-processing choice (by
measurement, ``benchmarks/bench_fm.py``): PSD projection plus a ridge of
``sqrt(p)`` noise standard deviations, raised to the bias-variance optimum when
the noise swamps the signal; spectral trimming was at best equal to it.
"""

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, optimize

from skdp.mechanisms import GaussianMechanism, LaplaceMechanism
from skdp.utils import check_random_state

__all__ = [
    "OBJECTIVES",
    "DataDomain",
    "Sensitivity",
    "add_noise",
    "balanced_linear_weight",
    "default_coef_norm",
    "draw_noise",
    "lattice_granularity",
    "make_mechanism",
    "n_released",
    "objective_constants",
    "release_noise_std",
    "solve_noisy_quadratic",
    "sensitivity",
    "sufficient_statistics",
    "symmetric_from_triu",
    "triu_indices",
]

OBJECTIVES = ("squared", "logistic_taylor")

# Ridge added by solve_noisy_quadratic, in units of the expected spectral norm of
# the noise matrix (2 sqrt(p) * noise std). Measured on the synthetic linear task
# (d in {5, 20, 50}, eps in {0.1, 1, 10}, both mechanisms) against factors 0.25,
# 1, 2, spectral trimming and no post-processing: 0.5 was best or within ~10% of
# the best in most cells; factors >= 1 lose up to 35% at moderate noise, 0.25 and
# "none" blow up at high noise.
DEFAULT_RIDGE_FACTOR = 0.5


def objective_constants(objective):
    """``(kappa, beta)`` with ``A = kappa X^T X`` and ``b = X^T beta(y)``.

    ``beta`` is a vectorized function of the (encoded) labels.
    """
    if objective == "squared":
        return 1.0, lambda y: -2.0 * y
    if objective == "logistic_taylor":
        return 0.125, lambda y: 0.5 - y
    raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}.")


def triu_indices(n_coef):
    """Row-major upper-triangle indices (diagonal included): the order of noise_A."""
    return np.triu_indices(n_coef)


def symmetric_from_triu(values, n_coef):
    """The symmetric matrix whose upper triangle (triu order) is ``values``."""
    rows, cols = triu_indices(n_coef)
    out = np.zeros((n_coef, n_coef))
    out[rows, cols] = values
    out[cols, rows] = values
    return out


# --------------------------------------------------------------------------- #
# sufficient statistics
# --------------------------------------------------------------------------- #
def sufficient_statistics(
    X, y, objective, *, fit_intercept=False, intercept_scaling=1.0
):
    """``(A, b)`` of one chunk: the objective's quadratic and linear coefficients.

    The data must already lie in the declared domain (clipped) and, for
    ``"logistic_taylor"``, ``y`` must be encoded in {0, 1}. Statistics of chunks
    add up: the statistics of a dataset are the sum over any partition of its rows.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    objective : {"squared", "logistic_taylor"}
    fit_intercept : bool
        Append the constant column ``intercept_scaling`` (as the last coefficient)
        without materializing it.
    intercept_scaling : float
        Value ``s`` of the constant column.

    Returns
    -------
    A : ndarray of shape (p, p), symmetric
    b : ndarray of shape (p,)
        ``p = n_features + fit_intercept``.
    """
    kappa, beta = objective_constants(objective)
    X = np.asarray(X, dtype=np.float64)
    beta_y = beta(np.asarray(y, dtype=np.float64))
    gram = X.T @ X
    b_feat = X.T @ beta_y
    if not fit_intercept:
        return kappa * gram, b_feat
    s = float(intercept_scaling)
    n, d = X.shape
    A = np.empty((d + 1, d + 1))
    A[:d, :d] = gram
    A[:d, d] = A[d, :d] = s * X.sum(axis=0)
    A[d, d] = s * s * n
    b = np.append(b_feat, s * beta_y.sum())
    return kappa * A, b


# --------------------------------------------------------------------------- #
# the declared domain and its sensitivity
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class DataDomain:
    """The declared data domain the privacy guarantee is stated for.

    Parameters
    ----------
    n_features : int
        Number of features ``d`` (without the intercept column).
    lower, upper : array-like of shape (d,) or None
        Per-feature box ``lower_j <= x_j <= upper_j`` (both or neither).
    data_norm : float or None
        Bound ``R`` on the L2 norm of the feature part of every row.
    y_bounds : (float, float) or None
        Label bounds for ``"squared"`` (ignored for ``"logistic_taylor"``, whose
        encoded labels are in {0, 1}).
    fit_intercept : bool
        Whether a constant column is appended (last coefficient).
    intercept_scaling : float
        The constant column's value ``s``.
    max_nonzero : int or None
        At most this many non-zero features per row (e.g. the number of columns
        before one-hot encoding). Then ``||x||_1 <= sqrt(k) ||x||_2``, which
        shrinks the L1 sensitivity from order ``d`` to order ``k``.

    Notes
    -----
    At least one of the box and the norm must be given. When both are given (or
    ``max_nonzero``) the box must contain 0 in every coordinate (so that scaling a
    row down to the norm, or zeroing entries, keeps it in the box).
    """

    n_features: int
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    data_norm: float | None = None
    y_bounds: tuple | None = None
    fit_intercept: bool = False
    intercept_scaling: float = 1.0
    max_nonzero: int | None = None
    _m: np.ndarray = field(init=False, repr=False, compare=False)
    _lo: np.ndarray = field(init=False, repr=False, compare=False)
    _hi: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        d = int(self.n_features)
        object.__setattr__(self, "n_features", d)
        if (self.lower is None) != (self.upper is None):
            raise ValueError("Give both lower and upper, or neither.")
        if self.lower is None and self.data_norm is None:
            raise ValueError("The domain needs a box (lower, upper) or a data_norm.")
        lo = np.full(d, -np.inf)
        hi = np.full(d, np.inf)
        if self.lower is not None:
            lower = np.broadcast_to(np.asarray(self.lower, float), (d,)).copy()
            upper = np.broadcast_to(np.asarray(self.upper, float), (d,)).copy()
            if np.any(lower > upper):
                raise ValueError("Every lower bound must be <= its upper bound.")
            object.__setattr__(self, "lower", lower)
            object.__setattr__(self, "upper", upper)
            lo, hi = lower, upper
        if self.data_norm is not None:
            R = float(self.data_norm)
            if not R >= 0:
                raise ValueError(f"data_norm must be >= 0, got {self.data_norm!r}.")
            object.__setattr__(self, "data_norm", R)
            if self.lower is not None and np.any((lo > 0) | (hi < 0)):
                raise ValueError(
                    "When both bounds and data_norm are declared, the bounds must "
                    "contain 0 for every feature."
                )
            lo, hi = np.maximum(lo, -R), np.minimum(hi, R)
        if self.max_nonzero is not None:
            k = int(self.max_nonzero)
            if k < 1 or k != self.max_nonzero:
                raise ValueError(
                    f"max_nonzero must be an int >= 1, got {self.max_nonzero!r}."
                )
            if self.lower is not None and np.any((lo > 0) | (hi < 0)):
                raise ValueError(
                    "When max_nonzero is declared, the bounds must contain 0 for "
                    "every feature."
                )
            object.__setattr__(self, "max_nonzero", min(k, d))
        if self.y_bounds is not None:
            yl, yu = (float(v) for v in self.y_bounds)
            if yl > yu:
                raise ValueError("y_bounds must have lower <= upper.")
            object.__setattr__(self, "y_bounds", (yl, yu))
        object.__setattr__(self, "intercept_scaling", float(self.intercept_scaling))
        object.__setattr__(self, "_lo", lo)
        object.__setattr__(self, "_hi", hi)
        object.__setattr__(self, "_m", np.maximum(np.abs(lo), np.abs(hi)))

    @property
    def n_coef(self):
        """Number of coefficients ``p = d + fit_intercept``."""
        return self.n_features + int(self.fit_intercept)

    @property
    def has_box(self):
        return self.lower is not None

    @property
    def feature_intervals(self):
        """``(lo, hi)``: the range of each feature inside box and ball."""
        return self._lo, self._hi


@dataclass(frozen=True)
class Sensitivity:
    """Replace-one sensitivity of the released vector: ``l1`` and ``l2`` norms."""

    l1: float
    l2: float


def _interval_product(a, b):
    """Interval of the product of intervals ``a = (lo, hi)`` and ``b`` (arrays)."""
    cands = np.stack([a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]])
    return cands.min(axis=0), cands.max(axis=0)


def _beta_interval(objective, domain):
    if objective == "logistic_taylor":
        return -0.5, 0.5
    if domain.y_bounds is None:
        raise ValueError('The "squared" objective needs y_bounds in the domain.')
    yl, yu = domain.y_bounds
    return -2.0 * yu, -2.0 * yl


def _max_l1_in_domain(domain, idx):
    """max sum_{j in idx} |x_j| over the domain (exact, by water-filling)."""
    m = _top_k(domain, domain._m[idx])
    if m.size == 0:
        return 0.0
    if domain.data_norm is None:
        return float(m.sum())
    R = domain.data_norm
    if np.sum(m**2) <= R * R:
        return float(m.sum())
    # a_j = min(m_j, t) with sum a_j^2 = R^2: bisection on the water level t
    lo_t, hi_t = 0.0, float(m.max())
    for _ in range(200):
        t = 0.5 * (lo_t + hi_t)
        if np.sum(np.minimum(m, t) ** 2) > R * R:
            hi_t = t
        else:
            lo_t = t
    return float(np.minimum(m, lo_t).sum())


def _top_k(domain, m):
    """The ``max_nonzero`` largest entries of ``m`` (all if no sparsity bound)."""
    k = domain.max_nonzero
    if k is None or k >= m.size:
        return m
    return np.sort(m)[::-1][:k]


def _max_l2_in_domain(domain, idx):
    m = _top_k(domain, domain._m[idx])
    r = math.sqrt(float(np.sum(m**2)))
    if domain.data_norm is not None:
        r = min(r, domain.data_norm)
    return r


def _pair_matrix(j_idx, k_idx, d):
    """Symmetric matrix with 1 on selected diagonals, 1/2 on selected off-diagonals."""
    M = np.zeros((d, d))
    M[j_idx, k_idx] = 0.5
    M[k_idx, j_idx] = 0.5
    diag = j_idx[j_idx == k_idx]
    M[diag, diag] = 1.0
    return M


def _is_principal(pairs, d):
    """True if ``pairs`` is every (j, k), j <= k, with j, k in some index set J."""
    if not pairs:
        return True
    J = sorted({j for pair in pairs for j in pair})
    return len(pairs) == len(J) * (len(J) + 1) // 2


def _quadratic_part(domain, pairs, kappa):
    """(L1, L2) bounds for the feature-feature entries ``kappa x_j x_k``."""
    if not pairs:
        return 0.0, 0.0
    d = domain.n_features
    j_idx = np.array([p[0] for p in pairs])
    k_idx = np.array([p[1] for p in pairs])
    lo, hi = domain.feature_intervals
    m = domain._m
    # coordinate ranges: the product interval, or [min x^2, max x^2] on the diagonal
    plo, phi = _interval_product((lo[j_idx], hi[j_idx]), (lo[k_idx], hi[k_idx]))
    sq_lo = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(lo**2, hi**2))
    diag = j_idx == k_idx
    plo = np.where(diag, sq_lo[j_idx], plo)
    ranges = kappa * (phi - plo)
    # max sum |x_j x_k| and max sum (x_j x_k)^2 over the domain
    max_abs = float(np.sum(m[j_idx] * m[k_idx]))
    max_sq = float(np.sum((m[j_idx] * m[k_idx]) ** 2))
    # any S: sum_S |x_j x_k| <= (||x||_1^2 + ||x||_2^2) / 2, sum_S (x_j x_k)^2
    # <= ||x||_2^4, with the largest norms the domain allows (sparsity included)
    every = np.arange(d)
    l1max, l2max = _max_l1_in_domain(domain, every), _max_l2_in_domain(domain, every)
    max_abs = min(max_abs, 0.5 * (l1max**2 + l2max**2))
    max_sq = min(max_sq, l2max**4)
    if domain.data_norm is not None:
        R2 = domain.data_norm**2
        M = _pair_matrix(j_idx, k_idx, d)
        lam = float(np.linalg.eigvalsh(M)[-1])
        # Perron: max of |x|^T M |x| on the ball is R^2 lambda_max(M) (M >= 0)
        max_abs = min(max_abs, R2 * lam)
        # with z_j = x_j^2 on the simplex of radius R^2, sum_S z_j z_k = z^T M z
        # <= R^4 min(max entry, lambda_max)
        max_sq = min(max_sq, R2 * R2 * min(float(M.max()), lam))
    l1 = min(2.0 * kappa * max_abs, float(ranges.sum()))
    # principal sets: <u(x), u(x')> >= 0, so ||u - u'||^2 <= ||u||^2 + ||u'||^2
    factor = math.sqrt(2.0) if _is_principal(pairs, d) else 2.0
    l2 = min(factor * kappa * math.sqrt(max_sq), float(np.sqrt(np.sum(ranges**2))))
    return l1, l2


def _linear_part(domain, idx, coef_interval):
    """(L1, L2) bounds for entries ``a x_j`` with ``a`` in ``coef_interval``."""
    if len(idx) == 0:
        return 0.0, 0.0
    idx = np.asarray(idx)
    lo, hi = domain.feature_intervals
    a_lo, a_hi = coef_interval
    plo, phi = _interval_product(
        (np.full(idx.size, a_lo), np.full(idx.size, a_hi)), (lo[idx], hi[idx])
    )
    ranges = phi - plo
    a_max = max(abs(a_lo), abs(a_hi))
    l1 = min(2.0 * a_max * _max_l1_in_domain(domain, idx), float(ranges.sum()))
    l2 = min(
        2.0 * a_max * _max_l2_in_domain(domain, idx), float(np.sqrt(np.sum(ranges**2)))
    )
    return l1, l2


def sensitivity(objective, domain, *, linear_weight=1.0, quad_mask=None, lin_mask=None):
    """Replace-one L1 and L2 sensitivity of (a subset of) the released vector.

    Parameters
    ----------
    objective : {"squared", "logistic_taylor"}
    domain : DataDomain
    linear_weight : float
        ``c``: the linear part is released as ``c * b``.
    quad_mask : bool array of shape (p, p) or None
        Which entries of ``A`` to count (``(j, k)`` or ``(k, j)`` set selects the
        upper-triangle entry). Default all. For a vertical partition, a party's
        block is ``quad_mask[np.ix_(cols, cols)] = True`` and a cross block between
        parties ``cols_k x cols_l``.
    lin_mask : bool array of shape (p,) or None
        Which entries of ``b`` to count. Default all.

    Returns
    -------
    Sensitivity
        ``l1`` for the Laplace mechanism, ``l2`` for the Gaussian mechanism.

    Notes
    -----
    Coordinates split into disjoint groups and the bound is the sum (L1) or root
    sum of squares (L2) of per-group bounds, each the smaller of two valid bounds:
    the *range bound* (for every coordinate, the width of its range over the
    domain: no two records differ by more) and the *norm bound*
    ``||v(t) - v(t')|| <= 2 max_t ||v(t)||``. With ``kappa, beta`` as in the module
    docstring, ``m_j = max |x_j|`` over the domain and ``R`` the row-norm bound:

    - feature-feature entries ``kappa x_j x_k`` over a set ``S`` of pairs:
      ``max sum_S |x_j x_k|`` is ``sum_S m_j m_k`` under a box (attained at a
      corner) and ``R^2 lambda_max(M_S)`` under the norm (Perron-Frobenius for the
      non-negative matrix ``M_S`` with 1 on selected diagonals and 1/2 on selected
      off-diagonals; for all pairs ``lambda_max = (d + 1) / 2``, i.e.
      ``(||x||_1^2 + ||x||_2^2) / 2 <= (d + 1) R^2 / 2`` at the uniform row).
      For L2, ``sum_S (x_j x_k)^2 <= R^4`` (for all pairs it is
      ``(||x||^4 + sum x_j^4) / 2``); when ``S`` is all pairs of an index set the
      cross term ``<u(x), u(x')> = ((x.x')^2 + sum x_j^2 x'_j^2) / 2 >= 0``, so the
      difference norm is ``<= sqrt(2) max ||u||`` instead of ``2 max ||u||``.
    - feature-intercept entries ``kappa s x_j`` and linear entries
      ``c beta(y) x_j``: ``max sum |x_j|`` by water-filling on box and ball
      (``sqrt(d) R`` under the norm alone), ``max ||x||_2 = min(R, ||m||_2)``.
    - the intercept's linear entry ``c s beta(y)``: the width of ``beta``'s range
      times ``c s``; the intercept's diagonal ``kappa s^2 n`` has sensitivity 0.

    Worked cases (``R = 1``, ``|y| <= 1``, ``c = 1``, no intercept, ``d >= 2``):
    squared ``L1 = (d + 1) + 4 sqrt(d)``, ``L2 = sqrt(2 + 16)``; logistic
    ``L1 = (d + 1) / 8 + sqrt(d)``, ``L2 = sqrt(2 / 64 + 1)``. (The bound
    ``2 (d + 2 sqrt(d))`` of Zhang et al. (2012) counts the monomial
    coefficients ``2 A_jk`` instead.)
    With ``max_nonzero = k``, ``max ||x||_1`` is the water-filling over the ``k``
    largest ``m_j`` (``sqrt(k) R`` under the norm), and every quadratic set obeys
    ``sum_S |x_j x_k| <= (||x||_1^2 + ||x||_2^2) / 2 <= (k + 1) R^2 / 2``.
    Each bound is exact for its group under a box alone or a norm alone; with both,
    or for a subset, it is valid but may not be tight.
    """
    kappa, _ = objective_constants(objective)
    b_lo, b_hi = _beta_interval(objective, domain)
    c = float(linear_weight)
    if not c > 0:
        raise ValueError(f"linear_weight must be > 0, got {linear_weight!r}.")
    d, p = domain.n_features, domain.n_coef
    qm = np.ones((p, p), bool) if quad_mask is None else np.asarray(quad_mask, bool)
    lm = np.ones(p, bool) if lin_mask is None else np.asarray(lin_mask, bool)
    if qm.shape != (p, p) or lm.shape != (p,):
        raise ValueError(f"quad_mask must be ({p}, {p}) and lin_mask ({p},).")
    qm = np.triu(qm | qm.T)
    pairs = [(int(j), int(k)) for j, k in zip(*np.nonzero(qm[:d, :d]))]
    parts = [_quadratic_part(domain, pairs, kappa)]
    parts.append(_linear_part(domain, np.flatnonzero(lm[:d]), (c * b_lo, c * b_hi)))
    if domain.fit_intercept:
        s = domain.intercept_scaling
        col = np.flatnonzero(qm[:d, d])
        parts.append(_linear_part(domain, col, (kappa * s, kappa * s)))
        if lm[d]:
            width = c * abs(s) * (b_hi - b_lo)
            parts.append((width, width))
    l1 = sum(part[0] for part in parts)
    l2 = math.sqrt(sum(part[1] ** 2 for part in parts))
    return Sensitivity(l1=float(l1), l2=float(l2))


def n_released(domain):
    """Number of released noisy coordinates: ``p (p + 1) / 2 + p``."""
    p = domain.n_coef
    return p * (p + 1) // 2 + p


# --------------------------------------------------------------------------- #
# noise
# --------------------------------------------------------------------------- #
def make_mechanism(epsilon, delta, sens, n_coordinates, mechanism="laplace"):
    """The mechanism that releases the whole vector with ``(epsilon, delta)``.

    ``"laplace"``: pure epsilon-DP, L1 sensitivity. Values are rounded to the
    mechanism's output lattice (see :class:`~skdp.mechanisms.LaplaceMechanism`),
    which moves each of the ``n_coordinates`` by at most half a lattice step; the
    mechanism pays ``n_coordinates * granularity`` of extra sensitivity for it (a
    relative ``n 2^-30 / epsilon``) in its calibration. ``"gaussian"``:
    (epsilon, delta)-DP, L2 sensitivity, analytic calibration (Balle & Wang 2018).
    A zero sensitivity (a domain of one point) is replaced by a tiny positive one.
    """
    if mechanism == "laplace":
        return LaplaceMechanism(epsilon, max(sens.l1, 1e-300), dimension=n_coordinates)
    if mechanism == "gaussian":
        return GaussianMechanism(epsilon, delta, max(sens.l2, 1e-300))
    raise ValueError(f"mechanism must be 'laplace' or 'gaussian', got {mechanism!r}.")


def lattice_granularity(mech):
    """Output lattice step of a Laplace mechanism (0 for Gaussian / no noise)."""
    return float(getattr(mech, "granularity", 0.0))


def release_noise_std(mech):
    """Standard deviation of the noise on one released coordinate."""
    return math.sqrt(mech.variance)


def draw_noise(mech, domain, random_state):
    """Draw ``(noise_A, noise_b)`` for one release, in a fixed order.

    ``noise_A`` has the ``p (p + 1) / 2`` upper-triangle entries in
    :func:`triu_indices` order and is drawn first, then ``noise_b`` (``p``
    entries, on the *weighted* scale ``c * b``). The intercept's diagonal entry
    (sensitivity 0) gets exactly 0 (its draw is still made, so the stream does not
    depend on ``fit_intercept`` semantics).
    """
    rng = check_random_state(random_state)
    p = domain.n_coef
    noise_A = np.asarray(mech.sample_noise(p * (p + 1) // 2, rng), dtype=np.float64)
    noise_b = np.asarray(mech.sample_noise(p, rng), dtype=np.float64)
    if domain.fit_intercept:
        noise_A[-1] = 0.0  # the last triu entry is (p - 1, p - 1)
    return noise_A, noise_b


def add_noise(A, b, noise_A, noise_b, *, linear_weight=1.0, granularity=0.0):
    """Release ``A[triu] + noise_A`` and ``(c b + noise_b) / c``.

    Parameters
    ----------
    A : ndarray (p, p)
        Only the upper triangle is read.
    b : ndarray (p,)
    noise_A, noise_b : ndarray
        From :func:`draw_noise` (or an identical draw elsewhere).
    linear_weight : float
        ``c``; must match the one used for the sensitivity.
    granularity : float
        Lattice step of a Laplace mechanism (:func:`lattice_granularity`); the
        exact values are rounded to the lattice before the noise is added, as the
        mechanism's floating-point defence requires. 0 disables rounding.

    Returns
    -------
    A_noisy : ndarray (p, p), symmetric
    b_noisy : ndarray (p,)
    """
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    p = b.shape[0]
    c = float(linear_weight)
    upper = A[triu_indices(p)]
    lin = c * b
    if granularity > 0:
        upper = np.round(upper / granularity) * granularity
        lin = np.round(lin / granularity) * granularity
    A_noisy = symmetric_from_triu(upper + noise_A, p)
    return A_noisy, (lin + noise_b) / c


def default_coef_norm(objective, domain):
    """A data-free guess of ``||w||``: the output scale over the row-norm bound.

    ``max |y| / R`` for ``"squared"`` (a fit with ``x^T w ~ y``) and ``4 / R`` for
    ``"logistic_taylor"`` (log-odds of about 4 at the edge of the domain), with
    ``R`` the largest row norm the domain allows.
    """
    R = _max_l2_in_domain(domain, np.arange(domain.n_features))
    if R <= 0:
        return 1.0
    if objective == "squared":
        scale = max(abs(v) for v in domain.y_bounds) if domain.y_bounds else 1.0
        return max(scale, 1e-12) / R
    objective_constants(objective)  # validates the name
    return 4.0 / R


def balanced_linear_weight(objective, domain, mechanism="laplace", coef_norm=None):
    """The ``c`` minimizing the expected error of ``w`` from the noise, heuristically.

    To first order the solution error is ``A^{-1} (E_A w + e_b / 2)``, whose size
    grows like ``sigma(c)^2 (||w||^2 + 1 / (4 c^2))`` with ``sigma(c)``
    proportional to the sensitivity at ``c``. This minimizes that over ``c`` for a
    guess ``coef_norm`` of ``||w||`` (default :func:`default_coef_norm`). It uses
    only the declared domain, never the data, so it costs no privacy.

    The sensitivity is ``Q + c L`` (L1) or ``sqrt(Q^2 + c^2 L^2)`` (L2) with the
    quadratic part ``Q`` and linear part ``L`` computed once.
    """
    if coef_norm is None:
        coef_norm = default_coef_norm(objective, domain)
    p = domain.n_coef
    quad = sensitivity(objective, domain, lin_mask=np.zeros(p, bool))
    lin = sensitivity(objective, domain, quad_mask=np.zeros((p, p), bool))

    def cost(log_c):
        c = math.exp(log_c)
        if mechanism == "laplace":
            s = quad.l1 + c * lin.l1
        else:
            s = math.hypot(quad.l2, c * lin.l2)
        return s * s * (coef_norm**2 + 0.25 / (c * c))

    grid = np.linspace(math.log(1e-3), math.log(1e3), 121)
    best = grid[int(np.argmin([cost(g) for g in grid]))]
    step = grid[1] - grid[0]
    res = optimize.minimize_scalar(
        cost,
        bounds=(best - step, best + step),
        method="bounded",
        options={"xatol": 1e-6},
    )
    return float(math.exp(res.x if res.fun <= cost(best) else best))


# --------------------------------------------------------------------------- #
# post-processing and solve
# --------------------------------------------------------------------------- #
def solve_noisy_quadratic(
    A,
    b,
    *,
    noise_std=0.0,
    method="ridge",
    ridge_factor=DEFAULT_RIDGE_FACTOR,
    noise_std_b=None,
    coef_norm=None,
):
    """Minimize ``w^T A w + b^T w`` after making the noisy quadratic well posed.

    Parameters
    ----------
    A : ndarray (p, p)
        Symmetric (it is symmetrized again, harmlessly).
    b : ndarray (p,)
    noise_std : float
        Standard deviation of the noise on each released entry of ``A``.
        0 means an exact (noise-free) release: the exact minimizer is returned
        (minimum-norm least squares if ``A`` is singular).
    method : {"ridge", "trim", "none"}
        ``"ridge"``: project ``A`` onto the positive semi-definite cone
        (eigenvalues clipped at 0) and add ``lambda I`` with
        ``lambda = ridge_factor * 2 sqrt(p) * noise_std``, the expected spectral
        norm of the symmetric noise matrix. ``"trim"``: drop the eigen-directions
        with eigenvalue below that ``lambda`` and solve in the rest (``w`` has no
        component there). ``"none"``: solve as is (for comparison).
    ridge_factor : float
    noise_std_b, coef_norm : float or None
        Standard deviation of the noise on ``b`` (``noise_std / c``) and a guess
        ``W`` of ``||w||`` (:func:`default_coef_norm`). When both are given, the
        ridge is at least the bias-variance optimum for an isotropic quadratic,
        ``p (noise_std^2 + noise_std_b^2 / (4 W^2)) / a`` with ``a`` the mean
        eigenvalue of the projected ``A``: when the noise swamps the signal the
        fit shrinks towards 0 (never much worse than predicting 0) instead of
        fitting noise. In the synthetic benchmark this changes only the cells
        where the signal is lost (d = 50, eps = 0.1).

    Returns
    -------
    w : ndarray (p,)

    Notes
    -----
    Everything here is post-processing of the release, so it costs no privacy.
    The noisy ``A`` is often indefinite; the unregularized minimizer then does not
    exist and the stationary point has huge coefficients (what diffprivlib returns).
    """
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    A = 0.5 * (A + A.T)
    p = b.shape[0]
    if noise_std == 0 or method == "none":
        return linalg.lstsq(A, -0.5 * b, lapack_driver="gelsd")[0]
    lam = ridge_factor * 2.0 * math.sqrt(p) * noise_std
    evals, evecs = np.linalg.eigh(A)
    if noise_std_b is not None and coef_norm is not None:
        mean_eig = max(float(np.maximum(evals, 0.0).mean()), np.finfo(float).tiny)
        variance = p * (noise_std**2 + noise_std_b**2 / (4.0 * coef_norm**2))
        lam = max(lam, variance / mean_eig)
    if method == "ridge":
        evals = np.maximum(evals, 0.0) + lam
        keep = np.ones(p, bool)
    elif method == "trim":
        keep = evals > lam
    else:
        raise ValueError(f"method must be 'ridge', 'trim' or 'none', got {method!r}.")
    V = evecs[:, keep]
    return -0.5 * (V @ ((V.T @ b) / evals[keep]))
