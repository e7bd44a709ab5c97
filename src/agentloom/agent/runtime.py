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
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from agentloom.agent.controls import STOP, SUPPLEMENT, ControlState, record_control
from agentloom.agent.delegation import DelegationHandler, delegate_spec
from agentloom.agent.events import RunEvent, run_events
from agentloom.agent.failures import RecoveryPolicy, note_failure, retry_at
from agentloom.agent.leases import (
    WorkerSettings,
    holder_gone,
    is_interrupted,
    lease_left_s,
    rebased,
    takeover_verdict,
)
from agentloom.agent.loop import Invocation, LoopOutcome, ReactLoop, initial_messages
from agentloom.agent.owners import OwnerDeletion, delete_owner, parse_owner
from agentloom.agent.programs import ProgramRun, RunProgram
from agentloom.agent.quota import TokenQuota
from agentloom.agent.routes import ModelRoutes, route_connections
from agentloom.agent.sessions import (
    SessionError,
    SessionView,
    close_op,
    occupy,
    open_session,
    release_op,
    turn_op,
)
from agentloom.agent.spec import AgentSpec, AgentTool, Limits, tool_key
from agentloom.approvals import (
    ApprovalPending,
    ApprovalRecord,
    answer,
    requeue_if_answered,
)
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.cancel import CancelToken
from agentloom.canonical import sorted_json
from agentloom.config.diff import changed_keys
from agentloom.errors import (
    AgentLoomError,
    ConfigError,
    FencedOut,
    OperationError,
    RevisionConflict,
    StoreError,
)
from agentloom.hooks import HookLike, hook_specs
from agentloom.hooks.spec import HookSpec
from agentloom.ids import new_id
from agentloom.kernel import Kernel, RunLease
from agentloom.models.ports import Connection
from agentloom.pipeline.context import InvocationContext
from agentloom.refs import OwnerRef, Principal
from agentloom.results import TerminalRunStatus
from agentloom.sandbox import EnvironmentPolicy
from agentloom.sandbox.ports import SandboxBackend
from agentloom.store import Op, Store, WriteSet
from agentloom.store.owners import check_owner
from agentloom.store.ports import Fence
from agentloom.store.records import OperationRecord, RunRecord, get_run, operations, runs
from agentloom.telemetry import tracing
from agentloom.workspace.scope import WorkspaceScope, WorkspaceScopeError

__all__ = ["RunError", "RunHandle", "RunResult", "Runtime", "SessionBusy"]

log = logging.getLogger(__name__)
_M = TypeVar("_M", bound=BaseModel)

POLL_S = 0.2
MAX_TURN_TRIES = 20
WORKDIR_POLL_S = 0.5


RunResultStatus = TerminalRunStatus | Literal["waiting", "pending"]
"""How a run left this process: ended (a terminal status), ``waiting`` for a person's answer,
or ``pending`` — given back to the queue unfinished (its worker is stopping)."""


class _RunReleased(Exception):
    """Raised at a step boundary of a run whose worker is stopping: the run goes back to the
    queue (``pending``) for another worker, from its last committed step."""


class RunError(AgentLoomError):
    """Starting, resuming, stopping or reading a run failed: an unknown run, a run that is not
    running, a changed release, a lost lease (``LEASE_LOST``). ``code`` names which."""

    default_code = "RUN_ERROR"


class SessionBusy(RunError, SessionError):
    """A run of a session that another run occupies was not started (``SESSION_BUSY``, 000
    §7.1: one active run per session); the message names the holder and how to wait for it.
    Nothing was created. A ``RunError`` and a ``SessionError`` alike."""

    default_code = "SESSION_BUSY"


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished run. ``output`` is the final answer's text, or — for an agent with an output
    schema (``AgentSpec.output`` / ``output_type``) — its parsed JSON value (``parsed`` gives
    it as a pydantic model). ``revocation_confirmed`` is false when the sandbox could not
    confirm that every command of the run is gone (they may still be running); it is not part
    of ``to_dict``."""

    run_id: str
    status: RunResultStatus
    output: Any = None
    error: OperationError | None = None
    steps: int = 0
    revocation_confirmed: bool = True
    workspace: str | None = None
    """The host folder the run's files stay in after it (a bound ``workdir``, a session's
    folder, or a kept one); ``None`` when its folder was removed at its end."""
    waiting: tuple[dict[str, Any], ...] = ()
    """A ``waiting`` run's calls that wait for a person: ``operation_id``, ``capability``,
    ``question``, ``deadline`` (answer with ``Runtime.approve`` / ``reject``)."""

    def to_dict(self) -> dict[str, Any]:
        out = {"run_id": self.run_id, "status": self.status, "output": self.output,
               "error": self.error.to_dict() if self.error else None, "steps": self.steps,
               "workspace": self.workspace}
        if self.waiting:
            out["waiting"] = [dict(w) for w in self.waiting]
        return out

    def parsed(self, output_type: type[_M]) -> _M:
        """The structured output as an instance of ``output_type`` (a pydantic model; usually
        the agent's ``output_type``).

        Raises:
            RunError: the run has no output (``RUN_NO_OUTPUT``: it did not succeed).
            pydantic.ValidationError: the output does not fit ``output_type``.
        """
        if self.status != "succeeded":
            raise RunError(f"run {self.run_id} {self.status} and has no output",
                           code="RUN_NO_OUTPUT")
        return output_type.model_validate(self.output)


@dataclass(slots=True)
class _Live:
    """One run this process is driving."""

    lease: RunLease
    data: dict[str, Any]
    cancel: CancelToken
    controls: ControlState
    subscribers: list[asyncio.Queue[RunEvent | None]] = field(default_factory=list)
    task: asyncio.Task[RunResult] | None = None
    quota: TokenQuota | None = None  # the run tree's (the root agent's limit)
    draining: bool = False  # give the run back to the queue at its next step boundary

    def emit(self, event: RunEvent) -> None:
        for queue in self.subscribers:
            queue.put_nowait(event)


class RunHandle:
    """A run being driven by this process."""

    def __init__(self, runtime: Runtime, live: _Live) -> None:
        self._runtime = runtime
        self._live = live
        self.run_id = live.lease.run_id

    async def result(self) -> RunResult:
        assert self._live.task is not None
        return await asyncio.shield(self._live.task)

    async def stop(self, reason: str = "stopped by user") -> None:
        await self._runtime.stop(self.run_id, reason)

    async def supplement(self, text: str) -> None:
        await self._runtime.supplement(self.run_id, text)

    def events(self) -> AsyncIterator[RunEvent]:
        """Live events from this call on until the run ends (nothing for a run that already
        ended). The subscription starts when ``events()`` is called, not at the first
        iteration: ``events = handle.events()`` right after ``start`` misses nothing, even when
        the iteration runs in another task."""
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        self._live.subscribers.append(queue)
        return self._follow(queue)

    async def _follow(self, queue: asyncio.Queue[RunEvent | None]) -> AsyncIterator[RunEvent]:
        task = self._live.task
        assert task is not None
        try:
            while True:
                if queue.empty() and task.done():
                    return
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    continue
                event = getter.result()
                if event is None:
                    return
                yield event
        finally:
            self._live.subscribers.remove(queue)


def _model_identity(model: object) -> str:
    if isinstance(model, Connection):
        return f"connection:{model.base_url}:{model.model}"
    return f"{type(model).__module__}.{type(model).__qualname__}:{getattr(model, 'model', '')}"


def _model_settings(agent: AgentSpec) -> dict[str, Any]:
    """The agent's think / output-limit settings for the release id (absent when unset, so
    a release without them keeps its id)."""
    settings: dict[str, Any] = {}
    if agent.think is not None:
        settings["think"] = {"enabled": agent.think.enabled, "effort": agent.think.effort}
    if agent.max_output_tokens is not None:
        settings["max_output_tokens"] = agent.max_output_tokens
    return settings


class Runtime:
    """Agents, a store and a workspace root; the Python API of AgentLoom."""

    def __init__(
        self,
        agents: Sequence[AgentSpec],
        *,
        store: Store | str = "sqlite:///.agentloom/agentloom.db",
        hooks: Sequence[HookLike] = (),
        hook_functions: Mapping[str, Callable[..., Any]] | None = None,
        workspace_root: Path | str | None = None,
        sandbox_backend: SandboxBackend = "auto",
        sandbox_policy: EnvironmentPolicy | None = None,
        space_id: str = "default",
        recovery: RecoveryPolicy | None = None,
        config_source: Mapping[str, Any] | None = None,
        workdir: Path | str | None = None,
        keep_workspaces: bool = False,
        workers: WorkerSettings | None = None,
        tracer_provider: Any = None,
        telemetry: bool | None = None,
        model_routes: ModelRoutes | None = None,
        programs: Sequence[RunProgram] = (),
    ) -> None:
        """``hooks`` run in the order given: ``HookSpec``s (their ``handler.ref`` functions
        imported, or found in ``hook_functions``), functions decorated with
        ``@agentloom.hook``, or plain callables (a ``before`` hook on every tool call).
        ``sandbox_backend`` picks the sandbox ``exec`` runs in (``auto``: bubblewrap, else
        Landlock, else ``exec`` fails with ``SANDBOX_UNAVAILABLE``; ``none``: unconfined) and
        is recorded on every run; ``sandbox_policy`` is what commands may see and use
        (default ``EnvironmentPolicy()``: empty environment, no network, no shell).
        ``recovery`` bounds how often a run the runtime keeps failing on is tried again
        (``agent.failures``; default: ended ``failed`` after 3 identical failures).
        ``config_source`` (``Config.source()``: path, digest, snapshot) is recorded on every
        run it starts, so the run can be resumed from its file by id. ``workdir``: the
        folder every run works in by default (see ``start``); ``keep_workspaces``: a run's own
        folder is kept after it ends (its path is ``RunResult.workspace``). ``workers``: the
        lease TTL, takeover grace and per-agent caps of the run queue (``agent.worker``).
        ``tracer_provider`` (an OpenTelemetry SDK provider) traces every run with it;
        without one, ``telemetry`` (``telemetry.enabled``; ``None``: on when
        ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set) turns tracing on (``agentloom.telemetry``).
        ``model_routes``: where the runs of a principal's project send their model calls
        (``agent.routes``; 003 F13) — a run records its route when it is queued or started.
        ``programs``: runs that are not one agent's loop — workflows (``agentloom.squad``,
        issue 20), started with ``start(task, agent=program.name)``
        (``agent.programs``)."""
        if not agents:
            raise ConfigError("a runtime needs at least one agent")
        self.agents = {a.name: a for a in agents}
        if len(self.agents) != len(agents):
            raise ConfigError("two agents have the same name")
        for agent in agents:
            for executor in agent.executors:
                if executor not in self.agents:
                    raise ConfigError(f"agent {agent.name!r} delegates to {executor!r}, which "
                                      f"is not defined; agents: {sorted(self.agents)}")
            agent.check_model()  # what its model cannot serve is refused now (000 §4.6)
        self.programs = {p.name: p for p in programs}
        if len(self.programs) != len(programs) or set(self.programs) & set(self.agents):
            raise ConfigError("two agents or workflows have the same name")
        self.space_id = space_id
        self.recovery = recovery or RecoveryPolicy()
        self.config_source = dict(config_source) if config_source else None
        self.workdir = workdir
        self.keep_workspaces = keep_workspaces
        self.workers = workers or WorkerSettings()
        self.model_routes = model_routes
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self.tracing = tracing(tracer_provider=tracer_provider, enabled=telemetry,
                               models={a.name: a.model for a in agents})
        hook_list, functions = hook_specs(hooks, hook_functions)
        self.kernel = Kernel(store, hooks=hook_list, hook_functions=functions,
                             workspace_root=workspace_root, sandbox=sandbox_policy,
                             sandbox_backend=sandbox_backend)
        self.store = self.kernel.store
        self.store_url = store if isinstance(store, str) else getattr(store, "url", None)
        for agent in agents:
            self.kernel.add_model(agent.name, agent.model,
                                  first_output_timeout_s=agent.limits.first_output_timeout_s,
                                  stream_idle_timeout_s=agent.limits.stream_idle_timeout_s)
        self.release_id = self._digest(agents, hook_list, programs)
        tools: list[Any] = []
        names: set[str] = set()
        for program in programs:
            program.bind(self)
        owned: list[tuple[str, Sequence[AgentTool]]] = [
            *((a.name, a.tools) for a in agents), *((p.name, p.tools()) for p in programs)]
        for _, own in owned:
            for tool in own:
                key = tool_key(tool)
                if key not in names:
                    names.add(key)
                    tools.append(tool)
        for agent in agents:
            for executor in agent.executors:
                spec = delegate_spec(executor, self.agents[executor].description,
                                     self.release_id)
                if spec.capability_key not in names:
                    names.add(spec.capability_key)
                    tools.append((spec, DelegationHandler(executor, self._run_executor)))
        # the compiled catalog (tool schemas, descriptions) is part of what a run started with
        self.catalog_version = self.kernel.publish(
            self.release_id, tools, roles={
                **{a.name: a.tool_keys() for a in agents},
                **{p.name: [tool_key(t) for t in p.tools()] for p in programs}})
        self.loop = ReactLoop(self.kernel.bus, self.kernel.models, supplements=self._supplements,
                              edits=self.kernel.message_edits)
        self._live: dict[str, _Live] = {}
        self.kernel.bus.subscribe(self._on_notice)
        self.kernel.bus.pipeline.tracer = self.tracing

    def _on_notice(self, kind: str, payload: dict[str, Any]) -> None:
        """Pass a hook's warning on to the run's live subscribers (the CLI prints it)."""
        if kind != "hook.warning":
            return
        live = self._live.get(str(payload.get("run_id")))
        if live is not None:
            live.emit(RunEvent("hook.warning", live.lease.run_id, time.time(), payload))

    @staticmethod
    def _digest(agents: Sequence[AgentSpec], hooks: Sequence[HookSpec],
                programs: Sequence[RunProgram] = ()) -> str:
        """The release id: a digest of the agents (their retry policy and limits included, so a
        resumed run keeps the ones it started with) and the compiled hook specs (a callable
        hook by its ``module:qualname`` ref), so the same code always gives the same id."""
        described = [{
            "name": a.name, "model": _model_identity(a.model), "instructions": a.instructions,
            "description": a.description,
            "tools": a.tool_keys(), "executors": list(a.executors),
            **({"output": a.output.to_dict()} if a.output else {}),
            # skill name -> bound version digest (agent/configured.py): a new version, a new id
            **({"skills": dict(a.extras["skills"])} if a.extras.get("skills") else {}),
            **_model_settings(a), **a.policy_settings(),
        } for a in agents]
        raw = sorted_json({"agents": described, "hooks": [h.to_dict() for h in hooks],
                           **({"programs": {p.name: p.digest for p in programs}}
                              if programs else {})})
        return "rel-" + hashlib.sha256(raw.encode()).hexdigest()[:16]

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
        limits = self._limits(agent)
        owner = self._owner_of(agent)
        if session is not None and agent in self.programs:
            raise RunError(f"{agent} runs without a session (a workflow has no AgentSession); "
                           "leave out the session", code="SESSION_NOT_ALLOWED")
        if session is not None:  # before its session is taken (start_run checks it otherwise)
            check_owner(self.store, owner)  # OWNER_DELETED
        run_id = run_id or new_id()
        folder = workdir if workdir is not None else self.workdir
        if folder is not None and any("exec" in a.tool_keys() for a in self.agents.values()):
            # a folder its commands could not work in is refused before anything starts
            await self.kernel.environment.check_workdir(Path(folder))
        while True:
            view = await self._occupy(session, owner, run_id, task, wait) if session else None
            data = {"agent": agent, "task": task, "release_id": self.release_id,
                    "catalog_version": self.catalog_version,
                    "deadline": time.time() + limits.run_deadline_s, "session_id": session,
                    "clock_offset_s": self.store.clock_offset_s(),
                    "session_seen": view.seen if view else None,
                    "sandbox_backend": self.kernel.environment.sandbox_backend}
            if view is not None:
                data["session_slot"] = view.seen
            if agent in self.programs:
                data["workflow"] = self.programs[agent].describe()
            if self.config_source is not None:
                data["config"] = self.config_source
            self._take_route(data, principal)
            try:
                lease = await self.kernel.start_run(
                    run_id=run_id, data=data, owner=owner, session_id=session,
                    lease_ttl_s=self.workers.lease_ttl_s, keep_workspace=self.keep_workspaces,
                    principal=principal,
                    workdir=Path(folder) if folder is not None else None)
                break
            except BaseException as exc:
                if view is not None:  # the run was not created: give the session back
                    await self._release_slot(view, run_id, task)
                if not (isinstance(exc, WorkspaceScopeError) and exc.code == "WORKSPACE_BUSY"
                        and wait):
                    raise
                await asyncio.sleep(WORKDIR_POLL_S)
        data["owner"] = owner.to_dict()
        return self._drive(lease, data, view.history if view else ())

    async def _occupy(self, session: str, owner: OwnerRef, run_id: str, task: str,
                      wait: bool) -> SessionView:
        """Take ``session`` for the run (``agent.sessions.occupy``); while another run holds
        it, wait (``wait``, a holder that is driven) or refuse with ``SESSION_BUSY``."""
        while True:
            taken = await occupy(self.store, self.kernel.coordinator.commit, session, owner,
                                 run_id=run_id, task=task, worker=self.kernel.worker_id)
            if isinstance(taken, SessionView):
                return taken
            if not wait or taken.state == "interrupted":
                raise SessionBusy(taken.refusal())
            await asyncio.sleep(WORKDIR_POLL_S)

    async def _release_slot(self, view: SessionView, run_id: str, task: str) -> None:
        """Give the session back after a start that created no run. A run that was created
        (its workspace then failed) keeps the slot: it holds the session until it ends."""
        if self.store.get("runs", {"run_id": run_id}) is not None:
            return
        try:
            await self.kernel.coordinator.commit(WriteSet((release_op(
                view.session_id, view.seen, run_id=run_id, task=task),)))
        except Exception as exc:  # the slot frees itself: its run does not exist
            log.warning("run %s was not started and could not give session %s back: %s",
                        run_id, view.session_id, exc)

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
        handle = await self._resume(run_id, force=force, queue=False)
        assert handle is not None
        return handle

    async def requeue(self, run_id: str, *, force: bool = False) -> None:
        """Resume a run through the queue (issue #34, 3): the same checks as ``resume``, then
        the run is ``pending`` for the workers — their concurrency and the per-agent caps
        hold — and never driven by this process. A run this process already drives, a
        finished one and a queued one are left as they are."""
        await self._resume(run_id, force=force, queue=True)

    async def _resume(self, run_id: str, *, force: bool, queue: bool) -> RunHandle | None:
        run = get_run(self.store, run_id)
        if run is None:
            raise RunError(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
        live = self._live.get(run_id)
        if live is not None:
            return RunHandle(self, live)
        if run.ended is not None:
            return RunHandle(self, self._finished(run, run.ended))
        if (run.release_id, run.catalog_version) != (self.release_id, self.catalog_version):
            raise RunError(self._release_changed(run), code="RELEASE_CHANGED")
        gone = holder_gone(run.lease_owner)
        left = lease_left_s(run, self.store.now())
        if not force and left > 0 and not gone:
            raise RunError(
                f"run {run_id} is driven by a live process ({run.lease_owner}; its lease "
                f"expires in {left:.0f}s and is renewed while it runs), so it was not taken. "
                f"Wait for it to end, stop it (agentloom runs stop {run_id}), or take it over "
                "with --force (a call it has in flight may then run twice)", code="LEASE_HELD")
        if run.agent is None:
            raise RunError(f"run {run_id} records no agent, so no agent can resume it",
                           code="RUN_NOT_RESUMABLE")
        if run.status == "waiting":
            raise RunError(waiting_refusal(run), code="RUN_WAITING")
        if run.status == "pending":  # queued: take it now, as a worker would
            return None if queue else await self.take(self._claim(run, only_if_expired=not force))
        if run.status == "suspended" and not force and \
                takeover_verdict(self.store, run, self.workers.takeover_grace_s)[0] != "take":
            raise RunError(suspended_refusal(run), code="RUN_SUSPENDED")
        if run.status == "running" and not force:
            verdict, why = takeover_verdict(self.store, run, self.workers.takeover_grace_s)
            if verdict == "wait":
                raise RunError(f"run {run_id} was not taken over yet: {why}. Try again then, or "
                               "take it over with --force (a call it has in flight may then run "
                               "twice)", code="TAKEOVER_WAITING")
            if verdict == "suspend":
                await self._suspend(run, why)
                raise RunError(suspended_refusal(get_run(self.store, run_id) or run),
                               code="RUN_SUSPENDED")
        owner = self._owner_of(run.agent)
        view = None
        if run.session_id:
            view = open_session(self.store, run.session_id, owner, seen=run.session_seen)
        lease = self._claim(run, only_if_expired=not (force or gone))
        if queue:  # the new epoch fences out any old holder; the workers take it from here
            await self.kernel.park_run(lease, "pending", data=dict(run.data))
            return None
        if "deadline" not in run.data:  # claimed from the queue, its holder died before it began
            return await self.take(lease)
        if run.status == "suspended":  # this process goes on with it
            try:
                await self.kernel.update_run(lease, {"status": "running"})
            except FencedOut as exc:  # claimed again meanwhile: it is theirs
                raise RunError(f"run {run_id} was taken by another process meanwhile: {exc}",
                               code="LEASE_HELD") from exc
        return self._drive(lease, rebased(run.data, self.store.clock_offset_s()),
                           view.history if view else ())

    def _claim(self, run: RunRecord, *, only_if_expired: bool) -> RunLease:
        """Take ``run``'s lease — only while its epoch is still the one just judged (a
        compare-and-set: two workers that judged the same holder gone never both take it)."""
        try:
            return self.kernel.claim(run.run_id, lease_ttl_s=self.workers.lease_ttl_s,
                                     only_if_expired=only_if_expired,
                                     expect_epoch=run.lease_epoch)
        except StoreError as exc:
            if exc.code != "LEASE_HELD":
                raise
            raise RunError(f"run {run.run_id} was taken by another process meanwhile (its "
                           f"lease epoch is no longer {run.lease_epoch}), so it was not taken",
                           code="LEASE_HELD") from exc

    async def _suspend(self, run: RunRecord, why: str) -> None:
        """Report an interrupted run ``suspended``: its takeover could not confirm the old
        holder's processes gone. Fenced by the holder's epoch (a claim meanwhile wins); the
        holder, if it lives on, marks it ``running`` again with its next lease renewal."""
        facts = {"reason": why, "at": time.time(), "holder": run.lease_owner,
                 "lease_epoch": run.lease_epoch}
        try:
            await self.kernel.suspend_run(RunLease(run.run_id, run.lease_epoch),
                                          data={**run.data, "suspended": facts})
        except FencedOut:
            pass  # claimed meanwhile: it is someone's run again

    def in_flight(self, run_id: str) -> list[OperationRecord]:
        """The run's calls that started and have no outcome yet (what ``force`` may run
        twice), oldest first: their ``operation_id``, ``capability_key`` and ``phase`` say
        which and how far each got."""
        return operations(self.store, run_id, pending=True)

    def _release_changed(self, run: RunRecord) -> str:
        run_id = run.run_id
        started = run.config_snapshot
        now = (self.config_source or {}).get("snapshot")
        changed = ""
        if started is not None and now is not None:
            keys = changed_keys(started, now)
            shown = ", ".join(keys[:12]) + (f" and {len(keys) - 12} more" if len(keys) > 12 else "")
            changed = (f"; changed since it started: {shown}" if keys else
                       "; the config file's values are the same, so code it imports changed "
                       "(a tool or a hook)")
        return (f"run {run_id} was started with release {run.release_id} and this "
                f"configuration is release {self.release_id}{changed}; resume it with the "
                "configuration it started with")

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
        taken: list[RunHandle] = []
        left: list[tuple[str, str]] = []
        self.kernel.environment.reclaim_spools()  # output left by runtimes that died
        await self.kernel.environment.cleanup.retry_pending()  # cleanups that failed earlier
        await self.kernel.environment.cleanup.sweep_ended(  # runs that ended, never cleaned
            grace_s=self.workers.lease_ttl_s)
        now = self.store.now()  # leases are judged in the store's time, whatever ours says
        # a suspended run whose old holder is confirmed gone by now (it died, or recorded its
        # receipt) is taken over like an interrupted one; the others wait for --force
        suspended = [r for r in runs(self.store, status="suspended")
                     if takeover_verdict(self.store, r, self.workers.takeover_grace_s,
                                         now)[0] == "take"]
        for run in [*runs(self.store, status="running"), *suspended]:
            run_id = run.run_id
            if run_id in self._live or (run.running and not is_interrupted(run, now)):
                continue
            if retry_at(run) > now:  # it failed lately: its back-off is not over
                left.append((run_id, "BACKING_OFF"))
                continue
            try:
                taken.append(await self.resume(run_id))
            except FencedOut:  # another worker took it between our claim and our first commit
                left.append((run_id, "LEASE_HELD"))
            except (RunError, StoreError) as exc:
                if exc.code not in ("RELEASE_CHANGED", "LEASE_HELD", "TAKEOVER_WAITING",
                                    "RUN_SUSPENDED"):
                    raise
                left.append((run_id, exc.code))
        return taken, left

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
        self._limits(agent)
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise RunError(f"priority must be a whole number, got {priority!r}",
                           code="INVALID_PRIORITY")
        data: dict[str, Any] = {
            **(facts or {}), "agent": agent, "task": task, "release_id": self.release_id,
            "catalog_version": self.catalog_version, "session_id": None,
            "submitted_at": time.time()}
        if agent in self.programs:
            data["workflow"] = self.programs[agent].describe()
        if self.config_source is not None:
            data["config"] = self.config_source
        self._take_route(data, principal)
        owner = self._owner_of(agent)
        return await self.kernel.submit_run(run_id=run_id, data=data, owner=owner,
                                            priority=priority, principal=principal)

    def _take_route(self, data: dict[str, Any], principal: Principal | None) -> None:
        """Record the model route of the principal's project in a new run's ``data`` (none:
        the release's connections) — the one snapshot the run uses to its end (F13)."""
        if self.model_routes is None or principal is None:
            return
        route = self.model_routes.snapshot(principal.project)
        if route is not None:
            data["route"] = route

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
            if agent in self.agents:
                replace(self.agents[agent], model=connection).check_model()
        self.kernel.model_manager.route(run_id, connections)
        if self.tracing is not None:
            self.tracing.route(run_id, connections)

    def claim_next(self, *, worker_cap: int) -> RunLease | None:
        """Claim the next queued run of this release this process may hold (``worker_cap``:
        the most it holds at once; the per-agent caps are ``workers.max_concurrent_runs``)."""
        return self.kernel.claim_next(
            agents=[*self.agents, *self.programs], release_id=self.release_id,
            worker_cap=worker_cap,
            agent_caps=self.workers.max_concurrent_runs, lease_ttl_s=self.workers.lease_ttl_s)

    async def take(self, lease: RunLease) -> RunHandle:
        """Drive a run this process claimed from the queue (``claim_next``). Its first claim
        gives it its workspace and its deadline; a run that was queued again (an answered
        approval, a stopping worker) continues from its last committed step, its deadline
        moved on by the time it waited."""
        run = get_run(self.store, lease.run_id)
        if run is None:
            raise RunError(f"no run {lease.run_id!r} in this store", code="RUN_NOT_FOUND")
        data = rebased(run.data, self.store.clock_offset_s())  # its times in our clock
        now = time.time()
        owner = OwnerRef(**data["owner"]) if "owner" in data else \
            self._owner_of(str(data.get("agent")))
        if "deadline" not in data:  # its first claim (or one whose holder died before it began)
            limits = self._limits(str(data.get("agent")))
            folder = self.workdir
            if lease.workspace_scope_id is None:
                lease = await self.kernel.open_run_workspace(
                    lease, owner=owner, keep=self.keep_workspaces,
                    workdir=Path(folder) if folder is not None else None)
            data.update(deadline=now + limits.run_deadline_s, started_at=now)
        waited = data.pop("waiting", None)
        if isinstance(waited, dict) and isinstance(waited.get("since"), int | float):
            data["deadline"] = float(data["deadline"]) + max(0.0, now - waited["since"])
        await self.kernel.update_run(lease, {"data": data, "status": "running"})
        return self._drive(lease, data, ())

    def release_at_next_step(self, run_id: str) -> bool:
        """Give a run this process drives back to the queue at its next step boundary (after
        the current step's calls are committed); False when this process does not drive it."""
        live = self._live.get(run_id)
        if live is None:
            return False
        live.draining = True
        return True

    async def _wait_for_answer(self, live: _Live, pending: ApprovalPending) -> RunResult:
        """A call asked a person (a hook answered ``ask``): the run waits — nobody holds it —
        until every such call is answered, then it is queued again (``approvals``)."""
        run_id = live.lease.run_id
        calls = tuple({"operation_id": c.operation_id, "capability": c.capability_key,
                       "question": c.question, "deadline": c.deadline} for c in pending.calls)
        waiting = {"since": time.time(), "question": pending.question,
                   "operation_ids": [c["operation_id"] for c in calls], "calls": list(calls)}
        parked = await self._park(live, "waiting", {"waiting": waiting})
        # an answer given before the run was ``waiting`` found it running: queue it now
        if await requeue_if_answered(self.store, self.kernel.coordinator.commit, run_id):
            return replace(parked, status="pending")
        return replace(parked, waiting=calls)

    async def approve(self, run_id: str, operation_id: str, *, reason: str | None = None,
                      actor: str | None = None) -> ApprovalRecord:
        """Answer yes to the call ``operation_id`` of the waiting run ``run_id``: when it is
        issued again it runs. Once every waiting call of the run is answered, the run is
        queued again and any worker resumes it (``resume`` does at once).

        Raises:
            ApprovalError: ``APPROVAL_NOT_FOUND`` / ``APPROVAL_ALREADY_ANSWERED``.
        """
        return await answer(self.store, self.kernel.coordinator.commit, run_id=run_id,
                            operation_id=operation_id, approve=True, reason=reason, actor=actor)

    async def reject(self, run_id: str, operation_id: str, *, reason: str | None = None,
                     actor: str | None = None) -> ApprovalRecord:
        """Answer no: the call ends ``denied_before_execution`` with ``reason`` and the model
        is told so. See ``approve``."""
        return await answer(self.store, self.kernel.coordinator.commit, run_id=run_id,
                            operation_id=operation_id, approve=False, reason=reason,
                            actor=actor)

    async def _park(self, live: _Live, status: Literal["waiting", "pending"],
                    facts: Mapping[str, Any] | None = None) -> RunResult:
        """Let a run go without ending it: ``waiting`` for a person, or ``pending`` again in
        the queue. Nobody holds it after this; its workspace stays."""
        data = {**live.data, **(facts or {})}
        await self.kernel.park_run(live.lease, status, data=data)
        return RunResult(live.lease.run_id, status, None, None,
                         workspace=self._kept_folder(
                             self.kernel.environment.scopes.scopes_for_run(live.lease.run_id)))

    async def stop(self, run_id: str, reason: str = "stopped by user") -> None:
        """Stop a run: at once when this process drives it, else within one poll interval of
        the process that does. A run nobody holds any more is finished as ``cancelled``."""
        run = get_run(self.store, run_id)
        if run is None:
            raise RunError(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
        if run.ended is not None:
            return
        live = self._live.get(run_id)
        if live is not None:
            live.cancel.set(reason)
        await record_control(self.kernel.coordinator, run_id, STOP, {"reason": reason})
        parked = run.status in ("pending", "waiting", "suspended")
        if live is None and (parked or is_interrupted(run, self.store.now())):
            try:  # a worker that claims it first sees the control and stops it itself
                lease = self.kernel.claim(run_id, lease_ttl_s=self.workers.lease_ttl_s,
                                          only_if_expired=parked)
            except StoreError as exc:
                if exc.code == "LEASE_HELD":
                    return
                raise
            await self._finish(lease, dict(run.data), LoopOutcome(
                "cancelled", None, OperationError(code="RUN_STOPPED", category="cancelled",
                                                  message=reason)))

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
        run = get_run(self.store, run_id)
        if run is None or run.ended is not None:
            raise RunError(f"run {run_id!r} is not running", code="RUN_NOT_RUNNING")
        await record_control(self.kernel.coordinator, run_id, SUPPLEMENT,
                             {"text": text, "consumed_turn": None})
        live = self._live.get(run_id)
        if live is not None:
            live.controls.poll(self.store)

    # -- reading ------------------------------------------------------------------------------
    def runs(self, limit: int = 50) -> list[dict[str, Any]]:
        return list_runs(self.store, limit)

    def events(self, run_id: str) -> list[RunEvent]:
        return run_events(self.store, run_id)

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Await ``closer`` when the runtime closes, after its runs stopped, before its store
        closes (e.g. a command bus ending the runs its executions were recorded in)."""
        self._closers.append(closer)

    async def aclose(self) -> None:
        for live in list(self._live.values()):
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

    # -- driving ------------------------------------------------------------------------------
    def _agent(self, name: str) -> AgentSpec:
        try:
            return self.agents[name]
        except KeyError:
            raise ConfigError(f"no agent named {name!r}; agents: {sorted(self.agents)}") from None

    def _limits(self, name: str) -> Limits:
        """The limits of the agent or program (a workflow) ``name``."""
        program = self.programs.get(name)
        if program is not None:
            return program.limits
        if name not in self.agents and name.startswith("workflow:"):
            raise ConfigError(f"no workflow named {name.removeprefix('workflow:')!r}; "
                              f"workflows: {sorted(p.owner.id for p in self.programs.values())}")
        return self._agent(name).limits

    def _owner_of(self, name: str) -> OwnerRef:
        """Whose capability use a run of the agent or program ``name`` is."""
        program = self.programs.get(name)
        if program is not None:
            return replace(program.owner, space_id=self.space_id)
        return OwnerRef(kind="agent", id=name, space_id=self.space_id)

    def _context(self, live: _Live, role: str, invocation_id: str, *,
                 owner: OwnerRef | None = None,
                 workspace_scope_id: str | None = None) -> InvocationContext:
        program = self.programs.get(role)
        retry, limits = (program.retry, program.limits) if program is not None else \
            (self._agent(role).retry, self._agent(role).limits)
        if owner is None:
            owner = OwnerRef(**live.data["owner"]) if "owner" in live.data else \
                self._owner_of(live.data["agent"])
        ctx = self.kernel.invocation_context(
            live.lease, release_id=self.release_id, role=role, owner=owner,
            deadline=live.data["deadline"], retry=retry, cancel=live.cancel,
            invocation_id=invocation_id, approval_timeout_s=limits.approval_timeout_s,
            approval_default=limits.approval_default)
        if workspace_scope_id is not None:
            ctx = replace(ctx, workspace_scope_id=workspace_scope_id)
        return ctx

    def _drive(self, lease: RunLease, data: dict[str, Any], history: Sequence[Any]) -> RunHandle:
        live = _Live(lease, data, CancelToken(), ControlState(lease.run_id))
        live.controls.poll(self.store)
        if live.controls.stop_reason:
            live.cancel.set(live.controls.stop_reason)
        self._live[lease.run_id] = live
        main = self._main(live, history)
        live.task = asyncio.ensure_future(main if self.tracing is None else self.tracing.run(
            lease.run_id, agent=data["agent"], session_id=data.get("session_id"), work=main,
            first=data.get("trace")))
        return RunHandle(self, live)

    async def _main(self, live: _Live, history: Sequence[Any]) -> RunResult:
        run_id = live.lease.run_id
        watcher = asyncio.ensure_future(self._watch(live))
        try:
            program = self.programs.get(live.data["agent"])
            if program is not None:
                return await self._main_program(live, program, watcher)
            agent = self._agent(live.data["agent"])
            self._route(run_id, live.data.get("route"))
            if self.tracing is not None and "trace" not in live.data:
                ids = self.tracing.current_ids()  # recorded with the run: a resume links to it
                if ids is not None:
                    live.data["trace"] = ids
            live.emit(RunEvent("run.started", run_id, time.time(),
                               {"agent": agent.name, "task": live.data["task"]}))
            limit = agent.limits.max_total_tokens
            live.quota = TokenQuota.of_run(self.store, run_id, limit) if limit else None
            inv = Invocation(invocation_id=run_id, agent=agent,
                             ctx=self._context(live, agent.name, run_id),
                             messages=initial_messages(agent, live.data["task"], history),
                             quota=live.quota)
            outcome = await self._invoke(inv, live)
            watcher.cancel()  # no renewal (which marks the run running) after its end commits
            result = await self._finish(live.lease, live.data, outcome)
            live.emit(RunEvent("run.finished", run_id, time.time(), result.to_dict()))
            return result
        except _RunReleased:
            watcher.cancel()
            return await self._park(live, "pending")
        except ApprovalPending as exc:
            watcher.cancel()
            return await self._wait_for_answer(live, exc)
        except FencedOut as exc:
            raise RunError(f"run {run_id} was taken over by another worker: {exc}",
                           code="LEASE_LOST") from exc
        except Exception as exc:
            fenced = _fenced_out(exc)
            if fenced is not None:  # e.g. inside a batch: another process took the run over
                raise RunError(f"run {run_id} was taken over by another process: {fenced}",
                               code="LEASE_LOST") from exc
            watcher.cancel()  # no lease renewal after the failure lets the lease go
            return await self._failed(live, exc)
        finally:
            watcher.cancel()
            for queue in live.subscribers:
                queue.put_nowait(None)
            self._live.pop(run_id, None)
            await self.kernel.model_manager.unroute(run_id)
            if self.tracing is not None:
                self.tracing.unroute(run_id)

    async def _main_program(self, live: _Live, program: RunProgram,
                            watcher: asyncio.Future[None]) -> RunResult:
        """The body of a run of a program (a workflow): its outcome, committed as an agent
        run's is. Failures, approvals and releases are handled by ``_main`` around it."""
        run_id = live.lease.run_id
        live.emit(RunEvent("run.started", run_id, time.time(),
                           {"agent": program.name, "task": live.data["task"]}))
        limit = program.limits.max_total_tokens  # the whole run's quota: every agent node's
        live.quota = TokenQuota.of_run(self.store, run_id, limit) if limit else None

        def context(role: str, invocation_id: str, *, owner: OwnerRef | None = None,
                    workspace_scope_id: str | None = None) -> InvocationContext:
            return self._context(live, role, invocation_id, owner=owner,
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
        result = await self._finish(live.lease, live.data, outcome)
        live.emit(RunEvent("run.finished", run_id, time.time(), result.to_dict()))
        return result

    async def _finish(self, lease: RunLease, data: dict[str, Any],
                      outcome: LoopOutcome) -> RunResult:
        """Commit the terminal state (and the session turn), then clean the workspace; only
        then is the answer delivered."""
        scopes = self.kernel.environment.scopes.scopes_for_run(lease.run_id)
        data = {**data, "output": outcome.answer, "steps": outcome.steps,
                "error": outcome.error.to_dict() if outcome.error else None,
                "workspace": self._kept_folder(scopes)}
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
        for _ in range(MAX_TURN_TRIES):
            turn: tuple[Op, ...] = ()
            if session:
                last = self.store.query("session_turns", {"session_id": session},
                                        order_by=("seq",), descending=True, limit=1)
                seq = last[0]["seq"] + 1 if last else 0
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

    def _kept_folder(self, scopes: list[WorkspaceScope]) -> str | None:
        """The folder of the run that its end keeps (of its ``scopes``: a persistent one)."""
        kept = [s for s in scopes if s.persistent and s.state != "deleted"]
        return str(self.kernel.environment.scopes.path(kept[0]).absolute()) if kept else None

    async def _failed(self, live: _Live, exc: Exception) -> RunResult:
        """The runtime failed while driving the run (not the model, a tool or a hook: those
        end in results). Count it on the run; after ``recovery.max_failures`` identical
        failures end the run ``failed``, else let its lease go for a worker to try again
        after the back-off, and raise ``RUN_CRASHED``."""
        run_id = live.lease.run_id
        log.debug("run %s: the runtime failed while driving it", run_id, exc_info=exc)
        run = get_run(self.store, run_id)
        data, error = note_failure(dict(run.data if run else live.data), exc, self.recovery)
        failures = data["failures"]
        if error is not None:
            try:
                result = await self._finish(live.lease, data, LoopOutcome("failed", None, error))
            except Exception as finish_exc:
                self._not_recorded(run_id, "could not end it failed", finish_exc)
            else:
                live.emit(RunEvent("run.finished", run_id, time.time(), result.to_dict()))
                return result
        else:
            try:
                await self.kernel.release_run(live.lease, data=data)
            except Exception as record_exc:
                self._not_recorded(run_id, "could not record the failure", record_exc)
        last = failures["last"]
        raise RunError(
            f"the runtime failed while driving run {run_id} ({failures['count']} of "
            f"{self.recovery.max_failures} times this way): {last['code']}: {last['message']}; "
            "the run stays interrupted: `agentloom worker CONFIG` tries it again after "
            f"{self.recovery.backoff(failures['total']):g}s, or `agentloom runs resume "
            f"{run_id}` at once", code="RUN_CRASHED") from exc

    @staticmethod
    def _not_recorded(run_id: str, what: str, exc: Exception) -> None:
        if isinstance(exc, FencedOut):
            raise RunError(f"run {run_id} was taken over by another process: {exc}",
                           code="LEASE_LOST") from exc
        log.warning("run %s: %s: %s", run_id, what, exc)
        log.debug("run %s: %s", run_id, what, exc_info=exc)

    def _finished(self, run: RunRecord, status: TerminalRunStatus) -> _Live:
        """A handle's state for a run that ended ``status``: its result, from the record."""
        live = _Live(RunLease(run.run_id, run.lease_epoch), dict(run.data), CancelToken(),
                     ControlState(run.run_id))
        done: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
        done.set_result(RunResult(run.run_id, status, run.output, run.error,
                                  run.steps if run.steps is not None else 0,
                                  workspace=run.workspace))
        live.task = asyncio.ensure_future(_wait(done))
        return live

    async def _watch(self, live: _Live) -> None:
        """Poll for controls from other processes and renew the lease."""
        renewed = time.time()
        while True:
            await asyncio.sleep(POLL_S)
            try:
                live.controls.poll(self.store)
                if live.controls.stop_reason and not live.cancel.is_set:
                    live.cancel.set(live.controls.stop_reason)
                if time.time() - renewed > self.workers.lease_ttl_s / 3:
                    await self.kernel.renew_lease(live.lease, lease_ttl_s=self.workers.lease_ttl_s)
                    renewed = time.time()
            except FencedOut:
                live.cancel.set("lease lost: another worker took this run over")
                return
            except Exception:
                log.warning("control watcher of run %s failed", live.lease.run_id, exc_info=True)

    async def _supplements(self, inv: Invocation, turn: int) -> list[str]:
        live = self._live.get(inv.ctx.run_id)
        if live is None:
            return []
        if live.draining and turn == inv.steps:  # a turn's start: its previous calls committed
            raise _RunReleased(inv.ctx.run_id)
        controls = live.controls
        if not controls.pending and turn not in controls.by_turn:
            return []
        key = f"{inv.invocation_id}/t{turn}/model"
        committed = bool(operations(self.store, inv.ctx.run_id, logical_key=key, limit=1))
        return await controls.take(self.store, self.kernel.coordinator,
                                   Fence(live.lease.run_id, live.lease.lease_epoch),
                                   turn=turn, live=not committed)

    async def _run_executor(self, executor: str, task: str, request: CapabilityRequest,
                            context: AttemptContext) -> LoopOutcome:
        live = self._live.get(context.run_id)
        if live is None:
            raise RunError(f"run {context.run_id} is not driven by this process")
        invocation_id = f"{context.run_id}/x/{request.operation_id}"
        return await self._invoke_agent(live, executor, task,
                                        self._context(live, executor, invocation_id))

    async def _invoke_agent(self, live: _Live, agent: str, task: str,
                            ctx: InvocationContext, history: Sequence[Any] = ()) -> LoopOutcome:
        """A non-root invocation of ``agent`` on ``task`` in ``ctx``, under the run's quota: an
        Executor's (no history), or a workflow's agent node's (``history`` when granted)."""
        spec = self._agent(agent)
        assert ctx.invocation_id is not None
        inv = Invocation(invocation_id=ctx.invocation_id, agent=spec, ctx=ctx,
                         messages=initial_messages(spec, task, history), root=False,
                         quota=live.quota)
        return await self._invoke(inv, live)

    async def _invoke(self, inv: Invocation, live: _Live) -> LoopOutcome:
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


async def _wait(done: asyncio.Future[RunResult]) -> RunResult:
    return await done


def suspended_refusal(run: RunRecord) -> str:
    """Why a ``suspended`` run is not resumed, and the one way on."""
    found = run.data.get("suspended")
    reason = found.get("reason") if isinstance(found, dict) else None
    return (f"run {run.run_id} is suspended: {reason or 'its old holder was not confirmed gone'}."
            f" Only `agentloom runs resume {run.run_id} --force` goes on; a call its old holder "
            "had in flight may then run twice (`runs show` lists them under "
            "diagnosis.unknown_calls)")


def waiting_refusal(run: RunRecord) -> str:
    """Why a ``waiting`` run is not resumed, and how to answer it."""
    found = run.data.get("waiting")
    waiting: Mapping[str, Any] = found if isinstance(found, dict) else {}
    question = waiting.get("question") or "a call waits for approval"
    ops = waiting.get("operation_ids") or []
    op = ops[0] if ops else "OPERATION"
    return (f"run {run.run_id} waits for a person's answer ({question}); answer it with "
            f"`agentloom runs approve {run.run_id} {op}` or `agentloom runs reject "
            f"{run.run_id} {op}`, then a worker resumes it")


def list_runs(store: Store, limit: int = 50) -> list[dict[str, Any]]:
    """Runs, newest first, as JSON-ready summaries (``status`` as stored);
    ``interrupted``: running, but nothing drives it any more."""
    return [{"run_id": r.run_id, "status": r.stored_status, "agent": r.agent, "task": r.task,
             "created_at": r.created_at, "updated_at": r.updated_at, "output": r.output,
             "interrupted": is_interrupted(r, now)}
            for now in (store.now(),) for r in runs(store, newest_first=True, limit=limit, lenient=True)]


def effective_task(outcome: LoopOutcome, task: str) -> str:
    """The task as the run's history ended up showing it: a model before-hook's lasting edit
    (a redacted password) is what later runs of the session see as this turn (000 §5.3); the
    run's own record keeps the raw task."""
    for message in outcome.messages:
        if message.id == "task" and message.content:
            return message.content
    return task
