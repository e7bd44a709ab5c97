"""Shared pieces for pipeline tests: a kernel on a real store, and a counting tool."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.kernel import Kernel, RunLease
from agentloom.pipeline.context import InvocationContext
from agentloom.results import ToolResult

ECHO_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "count": {"type": "integer"},
        "items": {"type": "array", "items": {"type": "integer"}},
        "opts": {
            "type": "object",
            "properties": {"mode": {"type": "string"}, "level": {"type": "integer"}},
        },
    },
    "required": ["text"],
}


@dataclass
class CountingTool:
    """A tool that records every call it receives (the side-effect counter)."""

    rerunnable = False
    recoverable = False

    calls: list[dict[str, Any]] = field(default_factory=list)
    behaviour: Callable[[dict[str, Any], AttemptContext], Any] | None = None

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        self.calls.append({"arguments": dict(request.arguments), "operation_id":
                           request.operation_id, "attempt_no": context.attempt_no})
        if self.behaviour is not None:
            out = self.behaviour(dict(request.arguments), context)
            if asyncio.iscoroutine(out):
                out = await out
            if isinstance(out, ToolResult):
                return out
        return ToolResult.success({"echo": dict(request.arguments)})


def spec(key: str = "demo.echo", schema: Mapping[str, Any] = ECHO_SCHEMA) -> CapabilitySpec:
    return CapabilitySpec(
        resource_version_id="rv1", capability_key=key, kind="hosted",
        exposed_name=key.replace(".", "_"), description=f"{key} for tests",
        input_schema=schema, handler_ref=f"test:{key}",
    )


def hook(hook_id: str, fn: Callable[..., Any], *, timing: str = "before",
         capability: str | None = None, role: str | None = None, status: str | None = None,
         timeout_s: float = 5.0, on_failure: str = "allow",
         ) -> tuple[HookSpec, str, Callable[..., Any]]:
    ref = f"tests:{hook_id}"
    return (
        HookSpec(hook_id=hook_id, timing=timing,  # type: ignore[arg-type]
                 match=HookMatch(capability=capability, role=role, status=status),
                 handler=HandlerRef(ref=ref), timeout_s=timeout_s,
                 on_failure=on_failure),  # type: ignore[arg-type]
        ref,
        fn,
    )


@dataclass
class Harness:
    kernel: Kernel
    tool: CountingTool
    lease: RunLease
    ctx: InvocationContext

    async def call(self, args: Mapping[str, Any], **kw: Any) -> Any:
        return await self.kernel.bus.request("demo_echo", args, self.ctx, **kw)

    def ops(self) -> list[dict[str, Any]]:
        return self.kernel.operations(self.lease.run_id)

    def hook_rows(self, operation_id: str) -> list[dict[str, Any]]:
        return self.kernel.store.query("hook_invocations", {"operation_id": operation_id},
                                       order_by=("timing", "position"))


async def harness(
    store_url: str,
    hooks: Sequence[tuple[HookSpec, str, Callable[..., Any]]] = (),
    *,
    tool: CountingTool | None = None,
    roles: Mapping[str, Sequence[str]] | None = None,
    **ctx_kw: Any,
) -> Harness:
    kernel = Kernel(store_url, hooks=[h for h, _, _ in hooks],
                    hook_functions={ref: fn for _, ref, fn in hooks})
    tool = tool or CountingTool()
    kernel.publish("rel", [(spec(), tool)], roles=roles or {"main": ["demo.echo"]})
    lease = await kernel.start_run()
    ctx = kernel.invocation_context(lease, release_id="rel", **ctx_kw)
    return Harness(kernel, tool, lease, ctx)


@contextlib.asynccontextmanager
async def harnesses(store_url: str) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    """A ``harness`` factory on ``store_url`` whose kernels are closed when the block ends (the
    ``make`` fixture of the pipeline, hook and approval tests)."""
    made: list[Harness] = []

    async def factory(*args: Any, **kwargs: Any) -> Harness:
        h = await harness(store_url, *args, **kwargs)
        made.append(h)
        return h

    try:
        yield factory
    finally:
        for h in made:
            h.kernel.close()
