"""Typed records of the ``runs`` and ``operations`` tables, and the reads that return them.

::

    store.get("runs", …)          ──► RunRecord.from_row        ──► get_run(store, run_id)
    store.query("runs", …)        ──► RunRecord.from_row        ──► runs(store, …)
    store.query("operations", …)  ──► OperationRecord.from_row  ──► operations(store, run_id, …)

A record is a frozen view of one row: its columns as typed fields — the closed sets as the
``Literal`` types of ``agentloom.results`` (``RunStatus``, ``OperationPhase``, ``Outcome``) — and
typed accessors for the ``data`` keys readers use (a run's ``agent``, ``task``,
``session_id``, ``failures``, …). ``from_row`` refuses a row whose status, phase or outcome
is outside its set (``ValueError`` naming the row, the value and the set), so a reader never
branches on a value it does not know. Only a command that *shows* runs as they are stored
(``agentloom runs list`` / ``show``) reads them with ``lenient=True``: a damaged status is
then kept as text (``stored_status``), and the run counts as neither running nor ended.

Owns: ``RunRecord``, ``RunFailures``, ``OperationRecord`` and the typed reads ``get_run``,
``runs``, ``operations``. Does not own: the generic ``Store`` protocol (``store.ports``), any
write (the kernel writes runs rows, the pipeline operations rows), decoding an operation's
request and results (``pipeline.records.OperationState``), or what a lease means
(``agent.leases``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from agentloom.errors import OperationError
from agentloom.results import (
    OPERATION_PHASES,
    OUTCOMES,
    RUN_STATUSES,
    OperationPhase,
    Outcome,
    RunStatus,
    TerminalRunStatus,
)
from agentloom.store.ports import Store

__all__ = ["OperationRecord", "RunFailures", "RunRecord", "get_run", "operations", "runs"]


_RUN_STATUS: Mapping[object, RunStatus] = {status: status for status in RUN_STATUSES}
_PHASE: Mapping[object, OperationPhase] = {phase: phase for phase in OPERATION_PHASES}
_OUTCOME: Mapping[object, Outcome | None] = {None: None, **{o: o for o in OUTCOMES}}


def _refused(row: Mapping[str, Any], what: str, known: Sequence[object]) -> ValueError:
    name = f"run {row.get('run_id')!r}" if "status" in row else \
        f"operation {row.get('operation_id')!r}"
    return ValueError(f"{name} has {what} {row.get(what)!r}, which is not one of "
                      f"{', '.join(map(str, known))}; this release cannot read the row")


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
class RunFailures:
    """``runs.data.failures``: how often the runtime failed while driving the run
    (``agent.failures`` writes it). ``count`` in a row the same way, ``total`` in all; a worker
    resumes the run no earlier than ``retry_at``; ``last_*`` describe the last failure."""

    fingerprint: str
    count: int
    total: int
    retry_at: float
    last_code: str
    last_type: str
    last_message: str
    last_at: float

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunFailures:
        last = data.get("last") or {}
        return cls(fingerprint=str(data.get("fingerprint", "")), count=int(data.get("count", 0)),
                   total=int(data.get("total", 0)), retry_at=float(data.get("retry_at") or 0.0),
                   last_code=str(last.get("code", "")), last_type=str(last.get("type", "")),
                   last_message=str(last.get("message", "")),
                   last_at=float(last.get("at") or 0.0))


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """One ``runs`` row. ``data`` is the run's stored facts as JSON (read it, never change it):
    what it was started with (``agent``, ``task``, ``session_id``, ``release_id``, …) and, once
    it ended, what it gave (``output``, ``error``, ``steps``, ``workspace``).

    ``stored_status`` is the ``status`` column as stored; ``status`` is it as a ``RunStatus``
    (always, unless the record was read ``lenient``)."""

    run_id: str
    stored_status: str
    lease_epoch: int
    lease_owner: str | None
    lease_expires_at: float | None
    created_at: float
    updated_at: float
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any], *, lenient: bool = False) -> RunRecord:
        """The record of a ``runs`` row (as ``Store.get`` / ``query`` return it); ``lenient``
        keeps a status that is not a ``RunStatus`` (to show a damaged row, never to act on it).

        Raises:
            ValueError: its ``status`` is not a ``RunStatus`` (and not ``lenient``).
        """
        if not lenient and row.get("status") not in _RUN_STATUS:
            raise _refused(row, "status", RUN_STATUSES)
        return cls(run_id=row["run_id"], stored_status=row["status"],
                   lease_epoch=int(row.get("lease_epoch") or 0),
                   lease_owner=row.get("lease_owner"),
                   lease_expires_at=row.get("lease_expires_at"),
                   created_at=row["created_at"], updated_at=row["updated_at"],
                   data=row.get("data") or {})

    # -- status ----------------------------------------------------------------------------
    @property
    def known_status(self) -> RunStatus | None:
        """The status, or None when the stored one is not a ``RunStatus`` (a ``lenient`` read)."""
        return _RUN_STATUS.get(self.stored_status)

    @property
    def status(self) -> RunStatus:
        """The run's status.

        Raises:
            ValueError: the stored status is not a ``RunStatus`` (only on a ``lenient`` read).
        """
        status = self.known_status
        if status is None:
            raise _refused({"run_id": self.run_id, "status": self.stored_status}, "status",
                           RUN_STATUSES)
        return status

    @property
    def running(self) -> bool:
        return self.known_status == "running"

    @property
    def ended(self) -> TerminalRunStatus | None:
        """How the run ended; None while it has not (``pending``, ``running``, ``waiting``,
        ``suspended``) or its status is unknown."""
        status = self.known_status
        match status:
            case None | "running" | "pending" | "waiting" | "suspended":
                return None
            case "succeeded" | "failed" | "cancelled" | "timed_out":
                return status
            case _:
                assert_never(status)

    # -- what it was started with ---------------------------------------------------------------
    @property
    def agent(self) -> str | None:
        return self.data.get("agent")

    @property
    def task(self) -> str | None:
        return self.data.get("task")

    @property
    def session_id(self) -> str | None:
        return self.data.get("session_id")

    @property
    def session_seen(self) -> int | None:
        """How many turns of its session the run saw when it started."""
        return self.data.get("session_seen")

    @property
    def release_id(self) -> str | None:
        return self.data.get("release_id")

    @property
    def catalog_version(self) -> str | None:
        return self.data.get("catalog_version")

    @property
    def sandbox_backend(self) -> str | None:
        """The sandbox its commands ran in (None for a run recorded before it was stored)."""
        return self.data.get("sandbox_backend")

    @property
    def config_path(self) -> str | None:
        """The config file the run was started from (``data.config.path``), if any."""
        return (self.data.get("config") or {}).get("path")

    @property
    def config_snapshot(self) -> Any:
        """The config's values when the run started (``data.config.snapshot``), if recorded."""
        return (self.data.get("config") or {}).get("snapshot")

    # -- what it gave -----------------------------------------------------------------------
    @property
    def output(self) -> Any:
        """The final answer: its text, or the parsed JSON of a structured one."""
        return self.data.get("output")

    @property
    def error(self) -> OperationError | None:
        stored = self.data.get("error")
        return OperationError.from_dict(stored) if stored else None

    @property
    def steps(self) -> int | None:
        return self.data.get("steps")

    @property
    def workspace(self) -> str | None:
        """The host folder its files stay in after it ended, if it was kept."""
        return self.data.get("workspace")

    @property
    def failures(self) -> RunFailures | None:
        """How often the runtime failed driving it (``agent.failures``); None if never."""
        stored = self.data.get("failures")
        return RunFailures.from_dict(stored) if stored else None


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


def get_run(store: Store, run_id: str, *, lenient: bool = False) -> RunRecord | None:
    """The run, or None when the store has no such run (``lenient``: see
    ``RunRecord.from_row``)."""
    row = store.get("runs", {"run_id": run_id})
    return None if row is None else RunRecord.from_row(row, lenient=lenient)


def runs(store: Store, *, status: RunStatus | None = None, newest_first: bool = False,
         limit: int | None = None, lenient: bool = False) -> list[RunRecord]:
    """Runs in the order they were created (``newest_first``: the other way), only those with
    ``status`` when given, at most ``limit`` (``lenient``: see ``RunRecord.from_row``)."""
    where = None if status is None else {"status": status}
    rows = store.query("runs", where, order_by=("created_at",), descending=newest_first,
                       limit=limit)
    return [RunRecord.from_row(row, lenient=lenient) for row in rows]


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
