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

The rows and ops are the repositories' (``store.approvals``: the compare-and-set;
``store.runs.requeue_op``: the run back in the queue): this module decides when they commit.
Besides the kernel, it is the one other writer of ``runs`` rows — only ``waiting`` → ``pending``,
fenced by the epoch it read, so it never races the run's holder.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from agentloom.approvals.errors import ApprovalError
from agentloom.errors import FencedOut, RevisionConflict
from agentloom.store.approvals import (
    Answer,
    ApprovalRecord,
    ApprovalStatus,
    all_pending,
    get_approval,
    pending_approvals,
    pending_operation_ids,
    settle_ops,
)
from agentloom.store.ports import Fence, Op, Store, WriteSet
from agentloom.store.runs import get_run, requeue_op

__all__ = ["RETRIES", "Commit", "answer", "expire_due", "get_approval", "pending_approvals",
           "requeue_if_answered"]

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
    due = sorted(all_pending(store), key=lambda r: (r.deadline or 0.0, r.operation_id))
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


# -- steps -----------------------------------------------------------------------------------
async def _settle(store: Store, commit: Commit, done: ApprovalRecord) -> None:
    """Commit ``done`` over its pending row (compare-and-set), re-queueing the run with it."""
    requeue, fence = _requeue(store, done.run_id, answered=done.operation_id)
    await commit(WriteSet((*settle_ops(done), *requeue), fence,
                          label=f"approval {done.operation_id}"))


def _requeue(store: Store, run_id: str, *, answered: str | None) -> tuple[list[Op], Fence | None]:
    """The op putting ``run_id`` back in the queue when it is ``waiting`` and no approval but
    ``answered`` is pending, fenced by its current lease epoch; else nothing."""
    run = get_run(store, run_id, lenient=True)
    if run is None or run.stored_status != "waiting":
        return [], None
    if any(other != answered for other in pending_operation_ids(store, run_id)):
        return [], None
    return [requeue_op(run_id, now=time.time())], run.fence


def _waiting(store: Store, run_id: str, operation_id: str) -> ApprovalRecord:
    record = get_approval(store, operation_id)
    if record is None or record.run_id != run_id:
        raise ApprovalError(f"no call of run {run_id} waits for an answer under operation "
                            f"{operation_id}; see the run's pending approvals",
                            code="APPROVAL_NOT_FOUND", category="not_found")
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
