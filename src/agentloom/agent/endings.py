"""How a run leaves this process: it ends (``finish``: its terminal state and session turn
committed, then its workspace cleaned — only then is its answer delivered), the runtime fails
on it (``failed``: counted, ended ``failed`` or let go for a retry after a back-off), or it is
let go unfinished (``park``: ``waiting`` for a person's answer, ``pending`` in the queue).

::

    agent.driver ──► finish(lease, data, outcome) ──► kernel.end_run(+ session close / turn op)
                 ──► failed(live, exc)            ──► finish(failed) | kernel.release_run
                 ──► park / wait_for_answer       ──► kernel.park_run(waiting | pending)

Owns: those three ends and the ``RunResult`` each gives. Does not own: driving the run
(``agent.driver``), the failure count and back-off (``agent.failures``), the answers
(``approvals``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from agentloom.agent.events import RunEvent
from agentloom.agent.failures import RecoveryPolicy, note_failure
from agentloom.agent.handles import LiveRun, RunError, RunResult
from agentloom.agent.loop import LoopOutcome
from agentloom.agent.sessions import close_op, turn_op
from agentloom.approvals import ApprovalPending, requeue_if_answered
from agentloom.errors import FencedOut, RevisionConflict
from agentloom.kernel import Kernel, RunLease
from agentloom.store import Op
from agentloom.store.records import get_run
from agentloom.store.sessions import last_turn
from agentloom.workspace.scope import WorkspaceScope

__all__ = ["MAX_TURN_TRIES", "RunEndings", "effective_task"]

log = logging.getLogger(__name__)

MAX_TURN_TRIES = 20


class RunEndings:
    """The ends of the runs of one kernel (``recovery``: how often a failing run is retried)."""

    def __init__(self, kernel: Kernel, recovery: RecoveryPolicy) -> None:
        self.kernel = kernel
        self.recovery = recovery

    async def finish(self, lease: RunLease, data: dict[str, Any],
                     outcome: LoopOutcome) -> RunResult:
        """Commit the terminal state (and the session turn), then clean the workspace; only
        then is the answer delivered.

        Raises:
            RunError: ``SESSION_TURN_CONFLICT``: the session turn could not be recorded.
        """
        scopes = self.kernel.environment.scopes.scopes_for_run(lease.run_id)
        data = {**data, "output": outcome.answer, "steps": outcome.steps,
                "error": outcome.error.to_dict() if outcome.error else None,
                "workspace": self.kept_folder(scopes)}
        slot = data.get("session_slot")
        if data.get("session_id") and slot is not None:  # its end frees the session
            await self.kernel.end_run(lease, outcome.status, data=data, scopes=scopes,
                                      with_ops=(close_op(
                data["session_id"], slot, run_id=lease.run_id,
                task=effective_task(outcome, data["task"]),
                status=outcome.status,
                output=outcome.output if outcome.status == "succeeded" else None),))
        else:
            await self._finish_unslotted(lease, data, outcome, scopes)
        return RunResult(lease.run_id, outcome.status, outcome.answer, outcome.error,
                         outcome.steps,
                         self.kernel.environment.revocation_confirmed(lease.run_id),
                         data["workspace"])

    async def _finish_unslotted(self, lease: RunLease, data: dict[str, Any],
                                outcome: LoopOutcome, scopes: list[WorkspaceScope]) -> None:
        """The end of a run without a session slot (none, or started before slots): a
        succeeded session run appends its turn after the last one."""
        session = data.get("session_id") if outcome.status == "succeeded" else None
        store = self.kernel.store
        for _ in range(MAX_TURN_TRIES):
            turn: tuple[Op, ...] = ()
            if session:
                last = last_turn(store, session)
                seq = last.seq + 1 if last is not None else 0
                turn = (turn_op(session, seq, run_id=lease.run_id,
                                task=effective_task(outcome, data["task"]),
                                output=outcome.output),)
            try:  # a conflict is raised before anything is recorded or cleaned
                await self.kernel.end_run(lease, outcome.status, data=data, with_ops=turn,
                                          scopes=scopes)
                return
            except RevisionConflict:
                if not session:
                    raise  # another run of this session took ``seq``: take the next one
        raise RunError(f"run {lease.run_id}: could not record its session turn",
                       code="SESSION_TURN_CONFLICT")

    def kept_folder(self, scopes: list[WorkspaceScope]) -> str | None:
        """The folder of the run that its end keeps (of its ``scopes``: a persistent one)."""
        kept = [s for s in scopes if s.persistent and s.state != "deleted"]
        return str(self.kernel.environment.scopes.path(kept[0]).absolute()) if kept else None

    async def failed(self, live: LiveRun, exc: Exception) -> RunResult:
        """The runtime failed while driving the run (not the model, a tool or a hook: those
        end in results). Count it on the run; after ``recovery.max_failures`` identical
        failures end the run ``failed``, else let its lease go for a worker to try again
        after the back-off.

        Raises:
            RunError: ``RUN_CRASHED`` (the run stays interrupted, to be tried again), or
                ``LEASE_LOST`` (another process took it over meanwhile).
        """
        run_id = live.lease.run_id
        log.debug("run %s: the runtime failed while driving it", run_id, exc_info=exc)
        run = get_run(self.kernel.store, run_id)
        data, error = note_failure(dict(run.data if run else live.data), exc, self.recovery)
        failures = data["failures"]
        if error is not None:
            try:
                result = await self.finish(live.lease, data, LoopOutcome("failed", None, error))
            except Exception as finish_exc:
                _not_recorded(run_id, "could not end it failed", finish_exc)
            else:
                live.emit(RunEvent("run.finished", run_id, time.time(), result.to_dict()))
                return result
        else:
            try:
                await self.kernel.release_run(live.lease, data=data)
            except Exception as record_exc:
                _not_recorded(run_id, "could not record the failure", record_exc)
        last = failures["last"]
        raise RunError(
            f"the runtime failed while driving run {run_id} ({failures['count']} of "
            f"{self.recovery.max_failures} times this way): {last['code']}: {last['message']}; "
            "the run stays interrupted: `agentloom worker CONFIG` tries it again after "
            f"{self.recovery.backoff(failures['total']):g}s, or `agentloom runs resume "
            f"{run_id}` at once", code="RUN_CRASHED") from exc

    async def park(self, live: LiveRun, status: Literal["waiting", "pending"],
                   facts: Mapping[str, Any] | None = None) -> RunResult:
        """Let a run go without ending it: ``waiting`` for a person, or ``pending`` again in
        the queue. Nobody holds it after this; its workspace stays."""
        data = {**live.data, **(facts or {})}
        await self.kernel.park_run(live.lease, status, data=data)
        return RunResult(live.lease.run_id, status, None, None,
                         workspace=self.kept_folder(
                             self.kernel.environment.scopes.scopes_for_run(live.lease.run_id)))

    async def wait_for_answer(self, live: LiveRun, pending: ApprovalPending) -> RunResult:
        """A call asked a person (a hook answered ``ask``): the run waits — nobody holds it —
        until every such call is answered, then it is queued again (``approvals``)."""
        run_id = live.lease.run_id
        calls = tuple({"operation_id": c.operation_id, "capability": c.capability_key,
                       "question": c.question, "deadline": c.deadline} for c in pending.calls)
        waiting = {"since": time.time(), "question": pending.question,
                   "operation_ids": [c["operation_id"] for c in calls], "calls": list(calls)}
        parked = await self.park(live, "waiting", {"waiting": waiting})
        for c in pending.calls:  # as ``runs events`` and the host's stream show it (from the store)
            live.emit(RunEvent("run.waiting", run_id, time.time(), {
                "approval_id": c.operation_id, "operation_id": c.operation_id,
                "capability": c.capability_key, "question": c.question, "deadline": c.deadline}))
        # an answer given before the run was ``waiting`` found it running: queue it now
        if await requeue_if_answered(self.kernel.store, self.kernel.coordinator.commit, run_id):
            return replace(parked, status="pending")
        return replace(parked, waiting=calls)


def _not_recorded(run_id: str, what: str, exc: Exception) -> None:
    if isinstance(exc, FencedOut):
        raise RunError(f"run {run_id} was taken over by another process: {exc}",
                       code="LEASE_LOST") from exc
    log.warning("run %s: %s: %s", run_id, what, exc)
    log.debug("run %s: %s", run_id, what, exc_info=exc)


def effective_task(outcome: LoopOutcome, task: str) -> str:
    """The task as the run's history ended up showing it: a model before-hook's lasting edit
    (a redacted password) is what later runs of the session see as this turn (000 §5.3); the
    run's own record keeps the raw task."""
    for message in outcome.messages:
        if message.id == "task" and message.content:
            return message.content
    return task
