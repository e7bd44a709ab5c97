"""The ``command.<id>`` entries of a YAML agent's ``tools``: a command exposed as a tool
(``commands.<id>.expose_as_tool: true``), submitted to the command bus of the runtime's own
kernel for the principal of the run that calls it (issue 21).

::

    agents: {main: {tools: [command.meeting.move]}}
       │ command_tools(config)        before the runtime is built: (spec, handler) per command
       ▼
    Runtime(...) ──► bind_commands(runtime, config, bound): a PipelineCommandExecutor on
                     runtime.kernel, a CommandBus with the store's receipt log, closed with it
       ▼
    a call of command_meeting_move in run R ─► bus.submit(..., principal = R's actor/project,
    else the local one) ─► the receipt is the tool's result (a token never reaches the model)

Owns: that wiring. Does not own: the bus (``agentloom.command``), executing a command
(``agent.commands``).
"""

from __future__ import annotations

import getpass
from dataclasses import replace

from agentloom.agent.command_receipts import StoreReceiptLog
from agentloom.agent.commands import CommandToolHandler, PipelineCommandExecutor, command_spec
from agentloom.agent.runtime import Runtime
from agentloom.assembly.entries import tool_entries
from agentloom.assembly.imports import user_code
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec
from agentloom.command import CommandBus, CommandRegistry, command_tool_key
from agentloom.config import Config
from agentloom.config.commands import command_entry
from agentloom.refs import Principal
from agentloom.results import ToolResult
from agentloom.store.runs import get_run

__all__ = ["BoundCommands", "RunCommandTool", "bind_commands", "command_tools",
           "local_principal"]

TOOL_RELEASE = "command-tools"  # the resource version of an exposed command's catalog entry


def local_principal() -> Principal:
    """Whom a command acts for in a run without a principal (started from the CLI or Python):
    ``cli:<login name>`` in project ``local``, as ``agentloom ask`` does."""
    return Principal(actor=f"cli:{getpass.getuser()}", project="local")


class BoundCommands:
    """The command bus a runtime gets once it is built (``bind_commands``)."""

    def __init__(self) -> None:
        self.bus: CommandBus | None = None
        self.runtime: Runtime | None = None


class RunCommandTool:
    """``command.<id>`` in an agent's tools: the call is submitted to the bound bus for the
    calling run's principal; the tool result is the receipt (``CommandToolHandler``)."""

    rerunnable = False
    recoverable = False

    def __init__(self, bound: BoundCommands, command: str) -> None:
        self.bound = bound
        self.command = command

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        bus, runtime = self.bound.bus, self.bound.runtime
        if bus is None or runtime is None:
            raise RuntimeError("command tools are used before bind_commands bound their bus")
        run = get_run(runtime.store, context.run_id, lenient=True)
        actor, project = (run.actor, run.project) if run is not None else (None, None)
        principal = (Principal(actor=str(actor), project=str(project)) if actor and project
                     else local_principal())
        return await CommandToolHandler(bus, self.command, principal).invoke_once(request,
                                                                                  context)


def command_tools(config: Config, bound: BoundCommands
                  ) -> dict[str, tuple[CapabilitySpec, RunCommandTool]]:
    """Command id -> the ``(spec, handler)`` of every ``command.<id>`` some agent lists (the
    config's cross-checks made sure each is a command with ``expose_as_tool``)."""
    named = {c for entry in tool_entries(config) if (c := command_entry(entry)) is not None}
    if not named:
        return {}
    registry = CommandRegistry.from_config(config.commands)
    out: dict[str, tuple[CapabilitySpec, RunCommandTool]] = {}
    for command in sorted(named):
        spec = replace(command_spec(registry.get(command), TOOL_RELEASE,
                                    key=command_tool_key(command)),
                       handler_ref=f"command-tool:{command}")  # never the executor's own ref
        out[command] = (spec, RunCommandTool(bound, command))
    return out


def bind_commands(runtime: Runtime, config: Config, bound: BoundCommands) -> None:
    """Give ``bound`` the command bus of ``config``'s commands on ``runtime``'s kernel (its
    executions are recorded operations in each principal's ``@commands`` run, ended when the
    runtime closes)."""
    registry = CommandRegistry.from_config(config.commands)
    executor = PipelineCommandExecutor(runtime.kernel, registry, resolve=user_code(config))
    bound.bus = CommandBus(registry, executor, StoreReceiptLog(runtime.store,
                                                              runtime.kernel.coordinator))
    bound.runtime = runtime
    runtime.on_close(executor.close)
