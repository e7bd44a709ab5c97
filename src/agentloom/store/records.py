"""Typed records of the ``operations`` table and the read that returns them; the ``runs``
records, kept importable from here, live in ``store.runs``.

::

    store.query("operations", …)  ──► OperationRecord.from_row  ──► operations(store, run_id, …)
    store.get("runs", …)          ──► RunRecord.from_row        ──► get_run(store, run_id)
                                                                    (store.runs)

A record is a frozen view of one row: its columns as typed fields — the closed sets as the
``Literal`` types of ``agentloom.results`` (``OperationPhase``, ``Outcome``) — and typed
accessors for the ``data`` keys readers use. ``from_row`` refuses a row whose phase or outcome
is outside its set (``ValueError`` naming the row, the value and the set), so a reader never
branches on a value it does not know. Only a command that *shows* operations as they are
stored (``agentloom runs show``) reads them with ``lenient=True``.

Owns: ``OperationRecord`` and the typed read ``operations``. Does not own: the runs records
and their ops (``store.runs``, re-exported here: ``RunRecord``, ``RunFailures``, ``get_run``,
``runs``), the generic ``Store`` protocol (``store.ports``), any write of operations rows (the
pipeline), decoding an operation's request and results (``pipeline.records.OperationState``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentloom.results import (
    OPERATION_PHASES,
    OUTCOMES,
    OperationPhase,
    Outcome,
)
from agentloom.store.ports import Store
from agentloom.store.runs import RunFailures, RunRecord, get_run, runs

__all__ = ["OperationRecord", "RunFailures", "RunRecord", "get_run", "operations", "runs"]


_PHASE: Mapping[object, OperationPhase] = {phase: phase for phase in OPERATION_PHASES}
_OUTCOME: Mapping[object, Outcome | None] = {None: None, **{o: o for o in OUTCOMES}}


def _refused(row: Mapping[str, Any], what: str, known: Sequence[object]) -> ValueError:
    return ValueError(f"operation {row.get('operation_id')!r} has {what} {row.get(what)!r}, "
                      f"which is not one of {', '.join(map(str, known))}; this release cannot read the row")


def _phase(row: Mapping[str, Any]) -> OperationPhase:
    try:
        return _PHASE[row["phase"]]
    except (KeyError, TypeError):
        raise _refused(row, "phase", OPERATION_PHASES) from None


def _outcome(row: Mapping[str, Any]) -> Outcome | None:
    try:
        return _OUTCOME[row["outcome"]]
    except (KeyError, TypeError):
        raise _refused(row, "outcome", (*OUTCOMES, None)) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class OperationRecord:
    """One ``operations`` row: one logical model, tool or delegation call. ``outcome`` is None
    until it is terminal; ``phase`` is the last phase it committed. ``data`` holds its request,
    payload, hook chain and results as stored — decode them with
    ``pipeline.records.OperationState.from_row(record.to_row(), store)``.

    ``stored_phase`` / ``stored_outcome`` are the columns as stored; ``phase`` / ``outcome``
    the same values typed, checked when the record is read (unless ``lenient``)."""

    operation_id: str
    run_id: str
    logical_key: str
    capability_key: str
    event_type: str
    stored_phase: str
    stored_outcome: str | None
    created_at: float
    updated_at: float
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any], *, lenient: bool = False) -> OperationRecord:
        """The record of an ``operations`` row. ``lenient`` (the read-only views of the CLI):
        a phase or outcome outside its set is kept as stored, to be shown, and only reading
        ``phase`` / ``outcome`` raises.

        Raises:
            ValueError: its ``phase`` or ``outcome`` is outside its set (and not ``lenient``).
        """
        if not lenient:  # each raises on a value outside its set
            _phase(row)
            _outcome(row)
        return cls(operation_id=row["operation_id"], run_id=row["run_id"],
                   logical_key=row["logical_key"], capability_key=row["capability_key"],
                   event_type=row["event_type"], stored_phase=row["phase"],
                   stored_outcome=row.get("outcome"),
                   created_at=row["created_at"], updated_at=row["updated_at"],
                   data=row.get("data") or {})

    def to_row(self) -> dict[str, Any]:
        """The row again, as ``Store.get`` returns it (what ``OperationState.from_row`` reads)."""
        return {"operation_id": self.operation_id, "run_id": self.run_id,
                "logical_key": self.logical_key, "capability_key": self.capability_key,
                "event_type": self.event_type, "phase": self.stored_phase,
                "outcome": self.stored_outcome, "created_at": self.created_at,
                "updated_at": self.updated_at, "data": self.data}

    @property
    def phase(self) -> OperationPhase:
        """The last phase it committed.

        Raises:
            ValueError: the stored phase is not an ``OperationPhase`` (a ``lenient`` read).
        """
        return _phase(self.to_row())

    @property
    def outcome(self) -> Outcome | None:
        """Its outcome once terminal, else None.

        Raises:
            ValueError: the stored outcome is not an ``Outcome`` (a ``lenient`` read).
        """
        return _outcome(self.to_row())

    @property
    def terminal(self) -> bool:
        """True once the call has its outcome (nothing of it runs any more)."""
        return self.stored_outcome is not None

    @property
    def request(self) -> Mapping[str, Any]:
        """The request as stored (its proposed arguments may be a delta of an earlier call's)."""
        request: Mapping[str, Any] = self.data.get("request") or {}
        return request

    @property
    def role(self) -> str | None:
        """The agent role that made the call."""
        return self.request.get("role")

    @property
    def call_id(self) -> str | None:
        """The model's id of a tool call (None for a model call)."""
        return self.request.get("call_id")

    @property
    def purpose(self) -> str | None:
        """``compaction`` for a summarising model call, else None."""
        return self.request.get("purpose")


# -- reads ------------------------------------------------------------------------------------


def operations(store: Store, run_id: str, *, event_type: str | None = None,
               logical_key: str | None = None, pending: bool = False,
               limit: int | None = None, lenient: bool = False) -> list[OperationRecord]:
    """The run's operations, oldest first: only those of ``event_type`` / with ``logical_key``
    when given, only the ones without an outcome yet when ``pending``; at most ``limit``
    (``lenient``: see ``OperationRecord.from_row``)."""
    where: dict[str, object] = {"run_id": run_id}
    if event_type is not None:
        where["event_type"] = event_type
    if logical_key is not None:
        where["logical_key"] = logical_key
    if pending:
        where["outcome"] = None
    rows = store.query("operations", where, order_by=("created_at",), limit=limit)
    return [OperationRecord.from_row(row, lenient=lenient) for row in rows]
