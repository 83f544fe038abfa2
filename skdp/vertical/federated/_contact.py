"""What a participant whose config has an error can still tell its peers.

A config with an error elsewhere (a participant listed in its own ``[peers]``,
a policy value, a data column) may still name the participant, its ``listen``
address, valid TLS files and its peers' addresses: enough for
:func:`~._runtime.announce_config_error` to tell the peers why it stopped, so
that they do not wait out ``timeouts.startup`` for a participant that will
never answer.
"""

from dataclasses import dataclass

from skdp.vertical.federated._config import Timeouts, TLSConfig, _timeouts, _tls
from skdp.vertical.federated._config_reader import (
    ConfigError,
    Reader,
    is_address,
    load_toml,
)

__all__ = ["Contact", "read_contact"]


@dataclass(frozen=True)
class Contact:
    """What a participant whose config has an error needs to tell its peers:
    its name, address, TLS files and peers (see :func:`read_contact`)."""

    name: str
    listen: str
    peers: dict
    tls: TLSConfig
    timeouts: Timeouts
    max_message_bytes: int


def read_contact(kind, path):
    """The :class:`Contact` of a config that failed to load, or None.

    A config with an error elsewhere (a participant listed in its own
    ``[peers]``, a policy value, a data column) still names the participant,
    its ``listen`` address, valid TLS files and its peers' addresses: enough to
    tell the peers why it stopped, so that they do not wait out
    ``timeouts.startup`` on a participant that will never answer. ``kind``:
    ``"party"`` or ``"server"``. Entries that cannot be read are left out (a
    bad ``[timeouts]`` gives the defaults); None when the name, the address or
    the TLS files are unusable themselves.
    """
    try:
        table, base, source = load_toml(path)
        r = Reader(table, source)  # unknown keys may be the error itself
        name = r.get("name", str, default="server" if kind == "server" else ...)
        listen = r.get("listen", str, check=is_address)
        tls = _tls(r, base)
        peers = {}
        if kind == "party":
            entries = r.get("peers", dict)
            peers = {p: a for p, a in entries.items() if isinstance(a, str)}
        else:
            for entry in r.get("parties", list):
                if isinstance(entry, dict):
                    peers[entry.get("name")] = entry.get("address")
        peers = {
            p: a
            for p, a in peers.items()
            if isinstance(p, str) and p != name and isinstance(a, str)
            if is_address(a)
        }
        try:
            timeouts = _timeouts(r)
        except ConfigError:
            timeouts = Timeouts()
        max_mb = table.get("max_message_mb", 1024)
        if not isinstance(max_mb, int) or not 0 < max_mb < 2048:
            max_mb = 1024
    except (ConfigError, OSError, ValueError):
        return None
    if not peers:
        return None
    return Contact(name, listen, peers, tls, timeouts, max_mb * 2**20)
