"""The ``mcp`` kind (``McpHookHandler``, ``McpHookRunner``): ``tools/call`` of a configured
MCP server's tool, the event as its arguments; what the tool answers is the decision.

::

    event ─► the run's session with the server (``McpSessions.get``: the run's lease epoch and
             workspace, the same session its ``mcp.<server>.<tool>`` calls use)
          ─► tools/call <tool> {arguments: the event as JSON (as command / http hooks get it)}
          ─► structuredContent: the decision · else its text content as JSON (empty: allow)
          ─► isError, a JSON-RPC error, no session: a hook failure naming the MCP code
    cancelled (its timeout, the run's stop): the request is abandoned — the client sends
    ``notifications/cancelled``, which does not undo what the server may already have done

The call is the hook's own invocation (its ``hook_invocations`` row), never an operation of the
pipeline: hooks run inside the pipeline's call. Secrets the server's configuration expanded
(``${VAR}``) are scrubbed from what the server says before it is recorded.

Owns: the kind's spec, one ``tools/call`` per hook run and reading its answer. Does not own:
the config model (``config.handler_kinds.McpHandlerConfig``), the server's entry (given to the
spec when the runtime is built: ``server_config``), sessions (the kernel's ``McpSessions``), the
timeout (the ``HookManager``'s; the request's own is a backstop).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentloom.attempts import AttemptContext
from agentloom.config.handler_kinds import McpHandlerConfig
from agentloom.errors import AgentLoomError, redact_secrets
from agentloom.hooks.decision import InvalidDecision
from agentloom.hooks.event import HookEvent
from agentloom.hooks.handlers._common import TEXT_LIMIT, HookRunFailed, event_json, handler_of
from agentloom.hooks.handlers.kind import HookKind
from agentloom.hooks.spec import HookHandler, HookSpec
from agentloom.store.runs import get_run

if TYPE_CHECKING:
    from agentloom.store.ports import Store
    from agentloom.workspace.scope import WorkspaceScope

BACKSTOP_S = 2.0  # the request's own read timeout runs this long past the hook's
# The codes of ``agentloom.mcp.errors`` (not imported: ``mcp`` sits below the pipeline, which
# runs hooks, and implements its port — importing it from here would close a package cycle).
MCP_TOOL_ERROR = "MCP_TOOL_ERROR"
MCP_PROTOCOL_ERROR = "MCP_PROTOCOL_ERROR"


@dataclass(frozen=True, slots=True, kw_only=True)
class McpHookHandler(HookHandler):
    """``tools/call`` of ``tool`` on MCP server ``server`` (its configuration in
    ``server_config``, relative paths read from ``project_dir``), on the run's session.

    Raises:
        ValueError: no ``server`` or no ``tool``.
    """

    kind: Literal["mcp"] = "mcp"
    server: str = ""
    tool: str = ""
    project_dir: str | None = None
    server_config: object = field(default=None, compare=False, repr=False)
    """The server's ``StdioServerConfig`` / ``HttpServerConfig`` (not part of the recorded
    handler: its ``server`` name is); without it the hook fails when it runs."""

    def __post_init__(self) -> None:
        if not (self.server and self.tool):
            raise ValueError("an mcp hook needs a server and a tool")

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "ref": "", "server": self.server, "tool": self.tool}


@dataclass(frozen=True, slots=True)
class HookTool:
    """What ``McpSessions.get`` reads of a tool to find or open the run's session: the server's
    name and entry and the config file's folder (an ``McpTool`` also has what was listed)."""

    server: str
    config: Any
    base_dir: Path
    name: str


class HookSessions(Protocol):
    """The kernel's ``McpSessions``: the run's open session with a server (``McpConnection``:
    ``session``, ``scrub``), opened if needed."""

    async def get(self, tool: Any, context: AttemptContext) -> Any: ...


class RunScopes(Protocol):
    """A run's workspace scopes (``WorkspaceStore``)."""

    def scopes_for_run(self, run_id: str) -> list[WorkspaceScope]: ...


class ScopesHolder(Protocol):
    """Where the runs' workspace scopes are (the kernel's ``RunEnvironment``)."""

    @property
    def scopes(self) -> RunScopes: ...


class McpHookHost(Protocol):
    """What the mcp runner needs of the ``Kernel``: its MCP sessions (made on first use), its
    store (a run's lease epoch, which a session is bound to) and the runs' workspace scopes."""

    @property
    def mcp_sessions(self) -> HookSessions: ...

    @property
    def store(self) -> Store: ...

    @property
    def environment(self) -> ScopesHolder: ...


class McpHookRunner:
    """Runs ``kind: mcp`` hooks on the attached kernel's MCP sessions (see the module
    docstring). Without one, every mcp hook fails (``HOOK_MCP_UNAVAILABLE``)."""

    def __init__(self) -> None:
        self._host: McpHookHost | None = None

    def attach(self, host: McpHookHost) -> None:
        """Call tools on ``host``'s sessions, as the runs' own MCP calls do."""
        self._host = host

    async def run(self, spec: HookSpec, event: HookEvent) -> Any:
        from mcp import MCPError  # the mcp SDK is imported only for an mcp hook
        from mcp import types as mt

        handler, host = handler_of(spec, McpHookHandler), self._host
        where = f"hook {spec.hook_id!r} (mcp.{handler.server}.{handler.tool})"
        if host is None:
            raise HookRunFailed(f"{where}: no MCP sessions are attached to the hook manager",
                                code="HOOK_MCP_UNAVAILABLE")
        if handler.server_config is None:
            raise HookRunFailed(f"{where}: the handler has no configuration of server "
                                f"{handler.server!r}", code="HOOK_MCP_UNAVAILABLE")
        tool = HookTool(server=handler.server, config=handler.server_config,
                        base_dir=Path(handler.project_dir or "."), name=handler.tool)
        try:
            conn = await host.mcp_sessions.get(tool, _context(host, spec, event))
        except AgentLoomError as exc:  # nothing was sent: the server was never asked
            raise HookRunFailed(f"{where}: {exc.code}: {exc.error.message}",
                                code=exc.code) from None
        call = mt.CallToolRequest(params=mt.CallToolRequestParams(
            name=tool.name, arguments=json.loads(event_json(event))))
        try:
            result = await conn.session.send_request(
                call, mt.CallToolResult, request_read_timeout_seconds=spec.timeout_s + BACKSTOP_S)
        except MCPError as exc:
            raise HookRunFailed(
                f"{where}: {MCP_PROTOCOL_ERROR}: the server answered with JSON-RPC error "
                f"{exc.error.code}: {_cut(conn.scrub(exc.error.message))}",
                code=MCP_PROTOCOL_ERROR) from None
        texts = [b.text for b in result.content if isinstance(b, mt.TextContent)]
        if result.is_error:
            text = _cut(conn.scrub("\n".join(texts))) or "(no message)"
            raise HookRunFailed(f"{where}: {MCP_TOOL_ERROR}: the tool reported an error: {text}",
                                code=MCP_TOOL_ERROR)
        if result.structured_content is not None:
            return result.structured_content
        text = "\n".join(texts)
        if not text.strip():
            return {"decision": "allow"}
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidDecision(
                f"{where}: the tool's text content is not JSON ({exc.msg} at position "
                f"{exc.pos}): {_cut(conn.scrub(text))!r}") from None


def _context(host: McpHookHost, spec: HookSpec, event: HookEvent) -> AttemptContext:
    """The run's facts a session is keyed and launched by: its current lease epoch and its
    registered workspace scope (as ``Kernel.claim`` finds it)."""
    run = get_run(host.store, event.run_id, lenient=True)  # its status does not matter here
    epoch = None if run is None else run.lease_epoch
    scopes = [s for s in host.environment.scopes.scopes_for_run(event.run_id) if s.state == "registered"]
    return AttemptContext(
        operation_id=f"{event.operation_id}:{spec.hook_id}", attempt_no=1, run_id=event.run_id,
        role=event.role, deadline=time.time() + spec.timeout_s + BACKSTOP_S,
        workspace_scope_id=scopes[0].workspace_scope_id if scopes else None,
        lease_epoch=epoch if isinstance(epoch, int) else None)


def _cut(text: str) -> str:
    """``text`` without what ``redact_secrets`` recognises, cut to ``TEXT_LIMIT`` characters."""
    text = redact_secrets(text.strip())
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"


def _from_config(config: McpHandlerConfig, base_dir: Path) -> McpHookHandler:
    """Its server's entry is added when the runtime is built (``server_config``)."""
    return McpHookHandler(server=config.server, tool=config.tool, project_dir=str(base_dir))


KIND = HookKind(name="mcp", config=McpHandlerConfig, spec=McpHookHandler,
                from_config=_from_config, runner=McpHookRunner)
