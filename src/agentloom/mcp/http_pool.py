"""HTTP clients shared across runs: one ``httpx2.AsyncClient`` — one TCP connection pool — per
(space, connection version, credential binding, workspace scope) (000 §6.2).

::

    McpSessions.get(a tool of an http server, attempt ctx)
        ─► HttpClients.acquire(space, server, config, workspace scope)
              headers resolved (${VAR}) ─► HttpPoolKey ─► the key's client (made on first use)
        ─► open_connection(…, http_client=client)   the MCP session stays per (run, lease epoch)
    the session closed ─► release(key): an idle client is kept (at most MAX_IDLE, oldest closed)
    McpSessions.aclose ─► HttpClients.aclose: every client closed

*Connection version*: a digest of the server's config entry as written (``${VAR}`` not
resolved), so an edited entry never reuses a client made for the old one. *Credential
binding*: a keyed digest (HMAC-SHA-256 under a random key of this pool, never stored) of the
resolved header names and values — a changed token gets another client; the values are never
a key, logged or stored, and the digest cannot be checked against a guessed token outside this
process. Only TCP connections are shared: each MCP session has its own transport and its own
``Mcp-Session-Id``, which is the server's name for that session, not an AgentLoom session.

Owns: which client serves a connection, and closing clients. Does not own: MCP sessions
(``pool``), the handshake (``connection``).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx2

from agentloom.canonical import canonical_json
from agentloom.config.mcp import HttpServerConfig
from agentloom.mcp.connection import new_http_client
from agentloom.mcp.secrets import resolve_values

if TYPE_CHECKING:
    from agentloom.mcp.oauth import McpCredentials

__all__ = ["MAX_IDLE", "HttpClients", "HttpPoolKey", "connection_version"]

MAX_IDLE = 16
"""Clients kept open with no session using them (the oldest idle one is closed beyond it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpPoolKey:
    """What two MCP sessions must share to share a client (000 §6.2): digests only."""

    space_id: str
    connection_version: str
    credential_binding: str
    workspace_scope_id: str | None


def connection_version(server: str, config: HttpServerConfig) -> str:
    """The digest of ``server``'s config entry as written (``${VAR}`` references, not values)."""
    entry = {"server": server, "config": config.model_dump(mode="json")}
    return hashlib.sha256(canonical_json(entry).encode()).hexdigest()


@dataclass(slots=True)
class _Held:
    client: httpx2.AsyncClient
    users: int = 0
    idle_since: int = 0


@dataclass(slots=True)
class HttpClients:
    """The shared HTTP clients of one kernel's MCP sessions, by ``HttpPoolKey``."""

    made: int = 0
    """How many clients were made (a figure for tests and benchmarks)."""
    credentials: McpCredentials | None = None
    """The stored OAuth grants (``oauth``): a client of a server sends its grant's token."""
    _held: dict[HttpPoolKey, _Held] = field(default_factory=dict)
    _binding_key: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    _tick: int = 0

    def acquire(self, *, space_id: str, server: str, config: HttpServerConfig,
                workspace_scope_id: str | None,
                environ: dict[str, str] | None = None) -> tuple[HttpPoolKey, httpx2.AsyncClient]:
        """The client for one more session of ``server``; ``release`` its key when that session
        is closed.

        Raises:
            McpError: ``MCP_SECRET_MISSING``, a ``${VAR}`` of ``headers`` is not set.
        """
        headers = resolve_values(config.headers, where=f"mcp_servers.{server}.headers",
                                 secrets=[], environ=environ)
        binding = hmac.new(self._binding_key, canonical_json(headers).encode(),
                           hashlib.sha256).hexdigest()
        key = HttpPoolKey(space_id=space_id, connection_version=connection_version(server, config),
                          credential_binding=binding, workspace_scope_id=workspace_scope_id)
        held = self._held.get(key)
        if held is None:
            bearer = (None if self.credentials is None
                      else self.credentials.transport(server, config.url))
            held = self._held[key] = _Held(new_http_client(headers, bearer))
            self.made += 1
        held.users += 1
        return key, held.client

    async def release(self, key: HttpPoolKey) -> None:
        """One session of ``key``'s client is closed; past ``MAX_IDLE`` idle clients, the one
        idle longest is closed."""
        held = self._held.get(key)
        if held is None:
            return
        held.users = max(0, held.users - 1)
        if held.users:
            return
        self._tick += 1
        held.idle_since = self._tick
        idle = sorted((k for k, h in self._held.items() if not h.users),
                      key=lambda k: self._held[k].idle_since)
        for stale in idle[:max(0, len(idle) - MAX_IDLE)]:
            await self._close(stale)

    def __len__(self) -> int:
        return len(self._held)

    async def aclose(self) -> None:
        """Close every client (the kernel is closing: no session is open any more)."""
        for key in list(self._held):
            await self._close(key)

    async def _close(self, key: HttpPoolKey) -> None:
        held = self._held.pop(key)
        with contextlib.suppress(Exception):
            await held.client.aclose()
