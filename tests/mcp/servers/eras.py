"""The lab server (``lab.py``) pinned to one era of the MCP protocol, for the profile tests.

``python eras.py legacy`` serves stdio on the SDK's handshake-only loop (a 2025-era server:
``server/discover`` is refused); ``python eras.py modern`` serves stdio on its 2026-07-28-only
loop (``initialize`` is answered with ``-32022``, naming ``2026-07-28``); ``python eras.py
asking`` serves both eras over stdio, and ``python eras.py http PORT`` both over Streamable HTTP
on 127.0.0.1:PORT/mcp. Two tools more than the lab: ``ask_input``, which on a 2026-07-28
connection answers ``input_required`` (an elicitation, the 2026 replacement of a
server→client request) until it is retried with an answer, and ``locate``, whose ``region``
argument travels as an HTTP header on 2026-07-28 (``x-mcp-header``: a call on a session that
has not listed it is refused with ``HeaderMismatch``, -32020).
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import lab  # beside this file: python puts the script's folder first on sys.path
from mcp.server import Server, ServerRequestContext
from mcp.server.runner import _serve_modern_stream, serve_loop  # the SDK's one-era loops
from mcp.server.stdio import stdio_server

from mcp import types as t

ASK = lab._tool("ask_input")
LOCATE = lab._tool("locate", {"region": {"type": "string", "x-mcp-header": "Region"}})
ELICIT = t.ElicitRequest(params=t.ElicitRequestFormParams(
    message="your name?", requested_schema={"type": "object", "properties": {}}))


async def list_tools(ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
                     ) -> t.ListToolsResult:
    tools = [*lab.TOOLS, ASK, LOCATE]
    start = int(params.cursor) if params and params.cursor else 0
    end = start + lab.PAGE
    return t.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)


async def call_tool(ctx: ServerRequestContext[Any], params: t.CallToolRequestParams
                    ) -> t.CallToolResult | t.InputRequiredResult:
    if params.name == "locate":
        return lab._text(f"located in {(params.arguments or {}).get('region')}")
    if params.name != "ask_input":
        return await lab.call_tool(ctx, params)
    if params.input_responses:
        return lab._text("input received")
    return t.InputRequiredResult(input_requests={"name": ELICIT}, request_state="asked-once")


server = Server("lab", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
                on_list_resources=lab.list_resources,
                on_list_resource_templates=lab.list_templates, on_read_resource=lab.read_resource,
                on_list_prompts=lab.list_prompts, on_get_prompt=lab.get_prompt)


async def serve(era: str) -> None:
    async with stdio_server() as (read, write), server.lifespan(server) as state:
        if era == "legacy":
            await serve_loop(server, read, write, lifespan_state=state,
                             init_options=server.create_initialization_options())
        elif era == "modern":
            await _serve_modern_stream(server, read, write, lifespan_state=state,
                                       raise_exceptions=False)
        else:
            await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[1] == "http":
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]),
                    log_level="warning")
    else:
        anyio.run(serve, sys.argv[1])
