"""Label-DP release of continuous labels: RR-on-bins, Laplace or Gaussian noise."""

import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_consistent_length, column_or_1d

from skdp.accounting import (
    BudgetTrackingMixin,
    EpsilonDeltaEvent,
    PrivacyBudget,
    record_spend,
)
from skdp.mechanisms import GaussianMechanism, LaplaceMechanism
from skdp.preprocessing._categorical import as_output_labels
from skdp.preprocessing._label_base import NoReleaseFitMixin, validate_features
from skdp.preprocessing._rr_on_bins import (
    RROnBins,
    cautious_counts,
    histogram_cells,
    kept_counts,
    noisy_label_counts,
    optimal_bins,
    pooled_counts,
    refine_prior,
)
from skdp.utils import (
    check_bounds,
    check_delta,
    check_epsilon,
    infer_bounds,
    noise_generator,
)
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.sklearn_compat import (
    RANDOM_STATE,
    Interval,
    StrOptions,
)

__all__ = ["RegressionLabelRelease", "auto_prior_share"]

# ``prior_share="auto"``: enough budget for a histogram of >= 8 useful cells
# (histogram_cells: n eps_p / 8 >= 8), within [5%, 50%] of epsilon.
_MIN_PRIOR_SHARE, _MAX_PRIOR_SHARE, _PRIOR_CELLS = 0.05, 0.5, 8


def auto_prior_share(n_samples, epsilon):
    """Share of epsilon spent on the label prior, from public n and epsilon.

    The histogram needs prior_epsilon >= 8 * 8 / n for 8 cells whose noise is
    at most a quarter of the counts (see ``histogram_cells``); the share is that,
    clipped to [0.05, 0.5]: at least 5% so that large data sets get a fine prior
    at a small cost, at most half so that the labels keep most of the budget.
    """
    if math.isinf(epsilon) or n_samples == 0:
        return _MIN_PRIOR_SHARE
    need = _PRIOR_CELLS * 8 / (n_samples * epsilon)
    return float(np.clip(need, _MIN_PRIOR_SHARE, _MAX_PRIOR_SHARE))


def report_moments(points, mass, channel, values):
    """Bias and variance of RR-on-bins reports, averaged over a prior.

    A label in bin j is reported as ``values[j]`` with probability p and as
    each other ``values[l]`` with probability q, so its report has mean
    (p - q) v_j + q sum_l v_l and second moment (p - q) v_j^2 + q sum_l v_l^2.

    Returns
    -------
    bias2 : float
        E[b(y)^2], b(y) = E[report | y] - y, under the prior.
    linear_bias2 : float
        Cov(b(y), y)^2 / Var(y): the part of the bias that is linear in the
        label (at most ``bias2``).
    variance : float
        E[Var(report | y)] under the prior.
    """
    keep, other = channel.p_keep, channel.p_other
    values = np.asarray(values, dtype=np.float64)
    first = (keep - other) * values + other * values.sum()
    second = (keep - other) * values**2 + other * (values**2).sum()
    bins = channel.bin_of(points)
    bias = first[bins] - points
    bias2 = float(mass @ bias**2)
    centred = points - mass @ points
    spread = float(mass @ centred**2)
    linear = float(mass @ (bias * centred)) ** 2 / spread if spread > 0 else 0.0
    variance = float(mass @ np.maximum(second - first**2, 0.0)[bins])
    return bias2, min(linear, bias2), variance


def debiased_values(points, mass, channel):
    """Report values whose mean, given a label, is its bin's mean under the prior.

    With mu_j the prior mean of bin j (its output if the bin has no mass),
    v = (mu - q sum_l mu_l) / (p - q) gives (p - q) v_j + q sum_l v_l = mu_j
    because p + (k - 1) q = 1. A fixed relabelling of the outputs: post-processing.
    """
    bins = channel.bin_of(points)
    k = channel.outputs.size
    weight = np.bincount(bins, weights=mass, minlength=k)
    total = np.bincount(bins, weights=mass * points, minlength=k)
    means = np.where(weight > 0, total / np.where(weight > 0, weight, 1.0), 0.0)
    means = np.where(weight > 0, means, channel.outputs)
    keep, other = channel.p_keep, channel.p_other
    return (means - other * means.sum()) / (keep - other), means


class RegressionLabelRelease(NoReleaseFitMixin, BudgetTrackingMixin, BaseEstimator):
    """Release continuous labels with label differential privacy.

    Sampler protocol: ``fit_resample(X, y)`` returns ``(X, y_released)``; the
    features are public and returned unchanged. Labels are first clipped to the
    declared ``label_bounds``. Mechanisms:

    - ``"rr_on_bins"`` (Ghazi et al., ICLR 2023): a share of epsilon releases a
      Laplace histogram of the labels over equal cells of the declared range
      (the prior); the range is then cut into the bins, each with one output,
      that minimize the expected squared error of a released label under that
      prior, and each label is reported by randomized response over the
      outputs (its own bin's output with probability e^eps / (e^eps + k - 1)).
      The reports can be relabelled (post-processing) so that their mean given
      a label is the prior mean of the label's bin (``debias``);
    - ``"laplace"``: the label plus Laplace noise of scale range / epsilon
      (unbiased);
    - ``"gaussian"``: the label plus Gaussian noise calibrated to
      (epsilon, delta) with sensitivity range (analytic calibration);
    - ``"auto"``: the prior is released as for ``"rr_on_bins"``; then the
      mechanism with the smaller predicted excess risk of a linear model fitted
      on the released labels is used, RR-on-bins or Laplace noise, each with the
      budget left (see Notes). When the histogram would have a single cell it
      carries no information: none is released and the choice, made from
      public quantities, gets all of epsilon (also for ``"rr_on_bins"``).

    Parameters
    ----------
    epsilon : float, default=1.0
        Label-DP guarantee of the release, in (0, inf]. ``inf`` releases the
        clipped labels unchanged.
    label_bounds : tuple (lower, upper) or None, default=None
        Declared label range. ``None`` takes the data's minimum and maximum and
        emits a :class:`~skdp.exceptions.PrivacyLeakWarning` (the range is then
        released without noise).
    mechanism : {"auto", "rr_on_bins", "laplace", "gaussian"}, default="auto"
    prior_share : "auto" or float in (0, 1), default="auto"
        Share of epsilon spent on the label histogram (``"rr_on_bins"`` and
        ``"auto"``). ``"auto"``: enough for a histogram of 8 useful cells,
        clipped to [0.05, 0.5] (:func:`auto_prior_share`).
    debias : "auto" or bool, default="auto"
        How RR-on-bins reports are labelled. ``False``: the paper's bin outputs,
        which minimize the expected squared error of one report but are shrunk
        toward the prior mean (a bias that averaging over many rows does not
        remove). ``True``: values whose mean given a label is the prior mean of
        its bin (unbiased up to the spread within a bin, more variance).
        ``"auto"``: the one with the smaller predicted excess risk (see Notes).
    delta : float, default=0.0
        For ``mechanism="gaussian"`` only, in (0, 1).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of the noise (one generator per call). Two independent streams
        are derived from it, one for the prior and one for the labels; the
        labels' stream does not depend on the mechanism. Releases with one
        ``random_state`` share their labels' randomness only under the
        reproducible-noise opt-in (:func:`skdp.set_config`), and then two of them
        at two scales cancel their noise; by default every release draws its own.

    Attributes
    ----------
    mechanism_ : str
        The mechanism used: ``"rr_on_bins"``, ``"laplace"`` or ``"gaussian"``
        (``"none"`` at epsilon = inf).
    label_bounds_ : tuple of float
    prior_epsilon_ : float
        Spent on the label histogram (0 if none was released, e.g. when it
        would have one cell: n * prior_share * epsilon < 16).
    label_epsilon_ : float
        Spent on the labels.
    prior_ : ndarray or None
        Released (normalized, clipped at 0) histogram of the labels over
        ``prior_edges_``.
    prior_edges_ : ndarray or None
    bin_edges_ : ndarray or None
        Edges of the RR-on-bins bins (first and last are the bounds).
    bin_outputs_ : ndarray or None
        Output of each bin (the paper's reports).
    report_values_ : ndarray or None
        The value released for each bin's output: ``bin_outputs_`` or their
        debiased relabelling.
    debiased_ : bool or None
        Whether ``report_values_`` are the debiased values.
    noise_scale_ : float or None
        Laplace scale or Gaussian sigma of the additive mechanisms.
    bin_means_ : ndarray or None
        Prior mean of each bin.
    predicted_risk_ : dict or None
        The rule's predicted excess risk of each candidate (``"rr_on_bins"``,
        ``"rr_on_bins_debiased"``, ``"laplace"``), when a prior was released.
    privacy_spent_ : PrivacyBudget
        ``(epsilon, delta)`` of the whole release (prior included).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    **Neighbours and clipping.** Label DP with replace-one neighbours: two data
    sets differ in the label of one row, features are public. Every label is
    clipped to [lo, hi] first, so a label's change moves a clipped label by at
    most R = hi - lo.

    **Laplace / Gaussian.** Each released label is y_i + noise with L1 (and
    L2) sensitivity R, so Laplace noise of scale R / eps gives eps-DP for each
    label; the labels are noised independently and one row's label enters one
    release only, so the whole vector is eps-label-DP (parallel composition
    over rows). The Gaussian variant uses the analytic calibration of sigma for
    (eps, delta) with sensitivity R. Both are unbiased: E[y~ | y] = y (clipped).

    **Prior histogram.** The counts of the clipped labels over m equal cells
    change by at most 1 in two cells when one label changes: L1 sensitivity 2,
    Laplace noise of scale 2 / eps_p (``LaplaceMechanism``, lattice-safe) gives
    eps_p-DP. Negative counts are set to 0 and the result normalized
    (post-processing). The number of cells, ``histogram_cells``, keeps the
    expected total noise below a quarter of n: m = clip(floor(n eps_p / 8), 1,
    256) (public n and eps_p only). Within a cell the prior is uniform on a
    256-point grid, on which the bins are optimized.

    **RR-on-bins.** Given the released prior, the bins and outputs are fixed
    (post-processing). A label y in bin b(y) is reported as o_{b(y)} with
    probability p = e^eps_l / (e^eps_l + k - 1) and as each other output with
    q = 1 / (e^eps_l + k - 1); for any report and any two labels the ratio of
    probabilities is at most p / q = e^eps_l, so each label is eps_l-DP, and the
    vector is eps_l-label-DP as above. The whole release is eps_p + eps_l = eps
    by sequential composition (the histogram and the labels use the same rows).
    Debiasing: E[report | y] = (p - q) o_{b(y)} + q sum_l o_l, so
    (report - q sum_l o_l) / (p - q) has mean o_{b(y)}; it is a fixed affine map
    (post-processing). Outputs and bins minimize the expected squared error of
    a report (see :func:`~skdp.preprocessing._rr_on_bins.optimal_bins`).

    **Debiasing.** With p, q as above, a label in bin j has mean report
    (p - q) o_j + q sum_l o_l: the paper's outputs are shrunk toward the prior
    mean, a bias a least-squares fit does not average out. Relabelling output l
    as v_l = (mu_l - q sum mu) / (p - q), mu the prior means of the bins, gives
    mean report mu_{b(y)} (``debiased_values``); a fixed map of the reports
    given the released prior, hence post-processing.

    **The automatic choices.** A report with conditional mean y + b(y) and
    conditional variance V, fitted by least squares with d features on n rows,
    costs about V (d + 1) / n of excess risk for the variance, plus the part of
    the bias the fit reproduces. A linear fit reproduces the part of b that is
    linear in y, L = Cov(b, y)^2 / Var(y) (with a linear signal the label is
    the route from x to b); the rest of b varies within the bins like noise and
    averages out like V. So the rule predicts L + (V + E[b^2] - L) (d + 1) / n
    for RR-on-bins with the paper's outputs (whose bias, a shrinkage toward the
    mean, is almost all linear) and debiased (whose bias is the spread within
    a bin), and 2 (R / eps_l)^2 (d + 1) / n for Laplace noise
    (``mechanism="auto"``), from public n, d = ``n_features_in_``, eps and R
    and the released histogram; the smallest wins. L counts the whole linear
    bias as kept: it is exact when x explains the label, and overstates the
    bins' risk by the factor R^2 of the clean fit otherwise (a quantity of the
    private labels that the rule does not spend budget on).

    **Three readings of one histogram** (all post-processing of the noisy
    counts, ``_rr_on_bins``): *kept* (``prior_``), the counts above the
    threshold; *cautious*, with the mass the threshold dropped (n minus the
    kept counts) put back on the dropped cells in proportion to their noisy
    counts clipped at 0; *pooled*, with that mass put back where the signed
    noisy counts of the dropped cells, averaged over windows of about sqrt(m)
    cells, exceed one standard deviation of their noise
    (:func:`~skdp.preprocessing._rr_on_bins.pooled_counts`). The bins and
    their debiased values are fitted to the cautious prior: its outer bins
    then cover every tail that may be there (fitted to the kept prior, the
    outer bins of a spread-out label law missed its dropped tails and, under
    the labels' own law, had up to twice the predicted risk of the cautious
    fit on the benchmark's tasks). The risks are predicted under the pooled
    prior: the cautious one puts the noise of every empty cell (scale / 2 on
    average) into phantom tails, which on a declared range much wider than the
    labels' spread (a log income declared on [0, 9.9] with a spread of 0.7)
    sit far from the data and overstated the bins' risk several-fold; pooled
    windows of empty cells average out to about 0.

    **When the choice is public.** If the histogram would have one cell
    (n eps_p < 16), its normalized release is [1] whatever the labels: no
    histogram is released, the prior is uniform (a public quantity), the
    choice is a function of (n, d, eps, R) alone, and all of eps goes to the
    labels (``prior_epsilon_ = 0``). Otherwise no choice of Laplace noise can
    be made from public quantities without being wrong for some labels: if
    every label is lo or hi, two bins at the two ends report the label by
    binary randomized response, and the debiased reports are unbiased with
    variance p q R^2 / (p - q)^2 = R^2 e^eps / (e^eps - 1)^2 =
    (R / eps)^2 ((eps / 2) / sinh(eps / 2))^2 <= (R / eps)^2, at most half
    the Laplace variance 2 (R / eps)^2 at every (n, d, eps, R); with the
    prior's share s taken from eps it stays below when (1 - s)^-2 / 2 < 1,
    i.e. s < 1 - 1 / sqrt(2) = 29% (the automatic share is below that once
    n eps >= 64 / 0.29 = 221), and the rule sees such labels as soon as the
    histogram has two cells. Hence the prior is released whenever it has two
    cells or more, and its share is not refunded when Laplace noise is chosen
    (for shares above 29% the argument above does not exclude a public
    choice; none is made). (The converse, "bins for every
    label law", is public when 2 (R / eps_l)^2 (d + 1) / n exceeds R^2, the
    largest squared error of any report, but it saves nothing: the bins need
    the prior.)

    The rules were checked, not tuned, on eleven real regression tasks
    (``benchmarks/bench_label_learning.py``).

    References
    ----------
    Ghazi, Kamath, Kumar, Leeman, Manurangsi, Varadarajan and Zhang,
    "Regression with label differential privacy", ICLR 2023.

    Dwork, McSherry, Nissim and Smith, "Calibrating noise to sensitivity in
    private data analysis", TCC 2006.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import RegressionLabelRelease
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(5000, 3))
    >>> y = X @ [1.0, 2.0, -1.0] + rng.normal(scale=0.3, size=5000)
    >>> release = RegressionLabelRelease(
    ...     epsilon=1.0, label_bounds=(-2.0, 4.0), random_state=0
    ... )
    >>> X_out, y_private = release.fit_resample(X, y)
    >>> X_out is X, release.privacy_spent_.epsilon
    (True, 1.0)
    >>> sorted(release.predicted_risk_)  # the candidates the rule compared
    ['laplace', 'rr_on_bins', 'rr_on_bins_debiased']
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(numbers.Real, 0, np.inf, closed="right")],
        "label_bounds": [None, tuple, list],
        "mechanism": [StrOptions({"auto", "rr_on_bins", "laplace", "gaussian"})],
        "prior_share": [
            StrOptions({"auto"}),
            Interval(numbers.Real, 0, 1, closed="neither"),
        ],
        "debias": [StrOptions({"auto"}), "boolean"],
        "delta": [Interval(numbers.Real, 0, 1, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        label_bounds=None,
        mechanism="auto",
        prior_share="auto",
        debias="auto",
        delta=0.0,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.label_bounds = label_bounds
        self.mechanism = mechanism
        self.prior_share = prior_share
        self.debias = debias
        self.delta = delta
        self.random_state = random_state

    @atomic_fit
    def fit_resample(self, X, y):
        """Release the labels.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
            Public features: only their number is read (by ``"auto"``);
            returned unchanged (the same object).
        y : array-like of shape (n_samples,)
            Continuous labels.

        Returns
        -------
        X : the input X
        y_released : ndarray (or Series if ``y`` is one) of shape (n_samples,)
        """
        self._validate_params()
        epsilon = check_epsilon(self.epsilon)
        y_values = self._check_inputs(X, y)
        lo, hi = self.label_bounds_
        y_clipped = np.clip(y_values, lo, hi)
        n = y_clipped.size
        delta = self._check_delta()
        self._reset_attributes()
        self.privacy_spent_ = PrivacyBudget(epsilon, delta)
        if math.isinf(epsilon) or hi == lo:
            # nothing to hide: a single possible label, or no privacy asked
            self.mechanism_ = "none"
            self.label_epsilon_ = epsilon
            record_spend(self.privacy_spent_, f"{type(self).__name__}.fit_resample")
            return X, as_output_labels(y, y_clipped)

        if self.mechanism in ("laplace", "gaussian"):
            self.label_epsilon_ = epsilon
            mechanism = self._additive(self.mechanism, epsilon, delta)
            # recorded (and a cap enforced) before anything is drawn
            record_spend(
                self.privacy_spent_,
                f"{type(self).__name__}.fit_resample",
                mechanism=mechanism,
            )
            self.mechanism_ = self.mechanism
            _, rng = self._streams()
            released = mechanism.randomize(y_clipped, random_state=rng)
            return X, as_output_labels(y, released)

        share = (
            auto_prior_share(n, epsilon)
            if self.prior_share == "auto"
            else float(self.prior_share)
        )
        cells = histogram_cells(n, share * epsilon)
        # one cell: the released histogram is [1] whatever the labels, so the
        # prior is public (uniform) and all of epsilon goes to the labels
        self.prior_epsilon_ = share * epsilon if cells > 1 else 0.0
        self.label_epsilon_ = epsilon - self.prior_epsilon_
        # the whole budget is recorded (and a cap enforced) before any draw
        events = [EpsilonDeltaEvent(self.label_epsilon_)]
        if self.prior_epsilon_ > 0:
            events.insert(0, EpsilonDeltaEvent(self.prior_epsilon_))
        record_spend(
            self.privacy_spent_,
            f"{type(self).__name__}.fit_resample",
            mechanism=events,
        )
        prior_rng, rng = self._streams()
        self.prior_edges_ = np.linspace(lo, hi, cells + 1)
        self.prior_, cautious, pooled = self._prior(y_clipped, cells, prior_rng)
        channel, points, mass = self._bins(cautious, self.label_epsilon_)
        risks = self._predicted_risks(channel, points, mass, pooled, n)
        self.predicted_risk_ = risks
        allowed = {
            "auto": ["rr_on_bins", "rr_on_bins_debiased", "laplace"],
            "rr_on_bins": ["rr_on_bins", "rr_on_bins_debiased"],
        }[self.mechanism]
        if self.debias is not True and self.debias != "auto":
            allowed.remove("rr_on_bins_debiased")
        if self.debias is True:
            allowed.remove("rr_on_bins")
        choice = min(allowed, key=risks.get)
        if choice == "laplace":
            self.mechanism_ = "laplace"
            mechanism = self._additive("laplace", self.label_epsilon_, 0.0)
            released = mechanism.randomize(y_clipped, random_state=rng)
            return X, as_output_labels(y, released)
        self.mechanism_ = "rr_on_bins"
        self.bin_edges_, self.bin_outputs_ = channel.edges, channel.outputs
        self.debiased_ = choice == "rr_on_bins_debiased"
        values, self.bin_means_ = debiased_values(points, mass, channel)
        self.report_values_ = values if self.debiased_ else channel.outputs
        released = self.report_values_[channel.randomize_index(y_clipped, rng)]
        return X, as_output_labels(y, released)

    # ---------------------------------------------------------------- helpers
    def _streams(self):
        """``(prior_rng, rng)``: the prior's and the labels' noise streams.

        Independent streams; by the seed policy two releases never share them
        (reproducible noise is an opt-in, and then two releases with one seed
        cancel: it warns). Made after the spend is recorded.
        """
        rng = noise_generator(self.random_state)
        # children of the policy's generator type, so that helpers use them as
        # they are (the same bits as default_rng(seed) under the opt-in)
        return tuple(
            type(rng)(np.random.PCG64(seed)) for seed in rng.integers(2**63, size=2)
        )

    def _check_inputs(self, X, y):
        X_checked = validate_features(self, X)  # counted, not read
        y_values = column_or_1d(y, warn=True)
        try:
            y_values = y_values.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"y must hold real numbers (continuous labels), got dtype "
                f"{y_values.dtype}."
            ) from exc
        if not np.all(np.isfinite(y_values)):
            raise ValueError("y contains NaN or infinity.")
        check_consistent_length(X_checked, y_values)
        if self.label_bounds is None:
            lower, upper = infer_bounds(y_values, name="label_bounds")
        else:
            lower, upper = check_bounds(self.label_bounds, 1, name="label_bounds")
        self.label_bounds_ = (float(lower[0]), float(upper[0]))
        return y_values

    def _check_delta(self):
        if self.mechanism == "gaussian":
            return check_delta(self.delta, allow_zero=False)
        if self.delta != 0:
            raise ValueError(
                f"delta={self.delta!r} is used by mechanism='gaussian' only; "
                f"mechanism={self.mechanism!r} is pure epsilon-DP (leave delta=0)."
            )
        return 0.0

    def _reset_attributes(self):
        for name in (
            "prior_",
            "prior_edges_",
            "bin_edges_",
            "bin_outputs_",
            "report_values_",
            "bin_means_",
            "debiased_",
            "noise_scale_",
            "predicted_risk_",
        ):
            setattr(self, name, None)
        self.prior_epsilon_ = 0.0

    def _additive(self, kind, epsilon, delta):
        lo, hi = self.label_bounds_
        if kind == "laplace":
            mechanism = LaplaceMechanism(epsilon, sensitivity=hi - lo)
            self.noise_scale_ = mechanism.scale
        else:
            mechanism = GaussianMechanism(epsilon, delta, sensitivity=hi - lo)
            self.noise_scale_ = mechanism.sigma
        return mechanism

    def _prior(self, y_clipped, cells, rng):
        """The released histogram, post-processed into three priors (kept,
        cautious, pooled; see Notes), each normalized; uniform when no cell
        is kept or when there is one cell (then nothing is released)."""
        uniform = np.full(cells, 1.0 / cells)
        if cells == 1:
            return uniform, uniform, uniform
        lo, hi = self.label_bounds_
        noisy, histogram = noisy_label_counts(
            y_clipped, (lo, hi), cells, self.prior_epsilon_, rng
        )
        kept = kept_counts(noisy, histogram.scale)
        if kept.sum() <= 0:
            return uniform, uniform, uniform
        n = y_clipped.size
        cautious = cautious_counts(noisy, kept, n)
        pooled = pooled_counts(noisy, kept, n, histogram.scale)
        return kept / kept.sum(), cautious / cautious.sum(), pooled / pooled.sum()

    def _bins(self, cell_prior, epsilon):
        """The RR-on-bins channel for a released prior (post-processing)."""
        lo, hi = self.label_bounds_
        unit_points, mass = refine_prior(cell_prior)
        cuts, unit_outputs, _ = optimal_bins(unit_points, mass, epsilon)
        spacing = 1.0 / unit_points.size
        unit_edges = np.append(unit_points[cuts[:-1]] - spacing / 2, 1.0)
        unit_edges[0] = 0.0
        points = lo + (hi - lo) * unit_points
        channel = RROnBins(
            lo + (hi - lo) * unit_edges, lo + (hi - lo) * unit_outputs, epsilon
        )
        return channel, points, mass

    def _predicted_risks(self, channel, points, mass, risk_prior, n):
        """The rule of the Notes: predicted excess risk of each candidate,
        averaged over ``risk_prior`` (the pooled estimate of the label law)."""
        lo, hi = self.label_bounds_
        factor = (self.n_features_in_ + 1) / max(n, 1)
        values, _ = debiased_values(points, mass, channel)
        _, risk_mass = refine_prior(risk_prior)
        risks = {}
        for name, reports in (
            ("rr_on_bins", channel.outputs),
            ("rr_on_bins_debiased", values),
        ):
            bias2, linear, variance = report_moments(
                points, risk_mass, channel, reports
            )
            # the linear part of the bias is what a linear fit keeps; the rest
            # varies within bins like noise and averages out like the variance
            risks[name] = linear + (variance + bias2 - linear) * factor
        laplace = LaplaceMechanism(self.label_epsilon_, sensitivity=hi - lo)
        risks["laplace"] = laplace.variance * factor
        return risks

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        # X is not read beyond its shape: any content is accepted
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags
