"""A small MCP server for the tests, on the ``mcp`` SDK's low-level ``Server`` (stdio or HTTP).

``python lab.py`` serves stdio; ``python lab.py http PORT`` serves Streamable HTTP on
127.0.0.1:PORT/mcp. It pages ``tools/list`` (``PAGE`` tools a page), and its tools exercise
what the client must handle: structured output (valid and not), ``isError``, a JSON-RPC error,
sampling and elicitation requests the client has not declared, ``list_changed``, progress,
its environment, its process id, and a side effect to count (``mark`` appends a line).
It also lists resources (``RESOURCES``: two text, one binary), one resource template
(``lab://notes/{name}``) and one prompt (``review``); ``python lab.py tools-only`` serves the
same tools over stdio without resources or prompts (a server that declares neither).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from mcp import MCPError
from mcp import types as t

PAGE = 3
TOTAL = {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]}
OBJ: dict[str, Any] = {"type": "object"}


def _tool(name: str, props: dict[str, Any] | None = None, output: dict[str, Any] | None = None,
          **extra: Any) -> t.Tool:
    schema = {"type": "object", "properties": props or {}}
    return t.Tool(name=name, description=f"lab tool {name}", input_schema=schema,
                  output_schema=output, **extra)


TOOLS: list[t.Tool] = [
    _tool("echo", {"text": {"type": "string"}},
          annotations=t.ToolAnnotations(read_only_hint=True, idempotent_hint=True)),
    _tool("add", {"a": {"type": "integer"}, "b": {"type": "integer"}}, TOTAL),
    _tool("bad_shape", {}, TOTAL),
    _tool("fail"),
    _tool("boom"),
    _tool("ask_sampling"),
    _tool("ask_elicitation"),
    _tool("grow"),
    _tool("slow", {"steps": {"type": "integer"}}),
    _tool("env", {"name": {"type": "string"}}),
    _tool("pid"),
    _tool("mark", {"path": {"type": "string"}}),
    _tool("say", {"text": {"type": "string"}}),
]


def _text(text: str, *, error: bool = False) -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(type="text", text=text)], is_error=error)


async def list_tools(ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
                     ) -> t.ListToolsResult:
    start = int(params.cursor) if params and params.cursor else 0
    end = start + PAGE
    return t.ListToolsResult(tools=TOOLS[start:end], next_cursor=str(end) if end < len(TOOLS) else None)


async def call_tool(ctx: ServerRequestContext[Any], params: t.CallToolRequestParams) -> t.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name not in {tool.name for tool in TOOLS}:
        raise MCPError(t.INVALID_PARAMS, f"Unknown tool: {name}")
    if name == "echo":
        return _text(f"echo: {args.get('text', '')}")
    if name == "add":
        total = int(args["a"]) + int(args["b"])
        return t.CallToolResult(content=[t.TextContent(type="text", text=f'{{"total": {total}}}')],
                                structured_content={"total": total})
    if name == "bad_shape":
        return t.CallToolResult(content=[], structured_content={"total": "not a number"})
    if name == "fail":
        return _text("it failed on purpose", error=True)
    if name == "boom":  # with {"env": NAME}: the message echoes that variable (a leaky server)
        echoed = f" (token {os.environ.get(str(args['env']), '')})" if "env" in args else ""
        raise MCPError(-32099, f"the lab server exploded{echoed}")
    if name == "ask_sampling":
        request = t.CreateMessageRequest(params=t.CreateMessageRequestParams(
            messages=[t.SamplingMessage(role="user", content=t.TextContent(type="text", text="hi"))],
            max_tokens=10))
        try:
            await ctx.session.send_request(request, t.CreateMessageResult)
        except MCPError as exc:
            return _text(f"sampling refused: {exc.error.code} {exc.error.message}")
        return _text("sampling answered")
    if name == "ask_elicitation":
        request = t.ElicitRequest(params=t.ElicitRequestFormParams(
            message="your name?", requested_schema={"type": "object", "properties": {}}))
        try:
            await ctx.session.send_request(request, t.ElicitResult)
        except MCPError as exc:
            return _text(f"elicitation refused: {exc.error.code} {exc.error.message}")
        return _text("elicitation answered")
    if name == "grow":
        if not any(tool.name == "late" for tool in TOOLS):
            TOOLS.append(_tool("late"))
        await ctx.session.send_tool_list_changed()
        return _text("grown")
    if name == "slow":
        meta = (ctx.params or {}).get("_meta") or {}
        token = meta.get("progressToken")
        steps = int(args.get("steps", 3))
        for i in range(1, steps + 1):
            if token is not None:
                await ctx.session.send_progress_notification(token, i, total=steps,
                                                             message=f"step {i}",
                                                             related_request_id=ctx.request_id)
            await anyio.sleep(0.01)
        return _text("done")
    if name == "env":  # "!NAME": the value in an isError result (a leaky server, issue #34)
        wanted = str(args.get("name"))
        value = os.environ.get(wanted.lstrip("!"), "<unset>")
        if wanted.startswith("!"):
            return _text(f"could not use the token {value}", error=True)
        return _text(value)
    if name == "pid":
        return _text(str(os.getpid()))
    if name == "say":  # a logging notification, then the answer
        await ctx.session.send_log_message("warning", {"said": args.get("text")}, logger="lab")
        return _text("said")
    if name == "mark":  # a side effect the test can count: one line per execution
        _append(str(args["path"]), "marked\n")
        return _text("marked")
    raise MCPError(t.INTERNAL_ERROR, "unreachable")


def _append(path: str, line: str) -> None:
    """One durable line: once it is in the file, the effect happened."""
    with open(path, "a", encoding="utf-8") as ledger:
        ledger.write(line)
        ledger.flush()
        os.fsync(ledger.fileno())


RESOURCES: list[t.Resource] = [
    t.Resource(uri="lab://readme", name="readme", description="what the lab is",
               mime_type="text/plain"),
    t.Resource(uri="lab://data/config.json", name="config", mime_type="application/json"),
    t.Resource(uri="lab://logo.png", name="logo", mime_type="image/png"),
]
README_TEXT = "lab readme: resource-canary-7f3e2a"
CONFIG_TEXT = '{"mode": "lab", "canary": "config-canary-91bd04"}'
LOGO = b"\x89PNG\r\n\x1a\n" + bytes(24)


async def list_resources(ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
                         ) -> t.ListResourcesResult:
    start = int(params.cursor) if params and params.cursor else 0  # two a page
    end = start + 2
    return t.ListResourcesResult(resources=RESOURCES[start:end],
                                 next_cursor=str(end) if end < len(RESOURCES) else None)


async def list_templates(ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
                         ) -> t.ListResourceTemplatesResult:
    return t.ListResourceTemplatesResult(resource_templates=[t.ResourceTemplate(
        uri_template="lab://notes/{name}", name="note", description="a note by name",
        mime_type="text/plain")])


async def read_resource(ctx: ServerRequestContext[Any], params: t.ReadResourceRequestParams
                        ) -> t.ReadResourceResult:
    import base64

    uri = str(params.uri)
    if uri == "lab://readme":
        contents: list[t.TextResourceContents | t.BlobResourceContents] = [
            t.TextResourceContents(uri=uri, mime_type="text/plain", text=README_TEXT)]
    elif uri == "lab://data/config.json":
        contents = [t.TextResourceContents(uri=uri, mime_type="application/json", text=CONFIG_TEXT)]
    elif uri == "lab://logo.png":
        contents = [t.BlobResourceContents(uri=uri, mime_type="image/png",
                                           blob=base64.b64encode(LOGO).decode())]
    elif uri.startswith("lab://env/"):  # a variable of its environment (issue #34, 6)
        contents = [t.TextResourceContents(uri=uri, mime_type="text/plain",
                                           text=os.environ.get(uri.removeprefix("lab://env/"), ""))]
    elif uri.startswith("lab://notes/"):
        contents = [t.TextResourceContents(uri=uri, mime_type="text/plain",
                                           text=f"note {uri.removeprefix('lab://notes/')}")]
    else:
        raise MCPError(-32002, f"Resource not found: {uri}")
    return t.ReadResourceResult(contents=contents)


REVIEW = t.Prompt(name="review", title="Review code", description="ask for a code review",
                  arguments=[t.PromptArgument(name="code", description="the code", required=True),
                             t.PromptArgument(name="style", description="tone")])


async def list_prompts(ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
                       ) -> t.ListPromptsResult:
    return t.ListPromptsResult(prompts=[REVIEW])


async def get_prompt(ctx: ServerRequestContext[Any], params: t.GetPromptRequestParams
                     ) -> t.GetPromptResult:
    if params.name != "review":
        raise MCPError(t.INVALID_PARAMS, f"Unknown prompt: {params.name}")
    args = params.arguments or {}
    if "code" not in args:
        raise MCPError(t.INVALID_PARAMS, "Missing required argument: code")
    style = args.get("style", "plain")
    if style.startswith("env:"):  # a variable of its environment (issue #34, 6)
        style = os.environ.get(style.removeprefix("env:"), "")
    return t.GetPromptResult(description="a code review request", messages=[
        t.PromptMessage(role="user", content=t.TextContent(
            type="text", text=f"Review this code ({style}):\n{args['code']}")),
        t.PromptMessage(role="assistant", content=t.TextContent(type="text", text="Looking at it."))])


server = Server("lab", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
                on_list_resources=list_resources, on_list_resource_templates=list_templates,
                on_read_resource=read_resource, on_list_prompts=list_prompts,
                on_get_prompt=get_prompt)
tools_only = Server("lab", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(lab: Server[Any] = server) -> None:
    async with stdio_server() as (read, write):
        await lab.run(read, write, lab.create_initialization_options())


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]),
                    log_level="warning")
    elif len(sys.argv) > 1 and sys.argv[1] == "tools-only":
        anyio.run(serve_stdio, tools_only)
    else:
        anyio.run(serve_stdio)
