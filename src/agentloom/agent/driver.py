"""Driving a run in this process: its React loop (or its program's ``drive``, a workflow) as an
asyncio task, its lease renewed and other processes' controls polled beside it, its model calls
routed and traced, and its end handed to ``agent.endings``.

::

    drive(lease, data, history) ──► LiveRun ──► task: _main ─► loop.run(root invocation)
                                       │                     │   └─ run_executor: Executors
                                       │                     └─ program.drive(ProgramRun)
                                       └─ _watch: controls, lease renewal (every POLL_S)
    _main ends ──► endings.finish | failed | park (release) | wait_for_answer (approval)

A run is *released* at a step boundary when its worker stops (``LiveRun.draining``): the
current step's calls commit first, then it goes back to the queue (``pending``).

Owns: the runs this process drives (``live``) and their tasks. Does not own: how a run was
started or claimed (``agent.starts``, ``agent.claims``), its ends (``agent.endings``), the
loop itself (``agent.loop``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agentloom.agent.controls import ControlState
from agentloom.agent.endings import RunEndings
from agentloom.agent.events import RunEvent
from agentloom.agent.fork import fork_facts, seed_fork
from agentloom.agent.handles import LiveRun, RunError, RunResult
from agentloom.agent.leases import WorkerSettings
from agentloom.agent.loop import Invocation, LoopOutcome, ReactLoop, initial_messages
from agentloom.agent.programs import ProgramRun, RunProgram
from agentloom.agent.quota import TokenQuota
from agentloom.agent.roster import Roster
from agentloom.agent.routes import route_connections
from agentloom.approvals import ApprovalPending
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.cancel import CancelToken
from agentloom.errors import FencedOut
from agentloom.kernel import Kernel, RunLease
from agentloom.models.gateway import watch_deltas
from agentloom.pipeline.context import InvocationContext
from agentloom.refs import OwnerRef
from agentloom.store.ports import Fence
from agentloom.store.records import operations
from agentloom.telemetry import RunTracer

__all__ = ["POLL_S", "RunDriver"]

log = logging.getLogger(__name__)

POLL_S = 0.2


class _RunReleased(Exception):
    """Raised at a step boundary of a run whose worker is stopping: the run goes back to the
    queue (``pending``) for another worker, from its last committed step."""


class RunDriver:
    """The runs of one runtime that this process drives."""

    def __init__(self, kernel: Kernel, roster: Roster, endings: RunEndings, *, release_id: str,
                 workers: WorkerSettings, tracing: RunTracer | None) -> None:
        self.kernel = kernel
        self.roster = roster
        self.endings = endings
        self.release_id = release_id
        self.workers = workers
        self.tracing = tracing
        self.live: dict[str, LiveRun] = {}
        self.loop = ReactLoop(kernel.bus, kernel.models, supplements=self._supplements,
                              edits=kernel.message_edits)
        kernel.bus.subscribe(self._on_notice)
        kernel.bus.pipeline.tracer = tracing

    def _on_notice(self, kind: str, payload: dict[str, Any]) -> None:
        """Pass a hook's warning on to the run's live subscribers (the CLI prints it)."""
        if kind != "hook.warning":
            return
        live = self.live.get(str(payload.get("run_id")))
        if live is not None:
            live.emit(RunEvent("hook.warning", live.lease.run_id, time.time(), payload))

    def drive(self, lease: RunLease, data: dict[str, Any], history: Sequence[Any]) -> LiveRun:
        """Start driving the run ``lease`` holds, with ``data`` (its times in this clock) and
        its session's earlier turns ``history``, as a task of this process."""
        live = LiveRun(lease, data, CancelToken(), ControlState(lease.run_id))
        live.controls.poll(self.kernel.store)
        if live.controls.stop_reason:
            live.cancel.set(live.controls.stop_reason)
        self.live[lease.run_id] = live
        main = self._main(live, history)
        live.task = asyncio.ensure_future(main if self.tracing is None else self.tracing.run(
            lease.run_id, agent=data["agent"], session_id=data.get("session_id"), work=main,
            first=data.get("trace")))
        return live

    async def _main(self, live: LiveRun, history: Sequence[Any]) -> RunResult:
        run_id = live.lease.run_id
        watch_deltas(live.observe_delta)  # this task's model calls: ``model.delta``, if asked
        watcher = asyncio.ensure_future(self._watch(live))
        try:
            program = self.roster.programs.get(live.data["agent"])
            if program is not None:
                return await self._main_program(live, program, watcher)
            agent = self.roster.agent(live.data["agent"])
            self._route(run_id, live.data.get("route"))
            if self.tracing is not None and "trace" not in live.data:
                ids = self.tracing.current_ids()  # recorded with the run: a resume links to it
                if ids is not None:
                    live.data["trace"] = ids
            forked = await seed_fork(self.kernel, live)  # a fork: its history and files
            live.emit(RunEvent("run.started", run_id, time.time(),
                               {"agent": agent.name, "task": live.data["task"],
                                **fork_facts(live.data)}))
            limit = agent.limits.max_total_tokens
            live.quota = TokenQuota.of_run(self.kernel.store, run_id, limit) if limit else None
            inv = Invocation(invocation_id=run_id, agent=agent,
                             ctx=self.context(live, agent.name, run_id),
                             messages=forked or initial_messages(agent, live.data["task"],
                                                                 history),
                             quota=live.quota)
            outcome = await self._invoke(inv, live)
            watcher.cancel()  # no renewal (which marks the run running) after its end commits
            result = await self.endings.finish(live.lease, live.data, outcome)
            live.emit(RunEvent("run.finished", run_id, time.time(), result.to_dict()))
            return result
        except _RunReleased:
            watcher.cancel()
            return await self.endings.park(live, "pending")
        except ApprovalPending as exc:
            watcher.cancel()
            return await self.endings.wait_for_answer(live, exc)
        except FencedOut as exc:
            raise RunError(f"run {run_id} was taken over by another worker: {exc}",
                           code="LEASE_LOST") from exc
        except Exception as exc:
            fenced = _fenced_out(exc)
            if fenced is not None:  # e.g. inside a batch: another process took the run over
                raise RunError(f"run {run_id} was taken over by another process: {fenced}",
                               code="LEASE_LOST") from exc
            watcher.cancel()  # no lease renewal after the failure lets the lease go
            return await self.endings.failed(live, exc)
        finally:
            watcher.cancel()
            for queue in live.subscribers:
                queue.put_nowait(None)
            self.live.pop(run_id, None)
            await self.kernel.model_manager.unroute(run_id)
            if self.tracing is not None:
                self.tracing.unroute(run_id)

    async def _main_program(self, live: LiveRun, program: RunProgram,
                            watcher: asyncio.Future[None]) -> RunResult:
        """The body of a run of a program (a workflow): its outcome, committed as an agent
        run's is. Failures, approvals and releases are handled by ``_main`` around it."""
        run_id = live.lease.run_id
        live.emit(RunEvent("run.started", run_id, time.time(),
                           {"agent": program.name, "task": live.data["task"]}))
        limit = program.limits.max_total_tokens  # the whole run's quota: every agent node's
        live.quota = TokenQuota.of_run(self.kernel.store, run_id, limit) if limit else None

        def context(role: str, invocation_id: str, *, owner: OwnerRef | None = None,
                    workspace_scope_id: str | None = None) -> InvocationContext:
            return self.context(live, role, invocation_id, owner=owner,
                                workspace_scope_id=workspace_scope_id)

        async def invoke(agent: str, task: str, ctx: InvocationContext,
                         history: Sequence[Any] = ()) -> LoopOutcome:
            return await self._invoke_agent(live, agent, task, ctx, history)

        def step_boundary() -> None:
            if live.draining:
                raise _RunReleased(run_id)

        outcome = await program.drive(ProgramRun(
            run_id=run_id, lease_epoch=live.lease.lease_epoch, task=live.data["task"],
            data=live.data, cancel=live.cancel, emit=live.emit, kernel=self.kernel,
            context=context, invoke=invoke, step_boundary=step_boundary,
            listening=lambda: bool(live.subscribers)))
        watcher.cancel()
        result = await self.endings.finish(live.lease, live.data, outcome)
        live.emit(RunEvent("run.finished", run_id, time.time(), result.to_dict()))
        return result

    def context(self, live: LiveRun, role: str, invocation_id: str, *,
                owner: OwnerRef | None = None,
                workspace_scope_id: str | None = None) -> InvocationContext:
        """An invocation context of the run ``live`` for ``role`` (an agent, or the program's
        own name), under that role's retry policy and approval settings."""
        retry, limits = self.roster.retry_and_limits(role)
        if owner is None:
            owner = OwnerRef(**live.data["owner"]) if "owner" in live.data else \
                self.roster.owner_of(live.data["agent"])
        ctx = self.kernel.invocation_context(
            live.lease, release_id=self.release_id, role=role, owner=owner,
            deadline=live.data["deadline"], retry=retry, cancel=live.cancel,
            invocation_id=invocation_id, approval_timeout_s=limits.approval_timeout_s,
            approval_default=limits.approval_default)
        if workspace_scope_id is not None:
            ctx = replace(ctx, workspace_scope_id=workspace_scope_id)
        return ctx

    def _route(self, run_id: str, route: dict[str, Any] | None) -> None:
        """Send this process's model calls of run ``run_id`` where its recorded route says.

        Raises:
            ConfigError: a key variable the route names is not set here, or a routed model
                cannot serve what its agent asks (000 §4.6) — the run fails, naming it; it
                never falls back to the release's endpoint.
        """
        if not route:
            return
        connections = route_connections(route)
        for agent, connection in connections.items():
            if agent in self.roster.agents:
                replace(self.roster.agents[agent], model=connection).check_model()
        self.kernel.model_manager.route(run_id, connections)
        if self.tracing is not None:
            self.tracing.route(run_id, connections)

    async def _watch(self, live: LiveRun) -> None:
        """Poll for controls from other processes and renew the lease."""
        renewed = time.time()
        ttl = self.workers.lease_ttl_s
        while True:
            await asyncio.sleep(POLL_S)
            try:
                live.controls.poll(self.kernel.store)
                if live.controls.stop_reason and not live.cancel.is_set:
                    live.cancel.set(live.controls.stop_reason)
                if time.time() - renewed > ttl / 3:
                    await self.kernel.renew_lease(live.lease, lease_ttl_s=ttl)
                    renewed = time.time()
            except FencedOut:
                live.cancel.set("lease lost: another worker took this run over")
                return
            except Exception:
                log.warning("control watcher of run %s failed", live.lease.run_id, exc_info=True)

    async def _supplements(self, inv: Invocation, turn: int) -> list[str]:
        live = self.live.get(inv.ctx.run_id)
        if live is None:
            return []
        if live.draining and turn == inv.steps:  # a turn's start: its previous calls committed
            raise _RunReleased(inv.ctx.run_id)
        controls = live.controls
        if not controls.pending and turn not in controls.by_turn:
            return []
        key = f"{inv.invocation_id}/t{turn}/model"
        committed = bool(operations(self.kernel.store, inv.ctx.run_id, logical_key=key, limit=1))
        return await controls.take(self.kernel.store, self.kernel.coordinator,
                                   Fence(live.lease.run_id, live.lease.lease_epoch),
                                   turn=turn, live=not committed)

    async def run_executor(self, executor: str, task: str, request: CapabilityRequest,
                           context: AttemptContext) -> LoopOutcome:
        """A delegation tool's call: the Executor ``executor`` on ``task``, in the run that
        called it (``agent.delegation``).

        Raises:
            RunError: the run is not driven by this process.
        """
        live = self.live.get(context.run_id)
        if live is None:
            raise RunError(f"run {context.run_id} is not driven by this process")
        invocation_id = f"{context.run_id}/x/{request.operation_id}"
        return await self._invoke_agent(live, executor, task,
                                        self.context(live, executor, invocation_id))

    async def _invoke_agent(self, live: LiveRun, agent: str, task: str,
                            ctx: InvocationContext, history: Sequence[Any] = ()) -> LoopOutcome:
        """A non-root invocation of ``agent`` on ``task`` in ``ctx``, under the run's quota: an
        Executor's (no history), or a workflow's agent node's (``history`` when granted)."""
        spec = self.roster.agent(agent)
        assert ctx.invocation_id is not None
        inv = Invocation(invocation_id=ctx.invocation_id, agent=spec, ctx=ctx,
                         messages=initial_messages(spec, task, history), root=False,
                         quota=live.quota)
        return await self._invoke(inv, live)

    async def _invoke(self, inv: Invocation, live: LiveRun) -> LoopOutcome:
        work = self.loop.run(inv, live.emit)
        if self.tracing is None:
            return await work
        return await self.tracing.invocation(inv.invocation_id, run_id=live.lease.run_id,
                                             agent=inv.agent.name, work=work)


def _fenced_out(exc: BaseException) -> FencedOut | None:
    """The ``FencedOut`` behind ``exc``: itself, a member of a batch's errors, or a cause."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, FencedOut):
            return current
        todo.extend(getattr(current, "errors", None) or ())
        todo.extend((current.__cause__, current.__context__))
    return None
