import json
import struct

import numpy as np
import pytest

from skdp.vertical._messages import Message
from skdp.vertical.federated._wire import (
    MAGIC,
    WireError,
    decode_message,
    encode_message,
)


def _frame(header, buffers=b""):
    head = json.dumps(header).encode()
    return MAGIC + struct.pack(">I", len(head)) + head + buffers


def _header(payload, buffers=()):
    return {
        "step": "s",
        "sender": "a",
        "receiver": "b",
        "kind": "k",
        "payload": payload,
        "buffers": list(buffers),
    }


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
        "npint": np.int64(7),
        "big-endian": np.arange(4, dtype=">i4"),
        "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        "blob": b"\x00\x01seal",
        "text": "héllo",
        "nested": {"list": [1, 2.0, None, True, {"inner": np.ones(2)}]},
        "tuple": (1, 2),
        "nonfinite": [float("nan"), float("inf"), -float("inf")],
        "0d": np.array(3.0),
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
    assert p["empty"].shape == (0, 5)
    assert p["scalar"] == 2.5 and p["npint"] == 7 and type(p["npint"]) is int
    np.testing.assert_array_equal(p["big-endian"], [0, 1, 2, 3])
    assert p["big-endian"].dtype == np.dtype("<i4")
    np.testing.assert_array_equal(p["fortran"], np.arange(6.0).reshape(2, 3))
    assert p["blob"] == b"\x00\x01seal" and p["text"] == "héllo"
    assert p["nested"]["list"][:4] == [1, 2.0, None, True]
    np.testing.assert_array_equal(p["nested"]["list"][4]["inner"], [1, 1])
    assert p["tuple"] == [1, 2]
    assert np.isnan(p["nonfinite"][0]) and p["nonfinite"][1:] == [np.inf, -np.inf]
    assert p["0d"].shape == () and p["0d"] == 3.0


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
    ],
)
def test_refuses_to_encode_non_data(value):
    msg = Message("s", "a", "b", "k", {"x": value})
    with pytest.raises(WireError):
        encode_message(msg)


def _array_frame(dtype, shape):
    """A frame whose one array of 8 bytes claims this dtype and shape."""
    array = {"t": "a", "dtype": dtype, "shape": shape}
    return _frame(_header({"t": "d", "v": {"x": array}}, [8]), b"\x00" * 8)


def test_refuses_hostile_frames():
    good = encode_message(Message("s", "a", "b", "k", {"x": np.arange(3.0)}))
    cases = {
        "bad magic": b"PICKLE00" + good[8:],
        "truncated": good[:-1],
        "extra bytes": good + b"\x00",
        "header length beyond frame": good[:8] + struct.pack(">I", 10**6) + good[12:],
        "not json": MAGIC + struct.pack(">I", 3) + b"{{{",
        "json constant": MAGIC + struct.pack(">I", 3) + b"NaN",
        "object dtype": _array_frame("|O", [1]),
        "pickle dtype str": _array_frame("O", [1]),
        "big endian dtype": _array_frame(">f8", [1]),
        "shape/size mismatch": _array_frame("<f8", [2]),
        "negative shape": _array_frame("<f8", [-1]),
        "float shape": _array_frame("<f8", [1.0]),
        "unknown type": _frame(_header({"t": "d", "v": {"x": {"t": "pickle"}}})),
        "missing buffer": _frame(
            _header({"t": "d", "v": {"x": {"t": "b", "n": 4}}}, []), b""
        ),
        "unreferenced buffer": _frame(_header({"t": "d", "v": {}}, [4]), b"abcd"),
        "payload not a dict": _frame(_header({"t": "l", "v": []})),
        "extra header key": _frame(dict(_header({"t": "d", "v": {}}), code="x")),
        "empty sender": _frame(dict(_header({"t": "d", "v": {}}), sender="")),
        "scalar holding a dict": _frame(
            _header({"t": "d", "v": {"x": {"t": "j", "v": {"a": 1}}}})
        ),
        "bad non-finite": _frame(
            _header({"t": "d", "v": {"x": {"t": "f", "v": "__import__"}}})
        ),
    }
    deep = {"t": "j", "v": 1}
    for _ in range(100):
        deep = {"t": "l", "v": [deep]}
    cases["too deep"] = _frame(_header({"t": "d", "v": {"x": deep}}))
    for name, frame in cases.items():
        with pytest.raises(WireError):
            decode_message(frame)
            pytest.fail(f"accepted a frame with {name}")


def test_size_limit_and_type():
    frame = encode_message(Message("s", "a", "b", "k", {"x": b"x" * 1000}))
    with pytest.raises(WireError, match="exceeds"):
        decode_message(frame, max_bytes=100)
    with pytest.raises(WireError, match="bytes"):
        decode_message("not bytes")
