"""Docstring sections shared by the two private searches (skdp-internal)."""

COMMON_PARAMETERS = """
    epsilon : float > 0
        The total epsilon of the whole search (selection and released model
        together). ``np.inf``: the non-private search (every candidate fitted
        on the training part, scored exactly, the best released).
    delta : float in [0, 1), default=0.0
        The total delta. Random stopping uses it only if the Renyi-DP bound
        (Papernot & Steinke, Theorem 2) then gives the base runs a larger
        budget than the pure bound; the exponential mechanism and a single
        candidate pass it to the estimator's own ``delta`` parameter (the
        sibling of ``epsilon_param``), if it has one.
    scoring : {"accuracy", "neg_mean_squared_error", "neg_mean_absolute_error"} \
or None, default=None
        The validation score, bounded so that its sensitivity is known. None:
        accuracy for a classifier, clipped negative mean squared error for a
        regressor.
    method : {"auto", "random_stopping", "exponential"}, default="auto"
        The selection (see Notes). ``"auto"`` compares each released model's
        public "training rows x budget" under both and takes the larger.
    epsilon_param : str or None, default=None
        The estimator parameter the search sets to each base run's budget.
        None: ``epsilon``, or else the one nested parameter ending in
        ``__epsilon`` (a Pipeline's private step); an error if there is none or
        more than one. Its sibling ``delta`` (``<prefix>delta``), if any, is set
        too. The candidates may not set either, nor any ``random_state``.
    label_range : (float, float) or None, default=None
        Regression scores only: predictions and labels are clipped to it, so
        the score is bounded. None: the estimator's ``bounds_y`` (or the one
        nested ``__bounds_y``).
    validation_fraction : float in (0, 1), default=0.2
        The share of rows (``ceil(fraction * n)``, chosen uniformly at random,
        independently of the data) kept for the validation scores.
    refit_share : float in [0, 1), default=0.0
        The share ``s`` of ``epsilon`` and ``delta`` kept to refit the
        selected candidate on all rows. 0: the released model is the selected
        base run's (no refit). ``s > 0``: the selection spends ``(1 - s)
        (epsilon, delta)``, the refit ``s (epsilon, delta)`` (basic
        composition); the released model is the refit.
    expected_trials : float > 1 or None, default=None
        Random stopping: the mean of the (uncapped) truncated negative
        binomial distribution of the number of base runs. None: 1.5, 3 or 6
        times the number of candidates, whichever the public rule of the Notes
        prefers.
    max_trials : int >= 2 or None, default=None
        Random stopping: the cap on the number of base runs (the accounting is
        that of the capped distribution). None: ten times the number of
        candidates.
    random_state : None, int, RandomState or Generator, default=None
        Source of the split, the number of trials, the candidates drawn, the
        score noise and the base runs' seeds, under skdp's seed policy
        (:func:`~skdp.utils.noise_generator`: OS entropy unless reproducible
        noise is switched on)."""

COMMON_ATTRIBUTES = """
    best_estimator_ : estimator
        The released model: the selected base run's fit (trained on the
        training part, or on its share of it for the exponential mechanism),
        or with ``refit_share > 0`` the selected candidate refitted on all
        rows with its share of the budget.
    best_params_ : dict
        The selected candidate.
    best_index_ : int
        Its index in ``cv_results_["params"]``.
    best_score_ : float
        Random stopping: the selected run's released noisy validation score
        (in the scoring's units; ``neg_mean_squared_error`` in ``y``'s units
        squared). The exponential mechanism releases no score: NaN.
    cv_results_ : dict of arrays
        Released quantities only: ``params``, ``param_<name>`` (masked
        arrays), ``mean_test_score`` (the released noisy score of the selected
        candidate, NaN for all others: their scores are not released) and
        ``selected``.
    method_ : str
        ``"random_stopping"``, ``"exponential"``, ``"single"`` (one
        candidate: fitted on all rows at the full budget, nothing to select)
        or ``"exhaustive"`` (``epsilon=np.inf``).
    base_epsilon_ : float
        The epsilon each base run was fitted (and scored) with.
    expected_n_trials_ : float
        The mean number of base runs (public). The number actually run is not
        stored: releasing it would void the guarantee.
    scoring_ : str
    n_validation_ : int
        Validation rows (public: a fixed fraction of n).
    privacy_spent_ : PrivacyBudget
        The guarantee of the whole search, recorded once in every active
        :func:`~skdp.accounting.track_budget` block before anything is drawn.
    classes_ : ndarray
        Classifiers only.
    n_features_in_ : int"""

NOTES = """
    Neighbouring data sets differ by replacing one record; ``n`` is public.
    The rows are split at random, independently of the data, into a training
    part and a validation part of ``ceil(validation_fraction * n)`` rows.

    **Base run.** Draw a candidate uniformly, fit a clone with it and with
    ``epsilon_param = eps0`` on the training part, compute the bounded score
    ``s`` on the validation part and release ``(model, s + Laplace(1 /
    (n_val eps0)))``. Accuracy, and the clipped errors ``|y - p| / w`` (MAE)
    and ``(|y - p| / w)^2`` (MSE) with ``w`` the width of ``label_range``, lie
    in ``[0, 1]`` per row, so the mean over the validation rows changes by at
    most ``1 / n_val`` when one row is replaced. Replacing a training row
    changes only the fit (``eps0``-DP by the estimator's own guarantee; the
    score is a function of the model and of the unchanged validation rows:
    post-processing); replacing a validation row changes only the score
    (``eps0``-DP by the Laplace mechanism). Each record lies in one part, so
    a base run is ``eps0``-DP (parallel composition); given the split,
    independent repetitions of it are i.i.d., and the bound below holds for
    every split, hence for the random one. The search checks that every base
    run recorded at most ``eps0`` (a private tracker takes the base runs'
    records; only the search's total reaches the ledgers), and refuses an
    estimator that records nothing or that releases at predict time.

    **Random stopping** (Liu & Talwar 2019; Papernot & Steinke 2022). Run
    ``K`` base runs and release the one with the highest noisy score (with
    its score). ``K`` follows a truncated negative binomial distribution
    ``TNB(eta, gamma)``, ``P[K = k] ∝ (1 - gamma)^k prod_{l<k} (l + eta) / (l
    + 1)`` (``eta = 0``: logarithmic; ``eta = 1``: geometric), capped at
    ``max_trials``. With ``f`` the generating function of ``K`` and ``F`` the
    distribution function of one run's score, the release has density
    ``f'(F(s))`` relative to one run, and ``eps0``-DP bounds both factors: the
    whole is ``(eps0 + log R)``-DP with ``R = sup_x f'(x_max(x)) / f'(x)``,
    ``x_max(x) = min(e^eps0 x, 1 - e^-eps0 (1 - x))`` (geometric ``K``: ``R <=
    e^(2 eps0)``, Liu & Talwar's ``3 eps0``; TNB: ``(2 + eta) eps0``, Papernot
    & Steinke; the cap lowers it). ``R`` is bounded numerically on a grid,
    rigorously from above, and ``eps0`` is the largest value whose bound is at
    most ``epsilon``. The distribution is chosen from the number of candidates
    ``m`` only (public): ``eta`` in {0, 0.5, 1} and a mean of 1.5, 3 or 6
    times ``m`` (or ``expected_trials``), the pair maximising ``eps0`` times
    the probability that a given candidate is tried at least once. At
    ``epsilon = 1`` this gives ``eps0`` = 0.58 (2 candidates), 0.51 (3), 0.50
    (4), 0.40 (10: ``eta = 0.5``, mean 29); at ``epsilon = 5``: 3.33, 2.62,
    2.57, 2.04. With ``delta > 0`` the Renyi-DP bound of the uncapped
    distribution (Papernot & Steinke, Theorem 2, with the tight Renyi
    divergence of ``eps0``-DP runs, converted by Canonne, Kamath & Steinke
    2020) is computed too and used (with the uncapped distribution) if it
    allows a larger ``eps0``; with pure base runs it seldom does, and the
    guarantee is then ``(epsilon, 0)``.
    The number of runs is never released: the guarantee needs it hidden.

    **Exponential mechanism** (Chaudhuri, Monteleoni & Sarwate 2011;
    Chaudhuri & Vinterbo 2013). The training part is cut into one disjoint
    chunk per candidate; candidate ``i`` is fitted on chunk ``i`` at the full
    ``(epsilon, delta)``; one candidate is chosen with probability ``∝
    exp(epsilon u_i / (2 / n_val))`` from the exact bounded validation scores
    ``u_i`` (sensitivity ``1 / n_val``) and its model released. A record lies
    in one chunk or in the validation part, so the whole is ``(epsilon,
    delta)``-DP by parallel composition. Better with few candidates.

    ``method="auto"`` takes the exponential mechanism when ``epsilon / m >=
    eps0 * coverage`` (``m`` candidates, ``coverage`` the probability that
    random stopping tries a given candidate at least once): a public proxy of
    the released model's rows times budget. One candidate: it is fitted on
    all rows at ``(epsilon, delta)``; nothing is selected.

    **Refit.** With ``refit_share = s > 0`` the selection above runs with
    ``(1 - s) (epsilon, delta)`` and the selected candidate is fitted again,
    on all rows, with ``s epsilon`` (and ``s delta`` if the estimator has a
    ``delta`` parameter): the selection is post-processed into the refit's
    parameters, so the two compose to ``(epsilon, delta)``.

    Only released quantities are stored: ``cv_results_`` holds no score of an
    unreleased run. The base runs' seeds are drawn from the search's
    generator, so two runs never share noise."""

REFERENCES = """
    .. [1] J. Liu and K. Talwar, "Private selection from private candidates",
       STOC 2019.
    .. [2] N. Papernot and T. Steinke, "Hyperparameter tuning with Renyi
       differential privacy", ICLR 2022.
    .. [3] K. Chaudhuri and S. A. Vinterbo, "A stability-based validation
       procedure for differentially private machine learning", NeurIPS 2013.
    .. [4] K. Chaudhuri, C. Monteleoni and A. D. Sarwate, "Differentially
       private empirical risk minimization", JMLR 2011.
    .. [5] C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for
       differential privacy", NeurIPS 2020."""
