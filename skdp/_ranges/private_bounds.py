"""Private per-feature ranges: a DP pair of quantiles per column, then fences.

One reusable component for every estimator that needs a declared domain and
whose user cannot declare it (``bounds_X="private"``): it spends a given
epsilon on the columns whose range is not public, and takes the others from
the schema (boolean pandas dtypes, categorical ones whose categories the user
declares public, or ``public_bounds``) at no cost.
"""

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np

from skdp._ranges.column_draws import envelope_range, open_grid_ranges
from skdp._ranges.envelope_budget import (
    column_shares,
    drop_hopeless_envelopes,
    looseness_n_epsilon,
    looseness_test,
)
from skdp._ranges.grid import (  # noqa: F401 (the names tests and callers use)
    CENTRE_WIDTH_BELOW,
    ENVELOPE_RESOLUTION,
    FALLBACK_WEIGHT,
    KAPPA,
    MIN_N_EPSILON,
    Q_MAX,
    Q_MIN,
    _fallback_log_weight,
    candidate_grid,
    envelope_grid,
    fallback_log_mass,
    fence_factor,
    pair_log_probabilities,
    quantile_level,
    sample_quantile_pair,
)
from skdp._ranges.public_ranges import public_ranges, schema_bounds
from skdp._ranges.range_columns import float_columns
from skdp._ranges.ranks import quantile_distance
from skdp._ranges.reliability import BETA, min_n_epsilon
from skdp.accounting import PrivacyBudget, record_spend
from skdp.utils import noise_generator

__all__ = [
    "PrivateBounds",
    "PrivateBoundsWarning",
    "candidate_grid",
    "envelope_grid",
    "fence_factor",
    "pair_log_probabilities",
    "private_bounds",
    "quantile_distance",
    "quantile_level",
    "sample_quantile_pair",
    "schema_bounds",
]


class PrivateBoundsWarning(UserWarning):
    """The private ranges are likely unreliable: too small a budget for n."""


def _rows_needed(n, epsilon_column):
    """The least ``n'`` with ``n' * epsilon_column >= min_n_epsilon(n')``."""
    rows = max(int(n), 2)
    for _ in range(20):
        need = max(2, math.ceil(min_n_epsilon(rows) / epsilon_column))
        if need == rows:
            break
        rows = need
    return rows


def _small_budget_message(n, epsilon, eps_col, low, m, threshold, names, label):
    """The refusal: which column, what it gets, what would do."""
    j = int(np.argmin(np.where(low, eps_col, np.inf)))
    if j == label:
        what = "the label"
    elif names is not None and j < len(names):
        what = f"column {names[j]!r}"
    else:
        what = f"column {j}"
    factor = threshold / (n * eps_col[j])
    half = ", the label half of it" if label is not None and m > 1 else ""
    return (
        f"Private ranges need n * epsilon >= {threshold:.0f} per column for "
        f"n = {n} rows; {what} gets {n * eps_col[j]:.3g} ({m} columns share "
        f"epsilon = {epsilon:.3g}{half}; "
        f"{int(low.sum())} below). Below it a released range misses the "
        f"central half of its column with probability above {BETA:.0%} "
        "(private_bounds, Notes), and a label range that misses gives an "
        "absurd model. Declare the ranges you know instead: bounds_X / "
        "bounds_y (or public_bounds for indicator and coded columns; a loose "
        "declared range with tighten_bounds=True is kept at no cost where the "
        f"budget is too small); or give the ranges {factor:.3g} times the "
        f"epsilon (epsilon, or the bounds' budget share), or use at least "
        f"{_rows_needed(n, eps_col[j]):,} rows."
    )


@dataclass(frozen=True)
class PrivateBounds:
    """Ranges of every column and what their release cost.

    Attributes
    ----------
    lower, upper : ndarray of shape (n_columns,)
    estimated : ndarray of bool
        Columns whose range was released privately (the others were public).
    epsilon : float
        Recorded in total (0 when no range was estimated), before any draw:
        the ``epsilon`` given, whatever the draws turn out to use. Pure
        epsilon-DP.
    epsilon_per_column : ndarray of shape (n_columns,)
        Each column's part (0 for a public one); they sum to ``epsilon``
        (basic composition over columns).
    quantile_level : ndarray of shape (n_columns,)
        The level ``q`` of each released quantile pair (NaN for a public
        column, or an envelope kept after its looseness test; 1/4 for a
        median and half-width, whose half-width holds the quartiles' rows).
    loose_fraction : ndarray of shape (n_columns,)
        An envelope column's released looseness test (the noisy fraction of
        rows in the fullest half-envelope window; NaN if not tested).
    epsilon_unused : float
        The part of ``epsilon`` no draw used: the rest of the parts of the
        envelope columns kept after their looseness test. For information
        only: it is recorded (part of ``epsilon``) and is not given back to
        anyone, because whether it is left depends on the released test.
    """

    lower: np.ndarray
    upper: np.ndarray
    estimated: np.ndarray
    epsilon: float
    epsilon_per_column: np.ndarray
    quantile_level: np.ndarray
    loose_fraction: np.ndarray
    epsilon_unused: float = 0.0

    @property
    def budget(self):
        """What the release spent, as a :class:`~skdp.accounting.PrivacyBudget`."""
        return PrivacyBudget(self.epsilon, 0.0)


def private_bounds(
    X,
    *,
    epsilon,
    public_bounds=None,
    feature_names=None,
    random_state=None,
    source="private_bounds",
    small_budget="raise",
    label_column=None,
    envelope=None,
    public_categories=False,
):
    """Per-column ranges, released with epsilon-DP where they are not public.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_columns)
        Finite real values (complex or non-numeric columns are refused with a
        ValueError naming the column, before anything is spent). Boolean
        pandas columns take the range ``(0, 1)`` from the dtype; categorical
        columns are numbers like any other, estimated privately, unless
        ``public_categories`` declares their categories public
        (:func:`schema_bounds`).
    epsilon : float
        Spent on the columns whose range is not public, split equally (see
        ``label_column``).
    public_bounds : dict or None
        ``{feature: (lower, upper)}``, a feature by index (or by name, with
        ``feature_names`` or a DataFrame): ranges known from the schema
        (indicators, one-hot columns, ordinal codes), used as given at no cost.
    feature_names : sequence of str or None
        Column names, when ``X`` is not a DataFrame.
    random_state : None, int, RandomState or Generator
        Source of the noise.
        Seeds the noise only under the reproducible-noise opt-in
        (:func:`skdp.set_config`); by default, fresh OS entropy.
    source : str
        Who spends, for :func:`~skdp.accounting.track_budget`. The whole
        ``epsilon`` is recorded before the first draw (see Accounting).
    small_budget : {"raise", "warn", "ignore"}, default="raise"
        What to do, before anything is spent, when a column without an
        envelope gets ``n * epsilon_column`` below the refusal threshold
        :func:`~skdp._ranges.reliability.min_n_epsilon` (about 140-160, see
        Notes): raise a ValueError saying what to declare or how much epsilon
        or how many rows would do (the default, and what every estimator
        does); or release anyway, with a :class:`PrivateBoundsWarning`
        (``"warn"``) or silently (``"ignore"``): the ranges are then as
        likely to miss as the Notes say, which is for studying the mechanism,
        not for fitting.
    label_column : int or None
        A column (the regression label, appended by the FM estimators) that
        gets as much of ``epsilon`` as all other estimated columns together
        (when it is estimated and others are). A label range that misses
        ruins every coefficient and the intercept, a feature's range only that
        feature's coefficient. Measured on the 24 regression cells with
        ``n * epsilon >= 1,000`` of ``benchmarks/bench_small_data.py`` (share
        0.2): with equal shares the test MSE was 10^7 to 10^16 times that of
        declared ranges in 8 cells (a label range missed by orders of
        magnitude), with half for the label at most 9 times. None: equal
        shares.
    envelope : dict or None
        ``{feature: (lower, upper)}``: loose public ranges (documentation,
        units) that a column's released range is drawn inside of, with
        "keep the envelope" as a possible outcome (see Notes). Each such column
        first gets a looseness test (``n * epsilon`` of 32, or 1/16 of its part
        where that is more): only where the data sit in half the envelope is
        the rest of its part spent on a tighter range; elsewhere it keeps the
        envelope and the rest is not used (reported in ``epsilon_unused``; it
        is recorded all the same, see Notes). A column whose part gives ``n *
        epsilon_column`` below ``ENVELOPE_PART`` = 160 is neither tested nor
        estimated (the others get its part: features first, then the label);
        when no column is left nothing is spent. A column in ``public_bounds``
        or the schema is taken as given instead.
    public_categories : bool or sequence of str or int, default=False
        Categorical (pandas) columns whose categories are public: fixed by a
        schema or codebook, not read off these rows. Their range is then
        ``(min, max)`` of the categories, at no cost. True: every categorical
        column; a sequence: those columns, by name or index. By default the
        categories are data (``.astype("category")`` takes them from the
        values, so their range is the data's exact range) and the column's
        range is released privately like any numeric column.

    Returns
    -------
    PrivateBounds

    Notes
    -----
    **Mechanism.** For each column ``c`` that is not public, with its share
    ``eps_c`` of ``epsilon`` (equal shares; half of it for ``label_column``
    when other columns are estimated too) and the level
    ``q`` of
    :func:`quantile_level`: one exponential mechanism over pairs
    ``(a, b)`` of the public candidate set :func:`candidate_grid` with score
    ``u(a, b) = -max(d_q(a), d_{1-q}(b))`` (:func:`quantile_distance`: how
    many ranks a candidate is from the quantile, ties counted as exact) and
    ``P(a, b) ∝ exp(eps_c u(a, b) / 2)``. Replacing one row changes every
    ``d`` by at most 1, so ``u`` has sensitivity 1 and the draw is
    ``eps_c``-DP (McSherry & Talwar 2007); the columns compose to
    ``epsilon`` (basic composition); the fences are post-processing. Each
    column is clipped to the grid's span ``±9.99e11`` before counting, a
    data-independent map. Neighbours are replace-one (``n`` public), as for
    every skdp estimator: ``n`` and ``epsilon`` choose ``q``.

    **Why a pair, and why these candidates.** Drawing both quantiles at once
    gives each the whole ``eps_c`` (two separate draws would get half each):
    a pair is unlikely unless *both* ends are near their targets. The
    candidates are scale-free (four significant digits at every magnitude
    from 1e-6 to 1e12), so no unit or range is assumed, and they hold round
    numbers exactly, so a column with many zeros (or any tied value) gets
    that value as an exact quantile instead of an arbitrary point around it.
    The textbook 1% / 99% quantiles fail at realistic ``n * epsilon``: every
    candidate beyond the data scores nearly alike and there are many of them;
    at ``q`` the score gap to those candidates is ``q n``, so ``q`` is the most
    extreme level with ``eps_c q n`` large (:data:`KAPPA`).

    **Small budgets without an envelope.** Where ``n * eps_c`` is below
    ``CENTRE_WIDTH_BELOW`` = 256 the pair (at its largest level, the quartiles)
    pays the grid's prior over 36 decades at both ends and can land orders of
    magnitude wide; the column's range is then ``[m - 4 w, m + 4 w]`` from two
    exponential mechanisms with ``eps_c / 2`` each: the median ``m`` on the
    grid (score minus the rank distance from ``n / 2``) and, given it, the
    half-width ``w`` holding half the rows on the grid's non-negative
    candidates (score minus the distance of ``n / 2`` from the counts ``#{|x -
    m| < w}`` and ``#{|x - m| <= w}``); each score has sensitivity 1, so the
    range is ``eps_c``-DP (``_centre_width``). ``4 w`` is Tukey's fence for a
    normal column; the range is symmetric, so a skewed column's long side is
    clipped more than by the pair.

    **When a range can work: refusal and coverage.** A range fails when its
    draw misses its targets by a large part of the rows (the median outside
    the central half of the rows, or a half-width holding under a quarter or
    over three quarters of them; a pair end ``n / 8`` ranks off or beyond
    the data). The exponential mechanism's utility bound (McSherry & Talwar
    2007) with the grid's base measure bounds that probability by
    ``beta(x, n)``, ``x = n * eps_c``: for the median and half-width
    (``e = eps_c / 2`` each, bad candidates ``n / 4`` ranks off inside the
    rows' range or ``n / 2`` beyond it, good ones within ``n / 16``)

        ``beta(x, n) = (rho_m + rho_w) e^{-3x/64} + (M / om_m + M_w / om_w)
        e^{-7x/64}``,

    ``rho = Lambda / om`` the base mass of the rows' range over that of the
    good candidates, ``M`` = 83.9 the whole grid's (42.5 for widths); for
    the pair a like bound with ``e = eps_c`` over pairs
    (:mod:`~skdp._ranges.reliability`, which derives both). The masses are
    stated for a reference column, normal with standard deviation at least
    a tenth of its mean's magnitude (a column around 0 does better; one of
    spread ``c < 0.1`` of its magnitude has the ``M`` terms ``0.1 / c``
    times larger). At ``n = 1,000``: ``beta`` = 0.47 at ``x = 100``, 0.12
    at 128, 0.041 at 150, 0.004 at 200, at most 0.033 from 256 on (the
    pair; it is vacuous at 160, which is why the median and half-width are
    used up to 256). The **refusal threshold** ``min_n_epsilon(n)`` is the
    least ``x`` with ``beta <= 5%``: 142 at ``n = 300``, 146 at 1,000, 151 at
    10,000. A column without an envelope below it is refused before
    anything is spent (``small_budget``); an envelope column is kept at no
    cost below ``ENVELOPE_PART`` instead. **Coverage guarantee:** above the
    threshold, outside the failure event the range holds more than a
    quarter of the rows and is at most 8 times as wide as their range, and
    for a normal-shaped column it contains the central half of the rows
    ``[Q_{1/4}, Q_{3/4}]``, so ``P(range contains the central half) >= 1 -
    beta(x, n) >= 95%`` for the reference column (tested over 2,000 draws
    against the stated probability). The bound is conservative: measured on
    the 53 numeric columns of ``bench_small_data`` the median and
    half-width failed in 4% of draws at ``x = 128`` (bound: 12%).

    **Inside an envelope.** With ``envelope[c] = (L, H)`` the column is
    clipped to ``[L, H]`` (a data-independent map), the candidates are
    :func:`envelope_grid`'s (the grid inside the envelope, no finer than
    ``1e-4 (H - L)``, plus ``L`` and ``H``) and one more outcome, "keep
    ``[L, H]``", has score ``-max(d_q(L), d_{1-q}(H))`` (sensitivity 1 like
    every other) and base mass ``FALLBACK_WEIGHT = 10`` times that of all
    pairs together: the same exponential mechanism over one more candidate,
    still ``eps_c``-DP. Where the budget is too small to single out a tight
    pair the draw keeps the envelope (probability >= 10/11 when no pair
    scores better than it), so the fit is no worse than with the declared
    range but for the share spent; with enough budget the tight pair wins
    (its score is ``q n`` higher: odds ``exp(eps_c q n / 2) = e^32`` at
    ``q = KAPPA / (n eps_c)`` against a base-mass handicap of at most
    ``~1e7``). The fenced range is clipped to the envelope, and a pair that
    is one value (a column mostly equal to one value, like capital gains)
    keeps the envelope: post-processing of the draw. Envelope columns share
    ``epsilon`` equally with the label, even when ``label_column`` is set: a
    label range that misses keeps its envelope instead of ruining the model
    (measured: equal shares kept all 24 regression cells within 10% of
    declared ranges, half for the label missed diamonds at eps 0.1 by 2.3x
    but did better on the 294-row CASchools at eps 5, 0.42 vs 1.02 times
    declared).

    **Looseness test.** Before its pair, an envelope column spends ``eps_t =
    max(32, x / 16) / n`` on ``g + Laplace(1 / eps_t)``, ``g`` the most rows in
    one of five public windows half the envelope wide
    (:func:`~skdp._ranges.envelope_budget.half_window_count`, sensitivity 1):
    ``eps_t``-DP. Only if the noisy fraction is at least 0.9 does the pair get
    the rest of the part; otherwise the envelope is kept and the rest is not
    used (``epsilon_unused``). A column whose rows all sit in one window (its
    envelope at least twice too wide) keeps the envelope with probability
    ``exp(-0.1 n eps_t) / 2``: 2% up to ``x = 512``, 0.1% at 1,000, 2e-6 at
    2,000 (it was 2% at every budget with a fixed ``n eps_t = 32``). Either way
    the column's whole part is what is recorded: the guarantee is
    ``epsilon``-DP by basic composition with adaptively chosen parameters (a
    privacy filter, Rogers et al. 2016: for every outcome of the tests, what
    follows uses at most the part left), and the amount recorded must not
    depend on the test's outcome (see Accounting).

    **Accounting.** All input is validated first (shape, finite real values,
    the parameters), then the whole ``epsilon`` is recorded
    (:func:`~skdp.accounting.record_spend`, which checks any
    :func:`~skdp.accounting.track_budget` cap), then the draws are made.
    The amount recorded is a function of ``epsilon``, ``n`` and the declared
    ranges only (0 when no column is estimated), never of a draw: under a cap,
    whether a call is refused says nothing about the data. (Before, the
    release recorded after its draws and only the looseness test's part of a
    kept envelope, so a refusal under a cap between ``32 / n`` and
    ``epsilon`` revealed the test's outcome and a refused call recorded
    nothing.) The price: the rest of a kept envelope's part is not given to a
    fit that follows (it was: diamonds at eps 0.1, whose documented label
    range is the data's, measured 1.5 to 2 times the test MSE when the
    label's part is lost to the fit).

    **Fences.** ``[a - k (b - a), b + k (b - a)]`` with ``k = fence_factor(q)``:
    Tukey's fences (``k = 1.5`` at quartiles, 2.698 standard deviations of a
    normal) generalised to level ``q``. Values outside are clipped by the
    estimator, never trusted. A column whose pair is one value (constant, or
    mostly one value at small budget) gets a range of width 0: it is then
    constant for the model.

    References
    ----------
    McSherry & Talwar (2007). Mechanism design via differential privacy. FOCS.
    Smith (2011). Privacy-preserving statistical estimation with optimal
    convergence rates. STOC (the exponential mechanism for quantiles).
    Gillenwater, Joseph & Kulesza (2021). Differentially private quantiles.
    ICML (JointExp: several quantiles from one draw).
    Tukey (1977). Exploratory data analysis (fences).
    Rogers, Roth, Ullman & Vadhan (2016). Privacy odometers and filters:
    pay-as-you-go composition. NeurIPS.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import private_bounds
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.normal(50, 10, 5000), rng.integers(0, 2, 5000)])
    >>> res = private_bounds(X, epsilon=1.0, public_bounds={1: (0, 1)},
    ...                      random_state=0)
    >>> res.estimated.tolist(), res.epsilon, res.epsilon_per_column.tolist()
    ([True, False], 1.0, [1.0, 0.0])
    >>> bool(10 < res.lower[0] < 30 and 70 < res.upper[0] < 90)
    True
    """
    if small_budget not in ("raise", "warn", "ignore"):
        raise ValueError(
            f"small_budget must be 'raise', 'warn' or 'ignore', got {small_budget!r}."
        )
    names = feature_names
    if names is None and hasattr(X, "columns"):
        names = [str(c) for c in X.columns]
    known = schema_bounds(X, public_categories)
    X = float_columns(X, names)
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite (no NaN or infinity) for private bounds.")
    n, d = X.shape
    known.update(public_ranges(public_bounds, d, names))
    inside = public_ranges(envelope, d, names, name="envelope")
    estimated = np.array([j not in known for j in range(d)])
    m = int(estimated.sum())
    if m and not (isinstance(epsilon, numbers.Real) and epsilon > 0):
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
    if m and n < 1:
        raise ValueError("private bounds need at least one row.")
    lower = np.empty(d)
    upper = np.empty(d)
    for j, (lo, hi) in known.items():
        lower[j], upper[j] = lo, hi
    levels = np.full(d, np.nan)
    if m == 0:
        return PrivateBounds(
            lower, upper, estimated, 0.0, np.zeros(d), levels, levels.copy()
        )
    if label_column is not None and not (
        isinstance(label_column, numbers.Integral) and 0 <= label_column < d
    ):
        raise ValueError(
            f"label_column must be a column index in [0, {d}), got {label_column!r}."
        )
    in_envelope = np.isin(np.arange(d), list(inside))
    # the label's larger share guards against a label range that misses by
    # orders of magnitude; inside an envelope a miss keeps the envelope
    label_first = None if label_column in inside else label_column
    estimated = drop_hopeless_envelopes(
        estimated, in_envelope, label_column, label_first, n * float(epsilon)
    )
    for j in np.flatnonzero(~estimated & in_envelope):  # kept, at no cost
        lower[j], upper[j] = inside[j]
    m = int(estimated.sum())
    if m == 0:
        return PrivateBounds(
            lower, upper, estimated, 0.0, np.zeros(d), levels, levels.copy()
        )
    share = column_shares(estimated, label_first)
    eps_col = np.zeros(d)
    eps_col[estimated] = float(epsilon) * share[estimated]  # inf * 0 is nan
    # below the refusal threshold a range without an envelope is likely to
    # miss (reliability); inside an envelope a small budget keeps the envelope
    open_grid = estimated & ~in_envelope
    threshold = min_n_epsilon(n)
    low = open_grid & (n * eps_col < threshold)
    if np.any(low) and small_budget != "ignore":
        message = _small_budget_message(
            n, float(epsilon), eps_col, low, m, threshold, names, label_first
        )
        if small_budget == "raise":
            raise ValueError(message)
        warnings.warn(message, PrivateBoundsWarning, stacklevel=2)
    # all input is valid: record the whole epsilon (an upper bound on what
    # the draws below use, a function of the parameters and n only), checking
    # any cap, before the first draw
    spent = float(epsilon)
    record_spend(PrivacyBudget(spent, 0.0), source, mechanism=None)
    rng = noise_generator(random_state)
    fractions = np.full(d, np.nan)
    unused = 0.0  # recorded, but not used by a draw (envelopes kept after a test)
    open_columns = [j for j in np.flatnonzero(estimated) if j not in inside]
    if open_columns:
        lo, hi, q = open_grid_ranges(X[:, open_columns], eps_col[open_columns], rng)
        lower[open_columns], upper[open_columns], levels[open_columns] = lo, hi, q
    for j in np.flatnonzero(estimated):
        if j not in inside:
            continue
        lo, hi = lower[j], upper[j] = inside[j]
        x = np.clip(X[:, j], lo, hi)
        eps_pair = eps_col[j]
        if not math.isinf(eps_pair):  # first: is the envelope loose?
            eps_test = looseness_n_epsilon(n * eps_pair) / n
            fractions[j], loose = looseness_test(x, lo, hi, eps_test, rng)
            if not loose:  # keep it; the rest of the part stays unused
                unused += eps_pair - eps_test
                continue
            eps_pair -= eps_test
        lower[j], upper[j], levels[j] = envelope_range(x, eps_pair, lo, hi, rng)
    return PrivateBounds(
        lower,
        upper,
        estimated,
        spent,
        eps_col,
        levels,
        loose_fraction=fractions,
        epsilon_unused=unused,
    )
