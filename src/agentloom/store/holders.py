"""Who holds a lease: an id that names one process across machines and PID namespaces.

A holder id reads ``host@space:pid/start``. ``space`` names where ``pid`` means something: this
boot of the kernel (``/proc/sys/kernel/random/boot_id``) and this process's PID namespace (the
inode of ``/proc/self/ns/pid``). Two containers or cloned machines with the same hostname see
the same PID differently; only a process of the very same space may judge from a PID whether
the holder still exists (issue #34, 2). Where neither can be read, ``space`` is random for
this process, so nobody else ever judges its PIDs. ``start`` is when the process started
(``/proc/PID/stat``, in clock ticks since boot): a PID used again — or a namespace inode used
again after its namespace ended — names another process, with another id.

Ids written before this scheme (``host:pid``) name no space: nobody judges them from a PID;
their leases expire as any other machine's do.
"""

from __future__ import annotations

import functools
import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Holder", "holder_id", "parse_holder", "start_ticks", "this_space"]


@functools.cache
def this_space() -> str:
    """This process's space: ``<boot id>.<PID namespace inode>`` (a random token when the
    kernel tells neither)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")[:12]
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return "x" + uuid.uuid4().hex[:15]
    return f"{boot}.{namespace}"


def holder_id(pid: int | None = None) -> str:
    """The holder id of process ``pid`` of this space (default: this process); without a
    ``start`` when that process cannot be read (it has exited)."""
    if pid is None or pid == os.getpid():
        return _mine(os.getpid())
    start = start_ticks(pid)
    return f"{socket.gethostname()}@{this_space()}:{pid}" + ("" if start is None else f"/{start}")


@functools.cache
def _mine(pid: int) -> str:  # keyed by pid: a forked child computes its own
    start = start_ticks(pid)
    return f"{socket.gethostname()}@{this_space()}:{pid}" + ("" if start is None else f"/{start}")


def start_ticks(pid: int) -> str | None:
    """When process ``pid`` of this PID namespace started (None: no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


@dataclass(frozen=True, slots=True)
class Holder:
    """A parsed holder id: its host, its space (None for an id of the old ``host:pid``
    form), its pid (None when not a number) and its start (None when not recorded)."""

    host: str
    space: str | None
    pid: int | None
    start: str | None = None

    @property
    def exited(self) -> bool:
        """A process of this space that is gone: no process has its pid, or the one that has
        started at another time (the pid was used again)."""
        if not self.here or self.pid is None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass  # it exists, as another user
        now = start_ticks(self.pid)
        return self.start is not None and now is not None and now != self.start

    @property
    def here(self) -> bool:
        """A process of this very space: its pid can be looked up here."""
        return (self.space is not None and self.space == this_space()
                and self.host == socket.gethostname() and self.pid is not None)


def parse_holder(owner: str) -> Holder:
    """Split a holder id; anything unexpected reads as a holder of another space."""
    head, _, tail = owner.rpartition(":")
    pid, _, start = tail.partition("/")
    host, at, space = head.rpartition("@")
    if not at:
        host, space = head, ""
    return Holder(host=host, space=space or None, pid=int(pid) if pid.isdigit() else None,
                  start=start or None)
