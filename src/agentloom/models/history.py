"""History: assembled ``Message`` values → the provider's message list, per preset data.

Roles map onto OpenAI Chat messages (assistant tool calls as function calls, tool results as
``tool`` messages) or onto Responses input items. The reasoning echo follows the preset's
``history`` rules: *when* (``never`` | ``tool_call_turns`` | ``always``), *in which form* (the
first of ``reasoning_as`` the message has data for: ``reasoning_details``, ``reasoning_content``,
``<think>`` tags around the content, or Responses ``reasoning`` items), and what to send when an
echo is required but nothing was recorded (DeepSeek: ``reasoning_content: ""``). Reasoning is
sent back exactly as it was received, never edited.

Pass the preset as it applies to the model (``Preset.for_model``); ``Preset.build_body`` does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentloom.models.types import Message

if TYPE_CHECKING:
    from agentloom.models.presets import Preset

__all__ = ["echoes_reasoning", "to_chat_messages", "to_responses_input"]


def echoes_reasoning(preset: Preset, message: Message) -> bool:
    """Whether ``message`` (an assistant turn) must carry its reasoning back to this provider."""
    rule = preset.history.reasoning_echo
    if message.role != "assistant" or rule == "never":
        return False
    return rule == "always" or bool(message.tool_calls)


def to_chat_messages(preset: Preset, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Chat Completions ``messages`` for ``messages`` under ``preset``'s echo rules."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": _call_id(m), "content": m.content or ""})
        elif m.role == "assistant":
            out.append(_assistant(preset, m))
        else:
            item: dict[str, Any] = {"role": m.role, "content": m.content or ""}
            if m.name:
                item["name"] = m.name
            out.append(item)
    return out


def _assistant(preset: Preset, m: Message) -> dict[str, Any]:
    item: dict[str, Any] = {"role": "assistant", "content": m.content if m.content else None}
    if m.tool_calls:
        item["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in m.tool_calls
        ]
    if not echoes_reasoning(preset, m):
        if item["content"] is None and not m.tool_calls:
            item["content"] = ""
        return item
    for form in preset.history.reasoning_as:
        if form == "reasoning_details" and m.reasoning_details:
            item["reasoning_details"] = [_plain(d) for d in m.reasoning_details]
            return item
        if form == "reasoning_content" and m.reasoning:
            item["reasoning_content"] = m.reasoning
            return item
        if form == "think_tags" and m.reasoning:
            tags = preset.reasoning.think_tags
            item["content"] = f"{tags.open}{m.reasoning}{tags.close}{m.content or ''}"
            return item
    if preset.history.empty_reasoning_content is not None:
        item["reasoning_content"] = preset.history.empty_reasoning_content
    if item["content"] is None and not m.tool_calls:
        item["content"] = ""
    return item


def to_responses_input(preset: Preset, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Responses API ``input`` items: messages, the assistant's ``reasoning`` items (kept in
    ``reasoning_details``, echoed verbatim), ``function_call`` and ``function_call_output``."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"type": "function_call_output", "call_id": _call_id(m), "output": m.content or ""})
        elif m.role == "assistant":
            if echoes_reasoning(preset, m) and "responses_items" in preset.history.reasoning_as:
                out.extend(_plain(d) for d in m.reasoning_details or () if d.get("type") == "reasoning")
            if m.content:
                out.append({"role": "assistant", "content": m.content})
            out.extend(
                {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
                for c in m.tool_calls
            )
        else:
            out.append({"role": m.role, "content": m.content or ""})
    return out


def _call_id(m: Message) -> str:
    if not m.tool_call_id:
        raise ValueError("a tool message needs the tool_call_id of the call it answers")
    return m.tool_call_id


def _plain(value: Mapping[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(value))
    return copied
