"""Shared values for the preset tests: one history with tool calls and reasoning."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentloom.models.types import Message, ModelRequest, ToolCall, ToolDef

READ = ToolDef(
    name="fs_read",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)

# A tool-call turn *with* reasoning, a tool-call turn *without* any, a final answer with reasoning.
TOOL_TURN_REASONING = "I should read a.txt"
FINAL_REASONING = "Both files read"
DETAILS = (
    {"type": "reasoning.text", "id": "rd-1", "format": "MiniMax-response-v1", "text": TOOL_TURN_REASONING},
)
RESPONSES_ITEM = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA-opaque"}


def history(*, details: tuple[Mapping[str, Any], ...] | None = None) -> tuple[Message, ...]:
    return (
        Message(role="system", content="You are terse."),
        Message(role="user", content="Read a.txt and b.txt"),
        Message(
            role="assistant",
            reasoning=TOOL_TURN_REASONING,
            reasoning_details=details,
            tool_calls=(ToolCall(id="c1", name="fs_read", arguments='{"path": "a.txt"}'),),
        ),
        Message(role="tool", tool_call_id="c1", content="hello"),
        Message(
            role="assistant",
            tool_calls=(ToolCall(id="c2", name="fs_read", arguments='{"path": "b.txt"}'),),
        ),
        Message(role="tool", tool_call_id="c2", content="world"),
        Message(role="assistant", content="They say hello world.", reasoning=FINAL_REASONING),
        Message(role="user", content="Thanks"),
    )


def request(**kwargs: object) -> ModelRequest:
    details = kwargs.pop("details", None)
    return ModelRequest(messages=history(details=details), tools=(READ,), **kwargs)  # type: ignore[arg-type]
