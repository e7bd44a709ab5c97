"""``tools/call`` as a ``CapabilityHandler``: an MCP call is an operation of the one pipeline.

::

    pipeline (intent, before-hooks, Attempt) ─► McpToolHandler.invoke_once(frozen request)
        ─► run's session (pool) ─► tools/call (progress → bus ``mcp.progress``)
        ─► ToolResult:  succeeded           content / structuredContent (checked: outputSchema)
                        failed MCP_TOOL_ERROR     isError: true — a result the model sees
                        failed MCP_PROTOCOL_ERROR a JSON-RPC error answered the request
                        failed MCP_AUTH_REQUIRED  HTTP 401: `agentloom mcp login` (oauth)
                        failed MCP_OUTPUT_INVALID structuredContent missing / not the schema
                        failed MCP_INPUT_REQUIRED a 2026-07-28 input_required (never answered)
                        unknown MCP_CALL_TIMEOUT  timeout_s passed, notifications/cancelled sent
                        unknown MCP_CONNECTION_LOST the session ended mid-call
                        failed MCP_SERVER_EXITED  not sent: the server exited and the run's
                                                  one reopen is spent (``pool``)
    ─► raw saved ─► after-hooks ─► effective result

Neither ``rerunnable`` nor ``recoverable``: an Attempt cut off by a crash is ``unknown`` and is
never sent again by recovery (the pipeline's retry policy alone may retry a *transport* fault,
and only one it classifies as retryable). A stop cancels the call: the ``mcp`` client sends
``notifications/cancelled``, which does not undo what the server may already have done.

Owns: one call and the mapping of its answer to a ``ToolResult``. Does not own: sessions
(``pool``), the catalog (``catalog``), retries, hooks, recording (the pipeline).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
from pydantic import TypeAdapter

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import ArgumentValidator, compile_schema, thaw_json
from agentloom.errors import AgentLoomError, ExternalOutcome, OperationError
from agentloom.mcp.catalog import McpTool, list_tools
from agentloom.mcp.connection import McpConnection
from agentloom.mcp.errors import (
    AUTH_REQUIRED_JSONRPC,
    MCP_AUTH_REQUIRED,
    MCP_CALL_TIMEOUT,
    MCP_CONNECTION_LOST,
    MCP_OUTPUT_INVALID,
    MCP_PROTOCOL_ERROR,
    MCP_TOOL_ERROR,
    McpError,
    call_error,
)
from agentloom.mcp.pool import McpSessions
from agentloom.mcp.profiles import input_required_error, modern
from agentloom.mcp.secrets import scrub_value
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.results import ContentBlock, JsonBlock, ResultStatus, TextBlock, ToolResult
from mcp import MCPError
from mcp import types as mt

__all__ = ["McpToolHandler", "result_of"]

MAX_ERROR_TEXT = 2000
MAX_PROGRESS_KEPT = 20
CALL_ANSWER: TypeAdapter[mt.CallToolResult | mt.InputRequiredResult] = TypeAdapter(
    mt.CallToolResult | mt.InputRequiredResult)
"""A ``tools/call`` answer: a result, or (2026-07-28) ``input_required``."""
_NOT_STARTED_CODES = {mt.INVALID_REQUEST, mt.METHOD_NOT_FOUND, mt.INVALID_PARAMS, mt.PARSE_ERROR,
                      AUTH_REQUIRED_JSONRPC, mt.HEADER_MISMATCH,
                      mt.MISSING_REQUIRED_CLIENT_CAPABILITY, mt.UNSUPPORTED_PROTOCOL_VERSION}


class McpToolHandler(CapabilityHandler):
    """Calls one MCP tool on the session of the call's run (``McpSessions``)."""

    rerunnable = False
    recoverable = False

    def __init__(self, tool: McpTool, sessions: McpSessions) -> None:
        self.tool = tool
        self.sessions = sessions
        self._output = (ArgumentValidator(compile_schema(tool.output_schema, origin="mcp"))
                        if tool.output_schema is not None else None)

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        tool = self.tool
        try:
            conn = await self.sessions.get(tool, context)
        except AgentLoomError as exc:  # nothing was sent: the server was never asked
            return ToolResult(status="failed", error=exc.error)
        reported: list[dict[str, Any]] = []
        notify = self.sessions.notify

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            event = {"progress": progress, "total": total, "message": message}
            if len(reported) < MAX_PROGRESS_KEPT:
                reported.append(event)
            notify("mcp.progress", {"run_id": context.run_id, "operation_id": context.operation_id,
                                    "capability": tool.capability_key, **event})

        timeout = tool.config.timeout_s or max(context.remaining(), 0.001)
        call = mt.CallToolRequest(params=mt.CallToolRequestParams(
            name=tool.name, arguments=thaw_json(request.arguments)))
        started = time.monotonic()

        async def send() -> mt.CallToolResult | mt.InputRequiredResult:
            return await conn.session.send_request(
                call, CALL_ANSWER, request_read_timeout_seconds=timeout,
                progress_callback=on_progress)

        try:
            try:
                result = await send()
            except MCPError as exc:
                if exc.error.code != mt.HEADER_MISMATCH or not modern(conn.record.protocol_version):
                    raise
                with anyio.move_on_after(timeout):
                    await _relist(conn, tool, exc)
                result = await send()
        except MCPError as exc:
            return ToolResult(status=_failed_or_unknown(exc), error=_call_error(conn, tool, exc, timeout))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            return ToolResult.unknown(call_error(MCP_CONNECTION_LOST, (
                f"the session with MCP server {tool.server!r} ended during the call "
                f"({type(exc).__name__}); it may have taken effect"), outcome="unknown"))
        meta = {"mcp": {"connection": conn.record.to_dict(), "tool": tool.name,
                        "duration_s": round(time.monotonic() - started, 6),
                        **({"progress": reported} if reported else {})}}
        if isinstance(result, mt.InputRequiredResult):
            return ToolResult(status="failed", metadata=meta, error=input_required_error(
                tool.server, f"tools/call {tool.name!r}", result))
        return self.result(conn, result, meta)

    def result(self, conn: McpConnection, result: mt.CallToolResult,
               meta: dict[str, Any]) -> ToolResult:
        """The ``ToolResult`` of a ``CallToolResult``: ``isError`` is a failed result (the tool
        said so), ``structuredContent`` is checked against the tool's output schema."""
        return result_of(self.tool, result, meta, output=self._output, scrub=conn.scrub)


async def _relist(conn: McpConnection, tool: McpTool, mismatch: MCPError) -> None:
    """2026-07-28 ``HeaderMismatch``: the server refused the call before running it, because
    this session has not listed the tool (its ``x-mcp-header`` arguments travel as HTTP
    headers the session learns from ``tools/list``). List every page on the session, once —
    the recovery of the SDK's ``Client`` — so the call can be sent again."""
    try:
        await list_tools(conn, tool.base_dir)
    except (MCPError, McpError):  # refused, or no answer within the server's timeout_s
        raise mismatch from None


def result_of(tool: McpTool, result: mt.CallToolResult, meta: dict[str, Any], *,
              output: ArgumentValidator | None,
              scrub: Callable[[str], str] | None = None) -> ToolResult:
    """Map one ``CallToolResult`` of ``tool`` to a ``ToolResult`` (see the module docstring)."""
    content = _blocks(result.content)
    if scrub is not None:  # a configured secret never reaches the record or the model (#34)
        content = [_scrubbed(b, scrub) for b in content]
    if result.is_error:
        text = "\n".join(b.text for b in content if isinstance(b, TextBlock)) or "(no message)"
        return ToolResult(status="failed", content=tuple(content), metadata=meta,
                          error=call_error(MCP_TOOL_ERROR, (
                              f"MCP tool {tool.capability_key} reported an error: "
                              f"{text[:MAX_ERROR_TEXT]}"), outcome="known"))
    structured = result.structured_content
    if output is not None:
        if structured is None:
            return ToolResult(status="failed", metadata=meta, error=call_error(
                MCP_OUTPUT_INVALID, f"MCP tool {tool.capability_key} declares an output schema "
                "but returned no structuredContent", outcome="known"))
        problems = output.errors(structured)
        if problems:
            return ToolResult(status="failed", metadata=meta, error=call_error(
                MCP_OUTPUT_INVALID, f"MCP tool {tool.capability_key} returned structuredContent "
                f"that does not match its output schema: {'; '.join(problems[:5])}",
                outcome="known", details={"problems": problems[:20]}))
    if structured is not None:
        # the text block of structured output repeats the JSON: keep the structured value once
        kept = scrub_value(structured, scrub) if scrub is not None else structured
        content = [JsonBlock(kept), *(b for b in content if not isinstance(b, TextBlock))]
    return ToolResult(status="succeeded", content=tuple(content), metadata=meta)


def _scrubbed(block: ContentBlock, scrub: Callable[[str], str]) -> ContentBlock:
    if isinstance(block, TextBlock):
        return TextBlock(scrub(block.text))
    if isinstance(block, JsonBlock):
        return JsonBlock(scrub_value(block.data, scrub))
    return block


def _blocks(content: list[mt.ContentBlock]) -> list[ContentBlock]:
    """MCP content as ``ToolResult`` blocks: text as text; images, audio and embedded binary
    resources as a short description (their bytes are not kept); resource links as JSON."""
    out: list[ContentBlock] = []
    for block in content:
        if isinstance(block, mt.TextContent):
            out.append(TextBlock(block.text))
        elif isinstance(block, mt.ImageContent | mt.AudioContent):
            out.append(TextBlock(f"[{block.type} {block.mime_type}, {len(block.data) * 3 // 4} bytes "
                                 "not kept]"))
        elif isinstance(block, mt.ResourceLink):
            out.append(JsonBlock({"type": "resource_link", "uri": str(block.uri), "name": block.name,
                                  "mimeType": block.mime_type}))
        elif isinstance(block, mt.EmbeddedResource):
            res = block.resource
            if isinstance(res, mt.TextResourceContents):
                out.append(TextBlock(res.text))
            else:
                out.append(TextBlock(f"[resource {res.uri} ({res.mime_type}), bytes not kept]"))
        else:
            out.append(JsonBlock(block.model_dump(mode="json", by_alias=True, exclude_none=True)))
    return out


def _failed_or_unknown(exc: MCPError) -> ResultStatus:
    return "unknown" if _outcome(exc.error.code) == "unknown" else "failed"


def _outcome(code: int) -> ExternalOutcome:
    return "not_started" if code in _NOT_STARTED_CODES else "unknown"


def _call_error(conn: McpConnection, tool: McpTool, exc: MCPError, timeout: float) -> OperationError:
    code, message = exc.error.code, conn.scrub(exc.error.message)
    if code == AUTH_REQUIRED_JSONRPC:  # HTTP 401 (``oauth``): the tool did not run
        return call_error(MCP_AUTH_REQUIRED, message, outcome="not_started")
    if code == mt.REQUEST_TIMEOUT:
        return call_error(MCP_CALL_TIMEOUT, (
            f"MCP tool {tool.capability_key} did not answer within {timeout:g} s; the call was "
            "cancelled (notifications/cancelled), which does not undo what the server may "
            "already have done: its effect is unknown"), outcome="unknown")
    if code == mt.CONNECTION_CLOSED:
        return call_error(MCP_CONNECTION_LOST, (
            f"the connection to MCP server {tool.server!r} closed during the call: {message}; "
            "it may have taken effect"), outcome="unknown")
    return call_error(MCP_PROTOCOL_ERROR, (
        f"MCP server {tool.server!r} answered tools/call {tool.name!r} with JSON-RPC error "
        f"{code}: {message[:MAX_ERROR_TEXT]}"), outcome=_outcome(code),
        details={"jsonrpc_code": code})
