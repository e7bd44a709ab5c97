"""Who holds a run, and whether that holder can still be driving it.

A run's lease names its holder (``host:pid``, ``Kernel.worker_id``) and when it expires
(renewed every 20 s while the holder lives). A run is *interrupted* when it is ``running`` but
nothing drives it any more: its lease expired, or its holder is a process of this machine
that no longer exists (killed: its lease has not run out yet, but nobody will renew it). A
holder on another machine is alive until its lease expires. A recycled pid reads as alive:
the safe side (the run waits for its lease to expire).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from typing import Any

from agentloom.store.records import RunRecord

__all__ = ["holder_gone", "is_interrupted", "lease_left_s"]


def holder_gone(owner: str | None) -> bool:
    """True when ``owner`` (``host:pid``) is a process of this machine that has exited."""
    if not owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # it exists, as another user
    return False


def _record(run: RunRecord | Mapping[str, Any]) -> RunRecord:
    return run if isinstance(run, RunRecord) else RunRecord.from_row(run, lenient=True)


def lease_left_s(run: RunRecord | Mapping[str, Any], now: float | None = None) -> float:
    """Seconds until the run's lease expires (<= 0: expired). ``run`` is its record (or its
    ``runs`` row)."""
    now = time.time() if now is None else now
    return float(_record(run).lease_expires_at or 0) - now


def is_interrupted(run: RunRecord | Mapping[str, Any], now: float | None = None) -> bool:
    """A ``running`` run that nothing drives any more (see the module docstring). ``run`` is
    its record (or its ``runs`` row)."""
    record = _record(run)
    if not record.running:
        return False
    return lease_left_s(record, now) <= 0 or holder_gone(record.lease_owner)
