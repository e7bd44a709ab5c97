"""The runtime: agents on a store — start, resume, stop and supplement runs (000 §3.3, §4).

::

    rt = Runtime([AgentSpec(name="main", model=TestModel(), tools=("fs.read",))],
                 store="sqlite:///.agentloom/agentloom.db")
    handle = await rt.start("list the files")
    result = await handle.result()      # RunResult(run_id, status, output, error)

A run's life: ``running`` (lease held, epoch fenced) → ``succeeded`` | ``failed`` |
``cancelled`` | ``timed_out``. Its final answer is delivered only after that terminal state
(and the session turn) is committed. ``resume`` takes a new lease — fencing any old holder —
and runs the loop again, which replays every committed stage and continues from the first
one that has no committed result.

``Runtime`` is a facade: each public method delegates to the collaborator that owns the job::

    Runtime ──► Roster (agent.roster)        the agents and programs, their limits and owners
            ──► release (agent.release)      the release id and the published catalog
            ──► RunStarts (agent.starts)     start here, or submit to the queue
            ──► RunClaims (agent.claims)     resume / requeue / take / claim_next / takeovers
            ──► RunDriver (agent.driver)     the runs driven here: loop, watcher, routes
            ──► RunEndings (agent.endings)   finish, failed, park, wait for an answer
            ──► RunControl (agent.control)   stop, supplement, approve, reject

Settings are one frozen ``RuntimeOptions`` (``agent.options``); the keywords of ``Runtime``
are shorthand for its fields.

Owns: the public API and the wiring of those collaborators. Does not own: any of their jobs,
nor the read models (``agentloom.views``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentloom.agent.claims import RunClaims, suspended_refusal, waiting_refusal
from agentloom.agent.control import RunControl
from agentloom.agent.driver import RunDriver
from agentloom.agent.endings import RunEndings, effective_task
from agentloom.agent.events import RunEvent, run_events
from agentloom.agent.failures import RecoveryPolicy
from agentloom.agent.handles import (
    LiveRun,
    RunError,
    RunHandle,
    RunResult,
    RunResultStatus,
    SessionBusy,
)
from agentloom.agent.leases import WorkerSettings, is_interrupted
from agentloom.agent.options import UNSET, RuntimeOptions, Unset, with_keywords
from agentloom.agent.owners import OwnerDeletion, delete_owner, parse_owner
from agentloom.agent.programs import RunProgram
from agentloom.agent.release import publish, release_digest
from agentloom.agent.roster import Roster
from agentloom.agent.routes import ModelRoutes
from agentloom.agent.spec import AgentSpec
from agentloom.agent.starts import RunStarts
from agentloom.approvals import ApprovalRecord
from agentloom.hooks import HookLike, HookRunners, hook_specs
from agentloom.kernel import Kernel, RunLease
from agentloom.refs import OwnerRef, Principal
from agentloom.sandbox import EnvironmentPolicy
from agentloom.sandbox.ports import SandboxBackend
from agentloom.store import Store
from agentloom.store.records import OperationRecord, operations, runs
from agentloom.telemetry import tracing

__all__ = ["RunError", "RunHandle", "RunResult", "RunResultStatus", "Runtime", "RuntimeOptions",
           "SessionBusy", "effective_task", "list_runs", "suspended_refusal", "waiting_refusal"]

log = logging.getLogger(__name__)


class Runtime:
    """Agents, a store and a workspace root; the Python API of AgentLoom."""

    def __init__(
        self,
        agents: Sequence[AgentSpec],
        *,
        options: RuntimeOptions | None = None,
        store: Store | str | Unset = UNSET,
        hooks: Sequence[HookLike] | Unset = UNSET,
        hook_functions: Mapping[str, Callable[..., Any]] | Unset | None = UNSET,
        workspace_root: Path | str | Unset | None = UNSET,
        sandbox_backend: SandboxBackend | Unset = UNSET,
        sandbox_policy: EnvironmentPolicy | Unset | None = UNSET,
        space_id: str | Unset = UNSET,
        recovery: RecoveryPolicy | Unset | None = UNSET,
        config_source: Mapping[str, Any] | Unset | None = UNSET,
        workdir: Path | str | Unset | None = UNSET,
        keep_workspaces: bool | Unset = UNSET,
        workers: WorkerSettings | Unset | None = UNSET,
        tracer_provider: Any = UNSET,
        telemetry: bool | Unset | None = UNSET,
        model_routes: ModelRoutes | Unset | None = UNSET,
        programs: Sequence[RunProgram] | Unset = UNSET,
        hook_runners: HookRunners | Unset | None = UNSET,
    ) -> None:
        """``options`` holds every setting (``RuntimeOptions``: each field documents its
        default and meaning); a keyword given — the same names — overrides that field, so
        ``Runtime(agents, store="memory://")`` is shorthand for
        ``Runtime(agents, options=RuntimeOptions(store="memory://"))``.

        Raises:
            ConfigError: no agent, two agents or workflows of one name, a delegation to an
                agent that is not defined, or a model that cannot serve its agent.
        """
        # every keyword not left UNSET overrides its field of ``options``
        self.options = options = with_keywords(options, locals())
        self.roster = roster = Roster(agents, options.programs, options.space_id)
        self.agents, self.programs = roster.agents, roster.programs
        self.space_id, self.recovery, self.workers = \
            options.space_id, options.recovery, options.workers
        self.config_source = options.config_source
        self.workdir, self.keep_workspaces = options.workdir, options.keep_workspaces
        self.model_routes = options.model_routes
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self.tracing = tracing(tracer_provider=options.tracer_provider, enabled=options.telemetry,
                               models={a.name: a.model for a in agents})
        hook_list, functions = hook_specs(options.hooks, options.hook_functions)
        self.kernel = kernel = Kernel(
            options.store, hooks=hook_list, hook_functions=functions,
            hook_runners=options.hook_runners, workspace_root=options.workspace_root,
            sandbox=options.sandbox_policy, sandbox_backend=options.sandbox_backend)
        self.store = kernel.store
        self.store_url = options.store if isinstance(options.store, str) else \
            getattr(options.store, "url", None)
        for agent in agents:
            kernel.add_model(agent.name, agent.model,
                             first_output_timeout_s=agent.limits.first_output_timeout_s,
                             stream_idle_timeout_s=agent.limits.stream_idle_timeout_s)
        self.release_id = release_digest(agents, hook_list, options.programs)
        for program in options.programs:
            program.bind(self)
        self._endings = RunEndings(kernel, options.recovery)
        self._driver = RunDriver(kernel, roster, self._endings, release_id=self.release_id,
                                 workers=options.workers, tracing=self.tracing)
        self.loop = self._driver.loop
        self.catalog_version = publish(kernel, roster, self.release_id,
                                       self._driver.run_executor)
        release = {"release_id": self.release_id, "catalog_version": self.catalog_version}
        self._starts = RunStarts(kernel, roster, self._driver, options, **release)
        self._claims = RunClaims(kernel, roster, self._driver, options, **release)
        self._control = RunControl(kernel, self._driver, self._endings, options.workers)

    _digest = staticmethod(release_digest)
    """The release id of agents, hooks and programs (``agent.release.release_digest``)."""

    def _handle(self, live: LiveRun) -> RunHandle:
        return RunHandle(self, live)

    # -- runs -------------------------------------------------------------------------------
    async def start(self, task: str, *, agent: str = "main", session: str | None = None,
                    run_id: str | None = None, workdir: Path | str | None = None,
                    wait: bool = False, principal: Principal | None = None) -> RunHandle:
        """Start a run of ``agent`` on ``task`` and return its handle (the loop runs as a task).

        ``session`` continues that session (its history and persistent folder). A session has
        one active run at a time (000 §7.1): while another run of it has not ended the start
        is refused (``RunError`` ``SESSION_BUSY``, naming that run), or waits for it to end
        with ``wait``; a holder that was interrupted is refused at once even with ``wait``
        (resume or stop it). ``workdir`` (default: the runtime's) makes an existing folder the
        run's workspace: every file tool works beneath it, ``exec`` sees it at ``/work``, and
        it is never deleted. While another running run holds that folder the start is refused
        (``WorkspaceScopeError`` ``WORKSPACE_BUSY``), or waits for it with ``wait``.
        ``principal``: whom the run is done for (the host's actor and project), recorded on it."""
        return self._handle(await self._starts.start(
            task, agent=agent, session=session, run_id=run_id, workdir=workdir, wait=wait,
            principal=principal))

    async def resume(self, run_id: str, *, force: bool = False) -> RunHandle:
        """Continue a run from its last committed stage (a finished run returns its result)
        in this process (``requeue``: hand it to the workers instead).

        It takes the run's lease — a new epoch fences out any earlier holder — only when
        nothing drives the run any more (``agent.leases``: its lease expired, or its holder was
        a process of this machine that is gone). A run a live process drives is refused
        (``RunError`` ``LEASE_HELD``, naming the holder and when its lease expires) unless
        ``force``: then it is taken over, and a call the old holder has in flight may run
        twice (``in_flight`` lists them).
        """
        live = await self._claims.resume(run_id, force=force, queue=False)
        assert live is not None
        return self._handle(live)

    async def requeue(self, run_id: str, *, force: bool = False) -> None:
        """Resume a run through the queue (issue #34, 3): the same checks as ``resume``, then
        the run is ``pending`` for the workers — their concurrency and the per-agent caps
        hold — and never driven by this process. A run this process already drives, a
        finished one and a queued one are left as they are."""
        await self._claims.resume(run_id, force=force, queue=True)

    def in_flight(self, run_id: str) -> list[OperationRecord]:
        """The run's calls that started and have no outcome yet (what ``force`` may run
        twice), oldest first: their ``operation_id``, ``capability_key`` and ``phase`` say
        which and how far each got."""
        return operations(self.store, run_id, pending=True)

    async def resume_interrupted(self) -> tuple[list[RunHandle], list[tuple[str, str]]]:
        """What a worker does: resume every run of this store that is ``running`` while no
        live lease holds it (its process died), oldest first.

        Returns the handles of the runs it took, and ``(run_id, why)`` for the interrupted
        runs it left: started with another configuration (``RELEASE_CHANGED``), claimed by
        someone else meanwhile (``LEASE_HELD``), or failed lately and waiting for its
        back-off (``BACKING_OFF``, see ``agent.failures``). A run a live process drives is never taken.
        The output spools of runtimes that died are deleted first, cleanup jobs that failed
        earlier (a run-end deletion that could not finish) are tried again, and runs that
        ended with no cleanup record (the process died right after their end) are cleaned.
        """
        taken, left = await self._claims.resume_interrupted()
        return [self._handle(live) for live in taken], left

    async def run(self, task: str, **kwargs: Any) -> RunResult:
        handle = await self.start(task, **kwargs)
        return await handle.result()

    # -- the queue (agent.worker) -----------------------------------------------------------
    async def submit(self, task: str, *, agent: str = "main", priority: int = 0,
                     run_id: str | None = None, principal: Principal | None = None,
                     facts: Mapping[str, Any] | None = None) -> str:
        """Put a run of ``agent`` on ``task`` in the queue and return its id at once: status
        ``pending`` until a worker (``agent.worker.Worker``, ``agentloom worker``) claims it —
        higher ``priority`` first, then the oldest. Its deadline counts from that claim.
        ``facts``: more keys kept in the run's data (the A2A server's ``a2a``), never one of
        its own."""
        return await self._starts.submit(task, agent=agent, priority=priority, run_id=run_id,
                                         principal=principal, facts=facts)

    def claim_next(self, *, worker_cap: int) -> RunLease | None:
        """Claim the next queued run of this release this process may hold (``worker_cap``:
        the most it holds at once; the per-agent caps are ``workers.max_concurrent_runs``)."""
        return self._claims.claim_next(worker_cap=worker_cap)

    async def take(self, lease: RunLease) -> RunHandle:
        """Drive a run this process claimed from the queue (``claim_next``). Its first claim
        gives it its workspace and its deadline; a run that was queued again (an answered
        approval, a stopping worker) continues from its last committed step, its deadline
        moved on by the time it waited."""
        return self._handle(await self._claims.take(lease))

    def release_at_next_step(self, run_id: str) -> bool:
        """Give a run this process drives back to the queue at its next step boundary (after
        the current step's calls are committed); False when this process does not drive it."""
        return self._claims.release_at_next_step(run_id)

    # -- control (agent.control) --------------------------------------------------------------
    async def approve(self, run_id: str, operation_id: str, *, reason: str | None = None,
                      actor: str | None = None) -> ApprovalRecord:
        """Answer yes to the call ``operation_id`` of the waiting run ``run_id``: when it is
        issued again it runs. Once every waiting call of the run is answered, the run is
        queued again and any worker resumes it (``resume`` does at once).

        Raises:
            ApprovalError: ``APPROVAL_NOT_FOUND`` / ``APPROVAL_ALREADY_ANSWERED``.
        """
        return await self._control.answer(run_id, operation_id, approve=True, reason=reason,
                                          actor=actor)

    async def reject(self, run_id: str, operation_id: str, *, reason: str | None = None,
                     actor: str | None = None) -> ApprovalRecord:
        """Answer no: the call ends ``denied_before_execution`` with ``reason`` and the model
        is told so. See ``approve``."""
        return await self._control.answer(run_id, operation_id, approve=False, reason=reason,
                                          actor=actor)

    async def stop(self, run_id: str, reason: str = "stopped by user") -> None:
        """Stop a run: at once when this process drives it, else within one poll interval of
        the process that does. A run nobody holds any more is finished as ``cancelled``."""
        await self._control.stop(run_id, reason)

    async def delete_owner(self, owner: OwnerRef | str, *, wait_s: float = 60.0,
                           dry_run: bool = False) -> OwnerDeletion:
        """Delete an agent or workflow (``OwnerRef`` or ``"agent:main"``) and everything of it
        in this store and workspace root (000 §7.4; ``agent.owners``): new runs of it are
        refused (``OWNER_DELETED``) first, its running runs stopped (``stop``) and awaited.
        A second call is a no-op (``state == "already_deleted"``).

        Raises:
            OwnerDeletionPending: a run of it is still driven by a live process after
                ``wait_s``, or its processes cannot be confirmed gone; call again.
        """
        ref = parse_owner(owner, space_id=self.space_id) if isinstance(owner, str) else owner
        return await delete_owner(self.kernel, ref, stop=self.stop, wait_s=wait_s,
                                  dry_run=dry_run)

    async def supplement(self, run_id: str, text: str) -> None:
        """Add user input for the root's next turn."""
        await self._control.supplement(run_id, text)

    # -- reading ------------------------------------------------------------------------------
    def runs(self, limit: int = 50) -> list[dict[str, Any]]:
        return list_runs(self.store, limit)

    def events(self, run_id: str) -> list[RunEvent]:
        return run_events(self.store, run_id)

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Await ``closer`` when the runtime closes, after its runs stopped, before its store
        closes (e.g. a command bus ending the runs its executions were recorded in)."""
        self._closers.append(closer)

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """``async with Runtime(...) as runtime:`` closes it on the way out (``aclose``)."""
        await self.aclose()

    async def aclose(self) -> None:
        for live in list(self._driver.live.values()):
            if live.task is not None and not live.task.done():
                live.cancel.set("runtime closed")
                with contextlib.suppress(BaseException):
                    await live.task
        for closer in self._closers:
            try:
                await closer()
            except Exception as exc:  # the rest still closes
                log.warning("closing the runtime: %s", exc)
        await self.kernel.close_mcp_sessions()  # of runs that never ended or let go
        await self.kernel.models.aclose()
        if self.tracing is not None:
            self.tracing.shutdown()
        self.kernel.close()


def list_runs(store: Store, limit: int = 50) -> list[dict[str, Any]]:
    """Runs, newest first, as JSON-ready summaries (``status`` as stored);
    ``interrupted``: running, but nothing drives it any more."""
    return [{"run_id": r.run_id, "status": r.stored_status, "agent": r.agent, "task": r.task,
             "created_at": r.created_at, "updated_at": r.updated_at, "output": r.output,
             "interrupted": is_interrupted(r, now)}
            for now in (store.now(),) for r in runs(store, newest_first=True, limit=limit,
                                                     lenient=True)]
