"""The ``approvals`` repository: one row per call that waits (or waited) for a person, as a
frozen ``ApprovalRecord``; its reads and the ops that write it.

::

    store.get("approvals", …)    ──► ApprovalRecord.from_row ──► get_approval(store, operation_id)
    store.query("approvals", …)  ──► ApprovalRecord.from_row ──► pending_approvals / all_pending /
                                                               run_approvals
    Insert("approvals", row)     ◄── pending_row(…)         (the pipeline, with the operation row)
    Delete + Insert              ◄── settle_ops(answered)   (compare-and-set: answered once)

Columns: ``operation_id`` (key), ``run_id``, ``status``, ``created_at``, ``deadline``,
``answered_at``; the rest in ``data``: the question, the capability, the arguments the person
approves, the default answer, which hooks asked, and once answered the answer, its reason and
who gave it.

Owns: ``ApprovalRecord``, its closed sets, the reads and the op builders. Does not own: when an
answer commits nor re-queueing the run (``approvals.answers``), when a call asks
(``pipeline.approval``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from agentloom.store.ports import Delete, Insert, Store

__all__ = ["ANSWERS", "APPROVAL_STATUSES", "Answer", "ApprovalRecord", "ApprovalStatus",
           "all_pending", "get_approval", "pending_approvals", "pending_operation_ids", "pending_row",
           "run_approvals", "settle_ops"]

TABLE = "approvals"

ApprovalStatus = Literal["pending", "approved", "rejected", "expired"]
"""``pending`` (no answer yet), ``approved`` / ``rejected`` (a person answered), ``expired``
(the deadline passed first: the default answer applies)."""
APPROVAL_STATUSES: tuple[ApprovalStatus, ...] = get_args(ApprovalStatus)
Answer = Literal["approve", "deny"]
"""What applies to the call: the person's answer, or the default once expired."""
ANSWERS: tuple[Answer, ...] = get_args(Answer)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRecord:
    """One call waiting (or that waited) for a person's answer.

    ``arguments`` are the call's effective arguments after every before-hook (what runs when
    approved); ``default`` applies when the ``deadline`` passes unanswered; ``answer`` is
    None while ``pending``, else what applies (``approve`` / ``deny``)."""

    operation_id: str
    run_id: str
    status: ApprovalStatus
    question: str
    capability_key: str
    exposed_name: str
    arguments: Mapping[str, Any]
    asked_by: tuple[str, ...]
    created_at: float
    deadline: float | None
    default: Answer
    answer: Answer | None = None
    reason: str | None = None
    actor: str | None = None
    answered_at: float | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ApprovalRecord:
        """The record of a stored ``approvals`` row.

        Raises:
            ValueError: a status or answer that is not one of the closed sets (names it).
        """
        data = row["data"]
        status = row["status"]
        if status not in APPROVAL_STATUSES:
            raise ValueError(f"approval {row['operation_id']} has unknown status {status!r}; "
                             f"known: {list(APPROVAL_STATUSES)}")
        return cls(
            operation_id=row["operation_id"], run_id=row["run_id"], status=status,
            question=data["question"], capability_key=data["capability_key"],
            exposed_name=data.get("exposed_name", data["capability_key"]),
            arguments=dict(data.get("arguments") or {}),
            asked_by=tuple(data.get("asked_by") or ()), created_at=row["created_at"],
            deadline=row["deadline"], default=_answer(data.get("default", "deny"), row),
            answer=None if data.get("answer") is None else _answer(data["answer"], row),
            reason=data.get("reason"), actor=data.get("actor"), answered_at=row["answered_at"],
        )

    def row(self) -> dict[str, Any]:
        """The ``approvals`` row holding this record."""
        return {
            "operation_id": self.operation_id, "run_id": self.run_id, "status": self.status,
            "created_at": self.created_at, "deadline": self.deadline,
            "answered_at": self.answered_at,
            "data": {"question": self.question, "capability_key": self.capability_key,
                     "exposed_name": self.exposed_name, "arguments": dict(self.arguments),
                     "asked_by": list(self.asked_by), "default": self.default,
                     "answer": self.answer, "reason": self.reason, "actor": self.actor},
        }

    def describe(self) -> str:
        """How it was answered, for a refusal or a diagnostic: ``approved by alice at
        2026-12-01 15:00:00 UTC (reason: ok)``; ``pending`` while unanswered."""
        if self.status == "pending":
            return "pending"
        when = "" if self.answered_at is None else " at " + time.strftime(
            "%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.answered_at))
        if self.status == "expired":
            return f"expired{when} (the default answer, {self.default}, applied)"
        by = f" by {self.actor}" if self.actor else ""
        because = f" (reason: {self.reason})" if self.reason else ""
        return f"{self.status}{by}{when}{because}"


def pending_row(*, operation_id: str, run_id: str, question: str, capability_key: str,
                exposed_name: str, arguments: Mapping[str, Any], asked_by: Sequence[str],
                timeout_s: float | None, default: Answer,
                now: float | None = None) -> Insert:
    """The ``Insert`` of a new ``pending`` approval (committed with the call's operation row
    at phase ``awaiting_approval``; a second one for the same operation is refused)."""
    created = time.time() if now is None else now
    record = ApprovalRecord(
        operation_id=operation_id, run_id=run_id, status="pending", question=question,
        capability_key=capability_key, exposed_name=exposed_name, arguments=arguments,
        asked_by=tuple(asked_by), created_at=created,
        deadline=None if timeout_s is None else created + timeout_s, default=default)
    return Insert(TABLE, record.row())


# -- reads ------------------------------------------------------------------------------------


def get_approval(store: Store, operation_id: str) -> ApprovalRecord | None:
    """The approval of the call ``operation_id``, or None when it never waited."""
    row = store.get(TABLE, {"operation_id": operation_id})
    return None if row is None else ApprovalRecord.from_row(row)


def pending_approvals(store: Store, run_id: str) -> list[ApprovalRecord]:
    """The calls of ``run_id`` that wait for an answer, oldest first."""
    rows = store.query(TABLE, {"run_id": run_id, "status": "pending"}, order_by=("created_at",))
    return [ApprovalRecord.from_row(r) for r in rows]


def run_approvals(store: Store, run_id: str) -> list[ApprovalRecord]:
    """Every approval of ``run_id``, pending or answered, oldest first."""
    rows = store.query(TABLE, {"run_id": run_id}, order_by=("created_at",))
    return [ApprovalRecord.from_row(r) for r in rows]


def pending_operation_ids(store: Store, run_id: str) -> list[str]:
    """The operation ids of the calls of ``run_id`` that wait for an answer (no record is
    decoded: a re-queue only asks whether any other call still waits)."""
    return [r["operation_id"] for r in store.query(
        TABLE, {"run_id": run_id, "status": "pending"}, columns=("operation_id",))]


def all_pending(store: Store) -> list[ApprovalRecord]:
    """Every approval still ``pending``, of any run, in the store's order."""
    return [ApprovalRecord.from_row(r) for r in store.query(TABLE, {"status": "pending"})]


# -- writes (ops for the caller to commit) ---------------------------------------------------


def settle_ops(done: ApprovalRecord) -> tuple[Delete, Insert]:
    """The compare-and-set writing ``done`` (answered or expired) over its ``pending`` row: the
    pending row deleted, ``done`` inserted. A second answer finds no pending row to delete, and
    its insert conflicts (``RevisionConflict``): the first answer stands."""
    return (Delete(TABLE, {"operation_id": done.operation_id, "status": "pending"}),
            Insert(TABLE, done.row()))


def _answer(value: Any, row: Mapping[str, Any]) -> Answer:
    if value not in ANSWERS:
        raise ValueError(f"approval {row['operation_id']} has unknown answer {value!r}; "
                         f"known: {list(ANSWERS)}")
    answer: Answer = value
    return answer
