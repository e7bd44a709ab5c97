"""The SDK client of one remote agent, made on first use in each event loop.

A client is made by the SDK's ``ClientFactory`` from the card checked at build time (its A2A
1.0 interfaces only; JSONRPC and HTTP+JSON both accepted, the card's first one used), with
streaming on (used when the card says ``streaming``) and an ``httpx`` client carrying the
agent's ``headers`` — their ``${VAR}`` read from the environment *now*, at connection time,
kept only in that client. Clients are kept per event loop (an ``httpx`` client belongs to
the loop it was first used in) and closed with ``aclose``.

Owns: making and keeping clients. Does not own: the card (``card``), calls (``handler``).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass

import httpx
from a2a.client import Client, ClientConfig, ClientFactory

from agentloom.a2a.card import BINDINGS, resolved_headers
from agentloom.a2a.catalog import A2aAgent

__all__ = ["A2aClients", "Connected"]

CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Connected:
    """One client and what a call needs to know about it."""

    client: Client
    http: httpx.AsyncClient
    secrets: tuple[str, ...]
    """The header values read from the environment (scrubbed from every message)."""


class A2aClients:
    """The clients of one remote agent, one per event loop."""

    def __init__(self, agent: A2aAgent) -> None:
        self.agent = agent
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Connected] = \
            weakref.WeakKeyDictionary()

    def get(self) -> Connected:
        """This loop's client, made now if there is none.

        Raises:
            A2aError: ``A2A_SECRET_MISSING``: a header names an unset variable.
        """
        loop = asyncio.get_running_loop()
        connected = self._by_loop.get(loop)
        if connected is None:
            secrets: list[str] = []
            headers = resolved_headers(self.agent.name, self.agent.config, secrets=secrets)
            # no read timeout: a stream may be quiet for long; the run deadline bounds a call
            http = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(
                CONNECT_TIMEOUT_S, read=None))
            factory = ClientFactory(ClientConfig(
                streaming=True, httpx_client=http, supported_protocol_bindings=list(BINDINGS)))
            connected = Connected(factory.create(self.agent.card), http, tuple(secrets))
            self._by_loop[loop] = connected
        return connected

    async def aclose(self) -> None:
        """Close this loop's client (others are closed with their loop)."""
        connected = self._by_loop.pop(asyncio.get_running_loop(), None)
        if connected is not None:
            await connected.http.aclose()
