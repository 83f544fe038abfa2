"""Which process is which, as the kernel reports it: the ledger's trust checks.

A ``track_budget`` ledger accepts spends from other processes only if the kernel
says they descend from the ledger's own process (its workers, their workers, a
forked child), and a process that loads a pickled handle uses it only if it
descends from the handle's process. Identities are ``(machine, pid, start)``:
``start`` (the process's start time in clock ticks since boot) tells a reused pid
apart, and ``machine`` (a hash of the boot id and the PID namespace) tells apart
another machine, container or boot, where the same pid means nothing.

Peers are verified on Linux only (``/proc`` and ``SO_PEERCRED``). Elsewhere
:data:`SUPPORTED` is False: there is no ledger server, identities use the host
name and, if installed, ``psutil`` for start times and parent chains (else the
direct parent only), and a worker that recognizes its ancestor's handle refuses
to release (fail closed) instead of recording.
"""

import functools
import hashlib
import os
import socket
import struct
import sys
from dataclasses import dataclass

__all__ = ["SUPPORTED", "ProcessId", "descends_from", "identity", "peer_pid"]

SUPPORTED = (
    sys.platform.startswith("linux")
    and hasattr(socket, "AF_UNIX")
    and hasattr(socket, "SO_PEERCRED")
    and os.path.exists("/proc/self/stat")
)
_MAX_DEPTH = 256  # longest parent chain walked (a loop guard)


@dataclass(frozen=True)
class ProcessId:
    """A process, as the kernel names it.

    Attributes
    ----------
    machine : str
        Hash of the boot id and PID namespace (no readable host data).
    pid : int
    start : int
        Start time in clock ticks since boot (tells a reused pid apart).
    """

    machine: str
    pid: int
    start: int


def _stat(pid):
    """``(ppid, start)`` of a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after it
    fields = text[text.rfind(b")") + 2 :].split()
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


@functools.cache
def _machine():
    with open("/proc/sys/kernel/random/boot_id", "rb") as f:
        boot = f.read().strip()
    namespace = os.readlink("/proc/self/ns/pid").encode()
    return hashlib.sha256(b"skdp-ledger|" + boot + b"|" + namespace).hexdigest()[:32]


def _fallback_identity(pid):
    machine = hashlib.sha256(b"skdp-ledger|" + socket.gethostname().encode())
    try:
        import psutil

        start = int(psutil.Process(pid).create_time() * 1000)
    except ImportError:
        start = 0
    except Exception:  # noqa: BLE001 - no such process (psutil's own errors)
        return None
    return ProcessId(machine.hexdigest()[:32], pid, start)


def _fallback_descends_from(ancestor, pid):
    if _fallback_identity(os.getpid()).machine != ancestor.machine:
        return False
    try:
        import psutil
    except ImportError:  # the direct parent only
        return pid == os.getpid() and os.getppid() == ancestor.pid
    try:
        return any(
            parent.pid == ancestor.pid
            and int(parent.create_time() * 1000) == ancestor.start
            for parent in psutil.Process(pid).parents()
        )
    except Exception:  # noqa: BLE001 - the process has ended
        return False


def identity(pid=None):
    """The :class:`ProcessId` of ``pid`` (default: this process), or None."""
    pid = os.getpid() if pid is None else pid
    if not SUPPORTED:
        return _fallback_identity(pid)
    stat = _stat(pid)
    if stat is None:
        return None
    return ProcessId(_machine(), pid, stat[1])


def descends_from(ancestor, pid=None):
    """Whether ``pid`` (default: this process) is a strict descendant of ``ancestor``.

    ``ancestor`` is a :class:`ProcessId`; a process in another machine, container
    or boot, or one whose parent chain no longer passes through ``ancestor``
    (an orphan re-parented to init), is not a descendant.
    """
    if not isinstance(ancestor, ProcessId):
        return False
    pid = os.getpid() if pid is None else pid
    if not SUPPORTED:
        return _fallback_descends_from(ancestor, pid)
    if ancestor.machine != _machine():
        return False
    for _ in range(_MAX_DEPTH):
        stat = _stat(pid)
        if stat is None or stat[0] <= 0:
            return False
        pid = stat[0]
        if pid == ancestor.pid:
            parent = _stat(pid)
            return parent is not None and parent[1] == ancestor.start
        if pid == 1:
            return False
    return False


def peer_pid(sock):
    """The pid of the process at the other end of a connected AF_UNIX socket."""
    creds = sock.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
    )
    pid, _uid, _gid = struct.unpack("3i", creds)
    return pid
