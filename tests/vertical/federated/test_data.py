"""A party's data file: rows sorted by id, bad files refused naming the problem."""

import numpy as np
import pytest

from skdp.vertical.federated._data import DataError, convert_labels, read_party_data


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
    "text, match, public",
    [
        ("id,a\nz,1\nSECRET,2\nSECRET,3\n", "rows 2 and 3 hold the same id", "once"),
        ("id,a\n1,1\n,2\n", "column 'id' is empty in row\\(s\\) \\[2\\]", "empty"),
        ("id,a\n1,1\n2,SECRET\n", "column 'a' row 2 is not a finite", "finite"),
        ("id,a\n1,1\n2,nan\n", "column 'a' row 2 is not a finite number", "finite"),
        ("id,b\n1,1\n", "missing column", "lacks the column"),
        ("id,a\n", "no rows", "no rows"),
        ("id,a\n1,2\nSECRET,1,2\n", "wrong number of fields", "cannot be read"),
        ("", "missing column", "lacks the column"),
    ],
)
def test_bad_files_are_refused(tmp_path, text, match, public):
    """Each problem names the file, the column and the row, never the id or the
    value (SECRET); the public text (for the peers) names no path either."""
    path = _csv(tmp_path, text)
    with pytest.raises(DataError, match=match) as info:
        read_party_data(path, "id", ["a"])
    assert "SECRET" not in str(info.value) and str(path) in str(info.value)
    assert public in info.value.public
    assert "SECRET" not in info.value.public and str(tmp_path) not in info.value.public


def test_bad_label_rows_are_numbered_as_in_the_file(tmp_path):
    path = _csv(tmp_path, "id,a,y\nb,1,SECRET\na,3,2\n")
    data = read_party_data(path, "id", ["a"], "y", "raw")
    with pytest.raises(DataError, match="column 'y' row 1 is not") as info:
        convert_labels(path, "y", data.y, "number", data.rows)
    assert "SECRET" not in str(info.value)


def test_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"id": [3, 1, 2], "a": [0.3, 0.1, 0.2]})
    pq.write_table(table, tmp_path / "d.parquet")
    data = read_party_data(tmp_path / "d.parquet", "id", ["a"])
    assert data.ids == ["1", "2", "3"]
    np.testing.assert_array_equal(data.X.ravel(), [0.1, 0.2, 0.3])


def test_raw_labels_convert_later(tmp_path):
    path = _csv(tmp_path, "id,a,y\n2,1,0.5\n1,3,-2\n")
    data = read_party_data(path, "id", ["a"], "y", "raw")
    assert data.y.tolist() == ["-2", "0.5"]
    assert convert_labels(path, "y", data.y, "number").tolist() == [-2.0, 0.5]
    assert convert_labels(path, "y", data.y, "class").tolist() == ["-2", "0.5"]
