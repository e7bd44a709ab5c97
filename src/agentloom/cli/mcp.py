"""``agentloom mcp list CONFIG`` and ``agentloom mcp call CONFIG SERVER TOOL --args JSON``: the
configured MCP servers, their negotiated protocol and tools, and one call for debugging;
``agentloom mcp prompts CONFIG SERVER`` and ``agentloom mcp prompt CONFIG SERVER NAME --arg k=v``:
a server's prompts and one rendered (never injected into an agent); ``agentloom mcp login
CONFIG SERVER``: OAuth 2.1 sign-in to an HTTP server, its tokens kept in the store's secret
table for runs. docs/cli.md and docs/mcp.md are the reference.

All connect as a run would (stdio servers through the launcher of ``sandbox.backend``, HTTP
servers with their headers and the OAuth grant stored for them, ``${VAR}`` read from the
environment now) but outside any run: nothing is recorded in a store (``login`` writes its
grant only), no hook runs. A stdio server starts in the folder ``--workdir`` names (``mcp
call``), else the one ``workspace.bind`` names, else in a fresh empty folder deleted
afterwards; ``mcp call`` says which on stderr. ``mcp list`` lists every server side by side and
reports each one that failed, not only the first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentloom.cli.errors import EXIT_FAILED, EXIT_OK, Failure, UsageFailure, describe
from agentloom.cli.mcp_import import mcp_import_claude
from agentloom.cli.options import JsonOpt
from agentloom.cli.output import print_json, say, setup_logging, stderr_console, stdout_console
from agentloom.cli.stores import sqlite_path
from agentloom.config import Config, load_config
from agentloom.extras import require

if TYPE_CHECKING:
    from agentloom.mcp import ServerListing
    from agentloom.mcp.oauth import McpCredentials

__all__ = ["mcp_app"]

mcp_app = typer.Typer(no_args_is_help=True,
                      help="List, call and sign in to the MCP servers of a config.")


@mcp_app.callback()
def _needs_mcp() -> None:
    require("mcp", "agentloom mcp")  # before any subcommand reads its config

_CONFIG = Annotated[Path, typer.Argument(metavar="CONFIG", help="The config file.",
                                         show_default=False)]
DEFAULT_CONFIG = "agentloom.yaml"
"""The config ``mcp login`` reads when only SERVER is given."""


def _workspace(config: Config) -> Path | None:
    return config.resolve_path(config.workspace.bind) if config.workspace.bind else None


def _call_folder(config: Config, config_path: Path, workdir: Path | None) -> tuple[Path | None, str]:
    """The folder ``mcp call`` starts a stdio server in, as ``run`` would work in it:
    ``--workdir``, else ``workspace.bind`` (resolved once to its real path; not an existing
    folder: ``WORKDIR_NOT_FOUND``), else None (a fresh empty folder); and why, in words."""
    from agentloom.workspace.scope import WorkspaceScopeError, bound_folder

    given, why = ((workdir, "--workdir") if workdir is not None else
                  (_workspace(config), f"workspace.bind of {config_path}"))
    if given is None:
        return None, (f"no --workdir and no workspace.bind in {config_path}; pass --workdir "
                      "PATH to work in a folder of yours")
    try:
        return bound_folder(given), why
    except WorkspaceScopeError as exc:
        raise UsageFailure(f"{why}: {exc.error.message}", code=exc.code) from None


def _credentials(config: Config, store: str | None = None) -> McpCredentials | None:
    """The OAuth grants of the config's store (``--store``, ``$AGENTLOOM_STORE``, else beside
    the config); none where no SQLite store exists yet (nothing is created here)."""
    from agentloom.assembly import store_url_for
    from agentloom.mcp.oauth import McpCredentials

    url = store_url_for(config, store)
    path = sqlite_path(url)
    return None if path is not None and not path.is_file() else McpCredentials(url)


@mcp_app.command("list")
def mcp_list(config: _CONFIG, as_json: JsonOpt = False) -> None:
    """Connect to every server of mcp_servers and show its negotiated protocol version, server
    name and version, and its tools with their capability keys (mcp.<server>.<tool>) and the
    names the model sees (mcp__<server>__<tool>), plus mcp.<server>.resources.read for a server
    with resources. A server that cannot be listed is shown with its error, the others still
    are; exit 1 when any failed.

    --json: one entry per server, with ok and error.
    """
    setup_logging()
    loaded = load_config(config)
    listed = asyncio.run(_list_each(loaded))
    failed = [name for name, got in listed if isinstance(got, Failure)]
    if as_json:
        print_json([_entry(loaded, name, got) for name, got in listed])
        raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)
    out = stdout_console()
    if not listed:
        say(out, "no MCP servers in ", str(config))
    for name, got in listed:
        if isinstance(got, Failure):
            say(out, f"{name}  {loaded.mcp_servers[name].transport}  error: {got.code}: "
                     f"{got.message}")
            continue
        record = got.record
        say(out, f"{name}  {record.transport}  protocol {record.protocol_version}  "
                 f"{record.server_name} {record.server_version}  {len(got.tools)} tool(s)")
        for tool in got.tools:
            summary = (tool.title or tool.description).splitlines()[0] if (
                tool.title or tool.description) else ""
            say(out, f"  {tool.capability_key}  ({tool.to_dict()['exposed_name']})  {summary}")
        reader = got.resources
        if reader is not None:
            say(out, f"  {reader.capability_key}  ({reader.to_dict()['exposed_name']})  "
                     f"{len(reader.resources)} resource(s), {len(reader.templates)} template(s)")
    if failed:
        say(stderr_console(), f"{len(failed)} of {len(listed)} MCP server(s) could not be "
            f"listed: {', '.join(failed)}")
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


async def _list_each(config: Config) -> list[tuple[str, ServerListing | Failure]]:
    """Every server of ``config`` listed side by side, each on its own: its listing, or what
    kept it from being listed (as the CLI reports an error); in the config's order."""
    from agentloom.assembly import environment_policy
    from agentloom.mcp import list_servers

    credentials = _credentials(config)
    policy, workspace = environment_policy(config), _workspace(config)

    async def one(name: str) -> ServerListing | Failure:
        try:
            (listing,) = await list_servers(
                {name: config.mcp_servers[name]}, base_dir=config.base_dir,
                backend=config.sandbox.backend, policy=policy, workspace=workspace,
                credentials=credentials)
        except Exception as exc:  # reported for this server; the others are still listed
            return describe(exc)
        return listing

    try:
        got = await asyncio.gather(*(one(name) for name in config.mcp_servers))
    finally:
        if credentials is not None:
            credentials.close()
    return list(zip(config.mcp_servers, got, strict=True))


def _entry(config: Config, name: str, got: ServerListing | Failure) -> dict[str, Any]:
    if isinstance(got, Failure):
        return {"server": name, "transport": config.mcp_servers[name].transport, "ok": False,
                "error": {"code": got.code, "message": got.message}}
    return {**got.to_dict(), "ok": True, "error": None}


@mcp_app.command("call")
def mcp_call(
    config: _CONFIG,
    server: Annotated[str, typer.Argument(metavar="SERVER", help="A name under mcp_servers.",
                                          show_default=False)],
    tool: Annotated[str, typer.Argument(metavar="TOOL", help="The tool's name on the server.",
                                        show_default=False)],
    args: Annotated[str, typer.Option("--args", metavar="JSON",
                                      help="The arguments, one JSON object.")] = "{}",
    workdir: Annotated[Path | None, typer.Option(
        "--workdir", metavar="PATH", help="Start a stdio server in this existing folder (e.g. "
        "your repository), as agentloom run --workdir. Default: workspace.bind of CONFIG, else "
        "an empty temporary folder.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Call TOOL of SERVER once, outside any run (nothing recorded, no hooks), and print the
    result as a run would record it. Exit 1 when the result is not succeeded.

    A stdio server works in --workdir, else workspace.bind, else an empty temporary folder;
    stderr says which.
    """
    setup_logging()
    loaded = load_config(config)
    if server not in loaded.mcp_servers:
        raise UsageFailure(f"no MCP server named {server!r} in {config}; defined: "
                           f"{', '.join(loaded.mcp_servers) or 'none'}", code="MCP_SERVER_UNKNOWN")
    try:
        arguments = json.loads(args)
    except json.JSONDecodeError as exc:
        raise UsageFailure(f"--args is not JSON: {exc}", code="USAGE_ERROR") from None
    if not isinstance(arguments, dict):
        raise UsageFailure("--args must be a JSON object", code="USAGE_ERROR")
    folder, why = _call_folder(loaded, config, workdir)
    if loaded.mcp_servers[server].transport == "stdio":
        say(stderr_console(), f"MCP server {server!r} works in "
            + (f"{folder} ({why})" if folder is not None else f"an empty temporary folder ({why})"))
    result = asyncio.run(_call(loaded, server, tool, arguments, folder))
    if as_json:
        print_json(result)
    else:
        out = stdout_console()
        say(out, f"{result['status']}")
        for block in result["content"]:
            say(out, block["text"] if block["type"] == "text" else json.dumps(block.get("data")))
        if result["error"]:
            say(out, f"error: {result['error']['code']}: {result['error']['message']}")
    raise typer.Exit(EXIT_OK if result["status"] == "succeeded" else EXIT_FAILED)


async def _call(config: Config, server: str, tool: str, arguments: dict[str, Any],
                workspace: Path | None) -> dict[str, Any]:
    from agentloom.assembly import environment_policy
    from agentloom.attempts import AttemptContext, CapabilityRequest
    from agentloom.ids import new_id
    from agentloom.mcp import McpSessions, McpToolHandler, list_servers
    from agentloom.sandbox.identity import scratch_folder

    policy = environment_policy(config)
    backend = config.sandbox.backend
    credentials = _credentials(config)
    (listing,) = await list_servers({server: config.mcp_servers[server]}, base_dir=config.base_dir,
                                    backend=backend, policy=policy, workspace=workspace,
                                    credentials=credentials)
    found = [t for t in listing.tools if t.name == tool]
    if not found:
        raise UsageFailure(f"MCP server {server!r} lists no tool {tool!r}; it lists: "
                           f"{', '.join(t.name for t in listing.tools) or 'no tools'}",
                           code="MCP_TOOL_NOT_LISTED")
    with contextlib.ExitStack() as stack:
        if workspace is None:  # an empty folder, made for the sandbox uid (``scratch_folder``)
            workspace = scratch_folder("mcp-call-")
            stack.callback(shutil.rmtree, workspace, True)
        folder = workspace
        sessions = McpSessions(notify=lambda kind, payload: None, backend=backend, policy=policy,
                               workspace_of=lambda scope_id: folder, credentials=credentials)
        context = AttemptContext(operation_id=new_id(), attempt_no=1, run_id=f"cli-{new_id()}",
                                 role=None, deadline=time.time() + 3600.0, workspace_scope_id="cli")
        request = CapabilityRequest(operation_id=context.operation_id, resource_version_id="cli",
                                    capability_key=found[0].capability_key, arguments=arguments)
        try:
            result = await McpToolHandler(found[0], sessions).invoke_once(request, context)
        finally:
            await sessions.aclose()
            if credentials is not None:
                credentials.close()
    return result.to_dict()


_SERVER = Annotated[str, typer.Argument(metavar="SERVER", help="A name under mcp_servers.",
                                        show_default=False)]


def _server(loaded: Config, config: Path, server: str) -> None:
    if server not in loaded.mcp_servers:
        raise UsageFailure(f"no MCP server named {server!r} in {config}; defined: "
                           f"{', '.join(loaded.mcp_servers) or 'none'}", code="MCP_SERVER_UNKNOWN")


async def _prompts(config: Config, server: str, name: str | None,
                   arguments: dict[str, str]) -> Any:
    from agentloom.assembly import environment_policy
    from agentloom.mcp import connected, get_prompt, list_prompts
    from agentloom.mcp.prompts import declares_prompts
    from mcp import MCPError

    credentials = _credentials(config)
    async with contextlib.AsyncExitStack() as stack:
        if credentials is not None:
            stack.callback(credentials.close)
        conn = await stack.enter_async_context(connected(
            server, config.mcp_servers[server], base_dir=config.base_dir,
            backend=config.sandbox.backend, policy=environment_policy(config),
            workspace=_workspace(config), credentials=credentials))
        if not declares_prompts(conn):
            raise UsageFailure(f"MCP server {server!r} declares no prompts",
                               code="MCP_PROMPTS_UNSUPPORTED")
        try:
            if name is None:
                return [p.to_dict() for p in await list_prompts(conn)]
            return (await get_prompt(conn, name, arguments)).to_dict()
        except MCPError as exc:
            return {"error": {"code": "MCP_PROTOCOL_ERROR", "jsonrpc_code": exc.error.code,
                              "message": conn.scrub(exc.error.message)}}


@mcp_app.command("prompts")
def mcp_prompts(config: _CONFIG, server: _SERVER, as_json: JsonOpt = False) -> None:
    """List the prompts of SERVER (prompts/list) with their arguments. Prompts are templates to
    read: none is ever put into an agent's instructions. Exit 1 when the server answers with an
    error; 2 when it declares no prompts."""
    setup_logging()
    loaded = load_config(config)
    _server(loaded, config, server)
    listed = asyncio.run(_prompts(loaded, server, None, {}))
    failed = isinstance(listed, dict)
    if as_json:
        print_json(listed)
    else:
        out = stdout_console()
        if failed:
            say(out, f"error: {listed['error']['message']}")
        for prompt in [] if failed else listed:
            args = ", ".join(a["name"] + ("" if a["required"] else "?") for a in prompt["arguments"])
            about = (prompt["title"] or prompt["description"] or "").splitlines()
            say(out, f"{prompt['name']}({args})  {about[0] if about else ''}")
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


@mcp_app.command("prompt")
def mcp_prompt(
    config: _CONFIG,
    server: _SERVER,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The prompt's name on the server.",
                                        show_default=False)],
    arg: Annotated[list[str] | None, typer.Option(
        "--arg", metavar="K=V", help="One argument of the prompt; repeat for more.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print prompt NAME of SERVER rendered with the given arguments (prompts/get): its
    messages, role by role. Nothing is recorded and nothing reaches an agent. Exit 1 when the server
    answers with an error (an unknown prompt, a missing argument)."""
    setup_logging()
    loaded = load_config(config)
    _server(loaded, config, server)
    arguments: dict[str, str] = {}
    for item in arg or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageFailure(f"--arg {item!r} is not K=V", code="USAGE_ERROR")
        arguments[key] = value
    rendered = asyncio.run(_prompts(loaded, server, name, arguments))
    failed = "error" in rendered
    if as_json:
        print_json(rendered)
    else:
        out = stdout_console()
        if failed:
            say(out, f"error: {rendered['error']['message']}")
        for message in [] if failed else rendered["messages"]:
            content = message["content"]
            say(out, f"[{message['role']}] "
                     f"{content['text'] if 'text' in content else json.dumps(content)}")
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


@mcp_app.command("login")
def mcp_login(
    targets: Annotated[list[str], typer.Argument(
        metavar="[CONFIG] SERVER", show_default=False,
        help="The config file (default: agentloom.yaml here) and a name under mcp_servers.")],
    store: Annotated[str | None, typer.Option(
        "--store", metavar="URL", help="Store URL whose secret table keeps the tokens "
        "(sqlite:///path.db, postgresql://…). Default: $AGENTLOOM_STORE, else "
        "sqlite:///.agentloom/agentloom.db in the folder of CONFIG.")] = None,
    no_browser: Annotated[bool, typer.Option(
        "--no-browser", help="Only print the URL to open; start no browser.")] = False,
    timeout: Annotated[float, typer.Option(
        "--timeout", metavar="SECONDS", min=1.0,
        help="How long to wait for the browser's redirect.")] = 300.0,
    as_json: JsonOpt = False,
) -> None:
    """Sign in to the HTTP server SERVER of CONFIG (default: agentloom.yaml in this folder) with
    OAuth 2.1 (authorization code + PKCE, metadata
    discovery, dynamic registration or oauth.client_id) and keep its tokens in the store's
    secret table: runs send them and refresh them, and never sign in themselves. Prints the URL
    to open on stderr (and opens a browser when there is a display). Exit 1 when signing in
    fails; 2 for a server that is not an HTTP server of CONFIG."""
    setup_logging()
    if len(targets) > 2:
        raise typer.BadParameter("give SERVER, or CONFIG and SERVER", param_hint="[CONFIG] SERVER")
    config = Path(targets[0]) if len(targets) == 2 else Path(DEFAULT_CONFIG)
    server = targets[-1]
    loaded = load_config(config)
    _server(loaded, config, server)
    from agentloom.assembly import store_url_for
    from agentloom.config.mcp import HttpServerConfig
    from agentloom.mcp.oauth import McpCredentials
    from agentloom.mcp.oauth_login import login

    entry = loaded.mcp_servers[server]
    if not isinstance(entry, HttpServerConfig):
        raise UsageFailure(
            f"MCP server {server!r} is a {entry.transport} server: `agentloom mcp login` signs in "
            "to HTTP servers (transport: http); a stdio server gets its credentials from its env",
            code="MCP_LOGIN_UNSUPPORTED")

    def announce(url: str) -> None:
        sys.stderr.write(f"Open this URL in a browser to sign in to MCP server {server!r}:\n"
                         f"{url}\n")
        sys.stderr.flush()

    browser = not no_browser and bool(os.environ.get("DISPLAY") or os.environ.get(
        "WAYLAND_DISPLAY") or sys.platform in ("darwin", "win32"))
    credentials = McpCredentials(store_url_for(loaded, store))
    try:
        grant = asyncio.run(login(server, entry, credentials, announce=announce,
                                  open_browser=browser, timeout_s=timeout))
    finally:
        credentials.close()
    shown = ({"server": server, "status": "not_required"} if grant is None
             else {"status": "signed_in", **grant.summary()})
    if as_json:
        print_json(shown)
    elif grant is None:
        say(stdout_console(), f"MCP server {server!r} asks for no authorization; nothing stored")
    else:
        until = (time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(grant.expires_at))
                 if grant.expires_at is not None else "no expiry given")
        say(stdout_console(), f"signed in to {server} ({grant.issuer or grant.url}); token for "
                              f"{grant.resource}, scope {grant.token.scope or '-'}, until {until}"
                              f"{', refreshed by runs' if shown['refreshable'] else ''}")
    raise typer.Exit(EXIT_OK)


mcp_app.command("import-claude")(mcp_import_claude)
