"""Helpers of the approval tests: hooks that count their runs, a tool that counts its
executions in a file, and a second kernel on the same store (another process picking the
run up)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tests.pipeline.support import CountingTool, Harness, spec

from agentloom.approvals import ApprovalPending
from agentloom.hooks.spec import HookSpec
from agentloom.kernel import Kernel
from agentloom.results import OperationResult, ToolResult

Hooks = Sequence[tuple[HookSpec, str, Callable[..., Any]]]


@dataclass
class Counted:
    """A hook function that answers ``answer`` and counts its runs."""

    answer: Any
    runs: list[str] = field(default_factory=list)

    def __call__(self, event: Any) -> Any:
        self.runs.append(event["operation_id"])
        return self.answer


def file_counting_tool(counter: Path) -> CountingTool:
    """A tool whose every execution appends a line to ``counter`` (the side effect)."""

    def effect(args: dict[str, Any], _: Any) -> ToolResult:
        with counter.open("a", encoding="utf-8") as out:
            out.write(f"{args['text']}\n")
        return ToolResult.success({"echo": args})

    return CountingTool(behaviour=effect)


def executions(counter: Path) -> list[str]:
    return counter.read_text(encoding="utf-8").splitlines() if counter.exists() else []


async def pending(h: Harness, text: str = "hi", key: str = "k1") -> ApprovalPending:
    """Call ``demo_echo`` expecting it to wait for a person; the signal it raised."""
    try:
        result = await h.call({"text": text}, logical_key=key)
    except ApprovalPending as signal:
        return signal
    raise AssertionError(f"the call did not wait for a person: {result.outcome}")


async def elsewhere(h: Harness, hooks: Hooks, tool: CountingTool, **ctx: Any) -> Harness:
    """Another kernel on ``h``'s store, as another process: the same release and hooks, the
    run claimed under a new lease epoch."""
    kernel = Kernel(h.kernel.store.url, hooks=[s for s, _, _ in hooks],
                    hook_functions={ref: fn for _, ref, fn in hooks})
    kernel.publish("rel", [(spec(), tool)], roles={"main": ["demo.echo"]})
    lease = kernel.claim(h.lease.run_id)
    context = replace(kernel.invocation_context(lease, release_id="rel"), **ctx)
    return Harness(kernel, tool, lease, context)


async def replay(h: Harness, key: str = "k1", text: str = "hi") -> OperationResult:
    result: OperationResult = await h.call({"text": text}, logical_key=key)
    return result
