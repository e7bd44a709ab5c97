"""What both offline models share: their default window, streaming a complete response as
``ProviderEvent``s, a rough usage count, their descriptor and a one-line excerpt of a message.

Owns: these helpers. Does not own: what either model answers (``_test_model``, ``_script``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from agentloom.models.types import (
    Finish,
    ModelDescriptor,
    ModelRequest,
    ModelResponse,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
)

__all__ = [
    "OFFLINE_OUTPUT_LIMIT",
    "OFFLINE_WINDOW",
    "estimated_usage",
    "excerpt",
    "offline_descriptor",
    "stream_response",
]

OFFLINE_WINDOW = 128_000
OFFLINE_OUTPUT_LIMIT = 4_096


async def stream_response(response: ModelResponse, chunk: int) -> AsyncIterator[ProviderEvent]:
    """``response`` as a provider would stream it: reasoning, text and tool-call arguments in
    pieces of ``chunk`` characters, then usage and the finish."""
    if response.reasoning:
        for piece in _pieces(response.reasoning, chunk):
            yield ReasoningDelta(piece)
            await asyncio.sleep(0)
    for piece in _pieces(response.text, chunk):
        yield TextDelta(piece)
        await asyncio.sleep(0)
    for call in response.tool_calls:
        yield ToolCallDelta(call.index, id=call.id, name=call.name)
        for piece in _pieces(call.arguments, chunk):
            yield ToolCallDelta(call.index, arguments=piece)
            await asyncio.sleep(0)
    if response.usage is not None:
        yield UsageEvent(response.usage)
    yield Finish(response.finish_reason, response_id=response.response_id, model=response.model)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def estimated_usage(request: ModelRequest, *outputs: str) -> Usage:
    """A rough, deterministic count: about four characters a token, in and out."""
    seen = sum(len(m.content or "") + sum(len(c.arguments) for c in m.tool_calls) for m in request.messages)
    out = sum(len(o) for o in outputs)
    return Usage(
        input_tokens=seen // 4 + 1, output_tokens=out // 4 + 1, total_tokens=seen // 4 + out // 4 + 2
    )


def offline_descriptor(model: str, window: int, output_limit: int) -> ModelDescriptor:
    """What an offline model states about itself (``source="provider"``, ``extras.offline``)."""
    return ModelDescriptor(
        provider_model_id=model,
        window=window,
        output_limit=output_limit,
        source="provider",
        output_limit_source="provider",
        extras={"offline": True},
    )


def excerpt(text: str | None, limit: int = 120) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
