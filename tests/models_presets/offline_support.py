"""Drive an offline model's stream the way an aggregator would (set-once id/name, arguments
concatenated), so the tests see exactly what the gateway would see."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentloom.models.types import (
    Finish,
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
)


@dataclass
class Collected:
    events: list[ProviderEvent] = field(default_factory=list)
    text: str = ""
    reasoning: str = ""
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    usage: Usage | None = None
    finish: Finish | None = None


async def collect(model: Any, request: ModelRequest) -> Collected:
    out = Collected()
    async for event in model.stream_once(request, None):
        out.events.append(event)
        if isinstance(event, TextDelta):
            out.text += event.text
        elif isinstance(event, ReasoningDelta):
            out.reasoning += event.text
        elif isinstance(event, ToolCallDelta):
            call = out.calls.setdefault(event.index, {"id": None, "name": None, "arguments": ""})
            call["id"] = call["id"] or event.id
            call["name"] = call["name"] or event.name
            call["arguments"] += event.arguments
        elif isinstance(event, UsageEvent):
            out.usage = event.usage
        elif isinstance(event, Finish):
            out.finish = event
    return out
