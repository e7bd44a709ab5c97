"""Recording a person's answer (or the deadline's default) once, and re-queueing the run.

An answer is one commit, with no lease (the answerer holds none)::

    Delete approvals where (operation_id, status = pending)  ┐ compare-and-set: a second
    Insert approvals (operation_id, status = answered)       ┘ answer finds no pending row, its
                                                               Insert conflicts: refused
    Put runs (status = pending)   only when the run is ``waiting`` and no other approval of
                                  it is pending; fenced by the lease epoch read, so a run a
                                  worker claimed meanwhile is never put back in the queue

After the commit the run is looked at again (``requeue_if_answered``): two answers to two
calls of one run, given at once, each saw the other pending; the later one re-queues it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from agentloom.approvals.errors import ApprovalError
from agentloom.approvals.records import Answer, ApprovalRecord, ApprovalStatus
from agentloom.errors import FencedOut, RevisionConflict
from agentloom.store.ports import Delete, Fence, Insert, Op, Put, Store, WriteSet

Commit = Callable[[WriteSet], Awaitable[None]]
"""The kernel's coordinator commit (``kernel.coordinator.commit``)."""
RETRIES = 5  # a run claimed between reading it and committing: read again, at most this often


async def answer(store: Store, commit: Commit, *, run_id: str, operation_id: str,
                 approve: bool, reason: str | None = None,
                 actor: str | None = None) -> ApprovalRecord:
    """Record a person's answer to the call ``operation_id`` of ``run_id``, once: ``approve``
    lets it run when it is issued again, else it ends ``denied_before_execution`` with
    ``reason``. When the run is ``waiting`` and nothing else of it waits, it is put back in
    the queue (``pending``) in the same commit. Returns the answered record.

    Raises:
        ApprovalError: ``APPROVAL_NOT_FOUND`` — no call of ``run_id`` waits under
            ``operation_id``; ``APPROVAL_ALREADY_ANSWERED`` — it was answered (or expired)
            already, the message says how and when.
    """
    status: ApprovalStatus = "approved" if approve else "rejected"
    given: Answer = "approve" if approve else "deny"
    for _ in range(RETRIES):
        record = _waiting(store, run_id, operation_id)
        answered = replace(record, status=status, answer=given, reason=reason, actor=actor,
                           answered_at=time.time())
        try:
            await _settle(store, commit, answered)
        except RevisionConflict:
            raise _already(store, record) from None
        except FencedOut:
            continue  # the run was claimed meanwhile: look at it again
        await requeue_if_answered(store, commit, run_id)
        return answered
    raise _busy(run_id)


async def expire_due(store: Store, commit: Commit, now: float | None = None,
                     ) -> list[ApprovalRecord]:
    """Expire every ``pending`` approval whose deadline is at or before ``now``: its default
    answer applies (the run is re-queued as ``answer`` does). One that is answered meanwhile
    keeps its answer and is left out. Returns the expired records, earliest deadline first.
    ``now``: by default the store's time (a worker whose clock is ahead expires nothing
    early)."""
    now = store.now() if now is None else now
    due = sorted((ApprovalRecord.from_row(r) for r in store.query("approvals",
                                                                   {"status": "pending"})),
                 key=lambda r: (r.deadline or 0.0, r.operation_id))
    expired = []
    for record in due:
        if record.deadline is None or record.deadline > now:
            continue
        done = replace(record, status="expired", answer=record.default, answered_at=now)
        for _ in range(RETRIES):
            try:
                await _settle(store, commit, done)
            except RevisionConflict:
                break  # answered first: that answer stands
            except FencedOut:
                continue
            await requeue_if_answered(store, commit, record.run_id)
            expired.append(done)
            break
    return expired


async def requeue_if_answered(store: Store, commit: Commit, run_id: str) -> bool:
    """Put the run back in the queue (``pending``) when it is ``waiting`` and none of its
    approvals is pending any more; whether it did. Idempotent: ``answer`` and ``expire_due``
    call it after their commit, and the run's driver calls it after committing ``waiting``
    (an answer given before that found the run still ``running``)."""
    for _ in range(RETRIES):
        ops, fence = _requeue(store, run_id, answered=None)
        if not ops:
            return False
        try:
            await commit(WriteSet(tuple(ops), fence, label=f"requeue {run_id}"))
        except FencedOut:
            continue
        return True
    raise _busy(run_id)


def get_approval(store: Store, operation_id: str) -> ApprovalRecord | None:
    """The approval of the call ``operation_id``, or None when it never waited."""
    row = store.get("approvals", {"operation_id": operation_id})
    return None if row is None else ApprovalRecord.from_row(row)


def pending_approvals(store: Store, run_id: str) -> list[ApprovalRecord]:
    """The calls of ``run_id`` that wait for an answer, oldest first."""
    rows = store.query("approvals", {"run_id": run_id, "status": "pending"},
                       order_by=("created_at",))
    return [ApprovalRecord.from_row(r) for r in rows]


# -- steps -----------------------------------------------------------------------------------
async def _settle(store: Store, commit: Commit, done: ApprovalRecord) -> None:
    """Commit ``done`` over its pending row (compare-and-set), re-queueing the run with it."""
    requeue, fence = _requeue(store, done.run_id, answered=done.operation_id)
    ops: list[Op | Delete] = [
        Delete("approvals", {"operation_id": done.operation_id, "status": "pending"}),
        Insert("approvals", done.row()), *requeue]
    await commit(WriteSet(tuple(ops), fence, label=f"approval {done.operation_id}"))


def _requeue(store: Store, run_id: str, *, answered: str | None) -> tuple[list[Op], Fence | None]:
    """The op putting ``run_id`` back in the queue when it is ``waiting`` and no approval but
    ``answered`` is pending, fenced by its current lease epoch; else nothing."""
    run = store.get("runs", {"run_id": run_id})
    if run is None or run["status"] != "waiting":
        return [], None
    if any(r["operation_id"] != answered
           for r in store.query("approvals", {"run_id": run_id, "status": "pending"})):
        return [], None
    put = Put("runs", {"run_id": run_id, "status": "pending", "updated_at": time.time()})
    return [put], Fence(run_id, run["lease_epoch"])


def _waiting(store: Store, run_id: str, operation_id: str) -> ApprovalRecord:
    row = store.get("approvals", {"operation_id": operation_id})
    if row is None or row["run_id"] != run_id:
        raise ApprovalError(f"no call of run {run_id} waits for an answer under operation "
                            f"{operation_id}; see the run's pending approvals",
                            code="APPROVAL_NOT_FOUND", category="not_found")
    record = ApprovalRecord.from_row(row)
    if record.status != "pending":
        raise _already(store, record)
    return record


def _already(store: Store, record: ApprovalRecord) -> ApprovalError:
    current = get_approval(store, record.operation_id) or record
    return ApprovalError(
        f"operation {record.operation_id} of run {record.run_id} was already answered: "
        f"{current.describe()}; a second answer is refused", code="APPROVAL_ALREADY_ANSWERED")


def _busy(run_id: str) -> ApprovalError:
    return ApprovalError(f"run {run_id} changed hands {RETRIES} times while the answer was "
                         "recorded; nothing was written, try again", code="APPROVAL_BUSY")
