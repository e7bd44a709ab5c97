"""A remote agent's card, fetched and checked when the runtime is built.

::

    a2a_agents.<name>.card_url ─► GET (headers, ${VAR} read now) ─► JSON
        no ``supportedInterfaces``         ─► A2A_VERSION_UNSUPPORTED (an A2A 0.3 card)
        parsed by the SDK (``parse_agent_card``)
        no JSONRPC / HTTP+JSON interface of protocol version 1.0 ─► A2A_VERSION_UNSUPPORTED
    ─► A2aAgent(card with only those interfaces, in the card's order: the first is preferred)

Owns: fetching and checking cards, and the headers of a remote agent as sent (``${VAR}``
resolved with ``agentloom.secret_refs``, never stored). Does not own: the ``a2a_agents``
shape (``config.a2a``), calls (``handler``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx

from agentloom.a2a.catalog import A2aAgent
from agentloom.a2a.errors import (
    A2A_CARD_UNAVAILABLE,
    A2A_SECRET_MISSING,
    A2A_VERSION_UNSUPPORTED,
    A2aError,
)
from agentloom.config.a2a import A2aAgentConfig
from agentloom.secret_refs import resolve_references, scrub

if TYPE_CHECKING:
    from a2a.types import AgentCard

__all__ = ["BINDINGS", "CARD_TIMEOUT_S", "checked_card", "fetch_agent", "resolved_headers"]

BINDINGS = ("JSONRPC", "HTTP+JSON")
"""The protocol bindings AgentLoom's client speaks (the SDK's ``TransportProtocol`` names)."""
CARD_TIMEOUT_S = 10.0


def resolved_headers(name: str, config: A2aAgentConfig, *, secrets: list[str],
                     environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``config.headers`` with every ``${VAR}`` read from the environment now (each value read
    is appended to ``secrets``, for ``scrub``).

    Raises:
        A2aError: ``A2A_SECRET_MISSING`` naming ``a2a_agents.<name>.headers.<header>`` and the
            variable (never a value).
    """
    return resolve_references(config.headers, where=f"a2a_agents.{name}.headers",
                              secrets=secrets, environ=environ,
                              missing=lambda message: A2aError(A2A_SECRET_MISSING, message))


def fetch_agent(name: str, config: A2aAgentConfig, *,
                environ: Mapping[str, str] | None = None) -> A2aAgent:
    """Fetch ``config.card_url`` (blocking) and check it: the remote agent, ready to publish.

    Raises:
        A2aError: the card could not be fetched or read (``A2A_CARD_UNAVAILABLE``), it offers
            no A2A 1.0 interface AgentLoom speaks (``A2A_VERSION_UNSUPPORTED``), or a header
            names an unset variable (``A2A_SECRET_MISSING``); each message names
            ``a2a_agents.<name>``.
    """
    secrets: list[str] = []
    headers = resolved_headers(name, config, secrets=secrets, environ=environ)
    where = f"a2a_agents.{name}"
    try:
        with httpx.Client(headers=headers, timeout=CARD_TIMEOUT_S) as http:
            response = http.get(config.card_url)
            response.raise_for_status()
            data = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise A2aError(A2A_CARD_UNAVAILABLE, scrub(
            f"{where}: the agent card at {config.card_url} could not be read "
            f"({type(exc).__name__}: {exc}); check card_url and that the agent is up",
            secrets)) from None
    return A2aAgent(name=name, config=config, card=checked_card(where, config.card_url, data))


def checked_card(where: str, url: str, data: Any) -> AgentCard:
    """The SDK ``AgentCard`` of card JSON ``data`` with only its A2A 1.0 JSONRPC and HTTP+JSON
    interfaces, in order.

    Raises:
        A2aError: as ``fetch_agent`` says (``where`` heads the message).
    """
    from a2a.client.card_resolver import parse_agent_card
    from google.protobuf.json_format import ParseError  # type: ignore[import-untyped]

    if not isinstance(data, dict):
        raise A2aError(A2A_CARD_UNAVAILABLE, f"{where}: {url} did not answer with an agent "
                       "card (a JSON object)")
    if not data.get("supportedInterfaces"):
        said = f" (protocolVersion {data['protocolVersion']!r})" \
            if isinstance(data.get("protocolVersion"), str) else ""
        raise A2aError(A2A_VERSION_UNSUPPORTED, (
            f"{where}: the agent card at {url} has no supportedInterfaces{said}: it is an A2A "
            "0.3 card, and AgentLoom speaks A2A 1.0 only; point card_url at the agent's 1.0 "
            f"card or remove {where}"))
    try:
        card = parse_agent_card(dict(data))
    except ParseError as exc:
        raise A2aError(A2A_CARD_UNAVAILABLE, f"{where}: the agent card at {url} is not a "
                       f"valid A2A agent card: {exc}") from None
    usable = [i for i in card.supported_interfaces
              if i.protocol_binding in BINDINGS and _is_1_0(i.protocol_version)]
    if not usable:
        offered = ", ".join(f"{i.protocol_binding} {i.protocol_version or '(no version)'}"
                            for i in card.supported_interfaces) or "nothing"
        raise A2aError(A2A_VERSION_UNSUPPORTED, (
            f"{where}: the agent card at {url} offers {offered}; AgentLoom needs a JSONRPC or "
            f"HTTP+JSON interface of A2A protocol version 1.0; point card_url at the agent's "
            f"1.0 card or remove {where}"))
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(usable)
    return card


def _is_1_0(version: str) -> bool:
    """``1.0`` or a patch of it (``1.0.2``): patches never change the protocol."""
    return version.split(".")[:2] == ["1", "0"]
