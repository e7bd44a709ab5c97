"""``a2a_agents:`` — remote A2A 1.0 agents a configuration calls (docs/a2a.md).

::

    a2a_agents:
      billing: {card_url: "https://billing.example/.well-known/agent-card.json",
                headers: {Authorization: "Bearer ${BILLING_TOKEN}"}}
    agents:
      main: {tools: [a2a.billing], …}

Owns: the shape of one remote agent entry, and ``a2a.<name>`` tool entries. Does not own:
fetching or checking the agent card, resolving ``${VAR}`` in ``headers`` (at connection time,
by ``agentloom.secret_refs``, never stored), calling the agent (``agentloom.a2a``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

# the URL and header checks (names, no line breaks, ``${NAME}`` references) are MCP's
from agentloom.config.mcp import checked_headers, http_url

__all__ = ["A2A_TOOL_ENTRY", "A2aAgentConfig", "a2a_entry_agent"]

A2A_TOOL_ENTRY = re.compile(r"^a2a\.(?P<agent>[A-Za-z][A-Za-z0-9_-]{0,57})$")
"""An agent's ``tools`` entry naming a remote agent: ``a2a.<name>`` (its one capability is
``a2a.<name>.send``)."""


def a2a_entry_agent(entry: str) -> str | None:
    """The remote agent an ``a2a.<name>`` tools entry names, else ``None``."""
    match = A2A_TOOL_ENTRY.match(entry)
    return match["agent"] if match else None


class A2aAgentConfig(BaseModel):
    """One remote agent: its agent card at ``card_url`` (fetched and checked when the runtime
    is built: it must offer an A2A 1.0 interface) and ``headers`` sent with the card request
    and every call (values may hold ``${VAR}``, read from AgentLoom's environment when the
    agent is first connected, never stored, logged or shown). Default: no headers."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    card_url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("card_url")
    @classmethod
    def _url(cls, url: str) -> str:
        return http_url(url)

    @field_validator("headers")
    @classmethod
    def _headers(cls, headers: dict[str, str]) -> dict[str, str]:
        return checked_headers(headers)
