"""Commands run through the recorded pipeline: the adapter of ``agentloom.command``'s
``CommandExecutor``, the Python handler of a command, and a command exposed as a tool.

Each command is published on a ``Kernel`` as the capability ``command-run.<id>`` (role
``@commands``); an execution is one ``bus.request`` of it — one recorded operation with its
hooks, Attempt and unknown outcome, whose logical key is ``command:<operation id>`` — in a run
of the submitting principal (agent ``@commands``, no workspace; made on first use and ended
by ``close``). Reconciling reads that operation back (``recorded``), by the principal's runs
only.

Owns: that mapping (pipeline outcome → ``Execution``: ``succeeded`` → succeeded; denied before
execution or a ``not_started`` error → not_executed; anything else → unknown), importing
``handler.ref`` and calling it, and ``command_tool``. Does not own: receipts, confirmation or
validation (``agentloom.command.CommandBus``).
"""

from __future__ import annotations

import asyncio
import contextvars
import pkgutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec, legal_exposed_name, thaw_json
from agentloom.command import (
    COMMAND_RUN_PREFIX,
    CommandBus,
    CommandNotExecuted,
    CommandRegistry,
    CommandSpec,
    Execution,
    Recorded,
    command_run_key,
    command_tool_key,
)
from agentloom.errors import ConfigError, ExternalOutcome, OperationError
from agentloom.pipeline.records import stored_envelope
from agentloom.refs import OwnerRef, Principal
from agentloom.results import JsonBlock, OperationResult, ToolResult
from agentloom.store import Store
from agentloom.store.operations import find_operation
from agentloom.store.runs import principal_agent_runs

if TYPE_CHECKING:
    from agentloom.kernel import Kernel, RunLease
    from agentloom.pipeline.context import InvocationContext

__all__ = ["COMMAND_AGENT", "CommandContext", "CommandToolHandler", "PipelineCommandExecutor",
           "PythonCommandHandler", "RecordedCommands", "command_tool", "recorded_command"]

COMMAND_AGENT = "@commands"
"""The agent (and role) name of the runs commands execute in; no config agent can have it."""
_LOGICAL = "command:"
_CONTEXT_REFRESH_S = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandContext:
    """What a command handler is told: its command, the command operation id (an
    idempotency key for the outside world), whom it runs for, the pipeline's Attempt."""

    command: str
    operation_id: str
    principal: Principal | None
    attempt: AttemptContext


_current: contextvars.ContextVar[tuple[str, Principal] | None] = contextvars.ContextVar(
    "agentloom_command", default=None)


class PythonCommandHandler:
    """Calls ``function(params, ctx)`` (sync functions in a worker thread) as the raw handler
    of ``command-run.<id>``: its return value (JSON) is the result; ``CommandNotExecuted`` is a
    failure that certainly did nothing (``not_started``); any other exception leaves the
    outcome ``unknown`` — it may have had an effect (003 F10)."""

    rerunnable = False
    recoverable = False

    def __init__(self, command: str, function: Callable[..., Any]) -> None:
        self.command = command
        self.function = function
        self._is_async = asyncio.iscoroutinefunction(function)

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        current = _current.get()
        ctx = CommandContext(command=self.command,
                             operation_id=current[0] if current else request.operation_id,
                             principal=current[1] if current else None, attempt=context)
        params = thaw_json(request.arguments)
        try:
            if self._is_async:
                value = await self.function(params, ctx)
            else:
                value = await asyncio.to_thread(self.function, params, ctx)
        except CommandNotExecuted as exc:
            return ToolResult(status="failed", error=OperationError(
                code=exc.code, category="business", message=str(exc),
                external_outcome="not_started"))
        except Exception as exc:
            return ToolResult.unknown(OperationError(
                code="COMMAND_HANDLER_FAILED", category="unknown",
                message=f"{type(exc).__name__}: {exc}", external_outcome="unknown"))
        return ToolResult(status="succeeded", content=() if value is None else (JsonBlock(value),))


def command_spec(spec: CommandSpec, release_id: str, *, key: str | None = None) -> CapabilitySpec:
    """The catalog entry of executing command ``spec`` (``key``, default
    ``command-run.<id>``), its params as input schema."""
    key = key or command_run_key(spec.id)
    return CapabilitySpec(
        resource_version_id=release_id, capability_key=key, kind="hosted",
        exposed_name=legal_exposed_name(key),
        description=spec.description or f"the command {spec.id}",
        input_schema=thaw_json(spec.params), handler_ref=f"command:{spec.id}")


def execution_of(result: OperationResult) -> Execution:
    """The ``Execution`` a pipeline envelope comes to (see the module docstring)."""
    error = result.error
    detail = None if error is None else {"code": error.code, "message": error.message}
    if result.outcome == "succeeded":
        value = None
        if result.result is not None:
            blocks = [b for b in result.result.content if isinstance(b, JsonBlock)]
            value = blocks[0].data if blocks else result.result.text() or None
        return Execution(outcome="succeeded", result=value,
                         pipeline_operation_id=result.operation_id)
    if result.outcome == "denied_before_execution" or (
            result.outcome in ("failed", "cancelled") and error is not None
            and error.external_outcome == "not_started"):
        return Execution(outcome="not_executed", reason=result.reason or (
            error.message if error else "nothing ran"), error=detail,
            pipeline_operation_id=result.operation_id)
    return Execution(outcome="unknown", reason=result.describe(), error=detail,
                     pipeline_operation_id=result.operation_id)


class PipelineCommandExecutor:
    """Runs the commands ``registry`` holds when it is made on ``kernel``, each as one
    recorded operation.

    ``functions`` maps a handler ``ref`` to its function (default: imported from
    ``module:attr``). Call ``close`` to end the runs it made.

    Raises (on construction):
        ConfigError: ``CONFIG_IMPORT`` — a handler ref that does not import, naming
            ``commands.<id>.handler.ref``.
    """

    def __init__(self, kernel: Kernel, registry: CommandRegistry, *,
                 release_id: str = "commands",
                 functions: Mapping[str, Callable[..., Any]] | None = None,
                 resolve: Callable[[str], Callable[..., Any]] | None = None) -> None:
        self.kernel = kernel
        self.release_id = release_id
        self._runs: dict[Principal, tuple[RunLease, InvocationContext, float]] = {}
        self._lock = asyncio.Lock()
        pairs = []
        for spec in registry.specs():
            ref = spec.handler.ref
            function = (functions or {}).get(ref)
            if function is None:
                try:
                    function = (resolve or import_ref)(ref)
                except Exception as exc:  # user code: any failure to import is a config problem
                    raise ConfigError(f"commands.{spec.id}.handler.ref: cannot use {ref!r} "
                                      f"({type(exc).__name__}: {exc})",
                                      code="CONFIG_IMPORT") from None
            pairs.append((command_spec(spec, release_id), PythonCommandHandler(spec.id, function)))
        self._names = {spec.id: legal_exposed_name(command_run_key(spec.id))
                       for spec in registry.specs()}
        kernel.publish(release_id, pairs, roles={COMMAND_AGENT: [p[0].capability_key
                                                                 for p in pairs]})

    async def _context(self, principal: Principal) -> InvocationContext:
        held = self._runs.get(principal)
        now = time.time()
        if held is not None and held[2] > now + _CONTEXT_REFRESH_S:
            return held[1]
        async with self._lock:
            held = self._runs.get(principal)
            if held is None:
                lease = await self.kernel.start_run(
                    data={"agent": COMMAND_AGENT, "release_id": self.release_id},
                    owner=OwnerRef(kind="agent", id=COMMAND_AGENT), workspace=False,
                    principal=principal)
            else:
                lease = held[0]
            ctx = self.kernel.invocation_context(lease, release_id=self.release_id,
                                                 role=COMMAND_AGENT, private_context=False)
            self._runs[principal] = (lease, ctx, ctx.deadline)
            return ctx

    async def execute(self, spec: CommandSpec, params: Mapping[str, Any], *,
                      operation_id: str, principal: Principal) -> Execution:
        ctx = await self._context(principal)
        token = _current.set((operation_id, principal))
        try:
            result = await self.kernel.bus.request(
                self._names[spec.id], thaw_json(params), ctx,
                logical_key=f"{_LOGICAL}{operation_id}",
                prevalidated=True)  # the command bus checked them against the same schema
        finally:
            _current.reset(token)
        return execution_of(result)

    def recorded(self, operation_id: str, principal: Principal) -> Recorded | None:
        return recorded_command(self.kernel.store, operation_id, principal)

    async def close(self) -> None:
        """End the runs this executor made (succeeded)."""
        for lease, _, _ in self._runs.values():
            await self.kernel.end_run(lease, "succeeded")
        self._runs.clear()


def recorded_command(store: Store, operation_id: str, principal: Principal) -> Recorded | None:
    """What the pipeline recorded of ``principal``'s command operation ``operation_id``:
    looked up in that principal's ``@commands`` runs only (another's is None)."""
    for run in principal_agent_runs(store, principal, COMMAND_AGENT):
        op = find_operation(store, run.run_id, f"{_LOGICAL}{operation_id}")
        if op is None:
            continue
        command = op.capability_key.removeprefix(COMMAND_RUN_PREFIX)
        envelope = stored_envelope(op.to_row(), store)
        return Recorded(command=command, principal=principal,
                        params=_arguments(envelope),
                        execution=None if envelope is None else execution_of(envelope))
    return None


class RecordedCommands:
    """A ``CommandExecutor`` that only reads (``agentloom commands receipt``): it reconciles
    receipts from the store and refuses to execute."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def execute(self, spec: CommandSpec, params: Mapping[str, Any], *,
                      operation_id: str, principal: Principal) -> Execution:
        raise RuntimeError("RecordedCommands reads receipts; it runs nothing")

    def recorded(self, operation_id: str, principal: Principal) -> Recorded | None:
        return recorded_command(self.store, operation_id, principal)


def _arguments(envelope: OperationResult | None) -> dict[str, Any]:
    if envelope is None:
        return {}
    return dict(envelope.executed_arguments or envelope.proposed_arguments or {})


def import_ref(ref: str) -> Callable[..., Any]:
    """The function ``module:attr`` names (the module on ``sys.path``; ``pkgutil.resolve_name``).

    Raises:
        ImportError, AttributeError: the module does not import, or lacks the attribute.
        TypeError: what ``ref`` names is not callable.
    """
    target: Any = pkgutil.resolve_name(ref)
    if not callable(target):
        raise TypeError(f"{ref!r} is not callable")
    return target  # type: ignore[no-any-return]


class CommandToolHandler:
    """``command.<id>`` as an agent's tool: the call is submitted to the command bus for the
    run's principal; the tool result is the receipt (a ``dangerous`` command comes back
    ``accepted`` — a person confirms it, never the model)."""

    rerunnable = False
    recoverable = False

    def __init__(self, bus: CommandBus, command: str, principal: Principal) -> None:
        self.bus = bus
        self.command = command
        self.principal = principal

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        receipt = await self.bus.submit(self.command, thaw_json(request.arguments),
                                        principal=self.principal)
        data = receipt.to_dict()
        data.pop("confirmation", None)  # the token is for a person, not for the model
        if isinstance(data["result"], dict):
            data["result"].pop("token", None)
        if receipt.state in ("committed", "accepted"):
            return ToolResult.success(data)
        outcome: ExternalOutcome = "not_started" if receipt.state == "rejected" else "unknown"
        error = OperationError(code=(receipt.error or {}).get("code", "COMMAND_" + receipt.state.upper()),
                               category="business" if outcome == "not_started" else "unknown",
                               message=receipt.reason or receipt.state,
                               external_outcome=outcome)
        return ToolResult(status="failed" if outcome == "not_started" else "unknown", error=error,
                          metadata={"receipt": data})


def command_tool(bus: CommandBus, command: str, principal: Principal, *,
                 release_id: str) -> tuple[CapabilitySpec, CommandToolHandler]:
    """The ``(spec, handler)`` pair that lists command ``command`` in an agent's tools
    (``Kernel.publish`` / ``AgentSpec.tools``) under the capability key ``command.<id>``.

    Raises:
        KeyError: no such command; ValueError: it is not ``expose_as_tool``.
    """
    spec = bus.registry.get(command)
    if not spec.expose_as_tool:
        raise ValueError(f"command {command!r} is not exposed as a tool (expose_as_tool: true)")
    # its own handler ref: the executor's ``command:<id>`` runs the function itself, and a
    # tool must never reach it around the bus
    tool = replace(command_spec(spec, release_id, key=command_tool_key(spec.id)),
                   handler_ref=f"command-tool:{spec.id}")
    return tool, CommandToolHandler(bus, command, principal)
