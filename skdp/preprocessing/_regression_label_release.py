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
from skdp.preprocessing._categorical import as_output_labels, is_dataframe
from skdp.preprocessing._rr_on_bins import (
    RROnBins,
    histogram_cells,
    optimal_bins,
    private_label_histogram,
    refine_prior,
)
from skdp.utils import (
    check_bounds,
    check_delta,
    check_epsilon,
    check_random_state,
    infer_bounds,
)
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.sklearn_compat import (
    RANDOM_STATE,
    Interval,
    StrOptions,
    fit_context,
    validate_data,
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


def bin_channel_moments(points, mass, channel):
    """Per-label bias and variance of RR-on-bins reports, averaged over a prior.

    Returns ``(bias2, variance, bias2_unbiased, variance_unbiased)``: the
    expected squared bias E[(E[report | y] - y)^2] and the expected variance
    E[Var(report | y)] of the raw reports, and the same for the debiased reports
    (report - c) / a, whose conditional mean is the label's bin output.
    """
    outputs, keep, other = channel.outputs, channel.p_keep, channel.p_other
    bins = channel.bin_of(points)
    first = keep * outputs + other * (outputs.sum() - outputs)
    second = keep * outputs**2 + other * ((outputs**2).sum() - outputs**2)
    mean, var = first[bins], (second - first**2)[bins]
    bias2 = float(mass @ (mean - points) ** 2)
    variance = float(mass @ var)
    scale = keep - other
    if outputs.size < 2 or scale <= 0:
        return bias2, variance, bias2, variance
    bias2_unbiased = float(mass @ (outputs[bins] - points) ** 2)
    return bias2, variance, bias2_unbiased, variance / scale**2


class RegressionLabelRelease(BudgetTrackingMixin, BaseEstimator):
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
      With ``debias=True`` (default) the reports are mapped affinely so that
      their mean given a label is the label's bin output (post-processing);
    - ``"laplace"``: the label plus Laplace noise of scale range / epsilon
      (unbiased);
    - ``"gaussian"``: the label plus Gaussian noise calibrated to
      (epsilon, delta) with sensitivity range (analytic calibration);
    - ``"auto"``: the prior is released as for ``"rr_on_bins"``; then the
      mechanism with the smaller predicted excess risk of a linear model fitted
      on the released labels is used, RR-on-bins or Laplace noise, each with the
      budget left (see Notes).

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
    debias : bool, default=True
        Report the RR-on-bins outputs debiased (unbiased for the bin output),
        for learners that average labels (least squares). ``False`` reports the
        paper's outputs, whose expected squared error per label is smaller.
    delta : float, default=0.0
        For ``mechanism="gaussian"`` only, in (0, 1).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of the noise (one generator per call).

    Attributes
    ----------
    mechanism_ : str
        The mechanism used: ``"rr_on_bins"``, ``"laplace"`` or ``"gaussian"``
        (``"none"`` at epsilon = inf).
    label_bounds_ : tuple of float
    prior_epsilon_ : float
        Spent on the label histogram (0 if none was released).
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
        The values the released labels take (``bin_outputs_`` debiased when
        ``debias``).
    noise_scale_ : float or None
        Laplace scale or Gaussian sigma of the additive mechanisms.
    predicted_risk_ : dict or None
        For ``"auto"``: the predicted excess risk of each candidate.
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

    **The automatic choice.** A least-squares fit with d features on n labels
    whose noise given the label has variance V and mean bias b(y) has an excess
    risk of about V (d + 1) / n plus the part of b explained by the features,
    at most E[b(y)^2]. From public quantities (n, d, eps, the range R) and the
    released prior, the rule predicts
    Laplace: 2 R^2 / eps_l^2 * (d + 1) / n, and RR-on-bins:
    E[b^2] + V (d + 1) / n (bias and variance of the reports the release would
    give, averaged over the prior), and uses the smaller. The bias bound is
    pessimistic for RR-on-bins, which gives Laplace the close calls; the
    rule was checked, not tuned, on eleven real regression tasks
    (``benchmarks/bench_label_learning.py``). The budget spent on the prior is
    not refunded when Laplace noise is chosen (the choice looks at the prior).

    References
    ----------
    B. Ghazi, P. Kamath, R. Kumar, E. Leeman, P. Manurangsi, A. Varadarajan,
    C. Zhang, "Regression with label differential privacy", ICLR 2023.
    C. Dwork, F. McSherry, K. Nissim, A. Smith, "Calibrating noise to
    sensitivity in private data analysis", TCC 2006.

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
    >>> X_out is X, release.privacy_spent_.epsilon, release.mechanism_
    (True, 1.0, 'laplace')
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(numbers.Real, 0, np.inf, closed="right")],
        "label_bounds": [None, tuple, list],
        "mechanism": [StrOptions({"auto", "rr_on_bins", "laplace", "gaussian"})],
        "prior_share": [
            StrOptions({"auto"}),
            Interval(numbers.Real, 0, 1, closed="neither"),
        ],
        "debias": ["boolean"],
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
        debias=True,
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

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Validate the data and the label range; nothing is released.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        self._check_inputs(X, y)
        self.privacy_spent_ = PrivacyBudget(0.0)
        return self

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

        rng = check_random_state(self.random_state)
        if self.mechanism in ("laplace", "gaussian"):
            self.label_epsilon_ = epsilon
            mechanism = self._additive(self.mechanism, epsilon, delta)
            record_spend(
                self.privacy_spent_,
                f"{type(self).__name__}.fit_resample",
                mechanism=mechanism,
            )
            self.mechanism_ = self.mechanism
            released = mechanism.randomize(y_clipped, random_state=rng)
            return X, as_output_labels(y, released)

        share = (
            auto_prior_share(n, epsilon)
            if self.prior_share == "auto"
            else float(self.prior_share)
        )
        self.prior_epsilon_ = share * epsilon
        self.label_epsilon_ = epsilon - self.prior_epsilon_
        # the whole budget is recorded (and a cap enforced) before any draw
        record_spend(
            self.privacy_spent_,
            f"{type(self).__name__}.fit_resample",
            mechanism=[
                EpsilonDeltaEvent(self.prior_epsilon_),
                EpsilonDeltaEvent(self.label_epsilon_),
            ],
        )
        cells = histogram_cells(n, self.prior_epsilon_)
        self.prior_, _ = private_label_histogram(
            y_clipped, (lo, hi), cells, self.prior_epsilon_, rng
        )
        self.prior_edges_ = np.linspace(lo, hi, cells + 1)
        channel, points, mass = self._bins(self.label_epsilon_)
        choice = "rr_on_bins"
        if self.mechanism == "auto":
            choice = self._choose(channel, points, mass, n)
        if choice == "laplace":
            self.mechanism_ = "laplace"
            mechanism = self._additive("laplace", self.label_epsilon_, 0.0)
            released = mechanism.randomize(y_clipped, random_state=rng)
            return X, as_output_labels(y, released)
        self.mechanism_ = "rr_on_bins"
        self.bin_edges_, self.bin_outputs_ = channel.edges, channel.outputs
        reports = channel.randomize(y_clipped, rng)
        self.report_values_ = self.bin_outputs_
        if self.debias and channel.outputs.size > 1:
            offset = channel.p_other * channel.outputs.sum()
            scale = channel.p_keep - channel.p_other
            reports = (reports - offset) / scale
            self.report_values_ = (self.bin_outputs_ - offset) / scale
        return X, as_output_labels(y, reports)

    # ---------------------------------------------------------------- helpers
    def _check_inputs(self, X, y):
        if is_dataframe(X):
            validate_data(self, X, skip_check_array=True)
            X_checked = X
        else:
            # the features are not read, only counted
            X_checked = validate_data(
                self, X, accept_sparse=True, dtype=None, ensure_all_finite=False
            )
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

    def _bins(self, epsilon):
        """The RR-on-bins channel for the released prior (post-processing)."""
        lo, hi = self.label_bounds_
        unit_points, mass = refine_prior(self.prior_)
        cuts, unit_outputs, _ = optimal_bins(unit_points, mass, epsilon)
        spacing = 1.0 / unit_points.size
        unit_edges = np.append(unit_points[cuts[:-1]] - spacing / 2, 1.0)
        unit_edges[0] = 0.0
        points = lo + (hi - lo) * unit_points
        channel = RROnBins(
            lo + (hi - lo) * unit_edges, lo + (hi - lo) * unit_outputs, epsilon
        )
        return channel, points, mass

    def _choose(self, channel, points, mass, n):
        """The rule of the Notes: the smaller predicted excess risk wins."""
        lo, hi = self.label_bounds_
        factor = (self.n_features_in_ + 1) / max(n, 1)
        raw_b2, raw_v, deb_b2, deb_v = bin_channel_moments(points, mass, channel)
        b2, v = (deb_b2, deb_v) if self.debias else (raw_b2, raw_v)
        laplace_v = LaplaceMechanism(self.label_epsilon_, sensitivity=hi - lo).variance
        self.predicted_risk_ = {
            "rr_on_bins": b2 + v * factor,
            "laplace": laplace_v * factor,
        }
        risks = self.predicted_risk_
        return "laplace" if risks["laplace"] <= risks["rr_on_bins"] else "rr_on_bins"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        # X is not read beyond its shape: any content is accepted
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags
