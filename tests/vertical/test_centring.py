"""The vertical estimators centre the declared domain as the central ones do:
each party shifts its own columns (the label party its labels), the server
computes the sensitivity of the centred domain and maps the model back."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from skdp._fm import (
    DataDomain,
    clip_to_domain,
    sensitivity,
    solve_noisy_quadratic,
    sufficient_statistics,
)
from skdp.linear_model import FMLinearRegression, FMLogisticRegression
from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor, _protocol
from skdp.vertical._party import PartyRole
from tests.vertical._data import BACKENDS

# per-feature ranges that exclude 0, a different midpoint for every party
LOWER = np.array([1.0, -3.0, 10.0, 0.0, -6.0])
UPPER = np.array([3.0, -1.0, 50.0, 1.0, -2.0])
Y_BOUNDS = (100.0, 140.0)
PARTS = [[0, 3], [1], [2, 4]]


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(LOWER - 0.5, UPPER + 0.5, (n, 5))  # some rows outside: clipped
    y = 120 + X @ [2.0, -1.0, 0.2, 3.0, 0.5] + rng.normal(0, 3, n)
    return X, y


def _uncentred_fit(X, y, objective, y_bounds=None):
    """The exact minimizer on the declared (uncentred) domain."""
    dom = DataDomain(5, lower=LOWER, upper=UPPER, y_bounds=y_bounds, fit_intercept=True)
    s = dom.intercept_scaling
    Xc, yc = clip_to_domain(X, y, objective, dom)
    A, b = sufficient_statistics(
        Xc, yc, objective, fit_intercept=True, intercept_scaling=s
    )
    w = solve_noisy_quadratic(A, b)
    return w[:-1], w[-1] * s


def test_regressor_at_eps_inf_equals_central_and_uncentred_fit():
    X, y = _data()
    kw = dict(epsilon=np.inf, bounds_X=(LOWER, UPPER), bounds_y=Y_BOUNDS)
    vertical = VerticalFMRegressor(partition=PARTS, label_party=2, **kw).fit(X, y)
    # central and vertical: the same default post-processing ("eb")
    central = FMLinearRegression(**kw).fit(X, y)
    np.testing.assert_array_equal(vertical.offset_X_, central.offset_X_)
    assert vertical.offset_y_ == central.offset_y_ == 120.0
    np.testing.assert_allclose(vertical.coef_, central.coef_, rtol=1e-10)
    assert vertical.intercept_ == pytest.approx(central.intercept_, rel=1e-10)
    coef, intercept = _uncentred_fit(X, y, "squared", Y_BOUNDS)
    np.testing.assert_allclose(vertical.coef_, coef, rtol=1e-8)
    assert vertical.intercept_ == pytest.approx(intercept, rel=1e-8)
    # OLS on the clipped data, in the user's units (predictions clipped to
    # the label range, as predict does)
    Xc = np.clip(X, LOWER, UPPER)
    ols = LinearRegression().fit(Xc, np.clip(y, *Y_BOUNDS))
    np.testing.assert_allclose(
        vertical.predict(Xc), np.clip(ols.predict(Xc), *Y_BOUNDS), rtol=1e-9
    )
    np.testing.assert_array_equal(vertical.bounds_[0], LOWER)
    assert vertical.bounds_y_ == Y_BOUNDS


def test_classifier_at_eps_inf_equals_central_and_uncentred_fit():
    X, y = _data()
    labels = (y > np.median(y)).astype(int)
    kw = dict(epsilon=np.inf, bounds_X=(LOWER, UPPER), classes=[0, 1])
    vertical = VerticalFMClassifier(partition=PARTS, label_party=1, **kw)
    vertical.fit(X, labels)
    central = FMLogisticRegression(**kw).fit(X, labels)
    # the central sums are exact on a grid of 2^-36 of each bound (a value moves
    # by < 2^-35 of it), the vertical ones are float sums: the coefficients
    # agree to ~1e-10 of the largest, not of each (one is 100 times smaller)
    atol = 1e-10 * np.abs(central.coef_).max()
    np.testing.assert_allclose(vertical.coef_, central.coef_, rtol=1e-10, atol=atol)
    assert vertical.intercept_ == pytest.approx(central.intercept_, rel=1e-10)
    assert vertical.offset_y_ == 0.0  # 0/1 labels are not shifted
    coef, intercept = _uncentred_fit(X, labels.astype(float), "logistic_taylor")
    np.testing.assert_allclose(vertical.coef_, coef, rtol=1e-8)
    assert vertical.intercept_ == pytest.approx(intercept, rel=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_dealer_noise_release_equals_central(backend, mechanism):
    X, y = _data()
    # bfv's fixed point is exact on rows whose mapped values (x - m) / h (the
    # box mapped to [-1, 1]) and labels lie on a grid of 1/256
    mid, half = (LOWER + UPPER) / 2, (UPPER - LOWER) / 2
    X = mid + half * (np.round((X - mid) / half * 256) / 256)
    y = np.round(y * 256) / 256
    kw = dict(
        epsilon=1.0,
        delta=1e-5 if mechanism == "gaussian" else 0.0,
        mechanism=mechanism,
        bounds_X=(LOWER, UPPER),
        bounds_y=Y_BOUNDS,
        linear_weight=0.5,  # a power of two keeps the bfv fixed point exact
        random_state=3,
    )
    # central and vertical: the same default post-processing ("eb")
    central = FMLinearRegression(**kw).fit(X, y)
    vertical = VerticalFMRegressor(
        partition=PARTS, noise_generation="dealer", secure_backend=backend, **kw
    ).fit(X, y)
    assert vertical.sensitivity_ == central.sensitivity_
    np.testing.assert_allclose(vertical.coef_, central.coef_, rtol=0, atol=1e-8)
    assert abs(vertical.intercept_ - central.intercept_) <= 1e-8 * 120


@pytest.mark.parametrize("estimator", ["regressor", "classifier"])
def test_centring_strictly_shrinks_the_sensitivity(estimator):
    X, y = _data()
    kw = dict(
        epsilon=1.0,
        bounds_X=(LOWER, UPPER),
        linear_weight=1.0,
        partition=PARTS,
        random_state=0,
    )
    if estimator == "regressor":
        est = VerticalFMRegressor(bounds_y=Y_BOUNDS, **kw).fit(X, y)
        objective, y_bounds = "squared", Y_BOUNDS
    else:
        y = (y > np.median(y)).astype(int)
        est = VerticalFMClassifier(classes=[0, 1], **kw).fit(X, y)
        objective, y_bounds = "logistic_taylor", None
    declared = DataDomain(
        5,
        lower=LOWER,
        upper=UPPER,
        y_bounds=y_bounds,
        fit_intercept=True,
        intercept_scaling=50.0,
    )
    # centred and mapped to [-1, 1]: every feature's range is (-1, 1)
    centred = DataDomain(
        5,
        lower=-np.ones(5),
        upper=np.ones(5),
        fit_intercept=True,
        intercept_scaling=1.0,
        y_bounds=None if y_bounds is None else (-20.0, 20.0),
    )
    expected = sensitivity(objective, centred, linear_weight=1.0)
    assert est.sensitivity_.l1 == pytest.approx(expected.l1, rel=1e-12)
    assert est.sensitivity_.l1 < sensitivity(objective, declared, linear_weight=1.0).l1
    # every party's share shrinks with it, and none exceeds the whole epsilon
    assert np.all(est.party_privacy_ <= 1.0)


@pytest.mark.parametrize(
    "bounds, data_norm, kept",
    [
        ((-0.1, 0.9), 1.0, "centred box"),
        ((-0.5, 0.5), 1.0, "box alone (no shift)"),
        ((-0.1, 0.9), 0.5, "declared box and norm"),
    ],
)
def test_box_with_norm_makes_the_central_choice(bounds, data_norm, kept):
    """A box containing 0 declared with a norm: the server keeps whichever
    description the central estimator keeps (release_cost), every party clips to
    it, and with dealer noise the models agree."""
    rng = np.random.default_rng(1)
    # inside every party's share of the ball (||x_k|| <= R sqrt(1/2)), where
    # the parties' block-norm clipping is the central row-norm clipping
    X = rng.uniform(-0.2, 0.6, (300, 4)) / 4
    y = X.sum(axis=1) + rng.normal(0, 0.1, 300)
    kw = dict(
        epsilon=1.0,
        bounds_X=bounds,
        data_norm=data_norm,
        bounds_y=(0.0, 2.0),
        linear_weight=0.5,
        random_state=2,
    )
    # central and vertical: the same default post-processing ("eb")
    central = FMLinearRegression(**kw).fit(X, y)
    vertical = VerticalFMRegressor(
        partition=[[0, 1], [2, 3]], noise_generation="dealer", **kw
    ).fit(X, y)
    assert (central.offset_X_ is not None) == (kept == "centred box")
    assert (central.data_norm_ is None) == (kept != "declared box and norm")
    assert vertical.data_norm_ == central.data_norm_
    assert vertical.sensitivity_ == central.sensitivity_
    if central.offset_X_ is None:
        assert vertical.offset_X_ is None
    else:
        np.testing.assert_array_equal(vertical.offset_X_, central.offset_X_)
    np.testing.assert_allclose(vertical.coef_, central.coef_, rtol=0, atol=1e-8)
    assert abs(vertical.intercept_ - central.intercept_) <= 1e-8


def test_party_refuses_a_domain_that_is_not_its_declaration():
    X, y = _data(20)
    party = PartyRole(
        0,
        [0, 3],
        X[:, [0, 3]],
        n_features=5,
        lower=LOWER[[0, 3]],
        upper=UPPER[[0, 3]],
        labels=y,
        y_bounds=Y_BOUNDS,
    )
    mid = 0.5 * (LOWER[[0, 3]] + UPPER[[0, 3]])
    good = dict(
        x_offset=mid,
        lower=LOWER[[0, 3]] - mid,
        upper=UPPER[[0, 3]] - mid,
        data_norm=None,
        y_offset=120.0,
        y_bounds=[-20.0, 20.0],
    )
    bad = [
        dict(good, x_offset=mid + 1, lower=LOWER[[0, 3]] - mid - 1),
        dict(good, lower=LOWER[[0, 3]] - mid - 1),  # wider than declared
        dict(good, y_bounds=[-30.0, 30.0]),
        dict(good, y_offset=0.0),
        dict(good, data_norm=5.0),
    ]
    for dom in bad:
        with pytest.raises(ValueError, match="refuses the plan's domain"):
            party._clip_to_plan(dom)
    party._clip_to_plan(good)
    np.testing.assert_array_equal(
        party._X, np.clip(X[:, [0, 3]] - mid, LOWER[[0, 3]] - mid, UPPER[[0, 3]] - mid)
    )
    np.testing.assert_array_equal(party._labels, np.clip(y - 120.0, -20.0, 20.0))
    # the box mapped to [-1, 1]: the party's own half-widths, or refused
    half = 0.5 * (UPPER[[0, 3]] - LOWER[[0, 3]])
    ones = np.ones(2)
    scaled = dict(good, x_scale=half, lower=-ones, upper=ones)
    for dom in (
        dict(scaled, x_scale=half * 2),  # rows shrunk: not its declaration
        dict(scaled, x_scale=half / 2, lower=-2 * ones, upper=2 * ones),
        dict(scaled, x_scale=np.ones(3)),  # wrong length
        dict(good, x_scale=half),  # scaled, but the unscaled box
    ):
        with pytest.raises(ValueError, match="refuses the plan's domain"):
            party._clip_to_plan(dom)
    party._clip_to_plan(scaled)
    np.testing.assert_array_equal(
        party._X, np.clip((X[:, [0, 3]] - mid) / half, -1.0, 1.0)
    )


def _released(X, y, domain):
    """The server's noisy ``(upper triangle of A, c b)`` of a dealer-noise run."""
    run = _protocol.run_in_process(
        X,
        y,
        objective="squared",
        partition=[np.asarray(p) for p in PARTS],
        label_party=0,
        domain=domain,
        epsilon=1.0,
        delta=0.0,
        mechanism="laplace",
        budget="top-down",
        party_epsilon=None,
        pairwise_epsilon=None,
        linear_weight=0.5,
        postprocessing="ridge",
        backend="plaintext",
        noise_generation="dealer",
        rng=np.random.default_rng(0),
    )
    server = run.roles["server"]
    return np.concatenate([server._upper, server._lin]), run.plan


def test_neighbours_change_the_release_by_at_most_the_centred_sensitivity():
    """Brute force over neighbours at the corners of the declared box and label
    range (far from 0): with the same dealer noise the releases differ by the
    exact statistics, which must stay within the (centred) sensitivity. Parties
    clipping to their unshifted declared boxes reach 1.9 times it here."""
    X, y = _data(50)
    declared = DataDomain(
        5,
        lower=LOWER,
        upper=UPPER,
        y_bounds=Y_BOUNDS,
        fit_intercept=True,
        intercept_scaling=50.0,
    )
    base, plan = _released(X, y, declared)
    sens = plan.sensitivity
    gran = plan.top_mechanism.granularity
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(12):
        corner = np.where(rng.random(5) < 0.5, LOWER, UPPER)
        for a, b in [(LOWER, UPPER), (corner, LOWER + UPPER - corner)]:
            for ya, yb in [(Y_BOUNDS[0], Y_BOUNDS[1]), (Y_BOUNDS[1], Y_BOUNDS[1])]:
                Xa, ya_ = X.copy(), y.copy()
                Xa[0], ya_[0] = a, ya
                Xb, yb_ = X.copy(), y.copy()
                Xb[0], yb_[0] = b, yb
                diff = np.abs(
                    _released(Xa, ya_, declared)[0] - _released(Xb, yb_, declared)[0]
                )
                worst = max(worst, float(diff.sum()))
    assert worst <= sens.l1 + diff.size * gran
    assert worst > 0.5 * sens.l1  # the brute force reaches the bound's order (0.58)
    # the uncentred sensitivity is larger than anything a centred party releases
    uncentred = sensitivity("squared", declared, linear_weight=0.5).l1
    assert sens.l1 < uncentred
