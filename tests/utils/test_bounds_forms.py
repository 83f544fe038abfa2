"""Per-feature bounds in every form people write (issue 39).

``bounds_X`` (and ``envelope``) accept a tuple ``(lower, upper)``, a list or
array of ``(lo, hi)`` pairs, and a dict by column name (X a DataFrame) or by
feature index; :func:`skdp.utils.check_bounds` reads them all, so every
estimator gives bit for bit the model of the equivalent tuple form (the suite
runs with reproducible noise), and the parameter itself is never rewritten.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone, is_regressor
from sklearn.utils._param_validation import InvalidParameterError

from skdp.cluster import PrivateKMeans
from skdp.decomposition import PrivatePCA
from skdp.linear_model import (
    FMLinearRegression,
    FMLogisticRegression,
    OPLogisticRegression,
    PrivateLogisticRegression,
)
from skdp.naive_bayes import PrivateGaussianNB
from skdp.preprocessing import (
    PrivateBoundsEstimator,
    PrivateMinMaxScaler,
    PrivateStandardScaler,
)
from skdp.tree import PrivateDecisionTreeClassifier
from skdp.utils import check_bounds

COLUMNS = ["age", "hours", "share"]
LOWER = [18.0, 0.0, -1.0]
UPPER = [90.0, 80.0, 1.0]
TUPLE = (LOWER, UPPER)
PAIRS = [(18, 90), (0, 80), (-1, 1)]
BY_NAME = {"share": (-1, 1), "age": (18, 90), "hours": (0, 80)}
BY_INDEX = {2: (-1, 1), 0: (18, 90), 1: (0, 80)}
FORMS = {
    "list of pairs": PAIRS,
    "tuple of pairs": tuple(PAIRS),
    "array of pairs": np.array(PAIRS, dtype=float),
    "dict by name": BY_NAME,
    "dict by index": BY_INDEX,
}
ACCEPTED = r"Accepted forms of bounds_X: a tuple \(lower, upper\).*list.*dict"


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    n = 300
    X = np.column_stack(
        [rng.uniform(18, 90, n), rng.uniform(0, 80, n), rng.uniform(-1, 1, n)]
    )
    y = X @ [0.02, 0.01, 1.0] + rng.normal(0, 0.2, n)
    return pd.DataFrame(X, columns=COLUMNS), y, (y > np.median(y)).astype(int)


def _fitted(make, form, data, attrs):
    X, y_reg, y_clf = data
    est = make(form)
    before = est.get_params()["bounds_X"]
    supervised = not hasattr(est, "transform")
    target = y_reg if is_regressor(est) else y_clf
    est.fit(X, target) if supervised else est.fit(X)
    # the parameter is stored and returned as given, and clones
    assert est.get_params()["bounds_X"] is before
    assert clone(est).get_params()["bounds_X"] is not None
    return [np.asarray(getattr(est, a)) for a in attrs]


ESTIMATORS = {
    "FMLinearRegression": (
        lambda b: FMLinearRegression(
            epsilon=1.0, bounds_X=b, bounds_y=(-3, 6), random_state=0
        ),
        ["coef_", "intercept_"],
    ),
    "FMLogisticRegression": (
        lambda b: FMLogisticRegression(
            epsilon=1.0, bounds_X=b, classes=[0, 1], random_state=0
        ),
        ["coef_", "intercept_"],
    ),
    "OPLogisticRegression": (
        lambda b: OPLogisticRegression(
            epsilon=1.0, bounds_X=b, classes=[0, 1], random_state=0
        ),
        ["coef_", "intercept_"],
    ),
    "PrivateLogisticRegression": (
        lambda b: PrivateLogisticRegression(
            epsilon=1.0, bounds_X=b, classes=[0, 1], random_state=0
        ),
        ["coef_", "intercept_"],
    ),
    "PrivateStandardScaler": (
        lambda b: PrivateStandardScaler(epsilon=1.0, bounds_X=b, random_state=0),
        ["mean_", "scale_"],
    ),
    "PrivateMinMaxScaler": (
        lambda b: PrivateMinMaxScaler(epsilon=1.0, bounds_X=b, random_state=0),
        ["data_range_", "bounds_"],
    ),
    "PrivatePCA": (
        lambda b: PrivatePCA(n_components=2, epsilon=1.0, bounds_X=b, random_state=0),
        ["components_", "mean_"],
    ),
    "PrivateGaussianNB": (
        lambda b: PrivateGaussianNB(
            epsilon=1.0, bounds_X=b, classes=[0, 1], random_state=0
        ),
        ["theta_", "var_", "class_prior_"],
    ),
    "PrivateKMeans": (
        lambda b: PrivateKMeans(3, epsilon=1.0, bounds_X=b, random_state=0),
        ["cluster_centers_", "initial_centers_"],
    ),
    "PrivateDecisionTreeClassifier": (
        lambda b: PrivateDecisionTreeClassifier(
            epsilon=1.0, bounds_X=b, classes=[0, 1], random_state=0
        ),
        ["threshold_", "leaf_counts_"],
    ),
}


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_form_gives_the_tuple_forms_model_bit_for_bit(name, form, data):
    make, attrs = ESTIMATORS[name]
    expected = _fitted(make, TUPLE, data, attrs)
    got = _fitted(make, FORMS[form], data, attrs)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)


def test_envelope_takes_the_same_forms(data):
    X, _, y = data

    def fit(envelope):
        est = PrivateBoundsEstimator(
            OPLogisticRegression(epsilon=2.0, classes=[0, 1], random_state=0),
            envelope=envelope,
            random_state=0,
        ).fit(X, y)
        return est.estimator_.coef_, est.bounds_

    coef, bounds = fit(TUPLE)
    for form in (PAIRS, BY_NAME):
        got_coef, got_bounds = fit(form)
        np.testing.assert_array_equal(got_coef, coef)
        np.testing.assert_array_equal(got_bounds, bounds)


def test_statistics_read_a_dict_by_name_from_the_columns(data):
    """The split-fit path (statistics, fit_statistics) reads the names too,
    and a DataFrame with the columns in another order gets its own domain."""
    X, y, _ = data
    make = ESTIMATORS["FMLinearRegression"][0]
    expected = make(TUPLE).fit(X, y).coef_
    est = make(BY_NAME)
    got = est.fit_statistics(est.statistics(X, y)).coef_
    np.testing.assert_array_equal(got, expected)
    reordered = X[["share", "age", "hours"]]
    stats = est.statistics(reordered, y)
    box = make(([-1, 18, 0], [1, 90, 80])).statistics(reordered.to_numpy(), y)
    np.testing.assert_array_equal(stats.A, box.A)


def test_check_bounds_reads_each_form():
    expected = (np.array(LOWER), np.array(UPPER))
    for form in [TUPLE, *FORMS.values()]:
        got = check_bounds(form, 3, name="bounds_X", feature_names=COLUMNS)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
    # scalars broadcast, as before
    lower, upper = check_bounds((0, 1), 3)
    np.testing.assert_array_equal(upper, [1, 1, 1])


def test_two_features_tuple_is_lower_upper_and_list_is_pairs():
    """With 2 features a length-2 sequence of pairs is ambiguous: a tuple is
    ``(lower, upper)`` (the documented form), a list one pair per feature."""
    lower, upper = check_bounds(([0, 1], [2, 3]), 2)
    np.testing.assert_array_equal(lower, [0, 1])
    np.testing.assert_array_equal(upper, [2, 3])
    lower, upper = check_bounds([(0, 1), (2, 3)], 2)
    np.testing.assert_array_equal(lower, [0, 2])
    np.testing.assert_array_equal(upper, [1, 3])
    # an inverted reading of a tuple of pairs says how to write pairs
    with pytest.raises(ValueError, match=r"lower < upper.*give a list"):
        check_bounds(((18, 90), (0, 1)), 2, name="bounds_X")
    # and a list of lower and upper arrays says how to write those
    with pytest.raises(ValueError, match=r"lower < upper.*give a tuple"):
        check_bounds([[0, 0], [1, 1]], 2, name="bounds_X")


@pytest.mark.parametrize(
    "bounds, error, match",
    [
        (1.0, TypeError, ACCEPTED),
        ("18-90", TypeError, ACCEPTED),
        ([(0, 1), (0, 1)], ValueError, r"2 \(lower, upper\) pairs for 3 feat.*"),
        ([(0, 1)] * 4, ValueError, r"4 \(lower, upper\) pairs for 3 feat.*" + ACCEPTED),
        ([(0, 1, 2)] * 3, TypeError, ACCEPTED),
        ((0.0,), TypeError, ACCEPTED),
        ({"age": "young", "hours": (0, 1), "share": (0, 1)}, TypeError, ACCEPTED),
        ({1.5: (0, 1)}, TypeError, ACCEPTED),
        ({**BY_NAME, "weight": (0, 200)}, ValueError, r"bounds_X.*'weight'"),
        ({"age": (18, 90), "hours": (0, 80)}, ValueError, r"bounds_X.*\['share'\]"),
        ({**BY_NAME, 0: (18, 90)}, ValueError, r"bounds_X gives feature 0 twice"),
        ({**BY_INDEX, 3: (0, 1)}, ValueError, r"bounds_X has feature index 3"),
        ({**BY_NAME, "age": (90, 18)}, ValueError, r"bounds_X.*lower < upper"),
        ([(18, 90), (5, 5), (0, 1)], ValueError, r"bounds_X.*lower < upper"),
    ],
)
def test_check_bounds_refusals_name_the_parameter(bounds, error, match):
    with pytest.raises(error, match=match):
        check_bounds(bounds, 3, name="bounds_X", feature_names=COLUMNS)


def test_a_dict_by_name_on_an_array_is_refused_clearly(data):
    X, y, _ = data
    est = FMLinearRegression(bounds_X=BY_NAME, bounds_y=(-3, 6), random_state=0)
    with pytest.raises(ValueError, match=r"bounds_X.*X has no column names"):
        est.fit(X.to_numpy(), y)
    # by index it works on an array
    est.set_params(bounds_X=BY_INDEX).fit(X.to_numpy(), y)


@pytest.mark.parametrize(
    "est",
    [
        FMLinearRegression(bounds_X="18 to 90", bounds_y=(-3, 6)),
        OPLogisticRegression(bounds_X=18, classes=[0, 1]),
        PrivateStandardScaler(bounds_X="wide"),
        PrivateBoundsEstimator(OPLogisticRegression(), envelope="wide"),
    ],
)
def test_invalid_parameter_error_shows_the_accepted_forms(est, data):
    X, y, _ = data
    with pytest.raises(InvalidParameterError, match=r"must be a tuple \(lower, upper"):
        est.fit(X, y)


def test_vertical_estimator_reads_the_forms(data):
    from skdp.vertical import VerticalFMRegressor

    X, y, _ = data

    def coef(bounds_X):
        return (
            VerticalFMRegressor(
                n_parties=2, bounds_X=bounds_X, bounds_y=(-3, 6), random_state=0
            )
            .fit(X, y)
            .coef_
        )

    expected = coef(TUPLE)
    for form in (PAIRS, BY_NAME):
        np.testing.assert_array_equal(coef(form), expected)
