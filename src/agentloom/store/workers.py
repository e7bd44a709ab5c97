"""The ``workers`` repository: one row per worker process (``agentloom worker``) — its heartbeat
and what it holds — as a frozen ``WorkerRecord``, its read and the op that writes it.

::

    store.query("workers")  ──► WorkerRecord.from_row ──► all_workers(store)
    Put("workers", row)     ◄── heartbeat_op(record)   (each heartbeat, in the store's time)

Owns: ``WorkerRecord``, the read and the op builder. Does not own: when a worker beats, nor
whether one is alive (``agent.worker``: ``live_workers``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Put, Store

__all__ = ["WorkerRecord", "all_workers", "heartbeat_op"]

TABLE = "workers"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerRecord:
    """One worker process as it last reported: ``state`` (``running``, ``stopped``, …),
    when it started and last beat (the store's time), and in ``data`` its concurrency, the runs
    it holds (``held``), its agents, release, heartbeat interval and clock offset."""

    worker_id: str
    host: str
    pid: int
    state: str
    started_at: float
    heartbeat_at: float
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> WorkerRecord:
        return cls(worker_id=row["worker_id"], host=row["host"], pid=row["pid"],
                   state=row["state"], started_at=row["started_at"],
                   heartbeat_at=row["heartbeat_at"], data=row.get("data") or {})

    def to_row(self) -> dict[str, Any]:
        """The row again, as ``Store.get`` returns it."""
        return {"worker_id": self.worker_id, "host": self.host, "pid": self.pid,
                "state": self.state, "started_at": self.started_at,
                "heartbeat_at": self.heartbeat_at, "data": dict(self.data)}


def all_workers(store: Store) -> list[WorkerRecord]:
    """Every worker the store has heard of, stopped and gone ones too, in the store's order."""
    return [WorkerRecord.from_row(r) for r in store.query(TABLE)]


def heartbeat_op(record: WorkerRecord) -> Put:
    """The ``Put`` of the worker's row as ``record`` says (a heartbeat)."""
    return Put(TABLE, record.to_row())
