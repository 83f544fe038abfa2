"""Wire format of a protocol message: data only, never pickle, never code.

A frame is::

    b"SKDPMSG1" | header length (4 bytes, big endian) | JSON header | buffers

The JSON header holds the message's ``step``, ``sender``, ``receiver`` and
``kind`` and a tree describing the payload. Leaves are JSON scalars (``None``,
``bool``, ``int``, ``float``, ``str``), raw byte strings (``{"t": "b"}``: SEAL
ciphertexts, keys) and numeric arrays (``{"t": "a"}``: dtype, shape); lists and
string-keyed dicts nest. Byte strings and arrays point into the buffers that follow
the header, in order, by their length. Decoding rebuilds only these types: an
array's dtype must be one of :data:`ALLOWED_DTYPES` (little-endian numbers and
booleans; no object, string, structured or datetime dtype), its shape must
multiply to its byte length, the buffers must account for the frame exactly, and
nesting, entry counts and string lengths are bounded. Anything else raises
:class:`WireError` naming what was wrong. Tuples are sent as lists.
"""

import json
import math
import numbers
import struct

import numpy as np

__all__ = ["ALLOWED_DTYPES", "WireError", "decode_message", "encode_message"]

MAGIC = b"SKDPMSG1"
_HEADER_LEN = struct.Struct(">I")
#: dtypes an array on the wire may have (numpy ``dtype.str``).
ALLOWED_DTYPES = frozenset(
    ["|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f4", "<f8"]
)
MAX_HEADER_BYTES = 64 * 2**20
MAX_DEPTH = 32
MAX_NDIM = 32
MAX_ENTRIES = 1_000_000
MAX_NAME_CHARS = 256


class WireError(ValueError):
    """A frame that is not a well-formed skdp message."""


def _check_name(value, what):
    if not isinstance(value, str) or not value or len(value) > MAX_NAME_CHARS:
        raise WireError(
            f"message {what} must be a non-empty string of at most "
            f"{MAX_NAME_CHARS} characters, got {value!r:.80}."
        )
    return value


# ---------------------------------------------------------------- encoding
def _encode_value(value, buffers, depth):
    if depth > MAX_DEPTH:
        raise WireError(f"payload nested deeper than {MAX_DEPTH} levels.")
    if value is None or isinstance(value, bool | str):
        return {"t": "j", "v": value}
    if isinstance(value, np.bool_):
        return {"t": "j", "v": bool(value)}
    if isinstance(value, numbers.Integral):
        return {"t": "j", "v": int(value)}
    if isinstance(value, numbers.Real) and not isinstance(value, np.ndarray):
        value = float(value)
        if math.isfinite(value):
            return {"t": "j", "v": value}
        return {"t": "f", "v": repr(value)}  # nan / inf / -inf, not JSON
    if isinstance(value, bytes | bytearray | memoryview):
        buffers.append(bytes(value))
        return {"t": "b", "n": len(buffers[-1])}
    if isinstance(value, np.ndarray):
        arr = value
        if arr.dtype.byteorder == ">" or (
            arr.dtype.byteorder == "=" and arr.dtype.str.startswith(">")
        ):
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        if arr.dtype.str not in ALLOWED_DTYPES:
            raise WireError(
                f"array dtype {value.dtype} cannot be sent: allowed are "
                f"{sorted(ALLOWED_DTYPES)}."
            )
        data = np.ascontiguousarray(arr).tobytes()
        buffers.append(data)
        return {"t": "a", "dtype": arr.dtype.str, "shape": list(arr.shape)}
    if isinstance(value, list | tuple):
        return {"t": "l", "v": [_encode_value(v, buffers, depth + 1) for v in value]}
    if isinstance(value, dict):
        out = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise WireError(f"payload keys must be strings, got {key!r:.80}.")
            out[key] = _encode_value(v, buffers, depth + 1)
        return {"t": "d", "v": out}
    raise WireError(
        f"cannot send a {type(value).__name__}: payload values are numeric "
        "arrays, bytes, str, int, float, bool, None, lists and dicts of these."
    )


def encode_message(message):
    """Encode a protocol message (``step``, ``sender``, ``receiver``, ``kind``,
    ``payload``) into bytes.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.vertical._messages import Message
    >>> msg = Message("plan", "server", "party-a", "plan",
    ...               {"eps": 1.0, "rows": np.arange(3)})
    >>> back = decode_message(encode_message(msg))
    >>> back.sender, back.payload["eps"], back.payload["rows"].tolist()
    ('server', 1.0, [0, 1, 2])
    """
    buffers = []
    payload = message.payload if message.payload is not None else {}
    if not isinstance(payload, dict):
        raise WireError(f"message payload must be a dict, got {type(payload)}.")
    header = {
        "step": _check_name(message.step, "step"),
        "sender": _check_name(message.sender, "sender"),
        "receiver": _check_name(message.receiver, "receiver"),
        "kind": _check_name(message.kind, "kind"),
        "payload": _encode_value(payload, buffers, 0),
        "buffers": [len(b) for b in buffers],
    }
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    if len(head) > MAX_HEADER_BYTES:
        raise WireError(f"message header exceeds {MAX_HEADER_BYTES} bytes.")
    return b"".join([MAGIC, _HEADER_LEN.pack(len(head)), head, *buffers])


# ---------------------------------------------------------------- decoding
class _Reader:
    """Hands out the frame's buffers in order, checking every length."""

    def __init__(self, view, start, lengths):
        self.view, self.pos, self.lengths, self.next = view, start, lengths, 0
        self.entries = 0

    def take(self):
        if self.next >= len(self.lengths):
            raise WireError("payload refers to more buffers than the frame has.")
        n = self.lengths[self.next]
        self.next += 1
        chunk = self.view[self.pos : self.pos + n]
        self.pos += n
        return chunk


def _decode_value(spec, reader, depth):
    if depth > MAX_DEPTH:
        raise WireError(f"payload nested deeper than {MAX_DEPTH} levels.")
    reader.entries += 1
    if reader.entries > MAX_ENTRIES:
        raise WireError(f"payload has more than {MAX_ENTRIES} entries.")
    if not isinstance(spec, dict) or not isinstance(spec.get("t"), str):
        raise WireError(f"malformed payload entry {spec!r:.80}.")
    t = spec["t"]
    if t == "j":
        v = spec.get("v")
        if v is not None and not isinstance(v, bool | int | float | str):
            raise WireError(f"a scalar entry holds a {type(v).__name__}.")
        if isinstance(v, float) and not math.isfinite(v):
            raise WireError("non-finite floats must be tagged 'f'.")
        return v
    if t == "f":
        if spec.get("v") not in ("nan", "inf", "-inf"):
            raise WireError(f"bad non-finite float {spec.get('v')!r:.80}.")
        return float(spec["v"])
    if t == "b":
        chunk = reader.take()
        if spec.get("n") != len(chunk):
            raise WireError("a byte string's length does not match its buffer.")
        return bytes(chunk)
    if t == "a":
        return _decode_array(spec, reader.take())
    if t == "l":
        items = spec.get("v")
        if not isinstance(items, list):
            raise WireError("a list entry does not hold a list.")
        return [_decode_value(v, reader, depth + 1) for v in items]
    if t == "d":
        items = spec.get("v")
        if not isinstance(items, dict):
            raise WireError("a dict entry does not hold a dict.")
        return {k: _decode_value(v, reader, depth + 1) for k, v in items.items()}
    raise WireError(f"unknown payload entry type {t!r:.20}.")


def _decode_array(spec, chunk):
    dtype, shape = spec.get("dtype"), spec.get("shape")
    if dtype not in ALLOWED_DTYPES:
        raise WireError(
            f"array dtype {dtype!r:.40} is not allowed (allowed: "
            f"{sorted(ALLOWED_DTYPES)})."
        )
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_NDIM
        or not all(type(s) is int and s >= 0 for s in shape)
    ):
        raise WireError(f"bad array shape {shape!r:.80}.")
    dt = np.dtype(dtype)
    if math.prod(shape) * dt.itemsize != len(chunk):
        raise WireError(
            f"array of shape {tuple(shape)} and dtype {dtype} needs "
            f"{math.prod(shape) * dt.itemsize} bytes, its buffer has {len(chunk)}."
        )
    # a writable copy that owns its memory (not a view into the frame)
    return np.frombuffer(chunk, dtype=dt).reshape(shape).copy()


def decode_message(data, max_bytes=None):
    """Decode bytes made by :func:`encode_message` into a message.

    Parameters
    ----------
    data : bytes
    max_bytes : int or None
        Refuse frames larger than this.

    Raises
    ------
    WireError
        For anything but a well-formed frame of allowed types.
    """
    from skdp.vertical._messages import Message

    if not isinstance(data, bytes | bytearray | memoryview):
        raise WireError(f"a frame is bytes, got {type(data).__name__}.")
    view = memoryview(data)
    if max_bytes is not None and len(view) > max_bytes:
        raise WireError(f"frame of {len(view)} bytes exceeds {max_bytes}.")
    start = len(MAGIC) + _HEADER_LEN.size
    if len(view) < start or bytes(view[: len(MAGIC)]) != MAGIC:
        raise WireError("not an skdp message frame (bad magic).")
    (head_len,) = _HEADER_LEN.unpack(view[len(MAGIC) : start])
    if head_len > MAX_HEADER_BYTES or start + head_len > len(view):
        raise WireError(f"bad header length {head_len}.")
    try:
        header = json.loads(
            bytes(view[start : start + head_len]),
            parse_constant=lambda c: (_ for _ in ()).throw(
                WireError(f"JSON constant {c} is not allowed.")
            ),
        )
    except WireError:
        raise
    except (ValueError, RecursionError) as exc:
        raise WireError(f"message header is not valid JSON ({exc}).") from None
    if not isinstance(header, dict):
        raise WireError("message header is not a JSON object.")
    expected = {"step", "sender", "receiver", "kind", "payload", "buffers"}
    if set(header) != expected:
        raise WireError(
            f"message header keys must be {sorted(expected)}, got {sorted(header)}."
        )
    lengths = header["buffers"]
    if not isinstance(lengths, list) or not all(
        type(n) is int and n >= 0 for n in lengths
    ):
        raise WireError("bad buffer table.")
    body = start + head_len
    if body + sum(lengths) != len(view):
        raise WireError(
            f"buffers declare {sum(lengths)} bytes, the frame carries "
            f"{len(view) - body}."
        )
    reader = _Reader(view, body, lengths)
    try:
        payload = _decode_value(header["payload"], reader, 0)
    except RecursionError:
        raise WireError("payload nested too deeply.") from None
    if reader.next != len(lengths):
        raise WireError("the frame carries buffers no payload entry refers to.")
    if not isinstance(payload, dict):
        raise WireError("message payload must be a dict.")
    return Message(
        step=_check_name(header["step"], "step"),
        sender=_check_name(header["sender"], "sender"),
        receiver=_check_name(header["receiver"], "receiver"),
        kind=_check_name(header["kind"], "kind"),
        payload=payload,
    )
