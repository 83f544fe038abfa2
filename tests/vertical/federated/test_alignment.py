"""Record alignment: same ordered ids pass; any difference is refused."""

import pytest

pytest.importorskip("cryptography")

from skdp.vertical.federated._alignment import (  # noqa: E402
    AlignmentError,
    PairwiseAlignment,
    ids_digest,
)


def _run(lists):
    """Deliver every alignment message between the parties (FIFO)."""
    names = [f"p{k}" for k in range(len(lists))]
    parties = {
        n: PairwiseAlignment(n, [m for m in names if m != n], ids)
        for n, ids in zip(names, lists)
    }
    queue = [(n, *msg) for n, p in parties.items() for msg in p.start()]
    seen = []
    while queue:
        sender, to, kind, payload = queue.pop(0)
        seen.append((sender, to, kind, payload))
        queue += [(to, *m) for m in parties[to].receive(sender, kind, payload)]
    return parties, seen


def test_same_ids_align_and_reveal_no_id():
    ids = [f"customer-{i}" for i in range(100)]
    parties, seen = _run([ids, list(ids), list(ids)])
    assert all(p.done for p in parties.values())
    # the messages carry public keys, digests and counts, never an id
    for *_, payload in seen:
        for value in payload.values():
            if isinstance(value, bytes):
                assert b"customer" not in value
            else:
                assert value == 100


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda ids: ids[:-1], "p1 holds 99 records, p0 100"),
        (lambda ids: ids[:50] + ["intruder"] + ids[51:], "not the same ids"),
        (lambda ids: [ids[1], ids[0], *ids[2:]], "not the same ids"),
    ],
)
def test_any_difference_is_refused(change, reason):
    ids = [f"c{i:03d}" for i in range(100)]
    with pytest.raises(AlignmentError, match=reason):
        _run([ids, change(list(ids))])


def test_digest_is_keyed_and_unambiguous():
    ids = ["a", "bc"]
    assert ids_digest(b"k" * 32, ids) != ids_digest(b"j" * 32, ids)
    # length prefixes: ["a", "bc"] and ["ab", "c"] differ
    assert ids_digest(b"k" * 32, ids) != ids_digest(b"k" * 32, ["ab", "c"])


def test_malformed_messages_are_refused():
    a = PairwiseAlignment("a", ["b"], ["1"])
    with pytest.raises(AlignmentError, match="from 'c'"):
        a.receive("c", "alignment key", {"public": b"x" * 32})
    with pytest.raises(AlignmentError, match="malformed"):
        a.receive("b", "alignment key", {"public": b"short"})
    with pytest.raises(AlignmentError, match="before its key"):
        a.receive("b", "ids digest", {"digest": b"x", "n": 1})
