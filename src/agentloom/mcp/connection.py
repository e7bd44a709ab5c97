"""One MCP connection: a session of the official ``mcp`` client over stdio or Streamable HTTP.

::

    open_connection(server, config, …) ─► launch (stdio) / HTTP client (shared: ``http_pool``)
        ─► ClientSession ─► the handshake of ``config.protocol`` (``profiles``: initialize at
           2025-11-25, server/discover at 2026-07-28; a server that cannot speak it is refused)
        ─► ConnectionRecord
        … calls from any task …
    McpConnection.close() ─► session and transport closed in the task that opened them

Capabilities declared (000 §6.2): none but ``roots`` on stdio at 2025-11-25 (the workspace, as
the server sees it). No sampling, elicitation or tasks: a server that sends such a request
anyway gets the SDK's JSON-RPC error ("… not supported"), at once — nothing starts a model or
pauses the run (a 2026-07-28 server's ``input_required`` instead: ``profiles``).
The same holds for ``roots/list`` over HTTP. Logging messages and ``list_changed`` become bus
observations (``mcp.log``, ``mcp.list_changed``); a catalog already published is not changed.

The handshake is bounded by the server's ``timeout_s`` (``watch.bounded``: else
``CONNECT_TIMEOUT_S``; ``MCP_STEP_TIMEOUT`` naming the server, the step and the limit). The
transport's end (the server exited) ends the connection at once (``watch.Watched``): it is no
longer ``alive`` and is ``lost``, so the pool opens another for the next call instead of
sending it nowhere. A line a stdio server writes that is not JSON-RPC is one warning naming
the server, never a traceback; the session goes on.

Owns: opening, holding and closing one session; the connection record. Does not own: which
sessions a run holds (``pool``), tool calls (``handler``), the launcher (``launch``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from agentloom.config.mcp import HttpServerConfig, StdioServerConfig
from agentloom.errors import AgentLoomError
from agentloom.mcp.errors import (
    AUTH_REQUIRED_JSONRPC,
    MCP_AUTH_REQUIRED,
    MCP_CONNECT_FAILED,
    McpError,
)
from agentloom.mcp.launch import LaunchContext, StdioLaunch
from agentloom.mcp.profiles import declares_roots, handshake, log_level, modern
from agentloom.mcp.secrets import resolve_values, scrub
from agentloom.mcp.watch import CONNECT_TIMEOUT_S, Watched, bounded
from agentloom.telemetry import propagating, trace_headers_of_body
from mcp import ClientSession, MCPError, stdio_client
from mcp import types as mt

if TYPE_CHECKING:
    from agentloom.mcp.oauth import McpCredentials

__all__ = ["CONNECT_TIMEOUT_S", "ConnectionRecord", "McpConnection", "Notifier", "new_http_client",
           "open_connection"]

log = logging.getLogger(__name__)

Notifier = Callable[[str, dict[str, Any]], None]
"""Told of what a server reports (``mcp.log``, ``mcp.list_changed``, ``mcp.progress``)."""

ServerConfig = StdioServerConfig | HttpServerConfig


def _client_info() -> mt.Implementation:
    try:
        own = version("agentloom")
    except PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
        own = "0"
    return mt.Implementation(name="agentloom", version=own)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionRecord:
    """What the handshake negotiated: recorded in the metadata of every call's raw result
    (``metadata.mcp.connection``) and in ``agentloom mcp list``."""

    server: str
    transport: str
    protocol_version: str
    server_name: str
    server_version: str
    opened_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "transport": self.transport,
                "protocol_version": self.protocol_version, "server_name": self.server_name,
                "server_version": self.server_version, "opened_at": self.opened_at}


@dataclass(slots=True, eq=False)
class McpConnection:
    """An open session to one server. Use ``session`` from any task; ``close`` it once."""

    server: str
    config: ServerConfig
    session: ClientSession
    record: ConnectionRecord
    secrets: list[str] = field(repr=False)
    list_changed: int = 0
    """``notifications/tools/list_changed`` received: the catalog of a later runtime build
    differs, this run's does not."""
    _closing: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _ended: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _task: asyncio.Task[None] | None = field(default=None, repr=False)
    _closed: bool = field(default=False, repr=False)

    @property
    def alive(self) -> bool:
        """The session still runs: neither closed nor ended by its transport (a server that
        exited)."""
        return self._task is not None and not self._task.done() and not self._closing.is_set()

    @property
    def lost(self) -> bool:
        """The session ended without being closed: its server exited, or its transport
        failed."""
        return not self._closed and (self._ended.is_set() or (
            self._task is not None and self._task.done()))

    def scrub(self, text: str) -> str:
        """``text`` without any resolved ``${VAR}`` value of this connection."""
        return scrub(text, self.secrets)

    async def close(self) -> None:
        """Close the session and its transport (a stdio server: stdin closed, then SIGTERM /
        SIGKILL of its process group). Bounded; never raises."""
        self._closed = True
        self._closing.set()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._task), timeout=10.0)


async def open_connection(
    server: str,
    config: ServerConfig,
    *,
    launch: StdioLaunch,
    context: LaunchContext,
    notify: Notifier,
    observed: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    http_client: httpx2.AsyncClient | None = None,
    credentials: McpCredentials | None = None,
) -> McpConnection:
    """Start or reach ``server``, run the handshake, and return the open connection.

    The session lives in a task of its own (the ``mcp`` transports must be closed by the task
    that opened them); ``observed`` is added to every observation it sends (e.g. the run id).
    ``http_client``: the shared client of an HTTP server (``http_pool``), its headers set and
    left open; without one the connection makes and closes its own, sending the OAuth grant
    ``credentials`` hold for the server (``oauth``: a 401 is ``MCP_AUTH_REQUIRED``).

    Raises:
        McpError: ``MCP_SECRET_MISSING``, ``MCP_CONNECT_FAILED`` (the process or URL could not
            be reached, or the handshake failed), ``MCP_STEP_TIMEOUT`` (the handshake took
            longer than ``watch.step_limit``), ``MCP_VERSION_UNSUPPORTED`` (the server cannot
            speak ``config.protocol``).
        SandboxError: the launcher refused to start a stdio server.
    """
    where = f"mcp_servers.{server}"
    secrets: list[str] = []
    base = {"server": server, **(observed or {})}
    if isinstance(config, StdioServerConfig):
        env = resolve_values(config.env, where=f"{where}.env", secrets=secrets, environ=environ)
        launch_ctx = replace(context, env=env)
        params = launch(config, launch_ctx)  # SandboxError: nothing was started
        transport: Any = stdio_client(params)
        roots = (_roots_callback(launch_ctx, params)
                 if declares_roots(config.protocol, stdio=True) else None)
    else:
        headers = resolve_values(config.headers, where=f"{where}.headers", secrets=secrets,
                                 environ=environ)
        transport = None
        roots = None
    ready: asyncio.Future[McpConnection] = asyncio.get_running_loop().create_future()
    closing, ended = asyncio.Event(), asyncio.Event()

    def on_end() -> None:  # the transport ended: the session's task closes it at once
        ended.set()
        closing.set()

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        notify("mcp.log", {**base, "level": params.level, "logger": params.logger,
                           "data": params.data})

    holder: list[McpConnection] = []
    garbled = [0]  # lines that were not JSON-RPC

    async def on_message(message: mt.ServerNotification | Exception) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            if holder:
                holder[0].list_changed += 1
            notify("mcp.list_changed", {**base, "what": "tools"})
        elif isinstance(message, ValueError) and isinstance(config, StdioServerConfig):
            if not garbled[0]:  # the SDK logs no traceback of it (``watch``)
                log.warning("MCP server %r wrote a line that is not JSON-RPC on stdout; ignored "
                            "(further ones are not reported)", server)
            garbled[0] += 1
        elif isinstance(message, Exception):
            log.debug("MCP server %s: transport error %s", server, type(message).__name__)

    async def hold() -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                if isinstance(config, HttpServerConfig):
                    http = http_client if http_client is not None else (
                        await stack.enter_async_context(new_http_client(
                            headers, None if credentials is None
                            else credentials.transport(server, config.url))))
                    streams = await stack.enter_async_context(
                        streamable_http_client(config.url, http_client=http))
                else:
                    streams = await stack.enter_async_context(transport)
                read, write = streams
                session = await stack.enter_async_context(ClientSession(
                    Watched(read, on_end), write, list_roots_callback=roots,
                    logging_callback=on_log, message_handler=on_message,
                    client_info=_client_info(), log_level=log_level(config.protocol)))
                step = "server/discover" if modern(config.protocol) else "initialize"
                with bounded(server, config, step):
                    got = await handshake(session, server=server, protocol=config.protocol)
                record = ConnectionRecord(
                    server=server, transport=config.transport,
                    protocol_version=got.protocol_version, server_name=got.server_name,
                    server_version=got.server_version, opened_at=time.time())
                conn = McpConnection(server=server, config=config, session=session,
                                     record=record, secrets=secrets, _closing=closing,
                                     _ended=ended)
                holder.append(conn)
                notify("mcp.connected", {**base, **record.to_dict()})
                ready.set_result(conn)
                await closing.wait()
        except BaseException as exc:  # reported to the opener, never lost
            if not ready.done():
                ready.set_exception(_connect_error(server, config, exc, secrets))
            elif not isinstance(exc, asyncio.CancelledError | Exception):
                raise

    task = asyncio.ensure_future(hold())
    try:
        conn = await asyncio.shield(ready)
    except BaseException:
        closing.set()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(task), timeout=10.0)
        raise
    conn._task = task
    return conn


def new_http_client(headers: dict[str, str],
                    transport: httpx2.AsyncBaseTransport | None = None) -> httpx2.AsyncClient:
    """A client (its own TCP connection pool) for an HTTP server: ``headers`` (resolved) on
    every request; ``CONNECT_TIMEOUT_S`` to connect, 300 s to read (a long tool call);
    ``transport``: e.g. ``oauth.BearerTransport`` (the server's stored OAuth grant). While a
    runtime of this process traces, a request whose JSON-RPC ``params._meta`` carries the
    caller's trace context (the ``mcp`` SDK writes it there) carries it as headers too."""
    hooks = {"request": [_trace_headers]} if propagating() else None
    return httpx2.AsyncClient(headers=headers, transport=transport, event_hooks=hooks,
                              timeout=httpx2.Timeout(CONNECT_TIMEOUT_S, read=300.0))


async def _trace_headers(request: httpx2.Request) -> None:
    """Send the trace context of the call this request belongs to as W3C headers: the
    request is posted from the session's task, where the caller's context is not current."""
    if request.method != "POST":
        return
    try:
        body = request.content
    except httpx2.RequestNotRead:  # a streamed body: no JSON-RPC message to read it from
        return
    request.headers.update(trace_headers_of_body(body))


def _roots_callback(context: LaunchContext, params: Any) -> Any:
    """``roots/list`` of a stdio server: its workspace as it sees it (the launcher says where:
    ``/work`` in a bubblewrap sandbox unless that would hide its installation, else the host
    folder)."""
    where = getattr(params, "workspace_path", None)
    seen = Path(where) if where else context.workspace
    result = mt.ListRootsResult(roots=[mt.Root(uri=seen.as_uri(), name="workspace")])  # type: ignore[arg-type]

    async def list_roots(ctx: ClientRequestContext) -> mt.ListRootsResult:
        return result

    return list_roots


def _connect_error(server: str, config: ServerConfig, exc: BaseException,
                   secrets: list[str]) -> BaseException:
    if isinstance(exc, BaseExceptionGroup):  # the transports' task groups wrap what we raised
        ours = [e for e in _leaves(exc) if isinstance(e, AgentLoomError)]
        if ours:
            return ours[0]
    if isinstance(exc, AgentLoomError):
        return exc
    for leaf in _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]:
        if isinstance(leaf, MCPError) and leaf.error.code == AUTH_REQUIRED_JSONRPC:  # oauth: 401
            return McpError(MCP_AUTH_REQUIRED, scrub(leaf.error.message, secrets))
    target = (f"command {config.command!r}" if isinstance(config, StdioServerConfig)
              else f"URL {config.url}")
    if isinstance(exc, TimeoutError):
        why = f"the transport timed out ({exc or type(exc).__name__})"
    elif isinstance(exc, MCPError):
        why = f"JSON-RPC error {exc.error.code}: {exc.error.message}"
    elif isinstance(exc, BaseExceptionGroup):
        leaves = _leaves(exc)
        why = "; ".join(f"{type(e).__name__}: {e}" for e in leaves[:3]) or type(exc).__name__
    else:
        why = f"{type(exc).__name__}: {exc}"
    return McpError(MCP_CONNECT_FAILED, scrub(
        f"MCP server {server!r} ({config.transport}, {target}) could not be connected: {why}",
        secrets))


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out
