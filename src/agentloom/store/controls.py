"""The ``run_controls`` repository: a control sent to a run (``control.stop`` /
``control.supplement``), as a frozen ``ControlRecord``; its reads and the ops that write it.

::

    store.query("run_controls", run)  ──► ControlRecord.from_row ──► run_controls(store, …)
    Insert("run_controls", row)       ◄── control_op(…)           (whoever asks)
    Put("run_controls", row)          ◄── consumed_op(record, turn) (the turn that took it)

The table was called ``events`` before schema v6. Rows are keyed by ``event_id`` (a sortable
id: ordering by it is the order they were sent).

Owns: ``ControlRecord``, the reads and the op builders. Does not own: what a control does nor
when it is polled (``agent.controls``), nor committing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Insert, Put, Store

__all__ = ["ControlRecord", "consumed_op", "control_op", "run_controls"]

TABLE = "run_controls"


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlRecord:
    """One control of a run: its ``type`` (``control.stop``, ``control.supplement``) and
    ``data`` (a stop's ``reason``; a supplement's ``text`` and, once a turn took it,
    ``consumed_turn``)."""

    event_id: str
    run_id: str
    type: str
    created_at: float
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ControlRecord:
        return cls(event_id=row["event_id"], run_id=row["run_id"], type=row["type"],
                   created_at=row["created_at"], data=row.get("data") or {})

    def to_row(self) -> dict[str, Any]:
        """The row, as ``Store.get`` returns it."""
        return {"event_id": self.event_id, "run_id": self.run_id, "type": self.type,
                "created_at": self.created_at, "data": dict(self.data)}


def run_controls(store: Store, run_id: str, *, kind: str | None = None) -> list[ControlRecord]:
    """The run's controls (only those of type ``kind`` when given), in the order sent."""
    where: dict[str, Any] = {"run_id": run_id}
    if kind is not None:
        where["type"] = kind
    return [ControlRecord.from_row(r) for r in store.query(TABLE, where, order_by=("event_id",))]


def control_op(*, event_id: str, run_id: str, kind: str, created_at: float,
               data: Mapping[str, Any]) -> Insert:
    """The ``Insert`` of a new control of ``run_id``."""
    return Insert(TABLE, {"event_id": event_id, "run_id": run_id, "type": kind,
                          "created_at": created_at, "data": dict(data)})


def consumed_op(control: ControlRecord, turn: int) -> Put:
    """The ``Put`` recording that ``turn`` took the supplement ``control`` (a resumed run then
    replays the same history)."""
    return Put(TABLE, {**control.to_row(), "data": {**control.data, "consumed_turn": turn}})
