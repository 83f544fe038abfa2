"""The wire format (protocol buffers, wire version 2): every value type round
trips to the same Python objects, the same message gives the same bytes, and
every malformed, oversized or foreign frame is refused with a WireError."""

import json
import struct

import numpy as np
import pytest

pytest.importorskip("google.protobuf")

from skdp.vertical._messages import Message  # noqa: E402
from skdp.vertical.federated import _wire  # noqa: E402
from skdp.vertical.federated import skdp_wire_pb2 as pb  # noqa: E402
from skdp.vertical.federated._wire import (  # noqa: E402
    MAX_DEPTH,
    MAX_ENTRIES,
    MAX_NAME_CHARS,
    MAX_NDIM,
    WIRE_VERSION,
    WireError,
    decode_message,
    encode_message,
)


def _frame(payload=None, version=WIRE_VERSION, **names):
    """A serialized pb.Message with the names given (default s, a, b, k) and
    ``payload``: ``{key: pb.Value}``."""
    msg = pb.Message(version=version)
    for what, default in zip(("step", "sender", "receiver", "kind"), "sabk"):
        setattr(msg, what, names.get(what, default))
    for key, value in (payload or {}).items():
        entry = msg.payload.entries.add(key=key)
        entry.value.CopyFrom(value)
    return msg.SerializeToString()


def _array(dtype, shape, nbytes=8):
    return pb.Value(array=pb.Array(dtype=dtype, shape=shape, data=b"\0" * nbytes))


def _v1_frame():
    """A frame of wire version 1 (the hand-written JSON frame skdp sent before)."""
    header = {
        "step": "s",
        "sender": "a",
        "receiver": "b",
        "kind": "k",
        "payload": {"t": "d", "v": {"x": {"t": "j", "v": 1}}},
        "buffers": [],
    }
    head = json.dumps(header).encode()
    return b"SKDPMSG1" + struct.pack(">I", len(head)) + head


def _refused(frame, match=None):
    with pytest.raises(WireError, match=match) as info:
        decode_message(frame)
    return str(info.value)


# ------------------------------------------------------------- round trips
@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "f4", "f8"]
)
def test_round_trip_arrays(dtype):
    rng = np.random.default_rng(0)
    arr = (rng.normal(size=(3, 4, 2)) * 100).astype(dtype)
    msg = Message("cross", "party 0", "party 1", "encrypted columns", {"x": arr})
    back = decode_message(encode_message(msg))
    assert back.payload["x"].dtype == arr.dtype
    np.testing.assert_array_equal(back.payload["x"], arr)
    assert back.payload["x"].flags.writeable and back.payload["x"].flags.owndata


def test_round_trip_everything():
    payload = {
        "empty": np.empty((0, 5)),
        "scalar": np.float64(2.5),
        "f32": np.float32(0.1),
        "npint": np.int64(7),
        "npbool": np.bool_(True),
        "big-endian": np.arange(4, dtype=">i4"),
        "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        "blob": b"\x00\x01seal",
        "bytearray": bytearray(b"ba"),
        "memoryview": memoryview(b"mv"),
        "empty bytes": b"",
        "text": "héllo ∑",
        "empty text": "",
        "nested": {"list": [1, 2.0, None, True, False, {"inner": np.ones(2)}]},
        "tuple": (1, 2),
        "empty list": [],
        "empty dict": {},
        "nonfinite": [float("nan"), float("inf"), -float("inf"), -0.0],
        "0d": np.array(3.0),
        "ints": [0, -1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**64 - 1],
        "u64": np.uint64(2**64 - 1),
        "huge": [3**4000, -(3**4000)],
    }
    msg = Message("plan", "server", "party 0", "plan", payload)
    back = decode_message(encode_message(msg))
    assert (back.step, back.sender, back.receiver, back.kind) == (
        "plan",
        "server",
        "party 0",
        "plan",
    )
    p = back.payload
    assert list(p) == list(payload)  # dict order kept
    assert p["empty"].shape == (0, 5) and p["empty"].dtype == np.float64
    assert p["scalar"] == 2.5 and type(p["scalar"]) is float
    assert p["f32"] == float(np.float32(0.1)) and type(p["f32"]) is float
    assert p["npint"] == 7 and type(p["npint"]) is int
    assert p["npbool"] is True
    np.testing.assert_array_equal(p["big-endian"], [0, 1, 2, 3])
    assert p["big-endian"].dtype == np.dtype("<i4")
    np.testing.assert_array_equal(p["fortran"], np.arange(6.0).reshape(2, 3))
    assert p["blob"] == b"\x00\x01seal" and type(p["blob"]) is bytes
    assert p["bytearray"] == b"ba" and p["memoryview"] == b"mv"
    assert p["empty bytes"] == b"" and p["empty text"] == ""
    assert p["text"] == "héllo ∑"
    assert p["nested"]["list"][:5] == [1, 2.0, None, True, False]
    assert [type(v) for v in p["nested"]["list"][:5]] == [
        int,
        float,
        type(None),
        bool,
        bool,
    ]
    np.testing.assert_array_equal(p["nested"]["list"][5]["inner"], [1, 1])
    assert p["tuple"] == [1, 2] and p["empty list"] == [] and p["empty dict"] == {}
    assert np.isnan(p["nonfinite"][0]) and p["nonfinite"][1:3] == [np.inf, -np.inf]
    assert str(p["nonfinite"][3]) == "-0.0"
    assert p["0d"].shape == () and p["0d"] == 3.0
    assert p["ints"] == payload["ints"] and all(type(i) is int for i in p["ints"])
    assert p["u64"] == 2**64 - 1 and p["huge"] == payload["huge"]


def test_empty_payload():
    for payload in ({}, None):
        back = decode_message(encode_message(Message("s", "a", "b", "k", payload)))
        assert back.payload == {}


def test_same_message_same_bytes_pinned():
    """The wire is pinned: a change of these bytes is a change of the wire
    format and needs a new WIRE_VERSION."""
    msg = Message(
        "plan",
        "server",
        "party 0",
        "plan",
        {"eps": 1.0, "n": -3, "x": np.array([1, 2], dtype="<i4"), "l": [None, "t"]},
    )
    frame = encode_message(msg)
    assert frame == encode_message(msg)
    assert frame == (
        b'\x08\x02\x12\x04plan\x1a\x06server"\x07party 0*\x04plan2H\n\x10\n\x03eps'
        b"\x12\t)\x00\x00\x00\x00\x00\x00\xf0?\n\x07\n\x01n\x12\x02\x18\x05\n\x19"
        b"\n\x01x\x12\x14B\x12\n\x03<i4\x12\x01\x02\x1a\x08\x01\x00\x00\x00\x02\x00"
        b"\x00\x00\n\x10\n\x01l\x12\x0bJ\t\n\x02\x08\x00\n\x032\x01t"
    )


@pytest.mark.parametrize(
    "value",
    [
        np.array(["a", "b"]),
        np.array([object()], dtype=object),
        np.array([1 + 2j]),
        np.zeros(2, dtype=[("a", "f8")]),
        np.array(["2020-01-01"], dtype="datetime64[D]"),
        object(),
        {1: 2},
        lambda: 0,
        "lone surrogate \udc80",
        {"key \ud800": 1},
        pytest.param(2 ** (8 * _wire.MAX_BIG_INT_BYTES), id="too big an int"),
    ],
)
def test_refuses_to_encode_non_data(value):
    msg = Message("s", "a", "b", "k", {"x": value})
    with pytest.raises(WireError):
        encode_message(msg)


def test_refuses_to_encode_bad_names():
    for names in [("", "a", "b", "k"), ("s", "a" * (MAX_NAME_CHARS + 1), "b", "k")]:
        with pytest.raises(WireError, match="non-empty string"):
            encode_message(Message(*names, {}))
    with pytest.raises(WireError, match="must be a dict"):
        encode_message(Message("s", "a", "b", "k", [1]))


# ------------------------------------------------------------- refusals
def test_refuses_bad_arrays():
    ok = decode_message(_frame({"x": _array("<f8", [1])}))
    assert ok.payload["x"].shape == (1,)
    for dtype in ["|O", "O", ">f8", "<c16", "<M8[D]", "<U1", "", "<f8\0"]:
        _refused(_frame({"x": _array(dtype, [1])}), "dtype")
    _refused(_frame({"x": _array("<f8", [2])}), r"needs 16 bytes, its data has 8")
    _refused(_frame({"x": _array("<f8", [0])}), r"needs 0 bytes")
    _refused(_frame({"x": _array("<f8", [1] * (MAX_NDIM + 1))}), "dimensions")
    _refused(_frame({"x": _array("<f8", [0, 2**63], 0)}), "bad array shape")
    _refused(_frame({"x": _array("<f8", [0, 2**62, 2**62], 0)}), "bad array shape")
    deep = _array("<f8", [1] * MAX_NDIM)
    assert decode_message(_frame({"x": deep})).payload["x"].ndim == MAX_NDIM


def _nested(levels, container):
    value = _array("<f8", [1])
    for _ in range(levels):
        outer = pb.Value()
        if container == "list":
            outer.list_value.items.add().CopyFrom(value)
        else:
            outer.map_value.entries.add(key="k").value.CopyFrom(value)
        value = outer
    return value


@pytest.mark.parametrize("container", ["list", "map"])
def test_depth(container):
    """Values MAX_DEPTH levels below the payload decode (the deepest the
    protobuf runtime allows for maps); one level more is refused."""
    frame = _frame({"x": _nested(MAX_DEPTH - 1, container)})
    back = decode_message(frame).payload["x"]
    for _ in range(MAX_DEPTH - 1):
        back = back[0] if container == "list" else back["k"]
    assert back.shape == (1,)
    _refused(_frame({"x": _nested(MAX_DEPTH, container)}), "deeper than")
    _refused(_frame({"x": _nested(3 * MAX_DEPTH, container)}), "deeper than")
    value = {"k": 1}
    for _ in range(MAX_DEPTH + 1):
        value = {"k": value}
    with pytest.raises(WireError, match="deeper than"):
        encode_message(Message("s", "a", "b", "k", value))


def test_too_many_entries_refused_before_parsing(monkeypatch):
    """MAX_ENTRIES + 1 values (4 wire bytes each) are refused by the walk over
    the wire format, before protobuf allocates a message for each."""
    items = b"\x0a\x02\x08\x00" * (MAX_ENTRIES + 1)  # List.items: Value(null)
    frame = _raw_frame(b"\x4a" + _varint(len(items)) + items)  # Value.list_value

    parsed = []

    class NoParse:
        class Message:
            @staticmethod
            def FromString(data):
                parsed.append(len(data))
                raise AssertionError("parsed a frame the walk should refuse")

        Version = pb.Version

    _wire._schema()  # loaded, then its parser replaced
    monkeypatch.setitem(_wire._SCHEMA, "pb", NoParse)
    with pytest.raises(WireError, match=f"more than {MAX_ENTRIES} entries"):
        decode_message(frame)
    assert parsed == []  # refused by the walk: protobuf never saw the frame


def test_too_many_entries_after_parsing(monkeypatch):
    monkeypatch.setattr(_wire, "MAX_ENTRIES", 10)
    # the payload map, its value "x" and the list's items are entries
    ten = pb.Value(list_value=pb.List(items=[pb.Value(int_value=i) for i in range(8)]))
    assert decode_message(_frame({"x": ten})).payload["x"] == list(range(8))
    eleven = pb.Value(list_value=pb.List(items=[pb.Value(int_value=1)] * 9))
    _refused(_frame({"x": eleven}), "more than 10 entries")
    # entries without a value: no value counted, but each is a message
    assert decode_message(_raw_frame(b"\x08\x00", b"", entries=1)).payload == {"": None}
    monkeypatch.setattr(_wire, "_MAX_STEPS", 50)
    keys_only = b"\x0a\x00" * 100  # 100 Map.entries, each an empty Entry
    _refused(_frame() + b"\x32" + _varint(200) + keys_only, "more than 10 entries")


def _raw_frame(value, key=b"\x0a\x01x", entries=1):
    """A frame whose payload has ``entries`` entries, each the serialized
    ``key`` field and the Value serialized as ``value``."""
    entry = key + b"\x12" + _varint(len(value)) + value  # Entry(key, value)
    payload = (b"\x0a" + _varint(len(entry)) + entry) * entries  # Map.entries
    return _frame() + b"\x32" + _varint(len(payload)) + payload  # Message.payload


def _varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def test_refuses_bad_names_and_values():
    long = "n" * (MAX_NAME_CHARS + 1)
    assert decode_message(_frame(step="n" * MAX_NAME_CHARS)).step == "n" * 256
    for names in [{"step": ""}, {"sender": long}, {"receiver": ""}, {"kind": long}]:
        _refused(_frame(**names), "non-empty string")
    _refused(_frame({"x": pb.Value()}), "holds no value")
    _refused(_frame({"x": pb.Value(null_value=5)}), "bad null")
    twice = pb.Message.FromString(_frame({"x": pb.Value(int_value=1)}))
    twice.payload.entries.add(key="x").value.int_value = 2
    _refused(twice.SerializeToString(), "payload key 'x' appears twice")
    for data in [b"", b"\x00" * 9, (5).to_bytes(9, "big"), b"\xff" * 9, b"\x00\x80"]:
        _refused(_frame({"x": pb.Value(big_int=data)}), "big integer")
    too_long = b"\x01" + b"\x00" * _wire.MAX_BIG_INT_BYTES
    _refused(_frame({"x": pb.Value(big_int=too_long)}), "big integer has")
    assert decode_message(_frame({"x": pb.Value(big_int=b"\x00\x80" + b"\0" * 7)}))


def test_refuses_other_wire_versions():
    msg = f"wire version mismatch: got 1 .*this skdp speaks {WIRE_VERSION}"
    _refused(_v1_frame(), msg)
    _refused(_v1_frame()[:8], msg)
    for version in (1, 3, 2**32 - 1):
        text = _refused(_frame(version=version), "wire version mismatch")
        assert f"got {version}, this skdp speaks {WIRE_VERSION}" in text
    # a later version's frame with fields this version does not know
    future = _frame(version=3) + b"\x3a\x03new" + b"\xc2\x3e\x01z"
    _refused(future, "wire version mismatch: got 3")
    _refused(_frame(version=0), "no wire version")
    _refused(_frame()[2:], "no wire version")  # field 1 left out


def test_refuses_malformed_frames():
    good = _frame({"x": _array("<f8", [1])})
    assert decode_message(good).payload["x"].shape == (1,)
    cases = {
        "truncated by one": good[:-1],
        "truncated in a field": good[:20],
        "extra byte": good + b"\x00",
        "unknown field": good + b"\x3a\x01z",
        "unknown field in a value": _raw_frame(b"\x08\x00\x62\x01z"),
        "value of two types": _raw_frame(b"\x08\x00\x10\x01"),
        "a name twice": good + b"\x12\x01t",
        "a map entry's key twice": _raw_frame(b"\x08\x00", b"\x0a\x01x\x0a\x01y"),
        "wrong wire type": good + b"\x15\x00\x00\x00\x00",
        "group": good + b"\x0b\x0c",
        "field 0": good + b"\x00\x00",
        "overlong varint": good + b"\x08" + b"\xff" * 11,
        "length beyond the frame": good + b"\x12\xff\xff\xff\xff\x0f",
        "invalid UTF-8 in a name": _frame(step="\u00e9").replace(b"\xc3\xa9", b"\xc3("),
        "garbage": b"\x80\x81\x82 garbage \xff",
        "pickle": b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00N.",
    }
    for name, frame in cases.items():
        with pytest.raises(WireError):
            decode_message(frame)
            pytest.fail(f"accepted a frame with {name}")


def test_size_limit_and_type():
    frame = encode_message(Message("s", "a", "b", "k", {"x": b"x" * 1000}))
    assert decode_message(frame, max_bytes=len(frame)).payload["x"] == b"x" * 1000
    with pytest.raises(WireError, match="exceeds"):
        decode_message(frame, max_bytes=len(frame) - 1)
    with pytest.raises(WireError, match="bytes"):
        decode_message("not bytes")
    assert decode_message(memoryview(bytearray(frame))).payload["x"] == b"x" * 1000


def test_random_bytes_raise_only_wire_errors():
    """Random byte strings and random mutations of valid frames: decoding either
    returns a Message or raises WireError, nothing else."""
    rng = np.random.default_rng(0)
    payload = {
        "a": np.arange(6.0).reshape(2, 3),
        "b": [1, -(2**70), "t", None, {"c": b"\x00\x01"}],
        "d": 0.5,
        "e": True,
    }
    good = encode_message(Message("plan", "server", "party 0", "plan", payload))
    frames = [rng.bytes(int(rng.integers(0, 64))) for _ in range(1500)]
    for _ in range(1500):
        frame = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            if not frame:
                break
            op, at = rng.integers(0, 4), int(rng.integers(0, len(frame)))
            if op == 0:
                frame[at] = int(rng.integers(0, 256))
            elif op == 1:
                frame[at] ^= 1 << int(rng.integers(0, 8))
            elif op == 2:
                del frame[at:]
            else:
                frame[at:at] = rng.bytes(int(rng.integers(1, 4)))
        frames.append(bytes(frame))
    decoded = 0
    for frame in frames:
        try:
            message = decode_message(frame)
        except WireError:
            continue
        assert isinstance(message, Message) and isinstance(message.payload, dict)
        decoded += 1
    assert 0 < decoded < len(frames)


# A fresh interpreter in which google.protobuf cannot be imported, as without the
# "federated" extra: skdp.vertical.federated still imports, the wire says what
# to install, and skdp-party exits 2 with the install hint.
_WITHOUT_PROTOBUF = """
import sys


class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name == "google.protobuf" or name.startswith("google.protobuf."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Blocked())
import skdp.vertical.federated
from skdp.vertical._messages import Message
from skdp.vertical.federated._cli import party_main
from skdp.vertical.federated._wire import encode_message

try:
    encode_message(Message("s", "a", "b", "k", {}))
except ImportError as exc:
    print("ImportError:", exc)
sys.exit(party_main(["--config", sys.argv[1]]))
"""


def test_without_protobuf_the_install_hint(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-c", _WITHOUT_PROTOBUF, str(tmp_path / "party.toml")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert "ImportError: the federated wire format needs protobuf" in proc.stdout
    assert '"federated" extra: pip install' in proc.stdout
    assert "skdp-party: needs google.protobuf" in proc.stderr
    assert 'pip install ".[federated]"' in proc.stderr
    assert "Traceback" not in proc.stderr


def test_walk_budget_admits_every_payload_within_the_entry_limit(monkeypatch):
    """The walk's step budget never refuses what the entry limit admits: a map
    of arrays (the most steps per value) with MAX_ENTRIES entries in all."""
    monkeypatch.setattr(_wire, "MAX_ENTRIES", 50)
    monkeypatch.setattr(_wire, "_MAX_STEPS", 10 * 50 + 16)
    payload = {f"k{i}": np.zeros((1, 2)) for i in range(49)}  # + the payload map
    assert (
        len(
            decode_message(encode_message(Message("s", "a", "b", "k", payload))).payload
        )
        == 49
    )
    payload["k49"] = np.zeros(1)
    with pytest.raises(WireError, match="more than 50 entries"):
        decode_message(encode_message(Message("s", "a", "b", "k", payload)))
