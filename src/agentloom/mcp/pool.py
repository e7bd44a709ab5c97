"""The MCP sessions of runs: one per (run, server), opened on first call, closed with the run.

::

    handler ─► McpSessions.get(tool, attempt ctx) ─► (run, server) open? ─► reuse
                                                     └ no / lease epoch moved ─► open_connection
                                                     └ its server exited ─► open_connection,
                                                       once a run; then MCP_SERVER_EXITED
    Kernel.end_run / release_run ─► McpSessions.close_run(run_id) ─► every session of the run
    an http server's session ─► its TCP connections from the shared client of (space,
        connection version, credential binding, workspace scope) (``http_pool``)

A hundred calls in one run open one stdio process. A session is bound to the run *and* its
lease epoch: after a takeover the new holder opens its own (``Mcp-Session-Id`` is the server's
identity for the connection, never an AgentLoom session). A session whose transport ended (the
server exited: ``McpConnection.lost``) is opened again on the next call — once per run and
server: after that reopen, a server that is gone again (or that the reopen could not reach)
fails every later call of the run with ``MCP_SERVER_EXITED``, nothing sent (``not_started``).
The call in flight when a server died is the handler's: ``unknown``, it may have taken effect.

Owns: which connection serves a call, and closing them. Does not own: the connection
(``connection``), the shared HTTP clients (``http_pool``), the call (``handler``), the
launcher (``launch``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path

from agentloom.attempts import AttemptContext
from agentloom.config.mcp import HttpServerConfig
from agentloom.mcp.catalog import McpTool
from agentloom.mcp.connection import McpConnection, Notifier, open_connection
from agentloom.mcp.errors import MCP_SERVER_EXITED, McpError
from agentloom.mcp.http_pool import HttpClients, HttpPoolKey
from agentloom.mcp.launch import LaunchContext, StdioLaunch, launcher_for
from agentloom.mcp.oauth import McpCredentials
from agentloom.sandbox import EnvironmentPolicy, scratch_folder
from agentloom.sandbox.ports import SandboxBackend

__all__ = ["REOPENS", "McpSessions"]

WorkspaceOf = Callable[[str], Path]
"""The host folder of a workspace scope id (the kernel's workspace store)."""
SpaceOf = Callable[[str], str]
"""The space of a workspace scope id (its owner's, in the kernel's workspace store)."""
REOPENS = 1
"""How many times a run opens a session again after its server exited."""


class McpSessions:
    """The open MCP sessions of every run of one kernel, by (run id, server name)."""

    def __init__(self, *, notify: Notifier, backend: SandboxBackend,
                 policy: EnvironmentPolicy | None = None, workspace_of: WorkspaceOf | None = None,
                 launch: StdioLaunch | None = None, space_id: str = "default",
                 space_of: SpaceOf | None = None,
                 credentials: McpCredentials | None = None) -> None:
        self.notify = notify
        self.backend: SandboxBackend = backend
        self.policy = policy or EnvironmentPolicy()
        self.workspace_of = workspace_of
        self.launch = launch or launcher_for(backend)
        self.space_id = space_id
        """The space of a run without a workspace scope: part of a shared HTTP client's key."""
        self.space_of = space_of
        self.http = HttpClients(credentials=credentials)
        """The HTTP clients the sessions of HTTP servers share (``http_pool``)."""
        self.opened = 0
        """How many connections were opened (a figure for tests and benchmarks)."""
        self._open: dict[tuple[str, str], tuple[int | None, McpConnection]] = {}
        self._http_keys: dict[tuple[str, str], HttpPoolKey] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._reopened: dict[tuple[str, str], int] = {}
        """Sessions opened again after their server exited, by (run id, server)."""
        self._lost: set[tuple[str, str]] = set()
        """(run id, server) whose server exited in the run."""
        self._scratch: dict[str, Path] = {}

    async def get(self, tool: McpTool, context: AttemptContext) -> McpConnection:
        """The session of ``context``'s run with ``tool``'s server, opened if needed.

        Raises:
            McpError: the server could not be started, reached or spoken to;
                ``MCP_SERVER_EXITED``: it exited and its one reopen in the run is spent.
            SandboxError: a stdio server's sandbox refused to start it.
        """
        key = (context.run_id, tool.server)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            held = self._open.get(key)
            if held is not None:
                epoch, conn = held
                if epoch == context.lease_epoch and conn.alive:
                    return conn
                del self._open[key]
                if conn.lost:
                    self._lost.add(key)
                await self._close(key, conn)
            if key in self._lost:
                reopened = self._reopened.get(key, 0)
                if reopened >= REOPENS:
                    raise McpError(MCP_SERVER_EXITED, (
                        f"MCP server {tool.server!r} exited during this run and was opened "
                        "again once already, the most a run does; the call was not sent"))
                self._reopened[key] = reopened + 1
            http = None
            if isinstance(tool.config, HttpServerConfig):
                scope = context.workspace_scope_id
                space = (self.space_of(scope) if scope is not None and self.space_of is not None
                         else self.space_id)
                self._http_keys[key], http = self.http.acquire(
                    space_id=space, server=tool.server, config=tool.config,
                    workspace_scope_id=context.workspace_scope_id)
            try:
                conn = await open_connection(
                    tool.server, tool.config, launch=self.launch,
                    context=self._launch_context(tool, context), notify=self.notify,
                    observed={"run_id": context.run_id}, http_client=http)
            except BaseException:
                await self._release(key)
                raise
            self.opened += 1
            self._open[key] = (context.lease_epoch, conn)
            return conn

    def _launch_context(self, tool: McpTool, context: AttemptContext) -> LaunchContext:
        if context.workspace_scope_id is not None and self.workspace_of is not None:
            workspace = self.workspace_of(context.workspace_scope_id)
        else:  # a run without a workspace: an empty folder of its own, deleted with the run
            workspace = self._scratch.get(context.run_id) or scratch_folder("mcp-")
            self._scratch[context.run_id] = workspace
        return LaunchContext(server_name=tool.server, run_id=context.run_id,
                             lease_epoch=context.lease_epoch,
                             workspace_scope_id=context.workspace_scope_id, workspace=workspace,
                             base_dir=tool.base_dir, backend=self.backend, policy=self.policy)

    def open_runs(self) -> set[str]:
        """The runs that hold an open session."""
        return {run_id for run_id, _ in self._open}

    async def close_run(self, run_id: str) -> None:
        """Close every session of ``run_id`` (at its end, or when its lease is let go)."""
        keys = [k for k in self._open if k[0] == run_id]
        for key in keys:
            _, conn = self._open.pop(key)
            self._locks.pop(key, None)
            await self._close(key, conn)
        for key in [k for k in self._lost if k[0] == run_id]:
            self._lost.discard(key)
            self._reopened.pop(key, None)
        scratch = self._scratch.pop(run_id, None)
        if scratch is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(scratch)

    async def aclose(self) -> None:
        """Close every session of every run, then the shared HTTP clients."""
        for run_id in sorted(self.open_runs() | set(self._scratch)):
            await self.close_run(run_id)
        await self.http.aclose()

    async def _close(self, key: tuple[str, str], conn: McpConnection) -> None:
        await conn.close()
        await self._release(key)

    async def _release(self, key: tuple[str, str]) -> None:
        http_key = self._http_keys.pop(key, None)
        if http_key is not None:
            await self.http.release(http_key)
