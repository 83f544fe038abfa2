"""The in-process driver of the vertical protocol, and its transcript.

:func:`drive` delivers the roles' messages first in, first out, records every
message in a :class:`Transcript`, and stops when every role has finished. The
federated runtime delivers the same messages over gRPC instead; the roles cannot
tell the difference.
"""

import sys
from collections import deque
from dataclasses import dataclass, field

from skdp.vertical._messages import Message, ProtocolError

__all__ = ["Record", "Transcript", "drive"]


@dataclass(frozen=True)
class Record:
    """What the transcript keeps of one message: who sent what kind of data to
    whom, how many bytes, and (on request) the payload itself."""

    step: str
    sender: str
    receiver: str
    kind: str
    nbytes: int
    payload: object = field(default=None, repr=False, compare=False)


class Transcript:
    """Every message of one protocol run, in order.

    Parameters
    ----------
    keep_payloads : bool
        Keep the payloads (what the receiver got) for inspection. Off by default:
        the bfv ciphertexts of a large fit take hundreds of megabytes.
    """

    def __init__(self, keep_payloads=False):
        self.keep_payloads = keep_payloads
        self.messages = []

    def record(self, message):
        """Record a :class:`~skdp.vertical._messages.Message`."""
        self.messages.append(
            Record(
                message.step,
                message.sender,
                message.receiver,
                message.kind,
                message.nbytes,
                message.payload if self.keep_payloads else None,
            )
        )

    def __len__(self):
        return len(self.messages)

    def __iter__(self):
        return iter(self.messages)

    @property
    def total_bytes(self):
        return sum(m.nbytes for m in self.messages)

    def _bytes_per(self, field):
        out = {}
        for m in self.messages:
            key = getattr(m, field)
            out[key] = out.get(key, 0) + m.nbytes
        return out

    def bytes_sent(self):
        """``{participant: bytes sent}``."""
        return self._bytes_per("sender")

    def bytes_received(self):
        """``{participant: bytes received}``."""
        return self._bytes_per("receiver")

    def bytes_by_kind(self):
        """``{message kind: bytes}``."""
        return self._bytes_per("kind")

    def summary(self):
        """Rows ``(participant, sent bytes, received bytes, messages sent)``."""
        sent, received = self.bytes_sent(), self.bytes_received()
        names = sorted(set(sent) | set(received))
        count = {}
        for m in self.messages:
            count[m.sender] = count.get(m.sender, 0) + 1
        return [(n, sent.get(n, 0), received.get(n, 0), count.get(n, 0)) for n in names]

    def __repr__(self):
        return f"Transcript({len(self.messages)} messages, {self.total_bytes} bytes)"


class ProgressLog:
    """``verbose`` progress of a protocol run, on stderr.

    ``verbose=0`` prints nothing, ``1`` a line when the protocol enters a new step
    (plan, local, cross, release, ...), ``2`` or more a line per message (sender,
    receiver, kind and payload bytes).
    """

    def __init__(self, verbose=0, prefix="skdp vertical"):
        self.verbose, self.prefix, self._step = int(verbose), prefix, None

    def delivered(self, message):
        if self.verbose >= 2:
            print(
                f"{self.prefix}: {message.step}: {message.sender} -> "
                f"{message.receiver} ({message.kind}, {message.nbytes} bytes)",
                file=sys.stderr,
                flush=True,
            )
        elif self.verbose and message.step != self._step:
            print(f"{self.prefix}: step {message.step!r}", file=sys.stderr, flush=True)
        self._step = message.step


def drive(roles, transcript=None, verbose=0):
    """Run the protocol in one process; return ``{role name: role.result}``.

    Parameters
    ----------
    roles : list of Role or dict
        Every participant (``{name: role}`` or a list of roles with distinct
        names).
    transcript : Transcript or None
        Records every delivered message.
    verbose : int, default=0
        Progress on stderr (see :class:`ProgressLog`).

    Raises
    ------
    ProtocolError
        A role failed, a message went to an unknown receiver, or the messages ran
        out while a role had not finished. Nothing is released.
    """
    if not isinstance(roles, dict):
        roles = {role.name: role for role in roles}
    log = ProgressLog(verbose)
    queue = deque()
    for role in roles.values():
        queue.extend(role.start())
    while queue:
        message = queue.popleft()
        if not isinstance(message, Message):
            raise ProtocolError(f"not a Message: {type(message).__name__}.")
        if message.receiver not in roles:
            raise ProtocolError(
                f"{message.sender} sent {message.kind!r} (step {message.step!r}) to "
                f"an unknown receiver {message.receiver!r}; no model was released."
            )
        if transcript is not None:
            transcript.record(message)
        log.delivered(message)
        queue.extend(roles[message.receiver].receive(message))
    waiting = [name for name, role in roles.items() if not role.finished]
    if waiting:
        raise ProtocolError(
            f"the protocol stalled: {', '.join(waiting)} did not finish and no "
            "message is in flight; no model was released."
        )
    return {name: role.result for name, role in roles.items()}
