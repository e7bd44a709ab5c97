"""The MCP part of building a runtime from a configuration: list the servers agents name, and
turn ``mcp.<server>.<tool>`` entries (globs allowed) into the listed tools; check the server and
the tool of every ``kind: mcp`` hook handler the same way.

Servers are connected and listed once, when the runtime is built (``agentloom.mcp.discover``):
the tools found are the release's catalog, frozen for its runs (000 §2.1). Only servers some
agent or ``kind: mcp`` hook names are started. A server that cannot be started or reached, or
an entry naming a tool its server does not list, is a ``ConfigError`` naming the key — never a
failure mid-run.

Owns: MCP entries at build time. Does not own: the ``mcp_servers`` shape (``config.mcp``),
connecting or listing (``agentloom.mcp``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from agentloom.assembly.entries import tool_entries
from agentloom.config import Config, did_you_mean, key_path
from agentloom.config.hooks import configured_hooks
from agentloom.config.mcp import McpServerConfig, mcp_entry_parts
from agentloom.config.model import McpHandlerConfig
from agentloom.errors import AgentLoomError, ConfigError
from agentloom.extras import require
from agentloom.hooks.handlers import McpHookHandler
from agentloom.hooks.spec import HookSpec
from agentloom.sandbox.ports import EnvironmentPolicy, SandboxBackend

if TYPE_CHECKING:
    from agentloom.mcp import McpTool

__all__ = ["hook_server", "mcp_catalog", "mcp_entry_tools", "mcp_hooks", "where_of",
           "with_servers"]

_GLOB = frozenset("*?[")


def mcp_catalog(config: Config, *, backend: SandboxBackend,
                policy: EnvironmentPolicy | None = None, store: str | None = None) -> list[McpTool]:
    """Every tool of the MCP servers the agents name, listed now (nothing when none is named),
    and the ``mcp.<server>.resources.read`` of each that declares resources. ``store``: the
    URL of the store whose OAuth grants (``agentloom mcp login``) HTTP servers are sent.

    The servers of ``kind: mcp`` hooks are listed too, and each hook's tool must be listed.

    Raises:
        MissingExtra: a server is used and the ``mcp`` extra is not installed.
        ConfigError: a server could not be started, reached or spoken to; the message names
            ``mcp_servers.<server>`` and the code is the MCP or sandbox one. A hook naming a
            server ``mcp_servers`` lacks (``agents.<agent>.hooks[<i>].handler.server``) or a
            tool its server does not list (``….handler.tool``, ``MCP_TOOL_NOT_LISTED``).
    """
    used = {parts[0] for entry in tool_entries(config)
            if (parts := mcp_entry_parts(entry)) is not None}
    hooks = mcp_hooks(config)
    for where, handler in hooks:
        hook_server(config, handler, where)
        used.add(handler.server)
    if not used:
        return []
    require("mcp", f"{config.origin}: using MCP servers")
    from agentloom.mcp import discover  # the mcp SDK is imported only when a server is used
    from agentloom.mcp.oauth import McpCredentials

    servers = {name: server for name, server in config.mcp_servers.items() if name in used}
    workspace = config.resolve_path(config.workspace.bind) if config.workspace.bind else None
    credentials = McpCredentials(store) if store is not None else None  # opened on first use
    try:
        listings = discover(servers, base_dir=config.base_dir, backend=backend, policy=policy,
                            workspace=workspace, credentials=credentials)
    except AgentLoomError as exc:
        raise ConfigError(f"{config.origin}: mcp_servers: {exc.error.message}",
                          code=exc.code) from None
    finally:
        if credentials is not None:
            credentials.close()
    # a server that declares resources adds mcp.<server>.resources.read (selected like a tool)
    tools = [tool for listing in listings for tool in listing.capabilities]
    for where, handler in hooks:
        offered = [t.name for t in tools if t.server == handler.server]
        if handler.tool not in offered:
            raise ConfigError(
                f"{where}.tool: MCP server {handler.server!r} lists no tool {handler.tool!r}; "
                f"{did_you_mean(handler.tool, offered)}it lists: "
                f"{', '.join(offered) or 'no tools'}", code="MCP_TOOL_NOT_LISTED")
    return tools


def mcp_hooks(config: Config) -> list[tuple[str, McpHandlerConfig]]:
    """Every ``kind: mcp`` hook handler, in file order, with its key
    (``agents.<agent>.hooks[<i>].handler``)."""
    return [(f"{item.where}.handler", handler) for item in configured_hooks(config)
            if isinstance(handler := getattr(item.entry, "handler", None), McpHandlerConfig)]


def with_servers(config: Config, specs: tuple[HookSpec, ...]) -> tuple[HookSpec, ...]:
    """``specs`` with each ``mcp`` handler given its server's ``mcp_servers`` entry.

    Raises:
        ConfigError: an mcp hook names a server ``mcp_servers`` lacks (``….handler.server``).
    """
    keys = {getattr(item.entry, "hook_id", None) or item.default_id:
            (f"{item.where}.handler", handler) for item in configured_hooks(config)
            if isinstance(handler := getattr(item.entry, "handler", None), McpHandlerConfig)}
    out: list[HookSpec] = []
    for spec in specs:
        if isinstance(spec.handler, McpHookHandler) and spec.hook_id in keys:
            where, handler = keys[spec.hook_id]
            spec = replace(spec, handler=replace(
                spec.handler, server_config=hook_server(config, handler, where)))
        out.append(spec)
    return tuple(out)


def hook_server(config: Config, handler: McpHandlerConfig, where: str) -> McpServerConfig:
    """The ``mcp_servers`` entry an mcp hook handler (at key ``where``) names.

    Raises:
        ConfigError: ``mcp_servers`` has no such server; the message names ``<where>.server``.
    """
    server = config.mcp_servers.get(handler.server)
    if server is None:
        known = list(config.mcp_servers)
        raise ConfigError(f"{where}.server: no MCP server named {handler.server!r}; "
                          f"{did_you_mean(handler.server, known)}defined: "
                          f"{', '.join(known) or 'none (add one under mcp_servers)'}")
    return server


def mcp_entry_tools(entry: str, listed: Sequence[McpTool], where: str) -> list[McpTool]:
    """The listed tools ``entry`` (``mcp.<server>.<tool>`` or a glob) selects.

    Raises:
        ConfigError: ``MCP_TOOL_NOT_LISTED`` when an entry without a glob names a tool its
            server does not list (the message names ``where`` and what the server lists).
    """
    from agentloom.mcp import select

    parts = mcp_entry_parts(entry)
    assert parts is not None
    chosen = select(listed, [entry])
    if not chosen and not _GLOB & set(parts[1]):
        offered = [t.name for t in listed if t.server == parts[0]]
        raise ConfigError(
            f"{where}: MCP server {parts[0]!r} lists no tool {parts[1]!r}; "
            f"{did_you_mean(parts[1], offered)}it lists: {', '.join(offered) or 'no tools'}",
            code="MCP_TOOL_NOT_LISTED")
    return chosen


def where_of(agent: str, index: int) -> str:
    return f"{key_path(('agents', agent))}.tools[{index}]"
