"""VerticalFMRegressor / VerticalFMClassifier: equivalence, privacy report,
budgets and errors."""

import sys

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from skdp.exceptions import PrivacyLeakWarning
from skdp.linear_model import FMLinearRegression, FMLogisticRegression
from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor
from tests.vertical._data import BACKENDS, classification, regression


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "domain",
    [
        {"bounds_X": (-1, 1)},
        {"data_norm": 1.0},
        # ranges that exclude 0: every party and the labels are centred
        {"bounds_X": (2, 4), "bounds_y": (9, 11)},
    ],
)
def test_regressor_equals_centralized_with_identical_noise(backend, domain):
    X, y, parts = regression()
    domain = {"bounds_y": (-1, 1), **domain}
    if domain["bounds_y"] == (9, 11):
        X, y = X + 3, y + 10
    common = dict(epsilon=1.0, linear_weight=0.5, random_state=7, **domain)
    # central and vertical: the same default post-processing ("eb")
    central = FMLinearRegression(**common).fit(X, y)
    vertical = VerticalFMRegressor(
        partition=parts,
        label_party=1,
        noise_generation="dealer",
        secure_backend=backend,
        **common,
    ).fit(X, y)
    np.testing.assert_allclose(vertical.coef_, central.coef_, rtol=0, atol=1e-8)
    assert abs(vertical.intercept_ - central.intercept_) <= 1e-8
    assert vertical.privacy_spent_ == central.privacy_spent_
    assert vertical.sensitivity_ == central.sensitivity_
    assert vertical.offset_y_ == central.offset_y_ == sum(domain["bounds_y"]) / 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_classifier_equals_centralized_with_identical_noise(backend):
    X, y, parts = classification()
    common = dict(
        epsilon=2.0, data_norm=1.0, linear_weight=0.5, random_state=3, classes=[0, 1]
    )
    central = FMLogisticRegression(**common).fit(X, y)
    vertical = VerticalFMClassifier(
        partition=[parts[2], parts[0], parts[1]],  # any order of parties
        noise_generation="dealer",
        secure_backend=backend,
        **common,
    ).fit(X, y)
    np.testing.assert_allclose(vertical.coef_, central.coef_, rtol=0, atol=1e-8)
    np.testing.assert_array_equal(vertical.predict(X), central.predict(X))


def test_gaussian_mechanism_equivalence():
    X, y, parts = regression()
    common = dict(
        epsilon=1.0,
        delta=1e-5,
        mechanism="gaussian",
        data_norm=1.0,
        bounds_y=(-1, 1),
        linear_weight=0.5,
        random_state=11,
    )
    # central and vertical: the same default post-processing ("eb")
    central = FMLinearRegression(**common).fit(X, y)
    vertical = VerticalFMRegressor(
        partition=parts, noise_generation="dealer", **common
    ).fit(X, y)
    np.testing.assert_allclose(vertical.coef_, central.coef_, rtol=0, atol=1e-8)


@pytest.mark.parametrize("K", [1, 2, 6])
def test_epsilon_inf_is_the_exact_centralized_fit(K):
    X, y, _ = regression()
    central = FMLinearRegression(
        epsilon=np.inf, bounds_X=(-1, 1), bounds_y=(-1, 1), linear_weight=0.5
    )
    vertical = VerticalFMRegressor(
        epsilon=np.inf,
        bounds_X=(-1, 1),
        bounds_y=(-1, 1),
        linear_weight=0.5,
        n_parties=K,
    )
    central.fit(X, y)
    vertical.fit(X, y)
    np.testing.assert_allclose(vertical.coef_, central.coef_, rtol=1e-9, atol=1e-10)
    assert vertical.n_parties_ == K


def test_distributed_noise_same_seed_same_model_and_inputs_unchanged():
    X, y, parts = regression()
    X0, y0 = X.copy(), y.copy()
    kw = dict(
        epsilon=1.0, data_norm=1.0, bounds_y=(-1, 1), linear_weight=0.5, partition=parts
    )
    a = VerticalFMRegressor(random_state=5, **kw).fit(X, y)
    b = VerticalFMRegressor(random_state=5, **kw).fit(X, y)
    c = VerticalFMRegressor(random_state=6, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.allclose(a.coef_, c.coef_)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_party_privacy_matches_hand_computed_ratio():
    # box |x_j| <= 1, logistic, no intercept, c = 1, d = 5 split 2 / 3, label at 0:
    # Delta = d^2/8 + d; Delta_k = d_k + d_k (2d - d_k)/8 for a party without the
    # label, Delta_label = d + d_L (2d - d_L)/8 (the seed's formula with the
    # released A_jk = x_j x_k / 8 instead of monomial coefficients 2 A_jk)
    X, y, _ = classification(n=400, d=5, K=2)
    est = VerticalFMClassifier(
        epsilon=1.5,
        bounds_X=(-1, 1),
        fit_intercept=False,
        linear_weight=1.0,
        partition=[[0, 1], [2, 3, 4]],
        label_party=0,
        classes=[0, 1],
    ).fit(X, y)
    d = 5
    delta = d * d / 8 + d
    expected = np.array([d + 2 * (2 * d - 2) / 8, 3 + 3 * (2 * d - 3) / 8]) / delta
    np.testing.assert_allclose(est.party_privacy_, 1.5 * expected, rtol=1e-6)
    assert np.all(est.party_privacy_ <= est.privacy_spent_.epsilon)


def test_party_privacy_under_a_norm_bound_is_smaller_than_epsilon():
    X, y, parts = regression(d=8, K=4)
    est = VerticalFMRegressor(
        epsilon=1.0, data_norm=1.0, bounds_y=(-1, 1), linear_weight=0.5, partition=parts
    ).fit(X, y)
    assert np.all(est.party_privacy_ < 1.0)
    # the label party carries every linear coefficient: the least private
    assert est.party_privacy_.argmax() == 0


def test_gaussian_party_privacy_is_below_epsilon():
    X, y, parts = regression()
    est = VerticalFMRegressor(
        epsilon=1.0,
        delta=1e-5,
        mechanism="gaussian",
        data_norm=1.0,
        bounds_y=(-1, 1),
        linear_weight=0.5,
        partition=parts,
    ).fit(X, y)
    # under a row-norm bound the L2 sensitivity does not grow with the number
    # of coordinates, so the ratio is close to 1 (the label party's is 1)
    assert np.all((est.party_privacy_ > 0) & (est.party_privacy_ <= 1.0))
    assert np.all(est.party_privacy_[1:] < 1.0)


def test_bottom_up_budgets_compose_as_specified():
    X, y, parts = regression(K=3)
    totals = np.array([1.0, 0.8, 0.6])
    pairs = np.array([[0.0, 0.3, 0.2], [0.3, 0.0, 0.1], [0.2, 0.1, 0.0]])
    est = VerticalFMRegressor(
        budget="bottom-up",
        party_epsilon=totals,
        pairwise_epsilon=pairs,
        data_norm=1.0,
        bounds_y=(-1, 1),
        linear_weight=0.5,
        partition=parts,
        random_state=0,
    ).fit(X, y)
    local = totals - pairs.sum(axis=1)  # eps^k = eps^(k) - sum_l eps^kl
    np.testing.assert_allclose(
        [est.group_epsilon_[("local", k)] for k in range(3)], local
    )
    assert est.group_epsilon_[("pair", 0, 2)] == 0.2
    np.testing.assert_allclose(est.party_privacy_, totals)
    assert est.privacy_spent_.epsilon == pytest.approx(local.sum() + 0.6)


def test_top_down_groups_all_use_epsilon():
    X, y, parts = regression()
    est = VerticalFMRegressor(
        epsilon=0.7, data_norm=1.0, bounds_y=(-1, 1), linear_weight=0.5, partition=parts
    ).fit(X, y)
    assert set(est.group_epsilon_.values()) == {0.7}


@pytest.mark.parametrize(
    "params, match",
    [
        ({"partition": [[0, 1, 2], [2, 3, 4, 5]]}, "overlapping"),
        ({"partition": [[0, 1], [2, 3, 4]]}, "missing"),
        ({"partition": [[0, 1, 2, 3, 4, 5], []]}, "empty party"),
        ({"partition": [[0, 1, 2], [3, 4, 5]], "label_party": 2}, "out of range"),
        ({"budget": "bottom-up"}, "party_epsilon"),
        (
            {
                "budget": "bottom-up",
                "partition": [[0, 1, 2], [3, 4, 5]],
                "party_epsilon": [1.0, 1.0],
                "pairwise_epsilon": [[0, 0.5], [0.4, 0]],
            },
            "inconsistent bottom-up budgets.*symmetric",
        ),
        (
            {
                "budget": "bottom-up",
                "partition": [[0, 1, 2], [3, 4, 5]],
                "party_epsilon": [1.0, 0.5],
                "pairwise_epsilon": [[0, 0.5], [0.5, 0]],
            },
            "inconsistent bottom-up budgets.*party 1",
        ),
        ({"party_epsilon": [1.0, 1.0]}, "only used with"),
        ({"mechanism": "gaussian"}, "delta"),
    ],
)
def test_bad_input(params, match):
    X, y, _ = regression()
    est = VerticalFMRegressor(
        data_norm=1.0, bounds_y=(-1, 1), linear_weight=0.5, **params
    )
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    assert not hasattr(est, "coef_")


def test_bfv_without_tenseal_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tenseal", None)
    monkeypatch.setitem(sys.modules, "tenseal.sealapi", None)
    X, y, _ = regression()
    est = VerticalFMRegressor(
        data_norm=1.0, bounds_y=(-1, 1), linear_weight=0.5, secure_backend="bfv"
    )
    with pytest.raises(ImportError, match=r'"secure" extra: pip install "tenseal'):
        est.fit(X, y)


def test_partition_by_feature_names():
    pd = pytest.importorskip("pandas")
    X, y, _ = regression(d=4, K=2)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "e"])
    est = VerticalFMRegressor(
        epsilon=np.inf,
        data_norm=1.0,
        bounds_y=(-1, 1),
        linear_weight=0.5,
        partition=[["e", "a"], ["b", "c"]],
    ).fit(frame, y)
    assert [p.tolist() for p in est.partition_] == [[0, 3], [1, 2]]


def test_grid_search_over_epsilon():
    X, y, parts = regression(n=600)
    search = GridSearchCV(
        VerticalFMRegressor(
            data_norm=1.0,
            bounds_y=(-1, 1),
            linear_weight=0.5,
            partition=parts,
            random_state=0,
        ),
        {"epsilon": [0.5, 5.0, np.inf]},
        cv=3,
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 3
    assert search.best_params_["epsilon"] in (0.5, 5.0, np.inf)
    assert (
        search.best_estimator_.privacy_spent_.epsilon == search.best_params_["epsilon"]
    )


def test_classifier_labels_and_proba():
    X, y, parts = classification()
    labels = np.where(y == 1, "yes", "no")
    clf = VerticalFMClassifier(
        epsilon=5.0, data_norm=1.0, linear_weight=0.5, partition=parts
    )
    with pytest.warns(PrivacyLeakWarning, match="classes was not declared"):
        clf.fit(X, labels)  # the labels taken from the data: warned
    assert clf.classes_.tolist() == ["no", "yes"]
    proba = clf.predict_proba(X[:5])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # three labels: one multinomial release (tests/vertical/test_multinomial.py)
    with pytest.warns(PrivacyLeakWarning, match="classes was not declared"):
        clf.fit(X, np.arange(X.shape[0]) % 3)
    assert clf.classes_.tolist() == [0, 1, 2]
    assert clf.coef_.shape == (3, X.shape[1])


@pytest.mark.parametrize("budget", ["top-down", "bottom-up"])
def test_a_refused_budget_stops_the_protocol_before_any_message(budget, monkeypatch):
    from skdp.accounting import track_budget
    from skdp.exceptions import BudgetExceededError
    from skdp.vertical import _protocol

    def must_not_run(*args, **kwargs):
        raise AssertionError("the protocol ran although the budget was refused")

    monkeypatch.setattr(_protocol, "run_in_process", must_not_run)
    X, y, parts = regression(K=3)
    params = dict(data_norm=1.0, bounds_y=(-1, 1), partition=parts, random_state=0)
    if budget == "bottom-up":  # spends 2.4 - 0.6 = 1.8 in all
        params.update(
            budget="bottom-up",
            party_epsilon=np.array([1.0, 0.8, 0.6]),
            pairwise_epsilon=np.array([[0, 0.3, 0.2], [0.3, 0, 0.1], [0.2, 0.1, 0]]),
        )
    est = VerticalFMRegressor(epsilon=1.0, **params)
    with track_budget(epsilon=0.5) as tracker, pytest.raises(BudgetExceededError):
        est.fit(X, y)
    assert tracker.spends == []
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("verbose, lines_at_least", [(0, 0), (1, 4), (2, 10)])
def test_verbose_reports_the_protocol_on_stderr(verbose, lines_at_least, capsys):
    X, y, parts = regression(K=3)
    VerticalFMRegressor(
        data_norm=1.0,
        bounds_y=(-1, 1),
        partition=parts,
        random_state=0,
        verbose=verbose,
    ).fit(X, y)
    err = capsys.readouterr().err.splitlines()
    if verbose == 0:
        assert err == []
    else:
        assert len(err) >= lines_at_least
        assert all(line.startswith("skdp vertical: ") for line in err)
        assert any("'release'" in line or "release:" in line for line in err)


@pytest.mark.parametrize(
    "postprocessing, generation",
    [
        ("average", "dealer"),
        ("average", "threshold"),
        ("eb", "dealer"),
        ("eb", "threshold"),
        ("ridge", "dealer"),
        ("trim", "dealer"),
    ],
)
def test_postprocessing_options_and_default_match_the_central_estimator(
    postprocessing, generation
):
    """Issue 35 item 4: the vertical regressor takes the central one's
    post-processing options and default ("average"), and solves the server's noisy
    statistics as the central estimator solves its own: with dealer noise
    the same model; with threshold shares the server's own statistics solved
    by the central code."""
    from skdp._fm import solve_release
    from skdp._fm.domain import DataDomain, symmetric_from_triu
    from skdp.vertical import _protocol

    assert VerticalFMRegressor().postprocessing == "average"
    assert FMLinearRegression().postprocessing == "average"
    assert VerticalFMClassifier().postprocessing == "ridge"
    assert FMLogisticRegression().postprocessing == "ridge"
    X, y, parts = regression()
    common = dict(
        epsilon=1.0,
        bounds_X=(-1, 1),
        bounds_y=(-1, 1),
        linear_weight=0.5,
        random_state=5,
        postprocessing=postprocessing,
    )
    if generation == "dealer":
        vertical = VerticalFMRegressor(
            partition=parts, noise_generation=generation, **common
        ).fit(X, y)
        central = FMLinearRegression(**common).fit(X, y)
        np.testing.assert_allclose(vertical.coef_, central.coef_, rtol=0, atol=1e-8)
        assert abs(vertical.intercept_ - central.intercept_) <= 1e-8
        return
    # threshold shares: the server's released statistics, solved by the
    # central estimator's code, give the server's model
    domain = DataDomain(
        X.shape[1], lower=-1.0, upper=1.0, y_bounds=(-1.0, 1.0), fit_intercept=True
    )
    run = _protocol.run_in_process(
        X,
        y,
        objective="squared",
        partition=[np.asarray(p) for p in parts],
        label_party=0,
        domain=domain,
        epsilon=1.0,
        delta=0.0,
        mechanism="laplace",
        budget="top-down",
        party_epsilon=None,
        pairwise_epsilon=None,
        linear_weight=0.5,
        postprocessing="eb",
        backend="plaintext",
        noise_generation="threshold",
        rng=np.random.default_rng(5),
    )
    server, plan = run.roles["server"], run.plan
    A_hat = symmetric_from_triu(server._upper, plan.n_coef)
    noise_std, noise_std_b = plan.noise_std("threshold")
    coef, intercept = solve_release(
        A_hat,
        server._lin / 0.5,
        "squared",
        plan.domain,
        noise_std=noise_std,
        noise_std_b=noise_std_b / 0.5,
        n=len(y),
        method="eb",
    )
    np.testing.assert_array_equal(run.model["coef"], coef)
    assert run.model["intercept"] == intercept
    # and the estimator runs the same protocol (the same model for its seed)
    vertical = VerticalFMRegressor(
        partition=parts, noise_generation=generation, **common
    ).fit(X, y)
    assert np.all(np.isfinite(vertical.coef_))
