"""Aggregation inside one Attempt, and the validation of the complete response (000 §4).

``Aggregator`` collects one Attempt's provider events: text, reasoning (and
``reasoning_details``), tool calls assembled by index — ``id`` and ``name`` are set once
and repeats ignored, only ``arguments`` are concatenated — usage and the finish frame.
``Aggregator.response`` validates the whole response (the stream ended with a terminal
frame; every tool call has a name and its own id: ``models.calls.broken_call``, the rule the
gateway applies to the effective response too) and only then returns the
``ModelResponse``; nothing is exposed or executed before that. A call that names a tool that
was not offered, or whose arguments are not a JSON object, does not make the response
invalid: only that call cannot run, and the model is told so (``models.calls``).

What a failed Attempt had received is an ``IncompleteAttempt``: kept for the record,
never turned into a response, never spliced with another Attempt (each Attempt has its
own ``Aggregator``).

``complete_once`` is one whole Attempt: adapter stream → clocks → aggregation → validation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentloom.models.calls import broken_call
from agentloom.models.codec import usage_to_dict
from agentloom.models.errors import ModelAttemptError, finish_error, invalid_response, stream_cut
from agentloom.models.ports import AttemptInfo, ModelAdapter
from agentloom.models.timers import drive
from agentloom.models.types import (
    Finish,
    Heartbeat,
    ModelRequest,
    ModelResponse,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageEvent,
)

#: ``reasoning_details`` string fields concatenated across fragments of one indexed item.
_DETAIL_TEXT_FIELDS = frozenset({"text", "summary", "data"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFragment:
    """A tool call as far as it arrived; ``arguments`` may be cut anywhere."""

    index: int
    id: str | None
    name: str | None
    arguments: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True, kw_only=True)
class IncompleteAttempt:
    """The material of an Attempt that did not produce a valid complete response.

    ``reason`` is the failure's error code. This is evidence for the record (and, where
    permitted, for telling a user what was cut off); it is never a response.
    """

    reason: str
    text: str = ""
    reasoning: str = ""
    reasoning_details: tuple[Mapping[str, Any], ...] | None = None
    tool_calls: tuple[ToolCallFragment, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    events: int = 0

    @property
    def empty(self) -> bool:
        return not (self.text or self.reasoning or self.reasoning_details or self.tool_calls)

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "text": self.text,
            "reasoning": self.reasoning,
            "reasoning_details": [dict(d) for d in self.reasoning_details or ()] or None,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "usage": usage_to_dict(self.usage),
            "finish_reason": self.finish_reason,
            "events": self.events,
        }


class _Call:
    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.arguments: list[str] = []


class Aggregator:
    """The events of exactly one Attempt. Feed with ``feed``; finish with ``response``
    (validated) or ``incomplete`` (the evidence of a failure)."""

    __slots__ = (
        "_calls", "_detail_at", "_details", "_finish", "_reasoning", "_text", "_usage", "events",
    )

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._details: list[dict[str, Any]] = []
        self._detail_at: dict[Any, int] = {}
        self._calls: dict[int, _Call] = {}
        self._usage: Usage | None = None
        self._finish: Finish | None = None
        self.events = 0

    @property
    def finished(self) -> bool:
        return self._finish is not None

    def feed(self, event: ProviderEvent) -> None:
        self.events += 1
        if isinstance(event, TextDelta):
            self._text.append(event.text)
        elif isinstance(event, ToolCallDelta):
            self._tool_fragment(event)
        elif isinstance(event, ReasoningDelta):
            if event.text:
                self._reasoning.append(event.text)
            if event.details:
                self._merge_details(event.details)
        elif isinstance(event, Heartbeat):
            pass
        elif isinstance(event, UsageEvent):
            self._usage = _merge_usage(self._usage, event.usage)
        elif isinstance(event, Finish):
            if self._finish is None:
                self._finish = event
        else:
            raise TypeError(f"not a provider event: {event!r}")

    def _tool_fragment(self, delta: ToolCallDelta) -> None:
        call = self._calls.get(delta.index)
        if call is None:
            call = self._calls[delta.index] = _Call()
        if delta.id and call.id is None:
            call.id = delta.id
        if delta.name and call.name is None:
            call.name = delta.name
        if delta.arguments:
            call.arguments.append(delta.arguments)

    def _merge_details(self, details: Sequence[Mapping[str, Any]]) -> None:
        for item in details:
            index, item_id = item.get("index"), item.get("id")
            key: tuple[Any, ...] | None = (
                ("index", index, item.get("type")) if isinstance(index, int)
                else ("id", item_id) if isinstance(item_id, str) and item_id else None
            )
            at = self._detail_at.get(key) if key is not None else None
            if at is None:
                if key is not None:
                    self._detail_at[key] = len(self._details)
                self._details.append(dict(item))
                continue
            merged = self._details[at]
            for field, value in item.items():
                old = merged.get(field)
                if field in _DETAIL_TEXT_FIELDS and isinstance(value, str) and isinstance(old, str):
                    merged[field] = old + value
                elif old is None:
                    merged[field] = value

    def _fragments(self) -> tuple[ToolCallFragment, ...]:
        return tuple(
            ToolCallFragment(index=i, id=c.id, name=c.name, arguments="".join(c.arguments))
            for i, c in sorted(self._calls.items())
        )

    def incomplete(self, reason: str) -> IncompleteAttempt:
        return IncompleteAttempt(
            reason=reason,
            text="".join(self._text),
            reasoning="".join(self._reasoning),
            reasoning_details=tuple(self._details) or None,
            tool_calls=self._fragments(),
            usage=self._usage,
            finish_reason=self._finish.reason if self._finish else None,
            events=self.events,
        )

    def response(self) -> ModelResponse:
        """The validated complete response. A call of a tool that was not offered, or with
        arguments that are not a JSON object, is kept as it came (``models.calls``).

        Raises:
            ModelAttemptError: ``transport`` when no terminal frame was received or the
                finish reason is ``error``; ``protocol`` when a tool call has no name or
                repeats another call's id. The error carries the ``IncompleteAttempt``.
        """
        if self._finish is None:
            cut = stream_cut()
            raise cut.with_incomplete(self.incomplete(cut.error.code))
        if self._finish.reason == "error":
            failed = finish_error(self._finish.reason)
            raise failed.with_incomplete(self.incomplete(failed.error.code))
        # a call the provider sent without an id gets one from its index
        calls = tuple(ToolCall(
            id=fragment.id or f"call_{fragment.index}", name=fragment.name or "",
            index=fragment.index,
            arguments=fragment.arguments if fragment.arguments.strip() else "{}",
        ) for fragment in self._fragments())
        broken = broken_call(calls)
        if broken is not None:
            err = invalid_response(broken[1], details={"tool_call_index": broken[0].index})
            raise err.with_incomplete(self.incomplete(err.error.code))
        return ModelResponse(
            text="".join(self._text),
            reasoning="".join(self._reasoning) or None,
            reasoning_details=tuple(self._details) or None,
            tool_calls=calls,
            finish_reason=self._finish.reason,
            usage=self._usage,
            model=self._finish.model,
            response_id=self._finish.response_id,
        )


def _merge_usage(old: Usage | None, new: Usage) -> Usage:
    if old is None:
        return new
    return Usage(
        input_tokens=new.input_tokens if new.input_tokens is not None else old.input_tokens,
        output_tokens=new.output_tokens if new.output_tokens is not None else old.output_tokens,
        reasoning_tokens=new.reasoning_tokens if new.reasoning_tokens is not None else old.reasoning_tokens,
        cached_tokens=new.cached_tokens if new.cached_tokens is not None else old.cached_tokens,
        total_tokens=new.total_tokens if new.total_tokens is not None else old.total_tokens,
    )


async def complete_once(
    adapter: ModelAdapter,
    request: ModelRequest,
    attempt: AttemptInfo,
    *,
    aggregator: Aggregator | None = None,
    observe: Callable[[ProviderEvent], None] | None = None,
) -> ModelResponse:
    """One physical Attempt from request to validated ``ModelResponse``.

    ``aggregator`` (a fresh one per Attempt) lets a caller read ``incomplete`` even when
    the Attempt ends in a cancellation raised by someone else (e.g. the pipeline's own
    stop or deadline handling around this call). ``observe`` (``gateway.delta_feed``) is
    handed each event after the aggregator took it: an observation, which must not raise.

    Raises:
        ModelAttemptError: the Attempt failed (classified per ``models.errors``); its
            ``incomplete`` holds what this Attempt had received.
    """
    if aggregator is None:
        aggregator = Aggregator()
    elif aggregator.events:
        raise ValueError("an Aggregator collects exactly one Attempt; pass a fresh one")
    sink = aggregator.feed
    if observe is not None:
        feed = aggregator.feed

        def sink(event: ProviderEvent) -> None:
            feed(event)
            observe(event)
    try:
        await drive(adapter.stream_once(request, attempt), attempt, sink)
    except ModelAttemptError as exc:
        raise exc.with_incomplete(aggregator.incomplete(exc.error.code)) from None
    return aggregator.response()
