"""Issue #15 / 000 §6.2: "HTTP connections are pooled by (space, connection version, credential
binding, workspace scope); an MCP session handle is bound to run + lease epoch and never handed
to a new lease holder after recovery (it reconnects)." A scripted TCP relay in front of the
real lab server (``servers/eras.py`` over Streamable HTTP) counts the TCP connections the
server is sent: two runs share one client and its connections, a changed header value (or
another workspace scope) gets another client, and the kernel's close closes them all."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from mcp_support import Pool, http
from test_protocol_2026 import ERAS, MODERN, free_port, serve_http

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.ids import new_id
from agentloom.mcp import McpTool, McpToolHandler
from agentloom.mcp.http_pool import connection_version
from agentloom.results import ToolResult

TOKEN = "pool-tok-3c9e51d07b"
WAIT_S = 20.0  # bounds the wait for the relay to see a connection close


@dataclasses.dataclass
class Relay:
    """A TCP relay to ``target`` on 127.0.0.1 that counts the connections it accepts."""

    target: int
    accepted: int = 0
    open: int = 0
    idle: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    """Set while no connection is open."""

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(OSError):
            writer.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.open += 1
        self.idle.clear()
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            self.open -= 1
            if not self.open:
                self.idle.set()


@pytest.fixture
def lab_port() -> Iterator[int]:
    port = free_port()
    for _ in serve_http([sys.executable, str(ERAS), "http", str(port)], port):
        yield port


@contextlib.asynccontextmanager
async def relay_to(port: int) -> AsyncIterator[tuple[Relay, str]]:
    relay = Relay(port)
    server = await asyncio.start_server(relay._accept, "127.0.0.1", 0)
    listening = server.sockets[0].getsockname()[1]
    try:
        yield relay, f"http://127.0.0.1:{listening}/mcp"
    finally:
        server.close()


async def test_issue15_two_runs_against_one_http_server_reuse_one_pool_a_new_token_another(
    tmp_path: Path, lab_port: int, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POOL_TOKEN", TOKEN)
    async with relay_to(lab_port) as (relay, url):
        config = http(url, protocol=MODERN, headers={"Authorization": "Bearer ${POOL_TOKEN}"})
        pool = Pool(tmp_path)
        tools = await pool.tools("lab", config)  # listing: its own client, closed with it
        before = relay.accepted

        first = await pool.call(tools["echo"], {"text": "a"}, run_id="run-a")
        second = await pool.call(tools["echo"], {"text": "b"}, run_id="run-b")

        assert (first.text(), second.text()) == ("echo: a", "echo: b")
        assert pool.sessions.opened == 2  # one MCP session per run …
        assert pool.sessions.http.made == 1 and len(pool.sessions.http) == 1  # … one client
        assert relay.accepted - before == 1  # … and the second run reused its TCP connection

        monkeypatch.setenv("POOL_TOKEN", TOKEN + "-rotated")
        third = await pool.call(tools["echo"], {"text": "c"}, run_id="run-c")

        assert third.text() == "echo: c"
        assert pool.sessions.http.made == 2 and relay.accepted - before == 2
        (key, *_) = pool.sessions.http._held  # the key holds digests, never the header value
        assert not any(TOKEN in str(part) for part in dataclasses.astuple(key))
        assert key.connection_version == connection_version("lab", config)

        await pool.sessions.aclose()
        assert len(pool.sessions.http) == 0
        with anyio.fail_after(WAIT_S):
            await relay.idle.wait()  # the server's connections are closed too


async def test_issue15_a_new_lease_epoch_reconnects_on_the_shared_pool_another_scope_does_not(
    tmp_path: Path, lab_port: int,
) -> None:
    async with relay_to(lab_port) as (relay, url):
        config = http(url, protocol=MODERN)
        pool = Pool(tmp_path)
        tools = await pool.tools("lab", config)
        before = relay.accepted

        await pool.call(tools["echo"], {"text": "x"}, run_id="run-a", lease_epoch=1)
        held = pool.sessions._open[("run-a", "lab")][1]
        await pool.call(tools["echo"], {"text": "y"}, run_id="run-a", lease_epoch=2)
        taken_over = pool.sessions._open[("run-a", "lab")][1]

        assert taken_over is not held and not held.alive  # the old epoch's session is closed
        assert pool.sessions.opened == 2 and pool.sessions.http.made == 1
        assert relay.accepted - before == 1

        pool.sessions.space_of = lambda scope: f"space-of-{scope}"  # the kernel: the scope's owner's
        elsewhere = await call_in_scope(pool, tools["echo"], "scope-2")

        assert elsewhere.text() == "echo: z"
        assert pool.sessions.http.made == 2 and relay.accepted - before == 2
        assert {(k.space_id, k.workspace_scope_id) for k in pool.sessions.http._held} == {
            ("default", "scope"), ("space-of-scope-2", "scope-2")}
        await pool.sessions.aclose()


async def test_issue15_2025_profile_sessions_share_the_client_too(
    tmp_path: Path, lab_port: int,
) -> None:
    async with relay_to(lab_port) as (_, url):
        pool = Pool(tmp_path)
        tools = await pool.tools("lab", http(url))

        for run_id in ("run-a", "run-b"):
            assert (await pool.call(tools["echo"], {"text": run_id}, run_id=run_id)).text() == \
                f"echo: {run_id}"
            assert pool.sessions._open[(run_id, "lab")][1].record.protocol_version == "2025-11-25"

        assert pool.sessions.opened == 2 and pool.sessions.http.made == 1
        await pool.sessions.aclose()
        assert len(pool.sessions.http) == 0


async def call_in_scope(pool: Pool, tool: McpTool, scope: str) -> ToolResult:
    """``echo`` of ``z`` in run ``run-s`` whose workspace scope is ``scope``."""
    context = AttemptContext(operation_id=new_id(), attempt_no=1, run_id="run-s", role="main",
                             deadline=time.time() + 60, workspace_scope_id=scope, lease_epoch=1)
    request = CapabilityRequest(operation_id=context.operation_id, resource_version_id="rel",
                                capability_key=tool.capability_key, arguments={"text": "z"})
    return await McpToolHandler(tool, pool.sessions).invoke_once(request, context)
