"""OpenAI Chat Completions adapter on the official ``openai`` SDK (000 §4).

One ``stream_once`` is one ``POST /chat/completions`` with ``stream=True`` on a client
built with ``max_retries=0`` (the pipeline owns retries). Each SSE chunk becomes
``ProviderEvent``s: ``content`` / reasoning through the connection's extractor, tool-call
fragments by index, usage, the finish frame; role-only, empty and usage-only chunks are
heartbeats. Nothing is aggregated or validated here (``aggregate.py`` does that).

Also here: the shared base of both OpenAI adapters (client, discovery, error
classification) and ``build_chat_body``, the default Chat request body that provider
presets wrap.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Literal, cast
from urllib.parse import urlsplit

import httpx2
from openai import AsyncOpenAI, Omit

from agentloom.models.codec import plain
from agentloom.models.errors import ModelAttemptError, classify_exception
from agentloom.models.ports import AttemptInfo, Connection, ReasoningPiece
from agentloom.models.types import (
    Finish,
    Heartbeat,
    Message,
    ModelDescriptor,
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    ThinkParams,
    ToolCallDelta,
    ToolDef,
    Usage,
    UsageEvent,
    named_schema,
)
from agentloom.models.usage import reported_usage

ReasoningEcho = Literal["none", "reasoning_content", "reasoning_details", "think_tags"]

_WINDOW_KEYS = (
    "context_window", "context_length", "max_context_length", "max_model_len", "input_token_limit",
)
_OUTPUT_KEYS = ("max_output_tokens", "max_completion_tokens", "output_token_limit")
_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "max": "high"}


NO_KEY_PLACEHOLDER = "no-key"
"""Given to the SDK (which refuses a client without a key) for a connection that has none;
never sent: ``auth_override`` omits the ``Authorization`` header on every request."""


def auth_override(connection: Connection) -> dict[str, Any] | None:
    """Per-request headers for ``connection``: ``Authorization`` explicitly omitted when the
    connection has no key (a keyless local server), so no bogus bearer is ever sent."""
    return None if connection.api_key else {"Authorization": Omit()}


def make_client(connection: Connection) -> AsyncOpenAI:
    """An SDK client for ``connection``: no SDK retries; connect bounded, reads bounded by
    the Attempt's own clocks (``timers.py``)."""
    return AsyncOpenAI(
        api_key=connection.api_key or NO_KEY_PLACEHOLDER,
        base_url=connection.base_url,
        max_retries=0,
        timeout=httpx2.Timeout(None, connect=connection.connect_timeout_s),
        default_headers=dict(connection.extra_headers) or None,
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class OpenAIAdapterBase:
    """What both OpenAI protocol adapters share: one lazily built client per adapter
    (one adapter per event loop), discovery and error classification."""

    def __init__(self, connection: Connection, *, client: AsyncOpenAI | None = None) -> None:
        self._connection = connection
        self._client = client
        self._owns_client = client is None
        self._provider = f"model provider {connection.name or urlsplit(connection.base_url).hostname}"

    @property
    def connection(self) -> Connection:
        return self._connection

    @property
    def client(self) -> AsyncOpenAI:
        if self._client is None:
            self._client = make_client(self._connection)
        return self._client

    def _failure(self, exc: BaseException, *, sent: bool) -> ModelAttemptError:
        return classify_exception(
            exc, sent=sent, provider=self._provider, secrets=(self._connection.api_key,),
            status_category=self._connection.status_category, connection=self._connection,
        )

    async def discover(self, connection: Connection | None = None) -> list[ModelDescriptor]:
        """The provider's model list (``GET /models``). Window and output limit are only
        filled where the provider states them; nothing is guessed.

        Raises:
            ModelAttemptError: the listing failed (classified like a model call).
        """
        client = self.client if connection is None else make_client(connection)
        try:
            models = [m async for m in client.models.list(
                extra_headers=auth_override(connection or self._connection))]
        except Exception as exc:
            raise self._failure(exc, sent=True) from exc
        finally:
            if connection is not None:
                await client.close()
        fetched_at = time.time()
        out: list[ModelDescriptor] = []
        for model in models:
            extras = dict(model.model_extra or {})
            window = next((w for k in _WINDOW_KEYS if (w := _int(extras.get(k))) is not None), None)
            limit = next((o for k in _OUTPUT_KEYS if (o := _int(extras.get(k))) is not None), None)
            out.append(ModelDescriptor(
                provider_model_id=model.id, window=window, output_limit=limit, source="provider",
                fetched_at=fetched_at, output_limit_source="provider" if limit is not None else None,
                extras={"owned_by": getattr(model, "owned_by", None), **extras},
            ))
        return out

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.close()
            self._client = None


# -- request body ----------------------------------------------------------------------------


def _tool_chat(tool: ToolDef) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": tool.name, "description": tool.description, "parameters": plain(tool.parameters),
    }}


def chat_message(message: Message, *, reasoning_echo: ReasoningEcho = "none") -> dict[str, Any]:
    """One history message in Chat form. ``reasoning_echo`` says how an assistant
    message's reasoning goes back to the provider (presets choose; OpenAI: ``none``)."""
    out: dict[str, Any] = {"role": message.role}
    content = message.content
    if message.role == "assistant" and reasoning_echo == "think_tags" and message.reasoning:
        content = f"<think>{message.reasoning}</think>{content or ''}"
    out["content"] = content if content is not None or message.role == "assistant" else ""
    if message.role == "assistant":
        if reasoning_echo == "reasoning_content" and (message.reasoning is not None or message.tool_calls):
            out["reasoning_content"] = message.reasoning or ""
        if reasoning_echo == "reasoning_details" and message.reasoning_details:
            out["reasoning_details"] = plain(message.reasoning_details)
        if message.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in message.tool_calls
            ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None and message.role != "tool":
        out["name"] = message.name
    return out


def chat_response_format(output_format: Any) -> dict[str, Any] | None:
    if output_format == "text":
        return None
    if output_format == "json_object":
        return {"type": "json_object"}
    schema = plain(output_format)
    if schema.get("type") in ("json_schema", "json_object", "text") and "schema" not in schema:
        return cast(dict[str, Any], schema)
    named = named_schema(schema)  # {name, schema, strict?}
    if named is not None:
        return {"type": "json_schema", "json_schema": named}
    name = str(schema.get("title") or "output")
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


def chat_reasoning_effort(think: ThinkParams | None) -> str | None:
    """OpenAI's ``reasoning_effort`` for ``think`` (``max`` → ``high``; disabled → ``none``)."""
    if think is None:
        return None
    if think.effort is not None:
        return _EFFORT[think.effort]
    if think.enabled is False:
        return "none"
    return None


def build_chat_body(
    request: ModelRequest, connection: Connection, *, reasoning_echo: ReasoningEcho = "none"
) -> dict[str, Any]:
    """The default Chat Completions request body (``stream: true``), ``extra_body`` last."""
    body: dict[str, Any] = {
        "model": connection.model,
        "messages": [chat_message(m, reasoning_echo=reasoning_echo) for m in request.messages],
        "stream": True,
    }
    if connection.stream_options is not None:
        body["stream_options"] = plain(connection.stream_options)
    if request.tools:
        body["tools"] = [_tool_chat(t) for t in request.tools]
    response_format = chat_response_format(request.output_format)
    if response_format is not None:
        body["response_format"] = response_format
    effort = chat_reasoning_effort(request.think)
    if effort is not None:
        body["reasoning_effort"] = effort
    if request.max_output_tokens is not None:
        body[connection.max_tokens_param] = request.max_output_tokens
    body.update(plain(connection.extra_body))
    return body


# -- the adapter -----------------------------------------------------------------------------


def chat_usage(usage: Any) -> Usage:
    """``Usage`` from a Chat ``usage`` object (SDK model)."""
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    cached: tuple[str, object] = ("prompt_tokens_details.cached_tokens",
                                  getattr(prompt_details, "cached_tokens", None))
    if cached[1] is None:
        cached = ("prompt_cache_hit_tokens",
                  (usage.model_extra or {}).get("prompt_cache_hit_tokens"))
    return reported_usage({
        "input_tokens": ("prompt_tokens", getattr(usage, "prompt_tokens", None)),
        "output_tokens": ("completion_tokens", getattr(usage, "completion_tokens", None)),
        "reasoning_tokens": ("completion_tokens_details.reasoning_tokens",
                             getattr(completion_details, "reasoning_tokens", None)),
        "cached_tokens": cached,
        "total_tokens": ("total_tokens", getattr(usage, "total_tokens", None)),
    })


class OpenAIChatAdapter(OpenAIAdapterBase):
    """``ModelAdapter`` for the Chat Completions protocol."""

    async def stream_once(self, request: ModelRequest, attempt: AttemptInfo) -> AsyncIterator[ProviderEvent]:
        connection = self._connection
        body = (connection.body_builder or build_chat_body)(request, connection)
        mapper = _ChunkMapper(connection)
        model = body.pop("model", connection.model)
        body.pop("stream", None)
        try:
            # The body is the preset's, sent verbatim: ``extra_body`` bypasses the SDK's
            # re-transformation of the typed parameters.
            stream = await self.client.chat.completions.create(
                model=model, messages=(), stream=True, extra_body=body,
                extra_headers=auth_override(connection),
            )
        except Exception as exc:
            raise self._failure(exc, sent=True) from exc
        try:
            async with stream:
                async for chunk in stream:
                    for event in mapper.events(chunk):
                        yield event
        except Exception as exc:
            raise self._failure(exc, sent=True) from exc


class _ChunkMapper:
    """One Attempt's chunk → events mapping (the extractor may be stateful)."""

    __slots__ = ("_extract", "_finish", "_usage")

    def __init__(self, connection: Connection) -> None:
        self._extract = connection.extractor()
        self._usage = connection.usage_mapper
        self._finish = connection.finish_mapper

    def _flush(self) -> ReasoningPiece:
        flush = getattr(self._extract, "flush", None)
        if callable(flush):
            return cast(ReasoningPiece, flush())
        return self._extract({})

    def events(self, chunk: Any) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        finish_reason: str | None = None
        choices = chunk.choices
        if choices:
            choice = choices[0]
            if choice.index not in (0, None):
                choice = next((c for c in choices if c.index in (0, None)), None)
            if choice is not None:
                delta = choice.delta  # a provider may omit it on the finish chunk
                if delta is not None:
                    self._delta(delta, events)
                finish_reason = choice.finish_reason
                if finish_reason:
                    _pieces(events, self._flush())
                    if self._finish is not None:
                        finish_reason = self._finish(finish_reason) or finish_reason
        usage = chunk.usage
        if usage is not None:
            mapped = self._usage(usage.to_dict()) if self._usage is not None else chat_usage(usage)
            events.append(UsageEvent(mapped))
        if finish_reason:
            events.append(Finish(finish_reason, response_id=chunk.id, model=chunk.model))
        if not events:
            delta = choices[0].delta if choices else None
            events.append(Heartbeat("role" if delta is not None and delta.role else "empty"))
        return events

    def _delta(self, delta: Any, events: list[ProviderEvent]) -> None:
        content = delta.content
        extra = delta.model_extra
        if content or extra:
            view = {"content": content, **extra} if extra else {"content": content}
            _pieces(events, self._extract(view))
        if delta.refusal:
            events.append(TextDelta(delta.refusal))
        tool_calls = delta.tool_calls
        if tool_calls:
            for call in tool_calls:
                fn = call.function
                events.append(ToolCallDelta(
                    call.index if isinstance(call.index, int) else 0,
                    call.id or None,
                    (fn.name or None) if fn is not None else None,
                    (fn.arguments or "") if fn is not None else "",
                ))


def _pieces(events: list[ProviderEvent], piece: ReasoningPiece) -> None:
    text, reasoning, details = piece
    if text:
        events.append(TextDelta(text))
    if reasoning or details:
        events.append(ReasoningDelta(reasoning, details))
