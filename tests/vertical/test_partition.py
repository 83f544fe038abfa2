import numpy as np
import pytest

from skdp.vertical import check_label_party, check_partition


def test_default_partition_splits_evenly():
    parts = check_partition(None, 7, n_parties=3)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4], [5, 6]]


def test_partition_is_sorted_and_resolves_names():
    names = np.array(["a", "b", "c"], dtype=object)
    parts = check_partition([["c", "a"], ["b"]], 3, feature_names=names)
    assert [p.tolist() for p in parts] == [[0, 2], [1]]


@pytest.mark.parametrize(
    "partition, match",
    [
        ([[0, 1], [1, 2]], "overlapping"),
        ([[0], [2]], "missing"),
        ([[0, 1, 2], []], "empty party"),
        ([[0, 1], [2, 3]], "outside"),
        ([["a"], [1, 2]], "no feature names"),
    ],
)
def test_bad_partitions(partition, match):
    with pytest.raises(ValueError, match=match):
        check_partition(partition, 3)


def test_partition_type_errors():
    with pytest.raises(TypeError, match="partition"):
        check_partition("abc", 3)
    with pytest.raises(TypeError, match="party 0"):
        check_partition([[0.5], [1, 2]], 3)


def test_partition_count_must_match_n_parties():
    with pytest.raises(ValueError, match="n_parties=3"):
        check_partition([[0], [1, 2]], 3, n_parties=3)


def test_label_party_range():
    assert check_label_party(2, 3) == 2
    with pytest.raises(ValueError, match="label_party=3 is out of range"):
        check_label_party(3, 3)
    with pytest.raises(TypeError, match="label_party"):
        check_label_party(1.0, 3)


def test_more_parties_than_features_names_both_numbers():
    with pytest.raises(ValueError, match=r"n_parties=9 .*n_features=4"):
        check_partition(None, 4, n_parties=9)


@pytest.mark.parametrize("cls_name", ["VerticalFMRegressor", "VerticalFMClassifier"])
def test_estimator_rejects_more_parties_than_features(cls_name):
    import skdp.vertical

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(40, 4))
    y = (X[:, 0] > 0).astype(int)
    est = getattr(skdp.vertical, cls_name)(n_parties=9, data_norm=1.0, random_state=0)
    with pytest.raises(ValueError, match=r"n_parties=9 .*n_features=4"):
        est.fit(X, y)
    assert not hasattr(est, "coef_")
