"""``Kernel``: the composition root of the core, wiring store → coordinator → pipeline → bus
and the managers, with the calls of a run (its invocation context, recovery, hook outcomes).

Owns: ``Kernel`` (its construction and the per-call reads); the rest of its methods come from
its parts (``_catalog``, ``_runs``, ``_release``). Does not own: the agent loop (``agent/``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from agentloom.bus import EventBus
from agentloom.cancel import CancelToken
from agentloom.catalog import CapabilityRegistry
from agentloom.context import ContextManager, ResultReadHandler
from agentloom.environment import RunEnvironment
from agentloom.folders import default_workspace_root
from agentloom.hooks import HookLike, hook_specs
from agentloom.hooks.decision import ExecutionStatus, HookOutcome
from agentloom.hooks.manager import HookManager
from agentloom.hooks.runner import HookRunner
from agentloom.kernel._catalog import CatalogPart
from agentloom.kernel._parts import RunLease
from agentloom.kernel._release import ReleasePart
from agentloom.kernel._runs import RunsPart
from agentloom.models.gateway import ModelGateway, message_scope
from agentloom.models.manager import ModelManager
from agentloom.pipeline.context import DEFAULT_RUN_DEADLINE_S, InvocationContext, Request
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.pipeline.invocation import InvocationPipeline
from agentloom.pipeline.records import OperationState
from agentloom.pipeline.retry import RetryPolicy
from agentloom.refs import OwnerRef
from agentloom.results import OperationResult
from agentloom.sandbox import EnvironmentPolicy
from agentloom.sandbox.ports import SandboxBackend
from agentloom.skills.runtime import SkillBindings
from agentloom.store import Store, open_store, records
from agentloom.store.holders import holder_id
from agentloom.store.operations import hook_invocations
from agentloom.tools.manager import ToolManager

if TYPE_CHECKING:
    from agentloom.mcp import McpSessions


class Kernel(CatalogPart, RunsPart, ReleasePart):
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
