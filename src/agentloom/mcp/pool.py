"""The MCP sessions of runs: one per (run, server), opened on first call, closed with the run.

::

    handler ─► McpSessions.get(tool, attempt ctx) ─► (run, server) open? ─► reuse
                                                     └ no / lease epoch moved ─► open_connection
    Kernel.end_run / release_run ─► McpSessions.close_run(run_id) ─► every session of the run

A hundred calls in one run open one stdio process. A session is bound to the run *and* its
lease epoch: after a takeover the new holder opens its own (``Mcp-Session-Id`` is the server's
identity for the connection, never an AgentLoom session). A session whose transport ended (the
server exited) is opened again on the next call.

Owns: which connection serves a call, and closing them. Does not own: the connection
(``connection``), the call (``handler``), the launcher (``launch``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from agentloom.attempts import AttemptContext
from agentloom.mcp.catalog import McpTool
from agentloom.mcp.connection import McpConnection, Notifier, open_connection
from agentloom.mcp.launch import LaunchContext, StdioLaunch, launcher_for
from agentloom.sandbox import EnvironmentPolicy
from agentloom.sandbox.ports import SandboxBackend

__all__ = ["McpSessions"]

WorkspaceOf = Callable[[str], Path]
"""The host folder of a workspace scope id (the kernel's workspace store)."""


class McpSessions:
    """The open MCP sessions of every run of one kernel, by (run id, server name)."""

    def __init__(self, *, notify: Notifier, backend: SandboxBackend,
                 policy: EnvironmentPolicy | None = None, workspace_of: WorkspaceOf | None = None,
                 launch: StdioLaunch | None = None) -> None:
        self.notify = notify
        self.backend: SandboxBackend = backend
        self.policy = policy or EnvironmentPolicy()
        self.workspace_of = workspace_of
        self.launch = launch or launcher_for(backend)
        self.opened = 0
        """How many connections were opened (a figure for tests and benchmarks)."""
        self._open: dict[tuple[str, str], tuple[int | None, McpConnection]] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._scratch: dict[str, Path] = {}

    async def get(self, tool: McpTool, context: AttemptContext) -> McpConnection:
        """The session of ``context``'s run with ``tool``'s server, opened if needed.

        Raises:
            McpError: the server could not be started, reached or spoken to.
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
                await conn.close()
            conn = await open_connection(
                tool.server, tool.config, launch=self.launch,
                context=self._launch_context(tool, context), notify=self.notify,
                observed={"run_id": context.run_id})
            self.opened += 1
            self._open[key] = (context.lease_epoch, conn)
            return conn

    def _launch_context(self, tool: McpTool, context: AttemptContext) -> LaunchContext:
        if context.workspace_scope_id is not None and self.workspace_of is not None:
            workspace = self.workspace_of(context.workspace_scope_id)
        else:  # a run without a workspace: an empty folder of its own, deleted with the run
            workspace = self._scratch.get(context.run_id) or Path(tempfile.mkdtemp(prefix="mcp-"))
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
            await conn.close()
        scratch = self._scratch.pop(run_id, None)
        if scratch is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(scratch)

    async def aclose(self) -> None:
        """Close every session of every run."""
        for run_id in sorted(self.open_runs() | set(self._scratch)):
            await self.close_run(run_id)
