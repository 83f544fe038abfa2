"""FMLogisticRegression: logistic regression by the functional mechanism."""

import math
import numbers

from skdp._fm import newton
from skdp._fm.estimator import MulticlassFMClassifierMixin
from skdp._fm.multinomial import release_multinomial, solve_multinomial
from skdp._fm.solve import to_user_model
from skdp._fm.statistics import clip_to_domain
from skdp.linear_model._fm import (
    _COMMON_ATTRS_DOC,
    _COMMON_PARAMS_DOC,
    _RIDGE_DOC,
    _BaseFM,
)
from skdp.utils.sklearn_compat import (
    Interval,
    StrOptions,
    fit_context,
)

__all__ = ["FMLogisticRegression"]


class FMLogisticRegression(MulticlassFMClassifierMixin, _BaseFM):
    __doc__ = rf"""Logistic regression (binary or multinomial) with the FM.

    Minimizes the order-2 Taylor expansion of the logistic loss at 0,
    ``sum_i log 2 + (1/2 - y_i) x_i^T w + (x_i^T w)^2 / 8`` with ``y_i`` in
    {{0, 1}} (``A = X^T X / 8``, ``b = X^T (1/2 - y)``), after releasing its
    coefficients once with noise calibrated to the declared domain. With
    ``C > 2`` classes, the softmax loss expanded at 0, also in **one** release
    (see Notes).

    Parameters
    ----------{_COMMON_PARAMS_DOC.replace("<POSTPROCESSING>", _RIDGE_DOC)}
    classes : array-like of shape (n_classes,) or None, default=None
        The labels; with two, ``classes[1]`` is the positive class (y = 1). Declared
        classes make the fit independent of which labels occur (a fit on data
        where only one occurs still gives a model) and are needed by
        :meth:`statistics`. None takes them from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    refinement : {{None, "newton"}}, default=None
        None: the single Taylor release. ``"newton"`` (two classes, :meth:`fit`
        only): after the Taylor release, a **second** release of the exact
        logistic gradient and Hessian at its (now public) solution, then one
        Newton step from the noisy pair (see Notes). It passes the quadratic
        surrogate's ceiling at large epsilon and loses at small epsilon (see
        ``doc/user_guide/fm_utility.rst`` for the measurements), so it is not
        the default.
    refinement_budget_share : float in (0, 1), default=0.5
        The share of ``epsilon`` (and ``delta``) the Newton round gets; the
        Taylor round gets the rest. The total is what is spent and recorded.
        0.5 because both rounds release a ``p x p`` quadratic and a linear
        vector with sensitivities of the same order (the Newton one has twice
        the linear part) and the refined model's error grows with the errors
        of both ``w1`` and the step; 0.3 and 0.7 were no better on the real
        binary tasks (``benchmarks/bench_fm_newton.py``).

    Attributes
    ----------{_COMMON_ATTRS_DOC}
    taylor_coef_, taylor_intercept_ :
        With ``refinement="newton"``: the first round's (Taylor) model ``w1``.
    refinement_sensitivity_ : Sensitivity
        With ``refinement="newton"``: the second release's L1 and L2
        sensitivity (``sensitivity_`` and ``noise_std_`` are the first's).
    refinement_noise_std_ : float
        With ``refinement="newton"``: the noise standard deviation of the
        second release.
    classes_ : ndarray of shape (n_classes,)
        The labels; with two, ``classes_[1]`` is the positive class (y = 1).
    coef_, intercept_ :
        Shapes (n_features,) and float for two classes; (n_classes, n_features)
        and (n_classes,) for more (softmax logits, centred across classes).
    offset_X_ : ndarray of shape (n_features,) or None
        The midpoint of the declared ``bounds_X`` the fit was centred at
        (public; None if not shifted).
    scale_X_ : ndarray of shape (n_features,) or None
        Half-widths of a box declared alone, which the fit maps to ``[-1, 1]``
        (see :class:`FMLinearRegression`, Notes; None: not scaled).
    offset_y_ : float
        0 (labels are not shifted in classification).

    Notes
    -----
    **Guarantee.** As for :class:`FMLinearRegression` with quadratic weight
    :math:`\kappa = 1/8` and linear label term :math:`|\beta(y)| = |1/2 - y| = 1/2`
    (the Taylor loss :math:`\log 2 + \beta(y)\, x^\top w + \kappa\, (x^\top w)^2`):
    for :math:`\lVert x \rVert_2 \le R`, no intercept, :math:`c = 1`,

    .. math::

        \Delta_1 = \frac{{(d + 1) R^2}}{{8}} + \sqrt{{d}}\, R, \qquad
        \Delta_2 = \sqrt{{R^4 / 32 + R^2}}.

    Labels need no bounds (the two classes
    are encoded to {{0, 1}}), but the classes themselves must be declared for the
    guarantee: which labels occur is data (a dataset with one positive label and
    its neighbour with none differ in it), so inferring them warns.

    **Multiclass in one release.** For :math:`C > 2` classes the softmax loss
    :math:`\log \sum_c e^{{z_c}} - z_y` expanded at :math:`z = 0` has the public
    Hessian :math:`(I - \mathbf{{1}}\mathbf{{1}}^\top / C) / C` in the scores, so
    the only data-dependent quadratic statistic is the same :math:`X^\top X / 8` as
    for two classes, released once; the linear statistics are
    :math:`B = X^\top (1/C - Y)` for the first :math:`C - 1` classes (the last class
    is the reference, :math:`w_C = 0`, without loss). Their joint replace-one
    sensitivity does not grow with :math:`C`: the feature rows of :math:`c B` move
    by at most :math:`2c\,(2C - 3) M_1 / C` (L1) and
    :math:`2c\sqrt{{C^2 - C - 1}}\, M_2 / C` (L2), the intercept row by
    :math:`2 c s` (L1) and :math:`\sqrt{{2}}\, c s` (L2), so

    .. math::

        \Delta_1^{{B}} = \frac{{2c\,(2C - 3)}}{{C}} M_1 + 2 c s, \qquad
        \Delta_2^{{B}} = \sqrt{{\left(\frac{{2c\sqrt{{C^2 - C - 1}}}}{{C}}
        M_2\right)^2 + 2 c^2 s^2}},

    with :math:`M_1`, :math:`M_2` the largest L1 / L2 row norms of the domain;
    tight on a symmetric domain.
    One-vs-rest would split the budget :math:`C` ways. Derivation and the solve
    :math:`W = -C\, G^{{-1}} B\, (I + \mathbf{{1}}\mathbf{{1}}^\top)` in
    :mod:`skdp._fm.multinomial`; at ``epsilon=inf`` its predictions equal
    one-vs-rest of the binary Taylor fits.

    **Centring.** A declared box is centred at its midpoint when
    ``fit_intercept`` (with ``data_norm``/``max_nonzero`` also declared: only
    if that has the smaller data-free release cost) (free: public and
    data-independent; the same model at ``epsilon=inf``, ``coef_`` and
    ``intercept_`` in the user's units), which shrinks the sensitivity whenever
    a range excludes 0.

    **Approximation.** The Taylor objective is a quadratic: at ``epsilon=inf``
    the model is its exact minimizer, not the logistic MLE; it behaves like a
    scaled least-squares fit of :math:`y - 1/2`.

    **Newton refinement** (``refinement="newton"``). Round 1 is the Taylor
    release above at :math:`(1 - s_N)\,\varepsilon` (and :math:`\delta`;
    :math:`s_N` = ``refinement_budget_share``); its solution :math:`w_1` is public.
    Round 2 releases, at :math:`s_N \varepsilon`, the exact logistic statistics
    at :math:`w_1` on the same clipped (centred) rows :math:`x` (intercept column
    :math:`s` appended), with :math:`p_i = \sigma(x_i^\top w_1)`:

    .. math::

        A = \tfrac{{1}}{{2}} H = \sum_i a_i x_i x_i^\top, \quad
        a_i = \tfrac{{1}}{{2}} p_i (1 - p_i) \in [0, \tfrac{{1}}{{8}}],

        b = g = \sum_i r_i x_i, \quad r_i = p_i - y_i \in (-1, 1);

    the model is :math:`w_2 = w_1 + h`, :math:`h` the post-processed (PSD projection and
    ridge, as round 1) minimizer of :math:`h^\top A h + b^\top h`, i.e. :math:`-H^{{-1}}
    g` without noise. Sensitivity (replace-one; :math:`w_1` is fixed by round 1, so
    :math:`a_i, r_i` depend on record :math:`i` only, and the bound holds for every
    :math:`w_1`): :math:`A` moves by :math:`a\, x x^\top - a' x' x'^\top`. The weights
    are not a fixed :math:`\kappa`, but :math:`a, a' \ge 0` keeps the Taylor norm bounds
    with :math:`\kappa = 1/8` (with :math:`u(x)` one record's quadratic coefficients,
    the upper triangle of :math:`x x^\top`: :math:`\lVert a u - a' u' \rVert_1 \le (a +
    a') \max \lVert u \rVert_1`; :math:`\langle u(x), u(x') \rangle \ge 0` gives
    :math:`\lVert a u - a' u' \rVert_2^2 \le a^2 \lVert u \rVert^2 + a'^2 \lVert u'
    \rVert^2`), while every entry's range now contains 0; the intercept's diagonal
    :math:`s^2 \sum_i a_i` moves by up to :math:`s^2 / 8`, so it is noised too.
    :math:`b` moves by :math:`r x - r' x'`: twice the Taylor linear part (:math:`|r| \le
    1` against :math:`|1/2 - y| = 1/2`). For :math:`\lVert x \rVert \le R`, no
    intercept, :math:`c = 1`, :math:`d \ge 2`: :math:`\Delta_1 = (d + 1) R^2 / 8 + 2
    \sqrt{{d}}\, R` and :math:`\Delta_2 = \sqrt{{R^4 / 32 + 4 R^2}}`; the general case
    is :func:`~skdp._fm.newton.newton_sensitivity`. The two releases compose (basic
    composition) to ``(epsilon, delta)``, recorded as one spend of the total **before**
    the first release (a refused budget releases nothing; for the PLD accountant,
    Gaussian releases compose into one Gaussian mechanism that is ``(epsilon,
    delta)``-DP). Two classes only, and only :meth:`fit` (the second round needs the
    rows; the other entry points raise a ValueError before spending). At ``epsilon=inf``
    it is exactly one Newton step of the logistic loss from the Taylor minimizer.

    References
    ----------
    Zhang, Zhang, Xiao, Yang & Winslett (2012). Functional mechanism: regression
    analysis under differential privacy. VLDB.

    Examples
    --------
    >>> from skdp.linear_model import FMLogisticRegression
    >>> from skdp.datasets import make_private_classification
    >>> X, y, _ = make_private_classification(5000, 4, random_state=0)
    >>> clf = FMLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
    ...                            random_state=0)
    >>> clf.fit(X, y).predict_proba(X[:2]).shape
    (2, 2)

    Three classes, one release:

    >>> import numpy as np
    >>> from sklearn.datasets import load_digits
    >>> X, y = load_digits(n_class=3, return_X_y=True)
    >>> clf = FMLogisticRegression(epsilon=2.0, mechanism="gaussian", delta=1e-6,
    ...                            bounds_X=(0, 16), classes=[0, 1, 2],
    ...                            random_state=0).fit(X, y)
    >>> clf.coef_.shape, clf.privacy_spent_
    ((3, 64), PrivacyBudget(epsilon=2.0, delta=1e-06))
    >>> bool(clf.score(X, y) > 0.8)
    True

    A second release and one Newton step (the budget is split, the total
    spent):

    >>> X, y, _ = make_private_classification(5000, 4, random_state=0)
    >>> clf = FMLogisticRegression(epsilon=5.0, data_norm=1.0, classes=[0, 1],
    ...                            refinement="newton", random_state=0).fit(X, y)
    >>> clf.privacy_spent_
    PrivacyBudget(epsilon=5.0, delta=0.0)
    """

    _parameter_constraints = {
        **_BaseFM._parameter_constraints,
        "classes": ["array-like", None],
        "refinement": [StrOptions({"newton"}), None],
        "refinement_budget_share": [Interval(numbers.Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=0.0,
        mechanism="laplace",
        bounds_X=None,
        data_norm=None,
        max_nonzero=None,
        fit_intercept=True,
        linear_weight="auto",
        postprocessing="ridge",
        classes=None,
        refinement=None,
        refinement_budget_share=0.5,
        public_bounds=None,
        bounds_budget_share=0.2,
        tighten_bounds=False,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.bounds_X = bounds_X
        self.data_norm = data_norm
        self.max_nonzero = max_nonzero
        self.fit_intercept = fit_intercept
        self.linear_weight = linear_weight
        self.postprocessing = postprocessing
        self.classes = classes
        self.refinement = refinement
        self.refinement_budget_share = refinement_budget_share
        self.public_bounds = public_bounds
        self.bounds_budget_share = bounds_budget_share
        self.tighten_bounds = tighten_bounds
        self.random_state = random_state

    def _check_refinement(self, data):
        for attr in (
            "taylor_coef_",
            "taylor_intercept_",
            "refinement_sensitivity_",
            "refinement_noise_std_",
        ):
            self.__dict__.pop(attr, None)
        if self.refinement is None:
            return
        if self._objective == "multinomial_taylor":
            raise ValueError(
                "refinement='newton' supports two classes only; got "
                f"{len(self.classes_)} classes. Use refinement=None."
            )
        if data is None:
            raise ValueError(
                "refinement='newton' releases a second time from the rows, so it "
                "needs fit(X, y) with the rows in memory; fit_statistics, "
                "fit_chunks, partial_fit and dask input support refinement=None "
                "only."
            )

    def _round_budgets(self):
        """``(epsilon, delta)`` of the Taylor round and of the Newton round."""
        share = float(self.refinement_budget_share)
        delta = self.delta
        epsilon = self._release_epsilon  # what private bounds leave, if any
        if math.isinf(epsilon):  # no noise; the mechanisms still take delta
            return (epsilon, delta), (epsilon, delta)
        first = (epsilon * (1.0 - share), delta * (1.0 - share))
        return first, (epsilon * share, delta * share)

    def _noisy_solution(self, stats, domain, rng, data=None):
        if self._objective == "multinomial_taylor":
            return self._multinomial_solution(stats, domain, rng)
        if self.refinement is None:
            return super()._noisy_solution(stats, domain, rng)
        (eps1, delta1), (eps2, delta2) = self._round_budgets()
        noisy, coef, intercept = super()._noisy_solution(
            stats, domain, rng, epsilon=eps1, delta=delta1
        )
        self.taylor_coef_, self.taylor_intercept_ = coef, intercept
        # round 2: the exact logistic gradient and Hessian at the (public) w1
        X, y = clip_to_domain(*data, "logistic_taylor", domain)
        w1 = newton.to_domain_coordinates(coef, intercept, domain)
        A, b = newton.newton_statistics(X, y, w1, domain)
        second = newton.newton_release(
            A,
            b,
            domain,
            epsilon=eps2,
            delta=delta2,
            mechanism=self.mechanism,
            linear_weight=self.linear_weight,
            random_state=rng,
        )
        w2 = newton.newton_step(
            second, w1, domain, n=stats.n, method=self.postprocessing
        )
        self.refinement_sensitivity_ = second.sensitivity
        self.refinement_noise_std_ = second.noise_std
        coef, intercept = to_user_model(w2, domain)
        return noisy, coef, intercept

    def _multinomial_solution(self, stats, domain, rng):
        C = len(self.classes_)
        noisy = release_multinomial(
            stats.A,
            stats.b.reshape(domain.n_coef, C - 1),
            domain,
            C,
            epsilon=self._release_epsilon,
            delta=self.delta,
            mechanism=self.mechanism,
            linear_weight=self.linear_weight,
            random_state=rng,
        )
        coef, intercept = solve_multinomial(
            noisy.A,
            noisy.b,
            domain,
            C,
            noise_std=noisy.noise_std,
            noise_std_b=noisy.noise_std_b,
            n=stats.n,
            method=self.postprocessing,
        )
        return noisy, coef, intercept

    @fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None):
        """Add a chunk to the running statistics and release a new noisy model.

        Parameters
        ----------
        X, y : array-like
        classes : array-like of shape (n_classes,) or None
            The two labels; needed on the first call if the first chunk does not
            contain both.

        Every call is a release of the running sums and spends ``epsilon`` (and
        ``delta``) again; ``privacy_spent_`` is the sequential composition. The
        exact running sums never go into a pickle or copy of the model, which
        therefore cannot continue the stream (``fit`` starts a new one).

        Returns
        -------
        self
        """
        return self._partial_fit(X, y, classes=classes)
