"""RandomizedResponseWithPrior: exact privacy over every prior, the multi-stage
release enumerated exactly, sampling law, audit, API."""

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression

from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import (
    BudgetExceededError,
    PrivacyLeakWarning,
    ReproducibleNoiseWarning,
)
from skdp.preprocessing import RandomizedResponseWithPrior
from skdp.preprocessing._rr_with_prior import (
    _stage_sizes,
    rr_with_prior_matrix,
    rr_with_prior_release,
    top_k_sets,
)
from skdp.utils import audit_mechanism

EPSILONS = [0.05, 0.5, 1.0, 2.0, 5.0]


def _grid_priors(n_classes, units=6):
    """Every prior with entries in multiples of 1/units (zeros and ties included)."""
    for parts in itertools.product(range(units + 1), repeat=n_classes):
        if sum(parts) == units:
            yield np.array(parts, dtype=float) / units


def _all_priors(n_classes, seed=0):
    yield from _grid_priors(n_classes)
    rng = np.random.default_rng(seed)
    yield from rng.dirichlet(np.full(n_classes, 0.3), size=50)  # peaked
    yield from rng.dirichlet(np.full(n_classes, 5.0), size=20)  # flat


def _max_log_ratio(M):
    """Largest log P[v | y] / P[v | y'] over outputs v and label pairs (y, y')."""
    worst = 0.0
    for v in range(M.shape[1]):
        column = M[:, v]
        if column.max() == 0:
            continue
        if column.min() == 0:
            return np.inf  # v possible under one label, impossible under another
        worst = max(worst, math.log(column.max() / column.min()))
    return worst


# ------------------------------------------------------------------ exact privacy
@pytest.mark.parametrize("n_classes", [2, 3, 4, 5])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_every_prior_gives_at_most_eps_for_every_label_pair(n_classes, epsilon):
    bound = math.exp(epsilon) * (1 + 1e-12)
    for prior in _all_priors(n_classes):
        M = rr_with_prior_matrix(prior, epsilon)
        np.testing.assert_allclose(M.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        assert np.all(M >= 0)
        assert math.exp(_max_log_ratio(M)) <= bound, prior


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_the_bound_is_attained_when_the_set_has_two_members(epsilon):
    # a report v in S: p_keep under y = v, 1/(e^eps + k - 1) under another member
    prior = np.array([0.45, 0.45, 0.05, 0.05])
    M = rr_with_prior_matrix(prior, epsilon)
    _, k = top_k_sets(prior[None], epsilon)
    if k[0] > 1:
        assert _max_log_ratio(M) == pytest.approx(epsilon, rel=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3, 4, 6])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_release_set_maximizes_the_papers_objective(n_classes, epsilon):
    for prior in _all_priors(n_classes, seed=1):
        order, k = top_k_sets(prior[None], epsilon)
        sorted_prior = np.sort(prior)[::-1]
        objective = [
            math.exp(epsilon) / (math.exp(epsilon) + j - 1) * sorted_prior[:j].sum()
            for j in range(1, n_classes + 1)
        ]
        assert objective[k[0] - 1] == pytest.approx(max(objective), rel=1e-12)
        # the set holds the k largest prior entries
        top = prior[order[0, : k[0]]]
        rest = np.delete(prior, order[0, : k[0]])
        assert rest.size == 0 or top.min() >= rest.max()


def test_uniform_prior_is_k_ary_randomized_response():
    from skdp.mechanisms import RandomizedResponseMechanism

    for n_classes in (2, 3, 7):
        M = rr_with_prior_matrix(np.ones(n_classes), 0.8)
        expected = RandomizedResponseMechanism(0.8, n_classes).matrix
        np.testing.assert_allclose(M, expected, rtol=1e-13)


def test_channel_by_hand():
    # prior (0.6, 0.3, 0.1) at eps = 1: the objective picks k = 2
    e = math.e
    M = rr_with_prior_matrix([0.6, 0.3, 0.1], 1.0)
    keep, other = e / (e + 1), 1 / (e + 1)
    expected = np.array(
        [[keep, other, 0.0], [other, keep, 0.0], [0.5, 0.5, 0.0]]
    )  # fmt: skip
    np.testing.assert_allclose(M, expected, rtol=1e-13)


def test_infinite_epsilon_reports_the_truth():
    np.testing.assert_array_equal(
        rr_with_prior_matrix([0.9, 0.1, 0.0], np.inf), np.eye(3)
    )


# ------------------------------------------------------------------ sampling law
@pytest.mark.parametrize(
    "prior",
    [[0.5, 0.3, 0.15, 0.05], [0.25, 0.25, 0.25, 0.25], [0.97, 0.01, 0.01, 0.01]],
)
def test_draws_follow_the_channel(prior):
    epsilon, n = 1.0, 60_000
    M = rr_with_prior_matrix(prior, epsilon)
    rng = np.random.default_rng(3)
    for y in range(4):
        codes = np.full(n, y)
        released, likelihood, _ = rr_with_prior_release(
            codes, np.tile(prior, (n, 1)), epsilon, rng
        )
        counts = np.bincount(released, minlength=4)
        expected = M[y] * n
        assert np.all(counts[expected == 0] == 0)
        # 5 sigma per cell (binomial)
        sd = np.sqrt(n * M[y] * (1 - M[y]))
        assert np.all(np.abs(counts - expected) <= 5 * sd + 1e-9)
        # each row's likelihood is the channel's column of its report
        np.testing.assert_allclose(likelihood, M[:, released].T, rtol=1e-13)


def test_release_does_not_modify_its_input():
    codes = np.array([0, 1, 2, 1])
    prior = np.full((4, 3), 1 / 3)
    rr_with_prior_release(codes, prior, 1.0, np.random.default_rng(0))
    np.testing.assert_array_equal(codes, [0, 1, 2, 1])


# --------------------------------------------- the multi-stage release, exactly
class _CountingPrior(ClassifierMixin, BaseEstimator):
    """Deterministic prior: smoothed label counts among rows with the same x0."""

    def fit(self, X, y):
        X = np.asarray(X)
        self.classes_ = np.unique(y)
        self.table_ = {
            v: np.array(
                [np.sum((X[:, 0] == v) & (y == c)) + 0.5 for c in self.classes_]
            )
            for v in (0.0, 1.0)
        }
        return self

    def predict_proba(self, X):
        rows = np.array([self.table_[float(v)] for v in np.asarray(X)[:, 0]])
        return rows / rows.sum(axis=1, keepdims=True)

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def _release_law(sampler, X, stage, n_classes, epsilon):
    """P(output | labels) for every label vector and output vector (rows and
    columns in ``itertools.product`` order), for a fixed stage split, by the
    chain rule: stage 0 with the uniform prior, stage 1 with the prior the
    estimator learns from stage 0's output."""
    n = X.shape[0]
    first, second = np.flatnonzero(stage == 0), np.flatnonzero(stage == 1)
    vectors = np.array(list(itertools.product(range(n_classes), repeat=n)))
    uniform = rr_with_prior_matrix(np.ones(n_classes), epsilon)
    # law[a, b] = P(output vectors[b] | labels vectors[a])
    law = np.ones((len(vectors), len(vectors)))
    for r in first:
        law *= uniform[vectors[:, r][:, None], vectors[:, r][None, :]]
    channels = {}  # stage 1's channel per row, for each stage-0 output
    for b, out in enumerate(vectors):
        key = tuple(out[first])
        if key not in channels:
            if np.unique(out[first]).size < 2:
                priors = np.full((second.size, n_classes), 1 / n_classes)
            else:
                est = _CountingPrior().fit(X[first], out[first])
                priors = sampler._predict_prior(est, X, second)
            channels[key] = [rr_with_prior_matrix(p, epsilon) for p in priors]
        for r, M in zip(second, channels[key]):
            law[:, b] *= M[vectors[:, r], out[r]]
    return vectors, law


def _sampler(epsilon, seed=0):
    return RandomizedResponseWithPrior(
        epsilon=epsilon,
        prior_estimator=_CountingPrior(),
        stage_shares=(0.5, 0.5),
        classes=[0, 1, 2],
        random_state=seed,
    )


def _splits(n, sizes):
    for first in itertools.combinations(range(n), sizes[0]):
        stage = np.ones(n, dtype=int)
        stage[list(first)] = 0
        yield stage


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_two_stage_release_is_eps_label_dp_by_enumeration(epsilon):
    # n = 4 rows, 3 classes: every label vector, every output, every split
    n, n_classes = 4, 3
    X = np.array([[0.0], [1.0], [0.0], [1.0]])
    sampler = _sampler(epsilon)
    sampler.classes_ = np.arange(n_classes)
    for stage in _splits(n, _stage_sizes(n, (0.5, 0.5))):
        vectors, law = _release_law(sampler, X, stage, n_classes, epsilon)
        np.testing.assert_allclose(law.sum(axis=1), 1.0, rtol=1e-12)
        index = {tuple(v): a for a, v in enumerate(vectors)}
        worst = 0.0
        for a, y in enumerate(vectors):
            for row, other in itertools.product(range(n), range(n_classes)):
                if other == y[row]:
                    continue
                y2 = y.copy()
                y2[row] = other
                pa, pb = law[a], law[index[tuple(y2)]]
                assert np.array_equal(pa == 0, pb == 0)
                both = pa > 0
                worst = max(worst, np.max(np.abs(np.log(pa[both] / pb[both]))))
        assert worst <= epsilon + 1e-12
        assert worst > 0.99 * epsilon  # attained: the bound is tight


def test_sampler_follows_the_enumerated_law():
    # the chain-rule law above is the sampler's: 2,000 releases of one label
    # vector (each with its own split) against the mixture over the 6 splits
    epsilon, n, n_classes, runs = 1.0, 4, 3, 2_000
    X = np.array([[0.0], [1.0], [0.0], [1.0]])
    y = np.array([0, 1, 2, 1])
    sampler = _sampler(epsilon, seed=np.random.default_rng(11))
    sampler.classes_ = np.arange(n_classes)
    splits = list(_splits(n, _stage_sizes(n, (0.5, 0.5))))
    mixture = 0.0
    for stage in splits:
        vectors, law = _release_law(sampler, X, stage, n_classes, epsilon)
        row = [a for a, v in enumerate(vectors) if np.array_equal(v, y)][0]
        mixture = mixture + law[row] / len(splits)
    index = {tuple(v): b for b, v in enumerate(vectors)}
    observed = np.zeros(len(vectors))
    for _ in range(runs):
        observed[index[tuple(sampler.fit_resample(X, y)[1])]] += 1
    expected = mixture * runs
    assert observed[expected == 0].sum() == 0
    # pool the rare outputs so that every chi-square cell expects >= 5
    rare = expected < 5
    obs = np.append(observed[~rare], observed[rare].sum())
    exp = np.append(expected[~rare], expected[rare].sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-4


def test_stage_split_does_not_depend_on_the_labels():
    X = np.random.default_rng(0).uniform(size=(50, 2))
    y1 = np.arange(50) % 3
    y2 = (np.arange(50) + 1) % 3
    s1 = _sampler(1.0, seed=5)
    s1.set_params(prior_estimator=None).fit_resample(X, y1)
    s2 = _sampler(1.0, seed=5)
    s2.set_params(prior_estimator=None).fit_resample(X, y2)
    np.testing.assert_array_equal(s1.stage_, s2.stage_)


# ------------------------------------------------------------------------ audit
def test_audit_one_label_with_a_two_member_set():
    # worst case: a report in S, true label in S vs outside S is 1/k, the ratio
    # keep / other = e^eps is between two members of S
    epsilon, n = 1.0, 200_000
    prior = np.array([0.45, 0.45, 0.05, 0.05])
    assert top_k_sets(prior[None], epsilon)[1][0] == 2

    def draw(label, n_samples, rng):
        released, _, _ = rr_with_prior_release(
            np.full(n_samples, label), np.tile(prior, (n_samples, 1)), epsilon, rng
        )
        return released

    result = audit_mechanism(draw, 0, 1, n_samples=n, random_state=0)
    assert result.epsilon_lower_bound <= epsilon
    assert result.epsilon_lower_bound > 0.9 * epsilon  # the audit sees the bound


@pytest.mark.slow
def test_audit_whole_release_on_neighbouring_label_vectors():
    # the differing row may land in either stage; the statistic is the whole
    # released vector (coded as one integer), any post-processing is allowed
    epsilon, runs = 1.0, 20_000
    X = np.array([[0.0], [1.0], [0.0], [1.0]])
    ya, yb = np.array([0, 1, 2, 1]), np.array([1, 1, 2, 1])
    sampler = _sampler(epsilon, seed=np.random.default_rng(2))

    def draw(labels, n_samples, rng):
        out = np.empty(n_samples)
        for i in range(n_samples):
            released = sampler.fit_resample(X, labels)[1]
            out[i] = released[0] * 27 + released[1] * 9 + released[2] * 3 + released[3]
        return out

    result = audit_mechanism(draw, ya, yb, n_samples=runs, random_state=0)
    assert result.epsilon_lower_bound <= epsilon


# -------------------------------------------------------------------------- API
def _digits(n=600):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return X[:n] / 16, y[:n]


def test_release_attributes_are_consistent():
    X, y = _digits()
    s = RandomizedResponseWithPrior(
        epsilon=1.0, classes=list(range(10)), random_state=0
    )
    X_out, released = s.fit_resample(X, y)
    assert X_out is X
    n = y.size
    assert s.stage_.shape == (n,) and set(np.unique(s.stage_)) == {0, 1}
    np.testing.assert_array_equal(np.bincount(s.stage_), _stage_sizes(n, (0.5, 0.5)))
    # stage 0 is plain RR: uniform prior, the whole domain as set
    np.testing.assert_allclose(s.prior_[s.stage_ == 0], 0.1)
    assert np.all(s.set_size_[s.stage_ == 0] == 10)
    assert np.all(s.set_size_[s.stage_ == 1] <= 10)
    # the prior estimator saw only the first stage's rows
    assert len(s.prior_estimators_) == 1
    assert s.prior_estimators_[0].n_features_in_ == X.shape[1]
    # every likelihood row is the channel column of the row's own prior
    for i in range(0, n, 37):
        M = rr_with_prior_matrix(s.prior_[i], 1.0)
        np.testing.assert_allclose(s.label_likelihood_[i], M[:, released[i]])
    # the prior helps: labels in stage 1 are right more often than in stage 0
    right = released == y
    assert right[s.stage_ == 1].mean() > right[s.stage_ == 0].mean()


def test_one_spend_of_epsilon_for_the_whole_release():
    X, y = _digits(300)
    s = RandomizedResponseWithPrior(
        epsilon=0.7, stage_shares=(0.2, 0.3, 0.5), classes=list(range(10))
    )
    with track_budget() as acc:
        s.fit_resample(X, y)
    assert [spend[1] for spend in acc.spends] == [PrivacyBudget(0.7)]
    assert s.privacy_spent_ == PrivacyBudget(0.7)
    assert len(s.prior_estimators_) == 2


def test_refused_budget_releases_nothing():
    X, y = _digits(100)
    s = RandomizedResponseWithPrior(epsilon=1.0, classes=list(range(10)))
    with track_budget(epsilon=0.5), pytest.raises(BudgetExceededError):
        s.fit_resample(X, y)
    assert not hasattr(s, "label_likelihood_")


def test_infinite_epsilon_releases_the_labels_unchanged():
    X, y = _digits(200)
    s = RandomizedResponseWithPrior(epsilon=np.inf, classes=list(range(10)))
    _, released = s.fit_resample(X, y)
    np.testing.assert_array_equal(released, y)
    np.testing.assert_array_equal(s.label_likelihood_, np.eye(10)[y])


def test_seeds_reproduce_and_differ():
    X, y = _digits(300)
    kw = dict(epsilon=1.0, classes=list(range(10)))
    a = RandomizedResponseWithPrior(**kw, random_state=1).fit_resample(X, y)[1]
    b = RandomizedResponseWithPrior(**kw, random_state=1).fit_resample(X, y)[1]
    c = RandomizedResponseWithPrior(**kw, random_state=2).fit_resample(X, y)[1]
    np.testing.assert_array_equal(a, b)
    assert np.any(a != c)


def test_inputs_are_not_modified():
    X, y = _digits(200)
    X0, y0 = X.copy(), y.copy()
    RandomizedResponseWithPrior(classes=list(range(10)), random_state=0).fit_resample(
        X, y
    )
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_string_labels_dataframe_and_series():
    pd = pytest.importorskip("pandas")
    X, y = _digits(300)
    names = np.array(list("abcdefghij"))
    frame = pd.DataFrame(X, columns=[f"p{i}" for i in range(64)])
    labels = pd.Series(names[y], name="digit")
    s = RandomizedResponseWithPrior(
        epsilon=2.0, classes=list("abcdefghij"), random_state=0
    )
    X_out, released = s.fit_resample(frame, labels)
    assert X_out is frame
    assert isinstance(released, pd.Series) and released.name == "digit"
    assert set(released) <= set("abcdefghij")
    assert list(s.feature_names_in_) == list(frame.columns)


def test_undeclared_classes_warn():
    X, y = _digits(100)
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        RandomizedResponseWithPrior(random_state=0).fit_resample(X, y)


@pytest.mark.parametrize(
    "shares", [(0.5, 0.6), (1.2, -0.2), (), [[0.5, 0.5]], (0.5, np.nan, 0.5)]
)
def test_bad_stage_shares_are_refused(shares):
    X, y = _digits(50)
    s = RandomizedResponseWithPrior(stage_shares=shares, classes=list(range(10)))
    with pytest.raises(ValueError, match="stage_shares"):
        s.fit_resample(X, y)


def test_prior_estimator_without_predict_proba_is_refused():
    from sklearn.svm import LinearSVC

    X, y = _digits(50)
    s = RandomizedResponseWithPrior(
        prior_estimator=LinearSVC(), classes=list(range(10))
    )
    with pytest.raises(ValueError, match="prior_estimator"):
        s.fit_resample(X, y)


class _LikelihoodAwarePrior(ClassifierMixin, BaseEstimator):
    """Records the likelihood it was fitted with; predicts the uniform prior."""

    def __init__(self, classes=None):
        self.classes = classes

    def fit(self, X, y, label_likelihood=None):
        self.classes_ = np.asarray(self.classes)
        self.seen_likelihood_ = label_likelihood
        self.seen_y_ = np.asarray(y)
        return self

    def predict_proba(self, X):
        return np.full((len(X), self.classes_.size), 1 / self.classes_.size)


def test_likelihood_aware_prior_estimator_gets_the_rows_columns():
    X, y = _digits(200)
    s = RandomizedResponseWithPrior(
        epsilon=1.0,
        prior_estimator=_LikelihoodAwarePrior(),
        classes=list(range(10)),
        random_state=0,
    )
    s.fit_resample(X, y)
    est = s.prior_estimators_[0]
    first = s.stage_ == 0
    np.testing.assert_array_equal(est.classes_, np.arange(10))
    np.testing.assert_array_equal(est.seen_likelihood_, s.label_likelihood_[first])
    assert est.seen_y_.size == first.sum()


def test_one_released_class_keeps_the_uniform_prior():
    # two rows: the first stage holds one row, so one class: no classifier fit
    X = np.array([[0.0], [1.0]])
    s = RandomizedResponseWithPrior(
        epsilon=1.0, stage_shares=(0.5, 0.5), classes=[0, 1, 2], random_state=0
    )
    s.fit_resample(X, np.array([0, 1]))
    assert s.prior_estimators_ == [None]
    np.testing.assert_allclose(s.prior_, 1 / 3)


def test_stage_sizes_cover_every_row():
    for n in range(0, 30):
        for shares in [(0.3, 0.7), (0.2, 0.3, 0.5), (1.0,)]:
            sizes = _stage_sizes(n, shares)
            assert sizes.sum() == n
            assert np.all(np.abs(sizes - np.asarray(shares) * n) < 1 + 1e-9)


def test_works_in_a_private_label_classifier():
    from skdp.preprocessing import PrivateLabelClassifier

    X, y = _digits(600)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        clf = PrivateLabelClassifier(
            LogisticRegression(max_iter=1000),
            RandomizedResponseWithPrior(epsilon=2.0, random_state=0),
            classes=list(range(10)),
        ).fit(X, y)
    assert clf.privacy_spent_ == PrivacyBudget(2.0)
    assert clf.score(X, y) > 0.5


def test_private_label_classifier_routes_the_per_row_likelihood():
    # one contract with RandomizedResponse: label_likelihood_ (n, K), columns
    # in classes_ order, goes to a correcting learner's fit
    from skdp.linear_model import LossCorrectedLogisticRegression
    from skdp.preprocessing import PrivateLabelClassifier

    X, y = _digits(400)
    labels = np.array([f"d{v}" for v in range(10)])[y]
    clf = PrivateLabelClassifier(
        LossCorrectedLogisticRegression(),
        RandomizedResponseWithPrior(epsilon=2.0, random_state=0),
        classes=[f"d{v}" for v in range(10)],
    ).fit(X, labels)
    sampler = clf.privatizer_
    assert clf.transition_matrix_ is None  # no single matrix: per-row columns
    _, released = sampler.fit_resample(X, labels)  # same seed: same release
    direct = LossCorrectedLogisticRegression(classes=sampler.classes_).fit(
        X, released, label_likelihood=sampler.label_likelihood_
    )
    np.testing.assert_allclose(clf.estimator_.coef_, direct.coef_, rtol=1e-6)
    np.testing.assert_array_equal(clf.classes_, sampler.classes_)


@pytest.mark.parametrize("routing", [False, True])
def test_pipeline_prior_estimator_gets_the_likelihood(routing):
    # the rule of PrivateLabelClassifier: last step's fit parameter, or routing
    import sklearn
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = _digits(200)
    with sklearn.config_context(enable_metadata_routing=routing):
        last = _LikelihoodAwarePrior()
        if routing:
            last.set_fit_request(label_likelihood=True)
        s = RandomizedResponseWithPrior(
            epsilon=1.0,
            prior_estimator=make_pipeline(StandardScaler(), last),
            classes=list(range(10)),
            random_state=0,
        )
        s.fit_resample(X, y)
    est = s.prior_estimators_[0].steps[-1][1]
    np.testing.assert_array_equal(est.classes_, np.arange(10))
    np.testing.assert_array_equal(
        est.seen_likelihood_, s.label_likelihood_[s.stage_ == 0]
    )


def test_default_prior_converges_on_features_in_raw_units():
    """Issue 39: the default prior standardizes the features, so lbfgs converges
    on raw pixel values (0-16) without a ConvergenceWarning; sparse X too."""
    import warnings

    import scipy.sparse as sp
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning

    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    for features in (X, sp.csr_matrix(X)):
        rr = RandomizedResponseWithPrior(epsilon=2.0, classes=list(range(10)))
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            rr.fit_resample(features, y)
        (prior,) = rr.prior_estimators_
        assert type(prior[0]).__name__ == "StandardScaler"
        assert prior[0].with_mean == (not sp.issparse(features))
