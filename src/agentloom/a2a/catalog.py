"""One remote agent as one capability: ``a2a.<name>.send``, shown to a model as
``a2a__<name>__send`` (``mcp__<server>__<tool>``'s style), described by its agent card.

The model sends one text message; it may name the remote conversation (``context_id``) and,
to answer a task that asked for input (``A2A_INPUT_REQUIRED``), that task (``task_id``).

Owns: the catalog entry of a remote agent and what an agent's ``tools`` holds for it. Does not
own: fetching the card (``card``), calling the agent (``handler``). Imports no A2A SDK module:
the card is only typed here, so a kernel publishing an A2A agent pays for the SDK only when
the handler is made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentloom.catalog import CapabilitySpec, legal_exposed_name
from agentloom.config.a2a import A2aAgentConfig
from agentloom.tools.sdk import ToolDescription

if TYPE_CHECKING:
    from a2a.types import AgentCard

    from agentloom.a2a.handler import A2aSendHandler

__all__ = ["INPUT_SCHEMA", "MAX_DESCRIPTION", "A2aAgent", "capability_key", "exposed_name"]

MAX_DESCRIPTION = 2000
"""The most characters of a card's description and skills a model is shown."""

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "minLength": 1,
                    "description": "The message sent to the remote agent."},
        "context_id": {"type": "string", "minLength": 1,
                       "description": "Continue this remote conversation (the context_id of "
                       "an earlier answer); leave it out to start a new one."},
        "task_id": {"type": "string", "minLength": 1,
                    "description": "Answer this remote task's question (the task_id of an "
                    "A2A_INPUT_REQUIRED error); give its context_id too."},
    },
    "required": ["message"],
    "additionalProperties": False,
}
"""What the model sends: one text message, optionally into a conversation or a task."""


def capability_key(name: str) -> str:
    """``a2a.<name>.send``: the capability key of remote agent ``name``."""
    return f"a2a.{name}.send"


def exposed_name(name: str) -> str:
    """``a2a__<name>__send``, made legal for a model (``legal_exposed_name``)."""
    return legal_exposed_name(f"a2a__{name}__send")


@dataclass(frozen=True, slots=True, kw_only=True)
class A2aAgent:
    """One remote agent as configured (``a2a_agents.<name>``) with the 1.0 card fetched when
    the runtime was built (only its A2A 1.0 interfaces kept): what an agent's ``tools``
    holds for ``a2a.<name>``, and its catalog entry."""

    name: str
    config: A2aAgentConfig = field(repr=False)
    card: AgentCard = field(repr=False, compare=False)

    @property
    def capability_key(self) -> str:
        return capability_key(self.name)

    @property
    def handler_ref(self) -> str:
        return f"a2a:{self.name}"

    @property
    def description(self) -> str:
        """The card's name and description, then one line per skill (bounded)."""
        card = self.card
        lines = [f"Send a message to the remote A2A agent {card.name or self.name!r}"
                 + (f": {card.description}" if card.description else "."),
                 *(f"- skill {s.name or s.id}: {s.description}".rstrip(": ")
                   for s in card.skills)]
        text = "\n".join(lines)
        return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"

    def spec(self, release_id: str) -> CapabilitySpec:
        """The catalog entry of this agent in release ``release_id``."""
        return CapabilitySpec(
            resource_version_id=release_id,
            capability_key=self.capability_key,
            kind="hosted",
            exposed_name=exposed_name(self.name),
            description=self.description,
            input_schema=INPUT_SCHEMA,
            handler_ref=self.handler_ref,
        )

    def handler(self) -> A2aSendHandler:
        """The pipeline handler of this capability (imports the A2A SDK)."""
        from agentloom.a2a.handler import A2aSendHandler

        return A2aSendHandler(self)

    def describe(self) -> ToolDescription:
        """Name (the capability key), description and input schema, as an SDK tool describes
        itself: what ``AgentSpec.tool_keys`` and the release digest read."""
        return ToolDescription(name=self.capability_key, description=self.description,
                               input_schema=dict(INPUT_SCHEMA))
