"""The two MCP protocol profiles a connection speaks (``protocol:``), and the handshake of each.

::

    2025-11-25 (default)  initialize offering 2025-11-25 ─► initialized ─► the answer must be it
    2026-07-28            server/discover at 2026-07-28 ─► supportedVersions must hold it ─► adopt
                          (then every request carries the ``_meta`` envelope; no session id)
    either ─► Negotiated (version, server name and version) ─► the connection record
           └► a server that cannot speak the asked profile: MCP_VERSION_UNSUPPORTED naming both
              versions and ``mcp_servers.<server>.protocol``

Both are the ``mcp`` SDK's own requests on one ``ClientSession`` (``initialize`` /
``send_discover`` + ``adopt``); the tools, resources and prompts calls that follow are the same
code on both. ``input_required`` — 2026-07-28's replacement for the server→client sampling,
elicitation and roots requests — is never driven (no callback is declared, nothing starts a
model or waits for a person): ``input_required_error`` is the failure it becomes.

Owns: the handshake of each profile, the capabilities each declares, what an
``input_required`` result becomes. Does not own: transports and the session's lifetime
(``connection``), calls (``handler``, ``resources``, ``prompts``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from agentloom.config.mcp import MCP_PROTOCOLS
from agentloom.errors import OperationError
from agentloom.mcp.errors import (
    MCP_CONNECT_FAILED,
    MCP_INPUT_REQUIRED,
    MCP_VERSION_UNSUPPORTED,
    McpError,
    call_error,
)
from mcp import ClientSession, MCPError
from mcp import types as mt

__all__ = ["Negotiated", "declares_roots", "handshake", "input_required_error", "log_level",
           "modern"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Negotiated:
    """What a handshake settled: the protocol version and who the server says it is (a
    2026-07-28 server may not say: both names are then empty)."""

    protocol_version: str
    server_name: str
    server_version: str


def modern(protocol: str) -> bool:
    """``protocol`` is a per-request-envelope profile (2026-07-28), not a handshake one."""
    return protocol in MODERN_PROTOCOL_VERSIONS


def declares_roots(protocol: str, *, stdio: bool) -> bool:
    """``roots`` is declared to stdio servers on 2025-11-25 only (000 §6.2); 2026-07-28
    deprecates it and could ask for it only through ``input_required``, which is refused."""
    return stdio and not modern(protocol)


def log_level(protocol: str) -> mt.LoggingLevel | None:
    """The per-request log opt-in of a 2026-07-28 session (``debug``: every message the server
    sends, as a 2025-11-25 server sends them unasked); ``None`` on 2025-11-25."""
    return "debug" if modern(protocol) else None


async def handshake(session: ClientSession, *, server: str, protocol: str) -> Negotiated:
    """Negotiate ``protocol`` with ``server`` on ``session`` (entered, nothing sent yet).

    Raises:
        McpError: ``MCP_VERSION_UNSUPPORTED`` (the server cannot speak ``protocol``),
            ``MCP_CONNECT_FAILED`` (no answer to ``server/discover``).
        MCPError: another JSON-RPC error answered ``initialize``.
    """
    if modern(protocol):
        return await _discover(session, server, protocol)
    try:
        init = await session.initialize()
    except MCPError as exc:
        if exc.error.code == mt.UNSUPPORTED_PROTOCOL_VERSION:
            offered = _supported(exc.error.data)
            raise _unsupported(server, protocol, f"speaks protocol {', '.join(offered) or '?'}",
                               offered) from None
        raise
    except RuntimeError as exc:  # the SDK refuses an answer outside the handshake versions
        raise _unsupported(server, protocol, f"answered initialize outside the 2025 handshake "
                           f"({exc})", []) from None
    if init.protocol_version != protocol:
        raise _unsupported(server, protocol, f"answered protocol {init.protocol_version}",
                           [init.protocol_version])
    info = init.server_info
    return Negotiated(protocol_version=init.protocol_version, server_name=info.name,
                      server_version=info.version)


async def _discover(session: ClientSession, server: str, protocol: str) -> Negotiated:
    try:
        raw = await session.send_discover(protocol)
    except MCPError as exc:
        code = exc.error.code
        if code == mt.REQUEST_TIMEOUT:
            raise McpError(MCP_CONNECT_FAILED, (
                f"MCP server {server!r} did not answer server/discover (protocol {protocol}); a "
                f"2025-era server may ignore it: set mcp_servers.{server}.protocol: "
                '"2025-11-25"')) from None
        if code == mt.UNSUPPORTED_PROTOCOL_VERSION:
            offered = _supported(exc.error.data)
            raise _unsupported(server, protocol, f"speaks protocol {', '.join(offered) or '?'}",
                               offered) from None
        # a handshake-era server does not know server/discover (-32601) or refuses any request
        # before initialize: it is one to speak 2025-11-25 with
        raise _unsupported(server, protocol, f"answered server/discover with JSON-RPC error "
                           f"{code} (a 2025-era server)", ["2025-11-25"]) from None
    try:
        found = mt.DiscoverResult.model_validate(raw)
    except ValidationError:
        raise _unsupported(server, protocol, "answered server/discover with a result that is "
                           "not a DiscoverResult", []) from None
    if protocol not in found.supported_versions:
        raise _unsupported(server, protocol, "offers protocol "
                           f"{', '.join(found.supported_versions) or '(none)'}",
                           list(found.supported_versions))
    session.adopt(found)
    info = session.server_info
    return Negotiated(protocol_version=protocol, server_name=info.name if info else "",
                      server_version=info.version if info else "")


def _supported(data: Any) -> list[str]:
    try:
        return list(mt.UnsupportedProtocolVersionErrorData.model_validate(data).supported)
    except ValidationError:
        return []


def _unsupported(server: str, protocol: str, what: str, offered: list[str]) -> McpError:
    other = next((v for v in offered if v in MCP_PROTOCOLS and v != protocol), None)
    fix = (f'set mcp_servers.{server}.protocol: "{other}"' if other is not None
           else f"mcp_servers.{server}.protocol")
    return McpError(MCP_VERSION_UNSUPPORTED, (
        f"MCP server {server!r} {what}; this connection speaks {protocol} only ({fix})"))


def input_required_error(server: str, what: str, result: mt.InputRequiredResult) -> OperationError:
    """The failure of a request ``server`` answered with ``input_required``: AgentLoom declares
    no sampling, elicitation or roots and never retries with answers, so the request failed —
    outcome ``known`` (the server says it has not completed it)."""
    asked = sorted({request.method for request in (result.input_requests or {}).values()})
    return call_error(MCP_INPUT_REQUIRED, (
        f"MCP server {server!r} answered {what} with input_required "
        f"({', '.join(asked) or 'state only'}); AgentLoom does not answer server requests for "
        "sampling, elicitation or roots (000 §6.2), so the request failed"), outcome="known",
        details={"input_requests": asked})
