"""Listing the configured servers' tools when a runtime is built (and for ``agentloom mcp list``).

::

    list_servers(servers)  ─► every server side by side: connect, tools/list (every page),
                              resources/list + templates/list when it declares resources, close
                              (each step within the server's timeout_s: ``watch``)
                           ─► [ServerListing(record, tools, resources)]
    connected(server, …)   ─► one connection outside any run (``agentloom mcp prompts``)
    discover(...)          ─► the same, from synchronous code (its own event loop, in a thread)

The tools found become the release's catalog: frozen for every run of that runtime (000 §2.1).
A server whose tools change (``list_changed``) gives a new catalog version to the *next*
runtime built; a running run keeps its own. Listing outside a run starts a stdio server in
``workspace`` (the folder runs bind, ``workspace.bind``, when the config sets one), else in
a fresh empty folder deleted afterwards.

Owns: one listing pass over servers. Does not own: connecting (``connection``), catalog entries
(``catalog``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import shutil
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from agentloom.config.mcp import HttpServerConfig, StdioServerConfig
from agentloom.mcp.catalog import McpTool, list_tools
from agentloom.mcp.connection import ConnectionRecord, McpConnection, Notifier, open_connection
from agentloom.mcp.errors import AUTH_REQUIRED_JSONRPC, MCP_AUTH_REQUIRED, McpError
from agentloom.mcp.launch import LaunchContext, StdioLaunch, launcher_for
from agentloom.mcp.oauth import McpCredentials
from agentloom.mcp.resources import McpResources, list_resources
from agentloom.sandbox import EnvironmentPolicy, scratch_folder
from agentloom.sandbox.ports import SandboxBackend
from mcp import MCPError

__all__ = ["ServerListing", "connected", "discover", "list_servers"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerListing:
    """One server as listed: its connection record, every tool it offers, and its
    ``resources.read`` capability when it declares resources."""

    server: str
    record: ConnectionRecord
    tools: tuple[McpTool, ...]
    resources: McpResources | None = None

    @property
    def capabilities(self) -> tuple[McpTool, ...]:
        """Its tools, then its ``mcp.<server>.resources.read`` (when it has one)."""
        return (*self.tools, *((self.resources,) if self.resources is not None else ()))

    def to_dict(self) -> dict[str, object]:
        return {"server": self.server, "transport": self.record.transport,
                "protocol_version": self.record.protocol_version,
                "server_info": {"name": self.record.server_name,
                                "version": self.record.server_version},
                "tools": [t.to_dict() for t in self.tools],
                "resources": self.resources.to_dict() if self.resources is not None else None}


def _ignore(kind: str, payload: dict[str, object]) -> None:
    return None


async def list_servers(
    servers: Mapping[str, StdioServerConfig | HttpServerConfig],
    *,
    base_dir: Path,
    backend: SandboxBackend,
    policy: EnvironmentPolicy | None = None,
    workspace: Path | None = None,
    launch: StdioLaunch | None = None,
    notify: Notifier | None = None,
    credentials: McpCredentials | None = None,
) -> list[ServerListing]:
    """Connect to every server at once, list all its tools and close it; in ``servers``' order.

    Raises:
        McpError: a server could not be started, reached or spoken to (named in the message).
        SandboxError: a stdio server's sandbox refused to start it.
    """
    async def one(name: str, config: StdioServerConfig | HttpServerConfig) -> ServerListing:
        async with connected(name, config, base_dir=base_dir, backend=backend, policy=policy,
                             workspace=workspace, launch=launch, notify=notify,
                             credentials=credentials) as conn:
            try:
                tools = await list_tools(conn, base_dir)
                resources = await list_resources(conn, base_dir)
            except MCPError as exc:  # a server that guards its listing, not its handshake
                if exc.error.code != AUTH_REQUIRED_JSONRPC:
                    raise
                raise McpError(MCP_AUTH_REQUIRED, conn.scrub(exc.error.message)) from None
        return ServerListing(server=name, record=conn.record, tools=tuple(tools),
                             resources=resources)

    # servers are listed side by side; the first failure (in configuration order) is raised
    results = await asyncio.gather(*(one(n, c) for n, c in servers.items()), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [r for r in results if isinstance(r, ServerListing)]


@contextlib.asynccontextmanager
async def connected(
    name: str,
    config: StdioServerConfig | HttpServerConfig,
    *,
    base_dir: Path,
    backend: SandboxBackend,
    policy: EnvironmentPolicy | None = None,
    workspace: Path | None = None,
    launch: StdioLaunch | None = None,
    notify: Notifier | None = None,
    credentials: McpCredentials | None = None,
) -> AsyncIterator[McpConnection]:
    """One open connection to ``name`` outside any run (a stdio server starts in ``workspace``,
    else in a fresh empty folder deleted afterwards; ``launch`` defaults to the backend's
    launcher); closed on exit.

    Raises:
        McpError: the server could not be started, reached or spoken to.
        SandboxError: a stdio server's sandbox refused to start it.
    """
    scratch = None if workspace is not None else scratch_folder("mcp-")
    folder = workspace if workspace is not None else scratch
    assert folder is not None
    try:
        context = LaunchContext(server_name=name, run_id=None, lease_epoch=None,
                                workspace_scope_id=None, workspace=folder, base_dir=base_dir,
                                backend=backend, policy=policy or EnvironmentPolicy())
        conn = await open_connection(name, config, launch=launch or launcher_for(backend),
                                     context=context, notify=notify or _ignore,
                                     credentials=credentials)
        try:
            yield conn
        finally:
            await conn.close()
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def discover(
    servers: Mapping[str, StdioServerConfig | HttpServerConfig],
    *,
    base_dir: Path,
    backend: SandboxBackend,
    policy: EnvironmentPolicy | None = None,
    workspace: Path | None = None,
    credentials: McpCredentials | None = None,
) -> list[ServerListing]:
    """``list_servers`` from synchronous code: run on an event loop of its own, in a worker
    thread (so it works whether or not the caller is inside a running loop). ``credentials``:
    the stored OAuth grants HTTP servers are sent (``oauth``)."""
    if not servers:
        return []

    def run() -> list[ServerListing]:
        return asyncio.run(list_servers(servers, base_dir=base_dir, backend=backend,
                                        policy=policy, workspace=workspace,
                                        credentials=credentials))

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()
