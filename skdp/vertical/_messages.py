"""What the roles of the vertical protocol exchange: messages and the role API.

Every participant (the server, each party, the noise dealer) is a :class:`Role`:
a state machine that reacts to one :class:`Message` at a time and returns the
messages it wants sent. Roles never call each other; something else delivers the
messages: :func:`skdp.vertical._driver.drive` in one process, the gRPC runtime
across processes. Both run exactly the same role code, so the in-process
estimators and the federated deployment are one protocol.

A payload is *data only*: a ``dict`` from ``str`` to numpy arrays (numeric or
bool dtype), ``bytes`` (SEAL ciphertexts and public contexts, serialized by
SEAL), ``str``, ``int``, ``float``, ``bool``, ``None``, or lists / dicts of
those. No objects, no pickle, no code: :func:`check_payload` enforces it on every
message, and a transport can encode any payload as JSON plus binary blobs.
"""

import numbers
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "ABORT",
    "SERVER",
    "Message",
    "ProtocolError",
    "Role",
    "abort_message",
    "check_payload",
    "party_name",
    "payload_nbytes",
]

SERVER = "server"
DEALER = "noise dealer"
ABORT = "abort"


def party_name(k):
    """The role name of party ``k``: ``"party k"``."""
    return f"party {int(k)}"


class ProtocolError(RuntimeError):
    """A party or the server failed during the protocol; nothing was released.

    The message names the role, the protocol step and the cause.
    """


def _fail(step, cause, role):
    if isinstance(role, Role):
        role = role.name
    if isinstance(cause, BaseException):
        cause = f"{type(cause).__name__}: {cause}"
    return ProtocolError(
        f"{role} failed during step {step!r} ({cause}); the protocol was aborted "
        "and no model was released."
    )


def check_payload(payload, where="payload"):
    """Raise TypeError unless ``payload`` is data only (see the module doc)."""
    if payload is None or isinstance(payload, str | bytes | bool):
        return
    if isinstance(payload, np.generic):
        # JSON has no numpy scalars: what works in one process must work on a wire
        raise TypeError(
            f"{where}: a numpy scalar ({type(payload).__name__}); send a Python "
            "number (.item()) or an array."
        )
    if isinstance(payload, numbers.Integral | numbers.Real):
        return
    if isinstance(payload, np.ndarray):
        if payload.dtype.kind not in "biuf":
            raise TypeError(
                f"{where}: arrays must have a numeric or bool dtype, got "
                f"{payload.dtype}."
            )
        return
    if isinstance(payload, list | tuple):
        for i, value in enumerate(payload):
            check_payload(value, f"{where}[{i}]")
        return
    if isinstance(payload, dict):
        for key, value in payload.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: keys must be str, got {key!r}.")
            check_payload(value, f"{where}[{key!r}]")
        return
    raise TypeError(
        f"{where}: a message carries data only (arrays, bytes, str, numbers, bool, "
        f"None, lists and dicts of those), got {type(payload).__name__}."
    )


def payload_nbytes(payload):
    """Size of a payload on the wire (data, not framing): array and byte sizes,
    UTF-8 strings, 8 bytes per number, 0 for None."""
    if payload is None:
        return 0
    if isinstance(payload, bytes | bytearray):
        return len(payload)
    if isinstance(payload, str):
        return len(payload.encode())
    if isinstance(payload, np.ndarray):
        return int(payload.nbytes)
    if isinstance(payload, list | tuple):
        return sum(payload_nbytes(p) for p in payload)
    if isinstance(payload, dict):
        return sum(payload_nbytes(p) for p in payload.values())
    return 8


@dataclass(frozen=True)
class Message:
    """One message of the protocol.

    Parameters
    ----------
    step : str
        Protocol step: ``"declare"``, ``"plan"``, ``"noise"``, ``"local"``,
        ``"cross"``, ``"release"`` or ``"abort"``.
    sender, receiver : str
        Role names: ``"server"``, ``"party 0"``, ``"party 1"``, ...,
        ``"noise dealer"``.
    kind : str
        What the payload is, e.g. ``"public context"``, ``"encrypted columns"``.
    payload : dict
        Data only (see :func:`check_payload`).
    """

    step: str
    sender: str
    receiver: str
    kind: str
    payload: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def nbytes(self):
        """Bytes of the payload's data."""
        return payload_nbytes(self.payload)


def abort_message(sender, receiver, cause):
    """The message a role (or a runtime) sends when the run must stop."""
    return Message(ABORT, sender, receiver, "abort", {"cause": str(cause)})


class Role:
    """Base class of every protocol participant.

    Subclasses implement :meth:`_start` and :meth:`_receive`; the public
    :meth:`start` and :meth:`receive` wrap them so that any failure becomes a
    :class:`ProtocolError` naming the role, the step and the cause, and an
    ``"abort"`` message stops the role. A role sets ``finished = True`` when it
    has nothing more to do and ``result`` to what it ends with (the server: the
    released model; a party: what the protocol gives it).

    Attributes
    ----------
    name : str
    finished : bool
    result : dict or None
    """

    name = "role"

    def __init__(self):
        self.finished = False
        self.result = None
        self._step = None

    def start(self):
        """Messages to send when the run starts (a list of :class:`Message`)."""
        return self._guard("start", self._start)

    def receive(self, message):
        """React to ``message``; return the messages to send."""
        if message.receiver != self.name:
            raise _fail(
                message.step, f"received a message for {message.receiver!r}", self
            )
        if message.step == ABORT:
            self.finished = True
            self.result = None
            raise ProtocolError(
                f"{message.sender} aborted the protocol "
                f"({message.payload.get('cause', 'no cause given')}); "
                "no model was released."
            )
        if self.finished:
            raise _fail(
                message.step,
                f"got {message.kind!r} from {message.sender} after it had finished",
                self,
            )
        return self._guard(message.step, self._receive, message)

    def _guard(self, step, fn, *args):
        # a role that moves on to another step while handling a message (a party
        # computing its coefficients when the plan is complete) sets self._step
        self._step = step
        try:
            out = list(fn(*args) or [])
            for message in out:
                if not isinstance(message, Message) or message.sender != self.name:
                    raise TypeError(f"not a message from {self.name}: {message!r}")
                check_payload(message.payload, f"{message.kind!r} payload")
        except ProtocolError:
            raise
        except Exception as exc:
            raise _fail(self._step, exc, self) from exc
        return out

    def _start(self):
        return []

    def _receive(self, message):  # pragma: no cover - every role overrides
        raise NotImplementedError

    def _send(self, step, receiver, kind, payload):
        return Message(step, self.name, receiver, kind, payload)

    def __repr__(self):
        state = "finished" if self.finished else "running"
        return f"{type(self).__name__}({self.name!r}, {state})"
