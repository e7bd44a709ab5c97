"""OpenAI Responses API adapter on the official ``openai`` SDK (000 §4).

One ``stream_once`` is one ``POST /responses`` with ``stream=True`` (no SDK retries).
Typed events become ``ProviderEvent``s: ``response.output_text.delta`` → text;
``response.reasoning_summary_text.delta`` / ``response.reasoning_text.delta`` →
reasoning; a ``function_call`` output item → a tool call whose index is dense in order of
appearance (``call_id`` and ``name`` from the item, arguments from
``response.function_call_arguments.delta``, or from ``.done`` when no delta came);
a finished ``reasoning`` item → its item as ``reasoning_details`` (for echoing back).
``response.completed`` / ``response.incomplete`` are the terminal frames (usage, finish;
``[DONE]`` is not relied on);
``response.failed`` and ``error`` are provider errors. The rest are heartbeats.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agentloom.models.adapters.openai_chat import OpenAIAdapterBase, auth_override, chat_reasoning_effort
from agentloom.models.codec import plain
from agentloom.models.errors import MODEL_STREAM_ERROR, failure
from agentloom.models.ports import AttemptInfo, Connection
from agentloom.models.types import (
    Finish,
    Heartbeat,
    Message,
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
    named_schema,
)
from agentloom.models.usage import reported_usage

_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}
_RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded"})


# -- request body ----------------------------------------------------------------------------


def responses_input(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """History as Responses input items. An assistant message's ``reasoning_details`` that
    are Responses ``reasoning`` items are echoed back before it, verbatim."""
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            items.append({
                "type": "function_call_output", "call_id": m.tool_call_id or "", "output": m.content or "",
            })
            continue
        if m.role == "assistant":
            for detail in m.reasoning_details or ():
                if detail.get("type") == "reasoning":
                    items.append(plain(detail))
            if m.content:
                items.append({"role": "assistant", "content": m.content})
            for call in m.tool_calls:
                items.append({"type": "function_call", "call_id": call.id, "name": call.name,
                              "arguments": call.arguments})
            continue
        items.append({"role": m.role, "content": m.content or ""})
    return items


def build_responses_body(request: ModelRequest, connection: Connection) -> dict[str, Any]:
    """The default Responses request body (``stream: true``), ``extra_body`` last."""
    body: dict[str, Any] = {
        "model": connection.model, "input": responses_input(request.messages), "stream": True,
    }
    if request.tools:
        body["tools"] = [
            {"type": "function", "name": t.name, "description": t.description,
             "parameters": plain(t.parameters)}
            for t in request.tools
        ]
    fmt = request.output_format
    if fmt == "json_object":
        body["text"] = {"format": {"type": "json_object"}}
    elif fmt != "text":
        schema = plain(fmt)
        if schema.get("type") in ("json_schema", "json_object", "text") and "schema" not in schema:
            body["text"] = {"format": schema}
        elif (named := named_schema(schema)) is not None:  # {name, schema, strict?}
            body["text"] = {"format": {"type": "json_schema", **named}}
        else:
            body["text"] = {"format": {"type": "json_schema", "name": str(schema.get("title") or "output"),
                                       "schema": schema}}
    effort = chat_reasoning_effort(request.think)
    if effort is not None:
        body["reasoning"] = {"effort": effort}
    if request.max_output_tokens is not None:
        body["max_output_tokens"] = request.max_output_tokens
    body.update(plain(connection.extra_body))
    return body


def responses_usage(usage: Any) -> Usage:
    input_details = getattr(usage, "input_tokens_details", None)
    output_details = getattr(usage, "output_tokens_details", None)
    return reported_usage({
        "input_tokens": ("input_tokens", getattr(usage, "input_tokens", None)),
        "output_tokens": ("output_tokens", getattr(usage, "output_tokens", None)),
        "reasoning_tokens": ("output_tokens_details.reasoning_tokens",
                             getattr(output_details, "reasoning_tokens", None)),
        "cached_tokens": ("input_tokens_details.cached_tokens",
                          getattr(input_details, "cached_tokens", None)),
        "total_tokens": ("total_tokens", getattr(usage, "total_tokens", None)),
    })


# -- the adapter -----------------------------------------------------------------------------


class _Items:
    """Per-Attempt bookkeeping: dense tool indexes by item, which items streamed deltas."""

    __slots__ = ("args_streamed", "text_streamed", "tools")

    def __init__(self) -> None:
        self.tools: dict[str, int] = {}
        self.args_streamed: set[int] = set()
        self.text_streamed: set[str] = set()

    def tool_index(self, item_id: str | None, output_index: int) -> int:
        key = item_id or f"#{output_index}"
        index = self.tools.get(key)
        if index is None:
            index = self.tools.get(f"#{output_index}")
        if index is None:
            index = self.tools[key] = len(self.tools)
        return index


class OpenAIResponsesAdapter(OpenAIAdapterBase):
    """``ModelAdapter`` for the Responses protocol."""

    async def stream_once(self, request: ModelRequest, attempt: AttemptInfo) -> AsyncIterator[ProviderEvent]:
        connection = self._connection
        body = (connection.body_builder or build_responses_body)(request, connection)
        model = body.pop("model", connection.model)
        body.pop("stream", None)
        try:
            stream = await self.client.responses.create(model=model, stream=True, extra_body=body,
                                                        extra_headers=auth_override(connection))
        except Exception as exc:
            raise self._failure(exc, sent=True) from exc
        items = _Items()
        try:
            async with stream:
                async for typed in stream:
                    event: Any = typed  # dispatched on ``type``; unknown kinds are heartbeats
                    kind = event.type
                    if kind == "response.output_text.delta":
                        if event.delta:
                            items.text_streamed.add(event.item_id)
                            yield TextDelta(event.delta)
                        else:
                            yield Heartbeat(kind)
                    elif kind == "response.function_call_arguments.delta":
                        index = items.tool_index(event.item_id, event.output_index)
                        items.args_streamed.add(index)
                        yield ToolCallDelta(index, arguments=event.delta or "")
                    elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                        yield ReasoningDelta(event.delta or "")
                    elif kind in ("response.completed", "response.incomplete"):
                        # Keep reading to the end of the body (the connection is then
                        # reused); trailing frames get the Attempt's finish grace.
                        for out in self._terminal(event, items):
                            yield out
                    elif kind in ("response.failed", "error"):
                        raise self._provider_error(event)
                    else:
                        yield self._other(event, items)
        except Exception as exc:
            raise self._failure(exc, sent=True) from exc

    def _other(self, event: Any, items: _Items) -> ProviderEvent:
        kind = event.type
        if kind == "response.output_item.added":
            item = event.item
            if getattr(item, "type", None) == "function_call":
                index = items.tool_index(getattr(item, "id", None), event.output_index)
                arguments = getattr(item, "arguments", None) or ""
                if arguments:
                    items.args_streamed.add(index)
                return ToolCallDelta(index, item.call_id or None, item.name or None, arguments)
        elif kind == "response.output_item.done":
            item = event.item
            item_type = getattr(item, "type", None)
            if item_type == "reasoning":
                return ReasoningDelta("", (item.to_dict(),))
            if item_type == "function_call":
                index = items.tool_index(getattr(item, "id", None), event.output_index)
                if index not in items.args_streamed and item.arguments:
                    items.args_streamed.add(index)
                    return ToolCallDelta(index, arguments=item.arguments)
        elif kind == "response.function_call_arguments.done":
            index = items.tool_index(event.item_id, event.output_index)
            if index not in items.args_streamed and event.arguments:
                items.args_streamed.add(index)
                return ToolCallDelta(index, arguments=event.arguments)
        elif kind == "response.output_text.done":
            if event.item_id not in items.text_streamed and event.text:
                items.text_streamed.add(event.item_id)
                return TextDelta(event.text)
        elif kind == "response.refusal.delta" and event.delta:
            return TextDelta(event.delta)
        return Heartbeat(kind)

    def _terminal(self, event: Any, items: _Items) -> list[ProviderEvent]:
        response = event.response
        connection = self._connection
        out: list[ProviderEvent] = []
        usage = response.usage
        if usage is not None:
            mapper = connection.usage_mapper
            out.append(UsageEvent(mapper(usage.to_dict()) if mapper is not None else responses_usage(usage)))
        if event.type == "response.incomplete":
            details = response.incomplete_details
            raw = getattr(details, "reason", None) or "incomplete"
            mapped = connection.finish_mapper(raw) if connection.finish_mapper is not None else None
            reason = mapped or _INCOMPLETE_REASONS.get(raw, raw)
        else:
            reason = "tool_calls" if items.tools else "stop"
        out.append(Finish(reason, response_id=response.id, model=response.model))
        return out

    def _provider_error(self, event: Any) -> Exception:
        error = event.response.error if event.type == "response.failed" else event
        code = getattr(error, "code", None)
        message = getattr(error, "message", None) or "the response failed"
        return failure(
            MODEL_STREAM_ERROR, "rate_limit" if code in _RATE_LIMIT_CODES else "unknown",
            f"the {self._provider} reported an error in the stream: {message}",
            outcome="known", provider_code=str(code) if code else None,
            secrets=(self._connection.api_key,),
        )
