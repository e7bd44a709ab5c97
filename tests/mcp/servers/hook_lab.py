"""A small MCP server whose tools are hooks (``kind: mcp``), over stdio.

- ``gate``: denies when the event's payload holds "forbidden" (the reason names the event's
  capability and operation), else allows with a payload patch (``/payload/text`` → "patched"),
  as structuredContent;
- ``text_allow``: the same allow, as JSON in a text block; ``silent``: no content (allow);
- ``broken``: ``isError`` with a message holding ``$HOOK_LAB_SECRET``;
- ``garbage``: text that is no JSON;
- ``slow``: appends "started <pid>" to ``$HOOK_LAB_LOG``, sleeps, and appends "cancelled" when
  the client cancels the request (``notifications/cancelled``).
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from mcp import MCPError
from mcp import types as t

PATCH = {"decision": "allow",
         "payload_patch": [{"op": "replace", "path": "/payload/text", "value": "patched"}]}
NAMES = ("gate", "text_allow", "silent", "broken", "garbage", "slow")
TOOLS = [t.Tool(name=n, description=f"hook tool {n}", input_schema={"type": "object"})
         for n in NAMES]


def _text(text: str, *, error: bool = False) -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(type="text", text=text)], is_error=error)


def _log(line: str) -> None:
    with open(os.environ["HOOK_LAB_LOG"], "a") as f:
        f.write(line + "\n")


async def list_tools(ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
                     ) -> t.ListToolsResult:
    return t.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any], params: t.CallToolRequestParams
                    ) -> t.CallToolResult:
    event = params.arguments or {}
    match params.name:
        case "gate":
            if "forbidden" in json.dumps(event.get("payload")):
                decision = {"decision": "deny", "reason": f"forbidden in {event['capability']} "
                            f"(operation {event['operation_id']})"}
                return t.CallToolResult(content=[], structured_content=decision)
            return t.CallToolResult(content=[], structured_content=PATCH)
        case "text_allow":
            return _text(json.dumps(PATCH))
        case "silent":
            return t.CallToolResult(content=[])
        case "broken":
            return _text(f"policy store down; key {os.environ.get('HOOK_LAB_SECRET')}", error=True)
        case "garbage":
            return _text("<html>not json</html>")
        case "slow":
            _log(f"started {os.getpid()}")
            try:
                await anyio.sleep(60)
            except anyio.get_cancelled_exc_class():
                _log("cancelled")
                raise
            return _text("")
    raise MCPError(t.INVALID_PARAMS, f"Unknown tool: {params.name}")


server = Server("hook_lab", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve)
