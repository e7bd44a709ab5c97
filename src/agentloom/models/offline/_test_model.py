"""``TestModel``, the deterministic offline model ``test``: it calls every offered tool once
with ``example_arguments``, then summarises the results it is shown (``result_status``).

It never invents a reference: a tool with a required reference argument (a property named
``ref`` or ending in ``_ref``, as ``result_read``'s ``result_ref``) is left out of the first
round, and called only once a result of this turn handed out a result ref (``res:…``), with
that ref — one more round of calls (one at most) before the summary.

Owns: what the ``test`` model answers. Does not own: streaming it (``_common``) or the values
it generates from a schema (``_examples``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from agentloom.canonical import sorted_json
from agentloom.models.offline._common import (
    OFFLINE_OUTPUT_LIMIT,
    OFFLINE_WINDOW,
    estimated_usage,
    excerpt,
    offline_descriptor,
    stream_response,
)
from agentloom.models.offline._examples import example_arguments
from agentloom.models.types import (
    STRUCTURED_FORMATS,
    Message,
    ModelDescriptor,
    ModelRequest,
    ModelResponse,
    ProviderEvent,
    StructuredFormat,
    ToolCall,
    ToolDef,
    named_schema,
)
from agentloom.results import RESULT_REF_PREFIX, SIDE_EFFECTS_NOT_ROLLED_BACK, parse_result_ref

__all__ = ["TestModel", "result_status"]


def _response_id(model: str, request: ModelRequest) -> str:
    shape = [[m.role, m.content, m.tool_call_id, [c.id for c in m.tool_calls]] for m in request.messages]
    return f"{model}-" + hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:16]


_STATUS_PREFIXES = (
    ("denied before execution", "denied_before_execution"),
    (SIDE_EFFECTS_NOT_ROLLED_BACK, "denied_after_execution"),
    ("outcome unknown", "unknown"),
    ("failed:", "failed"),
    ("cancelled:", "cancelled"),
)


def result_status(content: str | None) -> str:
    """The status a tool message reports: a JSON object's ``status``, else the prefix of
    ``OperationResult.describe()`` (denied / unknown / failed / cancelled), else ``succeeded``."""
    text = (content or "").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("status"), str):
        return str(data["status"])
    for prefix, status in _STATUS_PREFIXES:
        if text.startswith(prefix):
            return status
    return "succeeded"


class TestModel:
    """The deterministic offline model ``test``: same request, same events, every time."""

    __test__ = False  # not a pytest test class
    output_formats: frozenset[StructuredFormat] = STRUCTURED_FORMATS

    def __init__(self, *, model: str = "test", reasoning: bool = False, chunk_size: int = 16) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        self.model = model
        self.reasoning = reasoning
        self.chunk_size = chunk_size

    def respond(self, request: ModelRequest) -> ModelResponse:
        """The complete response ``stream_once`` streams for ``request``."""
        messages = request.messages
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        results = [m for m in messages[last_user + 1 :] if m.role == "tool"]
        reasoning = None
        calls: tuple[ToolCall, ...] = ()
        turn = sum(1 for m in messages if m.role == "user")
        usable = [t for t in request.tools if _reference_argument(t.parameters) is None]
        reads = _reference_calls(request.tools, messages[last_user + 1 :], turn)
        if usable and not results:
            calls = tuple(
                ToolCall(
                    id=f"call_{turn}_{i}",
                    name=tool.name,
                    arguments=sorted_json(example_arguments(tool.parameters)),
                    index=i,
                )
                for i, tool in enumerate(usable)
            )
            text = ""
            reasoning = f"calling {len(calls)} tool(s) once each" if self.reasoning else None
        elif reads:
            calls = reads
            text = ""
            reasoning = f"reading {len(calls)} result ref(s)" if self.reasoning else None
        elif results:
            text = _summary(messages, results)
            reasoning = f"read {len(results)} tool result(s)" if self.reasoning else None
        else:
            prompt = messages[last_user].content if last_user >= 0 else ""
            text = f"test model: no tools to call; last user message: {excerpt(prompt)!r}"
        if not calls:
            text = _formatted(text, request.output_format)
        return ModelResponse(
            text=text,
            reasoning=reasoning,
            tool_calls=calls,
            finish_reason="tool_calls" if calls else "stop",
            usage=estimated_usage(request, text, reasoning or "", *(c.arguments for c in calls)),
            model=self.model,
            response_id=_response_id(self.model, request),
        )

    async def stream_once(self, request: ModelRequest, attempt: Any) -> AsyncIterator[ProviderEvent]:
        async for event in stream_response(self.respond(request), self.chunk_size):
            yield event

    async def discover(self, connection: Any = None) -> list[ModelDescriptor]:
        return [offline_descriptor(self.model, OFFLINE_WINDOW, OFFLINE_OUTPUT_LIMIT)]

    async def aclose(self) -> None:
        """Nothing to release: no connection was ever opened."""


_REF_TEXT = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(RESULT_REF_PREFIX)
                       + r"[A-Za-z0-9_.:-]*[A-Za-z0-9_-]")
"""A result ref in a tool message's text (``res:<operation id>[:<part>]``)."""


def _reference_argument(parameters: Mapping[str, Any]) -> str | None:
    """The required argument of a tool's schema that names an existing thing by reference
    (``ref`` or ``*_ref``): the test model cannot make one up."""
    properties = parameters.get("properties") or {}
    for name in parameters.get("required") or ():
        if isinstance(name, str) and (name == "ref" or name.endswith("_ref")) \
                and isinstance(properties, Mapping) and isinstance(properties.get(name), Mapping) \
                and properties[name].get("type") == "string":
            return name
    return None


def _reference_calls(tools: Sequence[ToolDef], turn_messages: Sequence[Message],
                     turn: int) -> tuple[ToolCall, ...]:
    """The one round of reference calls of a turn: each reference tool once with each result
    ref the turn's tool results handed out. None once the turn made that round, so a read
    that hands out a ref of its own (a long read) is never read in turn."""
    readers = {t.name for t in tools if _reference_argument(t.parameters) is not None}
    if any(c.name in readers for m in turn_messages for c in m.tool_calls):
        return ()
    refs = list(dict.fromkeys(
        ref for m in turn_messages if m.role == "tool"
        for ref in _REF_TEXT.findall(m.content or "") if parse_result_ref(ref) is not None))
    calls: list[ToolCall] = []
    for tool in (t for t in tools if t.name in readers):
        name = _reference_argument(tool.parameters)
        for ref in refs:
            arguments = sorted_json({**example_arguments(tool.parameters), name: ref})
            calls.append(ToolCall(id=f"call_{turn}_ref_{len(calls)}", name=tool.name,
                                  arguments=arguments, index=len(calls)))
    return tuple(calls)


def _formatted(text: str, fmt: Any) -> str:
    """A final answer in the requested output format: a schema's example, or JSON mode's object."""
    if isinstance(fmt, Mapping):
        named = named_schema(fmt)
        return sorted_json(example_arguments(named["schema"] if named else fmt))
    if fmt == "json_object":
        return json.dumps({"answer": text})
    return text


def _summary(messages: Sequence[Message], results: Sequence[Message]) -> str:
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    lines = [f"test model saw {len(results)} tool result(s):"]
    for m in results:
        name = m.name or names.get(m.tool_call_id or "", "?")
        status = result_status(m.content)
        lines.append(f"- {name} [{m.tool_call_id}]: {status}: {excerpt(m.content)}")
    return "\n".join(lines)

