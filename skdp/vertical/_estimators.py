"""VerticalFMRegressor and VerticalFMClassifier: the functional mechanism over
vertically partitioned parties (Xu, Yuan & Wu 2021)."""

import numbers

from sklearn.base import BaseEstimator

from skdp._fm.estimator import (
    FM_PARAMETER_CONSTRAINTS,
    FMDomainMixin,
    FMPrivacyMixin,
    FMRegressorMixin,
    MulticlassFMClassifierMixin,
    atomic_fit,
)
from skdp.accounting import BudgetTrackingMixin, PrivacyBudget, record_spend
from skdp.utils import noise_generator
from skdp.utils.release_order import as_numeric
from skdp.utils.sklearn_compat import Interval, StrOptions, fit_context, validate_data
from skdp.vertical import _protocol
from skdp.vertical._partition import check_label_party, check_partition
from skdp.vertical._plan import bottom_up_spend, check_public_parameters
from skdp.vertical._secure import require_backend

__all__ = ["VerticalFMClassifier", "VerticalFMRegressor"]


class _VerticalFM(FMDomainMixin, FMPrivacyMixin, BudgetTrackingMixin, BaseEstimator):
    """Shared fit logic; subclasses set the objective and the label handling."""

    # tests switch this on to inspect what every message carried
    _keep_transcript_payloads = False

    # a per-row sparsity bound needs whole rows, which no party holds
    max_nonzero = None

    # the parties declare the domain in the user's units; the server centres it
    # (skdp._fm.centring.centred_domain) and each party shifts its own columns
    _centre_domain = True

    _parameter_constraints = {
        **{k: v for k, v in FM_PARAMETER_CONSTRAINTS.items() if k != "max_nonzero"},
        "partition": [list, tuple, None],
        "n_parties": [Interval(numbers.Integral, 1, None, closed="left")],
        "label_party": [Interval(numbers.Integral, 0, None, closed="left")],
        "budget": [StrOptions({"top-down", "bottom-up"})],
        "party_epsilon": ["array-like", None],
        "pairwise_epsilon": ["array-like", None],
        "secure_backend": [StrOptions({"plaintext", "bfv"})],
        "noise_generation": [StrOptions({"threshold", "distributed", "dealer"})],
        "verbose": ["verbose"],
    }

    # ---------------------------------------------------------------- fitting
    @fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Run the vertical protocol once and release the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The columns of all parties side by side (the simulation splits them
            by ``partition``; no party reads another's columns).
        y : array-like of shape (n_samples,)
            The label party's labels.

        Returns
        -------
        self
        """
        return self._fit(X, y)

    def _fit(self, X, y):
        self._check_privacy_params()
        require_backend(self.secure_backend)
        X, y = validate_data(
            self, X, y, y_numeric=self._objective == "squared", ensure_min_samples=2
        )
        # numbers before the spend: a string (categorical) column fails here
        X = as_numeric(X)
        d = X.shape[1]
        partition = check_partition(
            self.partition,
            d,
            n_parties=None if self.partition is not None else self.n_parties,
            feature_names=getattr(self, "feature_names_in_", None),
        )
        label_party = check_label_party(self.label_party, len(partition))
        budgets = check_public_parameters(
            budget=self.budget,
            mechanism=self.mechanism,
            noise_generation=self.noise_generation,
            party_epsilon=self.party_epsilon,
            pairwise_epsilon=self.pairwise_epsilon,
            n_parties=len(partition),
        )
        y = self._prepare_y(y, first_call=True)
        domain = self._resolve_declared_domain(X.shape[1], X, y)
        # the spend depends only on public parameters: recorded (and checked
        # against any track_budget cap) before a single coefficient is released
        if budgets is None:
            spend = self._spend
        else:
            spend = PrivacyBudget(bottom_up_spend(*budgets))
        spend = record_spend(spend, type(self).__name__, mechanism=self.mechanism)
        rng = noise_generator(self.random_state)
        # every role (parties, server, dealer) runs the federated protocol's code
        run = _protocol.run_in_process(
            X,
            y,
            objective=self._objective,
            partition=partition,
            label_party=label_party,
            domain=domain,
            epsilon=self.epsilon,
            delta=self.delta,
            mechanism=self.mechanism,
            budget=self.budget,
            party_epsilon=self.party_epsilon,
            pairwise_epsilon=self.pairwise_epsilon,
            linear_weight=self.linear_weight,
            postprocessing=self.postprocessing,
            backend=self.secure_backend,
            noise_generation=self.noise_generation,
            rng=rng,
            keep_payloads=self._keep_transcript_payloads,
            verbose=self.verbose,
            n_classes=len(getattr(self, "classes_", ())) if y.ndim == 2 else 2,
        )
        model = run.model
        released = PrivacyBudget(model["privacy"]["epsilon"], model["privacy"]["delta"])
        if budgets is not None and released != spend:  # pragma: no cover - a bug
            raise RuntimeError(f"recorded {spend} but the server released {released}")
        self._set_domain_attributes(run.plan.domain)
        self.partition_ = [cols.copy() for cols in partition]
        self.n_parties_ = len(partition)
        self.label_party_ = label_party
        self.linear_weight_ = model["linear_weight"]
        self.sensitivity_ = run.plan.sensitivity
        self.noise_std_ = model["noise_std"]
        self.party_privacy_ = model["party_privacy"]
        self.privacy_threat_model_ = model["privacy"]["threat_model"]
        self.group_epsilon_ = run.group_epsilon
        self.transcript_ = run.transcript
        self.n_samples_seen_ = X.shape[0]
        self.privacy_spent_ = spend
        self.coef_ = model["coef"]
        self.intercept_ = model["intercept"]
        return self


_PARAMS_DOC = """
    epsilon, delta, mechanism, bounds_X, data_norm, fit_intercept, linear_weight,
    postprocessing
        As in the centralized estimator (top-down budget; see there).
    partition : list of lists of int or str, or None, default=None
        Columns held by each party (indices, or names when X is a DataFrame).
        None splits the columns evenly over ``n_parties`` parties. Overlapping or
        missing columns, empty parties and ``n_parties`` larger than the number
        of features raise ValueError.
    n_parties : int, default=2
        Number of parties when ``partition`` is None.
    label_party : int, default=0
        Index of the party holding the labels.
    budget : {"top-down", "bottom-up"}, default="top-down"
        ``"top-down"``: the server fixes ``epsilon`` for the whole record and one
        noise scale for every coefficient. ``"bottom-up"``: every party states
        its own budget (``party_epsilon``, ``pairwise_epsilon``) and the server's
        ``epsilon`` follows (``epsilon`` is then ignored; Laplace only).
    party_epsilon : array-like of shape (n_parties,) or None
        Bottom-up: each party's total ``eps^(k) = eps^k + sum_l eps^kl``.
    pairwise_epsilon : array-like of shape (n_parties, n_parties) or None
        Bottom-up: ``eps^kl`` agreed by parties k and l (symmetric, 0 diagonal,
        > 0 elsewhere), spent on their cross coefficients.
    secure_backend : {"plaintext", "bfv"}, default="plaintext"
        ``"plaintext"``: the ideal functionality of the secure scalar product:
        same messages and steps, no cryptography (fast; for simulation and grid
        searches; no protection against a real adversary). ``"bfv"``: TenSEAL BFV
        homomorphic encryption (skdp's ``secure`` extra); see
        :class:`skdp.vertical._secure.BFVKeyHolder` for the threat model.
    noise_generation : {"threshold", "distributed", "dealer"}, default="threshold"
        Who draws the noise. A single-party coefficient is always noised by its
        owner. The noise of a cross coefficient is a sum of shares, one from
        each party of the pair, that no one else sees
        (:mod:`skdp.vertical._noise_shares`). ``"threshold"``: each share alone
        is the full mechanism's noise, so a party that knows its own share (and
        learns the noisy coefficient from the server) still faces the whole
        mechanism; the cross coefficients carry twice the mechanism's noise
        variance. ``"distributed"``: the two shares sum to the mechanism's noise
        (divisible discrete Laplace or Gaussian): less noise, but a party that
        colludes with the server sees its pair's cross coefficients with only
        the other half. ``"dealer"``: a noise dealer (neither the server nor a
        party) draws the whole noise vector exactly as the centralized estimator
        does and hands each piece to one party: with the same ``random_state``
        the release equals the centralized one; the dealer knows all the noise
        and must not collude with the server, and a party knows the pieces it
        was handed.
    random_state : None, int, RandomState or Generator, default=None
        Source of the noise.
        Seeds the noise only under the reproducible-noise opt-in
        (:func:`skdp.set_config`); by default, fresh OS entropy.
    verbose : int, default=0
        Progress of the protocol on stderr: ``1`` a line per step (plan, local,
        cross, release), ``2`` a line per message with its size (a bfv fit of
        1e5 rows takes seconds to minutes)."""

_ATTRS_DOC = """
    coef_, intercept_, bounds_, data_norm_, intercept_scaling_, linear_weight_,
    n_samples_seen_, n_features_in_, feature_names_in_
        As in the centralized estimator (in the user's units; ``data_norm_`` is
        None when the centred box alone was kept).
    offset_X_ : ndarray of shape (n_features,) or None
        Midpoints of the declared ``bounds_X`` the parties centred their
        columns at (None: not shifted).
    scale_X_ : ndarray of shape (n_features,) or None
        Half-widths of a box declared alone: each party maps its columns to
        ``[-1, 1]`` as the central estimator does (None: not scaled).
    offset_y_ : float
        Midpoint of ``bounds_y`` the label party centred the labels at (0: not
        shifted).
    privacy_spent_ : PrivacyBudget
        Guarantee for a whole record (top-down: ``(epsilon, delta)``; bottom-up:
        ``sum_k eps^k + sum_{k<l} eps^kl``).
    party_privacy_ : ndarray of shape (n_parties,)
        The epsilon (at the release's delta) that party k's own columns (for
        the label party: and the labels) enjoy, for a neighbour that changes
        only that party's part of one record. Top-down:
        ``epsilon * Delta_k / Delta`` with ``Delta_k`` the sensitivity of the
        coefficients that involve party k's data (for the label party also every
        linear coefficient), recomputed for the declared domain (for Gaussian
        noise, the exact epsilon at the same sigma and delta). Bottom-up:
        ``eps^(k)``. More than two classes: a party without the labels counts
        only the linear rows of its own columns; the label party's labels
        enter every row, the other parties' rows with their ``x`` fixed, which
        costs it less for ``C >= 4`` (bottom-up: less than ``eps^(k)`` on its
        pairs); see :mod:`skdp.vertical._sensitivity`. It holds against
        outsiders (the model), the server (every noisy coefficient) and any
        parties without the server; against parties
        colluding with the server only with ``noise_generation="threshold"``,
        and only as far as the backend holds: see ``privacy_threat_model_``.
    privacy_threat_model_ : dict
        ``{adversary: what holds}``: outsiders, the server, parties without the
        server, parties with the server (and the dealer with the server), for
        this fit's noise generation and backend.
    sensitivity_ : Sensitivity or None
        Of the whole release (top-down).
    noise_std_ : float
        Noise standard deviation used by the post-processing (bottom-up: the root
        mean square over the quadratic coefficients).
    group_epsilon_ : dict
        Epsilon of the mechanism of every coefficient group: ``("local", k)``
        (party k's single-party coefficients) and ``("pair", k, l)`` (their cross
        coefficients). Top-down: all equal to ``epsilon``; bottom-up: ``eps^k``
        and ``eps^kl``.
    partition_ : list of ndarray
    n_parties_, label_party_ : int
    transcript_ : Transcript
        Every message of the run (sender, receiver, kind, bytes)."""

_NOTES_DOC = r"""
    **Protocol** (Xu et al.'s Algorithm 1; :mod:`skdp.vertical._protocol`). The
    objective :math:`w^\top A w + b^\top w` of the centralized estimator splits
    into single-party coefficients (computed and noised by their owner) and
    cross-party coefficients :math:`\kappa X_k^\top X_l` and
    :math:`c X_k^\top \beta(y)`
    (computed by a secure scalar product; the server obtains them only with the
    noise already added). The server assembles the noisy quadratic,
    post-processes and solves it with the centralized estimator's core: with the
    same noise the model is the centralized one, for any number of parties.

    **Guarantee.** Top-down: every released coordinate gets noise of the
    centralized mechanism, so the release is ``(epsilon, delta)``-DP for a whole
    record exactly as centrally. Party k's columns alone: the coordinates that
    change when only they change are those involving party :math:`k`, with
    sensitivity :math:`\Delta_k \le \Delta`, so
    :math:`\varepsilon_k = \varepsilon \Delta_k / \Delta` (for the box
    :math:`|x_j| \le 1` and the paper's monomial coefficients this is
    :math:`\Delta_k = d_k + d_k (2d - d_k)/4`). Bottom-up: group :math:`G` (a
    party's own coefficients, or a pair's cross coefficients) is released with
    :math:`\mathrm{Lap}(\Delta_G / \varepsilon_G)`; the groups are disjoint, so a
    record costs :math:`\sum_G \varepsilon_G` and party :math:`k`'s part
    :math:`\varepsilon^k + \sum_l \varepsilon^{kl}`. With more than two classes
    the groups are the same with :math:`C - 1` linear columns per row, and
    :math:`\Delta_G` is the group's restricted multinomial sensitivity: the binary
    quadratic part, :math:`2 c (2C - 3) M_1(J) / C` for its feature rows :math:`J`
    and :math:`2 c s` for the intercept row (derivation and tests in
    :mod:`skdp.vertical._sensitivity`).

    **Threat model.** Honest-but-curious server and parties; the server holds
    the only decryption key; it never sees an input ciphertext, a raw column, the
    labels or a noise-free cross sum. Against parties colluding with the server
    (who see the noisy coefficients minus their own noise shares), the default
    ``noise_generation="threshold"`` keeps ``party_privacy_[k]`` for every party
    k outside the coalition: every coefficient involving party k carries a
    share from party k that alone is the mechanism's noise, and the rest is
    post-processing. With ``"distributed"`` shares that guarantee is lost for
    the coalition's own pairs; with ``"dealer"`` for the pieces of noise the
    coalition was handed. With ``secure_backend="bfv"`` the server's key also
    decrypts what a colluding party evaluated (the columns of lower-indexed
    parties, the labels). See ``privacy_threat_model_`` and the user guide.
    Under a row-norm bound :math:`R` each party clips its block of :math:`d_k`
    columns to norm :math:`R \sqrt{d_k/d}` (no party sees a whole row); rows inside
    these balls are unchanged.

    **Centring.** With ``fit_intercept`` the server centres the declared domain
    by the central estimator's rule (every ``bounds_X`` range at its midpoint,
    ``bounds_y`` at its midpoint; a box declared with ``data_norm`` only if the
    centred box alone has the smaller data-free release cost) and each party
    shifts its own columns by the midpoints of its own ranges (the label party
    its labels) before computing anything, then clips to the centred domain.
    A public, data-independent reparametrization of a model with an intercept:
    no privacy cost, the same model at ``epsilon=inf``, and the sensitivity of
    the centred domain, whose bounds are the half-widths, so it shrinks
    whenever a declared range excludes 0. The server maps ``coef_`` and
    ``intercept_`` back to the user's units; ``offset_X_`` and ``offset_y_``
    record the shift. A box declared alone is also mapped to ``[-1, 1]``
    (``scale_X_``): the server sends each party the half-widths of its own
    ranges, which it checks against its declaration and divides its shifted
    columns by; the model is the central one's (with dealer noise) and the
    one on columns mapped by hand."""


class VerticalFMRegressor(FMRegressorMixin, _VerticalFM):
    __doc__ = f"""Linear regression with the functional mechanism over vertically
    partitioned parties (the parties hold disjoint columns of the same rows).

    Parameters
    ----------{_PARAMS_DOC}
    bounds_y : tuple (lower, upper) or None, default=None
        Label bounds (the label party clips). None infers them from the data
        with a PrivacyLeakWarning.
    postprocessing : {"average", "eb", "ridge", "trim", "none"}, default="average"
        The solve of the released statistics, with the options and the
        default of :class:`~skdp.linear_model.FMLinearRegression`: each solves
        the server's noisy quadratic exactly as the central estimator solves
        its own (with dealer noise the same model); ``"average"`` is the mean
        of the ``"eb"`` (empirical Bayes), ``"ridge"`` and ``"trim"``
        solutions.

    Attributes
    ----------{_ATTRS_DOC}
    bounds_y_ : tuple of float

    Notes
    -----{_NOTES_DOC}

    References
    ----------
    Zhang, Zhang, Xiao, Yang & Winslett (2012). Functional mechanism. VLDB.
    D. Xu, S. Yuan, X. Wu, "Achieving differential privacy in vertically
    partitioned multiparty learning", IEEE Big Data 2021 (arXiv:1911.04587).

    Examples
    --------
    >>> from skdp.datasets import make_private_regression
    >>> from skdp.vertical import VerticalFMRegressor
    >>> X, y, coef, parts = make_private_regression(
    ...     4000, 6, n_parties=3, random_state=0)
    >>> reg = VerticalFMRegressor(epsilon=1.0, data_norm=1.0, bounds_y=(-1, 1),
    ...                           partition=parts, random_state=0).fit(X, y)
    >>> reg.privacy_spent_
    PrivacyBudget(epsilon=1.0, delta=0.0)
    >>> bool(reg.party_privacy_.max() <= 1.0)
    True
    """

    _parameter_constraints = {
        **_VerticalFM._parameter_constraints,
        "bounds_y": [tuple, list, None],
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
        fit_intercept=True,
        linear_weight="auto",
        postprocessing="average",
        partition=None,
        n_parties=2,
        label_party=0,
        budget="top-down",
        party_epsilon=None,
        pairwise_epsilon=None,
        secure_backend="plaintext",
        noise_generation="threshold",
        random_state=None,
        verbose=0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.bounds_X = bounds_X
        self.bounds_y = bounds_y
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.linear_weight = linear_weight
        self.postprocessing = postprocessing
        self.partition = partition
        self.n_parties = n_parties
        self.label_party = label_party
        self.budget = budget
        self.party_epsilon = party_epsilon
        self.pairwise_epsilon = pairwise_epsilon
        self.secure_backend = secure_backend
        self.noise_generation = noise_generation
        self.random_state = random_state
        self.verbose = verbose


class VerticalFMClassifier(MulticlassFMClassifierMixin, _VerticalFM):
    __doc__ = f"""Logistic regression (binary, or multinomial for more than two
    classes; order-2 Taylor objective) with the functional mechanism over
    vertically partitioned parties.

    Parameters
    ----------{_PARAMS_DOC}
    classes : array-like of shape (n_classes,) or None, default=None
        The labels (held by the label party); with two, ``classes[1]`` is the
        positive class. Declared classes make the fit independent of which
        labels occur (a fit where only one occurs still gives a model). None
        takes them from the data with a PrivacyLeakWarning. More than two
        classes fit the multinomial (softmax) Taylor objective in one release,
        as :class:`~skdp.linear_model.FMLogisticRegression` does: the label
        party holds the one-hot of the first ``C - 1`` classes, its linear
        statistics ``sum_i x_i (1/C - y_i)`` take ``C - 1`` columns (so do the
        secure label x feature products), the quadratic ``X^T X / 8`` is
        unchanged. Top-down the release is the central one; bottom-up every
        coefficient group gets Laplace noise at its budget and its restricted
        multinomial sensitivity (:mod:`skdp.vertical._sensitivity`).

    Attributes
    ----------{_ATTRS_DOC}
    classes_ : ndarray of shape (n_classes,)
        ``coef_`` and ``intercept_`` have shapes (n_classes, n_features) and
        (n_classes,) for more than two classes (softmax logits, centred across
        classes).

    Notes
    -----{_NOTES_DOC}

    References
    ----------
    D. Xu, S. Yuan, X. Wu, "Achieving differential privacy in vertically
    partitioned multiparty learning", IEEE Big Data 2021 (arXiv:1911.04587).

    Examples
    --------
    >>> from skdp.datasets import make_private_classification
    >>> from skdp.vertical import VerticalFMClassifier
    >>> X, y, _, parts = make_private_classification(
    ...     4000, 6, n_parties=3, random_state=0)
    >>> clf = VerticalFMClassifier(epsilon=1.0, data_norm=1.0, partition=parts,
    ...                            classes=[0, 1], random_state=0).fit(X, y)
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints = {
        **_VerticalFM._parameter_constraints,
        "classes": ["array-like", None],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=0.0,
        mechanism="laplace",
        bounds_X=None,
        data_norm=None,
        fit_intercept=True,
        linear_weight="auto",
        postprocessing="ridge",
        partition=None,
        n_parties=2,
        label_party=0,
        budget="top-down",
        party_epsilon=None,
        pairwise_epsilon=None,
        secure_backend="plaintext",
        noise_generation="threshold",
        classes=None,
        random_state=None,
        verbose=0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.bounds_X = bounds_X
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.linear_weight = linear_weight
        self.postprocessing = postprocessing
        self.partition = partition
        self.n_parties = n_parties
        self.label_party = label_party
        self.budget = budget
        self.party_epsilon = party_epsilon
        self.pairwise_epsilon = pairwise_epsilon
        self.secure_backend = secure_backend
        self.noise_generation = noise_generation
        self.classes = classes
        self.random_state = random_state
        self.verbose = verbose
