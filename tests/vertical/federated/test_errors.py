"""One rule for what an error, an abort or a log line may say: no record id, no
cell value, no label value, and no file path of another participant.

Every record id, the bad cell and the bad label carry a sentinel; each failing
run (server and two parties in threads, over mutual TLS) is searched for the
sentinels in every participant's error, every abort and refusal payload that
crossed the wire, everything printed (``verbose=2``: a line per message) and
every warning. The failing party's data file lies in a directory whose name is a
sentinel too: only that party's own error may name it.
"""

import shutil
import warnings

import pytest

pytest.importorskip("grpc")
pytest.importorskip("cryptography")

from skdp.vertical._messages import ABORT  # noqa: E402
from skdp.vertical.federated._errors import DataError, public_cause  # noqa: E402
from skdp.vertical.federated._node import FederatedError, Node  # noqa: E402
from tests.vertical.federated._harness import Deployment  # noqa: E402
from tests.vertical.federated.test_runtime import _data, _run_threads  # noqa: E402

ID, CELL, LABEL, PATH = (
    "ID-SENTINEL",
    "CELL-SENTINEL",
    "LABEL-SENTINEL",
    "PATH-SENTINEL",
)
N = 24


def _ids(n=N):
    return [f"{ID}-{i:04d}" for i in range(n)]


def _edit_cell(dep, party, row, column, value):
    """Set ``column`` of data row ``row`` (1-based) in ``party``'s CSV."""
    path = dep.dir / f"{party}.csv"
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[row].split(",")
    cells[header.index(column)] = value
    lines[row] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


def _hide_path(dep, party):
    """Move ``party``'s data file under a directory named by a sentinel."""
    (dep.dir / PATH).mkdir()
    shutil.move(dep.dir / f"{party}.csv", dep.dir / PATH / f"{party}.csv")
    k = dep.names.index(party)
    dep.parties[k]["data"]["path"] = f"{PATH}/{party}.csv"


def _duplicate_id(dep):
    first = (dep.dir / "org-1.csv").read_text().splitlines()[1].split(",")[0]
    _edit_cell(dep, "org-1", 3, "id", first)
    return "org-1", "holds an id more than once"


def _bad_cell(dep):
    _edit_cell(dep, "org-1", 5, "x1", CELL)
    return "org-1", "not a finite number"


def _bad_regression_label(dep):
    _edit_cell(dep, "org-0", 4, "label", LABEL)
    return "org-0", "not a finite number"


def _malformed_row(dep):
    path = dep.dir / "org-1.csv"
    lines = path.read_text().splitlines()
    lines[6] = lines[6] + f",{CELL}"
    path.write_text("\n".join(lines) + "\n")
    return "org-1", "cannot be read as CSV"


def _mismatched_ids(dep):
    _edit_cell(dep, "org-1", 2, "id", f"{ID}-OTHER")
    return None, "record ids differ"


def _undeclared_label(dep):
    _edit_cell(dep, "org-0", 4, "label", LABEL)
    return "org-0", "not in data.classes"


def _three_undeclared_classes(dep):
    del dep.parties[0]["data"]["classes"]
    for row, label in [(1, f"{LABEL}-a"), (2, f"{LABEL}-b"), (3, f"{LABEL}-c")]:
        _edit_cell(dep, "org-0", row, "label", label)
    return "org-0", "does not hold exactly 2 classes"


CASES = {
    "duplicate_id": ("linear", _duplicate_id),
    "bad_cell": ("linear", _bad_cell),
    "bad_regression_label": ("linear", _bad_regression_label),
    "malformed_row": ("linear", _malformed_row),
    "mismatched_ids": ("linear", _mismatched_ids),
    "undeclared_label": ("logistic", _undeclared_label),
    "three_undeclared_classes": ("logistic", _three_undeclared_classes),
}


@pytest.mark.parametrize("case", list(CASES))
def test_no_error_or_abort_or_log_line_holds_a_value(
    tmp_path, monkeypatch, capsys, case
):
    objective, damage = CASES[case]
    blocks, _, y = _data(N, [1, 2], objective)
    timeouts = {"startup": 20.0, "call": 20.0, "heartbeat": 0.5, "protocol": 60.0}
    dep = Deployment(
        tmp_path,
        blocks,
        y,
        objective=objective,
        ids=[_ids(), _ids()],
        timeouts=timeouts,
    )
    for p in dep.parties:
        p["policy"]["min_samples"] = 2
    culprit, problem = damage(dep)
    if culprit is not None:
        _hide_path(dep, culprit)
    wire = []
    original = Node._on_message

    def capture(self, message, nbytes):
        if message.step == ABORT or message.kind == "refuse":
            wire.append((self.name, repr(message.payload)))
        return original(self, message, nbytes)

    monkeypatch.setattr(Node, "_on_message", capture)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = _run_threads(dep, verbose=2)
    printed = capsys.readouterr()
    texts = {name: str(res) for name, res in results.items()}
    for name, res in results.items():
        assert isinstance(res, FederatedError), (name, res)
    assert problem in " ".join(texts.values())
    assert wire, "no abort crossed the wire"
    everything = [*texts.values(), *(w for _, w in wire), printed.out, printed.err]
    everything += [str(w.message) for w in caught]
    for text in everything:
        for sentinel in (ID, CELL, LABEL):
            assert sentinel not in text, (sentinel, text)
    others = [t for name, t in texts.items() if name != culprit]
    for text in [*others, *(w for _, w in wire)]:
        assert PATH not in text, text
    assert not (tmp_path / "model.json").exists()


def test_only_ruled_errors_travel_with_their_text():
    """An exception the runtime did not word (a library's, a bug) reaches the
    peers as its type only; a DataError as its public part."""
    leak = ValueError(f"could not convert string to float: '{CELL}'")
    assert CELL not in public_cause(leak) and "ValueError" in public_cause(leak)
    data = DataError(f"/{PATH}/x.csv: row 3 ...", "column 'a' of its data file ...")
    assert public_cause(data) == "column 'a' of its data file ..."
    assert public_cause(FederatedError("org-1: cannot authenticate")).startswith("org")
