"""An operation's rows: the reads the pipeline resumes from, and its attempts and hook rows.

::

    store.query("operations", …)        ──► logical_keys / find_operation / get_operation
                                             (OperationRecord, store.records)
    store.query("hook_invocations", …)  ──► HookInvocationRecord ──► hook_invocations(…)
    store.query("attempts", …)          ──► AttemptRecord ──► attempts(store, operation_id)
    Put / Insert("attempts", …)         ◄── attempt_op(…)
    Put("hook_invocations", …)          ◄── hook_op(…)

The reads here are the pipeline's own: they return ``OperationRecord`` read ``lenient``, as
the pipeline always read its rows (``pipeline.records.OperationState`` decodes the request,
payload and results, and checks what it acts on). The run's listing with a checked phase is
``store.records.operations``.

Owns: the ``attempts`` and ``hook_invocations`` rows' shape, ``AttemptRecord``,
``HookInvocationRecord``, and the pipeline's operation reads. Does not own: the ``operations``
row the pipeline writes (``OperationState.row``), ``OperationRecord`` (``store.records``), nor
committing — the op builders return writes the caller commits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Insert, Put, Store
from agentloom.store.records import OperationRecord

__all__ = ["AttemptRecord", "HookInvocationRecord", "attempt_op", "attempts", "find_operation",
           "get_operation", "hook_invocations", "hook_op", "logical_keys"]


# -- operations ----------------------------------------------------------------------------


def logical_keys(store: Store, run_id: str) -> set[str]:
    """The logical keys of every operation of the run stored now."""
    return {r["logical_key"] for r in store.query("operations", {"run_id": run_id})}


def find_operation(store: Store, run_id: str, logical_key: str) -> OperationRecord | None:
    """The run's operation of ``logical_key`` (unique in a run), or None."""
    rows = store.query("operations", {"run_id": run_id, "logical_key": logical_key}, limit=1)
    return OperationRecord.from_row(rows[0], lenient=True) if rows else None


def get_operation(store: Store, operation_id: str) -> OperationRecord | None:
    """The operation ``operation_id``, or None when it is not stored."""
    row = store.get("operations", {"operation_id": operation_id})
    return None if row is None else OperationRecord.from_row(row, lenient=True)


# -- attempts ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptRecord:
    """One ``attempts`` row: attempt ``attempt_no`` of an operation, its status, when it started
    and (once it ended) when it finished."""

    operation_id: str
    attempt_no: int
    status: str
    started_at: float | None
    finished_at: float | None
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> AttemptRecord:
        return cls(operation_id=row["operation_id"], attempt_no=row["attempt_no"],
                   status=row["status"], started_at=row.get("started_at"),
                   finished_at=row.get("finished_at"), data=row.get("data") or {})


def attempts(store: Store, operation_id: str) -> list[AttemptRecord]:
    """The operation's attempts, the first first (by ``attempt_no``)."""
    return [AttemptRecord.from_row(r) for r in store.query(
        "attempts", {"operation_id": operation_id}, order_by=("attempt_no",))]


def attempt_op(*, operation_id: str, attempt_no: int, status: str, data: Mapping[str, Any],
               at: float, finished: bool) -> Put | Insert:
    """The ``attempts`` row: inserted when the attempt starts (``started_at``; a second start
    is refused by the store), put when it ends (``finished_at``)."""
    row: dict[str, Any] = {"operation_id": operation_id, "attempt_no": attempt_no,
                           "status": status, "data": data}
    if finished:
        row["finished_at"] = at
        return Put("attempts", row)
    row["started_at"] = at
    return Insert("attempts", row)


# -- hook invocations ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HookInvocationRecord:
    """One ``hook_invocations`` row: hook ``position`` of the ``timing`` chain (``before`` /
    ``after``) of an operation, its status and decision as they now stand."""

    operation_id: str
    timing: str
    position: int
    hook_id: str
    status: str
    decision: str | None
    created_at: float
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> HookInvocationRecord:
        return cls(operation_id=row["operation_id"], timing=row["timing"],
                   position=int(row["position"]), hook_id=row["hook_id"], status=row["status"],
                   decision=row.get("decision"), created_at=row["created_at"],
                   data=row.get("data") or {})

    @property
    def ref(self) -> str:
        """The row's reference (``HookOutcome.decision_ref`` / ``diagnostic_ref``)."""
        return f"hook_invocations/{self.operation_id}/{self.timing}/{self.position}"


def hook_invocations(store: Store, operation_id: str, *, timing: str | None = None,
                     position: int | None = None) -> list[HookInvocationRecord]:
    """The operation's hook rows (only ``timing``'s, only ``position``'s, when given), in no
    particular order."""
    where: dict[str, object] = {"operation_id": operation_id}
    if timing is not None:
        where["timing"] = timing
    if position is not None:
        where["position"] = position
    return [HookInvocationRecord.from_row(r) for r in store.query("hook_invocations", where)]


def hook_op(*, operation_id: str, timing: str, position: int, hook_id: str, status: str,
            decision: str | None, created_at: float, data: Mapping[str, Any]) -> Put:
    """The ``hook_invocations`` row of hook ``position`` of ``timing``, as it now stands."""
    return Put("hook_invocations", {
        "operation_id": operation_id, "timing": timing, "position": position,
        "hook_id": hook_id, "status": status, "decision": decision, "created_at": created_at,
        "data": data})
