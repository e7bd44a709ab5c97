"""The composition root of the core: store → coordinator → pipeline → bus, plus runs.

``Kernel`` wires the one path every capability takes (000 §3) and owns the few
run facts the pipeline needs to fence its commits (run row, lease epoch). The
agent layer builds on it; tests and examples use it directly.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentloom.bus import EventBus
from agentloom.catalog import CapabilityRegistry, CapabilitySpec, legal_model_name
from agentloom.context import ContextManager, ResultReadHandler, result_read_spec
from agentloom.hooks.decision import HookOutcome
from agentloom.hooks.manager import HookManager
from agentloom.hooks.spec import HookSpec
from agentloom.ids import new_id
from agentloom.pipeline.cancel import CancelToken
from agentloom.pipeline.context import (
    DEFAULT_RUN_DEADLINE_S,
    InvocationContext,
    OwnerRef,
    Request,
)
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.pipeline.invocation import InvocationPipeline
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.pipeline.records import OperationState
from agentloom.pipeline.retry import RetryPolicy
from agentloom.results import OperationResult
from agentloom.store import Insert, Store, WriteSet, open_store
from agentloom.tools.manager import ToolManager
from agentloom.tools.sdk import Tool, ToolHandler


def tool_capability(tool: Tool[Any], release_id: str) -> tuple[CapabilitySpec, ToolHandler]:
    """The catalog entry and handler for an SDK tool (``name`` becomes the capability key)."""
    description = tool.describe()
    spec = CapabilitySpec(
        resource_version_id=release_id,
        capability_key=description.name,
        kind="hosted",
        model_name=legal_model_name(description.name),
        description=description.description,
        input_schema=description.input_schema,
        handler_ref=f"sdk:{description.name}",
    )
    return spec, ToolHandler(tool)


@dataclass(frozen=True, slots=True)
class RunLease:
    run_id: str
    lease_epoch: int


class Kernel:
    def __init__(
        self,
        store: Store | str,
        *,
        hooks: Sequence[HookSpec] = (),
        hook_functions: Mapping[str, Callable[..., Any]] | None = None,
        preview_limit: int = 4096,
    ) -> None:
        self.store = open_store(store) if isinstance(store, str) else store
        self.coordinator = CommitCoordinator(self.store)
        self.registry = CapabilityRegistry()
        self.hooks = HookManager(hooks, functions=hook_functions)
        self.context = ContextManager(self.store, preview_limit=preview_limit)
        self.pipeline = InvocationPipeline(
            store=self.store, coordinator=self.coordinator, registry=self.registry,
            hooks=self.hooks, context=self.context,
        )
        self.bus = EventBus(self.pipeline)
        self.tools = ToolManager()
        self.bus.register_owner("tool", self.tools)
        self.tools.register("builtin:result.read", ResultReadHandler(self.store))
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"

    # -- catalog -----------------------------------------------------------------------
    def publish(
        self,
        release_id: str,
        tools: Sequence[tuple[CapabilitySpec, CapabilityHandler] | Tool[Any]],
        *,
        roles: Mapping[str, Sequence[str]],
    ) -> str:
        """Register handlers and publish their specs (plus ``result.read``) as one release.

        ``tools`` holds SDK ``Tool`` instances or ``(CapabilitySpec, handler)`` pairs.
        """
        pairs = [tool_capability(t, release_id) if isinstance(t, Tool) else t for t in tools]
        specs = [spec for spec, _ in pairs]
        for spec, handler in pairs:
            if self.tools.handler_for(spec) is None:
                self.tools.register(spec.handler_ref, handler)
        specs.append(result_read_spec(release_id))
        role_map = {role: [*keys, "result.read"] for role, keys in roles.items()}
        return self.registry.publish(release_id, specs, roles=role_map)

    # -- runs ----------------------------------------------------------------------------
    async def start_run(self, *, run_id: str | None = None, data: dict[str, Any] | None = None,
                        lease_ttl_s: float = 60.0) -> RunLease:
        run_id = run_id or new_id()
        now = time.time()
        await self.coordinator.commit(WriteSet((Insert("runs", {
            "run_id": run_id, "status": "running", "lease_epoch": 0, "lease_owner": None,
            "created_at": now, "updated_at": now, "data": data or {},
        }),)))
        return self.claim(run_id, lease_ttl_s=lease_ttl_s)

    def claim(self, run_id: str, *, lease_ttl_s: float = 60.0) -> RunLease:
        """Take over a run: a new lease epoch fences every commit of the previous holder."""
        return RunLease(run_id, self.store.claim_run(run_id, self.worker_id, lease_ttl_s))

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
    ) -> InvocationContext:
        return InvocationContext(
            run_id=lease.run_id,
            lease_epoch=lease.lease_epoch,
            owner_ref=owner or OwnerRef(kind="agent", id=role),
            catalog=self.registry.for_role(release_id, role),
            deadline=deadline if deadline is not None else time.time() + deadline_s,
            retry=retry or RetryPolicy(),
            cancel=cancel or CancelToken(),
            role=role,
            context_scope=f"{lease.run_id}/role/{role}" if private_context else None,
            shared_scope=f"{lease.run_id}/shared",
        )

    async def recover(self, ctx: InvocationContext) -> list[OperationResult]:
        """Finish every non-terminal operation of ``ctx``'s run from its last committed phase."""
        results = []
        rows = self.store.query("operations", {"run_id": ctx.run_id, "outcome": None},
                                order_by=("created_at",))
        for row in rows:
            state = OperationState.from_row(row)
            spec = ctx.catalog.by_key(state.capability_key)
            handler = self.tools.handler_for(spec)
            assert handler is not None
            request = Request(
                operation_id=state.operation_id, event_type=state.event_type,
                model_name=state.request["model_name"],
                arguments=state.request["proposed_arguments"], context=ctx,
                logical_key=state.logical_key, causation_id=state.request.get("causation_id"),
                purpose=state.request.get("purpose"),
            )
            results.append(await self.pipeline.resume(state, request, handler))
        return results

    def hook_outcomes(self, operation_id: str) -> list[HookOutcome]:
        """One ``HookOutcome`` per hook run of an operation, in chain order (before, then after).

        ``decision_ref`` / ``diagnostic_ref`` name the ``hook_invocations`` row holding the
        committed decision or the failure diagnostic.
        """
        rows = self.store.query("hook_invocations", {"operation_id": operation_id})
        rows.sort(key=lambda r: (r["timing"] != "before", r["position"]))
        outcomes = []
        for row in rows:
            ref = f"hook_invocations/{operation_id}/{row['timing']}/{row['position']}"
            data = row["data"]
            outcomes.append(HookOutcome(
                execution_status=row["status"],
                decision_ref=ref if row["decision"] else None,
                diagnostic_ref=ref if data.get("diagnostic") or data.get("patch_error") else None,
            ))
        return outcomes

    def operations(self, run_id: str) -> list[dict[str, Any]]:
        return self.store.query("operations", {"run_id": run_id}, order_by=("created_at",))

    def close(self) -> None:
        self.coordinator.close()
        self.store.close()
