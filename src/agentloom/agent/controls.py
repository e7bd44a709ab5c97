"""Run control: ``stop`` and ``supplement`` through one entry, never queued behind a call.

A control is a row of the ``run_controls`` table (``control.stop`` /
``control.supplement``; the table was called ``events`` before schema v6), written by whoever
asks — the process running the run or another one (``agentloom runs stop``). The running
process sets the run's cancel token at once when the stop comes from itself, and otherwise
sees the row within one poll interval; a long tool call is cancelled through the token, it
never has to finish first.

Supplements reach the root (Planner) only, at the start of its next turn; which turn took
which supplement is committed (``consumed_turn``), so a resumed run replays the same
history.

Owns: what a control does and when it is polled. Does not own: the rows and their ops
(``store.controls``), nor committing (the coordinator).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agentloom.ids import new_id
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.store import Store, WriteSet
from agentloom.store.controls import consumed_op, control_op, run_controls
from agentloom.store.ports import Fence

__all__ = ["STOP", "SUPPLEMENT", "ControlState", "record_control", "send_control"]

STOP = "control.stop"
SUPPLEMENT = "control.supplement"


async def record_control(coordinator: CommitCoordinator, run_id: str, kind: str,
                         data: dict[str, Any]) -> str:
    event_id = new_id()
    await coordinator.commit(WriteSet((control_op(
        event_id=event_id, run_id=run_id, kind=kind, created_at=time.time(), data=data),)))
    return event_id


async def send_control(store: Store, run_id: str, kind: str, data: dict[str, Any]) -> str:
    """Record a control from a process that does not drive the run (``agentloom runs
    stop|supplement``): no runtime, no agents — the driving process polls for it."""
    coordinator = CommitCoordinator(store)
    try:
        return await record_control(coordinator, run_id, kind, data)
    finally:
        coordinator.close()


@dataclass(slots=True)
class ControlState:
    """What one process knows of a run's controls."""

    run_id: str
    seen: set[str] = field(default_factory=set)
    stop_reason: str | None = None
    by_turn: dict[int, list[str]] = field(default_factory=dict)
    pending: list[tuple[str, str]] = field(default_factory=list)  # (event_id, text)

    def poll(self, store: Store) -> bool:
        """Read controls not seen yet; True when there is something new."""
        fresh = False
        for control in run_controls(store, self.run_id):
            if control.event_id in self.seen or not control.type.startswith("control."):
                continue
            self.seen.add(control.event_id)
            fresh = True
            data = control.data
            if control.type == STOP and self.stop_reason is None:
                self.stop_reason = str(data.get("reason") or "stopped")
            elif control.type == SUPPLEMENT:
                turn = data.get("consumed_turn")
                if turn is None:
                    self.pending.append((control.event_id, str(data["text"])))
                else:
                    self.by_turn.setdefault(int(turn), []).append(str(data["text"]))
        return fresh

    async def take(self, store: Store, coordinator: CommitCoordinator, fence: Fence, *,
                   turn: int, live: bool) -> list[str]:
        """The supplements of ``turn``: those it consumed before (replay), and — when the
        turn's model call is not committed yet — the pending ones, now marked consumed."""
        texts = list(self.by_turn.get(turn, ()))
        if live and self.pending:
            taken, self.pending = self.pending, []
            stored = {c.event_id: c for c in run_controls(store, self.run_id, kind=SUPPLEMENT)}
            ops = [consumed_op(stored[eid], turn) for eid, _ in taken]
            await coordinator.commit(WriteSet(tuple(ops), fence))
            self.by_turn.setdefault(turn, []).extend(t for _, t in taken)
            texts.extend(t for _, t in taken)
        return texts
