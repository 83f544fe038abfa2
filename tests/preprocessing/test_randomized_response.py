"""RandomizedResponse: matrices, noise law, frequencies, pandas, audit, bad input."""

import math
import warnings

import numpy as np
import pytest

from skdp.accounting import PrivacyBudget, track_budget
from skdp.exceptions import PrivacyLeakWarning, ReproducibleNoiseWarning
from skdp.mechanisms import RandomizedResponseMechanism, project_to_simplex
from skdp.preprocessing import RandomizedResponse
from skdp.utils import audit_mechanism

pytestmark = [
    pytest.mark.filterwarnings("error::skdp.exceptions.PrivacyLeakWarning"),
    # the suite's reproducible-noise opt-in warns on every seeded release
    pytest.mark.filterwarnings("ignore::skdp.exceptions.ReproducibleNoiseWarning"),
]


def _codes_data(n, n_columns=2, n_categories=3, seed=0):
    return np.random.default_rng(seed).integers(0, n_categories, size=(n, n_columns))


def test_distortion_matrix_per_column_follows_declared_order():
    X = np.array([["b", 0], ["a", 1], ["c", 0]], dtype=object)
    rr = RandomizedResponse(
        epsilon=[1.0, 3.0], columns=[0, 1], categories=[["c", "a", "b"], [0, 1]]
    ).fit(X)
    assert [c.tolist() for c in rr.categories_] == [["c", "a", "b"], [0, 1]]
    np.testing.assert_allclose(rr.P_[0], RandomizedResponseMechanism(1.0, 3).matrix)
    np.testing.assert_allclose(rr.P_[1], RandomizedResponseMechanism(3.0, 2).matrix)
    e = math.exp(1.0)
    assert rr.P_[0][0, 0] == pytest.approx(e / (2 + e))
    assert rr.privacy_spent_ == PrivacyBudget(4.0)
    assert rr.columns_.tolist() == [0, 1]


def test_transition_frequencies_match_matrix():
    n, C, eps = 30_000, 3, 1.0
    X = _codes_data(n, n_columns=1, n_categories=C)
    rr = RandomizedResponse(
        columns="all", epsilon=eps, categories=[range(C)], random_state=0
    )
    Z = rr.fit_transform(X)
    counts = np.zeros((C, C))
    np.add.at(counts, (X[:, 0], Z[:, 0]), 1)
    n_from = counts.sum(axis=1, keepdims=True)
    P = rr.P_[0]
    assert np.all(np.abs(counts - n_from * P) <= 5 * np.sqrt(n_from * P * (1 - P)))


def test_per_column_epsilon_dict_changes_keep_rates():
    pd = pytest.importorskip("pandas")
    n = 20_000
    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {
            "low": rng.choice(["x", "y"], n),
            "keep": rng.normal(size=n),
            "high": rng.choice(["x", "y"], n),
        }
    )
    rr = RandomizedResponse(
        epsilon={"high": 4.0, "low": 0.2},
        columns=["low", "high"],
        categories={"low": ["x", "y"], "high": ["x", "y"]},
        random_state=0,
    )
    out = rr.fit_transform(df)
    assert rr.columns_.tolist() == [0, 2]
    np.testing.assert_array_equal(rr.epsilons_, [0.2, 4.0])
    for col, eps in [("low", 0.2), ("high", 4.0)]:
        p_keep = math.exp(eps) / (1 + math.exp(eps))
        kept = np.mean(out[col].to_numpy() == df[col].to_numpy())
        assert abs(kept - p_keep) <= 5 * math.sqrt(p_keep * (1 - p_keep) / n)
    pd.testing.assert_series_equal(out["keep"], df["keep"])
    assert rr.privacy_spent_ == PrivacyBudget(4.2)


def test_dataframe_round_trip_keeps_container_dtypes_and_index():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(
        {
            "colour": pd.Categorical(["red", "blue", "red", "green"] * 25),
            "size": [1, 2, 3, 1] * 25,
            "note": ["a", "b", "c", "d"] * 25,
        },
        index=np.arange(100) * 3,
    )
    df_copy = df.copy()
    rr = RandomizedResponse(
        epsilon=1.0,
        columns=["colour", "size"],
        categories={"colour": ["blue", "green", "red"], "size": [1, 2, 3]},
        random_state=0,
    )
    out = rr.fit_transform(df)
    pd.testing.assert_frame_equal(df, df_copy)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(df.columns) and out.index.equals(df.index)
    assert (out.dtypes == df.dtypes).all()
    assert set(out["colour"]) <= {"blue", "green", "red"}
    assert set(out["size"]) <= {1, 2, 3}
    pd.testing.assert_series_equal(out["note"], df["note"])
    assert not out["colour"].equals(df["colour"])
    assert list(rr.get_feature_names_out()) == ["colour", "size", "note"]


def test_numpy_strings_and_dtype_preserved():
    X = np.array([["u", "v"], ["v", "w"], ["w", "u"]] * 50)
    rr = RandomizedResponse(
        columns="all", categories=[["u", "v", "w"]] * 2, random_state=0
    )
    Z = rr.fit_transform(X)
    assert Z.dtype == X.dtype and Z.shape == X.shape
    assert set(np.unique(Z)) <= {"u", "v", "w"}
    X_float = np.tile([0.0, 1.0], (60, 1))
    Z_float = RandomizedResponse(
        columns="all", categories=[[0.0, 1.0]] * 2, random_state=0
    ).fit(X_float)
    assert Z_float.transform(X_float).dtype == np.float64


def test_fresh_noise_per_call_and_seeds():
    X = _codes_data(2000)
    cats = [range(3)] * 2
    rr = RandomizedResponse(columns="all", epsilon=0.5, categories=cats).fit(X)
    assert not np.array_equal(rr.transform(X), rr.transform(X))
    rng_rr = RandomizedResponse(
        columns="all",
        epsilon=0.5,
        categories=cats,
        random_state=np.random.default_rng(0),
    ).fit(X)
    assert not np.array_equal(rng_rr.transform(X), rng_rr.transform(X))
    seeded = RandomizedResponse(
        columns="all", epsilon=0.5, categories=cats, random_state=3
    ).fit(X)
    other = RandomizedResponse(
        columns="all", epsilon=0.5, categories=cats, random_state=4
    ).fit(X)
    assert np.array_equal(seeded.transform(X), seeded.transform(X))
    assert not np.array_equal(seeded.transform(X), other.transform(X))


def test_infinite_epsilon_is_identity_and_input_unchanged():
    X = _codes_data(500)
    X_copy = X.copy()
    rr = RandomizedResponse(
        columns="all", epsilon=np.inf, categories=[range(3)] * 2, random_state=0
    )
    np.testing.assert_array_equal(rr.fit_transform(X), X)
    np.testing.assert_array_equal(X, X_copy)
    y = np.arange(500) % 2
    X_out, y_out = RandomizedResponse(epsilon=np.inf, classes=[0, 1]).fit_resample(X, y)
    assert X_out is X and np.array_equal(y_out, y)


def test_estimate_frequencies_unbiased_over_repeated_draws():
    n, reps, eps = 400, 300, 0.8
    true_counts = np.array([200, 150, 50])
    column = np.repeat(np.arange(3), true_counts)
    X = np.tile(column[:, None], (1, reps))  # each column is one repetition
    rr = RandomizedResponse(
        columns="all", epsilon=eps, categories=[range(3)] * reps, random_state=0
    )
    estimates = np.array(rr.estimate_frequencies(rr.fit_transform(X)))
    P = rr.P_[0]
    p, q = P[0, 0], P[0, 1]
    # exact variance of the raw estimate: sum_i P[u_i, c](1 - P[u_i, c]) / (n(p - q))^2
    var = (true_counts @ (P * (1 - P))) / (n * (p - q)) ** 2
    truth = true_counts / n
    assert np.all(np.abs(estimates.mean(axis=0) - truth) <= 5 * np.sqrt(var / reps))
    # a single draw can leave the simplex; the projected estimate never does
    projected = np.array(rr.estimate_frequencies(rr.transform(X), project=True))
    assert np.all(projected >= 0)
    np.testing.assert_allclose(projected.sum(axis=1), 1.0)
    raw = np.array(rr.estimate_frequencies(rr.transform(X)))
    assert np.any(raw < 0)  # n = 400 at eps 0.8: some raw estimates leave [0, 1]
    np.testing.assert_allclose(project_to_simplex(raw).sum(axis=1), 1.0)


def test_estimate_label_frequencies():
    y = np.repeat([0, 1], [7000, 3000])
    rr = RandomizedResponse(epsilon=1.0, classes=[0, 1], random_state=0)
    _, y_private = rr.fit_resample(np.zeros((y.size, 1)), y)
    est = rr.estimate_frequencies(y=y_private)
    p, q = rr.label_matrix_[0, 0], rr.label_matrix_[0, 1]
    sd = math.sqrt(0.5 / y.size) / (p - q)  # var of a frequency <= 1/4
    assert abs(est[0] - 0.7) <= 5 * sd
    projected = rr.estimate_frequencies(y=y_private, project=True)
    assert np.all(projected >= 0) and projected.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="exactly one"):
        rr.estimate_frequencies()


def test_fit_resample_labels_only_and_with_columns():
    X = _codes_data(1000)
    y = np.array(["no", "yes"])[np.arange(1000) % 2]
    rr = RandomizedResponse(epsilon=2.0, classes=["no", "yes"], random_state=0)
    X_out, y_out = rr.fit_resample(X, y)
    assert X_out is X and rr.columns_.size == 0
    assert y_out.dtype == y.dtype and set(y_out) <= {"no", "yes"}
    assert rr.privacy_spent_ == PrivacyBudget(2.0)
    np.testing.assert_allclose(
        rr.label_matrix_, RandomizedResponseMechanism(2.0, 2).matrix
    )
    both = RandomizedResponse(
        epsilon=1.0,
        columns=[1],
        categories=[range(3)],
        label_epsilon=0.5,
        classes=["no", "yes"],
        random_state=0,
    )
    X_out, y_out = both.fit_resample(X, y)
    assert X_out is not X
    np.testing.assert_array_equal(X_out[:, 0], X[:, 0])
    assert np.any(X_out[:, 1] != X[:, 1]) and np.any(y_out != y)
    assert both.privacy_spent_ == PrivacyBudget(1.5)
    assert both.label_epsilon_ == 0.5


def test_every_release_is_recorded():
    X = _codes_data(50)
    rr = RandomizedResponse(
        columns="all", epsilon=0.5, categories=[range(3)] * 2, random_state=0
    )
    with track_budget() as acc:
        rr.fit(X)
        rr.transform(X)
        rr.transform(X)
        labels = RandomizedResponse(epsilon=1.5, classes=[0, 1], random_state=0)
        labels.fit_resample(X, np.arange(50) % 2)
    assert acc.total == PrivacyBudget(2 * 1.0 + 1.5)  # two columns at 0.5, twice
    assert len(acc.spends) == 3


def test_inferred_categories_warn():
    X = _codes_data(30)
    with pytest.warns(PrivacyLeakWarning, match="categories"):
        rr = RandomizedResponse(columns="all", random_state=0).fit(X)
    assert [c.tolist() for c in rr.categories_] == [[0, 1, 2]] * 2
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        RandomizedResponse(random_state=0).fit_resample(X, np.arange(30) % 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        RandomizedResponse(columns="all", categories=[range(3)] * 2).fit(X)


@pytest.mark.parametrize("claimed", [0.5, 2.0])
def test_empirical_privacy_audit_labels(claimed):
    def mechanism(label, n_samples, rng):
        rr = RandomizedResponse(epsilon=claimed, classes=[0, 1, 2], random_state=rng)
        return rr.fit_resample(np.zeros((n_samples, 1)), np.full(n_samples, label))[1]

    result = audit_mechanism(mechanism, 0, 1, n_samples=200_000, random_state=0)
    assert result.epsilon_lower_bound <= claimed
    assert result.epsilon_lower_bound > 0.8 * claimed  # the audit can see it


def test_empirical_privacy_audit_feature_columns_compose():
    # two columns of one record, each at 0.75: the record's guarantee is 1.5
    rr = RandomizedResponse(columns="all", epsilon=0.75, categories=[[0, 1]] * 2)

    def mechanism(record, n_samples, rng):
        rr.set_params(random_state=rng)
        X = np.tile(record, (n_samples, 1))
        return rr.fit(X).transform(X)

    result = audit_mechanism(
        mechanism,
        np.array([0, 0]),
        np.array([1, 1]),
        n_samples=200_000,
        statistic=lambda out: out[:, 0] * 2 + out[:, 1],
        random_state=0,
    )
    assert result.epsilon_lower_bound <= rr.privacy_spent_.epsilon == 1.5
    assert result.epsilon_lower_bound > 0.75  # more than one column's epsilon


@pytest.mark.parametrize(
    ("params", "X", "error", "match"),
    [
        ({"epsilon": {5: 1.0}, "categories": [range(3)] * 2}, None, ValueError, "5"),
        (
            {"epsilon": {0: 1.0}, "categories": [range(3)] * 2},
            None,
            ValueError,
            "misses",
        ),
        ({"epsilon": [1.0], "categories": [range(3)] * 2}, None, ValueError, "entries"),
        (
            {"epsilon": [1.0, -1.0], "categories": [range(3)] * 2},
            None,
            ValueError,
            "epsilon for column 1",
        ),
        ({"columns": [0, 0], "categories": [range(3)] * 2}, None, ValueError, "twice"),
        ({"columns": ["a"], "categories": [range(3)]}, None, ValueError, "'a'"),
        ({"categories": [[0, 1]] * 2}, None, ValueError, "not among"),
        ({"categories": [[0, 1, 1, 2]] * 2}, None, ValueError, "duplicates"),
        (
            {"categories": [range(3)] * 2},
            np.array([[0.0, 1.0], [np.nan, 2.0]]),
            ValueError,
            "NaN",
        ),
    ],
)
def test_bad_feature_parameters(params, X, error, match):
    X = _codes_data(20) if X is None else X
    params = {"columns": "all", **params}
    with pytest.raises(error, match=match):
        RandomizedResponse(**params).fit(X)


def test_unseen_category_at_transform_is_an_error():
    rr = RandomizedResponse(columns="all", categories=[range(3)] * 2).fit(
        _codes_data(20)
    )
    with pytest.raises(ValueError, match=r"not among its categories.*\[7\]"):
        rr.transform(np.array([[0, 1], [7, 2]]))
    with pytest.raises(ValueError, match="features"):
        rr.transform(_codes_data(20, n_columns=3))


@pytest.mark.parametrize(
    ("params", "y", "match"),
    [
        ({}, np.zeros(20), "at least 2 classes"),
        ({"classes": [0, 1]}, np.r_[np.zeros(19), np.nan], "NaN"),
        ({"classes": [0, 1]}, np.arange(20) % 3, "not among"),
        (
            {"epsilon": [1.0, 1.0], "columns": [0, 1], "classes": [0, 1]},
            np.arange(20) % 2,
            "label_epsilon",
        ),
    ],
)
def test_bad_labels(params, y, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match=match):
            RandomizedResponse(**params).fit_resample(_codes_data(20), y)


def test_label_sampler_has_no_transform():
    rr = RandomizedResponse(classes=[0, 1])
    assert not hasattr(rr, "transform") and not hasattr(rr, "fit_transform")
    assert hasattr(RandomizedResponse(columns="all"), "transform")
    rr.fit(_codes_data(20))
    assert rr.privacy_spent_ == PrivacyBudget(0.0)  # fit alone releases nothing
    with pytest.raises(ValueError, match="only the labels"):
        rr.set_params(categories=[range(3)] * 2).fit_resample(
            _codes_data(20), np.arange(20) % 2
        )


# --- set_output: the container of transform's output ---------------------------
def _frame():
    pd = pytest.importorskip("pandas")
    return pd.DataFrame({"a": ["x", "y", "x", "y"] * 5, "b": np.arange(20)})


def test_set_output_pandas_on_an_array_names_the_columns():
    pd = pytest.importorskip("pandas")
    X = _frame().to_numpy()
    rr = RandomizedResponse(columns=[0], categories=[["x", "y"]], random_state=0)
    out = rr.set_output(transform="pandas").fit_transform(X)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["x0", "x1"]
    assert set(out["x0"]) <= {"x", "y"}
    np.testing.assert_array_equal(out["x1"].to_numpy(), X[:, 1])


def test_set_output_default_keeps_the_input_container():
    X = _frame()
    rr = RandomizedResponse(columns=[0], categories=[["x", "y"]], random_state=0)
    out_array = rr.set_output(transform="default").fit_transform(X.to_numpy())
    assert isinstance(out_array, np.ndarray)
    assert type(rr.fit_transform(X)) is type(X)


def test_set_output_rejects_unknown_container():
    with pytest.raises(ValueError, match="transform"):
        RandomizedResponse(columns="all").set_output(transform="arrow")


def test_set_output_inside_column_transformer():
    pd = pytest.importorskip("pandas")
    from sklearn.compose import ColumnTransformer

    X = _frame()
    rr = RandomizedResponse(columns="all", categories=[["x", "y"]], random_state=0)
    ct = ColumnTransformer([("rr", rr, ["a"])], remainder="passthrough")
    out = ct.set_output(transform="pandas").fit_transform(X)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["rr__a", "remainder__b"]
    assert set(out["rr__a"]) <= {"x", "y"}


def test_global_transform_output_config_is_honoured():
    pd = pytest.importorskip("pandas")
    from sklearn import config_context

    X = _frame().to_numpy()
    rr = RandomizedResponse(columns=[0], categories=[["x", "y"]], random_state=0)
    with config_context(transform_output="pandas"):
        assert isinstance(rr.fit_transform(X), pd.DataFrame)
    assert isinstance(rr.fit_transform(X), np.ndarray)


def test_negative_categories_are_accepted():
    # the positive_only tag is False: negative category values are ordinary values
    X = np.array([[-1, 0], [0, -2], [1, -2], [-1, 0]])
    rr = RandomizedResponse(
        columns="all", categories=[[-1, 0, 1], [-2, 0]], epsilon=np.inf
    )
    np.testing.assert_array_equal(rr.fit_transform(X), X)
    assert not rr.__sklearn_tags__().input_tags.positive_only


def test_label_likelihood_is_the_matrix_column_of_each_released_label():
    classes = np.array(["a", "b", "c"])
    y = classes[np.arange(300) % 3]
    rr = RandomizedResponse(epsilon=1.0, classes=classes, random_state=0)
    assert not hasattr(rr, "label_likelihood_")  # nothing released yet
    _, y_private = rr.fit_resample(np.zeros((300, 1)), y)
    codes = np.searchsorted(classes, y_private)
    likelihood = rr.label_likelihood_
    assert likelihood.shape == (300, 3)
    np.testing.assert_array_equal(likelihood, rr.label_matrix_[:, codes].T)
    # P(released = what row i released | true k): p_keep where k is that label
    p_keep = math.exp(1.0) / (2 + math.exp(1.0))
    np.testing.assert_allclose(likelihood[np.arange(300), codes], p_keep)
    # a second release describes its own rows
    rr.fit_resample(np.zeros((10, 1)), y[:10])
    assert rr.label_likelihood_.shape == (10, 3)
