"""Exact sums of ``Z^T Z`` over rows: the same bits for any split of the rows.

:mod:`skdp._fm.statistics` merges statistics of blocks of rows. Float sums of
different splits would differ in their last bits; these are exact: every
clipped value is an integer multiple of a power-of-two grid fixed by the
declared domain, the products are summed exactly, and the float statistics are
the correctly rounded exact sums, the same for any split, in any order, on any
machine.

Exact accumulation
------------------
Let ``Z = [X, s 1, beta(y)]`` be the clipped rows with the intercept column and
the label term (one column per target). Column ``j`` is bounded by the declared
domain, ``|z_j| <= M_j`` with ``2^(E_j - 1) <= M_j < 2^E_j``; its grid is
``g_j = 2^(E_j - 36)`` (36 bits relative to the bound).

1. **Grid.** A value is clipped to its declared range with both ends moved
   inwards to the grid (so the range keeps its grid points and no value leaves
   it), then truncated toward zero to the grid: ``m = trunc(z / g_j)``, an
   integer with ``|m| <= 2^36 - 1``. Truncation toward zero never increases
   ``|z_j|``, a row norm or the number of non-zeros, and keeps every range
   that contains 0; with the inward-moved ends it keeps the others. The
   rounded rows therefore lie in the declared domain and the sensitivity holds
   for them as derived (:mod:`skdp._fm.sensitivity`); the grid adds nothing to
   the last-ulp rounding of the norm clip itself. The intercept column is
   exact: ``m = 1`` with unit ``s``.
2. **Limbs.** ``m = 2^18 t + l`` with ``t = trunc(m / 2^18)``: ``t`` and ``l``
   are integers of ``m``'s sign with ``|t|, |l| <= 2^18 - 1``, and
   ``u = t + l`` has ``|u| <= 2^19 - 2``. (Computed as ``t = trunc(z'')``,
   ``l = trunc(2^18 (z'' - t))`` with ``z'' = z 2^(18 - E_j)``: every step is
   exact in float64.)
3. **Three Gram matrices** (Karatsuba: three products instead of four)::

       m_j m_k = 2^36 t_j t_k + 2^18 (u_j u_k - t_j t_k - l_j l_k) + l_j l_k

   ``T^T T``, ``L^T L`` and ``U^T U`` are computed by BLAS in float64 over
   blocks of at most ``2^15`` rows. Each product is an integer below
   ``(2^19 - 2)^2 < 2^38`` in magnitude, so every partial sum, in whatever
   order and blocking BLAS (or the accumulation over chunks) adds them, with or
   without fused multiply-adds, is an integer below ``2^15 2^38 = 2^53``:
   exactly representable, so the float results are the exact integer sums.
   (This holds for any BLAS that sums products, as every one in use does; a
   Strassen-type product, which multiplies sums, is the one kind it excludes.)
4. **Integer accumulation.** After each block of ``2^15`` rows the three sums
   are converted to int64 (exact) and added into base-``2^18`` digits (digit 0:
   ``L^T L``, 1: ``U^T U - T^T T - L^T L``, 2: ``T^T T``). A carry brings
   digits 0 to 3 into ``[0, 2^18)`` and leaves the sign and the rest in digit 4,
   which stays at most ``n + 1`` since ``|sum m_j m_k| < n 2^72``; carrying
   every 128 blocks and at every merge keeps every digit below ``2^62`` (see
   ``_Accumulator``): no overflow for fewer than ``2^61`` rows. Merging adds
   digits and carries: integer addition, associative and commutative.
5. **Reading** ``A`` or ``b`` converts each exact sum times its units
   (``g_j g_k``, or ``s`` for the intercept) to the nearest float64, once
   (Python integers: correctly rounded).

Cost: three Gram matrices of ``q = d + 1 + n_targets`` columns, three times
the flops of a float64 ``Z^T Z`` (no exact scheme with a grid this fine does
with fewer: two limbs are needed, and the products of two limbs span three
symmetric forms), and seven elementwise passes over each chunk (clip, scale,
five to split), which stays in the CPU cache. Blocks of ``2^15`` rows are the
most the bound allows. BLAS runs with the threads the user configured (no
thread limit per call; the Dask driver sets one per fit).

What the grid changes
---------------------
Each value moves toward zero by less than one grid unit,
``g_j <= 2^-35 M_j``. An entry ``kappa sum_i x_ij x_ik`` of ``A`` moves by less
than ``kappa n 2^-34 M_j M_k`` when every row's error has the same sign (the
worst case), ``2^-34`` (6e-11) of its largest possible value; errors of mixed
signs give about ``sqrt(n)`` times less. On a domain symmetric about 0 (what
the estimators work in) that entry ranges over a width of at least
``kappa M_j M_k``, a lower bound for both sensitivities, so the noise on it has
standard deviation at least ``sqrt(2) kappa M_j M_k / epsilon`` (Laplace) or
``kappa M_j M_k / sqrt(2 epsilon)`` (Gaussian, any ``delta < 1/2``): the worst
case stays below 1% of the noise while ``n epsilon < 2 10^8`` (Laplace) or
``n sqrt(epsilon) < 10^8`` (Gaussian), and far below it in practice (the
sensitivities are sums over many entries). Without noise (``epsilon = inf``)
``A`` and ``b`` move by at most ``2^-34`` relative, the coefficients by about
the condition number of ``A`` times that. The map (clip, then truncate to the
grid) is public and data independent: part of the clipping, so the guarantee
is unchanged.
"""

import math

import numpy as np

from skdp._fm.clipping import beta_bound, clip_features

__all__ = ["SCHEME", "carry", "exact_gram", "exact_to_float"]

_LIMB = 18  # bits per limb
_GRID = 2 * _LIMB  # grid bits relative to each column's power-of-two bound
_BLOCK_ROWS = 2**15  # rows whose limb products (< 2^38 each) sum exactly in float64
_LEVELS = 5  # base-2^18 digits of the exact sums (the top one signed)
_CARRY_EVERY = 128  # flushes between carries (see _Accumulator)
SCHEME = "2x18-bit limbs, 36-bit grid, truncation toward zero"
# memory of one chunk buffer: the chunk's passes stay in the CPU cache, and the
# per-chunk Python overhead stays small next to its BLAS work (measured in
# benchmarks/bench_statistics_speed.py)
_CHUNK_BYTES = 2**20


def _exponent(bound):
    """``E`` with ``2^(E - 1) <= bound < 2^E`` (0 for a zero bound)."""
    return math.frexp(bound)[1] if bound > 0 else 0


def _on_grid(values, exponents, direction):
    """``values`` moved to the grid ``2^(E - 36)``: ``np.floor`` or ``np.ceil``."""
    shift = exponents - _GRID
    return np.ldexp(direction(np.ldexp(values, -shift)), shift)


def _scalar_on_grid(value, exponent, direction):
    """:func:`_on_grid` of one value (``math.floor`` or ``math.ceil``)."""
    if not math.isfinite(value):
        return np.float64(value)
    shift = exponent - _GRID
    return np.float64(math.ldexp(direction(math.ldexp(value, -shift)), shift))


def _same(*arrays):
    """True if each array's entries are all equal (and there is at least one)."""
    return all(a.size and a.min() == a.max() for a in arrays)


class _Layout:
    """Columns of ``Z = [X, s 1, beta(y)]``: grids, ranges and units.

    Everything here depends on the objective and the declared domain only.
    Clip bounds and scales are ``np.float64`` scalars where every feature
    shares them (the common case: numpy's broadcast loops over short rows are
    slower), never Python floats (numpy would clip float32 input in float32).
    """

    def __init__(self, objective, domain, n_targets):
        d = domain.n_features
        self.d, self.p, self.q = d, domain.n_coef, domain.n_coef + n_targets
        self.domain, self.fit_intercept = domain, domain.fit_intercept
        # the fast path: the box (and the public shift) only
        self.box_only = domain.data_norm is None and domain.max_nonzero is None
        # E with 2^(E - 1) <= M < 2^E (0 for a zero bound); the ranges with both
        # ends moved inwards to the grid 2^(E - 36)
        lo, hi = domain.feature_intervals
        # z'' = z 2^(18 - E): one scalar, or ldexp column by column (shift)
        self.scale = self.shift = None
        if _same(domain._m, lo, hi):
            E = _exponent(float(domain._m[0]))
            self.lo = _scalar_on_grid(float(lo[0]), E, math.ceil)
            self.hi = _scalar_on_grid(float(hi[0]), E, math.floor)
            empty = [0] if self.lo > self.hi else []
            exponents = [E - _GRID] * d
            if abs(_LIMB - E) <= 1000:
                self.scale = math.ldexp(1.0, _LIMB - E)
            else:
                E = np.full(d, E)
        else:
            E = np.frexp(domain._m)[1].astype(np.int64)
            self.lo, self.hi = _on_grid(lo, E, np.ceil), _on_grid(hi, E, np.floor)
            empty = np.flatnonzero(~(self.lo <= self.hi))
            exponents = (E - _GRID).tolist()
        if self.scale is None:
            self.shift = np.zeros(self.q, np.int64)
            self.shift[:d] = _LIMB - E
        Eb = _exponent(beta_bound(objective, domain))
        if objective == "squared":  # beta = -2 y with y in y_bounds
            b_lo, b_hi = -2.0 * domain.y_bounds[1], -2.0 * domain.y_bounds[0]
        else:  # beta's values lie in a range that contains 0
            b_lo, b_hi = -math.inf, math.inf
        self.beta_lo = _scalar_on_grid(b_lo, Eb, math.ceil)
        self.beta_hi = _scalar_on_grid(b_hi, Eb, math.floor)
        self.beta_shift = _LIMB - Eb
        if len(empty) or self.beta_lo > self.beta_hi:
            where = f"feature {empty[0]}" if len(empty) else "the label term"
            raise ValueError(
                f"The declared range of {where} holds no point of the statistics' "
                "grid (2^-36 of its bound): a range that excludes 0 must contain "
                "one."
            )
        # each column's unit: (integer, exponent); all but the intercept's are
        # powers of two, the intercept column holds m = 1 in units of s
        nums = [1] * d
        if domain.fit_intercept:
            num, den = float(domain.intercept_scaling).as_integer_ratio()
            exponents.append(1 - den.bit_length())
            nums.append(num)
        exponents += [Eb - _GRID] * n_targets
        nums += [1] * n_targets
        self.units = tuple(zip(nums, exponents))


def _fill_chunk(Z, X, beta, layout):
    """Write one chunk's clipped rows into ``Z`` in units of ``2^(E_j - 18)``."""
    d, p = layout.d, layout.p
    Zx = Z[:, :d]
    if layout.box_only:
        if layout.domain.x_offset is not None:
            np.subtract(X, layout.domain.x_offset, out=Zx)
            X = Zx
        if layout.domain.x_scale is not None:
            np.divide(X, layout.domain.x_scale, out=Zx)
            X = Zx
        np.clip(X, layout.lo, layout.hi, out=Zx)
    else:
        # the norm ball and the sparsity bound in data units, as clip_to_domain
        # does; then the grid-aligned ranges catch a norm clip's last-ulp
        # overshoot, so that |m| < 2^36 holds
        np.clip(clip_features(X, layout.domain), layout.lo, layout.hi, out=Zx)
    if layout.scale is not None:
        np.multiply(Z, layout.scale, out=Z)
    else:
        np.ldexp(Z, layout.shift, out=Z)
    if layout.fit_intercept:
        Z[:, d] = 2.0**-_LIMB  # m = 1: t = 0, l = 1
    beta = np.clip(beta, layout.beta_lo, layout.beta_hi)
    np.ldexp(beta, layout.beta_shift, out=Z[:, p:])


def _split_limbs(W):
    """``W[1] = z''`` (in units of ``2^(E - 18)``) -> ``W = (t, l, t + l)``."""
    T, Z, U = W
    np.trunc(Z, out=T)
    np.subtract(Z, T, out=Z)  # exact: same sign, |Z - T| < 1
    np.multiply(Z, 2.0**_LIMB, out=Z)
    np.trunc(Z, out=Z)
    np.add(T, Z, out=U)


class _Accumulator:
    """Exact sums of ``Z^T Z``: float64 Gram blocks of at most 2^15 rows, then
    base-2^18 int64 digits.

    A flush adds less than ``2^54`` to digits 0 to 2 (``|U^T U - T^T T - L^T
    L| < 2^53 + 2^52``), so the digits are carried only every ``_CARRY_EVERY``
    = 128 flushes (and by every merge): digits 0 to 2 stay below ``2^61 +
    2^18`` in magnitude, digit 3 below ``2^18``, digit 4 at most ``n + 1``, and
    the sum of two such digit arrays fits in int64 (for fewer than ``2^61``
    rows).
    """

    def __init__(self, q):
        self.levels = np.zeros((_LEVELS, q, q), np.int64)
        self.grams = np.zeros((3, q, q))  # T^T T, L^T L, U^T U
        self.rows = 0
        self.flushes = 0

    def add(self, W):
        """Add the Gram matrices of the limbs ``W = (T, L, U)`` of some rows."""
        rows = W.shape[1]
        if self.rows + rows > _BLOCK_ROWS:
            self.flush()
        self.rows += rows
        # exact: integer partial sums below 2^53
        if rows <= 64:  # one batched call; numpy's per-call cost dominates
            self.grams += np.matmul(W.transpose(0, 2, 1), W)
        else:  # X^T X is BLAS syrk: half the flops of a batched product
            for gram, limb in zip(self.grams, W):
                gram += limb.T @ limb

    def flush(self):
        """Move the float sums into the integer digits."""
        if not math.isfinite(self.grams.sum()):
            raise ValueError("X and y must be finite (NaN or infinity found).")
        tt, ll, uu = self.grams.astype(np.int64)
        uu -= tt
        uu -= ll  # the cross term, digit 1
        self.levels[0] += ll
        self.levels[1] += uu
        self.levels[2] += tt
        self.grams.fill(0.0)
        self.rows = 0
        self.flushes += 1
        if self.flushes % _CARRY_EVERY == 0:
            carry(self.levels)


def carry(levels):
    """Normalize digits in place to [0, 2^18) (the top one keeps the sign and
    the rest)."""
    for s in range(_LEVELS - 1):
        carry = levels[s] >> _LIMB  # arithmetic shift: floor division
        levels[s] &= (1 << _LIMB) - 1  # two's complement: levels[s] - carry 2^18
        levels[s + 1] += carry
    return levels


def _rounded(value, exponent):
    """The float64 nearest to ``value * 2^exponent`` (Python ints; exact rounding)."""
    try:
        if exponent >= 0:
            return float(value << exponent)
        return value / (1 << -exponent)  # int / int is correctly rounded
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def exact_to_float(levels, units):
    """The float64 nearest to each exact sum times its units."""
    total = levels[-1].astype(object)
    for s in range(_LEVELS - 2, -1, -1):
        total = (total << _LIMB) + levels[s].astype(object)
    q = total.shape[0]
    out = np.empty((q, q))
    for j in range(q):
        num_j, exp_j = units[j]
        for k in range(j, q):
            num_k, exp_k = units[k]
            value = _rounded(int(total[j, k]) * num_j * num_k, exp_j + exp_k)
            out[j, k] = out[k, j] = value
    return out


def exact_gram(X, labels, objective, domain):
    """The exact sums of ``Z^T Z`` for ``Z = [clipped X, s 1, labels]``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Any numeric dtype and layout; not modified.
    labels : ndarray of shape (n_samples,) or (n_samples, n_targets)
        The label terms ``beta(y)`` of rows whose labels are clipped.
    objective : {"squared", "logistic_taylor", "multinomial_taylor"}
    domain : DataDomain

    Returns
    -------
    levels : ndarray of shape (5, q, q), int64
        Base-``2^18`` digits of the exact integer sums (not necessarily carried).
    units : tuple of (int, int)
        Per column, the unit ``num 2^exp`` of its integers.
    """
    n = X.shape[0]
    n_targets = 1 if labels.ndim == 1 else labels.shape[1]
    layout = _Layout(objective, domain, n_targets)
    acc = _Accumulator(layout.q)
    rows = max(1, min(_BLOCK_ROWS, n, _CHUNK_BYTES // (8 * layout.q)))
    # the limbs (t, l, t + l) of a chunk; W[1] first holds the scaled rows.
    # Zeros: the columns written after the scaling never hold stale garbage.
    W = np.zeros((3, rows, layout.q))
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        Wc = W[:, : stop - start]
        chunk_labels = labels[start:stop].reshape(-1, n_targets)
        _fill_chunk(Wc[1], X[start:stop], chunk_labels, layout)
        _split_limbs(Wc)
        acc.add(Wc)
    acc.flush()
    return acc.levels, layout.units
