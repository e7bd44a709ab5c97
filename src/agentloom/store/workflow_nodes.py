"""The ``workflow_nodes`` repository: one row per activation of a workflow node (issue 20), as a
frozen ``WorkflowNodeRecord``; its read and the op that writes it.

::

    store.query("workflow_nodes", run)  ──► WorkflowNodeRecord.from_row ──► node_records(…)
    Insert / Put("workflow_nodes", row) ◄── node_op(record, new=…)

Columns: ``run_id``, ``node``, ``attempt`` (the key), ``status`` (``succeeded``, ``failed``,
``waiting``), ``operation_id`` (the activation's call), ``created_at``, ``updated_at``; in
``data`` the outcome (output, error, unknown effects, attempts, patches), the ``call_id`` and
a re-run's ``feedback``.

Owns: ``WorkflowNodeRecord``, the read and the op builder. Does not own: what an outcome means
(``squad.results.NodeOutcome``), when a record commits (``squad.driver``), the graph view
(``views.workflow``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Insert, Put, Store

__all__ = ["WorkflowNodeRecord", "node_op", "node_records"]

TABLE = "workflow_nodes"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowNodeRecord:
    """One activation of a node of a workflow run, as committed after it ran."""

    run_id: str
    node: str
    attempt: int
    status: str
    operation_id: str | None
    created_at: float
    updated_at: float
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> WorkflowNodeRecord:
        return cls(run_id=row["run_id"], node=row["node"], attempt=int(row["attempt"]),
                   status=row["status"], operation_id=row.get("operation_id"),
                   created_at=row["created_at"], updated_at=row["updated_at"],
                   data=row.get("data") or {})

    def to_row(self) -> dict[str, Any]:
        """The row, as ``Store.get`` returns it (and as ``node_op`` writes it)."""
        return {"run_id": self.run_id, "node": self.node, "attempt": self.attempt,
                "status": self.status, "operation_id": self.operation_id,
                "created_at": self.created_at, "updated_at": self.updated_at,
                "data": dict(self.data)}


def node_records(store: Store, run_id: str) -> list[WorkflowNodeRecord]:
    """Every committed activation record of the workflow run ``run_id``, oldest first."""
    return [WorkflowNodeRecord.from_row(r)
            for r in store.query(TABLE, {"run_id": run_id}, order_by=("created_at",))]


def node_op(record: WorkflowNodeRecord, *, new: bool) -> Insert | Put:
    """The write of ``record``: an ``Insert`` when it is the activation's first (a second
    first record conflicts), else a ``Put`` over the one stored."""
    row = record.to_row()
    return Insert(TABLE, row) if new else Put(TABLE, row)
