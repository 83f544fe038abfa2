"""A party's data file: rows sorted by id, bad files refused naming the problem."""

import numpy as np
import pytest

from skdp.vertical.federated._data import read_party_data


def _csv(tmp_path, text):
    path = tmp_path / "d.csv"
    path.write_text(text)
    return path


def test_rows_are_sorted_by_id(tmp_path):
    path = _csv(tmp_path, "id,a,b,y\nz,1,2,0\nm,3,4,1\na,5,6,0\n")
    data = read_party_data(path, "id", ["b", "a"], "y", "class")
    assert data.ids == ["a", "m", "z"]
    np.testing.assert_array_equal(data.X, [[6, 5], [4, 3], [2, 1]])
    np.testing.assert_array_equal(data.y, [0, 1, 0])
    assert data.y.dtype.kind == "i"


def test_string_classes_and_numbers(tmp_path):
    path = _csv(tmp_path, "id,a,y\n2,1,yes\n1,3,no\n")
    assert read_party_data(path, "id", ["a"], "y", "class").y.tolist() == ["no", "yes"]
    path = _csv(tmp_path, "id,a,y\n2,1,0.5\n1,3,-2\n")
    assert read_party_data(path, "id", ["a"], "y", "number").y.tolist() == [-2, 0.5]


@pytest.mark.parametrize(
    "text, match",
    [
        ("id,a\n1,1\n1,2\n", "id '1' appears more than once"),
        ("id,a\n1,1\n,2\n", "empty ids"),
        ("id,a\n1,1\n2,x\n", "column 'a' row 2 is not a finite number"),
        ("id,a\n1,1\n2,nan\n", "column 'a' row 2 is not a finite number"),
        ("id,b\n1,1\n", "missing column"),
        ("id,a\n", "no rows"),
    ],
)
def test_bad_files_are_refused(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        read_party_data(_csv(tmp_path, text), "id", ["a"])


def test_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"id": [3, 1, 2], "a": [0.3, 0.1, 0.2]})
    pq.write_table(table, tmp_path / "d.parquet")
    data = read_party_data(tmp_path / "d.parquet", "id", ["a"])
    assert data.ids == ["1", "2", "3"]
    np.testing.assert_array_equal(data.X.ravel(), [0.1, 0.2, 0.3])


def test_raw_labels_convert_later(tmp_path):
    from skdp.vertical.federated._data import convert_labels

    path = _csv(tmp_path, "id,a,y\n2,1,0.5\n1,3,-2\n")
    data = read_party_data(path, "id", ["a"], "y", "raw")
    assert data.y.tolist() == ["-2", "0.5"]
    assert convert_labels(path, "y", data.y, "number").tolist() == [-2.0, 0.5]
    assert convert_labels(path, "y", data.y, "class").tolist() == ["-2", "0.5"]
