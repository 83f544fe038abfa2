"""What an error, an abort or a log line may say: one rule for the runtime.

**The rule.** Every message a participant prints, logs or sends names only
participants and roles, protocol steps and message kinds, config keys and
column names, counts and row numbers of its own file, and the run's public
parameters (epsilon, backend, ...). It never holds a record id, a cell value or
a label value. What is sent to the peers (an abort's cause, a refusal) also
holds no file path and no row number: those describe one participant's own
files and stay in its own output.

Two kinds of exceptions carry text written under the rule:

- the runtime's own errors (:class:`~._node.FederatedError` and the protocol's
  :class:`~skdp.vertical._messages.ProtocolError`,
  :class:`~._config.PolicyError`, :class:`~._alignment.AlignmentError`): they
  travel to the peers as they are, or as their ``public`` text when they name
  this participant's own files;
- :class:`DataError`, a problem in a participant's own data file: its message
  (the path, the column, the row number) is printed by that participant only,
  its :attr:`~DataError.public` text (the column and the problem) is what the
  peers receive.

Any other exception (a library's error, a bug) may quote what it was given, so
the peers receive only its type; the participant's own stderr has the
traceback, which is where a bug is diagnosed.
"""

__all__ = ["DataError", "public_cause"]


class DataError(ValueError):
    """A participant's own data does not fit its config.

    Parameters
    ----------
    message : str
        For this participant's operator: may name the file and row numbers,
        never a value.
    public : str
        For the other participants: the column and the problem only.
    """

    def __init__(self, message, public):
        super().__init__(message)
        self.public = public


def _ruled():
    from skdp.vertical._messages import ProtocolError
    from skdp.vertical.federated._alignment import AlignmentError
    from skdp.vertical.federated._config import PolicyError

    return (ProtocolError, PolicyError, AlignmentError)


def public_cause(exc):
    """The text of ``exc`` that may be sent to the other participants."""
    if isinstance(exc, DataError):
        return exc.public
    if isinstance(exc, _ruled()):
        return getattr(exc, "public", None) or str(exc)
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        return f"interrupted ({type(exc).__name__})"
    return (
        f"internal error ({type(exc).__name__}); its details are in that "
        "participant's own log"
    )
