"""Wire format of a protocol message: data only, never pickle, never code.

A message travels as a protocol-buffers ``skdp.wire.Message`` (wire version
:data:`WIRE_VERSION`), defined in ``skdp_wire.proto`` beside this module;
``skdp_wire_pb2.py`` is generated from it (the regeneration command is in the
``.proto`` header and CONTRIBUTING.md), so only the ``protobuf`` runtime is
needed. A Message holds the version, ``step``, ``sender``, ``receiver``,
``kind`` and the payload, a string-keyed map of ``Value``\\ s; a Value is one of
null, bool, int (int64, or a big integer as two's-complement bytes), double
(nan and infinities included), string, bytes (SEAL ciphertexts, keys), a
numeric array (dtype, shape, little-endian C-order data), a list or a map.
Tuples are sent as lists; map entries keep the dict's order.

Decoding takes three passes, each refusing with :class:`WireError` naming what
was wrong:

1. *Before parsing*, a walk over the wire format driven by the schema's
   descriptors: every field must be one this version defines, with its wire
   type, and be set at most once (an unknown field, a group, a truncated
   field, a repeated name or a value of two kinds is refused), messages
   nest at most as deep as :data:`MAX_DEPTH` payload levels allow, there are
   at most :data:`MAX_ENTRIES` payload values and an array has at most
   :data:`MAX_NDIM` dimensions. The protobuf parser allocates some 25 bytes
   per wire byte of tiny values (measured: a 40 MB frame of empty values took
   980 MB), so these bounds must hold before it runs.
2. The protobuf runtime parses the frame; its errors become :class:`WireError`.
   A frame of another wire version (including version 1, the hand-written
   ``SKDPMSG1`` JSON frame) is refused as ``wire version mismatch``.
3. The payload is rebuilt as Python objects: names non-empty and at most
   :data:`MAX_NAME_CHARS` characters, dtype in :data:`ALLOWED_DTYPES` (no
   object, string, structured or datetime dtype), ``prod(shape) * itemsize ==
   len(data)``, depth and entries bounded, map keys unique, big integers
   canonical and at most :data:`MAX_BIG_INT_BYTES` long.

Decoded payloads are what the roles sent, with numpy scalars as Python numbers,
tuples as lists and big-endian arrays as little-endian ones; every array is a
writable copy that owns its memory.
"""

import math
import numbers

import numpy as np

__all__ = [
    "ALLOWED_DTYPES",
    "WIRE_VERSION",
    "WireError",
    "decode_message",
    "encode_message",
]

#: Version of the wire format this skdp speaks (1: the ``SKDPMSG1`` JSON frame).
WIRE_VERSION = 2
#: What a version-1 frame starts with (refused with a version mismatch).
V1_MAGIC = b"SKDPMSG1"
#: dtypes an array on the wire may have (numpy ``dtype.str``).
ALLOWED_DTYPES = frozenset(
    ["|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f4", "<f8"]
)
MAX_DEPTH = 32
MAX_NDIM = 32
MAX_ENTRIES = 1_000_000
MAX_NAME_CHARS = 256
#: Longest integer outside int64 (2048 bytes: 16384 bits; version 1's JSON
#: allowed Python's 4300 decimal digits, about 1786 bytes).
MAX_BIG_INT_BYTES = 2048
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: Protobuf nesting of a map nested MAX_DEPTH deep, holding an array:
#: Message > Map > (Entry > Value > Map) x MAX_DEPTH ... > Array.
_MAX_NESTING = 3 * MAX_DEPTH + 3
#: Messages and fields the walk visits at most. A payload of MAX_ENTRIES values
#: needs fewer: per value at most 10 (the Map field holding its Entry, the
#: Entry and its 2 fields, the Value and its field, an Array and its 3 fields;
#: the shape packed, as encode_message writes it).
_MAX_STEPS = 10 * MAX_ENTRIES + 16


class WireError(ValueError):
    """A frame that is not a well-formed skdp message."""


_SCHEMA = {}


def _schema():
    """The generated module and the walk's plan of it (imported on first use:
    ``protobuf`` belongs to the ``federated`` extra)."""
    if not _SCHEMA:
        try:
            from google.protobuf.message import DecodeError

            from skdp.vertical.federated import skdp_wire_pb2
        except ImportError as exc:
            from skdp.utils.extras import install_hint

            raise ImportError(
                f"the federated wire format needs protobuf ({exc}): "
                + install_hint("federated")
            ) from exc
        _SCHEMA.update(
            pb=skdp_wire_pb2, decode_error=DecodeError, plan=_plan(skdp_wire_pb2)
        )
    return _SCHEMA


def _plan(pb):
    """``{message name: {field number: (wire types, child message name, slot)}}``
    from the descriptors (the schema is written once, in the ``.proto``); a
    slot is what a singular field or a oneof fills, None for repeated fields."""
    plan = {}
    for desc in pb.DESCRIPTOR.message_types_by_name.values():
        fields = {}
        for f in desc.fields:
            repeated = getattr(f, "is_repeated", None)
            if repeated is None:  # protobuf < 5.29
                repeated = f.label == f.LABEL_REPEATED
            oneof = f.containing_oneof
            slot = None if repeated else (oneof.name if oneof else f.name)
            if f.type == f.TYPE_MESSAGE:
                fields[f.number] = ({2}, f.message_type.full_name, slot)
            elif f.type in (f.TYPE_STRING, f.TYPE_BYTES):
                fields[f.number] = ({2}, None, slot)
            else:  # bool, enum, uint32, uint64, sint64: varint; double: 64-bit
                wire = 1 if f.type == f.TYPE_DOUBLE else 0
                fields[f.number] = ({wire, 2} if repeated else {wire}, None, slot)
        plan[desc.full_name] = fields
    return plan


def _check_name(value, what):
    if not isinstance(value, str) or not value or len(value) > MAX_NAME_CHARS:
        raise WireError(
            f"message {what} must be a non-empty string of at most "
            f"{MAX_NAME_CHARS} characters, got {value!r:.80}."
        )
    return value


# ---------------------------------------------------------------- encoding
def _set_text(out, field, value, what):
    try:
        setattr(out, field, value)
    except ValueError:  # UnicodeEncodeError: a lone surrogate is not UTF-8
        raise WireError(f"{what} is not valid Unicode: {value!r:.80}.") from None


def _encode_value(value, out, depth):
    """Write ``value`` into the empty ``Value`` ``out``."""
    if depth > MAX_DEPTH:
        raise WireError(f"payload nested deeper than {MAX_DEPTH} levels.")
    if value is None:
        out.null_value = 0
    elif isinstance(value, bool | np.bool_):
        out.bool_value = bool(value)
    elif isinstance(value, str):
        _set_text(out, "string_value", value, "a payload string")
    elif isinstance(value, numbers.Integral):
        value = int(value)
        if _INT64_MIN <= value <= _INT64_MAX:
            out.int_value = value
        else:
            size = (value.bit_length() + 8) // 8  # with the sign bit
            if size > MAX_BIG_INT_BYTES:
                raise WireError(
                    f"an integer of {size} bytes exceeds {MAX_BIG_INT_BYTES} bytes."
                )
            out.big_int = value.to_bytes(size, "big", signed=True)
    elif isinstance(value, numbers.Real) and not isinstance(value, np.ndarray):
        out.float_value = float(value)
    elif isinstance(value, bytes | bytearray | memoryview):
        out.bytes_value = bytes(value)
    elif isinstance(value, np.ndarray):
        arr = value
        if arr.dtype.str.startswith(">"):
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        if arr.dtype.str not in ALLOWED_DTYPES:
            raise WireError(
                f"array dtype {value.dtype} cannot be sent: allowed are "
                f"{sorted(ALLOWED_DTYPES)}."
            )
        out.array.dtype = arr.dtype.str
        out.array.shape.extend(arr.shape)
        out.array.data = np.ascontiguousarray(arr).tobytes()
    elif isinstance(value, list | tuple):
        items = out.list_value
        items.SetInParent()  # an empty list is a list, not an unset value
        for v in value:
            _encode_value(v, items.items.add(), depth + 1)
    elif isinstance(value, dict):
        out.map_value.SetInParent()
        _encode_map(value, out.map_value, depth)
    else:
        raise WireError(
            f"cannot send a {type(value).__name__}: payload values are numeric "
            "arrays, bytes, str, int, float, bool, None, lists and dicts of these."
        )


def _encode_map(value, out, depth):
    for key, v in value.items():
        if not isinstance(key, str):
            raise WireError(f"payload keys must be strings, got {key!r:.80}.")
        entry = out.entries.add()
        _set_text(entry, "key", key, "a payload key")
        _encode_value(v, entry.value, depth + 1)


def encode_message(message):
    """Encode a protocol message (``step``, ``sender``, ``receiver``, ``kind``,
    ``payload``) into bytes: a serialized ``skdp.wire.Message``.

    The same message always gives the same bytes (fields in schema order, map
    entries in the dict's order).

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
    pb = _schema()["pb"]
    payload = message.payload if message.payload is not None else {}
    if not isinstance(payload, dict):
        raise WireError(f"message payload must be a dict, got {type(payload)}.")
    out = pb.Message(version=WIRE_VERSION)
    for what in ("step", "sender", "receiver", "kind"):
        _set_text(out, what, _check_name(getattr(message, what), what), what)
    _encode_map(payload, out.payload, 0)
    return out.SerializeToString(deterministic=True)


# ---------------------------------------------------------------- decoding
def _varint(data, pos, end):
    """The varint at ``data[pos]`` and the position after it."""
    value = shift = 0
    while pos < end and shift < 70:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise WireError("not an skdp message frame (truncated or overlong varint).")


def _walk(data, plan):
    """Check the frame's wire format against the schema and bound what parsing
    it may allocate, before the protobuf runtime parses it (module doc, 1.)."""
    steps = [0, 0]  # values, messages and fields visited

    def walk(pos, end, name, nesting):
        if nesting > _MAX_NESTING:
            raise WireError(f"payload nested deeper than {MAX_DEPTH} levels.")
        fields, dims, filled = plan[name], 0, set()
        steps[0] += name == "skdp.wire.Value"
        while True:
            steps[1] += 1
            if steps[0] > MAX_ENTRIES or steps[1] > _MAX_STEPS:
                raise WireError(f"payload has more than {MAX_ENTRIES} entries.")
            if pos >= end:
                return
            key, pos = _varint(data, pos, end)
            number, wire = key >> 3, key & 7
            expected, child, slot = fields.get(number, ((), None, None))
            if wire not in expected:
                raise WireError(
                    f"not an skdp message frame: {name} has no field {number} of "
                    f"wire type {wire} in wire version {WIRE_VERSION}."
                )
            if slot in filled:  # protobuf would keep the last: refuse instead
                raise WireError(f"not an skdp message frame: {name}.{slot} twice.")
            if slot is not None:
                filled.add(slot)
            if wire == 0:
                _, pos = _varint(data, pos, end)
                dims += 1
            elif wire == 1:
                pos += 8
            else:
                size, pos = _varint(data, pos, end)
                if pos + size > end:
                    pos = end + 1  # truncated
                elif child is not None:
                    walk(pos, pos + size, child, nesting + 1)
                elif expected == {0, 2}:  # packed varints: an array's shape
                    region = data[pos : pos + min(size, 10 * MAX_NDIM + 1)]
                    dims += sum(b < 0x80 for b in region) + (size > 10 * MAX_NDIM)
                pos += size
            if pos > end:
                raise WireError(f"not an skdp message frame (truncated {name}).")
            if dims > MAX_NDIM and name == "skdp.wire.Array":
                raise WireError(f"an array has more than {MAX_NDIM} dimensions.")

    walk(0, len(data), "skdp.wire.Message", 0)


def _other_version(data, pb):
    """The wire version of a frame that does not parse as this version's
    Message if it names another one, else None."""
    if bytes(data[: len(V1_MAGIC) - 1]) == V1_MAGIC[:-1]:
        digit = bytes(data[len(V1_MAGIC) - 1 : len(V1_MAGIC)])
        return f"{digit.decode(errors='replace')} (a JSON frame, b'SKDPMSG...')"
    try:
        version = pb.Version.FromString(data).version
    except Exception:  # not even field 1 parses: no version to report
        return None
    return version if version not in (0, WIRE_VERSION) else None


def _mismatch(version):
    return WireError(
        f"wire version mismatch: got {version}, this skdp speaks {WIRE_VERSION} "
        "(every participant must run an skdp with the same wire version)."
    )


def _decode_value(value, state, depth):
    if depth > MAX_DEPTH:
        raise WireError(f"payload nested deeper than {MAX_DEPTH} levels.")
    state[0] += 1
    if state[0] > MAX_ENTRIES:
        raise WireError(f"payload has more than {MAX_ENTRIES} entries.")
    kind = value.WhichOneof("kind")
    if kind is None:
        raise WireError("a payload entry holds no value.")
    if kind == "null_value":
        if value.null_value != 0:
            raise WireError(f"bad null value {value.null_value}.")
        return None
    if kind in ("bool_value", "int_value", "float_value", "string_value"):
        return getattr(value, kind)
    if kind == "bytes_value":
        return bytes(value.bytes_value)
    if kind == "big_int":
        return _decode_big_int(value.big_int)
    if kind == "array":
        return _decode_array(value.array)
    if kind == "list_value":
        return [_decode_value(v, state, depth + 1) for v in value.list_value.items]
    return _decode_map(value.map_value, state, depth)


def _decode_map(value, state, depth):
    out = {}
    for entry in value.entries:
        if entry.key in out:
            raise WireError(f"payload key {entry.key!r:.80} appears twice.")
        out[entry.key] = _decode_value(entry.value, state, depth + 1)
    return out


def _decode_big_int(data):
    if not 0 < len(data) <= MAX_BIG_INT_BYTES:
        raise WireError(
            f"a big integer has {len(data)} bytes (1 to {MAX_BIG_INT_BYTES} allowed)."
        )
    value = int.from_bytes(data, "big", signed=True)
    if _INT64_MIN <= value <= _INT64_MAX or len(data) != (value.bit_length() + 8) // 8:
        raise WireError("a big integer is not in its canonical form.")
    return value


def _decode_array(spec):
    dtype, shape = spec.dtype, list(spec.shape)
    if dtype not in ALLOWED_DTYPES:
        raise WireError(
            f"array dtype {dtype!r:.40} is not allowed (allowed: "
            f"{sorted(ALLOWED_DTYPES)})."
        )
    if len(shape) > MAX_NDIM or any(s > _INT64_MAX for s in shape):
        raise WireError(f"bad array shape {shape!r:.80}.")
    dt, data = np.dtype(dtype), spec.data
    if math.prod(shape) * dt.itemsize != len(data):
        raise WireError(
            f"array of shape {tuple(shape)} and dtype {dtype} needs "
            f"{math.prod(shape) * dt.itemsize} bytes, its data has {len(data)}."
        )
    try:  # a writable copy that owns its memory
        return np.frombuffer(data, dtype=dt).reshape(shape).copy()
    except (ValueError, OverflowError):  # a zero-size shape numpy cannot hold
        raise WireError(f"bad array shape {shape!r:.80}.") from None


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
        For anything but a well-formed frame of this wire version and allowed
        types (see the module doc).
    """
    from skdp.vertical._messages import Message

    if not isinstance(data, bytes | bytearray | memoryview):
        raise WireError(f"a frame is bytes, got {type(data).__name__}.")
    try:
        view = memoryview(data).cast("B")
    except TypeError:
        raise WireError("a frame is a contiguous buffer of bytes.") from None
    if max_bytes is not None and len(view) > max_bytes:
        raise WireError(f"frame of {len(view)} bytes exceeds {max_bytes}.")
    schema = _schema()
    pb = schema["pb"]
    try:
        _walk(view, schema["plan"])
        try:
            msg = pb.Message.FromString(view)
        except (schema["decode_error"], ValueError, RecursionError) as exc:
            raise WireError(f"not an skdp message frame ({exc}).") from None
    except WireError:
        other = _other_version(view, pb)
        if other is not None:
            raise _mismatch(other) from None
        raise
    if msg.version != WIRE_VERSION:
        if msg.version == 0:
            raise WireError("not an skdp message frame (no wire version).")
        raise _mismatch(msg.version)
    names = {
        w: _check_name(getattr(msg, w), w)
        for w in ("step", "sender", "receiver", "kind")
    }
    state = [1]  # entries decoded, the payload map included
    try:
        payload = _decode_map(msg.payload, state, 0)
    except RecursionError:
        raise WireError("payload nested too deeply.") from None
    return Message(payload=payload, **names)
