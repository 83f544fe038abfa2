"""RRInfluenceEstimator: the test-loss cost of randomized response, without retraining.

The estimator fits the model and answers queries; the work is done in the modules
it drives: ``_fitting`` (metadata routing, labels, polish and Hessian),
``_attributes`` (attribute specs and queries), ``_perturbation`` (the fitted model
as a function of its rows), ``_test_group_loss``, ``_rr_expectation`` (first
order), ``_second_order``, ``_retraining`` (``validate``) and ``_delegation``
(predict, routing, tags).
"""

import numbers
import time

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin
from sklearn.utils.validation import check_is_fitted

from skdp.inspection._attributes import (
    LABEL,
    drop_single_axes,
    parse_attribute,
    parse_groups,
    parse_perturb,
)
from skdp.inspection._delegation import FittedEstimatorDelegationMixin
from skdp.inspection._fitting import (
    MAX_DENSE_PARAMS,
    encode_labels,
    final_step,
    fit_estimator,
    make_solver,
    polish_and_factor,
    route_params,
)
from skdp.inspection._loss_adapters import (
    check_supported_estimator,
    make_loss_adapter,
)
from skdp.inspection._objective import (
    LinearObjective,
    add_intercept_column,
)
from skdp.inspection._perturbation import SPARSE_FORMATS, PerturbationModel, densify
from skdp.inspection._progress import Progress
from skdp.inspection._retraining import check_retraining, retraining_changes
from skdp.inspection._rr_expectation import expectation_mode, first_order_change
from skdp.inspection._second_order import second_order_change
from skdp.inspection._test_group_loss import TestGroupLoss, array_digest
from skdp.utils import check_random_state
from skdp.utils.sklearn_compat import (
    RANDOM_STATE,
    HasMethods,
    Interval,
    StrOptions,
    fit_context,
    validate_data,
)

__all__ = ["RRInfluenceEstimator", "LABEL"]


class RRInfluenceEstimator(
    FittedEstimatorDelegationMixin, MetaEstimatorMixin, BaseEstimator
):
    r"""Predict the test-loss change caused by randomized response, without retraining.

    An analysis tool, not a private release: it reads the true training data, and
    nothing it outputs (estimates, fitted model, :meth:`validate` results) is
    differentially private. Use it, before collecting or releasing data, to choose
    which attributes of which group to put through randomized response (RR) and
    with which epsilon; then privatize with
    :class:`~skdp.preprocessing.RandomizedResponse` or
    :class:`~skdp.mechanisms.RandomizedResponseMechanism`.

    Fits ``estimator`` once, factorizes the Hessian of the objective it minimizes,
    and then estimates, for any training group ``G``, set of perturbed categorical
    attributes (features and/or the label, each with its own epsilon) and test
    group, the expected change of the test group's mean loss if the group's
    attributes were released through k-ary randomized response and the model
    retrained (Carey, Van & Wu 2023, built on Koh & Liang 2017).

    Parameters
    ----------
    estimator : estimator or Pipeline
        ``LogisticRegression`` (L2 or no penalty; binary or multinomial), ``Ridge``
        or ``LinearRegression`` (single target), or a ``Pipeline`` ending in one of
        them (others via :func:`register_loss_adapter`). A Pipeline's preceding
        steps are fitted once and then treated as a fixed feature map: perturbed
        raw rows are transformed by them, and :meth:`validate` refits only the
        last step.
    attributes : dict or None
        Perturbable categorical attributes of the *raw* input ``X`` (the input of
        the Pipeline if there is one): ``{name: spec}`` where ``spec`` is

        - an int (or a column name for DataFrames): a single column holding
          category values (integer codes, strings, ...; categories are the values
          seen in training);
        - a list of ints: a one-hot block (category j sets column j to 1; an
          all-zero row is an extra reference category);
        - a dict ``{"column": c, "categories": [...]}`` or ``{"columns": [...]}``
          to list the categories explicitly.

        The name ``"label"`` is reserved for the target. The epsilons are given per
        query (see :meth:`influence`) so one fit serves a whole grid.
    method : {"explicit", "cg", "lissa"}, default="explicit"
        Inverse-Hessian-vector product solver of the first-order estimate:
        Cholesky, conjugate gradient, or LiSSA (Agarwal, Bullins & Hazan 2017).
    correction : {None, "forward"}, default=None
        ``"forward"``: the model is assumed retrained with forward loss correction
        (Patrini et al. 2017) applied to the perturbed group only (label RR).
    damping : float, default=0.0
        Added to the Hessian's diagonal (needed for singular objectives, e.g.
        ``LinearRegression`` with collinear columns).
    expectation : {"auto", "exact", "monte_carlo", "scaling"}, default="auto"
        How the expectation over RR outcomes is taken: ``"exact"`` enumerates all
        joint outcomes of the perturbed attributes, ``"monte_carlo"`` samples them
        (stratified by which attributes change), ``"scaling"`` is the
        approximation of Carey, Van & Wu (see Notes); ``"auto"`` is exact up to
        ``max_outcomes``.
    max_outcomes : int, default=1024
        Largest number of joint outcomes per row enumerated by ``"auto"``.
    n_mc_samples : int, default=64
        Samples per change pattern for ``"monte_carlo"``.
    order : {"auto", 1, 2}, default="auto"
        2: the Newton-corrected second-order estimate (see Notes), one small
        p x p solve per group and epsilon on the dense Hessian. 1: the first-order
        influence of Carey, Van & Wu (one factorization for every group and
        epsilon). ``"auto"`` is 2 wherever it applies (the dense Hessian is formed,
        i.e. K*D <= 4000 parameters, and ``correction`` is None) and 1 otherwise;
        ``order_`` records the choice. See Notes for when each is right.
    polish : bool, default=True
        Refine the fitted parameters to the exact minimizer (the estimator's
        stopping tolerance would otherwise leave a non-zero gradient) before
        computing the Hessian; ``estimator_`` itself is left untouched.
    cg_rtol : float, default=1e-10
        Relative residual at which conjugate gradient stops.
    lissa_depth : int, default=2000
        Recursion depth of LiSSA.
    lissa_scale : float or None, default=None
        LiSSA's scale (above the largest Hessian eigenvalue); estimated if None.
    lissa_batch_size : int or None, default=None
        Rows per LiSSA Hessian-vector product (None: all rows).
    lissa_repeats : int, default=1
        Independent LiSSA runs averaged.
    random_state : None, int, RandomState or Generator
        Used by LiSSA minibatches and Monte Carlo expectations.
    verbose : int, default=0
        Progress of :meth:`validate` (one step per refit) on stderr: a tqdm bar if
        tqdm is installed, else a line at every tenth of the work. 0 is silent.

    Attributes
    ----------
    estimator_ : estimator
        The fitted ``estimator``.
    order_ : int
        The order used by :meth:`influence` (``order`` with ``"auto"`` resolved).
    theta_ : ndarray of shape (K, D)
        Parameters (intercept last) at which the Hessian was taken.
    hessian_ : ndarray of shape (K*D, K*D) or None
        Hessian of the objective (with damping), if K*D <= 4000.
    attributes_ : dict
        Parsed attributes: columns, categories and training codes.
    label_categories_ : ndarray
        Values the label takes under label RR.
    classes_ : ndarray
        Class labels (classifiers only).
    fit_time_ : float
        Seconds spent fitting the model and preparing the solver.
    n_features_in_ : int
        Number of features of the raw input.
    feature_names_in_ : ndarray of str
        Column names of the raw input, when it had string column names.

    Notes
    -----
    .. warning::
       Nothing this estimator outputs is differentially private. It reads the true
       data (features, labels, group membership) and its estimates, its fitted
       model and the results of :meth:`validate` depend on every record. Run it
       where the raw data may be read (by the data curator, before the release);
       do not publish its outputs as if they were privatized.

    **Which order.** The first-order term is ``grad L_test . dtheta``. When the
    test data look like the training data, ``grad L_test`` is close to 0 at the
    fitted model, so this term is small and often of the wrong sign, while the real
    change is dominated by the quadratic term. On the bundled Adult data
    (``benchmarks/bench_influence.py``: label RR on sex x race and random groups,
    epsilon 0.1 to 10, against the mean over RR draws of retraining) the
    first-order estimates correlate with retraining at Pearson -0.19 on all 30,162
    training rows (-0.29 on groups up to half of a 6,000-row sample), the
    second-order ones at 0.986 (0.984). So use ``order=2`` (the default wherever
    it applies) to compare groups and epsilons. Use ``order=1`` for models too
    large for a dense Hessian (then with ``"cg"`` or ``"lissa"``), with
    ``correction="forward"``, or for a test group unlike the training data (a
    test *group* whose loss gradient is far from 0: there the first-order term
    dominates and is accurate, at one factorization for every group and
    epsilon). Both orders are small-perturbation expansions, accurate for small
    groups or large epsilon; for groups holding a large share of the data at
    small epsilon the real change saturates and the estimates overshoot (order 2
    by 5x on a group of 26 % of the rows at epsilon 0.1), so rank with them and
    measure the chosen configuration with :meth:`validate`, which retrains.

    **Objective.** With per-row weights c_i (``sample_weight`` times class weight)
    scikit-learn's ``LogisticRegression`` minimizes ``C sum c_i l_i + 0.5||W||^2``
    (intercept unpenalized except with ``liblinear``), ``Ridge`` minimizes
    ``sum c_i (y_i - z_i)^2 + alpha ||w||^2`` and ``LinearRegression`` the same
    with alpha = 0. Influence does not depend on a global scale of J, but it does
    depend on the loss/penalty ratio, which is why "mean loss + penalty" would be
    wrong by a factor n. The weights are those the estimator was fitted with (with
    metadata routing: the ``sample_weight`` routed to it).

    **Influence.** Replacing row :math:`z_i` by :math:`z'_i` moves the minimizer by

    .. math::

        \Delta\theta \approx -H^{-1} \left(c'_i \nabla \ell(z'_i)
        - c_i \nabla \ell(z_i)\right)

    to first order (Koh & Liang 2017, with our sum-form objective there is no
    :math:`1/n`), so the test group's mean loss changes by
    :math:`-s^\top \sum_i \Delta g_i` with :math:`s = H^{-1} \nabla L_{\text{test}}`.
    :math:`s` is solved once per test group; for a linear model
    ``s^T g(z) = r(z) . (S x1)`` is one dot product per row and outcome.

    **Expectation over RR.** RR on attribute :math:`f` (with :math:`d_f`
    categories) keeps its value with probability
    :math:`p_f = e^{\varepsilon_f} / (d_f - 1 + e^{\varepsilon_f})` and moves to
    each other value with :math:`q_f = 1 / (d_f - 1 + e^{\varepsilon_f})`. The
    expected first-order change is linear in the gradient differences, so it equals
    :math:`\sum_o P(o \mid a_i)\, \phi_i(o)` over the Cartesian product of the
    perturbed attributes' categories, with

    .. math::

        P(o \mid a_i) = \prod_f \begin{cases} p_f & o_f = a_{if} \\
        q_f & \text{otherwise} \end{cases}

    (``"exact"``).
    ``"monte_carlo"`` groups outcomes by the set m of changed attributes (there
    are prod_{f in m} (d_f - 1) of them, all with the same probability) and
    averages ``n_mc_samples`` uniform draws within each set: unbiased, with a
    standard error returned by ``return_std=True``. ``"scaling"`` reads equation
    (13) of Carey, Van & Wu: the probability that anything changes,
    ``1 - prod_f p_f``, spread *uniformly* over the N - 1 non-identity outcomes
    (N = prod_f d_f). For a single perturbed attribute this is exact; for several
    it gives outcomes that change many attributes too much weight and outcomes
    that change one attribute too little (the exact probability of changing only
    f is (1 - p_f) prod_{g != f} p_g).

    **Forward correction.** The perturbed group is trained on
    ``-log((T^T p(x))_y~)`` with T the label's RR matrix. Its rows' gradients
    change even when RR kept the label, so the identity outcome contributes; the
    estimate is again an exact expectation, now with an epsilon-dependent
    gradient.

    **Second order** (``order=2``). With :math:`\mu = \mathbb{E}[\sum_i \Delta
    g_i]`, the expected Hessian change :math:`dH = \mathbb{E}[\sum_i \Delta H_i]`,
    :math:`d\theta = -(H + dH)^{-1} \mu` and
    :math:`B = (H + dH)^{-1} H_{\text{test}} (H + dH)^{-1}`:

    .. math::

        \Delta L \approx \nabla L_{\text{test}}^\top d\theta
        + \tfrac{1}{2}\, d\theta^\top H_{\text{test}}\, d\theta
        + \tfrac{1}{2} \sum_i \operatorname{tr}\big(B \operatorname{Cov}(\Delta
        g_i)\big),

    the last term being the variance the RR draws add around the mean shift. Using
    :math:`H + dH` (one Newton step on the
    expected perturbed objective instead of the Hessian at the old solution)
    matters for feature RR on large groups, where the perturbed rows change the
    curvature itself. Everything depends on epsilon only through the probability
    of each change pattern, so per-pattern sums are accumulated once per group.

    References
    ----------
    A. N. Carey, M.-H. Van and X. Wu, "Evaluating the Impact of Local Differential
    Privacy on Utility Loss via Influence Functions", arXiv:2309.08678, 2023.

    P. W. Koh and P. Liang, "Understanding Black-box Predictions via Influence
    Functions", Proceedings of the 34th International Conference on Machine
    Learning (ICML), PMLR 70, pp. 1885-1894, 2017.

    G. Patrini, A. Rozza, A. K. Menon, R. Nock and L. Qu, "Making Deep Neural
    Networks Robust to Label Noise: a Loss Correction Approach", IEEE Conference on
    Computer Vision and Pattern Recognition (CVPR), pp. 1944-1952, 2017.

    N. Agarwal, B. Bullins and E. Hazan, "Second-Order Stochastic Optimization for
    Machine Learning in Linear Time", Journal of Machine Learning Research 18(116),
    pp. 1-40, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skdp.inspection import RRInfluenceEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.normal(size=200), rng.integers(0, 3, size=200)])
    >>> y = (X[:, 0] + rng.normal(size=200) > 0).astype(int)
    >>> est = RRInfluenceEstimator(LogisticRegression(), attributes={"group": 1})
    >>> est = est.fit(X, y)
    >>> est.order_
    2
    >>> eps = [0.5, 5.0, np.inf]
    >>> delta = est.influence(X, y, groups=X[:, 1] == 0, perturb={"label": eps})
    >>> delta.shape, float(delta[-1])
    ((3,), 0.0)
    >>> bool(delta[0] > delta[1] > 0)
    True
    >>> actual = est.validate(X, y, groups=[0, 1], perturb={"group": 1.0}, n_draws=5)
    >>> actual.shape
    (2,)
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit"])],
        "attributes": [dict, None],
        "method": [StrOptions({"explicit", "cg", "lissa"})],
        "correction": [StrOptions({"forward"}), None],
        "damping": [Interval(numbers.Real, 0, None, closed="left")],
        "expectation": [StrOptions({"auto", "exact", "monte_carlo", "scaling"})],
        "max_outcomes": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_mc_samples": [Interval(numbers.Integral, 2, None, closed="left")],
        "order": [
            Interval(numbers.Integral, 1, 2, closed="both"),
            StrOptions({"auto"}),
        ],
        "polish": ["boolean"],
        "cg_rtol": [Interval(numbers.Real, 0, 1, closed="neither")],
        "lissa_depth": [Interval(numbers.Integral, 1, None, closed="left")],
        "lissa_scale": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "lissa_batch_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "lissa_repeats": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        estimator,
        *,
        attributes=None,
        method="explicit",
        correction=None,
        damping=0.0,
        expectation="auto",
        max_outcomes=1024,
        n_mc_samples=64,
        order="auto",
        polish=True,
        cg_rtol=1e-10,
        lissa_depth=2000,
        lissa_scale=None,
        lissa_batch_size=None,
        lissa_repeats=1,
        random_state=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.attributes = attributes
        self.method = method
        self.correction = correction
        self.damping = damping
        self.expectation = expectation
        self.max_outcomes = max_outcomes
        self.n_mc_samples = n_mc_samples
        self.order = order
        self.polish = polish
        self.cg_rtol = cg_rtol
        self.lissa_depth = lissa_depth
        self.lissa_scale = lissa_scale
        self.lissa_batch_size = lissa_batch_size
        self.lissa_repeats = lissa_repeats
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ fitting
    @fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the estimator and prepare the inverse-Hessian solver.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Raw input (the Pipeline's input, if ``estimator`` is a Pipeline).
        y : array-like of shape (n_samples,)
            Target.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights of the estimator's objective. Without metadata routing
            they are passed to the estimator's (or the Pipeline's last step's)
            ``fit``; with routing enabled they go where the estimator requests
            them (``set_fit_request(sample_weight=True)``), and the influence
            objective uses the weights the last step received.
        **fit_params : dict
            Other metadata, routed to ``estimator.fit`` (only with
            ``sklearn.set_config(enable_metadata_routing=True)``).

        Returns
        -------
        self
        """
        start = time.perf_counter()
        check_supported_estimator(final_step(self.estimator))
        if self.order == 2 and self.correction == "forward":
            raise ValueError("order=2 is not implemented with correction='forward'.")
        estimator_params, sample_weight = route_params(
            self, "fit", sample_weight, fit_params
        )
        X_raw, Xm, y, feature_map, column_names = fit_estimator(
            self, X, y, estimator_params
        )
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != (Xm.shape[0],):
                raise ValueError("sample_weight must have shape (n_samples,).")
        final = final_step(self.estimator_)
        adapter = make_loss_adapter(final)
        self._classes = final.classes_ if adapter.is_classifier else None
        if adapter.is_classifier:
            self.classes_ = self._classes
        elif hasattr(self, "classes_"):
            del self.classes_
        y_enc = encode_labels(y, self._classes)
        label_categories = (
            np.arange(len(self.classes_)) if adapter.is_classifier else np.unique(y_enc)
        )
        self.label_categories_ = label_categories
        self.attributes_ = {
            name: parse_attribute(X_raw, name, spec, column_names)
            for name, spec in (self.attributes or {}).items()
        }
        if self.correction == "forward" and not adapter.is_classifier:
            raise ValueError("correction='forward' needs a classifier (label RR).")

        X1 = add_intercept_column(Xm, adapter.fit_intercept)
        c = adapter.row_weights(y_enc, sample_weight)
        objective = LinearObjective(X1, y_enc, c, adapter)
        self._objective, self._adapter = objective, adapter
        theta = adapter.theta().ravel()
        hessian, chol = None, None
        if objective.p <= MAX_DENSE_PARAMS:
            theta, hessian, chol = polish_and_factor(
                objective, theta, damping=self.damping, polish=self.polish
            )
        elif self.order == 2:
            raise ValueError(
                f"order=2 needs the dense Hessian (K*D <= {MAX_DENSE_PARAMS} "
                f"parameters, got {objective.p}); use order=1 with method='cg' or "
                "'lissa'."
            )
        self.hessian_ = hessian
        self.theta_ = theta.reshape(objective.K, objective.D)
        if self.order == "auto":
            self.order_ = 2 if hessian is not None and self.correction is None else 1
        else:
            self.order_ = int(self.order)
        self._solver = make_solver(objective, theta, hessian, self.get_params())
        self._state = PerturbationModel(
            objective,
            self.theta_,
            sample_weight,
            label_categories,
            self.attributes_,
            X_raw,
            feature_map,
            hessian,
            chol,
        )
        self._test_cache = {}
        self.fit_time_ = time.perf_counter() - start
        return self

    # ------------------------------------------------------------------ test data
    def _test_data(self, X_test, y_test):
        if self._state.feature_map is not None:
            Xm = self._state.preprocess(X_test)
        else:
            Xm = validate_data(
                self,
                X_test,
                reset=False,
                accept_sparse=SPARSE_FORMATS,
                dtype=np.float64,
            )
            Xm = densify(Xm)
        X1 = add_intercept_column(Xm, self._adapter.fit_intercept)
        y_enc = encode_labels(y_test, self._classes)
        if X1.shape[0] != len(y_enc) or len(y_enc) == 0:
            raise ValueError("X_test and y_test must be non-empty and of equal length.")
        return X1, y_enc

    def _test_direction(self, X_test, y_test):
        """The test group's loss terms (:class:`TestGroupLoss`), cached per test set."""
        X1, y_enc = self._test_data(X_test, y_test)
        key = array_digest(X1, y_enc)
        if key not in self._test_cache:
            self._test_cache[key] = TestGroupLoss(
                self._objective, self._adapter, self.theta_, self._solver, X1, y_enc
            )
        return self._test_cache[key]

    def _parse_query(self, groups, perturb):
        G, single_group = parse_groups(groups, self._objective.X1.shape[0])
        names, eps, scalar_eps = parse_perturb(perturb, self._state, self.correction)
        return G, single_group, names, eps, scalar_eps

    # ------------------------------------------------------------------ queries
    def influence(self, X_test, y_test, *, groups, perturb, return_std=False):
        """Estimated change of the mean test loss if ``groups`` were perturbed by RR.

        Parameters
        ----------
        X_test, y_test : array-like
            The test group G_te (raw input, as for ``fit``); the loss is the
            estimator's unweighted per-row loss (log-loss or squared error),
            averaged over G_te.
        groups : boolean mask, indices, list of them, or 2-D boolean array
            Training rows G perturbed together (one estimate per group).
        perturb : dict
            ``{attribute name or "label": epsilon}``; epsilons may be 1-D arrays
            (a grid, broadcast across attributes). Each attribute is released by
            k-ary RR over its categories with its own epsilon.
        return_std : bool, default=False
            Also return the Monte Carlo standard error of the first-order estimate
            (zeros when exact or with ``order_ == 2``).

        Returns
        -------
        delta : ndarray of shape (n_groups, n_epsilons)
            Axes given as a single group / scalar epsilons are dropped.
        std : ndarray, same shape, only with ``return_std=True``.
        """
        check_is_fitted(self)
        entry = self._test_direction(X_test, y_test)
        G, single_group, names, eps, scalar_eps = self._parse_query(groups, perturb)
        rng = check_random_state(self.random_state)
        state = self._state
        n_total = int(np.prod([state.n_categories(n) for n in names]))
        mode = expectation_mode(
            self.expectation,
            n_total,
            max_outcomes=self.max_outcomes,
            correction=self.correction,
        )
        opts = dict(mode=mode, n_mc_samples=self.n_mc_samples)
        if self.order_ == 2:
            mean = second_order_change(state, G, names, eps, entry, rng, **opts)
            var = None
        else:
            forward = self.correction == "forward"
            mean, var = first_order_change(
                state, G, names, eps, entry.s, rng, forward=forward, **opts
            )
        std = np.zeros_like(mean) if var is None else np.sqrt(var)
        mean, std = (
            drop_single_axes(mean, single_group, scalar_eps),
            drop_single_axes(std, single_group, scalar_eps),
        )
        return (mean, std) if return_std else mean

    def replacement_influence(
        self, X_test, y_test, *, indices, X_new, y_new, per_row=False
    ):
        """Estimated test-loss change if training rows ``indices`` became
        ``(X_new, y_new)`` (Koh & Liang's perturbation influence, deterministic).

        ``X_new`` is raw input (transformed by the Pipeline's preceding steps).
        With ``per_row=True`` returns each row's own estimate (the total is their
        sum), e.g. to rank the most influential rows. First order whatever
        ``order`` is.
        """
        check_is_fitted(self)
        s = self._test_direction(X_test, y_test).s
        rows = np.atleast_1d(np.asarray(indices, dtype=np.intp))
        X1, y = self._test_data(X_new, y_new)
        if len(y) != len(rows):
            raise ValueError("X_new must have one row per index.")
        state = self._state
        c = self._adapter.row_weights(y, state.weights(rows))
        g = c * np.sum(self._adapter.residual(X1 @ self.theta_.T, y) * (X1 @ s.T), 1)
        base = np.sum(state.base_residual[rows] * (self._objective.X1[rows] @ s.T), 1)
        return -(g - base) if per_row else float(-np.sum(g - base))

    def validate(
        self,
        X_test,
        y_test,
        *,
        groups,
        perturb,
        n_draws=20,
        refit="exact",
        random_state=None,
        return_std=False,
    ):
        """Measure the change by retraining on RR-perturbed data, over draws.

        Each draw releases the group's perturbed attributes through
        :class:`~skdp.mechanisms.RandomizedResponseMechanism`, retrains, and
        records the test-loss change; the mean over ``n_draws`` is what
        :meth:`influence` estimates. Progress is reported when ``verbose > 0``.

        Parameters
        ----------
        X_test, y_test, groups, perturb
            As in :meth:`influence`.
        n_draws : int, default=20
            RR draws (one retraining each) per group and epsilon.
        refit : {"exact", "estimator"}, default="exact"
            ``"exact"``: minimize the same objective to tight tolerance, warm
            started at ``theta_`` (also handles ``correction="forward"``);
            ``"estimator"``: refit a clone of the (last step) estimator, compared
            with a clone fitted on the unperturbed data.
        random_state : None, int or Generator
            Draws the RR outcomes.
        return_std : bool, default=False
            Also return the standard deviation over draws.

        Returns
        -------
        delta : ndarray (n_groups, n_epsilons), axes dropped as in ``influence``
        std : ndarray, only with ``return_std=True``
        """
        check_is_fitted(self)
        forward = self.correction == "forward"
        check_retraining(refit, n_draws, forward, self._state)
        entry = self._test_direction(X_test, y_test)
        G, single_group, names, eps, scalar_eps = self._parse_query(groups, perturb)
        rng = check_random_state(random_state)
        total = G.shape[0] * eps.shape[1] * n_draws
        with Progress(total, "RRInfluenceEstimator.validate", self.verbose) as bar:
            results = retraining_changes(
                self._state,
                entry.X1,
                entry.y,
                G,
                names,
                eps,
                rng,
                n_draws=n_draws,
                refit=refit,
                forward=forward,
                final_estimator=final_step(self.estimator_),
                classes=self._classes,
                progress=bar,
            )
        mean = drop_single_axes(results.mean(axis=2), single_group, scalar_eps)
        std = drop_single_axes(results.std(axis=2), single_group, scalar_eps)
        return (mean, std) if return_std else mean
