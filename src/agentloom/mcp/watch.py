"""What keeps one MCP session from hanging or dying unnoticed (issue #34, 5).

::

    bounded(server, config, step)   every step: the handshake (``connection``), each page of a
                                    listing (``catalog``, ``resources``, ``prompts``) ─► within
                                    step_limit(config) (``timeout_s``, else CONNECT_TIMEOUT_S)
                                    └ else McpError MCP_STEP_TIMEOUT (server, step, limit)
    Watched(read stream, on_end)    the transport's end (the server exited) ─► on_end, before the
                                    session sees it: the connection is no longer alive
    the SDK's traceback of a stdout line that is not JSON-RPC ─► dropped (the connection warns
                                    once, naming the server)

A call's own timeout is not here: ``tools/call`` and ``resources/read`` pass theirs to the
request (``handler``, ``resources``), and a timed-out call's outcome is unknown.

Owns: the step limit, noticing a transport's end, the SDK's parse-error record. Does not own:
the session (``connection``), reopening one (``pool``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import anyio
from mcp.shared.message import SessionMessage

from agentloom.config.mcp import HttpServerConfig, StdioServerConfig
from agentloom.mcp.errors import MCP_STEP_TIMEOUT, McpError

__all__ = ["CONNECT_TIMEOUT_S", "Watched", "bounded", "step_limit"]

CONNECT_TIMEOUT_S = 30.0
"""How long a step — the handshake (``initialize`` / ``server/discover``), one page of a
listing — may take when the server's entry sets no ``timeout_s``."""

_NOT_JSON_RPC = "Failed to parse JSONRPC message from server"
"""What the ``mcp`` stdio client logs, with a traceback, for a line that is not JSON-RPC."""


def step_limit(config: StdioServerConfig | HttpServerConfig) -> float:
    """How long one step with ``config``'s server may take: its ``timeout_s``, else
    ``CONNECT_TIMEOUT_S``."""
    return config.timeout_s or CONNECT_TIMEOUT_S


@contextlib.contextmanager
def bounded(server: str, config: StdioServerConfig | HttpServerConfig, step: str) -> Iterator[None]:
    """Bound ``step`` (``initialize``, ``tools/list``, …) with ``server`` by ``step_limit``;
    the request is cancelled when it passes.

    Raises:
        McpError: ``MCP_STEP_TIMEOUT`` naming the server, the step and the limit.
    """
    limit = step_limit(config)
    try:
        with anyio.fail_after(limit) as scope:
            yield
    except TimeoutError:
        if not scope.cancel_called:  # not this step's limit: the transport's own
            raise
        where = (f"mcp_servers.{server}.timeout_s" if config.timeout_s
                 else f"the default; set mcp_servers.{server}.timeout_s to change it")
        raise McpError(MCP_STEP_TIMEOUT, (
            f"MCP server {server!r} did not answer {step} within {limit:g} s ({where})")) from None


class Watched:
    """A transport's read stream as the session reads it (the SDK's ``ReadStream``): its end —
    the server exited, the connection closed — calls ``on_end`` before the session sees it."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        """The transport's stream (``ReadStream[SessionMessage | Exception]``)."""
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item, where the transport keeps one."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Watched:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Watched:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _NoParseTraceback(logging.Filter):
    """Drops the SDK's record of a stdout line that is not JSON-RPC (``logger.exception``: a
    whole traceback): the connection reports the line itself, once, naming the server."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != _NOT_JSON_RPC


logging.getLogger("mcp.client.stdio").addFilter(_NoParseTraceback())
