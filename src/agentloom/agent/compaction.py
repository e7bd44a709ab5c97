"""The ``compact_context`` stage (000 §4): when the next model request would not fit the
model's budget, the older part of the conversation is summarised by a model call of its own.

- **Budget**: the input may use ``W − O`` tokens — W the context window, O the output reserve
  (``models.budget.resolve_descriptor``: the configured output limit, else the platform's
  ``min(4096, W/4)``).
  There is no tokenizer offline, so the estimate is deliberately pessimistic: one token per
  three characters of the JSON the model is sent (messages and tool definitions).
- **Fixed material is never compacted**: system messages, every user message (the task and
  each supplement keep their words), and the latest assistant turn with its tool results (so
  every tool call stays paired with its result). The assistant and tool messages before it are
  what the summary replaces.
- **The summary is a model call** through the gateway, ``purpose="compaction"`` (hooks can
  match it), with its own logical key (``<invocation>/t<n>/compact``): a replay returns the
  stored summary and rebuilds exactly the same history. A failed compaction ends the
  invocation; a history that still does not fit after compaction ends it too
  (``CONTEXT_WINDOW_EXCEEDED``) — nothing is dropped silently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from agentloom.models.budget import resolve_descriptor
from agentloom.models.codec import message_to_dict, tool_to_dict
from agentloom.models.types import Message, ModelRequest, ToolDef

__all__ = [
    "COMPACTION_INSTRUCTIONS",
    "Budget",
    "Estimator",
    "Plan",
    "compacted_messages",
    "compaction_request",
    "estimate_tokens",
    "plan_compaction",
]

CHARS_PER_TOKEN = 3
SUMMARY_PREFIX = "[runtime] Summary of the earlier turns of this conversation (compacted):\n"
COMPACTION_INSTRUCTIONS = (
    "You compact an agent's conversation. Summarise the turns below for the agent that will "
    "continue the task: keep every fact it learned, each file, path, command and result it "
    "relies on, what succeeded, what failed or has an unknown outcome, and what is still to "
    "do. Write plain text, no preamble."
)


@dataclass(frozen=True, slots=True)
class Budget:
    """The model's context window W and output reserve O, in tokens."""

    window: int
    output_reserve: int

    @classmethod
    def of(cls, window: int, output_limit: int | None = None) -> Budget:
        """W and O of an agent's configured ``window`` and ``output_limit``, by the rule of
        ``models.budget.resolve_descriptor`` (O defaults to ``min(4096, W / 4)``).

        Raises:
            ConfigError: a value is not a positive integer, or O leaves no room for input.
        """
        d = resolve_descriptor(None, configured_window=window, configured_output_limit=output_limit,
                               model=None)
        assert d.window is not None and d.output_limit is not None  # resolved, or raised
        return cls(d.window, d.output_limit)

    @property
    def input_limit(self) -> int:
        return self.window - self.output_reserve


def estimate_tokens(messages: Sequence[Message], tools: Sequence[ToolDef] = ()) -> int:
    """A pessimistic token count of a request: its JSON length / ``CHARS_PER_TOKEN``."""
    return Estimator().tokens(messages, tools)


class Estimator:
    """``estimate_tokens`` that measures each message object once (a history grows by a few
    messages a turn; the check before every turn must not re-encode all of it)."""

    def __init__(self) -> None:
        self._chars: dict[int, tuple[object, int]] = {}

    def _size(self, item: Message | ToolDef) -> int:
        known = self._chars.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        data = message_to_dict(item) if isinstance(item, Message) else tool_to_dict(item)
        size = len(json.dumps(data, ensure_ascii=False))
        self._chars[id(item)] = (item, size)
        return size

    def tokens(self, messages: Sequence[Message], tools: Sequence[ToolDef] = ()) -> int:
        chars = sum(self._size(m) for m in messages) + sum(self._size(t) for t in tools)
        return math.ceil(chars / CHARS_PER_TOKEN)

    def forget_all_but(self, messages: Sequence[Message]) -> None:
        """Drop what compaction replaced."""
        keep = {id(m) for m in messages}
        self._chars = {k: v for k, v in self._chars.items()
                       if k in keep or not isinstance(v[0], Message)}


@dataclass(frozen=True, slots=True)
class Plan:
    """Which messages a compaction replaces: ``messages[start:end]``, minus user messages."""

    start: int
    end: int
    replaced: tuple[Message, ...]


def plan_compaction(messages: Sequence[Message]) -> Plan | None:
    """The span to summarise: after the leading system and user messages, up to the latest
    assistant turn. ``None`` when there is nothing to compact."""
    start = 0
    while start < len(messages) and messages[start].role in ("system", "user"):
        start += 1
    end = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    if end <= start:
        return None
    replaced = tuple(m for m in messages[start:end] if m.role in ("assistant", "tool"))
    return Plan(start, end, replaced) if replaced else None


def compaction_request(plan: Plan, budget: Budget) -> ModelRequest:
    """The request that asks for the summary: the replaced turns as a transcript. A transcript
    too long for the budget keeps its end (the most recent turns) and says what it left out."""
    lines = []
    for m in plan.replaced:
        if m.role == "tool":
            lines.append(f"tool result ({m.name}, call {m.tool_call_id}): {m.content or ''}")
            continue
        if m.content:
            lines.append(f"assistant: {m.content}")
        for call in m.tool_calls:
            lines.append(f"assistant called {call.name} (call {call.id}) with {call.arguments}")
    transcript = "\n".join(lines)
    room = max(0, (budget.input_limit - estimate_tokens(
        [Message(role="system", content=COMPACTION_INSTRUCTIONS)])) * CHARS_PER_TOKEN - 200)
    if len(transcript) > room:
        transcript = (f"[{len(transcript) - room} earlier characters left out]\n"
                      + transcript[len(transcript) - room:])
    return ModelRequest(messages=(Message(role="system", content=COMPACTION_INSTRUCTIONS),
                                  Message(role="user", content=transcript)), purpose="compaction")


def compacted_messages(messages: Sequence[Message], plan: Plan, summary: str, *,
                       summary_id: str | None = None) -> list[Message]:
    """The history with ``plan``'s span replaced by the summary (message ``summary_id``); the
    span's user messages (supplements) follow the summary, in order, word for word and with
    their own ids, so a hook's edit of one still applies (000 §5.3)."""
    kept_users = [m for m in messages[plan.start:plan.end] if m.role not in ("assistant", "tool")]
    return [*messages[:plan.start],
            Message(role="user", content=SUMMARY_PREFIX + summary, id=summary_id),
            *kept_users, *messages[plan.end:]]
