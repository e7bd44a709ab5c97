"""Who holds a run, and whether that holder can still be driving it.

A run's lease names its holder (``host@space:pid``, ``Kernel.worker_id``, see
``store.holders``) and when it expires in the store's time (``store.clock``; renewed every
20 s while the holder lives). A run is *interrupted* when it is ``running`` but nothing drives
it any more: its lease expired, or its holder is a process of this very machine and PID
namespace that no longer exists (killed: its lease has not run out yet, but nobody will renew
it). A holder of another machine or PID namespace — even one with the same hostname — is alive
until its lease expires (issue #34, 2). A pid used again by another process reads as gone:
the holder id records when its process started. Pass ``now=store.now()``: a process whose clock is off judges
leases in the store's time all the same.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentloom.store import Store
from agentloom.store.holders import holder_id, parse_holder
from agentloom.store.records import RunRecord
from agentloom.store.revocations import get_revocation

__all__ = ["TakeoverVerdict", "WorkerSettings", "holder_gone", "is_interrupted", "lease_left_s",
           "rebased",
           "takeover_verdict"]

TakeoverVerdict = Literal["take", "wait", "suspend"]


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """How a configuration's runs are shared among workers (config ``workers:``,
    docs/workers.md): the lease a holder takes and renews every third of ``lease_ttl_s``; how
    long a takeover waits for the old holder's revocation receipt (``takeover_grace_s``); how
    often an idle worker looks for work (``poll_s``); per agent, the most runs ``running`` at
    once across all workers (``max_concurrent_runs``)."""

    lease_ttl_s: float = 60.0
    takeover_grace_s: float = 30.0
    poll_s: float = 5.0
    max_concurrent_runs: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.lease_ttl_s <= 0 or self.poll_s <= 0 or self.takeover_grace_s < 0:
            raise ValueError("lease_ttl_s and poll_s must be positive, takeover_grace_s >= 0")
        for agent, cap in self.max_concurrent_runs.items():
            if cap < 1:
                raise ValueError(f"max_concurrent_runs[{agent!r}] must be at least 1, got {cap}")


def holder_gone(owner: str | None) -> bool:
    """True when ``owner`` (a holder id) is a process of this machine and PID namespace that
    has exited. A holder of any other space is never judged from its PID."""
    if not owner:
        return False
    holder = parse_holder(owner)
    if holder.pid == os.getpid() and owner == holder_id():
        return False
    return holder.exited


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


def takeover_verdict(store: Store, run: RunRecord, grace_s: float,
                     now: float | None = None) -> tuple[TakeoverVerdict, str]:
    """May an interrupted run be taken over now (000 §7.2: the old holder's sandbox processes
    confirmed gone first)? ``take`` when nobody held it, when its holder is a process of this
    machine (or this very process) that is gone — its commands die with it: each command's
    reaper kills its subtree when the runtime's end of their pipe closes — or when the holder
    recorded a confirmed revocation receipt for its epoch (it let the run go). Otherwise the
    holder may be alive (paused, cut off, on another machine): ``wait`` until
    ``grace_s`` after its lease expired, then ``suspend`` — never a silent double run. The
    second value says why."""
    now = store.now() if now is None else now
    owner = run.lease_owner
    if not owner:
        return "take", "nobody held it"
    if owner == holder_id() or holder_gone(owner):
        return "take", f"its holder {owner} is gone"
    receipt = get_revocation(store, run.run_id, run.lease_epoch)
    if receipt is not None and receipt.confirmed:
        return "take", f"its holder {owner} confirmed its processes gone"
    expired_for = -lease_left_s(run, now)
    if expired_for < grace_s:
        return "wait", (f"its holder {owner} (epoch {run.lease_epoch}) may still be alive: "
                        f"waiting {grace_s - expired_for:.0f}s more for its revocation receipt "
                        "(workers.takeover_grace_s)")
    return "suspend", (f"its holder {owner} (epoch {run.lease_epoch}) left no revocation "
                       f"receipt within workers.takeover_grace_s ({grace_s:g}s) after its lease "
                       "expired: its sandbox processes may still be running, so the run was not "
                       "taken over")


def rebased(data: Mapping[str, Any], offset_s: float) -> dict[str, Any]:
    """A run's data with its times (``deadline``, ``waiting.since``) in this process's clock.

    They are written in the clock of the process that wrote them, with that clock's offset
    from the store's (``clock_offset_s``, ``Store.clock_offset_s``): a process whose clock is
    off reads them shifted by the difference of the two offsets, so a worker one hour ahead
    neither times a run out an hour early nor lets it run an hour late (issue #34, 2). Data
    without an offset (written before) is read as written in this clock."""
    out = dict(data)
    shift = float(out.get("clock_offset_s", offset_s)) - offset_s
    if shift and isinstance(out.get("deadline"), int | float):
        out["deadline"] = float(out["deadline"]) + shift
    waiting = out.get("waiting")
    if shift and isinstance(waiting, dict) and isinstance(waiting.get("since"), int | float):
        out["waiting"] = {**waiting, "since": float(waiting["since"]) + shift}
    out["clock_offset_s"] = offset_s
    return out
