"""An MCP server over Streamable HTTP (``python trace_echo.py PORT``, 127.0.0.1:PORT/mcp) whose
one tool, ``seen``, answers with the W3C trace headers of the HTTP request that carried the
call (``traceparent``, ``tracestate``; ``null`` when absent)."""

from __future__ import annotations

import json
import sys
from typing import Any

import uvicorn
from mcp.server import Server, ServerRequestContext

from mcp import types as t

SEEN = t.Tool(name="seen", description="the trace headers of this call's HTTP request",
              input_schema={"type": "object", "properties": {}})


async def list_tools(ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
                     ) -> t.ListToolsResult:
    return t.ListToolsResult(tools=[SEEN])


async def call_tool(ctx: ServerRequestContext[Any], params: t.CallToolRequestParams
                    ) -> t.CallToolResult:
    headers = getattr(ctx.request, "headers", None) or {}
    seen = {name: headers.get(name) for name in ("traceparent", "tracestate")}
    return t.CallToolResult(content=[t.TextContent(type="text", text=json.dumps(seen))])


server = Server("trace-echo", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)

if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]),
                log_level="warning")
