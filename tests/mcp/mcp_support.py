"""Helpers for the MCP tests: server configs, a session pool on ``backend="none"``, one call."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.config.mcp import HttpServerConfig, StdioServerConfig
from agentloom.ids import new_id
from agentloom.mcp import McpSessions, McpTool, McpToolHandler, list_servers
from agentloom.results import ToolResult

SERVERS = Path(__file__).resolve().parent / "servers"
LAB = SERVERS / "lab.py"



def lab_stdio(**extra: Any) -> StdioServerConfig:
    return StdioServerConfig(transport="stdio", command=sys.executable, args=(str(LAB),), **extra)


def everything_stdio(node: str, script: Path) -> StdioServerConfig:
    return StdioServerConfig(transport="stdio", command=node, args=(str(script), "stdio"))


def http(url: str, **extra: Any) -> HttpServerConfig:
    return HttpServerConfig(transport="http", url=url, **extra)


@dataclass
class Pool:
    """An ``McpSessions`` on ``backend="none"`` whose workspace is one folder, with what its
    servers reported (``events``)."""

    workspace: Path
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    sessions: McpSessions = field(init=False)

    def __post_init__(self) -> None:
        self.sessions = McpSessions(notify=lambda kind, payload: self.events.append((kind, payload)),
                                    backend="none", workspace_of=lambda scope: self.workspace)

    async def tools(self, name: str, config: StdioServerConfig | HttpServerConfig) -> dict[str, McpTool]:
        (listing,) = await list_servers({name: config}, base_dir=self.workspace, backend="none",
                                        workspace=self.workspace)
        return {t.name: t for t in listing.tools}

    async def call(self, tool: McpTool, arguments: dict[str, Any] | None = None, *,
                   run_id: str = "run-1", lease_epoch: int = 1) -> ToolResult:
        context = AttemptContext(operation_id=new_id(), attempt_no=1, run_id=run_id, role="main",
                                 deadline=time.time() + 60, workspace_scope_id="scope",
                                 lease_epoch=lease_epoch)
        request = CapabilityRequest(operation_id=context.operation_id, resource_version_id="rel",
                                    capability_key=tool.capability_key, arguments=arguments or {})
        return await McpToolHandler(tool, self.sessions).invoke_once(request, context)

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [payload for k, payload in self.events if k == kind]


SERVER_START_DEADLINE_S = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_http(argv: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run ``argv`` (a server listening on ``port``, with ``env`` added to the environment) until
    the test ends, yielding its ``/mcp`` URL once it accepts connections."""
    proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + SERVER_START_DEADLINE_S
    try:
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"{argv[:2]} did not listen on 127.0.0.1:{port}")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
