"""MCP servers as capabilities: the client profile on the official ``mcp`` SDK (000 §6.2).

::

    config mcp_servers ─► discovery (build time: connect, tools/list every page, close)
                              │
                              ▼
                      catalog.McpTool ─► CapabilitySpec kind="mcp", "mcp.<server>.<tool>",
                              │          exposed "mcp__<server>__<tool>", schemas as declared
                              ▼
    pipeline Attempt ─► handler.McpToolHandler ─► pool.McpSessions (one per run + server)
                                                     └► connection (stdio via launch | HTTP
                                                        on http_pool's shared client)
                                                        └► profiles: 2025-11-25 | 2026-07-28
    resources/list ─► resources.McpResources "mcp.<server>.resources.read" ─► resources/read
    prompts/list, prompts/get ─► prompts (CLI only: never injected into instructions)

Owns: connecting to MCP servers (stdio and Streamable HTTP, the 2025-11-25 and 2026-07-28
profiles, HTTP clients shared by (space, connection version, credential binding, workspace
scope), declared client capabilities, the connection record), listing and describing their
tools, calling them
as pipeline handlers, the sessions of runs, resolving ``${VAR}`` secrets at connection time,
and the one launch port for stdio servers (``launch``; the confined launcher is ``sandboxed``).
Does not own: hooks, recording or retries (the pipeline), the sandbox itself (``sandbox/``),
the configuration's shape (``config.mcp``).

Modules: ``errors`` (codes), ``secrets``, ``launch`` (port + unconfined default),
``profiles``, ``watch`` (step timeouts, a transport's end), ``connection``, ``http_pool``,
``catalog``, ``pool``, ``handler``, ``resources``, ``prompts``, ``discovery``.
Every one needs the ``mcp`` extra: importing this package without it is ``MissingExtra``.
"""

from agentloom.extras import require

require("mcp", "agentloom.mcp (MCP servers)")

from agentloom.mcp.catalog import McpTool, capability_key, exposed_name, list_tools, select
from agentloom.mcp.connection import ConnectionRecord, McpConnection, open_connection
from agentloom.mcp.discovery import ServerListing, connected, discover, list_servers
from agentloom.mcp.errors import McpError
from agentloom.mcp.handler import McpToolHandler
from agentloom.mcp.launch import LaunchContext, StdioLaunch, launcher_for, unconfined_launch
from agentloom.mcp.pool import McpSessions
from agentloom.mcp.prompts import McpPrompt, RenderedPrompt, get_prompt, list_prompts
from agentloom.mcp.resources import McpResourceHandler, McpResources

__all__ = [
    "ConnectionRecord",
    "LaunchContext",
    "McpConnection",
    "McpError",
    "McpPrompt",
    "McpResourceHandler",
    "McpResources",
    "McpSessions",
    "McpTool",
    "McpToolHandler",
    "RenderedPrompt",
    "ServerListing",
    "StdioLaunch",
    "capability_key",
    "connected",
    "discover",
    "exposed_name",
    "get_prompt",
    "launcher_for",
    "list_prompts",
    "list_servers",
    "list_tools",
    "open_connection",
    "select",
    "unconfined_launch",
]
