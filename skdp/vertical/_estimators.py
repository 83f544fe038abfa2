"""VerticalFMRegressor and VerticalFMClassifier: the functional mechanism over
vertically partitioned parties (seed: vertical-functional-mechanism.txt)."""

import hashlib
import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator

from skdp._fm import (
    balanced_linear_weight,
    draw_noise,
    make_mechanism,
    n_released,
    objective_constants,
    release_noise_std,
    sensitivity,
    solve_release,
)
from skdp._fm.estimator import (
    FM_PARAMETER_CONSTRAINTS,
    FMClassifierMixin,
    FMDomainMixin,
    FMPrivacyMixin,
    FMRegressorMixin,
    atomic_fit,
)
from skdp.accounting import PrivacyBudget, record_spend
from skdp.mechanisms import gaussian_delta
from skdp.utils import check_random_state, clip_to_bounds, clip_to_norm
from skdp.utils._sklearn_compat import Interval, StrOptions, fit_context, validate_data
from skdp.vertical import _protocol
from skdp.vertical._partition import check_label_party, check_partition
from skdp.vertical._secure import require_backend

__all__ = ["VerticalFMClassifier", "VerticalFMRegressor"]


def _check_bottom_up(party_epsilon, pairwise_epsilon, n_parties):
    """Validate bottom-up budgets; return ``(local eps^k, pairwise eps^kl)``.

    ``eps^(k) = eps^k + sum_l eps^kl``: party k's total ``party_epsilon[k]`` minus
    the pairwise budgets it agreed with the others is what it spends on its
    single-party coefficients.
    """
    if party_epsilon is None or pairwise_epsilon is None:
        raise ValueError(
            'budget="bottom-up" needs party_epsilon (each party\'s total '
            "eps^(k)) and pairwise_epsilon (the eps^kl agreed by each pair)."
        )
    totals = np.asarray(party_epsilon, dtype=np.float64)
    pairs = np.asarray(pairwise_epsilon, dtype=np.float64)
    K = n_parties
    if totals.shape != (K,):
        raise ValueError(
            f"party_epsilon must have one entry per party ({K}), got shape "
            f"{totals.shape}."
        )
    if pairs.shape != (K, K):
        raise ValueError(
            f"pairwise_epsilon must be a ({K}, {K}) matrix, got shape {pairs.shape}."
        )
    if not (np.all(np.isfinite(totals)) and np.all(totals > 0)):
        raise ValueError(f"party_epsilon must be finite and > 0, got {totals}.")
    off = ~np.eye(K, dtype=bool)
    if not np.all(np.isfinite(pairs[off])) or np.any(pairs[off] <= 0):
        raise ValueError(
            "pairwise_epsilon must be finite and > 0 off the diagonal: every pair "
            "shares cross coefficients that need a budget."
        )
    if np.any(pairs[np.eye(K, dtype=bool)] != 0):
        raise ValueError("pairwise_epsilon must be 0 on the diagonal.")
    if not np.allclose(pairs, pairs.T, rtol=1e-12, atol=0):
        k, q = np.argwhere(~np.isclose(pairs, pairs.T, rtol=1e-12, atol=0))[0]
        raise ValueError(
            f"inconsistent bottom-up budgets: party {k} offers eps^{k}{q} = "
            f"{pairs[k, q]} but party {q} offers {pairs[q, k]}; each pair must "
            "agree on one value (pairwise_epsilon must be symmetric)."
        )
    local = totals - pairs.sum(axis=1)
    if np.any(local <= 0):
        k = int(np.flatnonzero(local <= 0)[0])
        raise ValueError(
            f"inconsistent bottom-up budgets: party {k}'s pairwise budgets sum to "
            f"{pairs[k].sum():.6g}, which leaves nothing of its total "
            f"eps^({k}) = {totals[k]:.6g} for its single-party coefficients."
        )
    return local, pairs


_SENSITIVITY_CACHE = {}


def _sensitivity(objective, domain, c, quad_mask=None, lin_mask=None):
    """The core's sensitivity, memoized: it only depends on the declared domain
    (no data), and at d = 800 one evaluation costs about a second."""
    key = [objective, domain.n_features, domain.data_norm, domain.y_bounds, c]
    key += [domain.fit_intercept, domain.intercept_scaling]
    for arr in (domain.lower, domain.upper, quad_mask, lin_mask):
        arr = None if arr is None else np.asarray(arr)
        key.append(None if arr is None else (arr.dtype.str, arr.shape, arr.tobytes()))
    key = hashlib.sha256(repr(key).encode()).hexdigest()
    if key not in _SENSITIVITY_CACHE:
        if len(_SENSITIVITY_CACHE) >= 256:
            _SENSITIVITY_CACHE.clear()
        _SENSITIVITY_CACHE[key] = sensitivity(
            objective, domain, linear_weight=c, quad_mask=quad_mask, lin_mask=lin_mask
        )
    return _SENSITIVITY_CACHE[key]


def _gaussian_epsilon(sigma, delta, sens, epsilon_max):
    """Smallest epsilon with ``gaussian_delta(sigma, epsilon, sens) <= delta``."""
    if gaussian_delta(sigma, 0.0, sens) <= delta:
        return 0.0
    lo, hi = 0.0, epsilon_max
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(sigma, mid, sens) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


class _VerticalFM(FMDomainMixin, FMPrivacyMixin, BaseEstimator):
    """Shared fit logic; subclasses set the objective and the label handling."""

    # tests switch this on to inspect what every message carried
    _keep_transcript_payloads = False

    # a per-row sparsity bound needs whole rows, which no party holds
    max_nonzero = None

    _parameter_constraints = {
        **{k: v for k, v in FM_PARAMETER_CONSTRAINTS.items() if k != "max_nonzero"},
        "partition": [list, tuple, None],
        "n_parties": [Interval(numbers.Integral, 1, None, closed="left")],
        "label_party": [Interval(numbers.Integral, 0, None, closed="left")],
        "budget": [StrOptions({"top-down", "bottom-up"})],
        "party_epsilon": ["array-like", None],
        "pairwise_epsilon": ["array-like", None],
        "secure_backend": [StrOptions({"plaintext", "bfv"})],
        "noise_generation": [StrOptions({"distributed", "dealer"})],
    }

    # ---------------------------------------------------------------- helpers
    def _party_blocks(self, X, y, partition):
        """Each party clips its own columns; the label party clips y.

        A box is per coordinate, so it is applied exactly. No party sees a whole
        row, so a row-norm bound ``R`` is enforced as ``||x^(k)|| <= R sqrt(d_k/d)``
        per block: the product of these balls lies inside the declared ball (the
        guarantee is unchanged) and rows already inside it are untouched.
        """
        d = X.shape[1]
        blocks = []
        for cols in partition:
            block = X[:, cols]  # fancy indexing: a fresh copy this party owns
            if self.bounds_ is not None:
                block = clip_to_bounds(
                    block, self.bounds_[0][cols], self.bounds_[1][cols]
                )
            if self.data_norm_ is not None:
                radius = self.data_norm_ * math.sqrt(len(cols) / d)
                block = clip_to_norm(block, radius, copy=False)
            else:
                block = np.asarray(block, dtype=np.float64)
            blocks.append(block)
        return blocks, self._clip_y(y)

    def _clip_y(self, y):
        return np.asarray(y, dtype=np.float64)

    def _groups(self, domain, partition, label_party, c, rng):
        """Coefficient groups with their mechanisms, and the spend."""
        coords = _protocol.coordinate_groups(partition, label_party, self.fit_intercept)
        p = domain.n_coef
        if self.budget == "top-down":
            if self.party_epsilon is not None or self.pairwise_epsilon is not None:
                raise ValueError(
                    "party_epsilon and pairwise_epsilon are only used with "
                    'budget="bottom-up".'
                )
            sens = _sensitivity(self._objective, domain, c)
            mech = make_mechanism(
                self.epsilon, self.delta, sens, n_released(domain), self.mechanism
            )
            mechs = {key: mech for key in coords}
            return coords, mechs, sens, mech
        if self.mechanism != "laplace":
            raise ValueError('budget="bottom-up" supports mechanism="laplace" only.')
        local, pairs = _check_bottom_up(
            self.party_epsilon, self.pairwise_epsilon, len(partition)
        )
        mechs = {}
        for key, (_, (rows, cols), lin) in coords.items():
            qm = np.zeros((p, p), bool)
            qm[rows, cols] = True
            lm = np.zeros(p, bool)
            lm[lin] = True
            sens = _sensitivity(self._objective, domain, c, qm, lm)
            eps = local[key[1]] if key[0] == "local" else pairs[key[1], key[2]]
            mechs[key] = make_mechanism(eps, 0.0, sens, len(rows) + len(lin), "laplace")
        return coords, mechs, None, (local, pairs)

    def _party_privacy(self, domain, partition, label_party, c, sens, mech):
        """Top-down: each party's epsilon, the seed's Delta_k / Delta ratio."""
        p, d = domain.n_coef, domain.n_features
        out = np.empty(len(partition))
        for k, cols in enumerate(partition):
            mine = np.zeros(p, bool)
            mine[cols] = True
            qm = mine[:, None] | mine[None, :]
            lm = mine.copy()
            if k == label_party:
                lm[:] = True  # every linear entry holds its labels
            qm[d:, d:] = False
            sens_k = _sensitivity(self._objective, domain, c, qm, lm)
            if math.isinf(self.epsilon):
                out[k] = np.inf
            elif self.mechanism == "laplace":
                n_k = int(np.triu(qm).sum() + lm.sum())
                eps_k = (sens_k.l1 + n_k * mech.granularity) / mech.scale
                out[k] = min(self.epsilon, eps_k)
            else:
                out[k] = _gaussian_epsilon(
                    mech.sigma, self.delta, sens_k.l2, self.epsilon
                )
        return out

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
        d = X.shape[1]
        partition = check_partition(
            self.partition,
            d,
            n_parties=None if self.partition is not None else min(self.n_parties, d),
            feature_names=getattr(self, "feature_names_in_", None),
        )
        label_party = check_label_party(self.label_party, len(partition))
        y = self._prepare_y(y, first_call=True)
        domain = self._build_domain(X, y)
        if self.linear_weight == "auto":
            c = balanced_linear_weight(self._objective, domain, self.mechanism)
        else:
            c = float(self.linear_weight)
        rng = check_random_state(self.random_state)
        coords, mechs, sens, info = self._groups(domain, partition, label_party, c, rng)
        groups = {
            key: _protocol.NoiseGroup(key, contrib, quad, lin, mechs[key])
            for key, (contrib, quad, lin) in coords.items()
        }
        budgets = None
        if self.budget == "bottom-up":
            local, pairs = info
            budgets = [
                np.concatenate([[local[k] + pairs[k].sum()], pairs[k]])
                for k in range(len(partition))
            ]
        dealer_noise = None
        if self.noise_generation == "dealer":
            dealer_noise = self._dealer(domain, groups, info, rng)
        blocks, y_clipped = self._party_blocks(X, y, partition)
        _, beta = objective_constants(self._objective)
        beta_y = beta(y_clipped)
        kappa, _ = objective_constants(self._objective)
        lo, hi = domain.feature_intervals
        m_x = float(np.max(np.maximum(np.abs(lo), np.abs(hi))))
        # from the declared domain, not the data (the bfv setup depends on it)
        y_bounds = domain.y_bounds or (0.0, 1.0)
        m_beta = float(np.max(np.abs(beta(np.asarray(y_bounds, dtype=np.float64)))))
        value_bound = X.shape[0] * m_x * max(m_x * kappa, m_beta * c)
        A_hat, b_hat, transcript = _protocol.run(
            blocks,
            partition,
            beta_y,
            label_party,
            objective=self._objective,
            linear_weight=c,
            intercept_scaling=self.intercept_scaling_,
            fit_intercept=self.fit_intercept,
            groups=groups,
            noise_generation=self.noise_generation,
            dealer_noise=dealer_noise,
            backend=self.secure_backend,
            value_bound=value_bound,
            rng=rng,
            keep_payloads=self._keep_transcript_payloads,
            party_budgets=budgets,
        )
        if self.budget == "top-down":
            noise_std = noise_std_b = release_noise_std(info)
            spend = self._spend
            party_privacy = self._party_privacy(
                domain, partition, label_party, c, sens, info
            )
        else:
            local, pairs = info
            stds = [
                (len(gr.quad[0]), release_noise_std(gr.mechanism))
                for gr in groups.values()
            ]
            count = sum(n for n, _ in stds)
            noise_std = math.sqrt(sum(n * s * s for n, s in stds) / count)
            lin_stds = [
                (len(gr.lin), release_noise_std(gr.mechanism)) for gr in groups.values()
            ]
            count = sum(n for n, _ in lin_stds)
            noise_std_b = math.sqrt(sum(n * s * s for n, s in lin_stds) / count)
            spend = PrivacyBudget(float(local.sum() + np.triu(pairs, 1).sum()))
            party_privacy = local + pairs.sum(axis=1)
        # the centralized estimator's post-processing and solve
        coef, intercept = solve_release(
            A_hat,
            b_hat,
            self._objective,
            domain,
            noise_std=noise_std,
            noise_std_b=noise_std_b / c,
            method=self.postprocessing,
        )
        self.partition_ = [cols.copy() for cols in partition]
        self.n_parties_ = len(partition)
        self.label_party_ = label_party
        self.linear_weight_ = c
        self.sensitivity_ = sens
        self.noise_std_ = noise_std
        self.party_privacy_ = party_privacy
        self.group_epsilon_ = {
            key: float(gr.mechanism.epsilon) for key, gr in groups.items()
        }
        self.transcript_ = transcript
        self.n_samples_seen_ = X.shape[0]
        self.privacy_spent_ = record_spend(spend, type(self).__name__)
        self.coef_ = coef
        self.intercept_ = intercept
        return self

    def _dealer(self, domain, groups, info, rng):
        """Noise drawn in the centralized estimator's order, sliced per group."""
        if self.budget == "top-down":
            noise_A, noise_b = draw_noise(info, domain, rng)
            p = domain.n_coef

            def noise(group):
                rows, cols = group.quad
                pos = _protocol._triu_position(rows, cols, p)
                return noise_A[pos], noise_b[group.lin]

            return noise
        drawn = {
            key: (
                np.asarray(gr.mechanism.sample_noise(len(gr.quad[0]), rng), float),
                np.asarray(gr.mechanism.sample_noise(len(gr.lin), rng), float),
            )
            for key, gr in groups.items()
        }
        return lambda group: drawn[group.key]


_PARAMS_DOC = """
    epsilon, delta, mechanism, bounds_X, data_norm, fit_intercept, linear_weight,
    postprocessing
        As in the centralized estimator (top-down budget; see there).
    partition : list of lists of int or str, or None, default=None
        Columns held by each party (indices, or names when X is a DataFrame).
        None splits the columns evenly over ``min(n_parties, n_features)``
        parties. Overlapping or missing columns and empty parties raise
        ValueError.
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
        homomorphic encryption (``pip install skdp[secure]``); see
        :class:`skdp.vertical._secure.BFVBackend` for the threat model.
    noise_generation : {"distributed", "dealer"}, default="distributed"
        ``"distributed"``: the noise of a cross coefficient is the sum of one
        share from each party of the pair (divisible discrete Laplace or
        Gaussian), so no single party knows it; a single-party coefficient is
        noised by its owner. ``"dealer"``: a noise dealer (neither the server nor
        a party) draws the whole noise vector exactly as the centralized
        estimator does and hands each piece to one party: with the same
        ``random_state`` the release equals the centralized one; the dealer knows
        all the noise and must not collude with the server.
    random_state : None, int, RandomState or Generator, default=None"""

_ATTRS_DOC = """
    coef_, intercept_, bounds_, data_norm_, intercept_scaling_, linear_weight_,
    n_samples_seen_, n_features_in_, feature_names_in_
        As in the centralized estimator.
    privacy_spent_ : PrivacyBudget
        Guarantee for a whole record (top-down: ``(epsilon, delta)``; bottom-up:
        ``sum_k eps^k + sum_{k<l} eps^kl``).
    party_privacy_ : ndarray of shape (n_parties,)
        The epsilon each party's own columns enjoy (a neighbour that changes only
        that party's part of one record). Top-down:
        ``epsilon * Delta_k / Delta`` with ``Delta_k`` the sensitivity of the
        coefficients that involve party k's data (for the label party also every
        linear coefficient), recomputed for the declared domain (for Gaussian
        noise, the exact epsilon at the same sigma and delta). Bottom-up:
        ``eps^(k)``.
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

_NOTES_DOC = """
    **Protocol** (seed Algorithm 1; :mod:`skdp.vertical._protocol`). The
    objective ``w^T A w + b^T w`` of the centralized estimator splits into
    single-party coefficients (computed and noised by their owner) and
    cross-party coefficients ``kappa X_k^T X_l`` and ``c X_k^T beta(y)``
    (computed by a secure scalar product; the server obtains them only with the
    noise already added). The server assembles the noisy quadratic,
    post-processes and solves it with the centralized estimator's core: with the
    same noise the model is the centralized one, for any number of parties.

    **Guarantee.** Top-down: every released coordinate gets noise of the
    centralized mechanism, so the release is ``(epsilon, delta)``-DP for a whole
    record exactly as centrally. Party k's columns alone: the coordinates that
    change when only they change are those involving party k, with sensitivity
    ``Delta_k <= Delta``, so ``epsilon_k = epsilon Delta_k / Delta`` (for the box
    ``|x_j| <= 1`` and the seed's monomial coefficients this is
    ``Delta_k = d_k + d_k (2d - d_k)/4``). Bottom-up: group ``G`` (a party's own
    coefficients, or a pair's cross coefficients) is released with
    ``Lap(Delta_G / eps_G)``; the groups are disjoint, so a record costs
    ``sum_G eps_G`` and party k's part ``eps^k + sum_l eps^kl``.

    **Threat model.** Honest-but-curious server and parties; the server holds
    the only decryption key; it never sees an input ciphertext, a raw column, the
    labels or a noise-free cross sum. See the backends for collusions. Under a
    row-norm bound each party clips its block to ``data_norm sqrt(d_k/d)`` (no
    party sees a whole row); rows inside these balls are unchanged."""


class VerticalFMRegressor(FMRegressorMixin, _VerticalFM):
    __doc__ = f"""Linear regression with the functional mechanism over vertically
    partitioned parties (the parties hold disjoint columns of the same rows).

    Parameters
    ----------{_PARAMS_DOC}
    bounds_y : tuple (lower, upper) or None, default=None
        Label bounds (the label party clips). None infers them from the data
        with a PrivacyLeakWarning.

    Attributes
    ----------{_ATTRS_DOC}
    bounds_y_ : tuple of float

    Notes
    -----{_NOTES_DOC}

    References
    ----------
    Zhang, Zhang, Xiao, Yang & Winslett (2012). Functional mechanism. VLDB.
    Achieving differential privacy in vertically partitioned multiparty learning
    (seed: vertical-functional-mechanism.txt).

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
        postprocessing="ridge",
        partition=None,
        n_parties=2,
        label_party=0,
        budget="top-down",
        party_epsilon=None,
        pairwise_epsilon=None,
        secure_backend="plaintext",
        noise_generation="distributed",
        random_state=None,
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

    def _clip_y(self, y):
        return np.clip(np.asarray(y, dtype=np.float64), *self.bounds_y_)


class VerticalFMClassifier(FMClassifierMixin, _VerticalFM):
    __doc__ = f"""Binary logistic regression (order-2 Taylor objective) with the
    functional mechanism over vertically partitioned parties.

    Parameters
    ----------{_PARAMS_DOC}

    Attributes
    ----------{_ATTRS_DOC}
    classes_ : ndarray of shape (2,)

    Notes
    -----{_NOTES_DOC}

    References
    ----------
    Achieving differential privacy in vertically partitioned multiparty learning
    (seed: vertical-functional-mechanism.txt).

    Examples
    --------
    >>> from skdp.datasets import make_private_classification
    >>> from skdp.vertical import VerticalFMClassifier
    >>> X, y, _, parts = make_private_classification(
    ...     4000, 6, n_parties=3, random_state=0)
    >>> clf = VerticalFMClassifier(epsilon=1.0, data_norm=1.0, partition=parts,
    ...                            random_state=0).fit(X, y)
    >>> clf.predict(X[:3]).shape
    (3,)
    """

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
        noise_generation="distributed",
        random_state=None,
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
        self.random_state = random_state
