"""An MCP server's resources as one read capability: ``mcp.<server>.resources.read`` (000 §6.2).

::

    build time:  resources/list + resources/templates/list (every page)
                 ─► McpResources (an McpTool: "mcp.<server>.resources.read",
                                  exposed "mcp__<server>__resources_read", input {uri})
                    its description lists what was found (at most MAX_LISTED, the rest counted)
    a run:       the model calls it ─► pipeline (hooks, Attempt, recording)
                 ─► McpResourceHandler ─► run's session (pool) ─► resources/read
                 ─► ToolResult: text contents as text blocks; blobs described, not inlined
                    (a 2026-07-28 ``input_required`` answer: failed, MCP_INPUT_REQUIRED)

Nothing is ever read into the context unless the model calls the capability: the listing is
names and URIs only. Only a server that declares the ``resources`` capability gets one. Like
every MCP call it is neither ``rerunnable`` nor ``recoverable`` (the handlers of built-in
``fs.read`` are marked the same way): a read cut off by a crash is ``unknown``, not re-sent by
recovery; ``readOnlyHint`` is set for display only.

Owns: listing resources at build time, the read capability and its handler. Does not own:
sessions (``pool``), recording, hooks, retries (the pipeline).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import TypeAdapter

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.config.mcp import HttpServerConfig, StdioServerConfig
from agentloom.errors import AgentLoomError, ExternalOutcome
from agentloom.mcp.catalog import MAX_PAGES, McpTool
from agentloom.mcp.connection import McpConnection
from agentloom.mcp.errors import (
    MCP_CALL_TIMEOUT,
    MCP_CONNECTION_LOST,
    MCP_PROTOCOL_ERROR,
    McpError,
    call_error,
)
from agentloom.mcp.profiles import input_required_error
from agentloom.mcp.watch import bounded
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.results import ContentBlock, TextBlock, ToolResult
from mcp import MCPError
from mcp import types as mt

if TYPE_CHECKING:
    from agentloom.mcp.pool import McpSessions

__all__ = ["MAX_LISTED", "RESOURCES_READ", "McpResourceHandler", "McpResources", "list_resources"]

RESOURCES_READ = "resources.read"
"""The tool part of the capability key: ``mcp.<server>.resources.read``."""
MAX_LISTED = 50
"""Resources and templates named in the capability's description; the rest are counted."""
MAX_LINE = 200
_NOT_STARTED_CODES = {mt.INVALID_REQUEST, mt.METHOD_NOT_FOUND, mt.INVALID_PARAMS, mt.PARSE_ERROR}
READ_ANSWER: TypeAdapter[mt.ReadResourceResult | mt.InputRequiredResult] = TypeAdapter(
    mt.ReadResourceResult | mt.InputRequiredResult)
"""A ``resources/read`` answer: the contents, or (2026-07-28) ``input_required``."""

INPUT_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"uri": {"type": "string", "description": (
        "The URI of one listed resource, or a listed template with its {placeholders} filled")}},
    "required": ["uri"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class McpResources(McpTool):
    """``mcp.<server>.resources.read``: what ``resources/list`` and ``resources/templates/list``
    returned when the runtime was built (JSON objects as the server sent them), and the count
    of those left out of the description (``more``)."""

    resources: tuple[Mapping[str, Any], ...] = ()
    templates: tuple[Mapping[str, Any], ...] = ()

    def handler(self, sessions: McpSessions) -> CapabilityHandler:
        return McpResourceHandler(self, sessions)

    def to_dict(self) -> dict[str, Any]:
        return {**McpTool.to_dict(self), "resources": [dict(r) for r in self.resources],
                "templates": [dict(t) for t in self.templates]}


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_LINE else flat[:MAX_LINE - 1] + "…"


def describe(server: str, resources: list[mt.Resource],
             templates: list[mt.ResourceTemplate]) -> str:
    """The capability's description: what it does and what can be read (bounded)."""
    lines = [f"Read one resource of MCP server {server!r} by its URI (resources/read). "
             "Nothing is read unless you call this."]
    shown = 0
    if resources:
        lines.append("Resources:")
        for res in resources[:MAX_LISTED]:
            extra = ", ".join(x for x in (res.name, res.mime_type) if x)
            about = f": {res.description}" if res.description else ""
            lines.append(_line(f"- {res.uri} ({extra}){about}"))
            shown += 1
    if templates and shown < MAX_LISTED:
        lines.append("Resource templates (fill in the {placeholders} to form a URI):")
        for tpl in templates[:MAX_LISTED - shown]:
            about = f": {tpl.description}" if tpl.description else ""
            lines.append(_line(f"- {tpl.uri_template} ({tpl.name}){about}"))
            shown += 1
    rest = len(resources) + len(templates) - shown
    if rest > 0:
        lines.append(f"… and {rest} more not listed here.")
    if not resources and not templates:
        lines.append("The server listed no resources when this agent was built.")
    return "\n".join(lines)


async def _pages(connection: McpConnection, list_page: Any, step: str,
                 field_name: str) -> list[Any]:
    out: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = mt.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        with bounded(connection.server, connection.config, step):
            page = await list_page(params=params)
        out.extend(getattr(page, field_name))
        cursor = page.next_cursor
        if cursor is None:
            break
    return out


def declares_resources(connection: McpConnection) -> bool:
    """The server declared the ``resources`` capability in its ``initialize`` answer."""
    caps = connection.session.server_capabilities
    return caps is not None and caps.resources is not None


async def list_resources(connection: McpConnection, base_dir: Path) -> McpResources | None:
    """The read capability of ``connection``'s server, listing its resources and templates
    (every page); ``None`` when the server does not declare ``resources``.

    Raises:
        McpError: ``MCP_PROTOCOL_ERROR`` when a listing is answered with a JSON-RPC error,
            ``MCP_STEP_TIMEOUT`` when a page took longer than the server's ``timeout_s``.
    """
    if not declares_resources(connection):
        return None
    session = connection.session
    try:
        resources: list[mt.Resource] = await _pages(
            connection, session.list_resources, "resources/list", "resources")
        templates: list[mt.ResourceTemplate] = await _pages(
            connection, session.list_resource_templates, "resources/templates/list",
            "resource_templates")
    except MCPError as exc:
        raise McpError(MCP_PROTOCOL_ERROR, connection.scrub(
            f"MCP server {connection.server!r} declares resources but could not list them: "
            f"JSON-RPC error {exc.error.code}: {exc.error.message}")) from None
    return reader(connection.server, connection.config, base_dir, resources, templates)


def reader(server: str, config: StdioServerConfig | HttpServerConfig, base_dir: Path,
           resources: list[mt.Resource], templates: list[mt.ResourceTemplate]) -> McpResources:
    """The ``McpResources`` of ``server`` from what it listed."""
    def dump(item: mt.Resource | mt.ResourceTemplate) -> dict[str, Any]:
        return item.model_dump(mode="json", by_alias=True, exclude_none=True)

    return McpResources(
        server=server, config=config, base_dir=base_dir, name=RESOURCES_READ,
        title=f"Read a resource of {server}", description=describe(server, resources, templates),
        input_schema=INPUT_SCHEMA, annotations={"readOnlyHint": True},
        resources=tuple(dump(r) for r in resources), templates=tuple(dump(t) for t in templates))


class McpResourceHandler(CapabilityHandler):
    """Reads one resource on the session of the call's run (``McpSessions``)."""

    rerunnable = False
    recoverable = False

    def __init__(self, reader: McpResources, sessions: McpSessions) -> None:
        self.reader = reader
        self.sessions = sessions

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        reader = self.reader
        try:
            conn = await self.sessions.get(reader, context)
        except AgentLoomError as exc:  # nothing was sent
            return ToolResult(status="failed", error=exc.error)
        uri = str(request.arguments["uri"])
        timeout = reader.config.timeout_s or max(context.remaining(), 0.001)
        read = mt.ReadResourceRequest(params=mt.ReadResourceRequestParams(uri=uri))
        started = time.monotonic()
        try:
            result = await conn.session.send_request(read, READ_ANSWER,
                                                     request_read_timeout_seconds=timeout)
        except MCPError as exc:
            return _error(conn, reader, uri, exc, timeout)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            return ToolResult.unknown(call_error(MCP_CONNECTION_LOST, (
                f"the session with MCP server {reader.server!r} ended during resources/read "
                f"({type(exc).__name__})"), outcome="unknown"))
        meta = {"mcp": {"connection": conn.record.to_dict(), "resource": uri,
                        "duration_s": round(time.monotonic() - started, 6)}}
        if isinstance(result, mt.InputRequiredResult):
            return ToolResult(status="failed", metadata=meta, error=input_required_error(
                reader.server, f"resources/read {uri!r}", result))
        # a configured secret in what the server sent never reaches the record or the model
        return ToolResult(status="succeeded", metadata=meta, content=tuple(
            TextBlock(conn.scrub(b.text)) if isinstance(b, TextBlock) else b
            for b in contents(result)))


def contents(result: mt.ReadResourceResult) -> list[ContentBlock]:
    """Text contents as text blocks; a blob as a line naming its URI, MIME type and size (its
    bytes are not inlined)."""
    out: list[ContentBlock] = []
    for item in result.contents:
        if isinstance(item, mt.TextResourceContents):
            out.append(TextBlock(item.text))
        else:
            size = len(item.blob) * 3 // 4 - item.blob[-2:].count("=")
            out.append(TextBlock(f"[resource {item.uri}: binary ({item.mime_type or 'unknown type'}"
                                 f"), {size} bytes, not inlined]"))
    return out


def _error(conn: McpConnection, reader: McpResources, uri: str, exc: MCPError,
           timeout: float) -> ToolResult:
    code, message = exc.error.code, conn.scrub(exc.error.message)
    if code == mt.REQUEST_TIMEOUT:
        return ToolResult.unknown(call_error(MCP_CALL_TIMEOUT, (
            f"MCP server {reader.server!r} did not answer resources/read {uri!r} within "
            f"{timeout:g} s; the request was cancelled"), outcome="unknown"))
    if code == mt.CONNECTION_CLOSED:
        return ToolResult.unknown(call_error(MCP_CONNECTION_LOST, (
            f"the connection to MCP server {reader.server!r} closed during resources/read: "
            f"{message}"), outcome="unknown"))
    # a read has no effect to be unsure of: an answered error is a known outcome
    outcome: ExternalOutcome = "not_started" if code in _NOT_STARTED_CODES else "known"
    return ToolResult(status="failed", error=call_error(MCP_PROTOCOL_ERROR, (
        f"MCP server {reader.server!r} answered resources/read {uri!r} with JSON-RPC error "
        f"{code}: {message[:2000]}"), outcome=outcome, details={"jsonrpc_code": code}))
