"""The composition root of the core: store → coordinator → pipeline → bus, plus runs.

``Kernel`` wires the one path every capability takes (000 §3) and owns the few
run facts the pipeline needs to fence its commits (run row, lease epoch). It is the
advanced layer: ``agentloom.Runtime`` — the public entry — builds one and runs agents on
it; use a ``Kernel`` directly only to drive capabilities without the agent loop (tests,
benchmarks, a host of your own).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from agentloom.bus import EventBus
from agentloom.cancel import CancelToken
from agentloom.catalog import CapabilityRegistry, CapabilitySpec, legal_exposed_name
from agentloom.context import ContextManager, ResultReadHandler, result_read_spec
from agentloom.environment import RunEnvironment
from agentloom.errors import RegistrationError
from agentloom.folders import default_workspace_root
from agentloom.hooks import HookLike, hook_specs
from agentloom.hooks.decision import ExecutionStatus, HookOutcome
from agentloom.hooks.fields import fields_document
from agentloom.hooks.manager import HookManager
from agentloom.hooks.runner import HookRunner
from agentloom.ids import new_id
from agentloom.models.gateway import ModelGateway, is_model_capability, message_scope
from agentloom.models.manager import ModelManager
from agentloom.models.ports import Connection, ModelAdapter
from agentloom.pipeline.context import DEFAULT_RUN_DEADLINE_S, InvocationContext, Request
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.pipeline.invocation import InvocationPipeline
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.pipeline.records import OperationState
from agentloom.pipeline.retry import RetryPolicy
from agentloom.refs import OwnerRef, Principal
from agentloom.results import OperationResult, RunStatus, TerminalRunStatus
from agentloom.sandbox import EnvironmentPolicy
from agentloom.sandbox.ports import SandboxBackend
from agentloom.skills.runtime import SKILL_TOOLS, SkillBindings
from agentloom.skills.tools import skill_capability
from agentloom.store import Insert, Op, Store, WriteSet, open_store, records
from agentloom.store import runs as run_rows
from agentloom.store.holders import holder_id
from agentloom.store.operations import hook_invocations
from agentloom.store.owners import check_owner
from agentloom.store.ports import Fence
from agentloom.store.revocations import revocation_put
from agentloom.tools.builtin.exec import ExecHandler
from agentloom.tools.manager import ToolManager
from agentloom.tools.sdk import Tool, ToolHandler
from agentloom.workspace.cleanup import CleanupResult
from agentloom.workspace.resolver import WorkspaceResolver
from agentloom.workspace.scope import WorkspaceScope

if TYPE_CHECKING:
    from agentloom.a2a import A2aAgent
    from agentloom.mcp import McpSessions, McpTool

log = logging.getLogger(__name__)


def tool_capability(
    tool: Tool[Any], release_id: str, files: WorkspaceResolver | None = None
) -> tuple[CapabilitySpec, ToolHandler]:
    """The catalog entry and handler for an SDK tool (``name`` becomes the capability key)."""
    description = tool.describe()
    spec = CapabilitySpec(
        resource_version_id=release_id,
        capability_key=description.name,
        kind="hosted",
        exposed_name=legal_exposed_name(description.name),
        description=description.description,
        input_schema=description.input_schema,
        handler_ref=f"sdk:{description.name}",
    )
    return spec, ToolHandler(tool, files=files)


@dataclass(frozen=True, slots=True)
class RunLease:
    """A claim on one run: the run id, the lease epoch every commit of the holder is fenced by,
    and the run's workspace scope. A holder whose epoch moved on gets ``FencedOut``."""

    run_id: str
    lease_epoch: int
    workspace_scope_id: str | None = None


class Kernel:
    """The composition root of the core: store → ``CommitCoordinator`` → ``InvocationPipeline``
    → ``EventBus``, plus the tool and model managers, hooks and the ``RunEnvironment``.

    Owns: wiring the one path every capability takes (000 §3), publishing capabilities, and the
    run facts the pipeline fences its commits with (run row, ``RunLease``): every write of a
    run row — start, lease renewal and release, end — with its shape and its fence; closing a
    run's MCP sessions when it ends or lets its lease go (``mcp_sessions``). Does not
    own: the agent loop, sessions or run retries (``agent/``), nor any capability's behaviour.

    The advanced layer, not the front door: ``agentloom.Runtime`` builds one (``rt.kernel``)
    and is what applications use. Reach for a ``Kernel`` of your own to send requests on the
    bus without agents — to call a tool or a model through the recorded, hooked pipeline."""

    def __init__(
        self,
        store: Store | str,
        *,
        hooks: Sequence[HookLike] = (),
        hook_functions: Mapping[str, Callable[..., Any]] | None = None,
        hook_runners: Mapping[str, HookRunner] | None = None,
        preview_limit: int = 4096,
        workspace_root: Path | str | None = None,
        sandbox: EnvironmentPolicy | None = None,
        sandbox_backend: SandboxBackend = "auto",
    ) -> None:
        """``sandbox`` is the policy ``exec`` commands run under (default
        ``EnvironmentPolicy()``); ``sandbox_backend`` picks the sandbox (``auto``:
        bubblewrap, else Landlock, else ``exec`` fails with ``SANDBOX_UNAVAILABLE``;
        ``none``: unconfined). It is recorded on every run (``runs.data.sandbox_backend``).
        ``hooks`` takes what ``Runtime`` does: ``HookSpec``s, ``@agentloom.hook`` functions
        and plain callables (``agentloom.hooks.hook_specs``). ``workspace_root`` defaults to
        ``folders.default_workspace_root`` of the working folder: outside the project."""
        self.store = open_store(store) if isinstance(store, str) else store
        self.coordinator = CommitCoordinator(self.store)
        self.registry = CapabilityRegistry()
        specs, functions = hook_specs(hooks, hook_functions)
        self.hooks = HookManager(specs, functions=functions, runners=hook_runners)
        self.context = ContextManager(self.store, preview_limit=preview_limit)
        self.pipeline = InvocationPipeline(
            store=self.store, coordinator=self.coordinator, registry=self.registry,
            hooks=self.hooks, context=self.context,
        )
        self.bus = EventBus(self.pipeline)
        self.tools = ToolManager()
        self.bus.register_owner("tool", self.tools)
        # Delegations (Planner → Executor) are their own event type, with their own hooks.
        self.delegations = ToolManager()
        self.bus.register_owner("delegation", self.delegations)
        self.environment = RunEnvironment(
            self.store, self.coordinator, root=Path(workspace_root) if workspace_root is not None
            else default_workspace_root(Path.cwd()), policy=sandbox,
            sandbox_backend=sandbox_backend, notify=self.bus.notify)
        self.hooks.attach_environment(self.environment)  # command hooks: sandbox, workspaces
        self.tools.register("builtin:result.read",
                            ResultReadHandler(self.store, self.environment.blobs))
        # Skills (000 §6.1): each role's bound versions, read by skill.* and mounted for exec.
        self.skills = SkillBindings(self.store, self.environment.root)
        # Models (000 §4): ModelManager owns "model" requests; kernel.models is the gateway.
        self.model_manager = ModelManager()
        self.bus.register_owner("model", self.model_manager)
        self.models = ModelGateway(self.bus, self.model_manager)
        self.worker_id = holder_id()  # host@space:pid, unique across PID namespaces
        self._mcp: McpSessions | None = None
        self.hooks.attach_mcp(self)  # mcp hooks: the runs' MCP sessions (made on first use)

    # -- catalog -----------------------------------------------------------------------
    def publish(
        self,
        release_id: str,
        tools: Sequence[tuple[CapabilitySpec, CapabilityHandler] | Tool[Any] | str | CapabilitySpec
                        | McpTool | A2aAgent],
        *,
        roles: Mapping[str, Sequence[str]],
    ) -> str:
        """Register handlers and publish their specs (plus ``result.read`` and every model
        connection) as one release.

        ``tools`` holds SDK ``Tool`` instances, ``(CapabilitySpec, handler)`` pairs, or the
        names of built-ins (``"fs.read"``, ``"fs.write"``, …, ``"exec"``). Model connections
        added with ``add_model`` are published in every role's catalog without being listed;
        their specs (or ``(spec, handler)`` pairs with a ``model:`` handler) are accepted here
        too. The ``ModelManager`` owns their handlers, so no tool request can reach them.
        """
        pairs = [self._capability(t, release_id) for t in tools]
        specs = [spec for spec, _ in pairs]
        for spec, handler in pairs:
            owner = self._owner(spec)
            if owner.handler_for(spec) is None:
                owner.register(spec.handler_ref, handler)
        listed = {spec.capability_key for spec in specs}
        specs.extend(s for s in self.model_manager.specs() if s.capability_key not in listed)
        models = [spec.capability_key for spec in specs if is_model_capability(spec)]
        specs.append(result_read_spec(release_id))
        role_map = {role: [*keys, *models, "result.read"] for role, keys in roles.items()}
        return self.registry.publish(release_id, specs, roles=role_map,
                                     hook_fields=fields_document())

    def _owner(self, spec: CapabilitySpec) -> ModelManager | ToolManager:
        if is_model_capability(spec):
            return self.model_manager
        return self.delegations if spec.handler_ref.startswith("delegate:") else self.tools

    def _capability(
        self, tool: tuple[CapabilitySpec, CapabilityHandler] | Tool[Any] | str | CapabilitySpec
        | McpTool | A2aAgent,
        release_id: str,
    ) -> tuple[CapabilitySpec, CapabilityHandler]:
        if isinstance(tool, tuple):
            return tool
        if isinstance(tool, str):
            if tool in SKILL_TOOLS:
                return skill_capability(tool, release_id, self.skills)
            spec, builtin = self.environment.builtin(tool, release_id)
            if isinstance(builtin, ExecHandler):  # the role's skills at /skills/<name>, read-only
                builtin.mounts = self.skills.mounts_for
            return spec, builtin
        if isinstance(tool, Tool):
            return tool_capability(tool, release_id, self.environment.resolver)
        if isinstance(tool, CapabilitySpec):
            handler = self.model_manager.handler_for(tool)
            if handler is None:
                raise RegistrationError(
                    f"{tool.capability_key!r} has no registered handler; pass a (spec, handler) "
                    "pair, or add a model connection with Kernel.add_model first")
            return tool, handler
        from agentloom.a2a.catalog import A2aAgent  # imports no A2A SDK module

        if isinstance(tool, A2aAgent):  # a remote agent's a2a.<name>.send (issue 19)
            return tool.spec(release_id), tool.handler()
        # what is left is an MCP server's tool (the ``mcp`` SDK is imported only for one)
        return tool.spec(release_id), tool.handler(self.mcp_sessions)

    async def close_mcp_sessions(self) -> None:
        """Close every MCP session still open (those of runs that never reached ``end_run`` or
        ``release_run``); nothing to do when no MCP server was ever used."""
        if self._mcp is not None:
            await self._mcp.aclose()

    @property
    def mcp_sessions(self) -> McpSessions:
        """The MCP sessions of this kernel's runs (one per run and server), made on first use:
        a kernel without MCP tools never imports the ``mcp`` SDK."""
        if self._mcp is None:
            from agentloom.mcp import McpSessions
            from agentloom.mcp.oauth import McpCredentials

            scopes = self.environment.scopes
            self._mcp = McpSessions(
                notify=self.bus.notify, backend=self.environment.sandbox_backend,
                policy=self.environment.policy,
                workspace_of=lambda sid: scopes.ensure_folder(scopes.get(sid)),
                space_of=lambda sid: scopes.get(sid).owner_ref.space_id,
                credentials=McpCredentials(self.store))  # OAuth grants: the store's secret table
        return self._mcp

    # -- models --------------------------------------------------------------------------
    def add_model(
        self,
        name: str,
        model: ModelAdapter | Connection,
        *,
        first_output_timeout_s: float = 60.0,
        stream_idle_timeout_s: float | None = None,
    ) -> CapabilitySpec:
        """Add model connection ``name`` — a ``Connection`` (see ``models.connect``) or an
        adapter such as the offline ``TestModel`` — and return its catalog spec
        (``model.<name>``). Releases published afterwards include it; call it with
        ``kernel.models.generate(request, ctx, model=name)``."""
        return self.model_manager.add(
            name, model, first_output_timeout_s=first_output_timeout_s,
            stream_idle_timeout_s=stream_idle_timeout_s)

    # -- runs ----------------------------------------------------------------------------
    async def start_run(
        self,
        *,
        run_id: str | None = None,
        data: dict[str, Any] | None = None,
        lease_ttl_s: float = 60.0,
        owner: OwnerRef | None = None,
        workspace: bool = True,
        session_id: str | None = None,
        workdir: Path | None = None,
        keep_workspace: bool = False,
        principal: Principal | None = None,
    ) -> RunLease:
        """Create a run, take its lease and (by default) register its workspace.

        A deleted owner is refused (``OwnerDeleted``, ``OWNER_DELETED``) before anything is
        created. ``workdir``: an existing folder is the workspace (refused with ``WORKSPACE_BUSY``
        while another running run holds it, before any run is created); ``keep_workspace``:
        the run's own folder is kept after it ends.

        With ``session_id`` the workspace is that session's persistent folder; without,
        a folder of this run's own invocation, deleted when the run ends.
        """
        run_id = run_id or new_id()
        owner = owner or OwnerRef(kind="agent", id="main")
        check_owner(self.store, owner)  # a deleted owner starts nothing (OWNER_DELETED)
        if workspace and workdir is not None:
            self.environment.scopes.check_bindable(workdir, self.run_is_running)
        # created already held by this process (epoch 1): nobody else can have claimed a run
        # that did not exist, so the insert is the claim — one commit, not two
        ops: list[Op] = [self._new_run(run_id, "running", owner, data, principal=principal,
                                       lease=(1, self.worker_id,
                                              self.store.now() + lease_ttl_s))]
        scope = None
        if workspace and workdir is None:  # its scope is registered in the same commit
            scope, scope_ops = await self.environment.plan_workspace(
                owner=owner, run_id=run_id, session_id=session_id, invocation_id=run_id,
                keep=keep_workspace, new_run=True)
            ops.extend(scope_ops)
        await self.coordinator.commit(WriteSet(tuple(ops)), inline=self._alone())
        if scope is not None:
            if scope.persistent:  # a run's own folder is made when it is first used
                self.environment.scopes.ensure_folder(scope)
            return RunLease(run_id, 1, scope.workspace_scope_id)
        lease = RunLease(run_id, 1)
        if workspace:
            lease = await self.open_run_workspace(lease, owner=owner, session_id=session_id,
                                                  workdir=workdir, keep=keep_workspace)
        return lease

    def _new_run(self, run_id: str, status: RunStatus, owner: OwnerRef,
                 data: Mapping[str, Any] | None, priority: int = 0,
                 principal: Principal | None = None,
                 lease: tuple[int, str, float] | None = None) -> Insert:
        """The insert of a new ``runs`` row (``store.runs.new_run_op``): its data names its owner
        and sandbox backend; ``lease``: created already held."""
        run_data = dict(data or {})
        run_data["owner"] = owner.to_dict()
        run_data["sandbox_backend"] = self.environment.sandbox_backend
        return run_rows.new_run_op(run_id, status=status, data=run_data, created_at=time.time(),
                                   priority=priority, principal=principal, lease=lease)

    async def submit_run(self, *, run_id: str | None = None, data: Mapping[str, Any],
                         owner: OwnerRef, priority: int = 0,
                         principal: Principal | None = None) -> str:
        """Put a run in the queue: status ``pending``, no holder, no workspace yet (a worker's
        claim gives it both). A deleted owner is refused (``OWNER_DELETED``) first."""
        run_id = run_id or new_id()
        check_owner(self.store, owner)
        await self.coordinator.commit(WriteSet((self._new_run(
            run_id, "pending", owner, data, priority, principal),)))
        return run_id

    def claim_next(self, *, agents: Collection[str], release_id: str, worker_cap: int,
                   agent_caps: Mapping[str, int] | None = None,
                   lease_ttl_s: float = 60.0) -> RunLease | None:
        """Take the next ``pending`` run of ``agents`` in ``release_id`` this worker may hold
        (``Store.claim_next``: priority, then age; the worker and agent caps checked in the
        same transaction), or None. Its lease names the run's workspace once it has one."""
        claimed = self.store.claim_next(self.worker_id, lease_ttl_s, agents=agents,
                                        release_id=release_id, worker_cap=worker_cap,
                                        agent_caps=agent_caps)
        if claimed is None:
            return None
        scopes = [s for s in self.environment.scopes.scopes_for_run(claimed.run_id)
                  if s.state == "registered"]
        return RunLease(claimed.run_id, claimed.lease_epoch,
                        scopes[0].workspace_scope_id if scopes else None)

    async def open_run_workspace(self, lease: RunLease, *, owner: OwnerRef,
                                 session_id: str | None = None, workdir: Path | None = None,
                                 keep: bool = False) -> RunLease:
        """Register the workspace of a run this process holds (fenced by its lease)."""
        scope = await self.environment.open_workspace(
            owner=owner, run_id=lease.run_id, session_id=session_id,
            invocation_id=lease.run_id, fence=Fence(lease.run_id, lease.lease_epoch),
            workdir=workdir, keep=keep, busy=self.run_is_running)
        return RunLease(lease.run_id, lease.lease_epoch, scope.workspace_scope_id)

    def run_is_running(self, run_id: str) -> bool:
        run = run_rows.get_run(self.store, run_id, lenient=True)
        return run is not None and run.stored_status == "running"

    def claim(self, run_id: str, *, lease_ttl_s: float = 60.0,
              only_if_expired: bool = False, expect_epoch: int | None = None) -> RunLease:
        """Take over a run: a new lease epoch fences every commit of the previous holder.
        ``only_if_expired``: only when no live lease holds it; ``expect_epoch``: only while
        its epoch is still that one (the one the caller judged) — else ``StoreError``
        LEASE_HELD."""
        epoch = self.store.claim_run(run_id, self.worker_id, lease_ttl_s,
                                     only_if_expired=only_if_expired, expect_epoch=expect_epoch)
        scopes = [s for s in self.environment.scopes.scopes_for_run(run_id)
                  if s.state == "registered"]
        return RunLease(run_id, epoch, scopes[0].workspace_scope_id if scopes else None)

    async def end_run(
        self,
        lease: RunLease,
        status: TerminalRunStatus = "succeeded",
        *,
        data: Mapping[str, Any] | None = None,
        with_ops: Sequence[Op] = (),
        scopes: list[WorkspaceScope] | None = None,
    ) -> CleanupResult:
        """Finish a run: record its terminal ``status`` — with ``data`` (the run's facts:
        output, error, steps, …) when given, and ``with_ops`` in the same commit (a session
        turn) — fenced by ``lease``; then revoke and clean its workspace (000 §7.4).
        ``scopes``: the run's workspace scopes as the caller just read them (else read here).

        Raises:
            FencedOut: another holder took the run over; nothing was recorded or cleaned.
            RevisionConflict: an op of ``with_ops`` conflicts; nothing was recorded or
                cleaned, so the caller may try again with other ops.
        """
        facts = {} if data is None else {"data": dict(data)}
        # its scopes lose their write right in the same commit (000 §7.4's first step)
        if scopes is None:
            scopes = self.environment.scopes.scopes_for_run(lease.run_id)
        revoked, scopes = self.environment.cleanup.revoke_ops(scopes)
        try:
            await self._commit_run(lease, {"run_id": lease.run_id, "status": status,
                                           "updated_at": time.time(), **facts}, *with_ops,
                                   *revoked)
        finally:  # its MCP servers stop before its folders are cleaned (or when it was taken over)
            await self._close_mcp(lease.run_id)
        return await self.environment.end_run(lease.run_id, lease.lease_epoch, scopes=scopes)

    async def release_run(self, lease: RunLease, *, data: Mapping[str, Any] | None = None) -> None:
        """Let the run's lease go without ending the run: it stays ``running``, its lease expires
        now, so a worker may resume it (``agent.failures`` records in ``data`` when).

        Raises:
            FencedOut: another holder took the run over; nothing was recorded.
        """
        facts = {} if data is None else {"data": dict(data)}
        try:
            await self._commit_run(lease, {"run_id": lease.run_id, "updated_at": time.time(),
                                           **facts, "lease_expires_at": 0.0})
        finally:  # an MCP session is bound to its lease: the next holder opens its own
            await self._close_mcp(lease.run_id)
        await self.record_revocation(lease)

    async def update_run(self, lease: RunLease, facts: Mapping[str, Any]) -> None:
        """Record ``facts`` (columns of the run's row: ``data``, ``status``) under the lease.

        Raises:
            FencedOut: another holder took the run over; nothing was recorded.
        """
        await self._commit_run(lease, {"run_id": lease.run_id, "updated_at": time.time(),
                                       **facts})

    async def park_run(self, lease: RunLease, status: str, *,
                       data: Mapping[str, Any]) -> None:
        """Let a run go without ending it: ``waiting`` (for a person's answer) or ``pending``
        (back in the queue). Its lease ends now; its workspace stays for the next holder.

        Raises:
            FencedOut: another holder took the run over; nothing was recorded.
        """
        try:
            await self._commit_run(lease, {"run_id": lease.run_id, "status": status,
                                           "data": dict(data), "updated_at": time.time(),
                                           "lease_expires_at": 0.0})
        finally:  # an MCP session is bound to its lease: the next holder opens its own
            await self._close_mcp(lease.run_id)
        await self.record_revocation(lease)

    async def suspend_run(self, lease: RunLease, *, data: Mapping[str, Any]) -> None:
        """Report a run ``suspended`` (``data.suspended`` says why) under the epoch of its last
        holder, whose lease expired — without taking it: nothing of it runs until
        ``runs resume --force``.

        Raises:
            FencedOut: the run was claimed meanwhile; nothing was recorded.
        """
        await self._commit_run(lease, {"run_id": lease.run_id, "status": "suspended",
                                       "data": dict(data), "updated_at": time.time()})

    async def record_revocation(self, lease: RunLease) -> bool:
        """Stop the run's commands and stdio servers of this lease and record the holder's
        revocation receipt (``revocations``): a takeover of the run waits for it when the
        holder may still be alive (``agent.leases.takeover_verdict``). Whether they are
        confirmed gone; a receipt that cannot be written is logged, never raised (the run was
        let go already)."""
        receipt = await self.environment.revoke(lease.run_id, lease.lease_epoch)
        row = revocation_put(run_id=lease.run_id, lease_epoch=lease.lease_epoch,
                             worker_id=self.worker_id, confirmed=receipt.confirmed,
                             created_at=self.store.now(), killed=receipt.killed)
        try:
            await self.coordinator.commit(WriteSet((row,)))
        except Exception as exc:
            log.warning("run %s: the revocation receipt of epoch %d was not recorded: %s",
                        lease.run_id, lease.lease_epoch, exc)
        return receipt.confirmed

    async def _close_mcp(self, run_id: str) -> None:
        if self._mcp is not None:
            await self._mcp.close_run(run_id)

    async def renew_lease(self, lease: RunLease, *, lease_ttl_s: float = 60.0) -> None:
        """Extend the lease to ``lease_ttl_s`` from now (its holder does, while it drives the run).

        Raises:
            FencedOut: another holder took the run over.
        """
        # ``running`` again, too: a takeover that found the lease expired (the holder was
        # paused) may have reported the run ``suspended`` without taking it
        await self._commit_run(lease, {"run_id": lease.run_id, "status": "running",
                                       "lease_expires_at": self.store.now() + lease_ttl_s})

    async def _commit_run(self, lease: RunLease, row: Mapping[str, Any], *also: Op) -> None:
        """One commit of the run's row (and ``also``), fenced by the lease's epoch."""
        changes = {column: value for column, value in row.items() if column != "run_id"}
        await self.coordinator.commit(WriteSet((run_rows.update_run_op(row["run_id"], changes),
                                                *also),
                                               Fence(lease.run_id, lease.lease_epoch)),
                                      inline=self._alone())

    def _alone(self) -> bool:
        """No call is in flight in this process: a run's own commit may run on the event
        loop's thread (``CommitCoordinator.commit``'s ``inline``)."""
        return self.pipeline.commits.active == 0

    def invocation_context(
        self,
        lease: RunLease,
        *,
        release_id: str,
        role: str = "main",
        owner: OwnerRef | None = None,
        deadline_s: float = DEFAULT_RUN_DEADLINE_S,
        deadline: float | None = None,
        retry: RetryPolicy | None = None,
        cancel: CancelToken | None = None,
        private_context: bool = True,
        invocation_id: str | None = None,
        approval_timeout_s: float | None = None,
        approval_default: Literal["deny", "approve"] = "deny",
    ) -> InvocationContext:
        return InvocationContext(
            approval_timeout_s=approval_timeout_s,
            approval_default=approval_default,
            run_id=lease.run_id,
            lease_epoch=lease.lease_epoch,
            owner_ref=owner or OwnerRef(kind="agent", id=role),
            catalog=self.registry.for_role(release_id, role),
            deadline=deadline if deadline is not None else time.time() + deadline_s,
            retry=retry or RetryPolicy(),
            cancel=cancel or CancelToken(),
            role=role,
            invocation_id=invocation_id,
            context_scope=f"{lease.run_id}/role/{role}" if private_context else None,
            workspace_scope_id=lease.workspace_scope_id,
            shared_scope=f"{lease.run_id}/shared",
        )

    async def recover(self, ctx: InvocationContext) -> list[OperationResult]:
        """Finish every non-terminal operation of ``ctx``'s run from its last committed phase."""
        results = []
        for record in records.operations(self.store, ctx.run_id, pending=True, lenient=True):
            state = OperationState.from_row(record.to_row(), self.store)
            spec = ctx.catalog.by_key(state.capability_key)
            handler = self._owner(spec).handler_for(spec)
            assert handler is not None
            # Finish the call in the context scope it was made in (model calls have none).
            scope = state.request.get("context_scope", ctx.context_scope)
            messages = state.request.get("message_scope")
            call_ctx = ctx if scope == ctx.context_scope and messages == ctx.message_scope \
                else replace(ctx, context_scope=scope, message_scope=messages)
            request = Request(
                operation_id=state.operation_id, event_type=state.event_type,
                exposed_name=state.request["exposed_name"],
                arguments=state.request["proposed_arguments"], context=call_ctx,
                logical_key=state.logical_key, causation_id=state.request.get("causation_id"),
                purpose=state.request.get("purpose"), call_id=state.request.get("call_id"),
            )
            results.append(await self.pipeline.resume(state, request, handler))
        return results

    def message_edits(self, ctx: InvocationContext) -> Mapping[str, str | None]:
        """The committed effective text of every message of ``ctx``'s invocation a model
        before-hook edited, by message id (000 §5.3); nothing to read when no before-hook
        can see a model call."""
        if ctx.context_scope is None or not any(
                h.timing == "before" and h.event in ("model", "*") for h in self.hooks.hooks):
            return {}
        return self.context.edited_messages(message_scope(ctx.context_scope, ctx))

    def hook_outcomes(self, operation_id: str) -> list[HookOutcome]:
        """One ``HookOutcome`` per hook run of an operation, in chain order (before, then after).

        ``decision_ref`` / ``diagnostic_ref`` name the ``hook_invocations`` row holding the
        committed decision or the failure diagnostic.
        """
        rows = hook_invocations(self.store, operation_id)
        rows.sort(key=lambda r: (r.timing != "before", r.position))
        outcomes = []
        for row in rows:
            data = row.data
            outcomes.append(HookOutcome(
                execution_status=cast(ExecutionStatus, row.status),
                decision_ref=row.ref if row.decision else None,
                diagnostic_ref=row.ref if data.get("diagnostic") or data.get("patch_error")
                else None,
            ))
        return outcomes

    def operations(self, run_id: str) -> list[dict[str, Any]]:
        """The run's ``operations`` rows as stored, oldest first."""
        return [r.to_row() for r in records.operations(self.store, run_id, lenient=True)]

    def close(self) -> None:
        self.coordinator.close()
        self.store.close()
