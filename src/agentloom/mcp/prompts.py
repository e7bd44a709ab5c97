"""An MCP server's prompts: ``prompts/list`` and ``prompts/get``, for ``agentloom mcp prompts`` /
``agentloom mcp prompt`` (000 §6.2).

::

    list_prompts(connection) ── every page ──► [McpPrompt(name, title, description, arguments)]
    get_prompt(connection, name, {k: v}) ───► RenderedPrompt(description, messages)

A prompt is a template a user may read and copy; it is never injected into an agent's
instructions or a run's context, and never replaces a system prompt.

Owns: listing and rendering prompts as JSON-able values. Does not own: the connection
(``connection`` / ``discovery.connected``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentloom.mcp.catalog import MAX_PAGES
from agentloom.mcp.connection import McpConnection
from agentloom.mcp.errors import McpError
from agentloom.mcp.profiles import input_required_error
from agentloom.mcp.secrets import scrub_value
from agentloom.mcp.watch import bounded
from mcp import types as mt

__all__ = ["McpPrompt", "RenderedPrompt", "declares_prompts", "get_prompt", "list_prompts"]


@dataclass(frozen=True, slots=True, kw_only=True)
class McpPrompt:
    """One prompt a server lists, with its arguments (``name``, ``description``, ``required``)."""

    server: str
    name: str
    title: str | None
    description: str | None
    arguments: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "name": self.name, "title": self.title,
                "description": self.description, "arguments": [dict(a) for a in self.arguments]}


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderedPrompt:
    """What ``prompts/get`` returned: messages of ``{"role", "content"}`` where content is
    ``{"type": "text", "text"}``, ``{"type": "resource", "uri", "text"}`` or, for binary
    content, ``{"type", "mime_type", "bytes"}`` (its size; the bytes are not kept)."""

    server: str
    name: str
    description: str | None
    messages: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "name": self.name, "description": self.description,
                "messages": [dict(m) for m in self.messages]}


def declares_prompts(connection: McpConnection) -> bool:
    """The server declared the ``prompts`` capability in its ``initialize`` answer."""
    caps = connection.session.server_capabilities
    return caps is not None and caps.prompts is not None


async def list_prompts(connection: McpConnection) -> list[McpPrompt]:
    """Every prompt ``connection``'s server lists, page after page, in its order.

    Raises:
        MCPError: the server answered with a JSON-RPC error.
        McpError: ``MCP_STEP_TIMEOUT``, a page took longer than the server's ``timeout_s``.
    """
    out: list[McpPrompt] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = mt.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        with bounded(connection.server, connection.config, "prompts/list"):
            page = await connection.session.list_prompts(params=params)
        out.extend(McpPrompt(
            server=connection.server, name=p.name, title=p.title, description=p.description,
            arguments=tuple({"name": a.name, "description": a.description,
                             "required": bool(a.required)} for a in p.arguments or ()))
            for p in page.prompts)
        cursor = page.next_cursor
        if cursor is None:
            break
    return out


async def get_prompt(connection: McpConnection, name: str,
                     arguments: dict[str, str]) -> RenderedPrompt:
    """``prompts/get`` of ``name`` with ``arguments``, as plain JSON-able messages.

    Raises:
        MCPError: the server answered with a JSON-RPC error (e.g. an unknown prompt).
        McpError: ``MCP_INPUT_REQUIRED``, a 2026-07-28 server asked for input (never answered);
            ``MCP_STEP_TIMEOUT``, no answer within the server's ``timeout_s``.
    """
    with bounded(connection.server, connection.config, f"prompts/get {name!r}"):
        result = await connection.session.get_prompt(name, arguments or None,
                                                     allow_input_required=True)
    if isinstance(result, mt.InputRequiredResult):
        error = input_required_error(connection.server, f"prompts/get {name!r}", result)
        raise McpError(error.code, error.message)
    # a configured secret in what the server sent never reaches a task or the model
    messages = tuple(scrub_value({"role": m.role, "content": _content(m.content)},
                                 connection.scrub) for m in result.messages)
    description = None if result.description is None else connection.scrub(result.description)
    return RenderedPrompt(server=connection.server, name=name, description=description,
                          messages=messages)


def _content(block: Any) -> dict[str, Any]:
    if isinstance(block, mt.TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, mt.ImageContent | mt.AudioContent):
        return {"type": block.type, "mime_type": block.mime_type, "bytes": len(block.data) * 3 // 4}
    if isinstance(block, mt.EmbeddedResource):
        res = block.resource
        if isinstance(res, mt.TextResourceContents):
            return {"type": "resource", "uri": str(res.uri), "text": res.text}
        return {"type": "resource", "uri": str(res.uri), "mime_type": res.mime_type,
                "bytes": len(res.blob) * 3 // 4}
    dumped: dict[str, Any] = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped
