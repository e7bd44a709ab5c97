"""Planner → Executor delegation as a capability (000 §4, §5.4, §7.1).

A Planner delegates with a tool call ``delegate_<executor> {task}``: a request of event type
``delegation`` with its own hooks. The handler runs the Executor's own loop — its own model
context, its own read-only catalog, the invocation's shared ``/work`` — and returns the
Executor's final answer as the result. An Executor's final model failure is an *error
result* for the Planner, which decides after the whole batch.

The handler is ``recoverable``: it is made of durable calls, so after a crash the pipeline
runs it again, which replays what the Executor committed and continues (no new Attempt).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agentloom.agent.loop import LoopOutcome
from agentloom.agent.spec import delegate_key
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec, legal_exposed_name
from agentloom.errors import OperationError
from agentloom.results import ToolResult

__all__ = ["DELEGATE_SCHEMA", "DelegationHandler", "delegate_spec"]

DELEGATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "minLength": 1,
                            "description": "What the executor should do, self-contained."}},
    "required": ["task"],
    "additionalProperties": False,
}

RunExecutor = Callable[[str, str, CapabilityRequest, AttemptContext], Awaitable[LoopOutcome]]


def delegate_spec(executor: str, description: str, release_id: str) -> CapabilitySpec:
    key = delegate_key(executor)
    return CapabilitySpec(
        resource_version_id=release_id, capability_key=key, kind="builtin",
        exposed_name=legal_exposed_name(key),
        description=description or f"Delegate a self-contained task to the {executor} agent "
        "and get its final answer back.",
        input_schema=DELEGATE_SCHEMA, handler_ref=f"delegate:{executor}")


class DelegationHandler:
    """The raw handler of one ``delegate_<executor>`` capability: runs the Executor's own loop
    for the Planner's ``task`` and returns its final answer (or its failure) as the result.

    Owns: turning one delegation request into one Executor run. Does not own: the Executor's
    model calls, tools or hooks (each is its own operation on the bus). ``recoverable``: after a
    crash the pipeline runs it again, which replays what the Executor committed."""

    rerunnable = False
    recoverable = True

    def __init__(self, executor: str, run_executor: RunExecutor) -> None:
        self.executor = executor
        self._run = run_executor

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        outcome = await self._run(self.executor, str(request.arguments["task"]), request, context)
        if outcome.status == "succeeded":
            return ToolResult.success(outcome.output or "")
        error = outcome.error or OperationError(
            code="EXECUTOR_FAILED", category="unknown", message=f"{self.executor} failed")
        if outcome.status == "cancelled":
            return ToolResult.unknown(error)
        return ToolResult.failure(OperationError(
            code=error.code, category=error.category,
            message=f"executor {self.executor!r} {outcome.status}: {error.message}",
            external_outcome="known"))
