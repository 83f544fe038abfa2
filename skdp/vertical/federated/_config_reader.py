"""Reading a TOML config: the keys each table may hold, typed access that
names the file and the key, and the small value checks the loaders share.

Each table declares its keys (the ``*_KEYS`` sets): an unknown key is reported
first, with the closest known key as a suggestion (:mod:`difflib`), so a
misspelled key is never reported as the right key missing.
"""

import difflib
import math
import os
from pathlib import Path

__all__ = ["ConfigError"]


PARTY_KEYS = {
    "name",
    "listen",
    "server",
    "output",
    "max_message_mb",
    "peers",
    "tls",
    "data",
    "domain",
    "policy",
    "timeouts",
}
SERVER_KEYS = {
    "name",
    "listen",
    "output",
    "max_message_mb",
    "tls",
    "parties",
    "model",
    "timeouts",
}
TLS_KEYS = {"ca_cert", "cert", "key"}
DATA_KEYS = {"path", "id_column", "features", "label", "label_bounds", "classes"}
DOMAIN_KEYS = {"bounds", "data_norm"}
POLICY_KEYS = {
    "max_epsilon",
    "max_delta",
    "backends",
    "objectives",
    "min_samples",
    "noise_generation",
}
TIMEOUT_KEYS = {"call", "startup", "protocol", "heartbeat", "handshake"}
PARTY_ENTRY_KEYS = {"name", "address", "label"}
MODEL_KEYS = {
    "objective",
    "budget",
    "epsilon",
    "delta",
    "party_epsilon",
    "pairwise_epsilon",
    "classes",
    "mechanism",
    "backend",
    "noise_generation",
    "fit_intercept",
    "linear_weight",
    "postprocessing",
    "random_state",
}


class ConfigError(ValueError):
    """A configuration file is missing a key or has a bad value.

    ``public``: the problem without the file's name, paths or values (the key
    and what it must be), which the participant may tell its peers; None
    when the problem cannot be told without them.
    """

    def __init__(self, message, public=None):
        super().__init__(message)
        self.public = public


def suggest(key, known):
    close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class Reader:
    """Typed access to a TOML table, errors naming file and key.

    ``keys``: the keys the table may hold (None: any); an unknown one is an
    error at once, with a suggestion.
    """

    def __init__(self, table, source, prefix="", keys=None):
        self.table, self.source, self.prefix = table, source, prefix
        self.used = set()
        if keys is not None:
            unknown = sorted(set(table) - set(keys), key=str)
            if unknown:
                text = (
                    "unknown key(s) "
                    + ", ".join(f"'{prefix}{k}'{suggest(k, keys)}" for k in unknown)
                    + f"; [{prefix.rstrip('.') or 'top level'}] takes "
                    + ", ".join(sorted(keys))
                )
                raise ConfigError(f"{source}: {text}.", public=text)

    def _fail(self, key, expected, value=None, private=False):
        """Raise the ConfigError of ``key``; ``private``: ``expected`` names a
        path, so the peers learn only the key."""
        got = "" if value is None else f", got {value!r}"
        where = f"key '{self.prefix}{key}'"
        raise ConfigError(
            f"{self.source}: {where} {expected}{got}.",
            public=f"{where} (see its own output)"
            if private
            else f"{where} {expected}",
        )

    def get(self, key, kind, default=..., check=None, expected=""):
        self.used.add(key)
        if key not in self.table:
            if default is ...:
                self._fail(key, "is required")
            return default
        value = self.table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kinds) or (
            isinstance(value, bool) and bool not in kinds
        ):
            names = " or ".join(k.__name__ for k in kinds)
            self._fail(key, f"must be a {names}", value)
        if check is not None and not check(value):
            self._fail(key, f"must be {expected}", value)
        return value

    def sub(self, key, required=True, keys=None):
        table = self.get(key, dict, default=... if required else {})
        return Reader(table, self.source, f"{self.prefix}{key}.", keys)

    def path(self, key, base, default=..., must_exist=True):
        value = self.get(key, str, default=default)
        if value is None:
            return None
        path = (base / value).resolve()
        if must_exist and not path.is_file():
            what = "a directory, not a file" if path.is_dir() else "a missing file"
            self._fail(key, f"names {what} ({path})", private=True)
        return path

    def output(self, key, base, suffixes, default=...):
        """A path the run will write (``PATH`` + each suffix), checked now."""
        path = self.path(key, base, default=default, must_exist=False)
        if path is None:
            return None
        parent = path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            self._fail(
                key,
                f"lies under {parent}, which is a file, not a directory",
                None,
                True,
            )
        if not os.access(parent, os.W_OK | os.X_OK):
            self._fail(key, f"cannot be written: {parent} is not writable", None, True)
        for suffix in suffixes:
            target = path.with_suffix(suffix) if suffix else path
            if target.exists() and not target.is_file():
                self._fail(
                    key, f"names {target}, which exists and is not a file", None, True
                )
        problem = write_problem(parent)
        if problem is not None:
            self._fail(key, f"cannot be written: {problem}", None, True)
        return path

    def done(self):
        unknown = sorted(set(self.table) - self.used)
        if unknown:
            text = "unknown key(s) " + ", ".join(f"'{self.prefix}{k}'" for k in unknown)
            raise ConfigError(f"{self.source}: {text}.", public=text)


#: Bytes an output directory must have free at start-up (and that the start-up
#: probe writes): a model file is far smaller (8 bytes per coefficient plus its
#: JSON), so a run is never lost to a disk that was full before it started.
MIN_FREE_BYTES = 16 * 2**20
PROBE_BYTES = 64 * 2**10


def write_problem(directory, min_free=MIN_FREE_BYTES):
    """Why files cannot be written in ``directory`` now, or None.

    ``os.access`` answers yes to root everywhere, even under ``/proc``; so a
    file is actually created there (exclusively, a random name), written
    (``PROBE_BYTES``, flushed to the disk) and removed, and the file system
    must have ``min_free`` bytes free for an unprivileged writer
    (``statvfs``'s ``f_bavail``).
    """
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".skdp-probe-", dir=directory)
    except OSError as exc:
        return f"no file can be created in {directory} ({exc.strerror or exc})"
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(b"\0" * PROBE_BYTES)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        return f"writing a file in {directory} fails ({exc.strerror or exc})"
    finally:
        try:
            os.remove(probe)
        except OSError:
            pass
    try:
        stat = os.statvfs(directory)
    except OSError as exc:
        return f"the free space of {directory} is unknown ({exc.strerror or exc})"
    free = stat.f_bavail * stat.f_frsize
    if free < min_free:
        return (
            f"{directory} has {free} bytes free, less than the {min_free} a run "
            "needs to write its output"
        )
    return None


def load_toml(path):
    try:
        import tomllib
    except ImportError as exc:  # Python < 3.11
        raise ImportError("reading TOML configs needs Python >= 3.11") from exc
    path = Path(path)
    try:
        with open(path, "rb") as f:
            return tomllib.load(f), path.resolve().parent, str(path)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}).") from None


def is_address(value):
    host, sep, port = value.rpartition(":")
    return bool(sep and host and port.isdigit() and int(port) < 65536)


def is_positive(v):
    return math.isfinite(v) and v > 0


def read_strings(reader, key, allowed, default):
    values = reader.get(key, list, default=list(default))
    for v in values:
        if v not in allowed:
            reader._fail(key, f"must list values from {list(allowed)}", values)
    return tuple(values)


def read_bound(reader, key, value):
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        and math.isfinite(value[0])
        and math.isfinite(value[1])
        and value[0] < value[1]
    )
    if not ok:
        reader._fail(key, "must be [lower, upper] with finite lower < upper", value)
    return (float(value[0]), float(value[1]))


def is_number(v):
    return isinstance(v, int | float) and not isinstance(v, bool)
