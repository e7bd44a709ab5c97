"""Controlling a run from outside its loop: stop it, give it more input, answer a call that
waits for a person.

::

    stop(run_id)        ─► STOP control recorded ─► driven here: cancelled at once
                                                 ─► nobody holds it: claimed, ended cancelled
                                                 ─► another process drives it: it polls it
    supplement(run_id)  ─► SUPPLEMENT control ─► the root's next turn (``agent.controls``)
    approve / reject    ─► ``approvals.answer`` ─► all answered: the run is queued again

Owns: those four commands. Does not own: the controls' records (``agent.controls``), the
answers (``approvals``), a run's end (``agent.endings``).
"""

from __future__ import annotations

from agentloom.agent.controls import STOP, SUPPLEMENT, record_control
from agentloom.agent.driver import RunDriver
from agentloom.agent.endings import RunEndings
from agentloom.agent.handles import RunError
from agentloom.agent.leases import WorkerSettings, is_interrupted
from agentloom.agent.loop import LoopOutcome
from agentloom.approvals import ApprovalRecord, answer
from agentloom.errors import OperationError, StoreError
from agentloom.kernel import Kernel
from agentloom.store.records import get_run

__all__ = ["RunControl"]


class RunControl:
    """The controls of one runtime over the runs of its store."""

    def __init__(self, kernel: Kernel, driver: RunDriver, endings: RunEndings,
                 workers: WorkerSettings) -> None:
        self.kernel = kernel
        self.driver = driver
        self.endings = endings
        self.workers = workers

    async def stop(self, run_id: str, reason: str) -> None:
        """``Runtime.stop``: see there."""
        store = self.kernel.store
        run = get_run(store, run_id)
        if run is None:
            raise RunError(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
        if run.ended is not None:
            return
        live = self.driver.live.get(run_id)
        if live is not None:
            live.cancel.set(reason)
        await record_control(self.kernel.coordinator, run_id, STOP, {"reason": reason})
        parked = run.status in ("pending", "waiting", "suspended")
        if live is None and (parked or is_interrupted(run, store.now())):
            try:  # a worker that claims it first sees the control and stops it itself
                lease = self.kernel.claim(run_id, lease_ttl_s=self.workers.lease_ttl_s,
                                          only_if_expired=parked)
            except StoreError as exc:
                if exc.code == "LEASE_HELD":
                    return
                raise
            await self.endings.finish(lease, dict(run.data), LoopOutcome(
                "cancelled", None, OperationError(code="RUN_STOPPED", category="cancelled",
                                                  message=reason)))

    async def supplement(self, run_id: str, text: str) -> None:
        """``Runtime.supplement``: see there."""
        run = get_run(self.kernel.store, run_id)
        if run is None or run.ended is not None:
            raise RunError(f"run {run_id!r} is not running", code="RUN_NOT_RUNNING")
        await record_control(self.kernel.coordinator, run_id, SUPPLEMENT,
                             {"text": text, "consumed_turn": None})
        live = self.driver.live.get(run_id)
        if live is not None:
            live.controls.poll(self.kernel.store)

    async def answer(self, run_id: str, operation_id: str, *, approve: bool,
                     reason: str | None, actor: str | None) -> ApprovalRecord:
        """``Runtime.approve`` / ``reject``: see there."""
        return await answer(self.kernel.store, self.kernel.coordinator.commit, run_id=run_id,
                            operation_id=operation_id, approve=approve, reason=reason,
                            actor=actor)
