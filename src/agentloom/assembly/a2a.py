"""The A2A part of building a runtime from a configuration: fetch and check the card of every
remote agent some agent lists as ``a2a.<name>`` (``agentloom.a2a.card``), once, when the
runtime is built: the cards found are the release's catalog, frozen for its runs (000 §2.1).

A card that cannot be fetched, is not an A2A 1.0 card (a 0.3-only agent), or whose headers
name an unset variable is a ``ConfigError`` naming ``a2a_agents.<name>`` — never a failure
mid-run. Agents nobody lists are not fetched.

Owns: ``a2a.<name>`` entries at build time. Does not own: the ``a2a_agents`` shape
(``config.a2a``), fetching cards or calling agents (``agentloom.a2a``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloom.assembly.entries import tool_entries
from agentloom.config import Config
from agentloom.config.a2a import a2a_entry_agent
from agentloom.errors import AgentLoomError, ConfigError
from agentloom.extras import require

if TYPE_CHECKING:
    from agentloom.a2a import A2aAgent

__all__ = ["a2a_catalog"]


def a2a_catalog(config: Config) -> dict[str, A2aAgent]:
    """Every remote agent the agents list, by name, its card fetched and checked now.

    Raises:
        MissingExtra: an agent is used and the ``a2a`` extra is not installed.
        ConfigError: a card that cannot be used; the message names ``a2a_agents.<name>`` and
            the code is the A2A one (``A2A_CARD_UNAVAILABLE``, ``A2A_VERSION_UNSUPPORTED``,
            ``A2A_SECRET_MISSING``).
    """
    used = [name for name in config.a2a_agents
            if any(a2a_entry_agent(entry) == name for entry in tool_entries(config))]
    if not used:
        return {}
    require("a2a", f"{config.origin}: calling A2A agents")
    from agentloom.a2a.card import fetch_agent  # the A2A SDK is imported only when used

    agents: dict[str, A2aAgent] = {}
    for name in used:
        try:
            agents[name] = fetch_agent(name, config.a2a_agents[name])
        except AgentLoomError as exc:
            raise ConfigError(f"{config.origin}: {exc.error.message}", code=exc.code) from None
    return agents
