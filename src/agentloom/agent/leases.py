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
from typing import Any

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


def lease_left_s(row: dict[str, Any], now: float | None = None) -> float:
    """Seconds until the run's lease expires (<= 0: expired)."""
    now = time.time() if now is None else now
    return float(row.get("lease_expires_at") or 0) - now


def is_interrupted(row: dict[str, Any], now: float | None = None) -> bool:
    """A ``running`` run that nothing drives any more (see the module docstring)."""
    if row.get("status") != "running":
        return False
    return lease_left_s(row, now) <= 0 or holder_gone(row.get("lease_owner"))
