"""Offline models: adapters that need no network and yield the same ``ProviderEvent``s as a real
provider, so a run on them goes through the same gateway, hooks and persistence.

- ``TestModel`` (``test``): deterministic. Offered tools and no tool result yet since the last
  user message → it calls every tool once, arguments generated from the tool's JSON Schema
  (``example_arguments``). After it sees the results it answers with a summary of each result
  and its status. Without tools it answers with a one-line echo. Asked for a schema
  (``output_format``), its answer is ``example_arguments`` of the schema as JSON; asked for
  ``json_object``, ``{"answer": <the text>}``.
- ``ScriptModel`` (``script``): replays turns from a YAML script (format in docs/models.md). The
  turn is chosen by the number of assistant messages already in the request, so a retried or
  recovered call replays the same turn; ``expect`` checks the last message first. Running out of
  turns or a failed expectation raises ``ScriptError`` before any event is yielded.

Both implement ``stream_once(request, attempt)`` and ``discover(connection)``, and take
requests for both structured output formats (``output_formats``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentloom.canonical import sorted_json
from agentloom.errors import AgentLoomError, ConfigError, ErrorCategory
from agentloom.models.types import (
    STRUCTURED_FORMATS,
    Finish,
    Message,
    ModelDescriptor,
    ModelRequest,
    ModelResponse,
    ProviderEvent,
    ReasoningDelta,
    Role,
    StructuredFormat,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageEvent,
    named_schema,
)
from agentloom.results import SIDE_EFFECTS_NOT_ROLLED_BACK
from agentloom.yamlfile import load_yaml

__all__ = [
    "Script",
    "ScriptError",
    "ScriptModel",
    "ScriptTurn",
    "TestModel",
    "example_arguments",
    "load_script",
    "parse_script",
    "result_status",
]

OFFLINE_WINDOW = 128_000
OFFLINE_OUTPUT_LIMIT = 4_096


class ScriptError(AgentLoomError):
    """A ``ScriptModel`` call the script cannot answer (exhausted, or an ``expect`` failed)."""

    default_code = "SCRIPT_MODEL_FAILED"
    default_category: ErrorCategory = "validation"


# -- streaming one response as provider events ------------------------------------------------


async def _stream(response: ModelResponse, chunk: int) -> AsyncIterator[ProviderEvent]:
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


def _usage(request: ModelRequest, *outputs: str) -> Usage:
    seen = sum(len(m.content or "") + sum(len(c.arguments) for c in m.tool_calls) for m in request.messages)
    out = sum(len(o) for o in outputs)
    return Usage(
        input_tokens=seen // 4 + 1, output_tokens=out // 4 + 1, total_tokens=seen // 4 + out // 4 + 2
    )


def _response_id(model: str, request: ModelRequest) -> str:
    shape = [[m.role, m.content, m.tool_call_id, [c.id for c in m.tool_calls]] for m in request.messages]
    return f"{model}-" + hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:16]


def _descriptor(model: str, window: int, output_limit: int) -> ModelDescriptor:
    return ModelDescriptor(
        provider_model_id=model,
        window=window,
        output_limit=output_limit,
        source="provider",
        output_limit_source="provider",
        extras={"offline": True},
    )


# -- reading tool results ----------------------------------------------------------------------

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


def _excerpt(text: str | None, limit: int = 120) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# -- TestModel ---------------------------------------------------------------------------------


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
        if request.tools and not results:
            turn = sum(1 for m in messages if m.role == "user")
            calls = tuple(
                ToolCall(
                    id=f"call_{turn}_{i}",
                    name=tool.name,
                    arguments=sorted_json(example_arguments(tool.parameters)),
                    index=i,
                )
                for i, tool in enumerate(request.tools)
            )
            text = ""
            reasoning = f"calling {len(calls)} tool(s) once each" if self.reasoning else None
        elif results:
            text = _summary(messages, results)
            reasoning = f"read {len(results)} tool result(s)" if self.reasoning else None
        else:
            prompt = messages[last_user].content if last_user >= 0 else ""
            text = f"test model: no tools to call; last user message: {_excerpt(prompt)!r}"
        if not calls:
            text = _formatted(text, request.output_format)
        return ModelResponse(
            text=text,
            reasoning=reasoning,
            tool_calls=calls,
            finish_reason="tool_calls" if calls else "stop",
            usage=_usage(request, text, reasoning or "", *(c.arguments for c in calls)),
            model=self.model,
            response_id=_response_id(self.model, request),
        )

    async def stream_once(self, request: ModelRequest, attempt: Any) -> AsyncIterator[ProviderEvent]:
        async for event in _stream(self.respond(request), self.chunk_size):
            yield event

    async def discover(self, connection: Any = None) -> list[ModelDescriptor]:
        return [_descriptor(self.model, OFFLINE_WINDOW, OFFLINE_OUTPUT_LIMIT)]

    async def aclose(self) -> None:
        """Nothing to release: no connection was ever opened."""


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
        lines.append(f"- {name} [{m.tool_call_id}]: {status}: {_excerpt(m.content)}")
    return "\n".join(lines)


# -- arguments from a JSON Schema --------------------------------------------------------------


def example_arguments(schema: Mapping[str, Any] | bool) -> Any:
    """A deterministic value valid against ``schema`` (JSON Schema 2020-12).

    Honoured: local ``$ref`` (``#/$defs/…``, ``#/definitions/…``), ``const``, ``enum``,
    ``allOf`` (merged), ``anyOf`` / ``oneOf`` (first non-null branch), ``type`` (first non-null
    of a list), required properties (optional ones are left out), nested objects and arrays,
    ``minItems`` / ``maxItems`` / ``uniqueItems``, ``minLength`` / ``maxLength``, ``minimum`` /
    ``maximum`` / exclusive bounds / ``multipleOf``, and common string ``format``s. Not
    honoured: ``pattern`` and ``not``.
    """
    root = schema if isinstance(schema, Mapping) else {}
    return _generate(schema, root, "value", 0, 0)


_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "email": "test@example.com",
    "idn-email": "test@example.com",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "iri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "duration": "P1D",
}


def _generate(schema: Any, root: Mapping[str, Any], name: str, index: int, depth: int) -> Any:
    if depth > 32:
        raise ValueError("schema nests too deeply (or refers to itself without an exit)")
    if not isinstance(schema, Mapping):
        return name if schema is not False else None
    if "$ref" in schema:
        return _generate(_resolve(root, str(schema["$ref"])), root, name, index, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][index % len(schema["enum"])]
    if isinstance(schema.get("allOf"), list):
        return _generate(_merge_all(schema, root), root, name, index, depth + 1)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            usable = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")]
            return _generate((usable or branches)[0], root, name, index, depth + 1)
    kind = _kind(schema)
    if kind == "object":
        props = schema.get("properties") or {}
        required = [r for r in schema.get("required") or () if isinstance(r, str)]
        return {key: _generate(props.get(key, {}), root, key, 0, depth + 1) for key in required}
    if kind == "array":
        return _array(schema, root, name, depth)
    if kind in ("integer", "number"):
        return _number(schema, kind, index)
    if kind == "boolean":
        return index % 2 == 0
    if kind == "null":
        return None
    return _string(schema, name, index)


def _kind(schema: Mapping[str, Any]) -> str:
    declared = schema.get("type")
    if isinstance(declared, list):
        concrete = [t for t in declared if t != "null"]
        declared = concrete[0] if concrete else "null"
    if isinstance(declared, str):
        return declared
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return "number"
    return "string"


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    if not ref.startswith("#"):
        raise ValueError(f"only local $ref is supported, not {ref!r}")
    node: Any = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            raise ValueError(f"$ref {ref!r} does not resolve")
        node = node[part]
    return node


def _merge_all(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        part = _resolve(root, part["$ref"]) if isinstance(part, Mapping) and "$ref" in part else part
        if not isinstance(part, Mapping):
            continue
        for key, value in part.items():
            if key == "properties":
                merged["properties"] = {**(merged.get("properties") or {}), **value}
            elif key == "required":
                merged["required"] = list(dict.fromkeys([*(merged.get("required") or []), *value]))
            else:
                merged.setdefault(key, value)
    return merged


def _array(schema: Mapping[str, Any], root: Mapping[str, Any], name: str, depth: int) -> list[Any]:
    prefix = schema.get("prefixItems") or []
    low = int(schema.get("minItems", 0))
    high = schema.get("maxItems")
    count = max(low, len(prefix), 1)
    if high is not None:
        count = min(count, int(high))
    items = schema.get("items", {})
    out = []
    for i in range(count):
        sub = prefix[i] if i < len(prefix) else items
        out.append(_generate(sub, root, name, i, depth + 1))
    return out


def _number(schema: Mapping[str, Any], kind: str, index: int) -> int | float:
    integer = kind == "integer"
    lo, strict_lo = _bound(schema, "minimum", "exclusiveMinimum", max)
    hi, strict_hi = _bound(schema, "maximum", "exclusiveMaximum", min)
    if integer:
        lo = None if lo is None else (math.floor(lo) + 1 if strict_lo else math.ceil(lo))
        hi = None if hi is None else (math.ceil(hi) - 1 if strict_hi else math.floor(hi))
        strict_lo = strict_hi = False
    if lo is None:
        base = 0.0 if hi is None else min(0.0, hi - 1 if strict_hi else hi)
    elif hi is None:
        base = lo + 1 if strict_lo else lo
    else:
        base = (lo + hi) / 2 if strict_lo or strict_hi else lo
    value = base + index
    if hi is not None and (value > hi or (strict_hi and value >= hi)):
        value = base
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0:
        value = math.ceil(value / step) * step
        if hi is not None and (value > hi or (strict_hi and value >= hi)):
            value = math.floor(hi / step) * step
    return int(value) if integer else float(value)


def _bound(schema: Mapping[str, Any], inclusive: str, exclusive: str, pick: Any) -> tuple[Any, bool]:
    """The binding bound on one side and whether it is exclusive."""
    candidates = [
        (schema[k], k == exclusive) for k in (inclusive, exclusive) if isinstance(schema.get(k), int | float)
    ]
    if not candidates:
        return None, False
    value = pick(v for v, _ in candidates)
    return value, any(strict for v, strict in candidates if v == value)


def _string(schema: Mapping[str, Any], name: str, index: int) -> str:
    fmt = schema.get("format")
    value = _FORMATS.get(fmt, name) if isinstance(fmt, str) else name
    if index and not isinstance(fmt, str):
        value = f"{value}-{index}"
    low = int(schema.get("minLength", 0))
    high = schema.get("maxLength")
    if len(value) < low:
        value = value + "x" * (low - len(value))
    if high is not None and len(value) > int(high):
        value = value[: int(high)] if index == 0 else (str(index) * int(high))[: int(high)]
    return value


# -- ScriptModel -------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptToolCall(_Strict):
    """One scripted tool call; ``arguments`` as an object, or a raw string sent verbatim."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None


class ScriptExpect(_Strict):
    """Checks on the request's last message before the turn is replayed."""

    role: Role | None = None
    name: str | None = None
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()

    @field_validator("contains", "not_contains", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value


UsageField = Literal["input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens", "total_tokens"]


class ScriptTurn(_Strict):
    """One scripted answer of the offline ``test`` model: optional ``expect`` checks on the
    request, then reasoning, text, tool calls, finish reason and usage to return."""

    expect: ScriptExpect | None = None
    reasoning: str | None = None
    text: str = ""
    tool_calls: tuple[ScriptToolCall, ...] = ()
    finish_reason: str | None = None
    usage: dict[UsageField, int] | None = None

    @model_validator(mode="after")
    def _says_something(self) -> ScriptTurn:
        if not self.text and not self.tool_calls:
            raise ValueError("a turn needs 'text' or 'tool_calls'")
        return self


class Script(_Strict):
    """A replay script (format 1, see docs/models.md)."""

    format: Literal[1] = 1
    model: str = "script"
    window: int = Field(default=OFFLINE_WINDOW, ge=1)
    output_limit: int = Field(default=OFFLINE_OUTPUT_LIMIT, ge=1)
    turns: tuple[ScriptTurn, ...] = Field(min_length=1)


def parse_script(data: Any, *, source: str) -> Script:
    """Validate parsed script data.

    Raises:
        ConfigError: the data is invalid; the message names ``source`` and the offending key.
    """
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in first["loc"]).replace(".[", "[")
        raise ConfigError(
            f"script {source!r}: key {key or '(top level)'!r}: {first['msg']}", code="SCRIPT_INVALID"
        ) from None


def load_script(path: str | Path) -> Script:
    """Read and validate a script file.

    Raises:
        ConfigError: the file is unreadable, not YAML, or invalid (file and key named).
    """
    p = Path(path)
    try:
        # a script is plain data: no aliases (a "billion laughs"), no key written twice
        data = load_yaml(p.read_text(encoding="utf-8"), aliases=False, what="a script file")
    except OSError as exc:
        raise ConfigError(
            f"script {str(p)!r}: cannot be read ({exc.strerror})", code="SCRIPT_INVALID"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"script {str(p)!r}: not valid YAML: {exc}", code="SCRIPT_INVALID") from None
    return parse_script(data, source=str(p))


@dataclass(frozen=True, slots=True)
class _Checked:
    index: int
    turn: ScriptTurn


class ScriptModel:
    """The offline model ``script``: replays ``script.turns`` in order (whatever format a
    request asks for: the script says what the answer is)."""

    output_formats: frozenset[StructuredFormat] = STRUCTURED_FORMATS

    def __init__(self, script: Script, *, source: str = "<script>", chunk_size: int = 16) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        self.script = script
        self.source = source
        self.model = script.model
        self.chunk_size = chunk_size

    @classmethod
    def from_file(cls, path: str | Path, *, chunk_size: int = 16) -> ScriptModel:
        return cls(load_script(path), source=str(path), chunk_size=chunk_size)

    def respond(self, request: ModelRequest) -> ModelResponse:
        """The scripted response for ``request``.

        Raises:
            ScriptError: the script has no turn left, or the turn's ``expect`` fails.
        """
        checked = self._turn(request)
        turn, n = checked.turn, checked.index + 1
        calls = tuple(
            ToolCall(
                id=call.id or f"call_{n}_{j + 1}",
                name=call.name,
                arguments=call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
                index=j,
            )
            for j, call in enumerate(turn.tool_calls)
        )
        usage = (
            Usage(**turn.usage) if turn.usage else _usage(request, turn.text, *(c.arguments for c in calls))
        )
        return ModelResponse(
            text=turn.text,
            reasoning=turn.reasoning,
            tool_calls=calls,
            finish_reason=turn.finish_reason or ("tool_calls" if calls else "stop"),
            usage=usage,
            model=self.model,
            response_id=f"{self.model}-turn-{n}",
        )

    def _turn(self, request: ModelRequest) -> _Checked:
        index = sum(1 for m in request.messages if m.role == "assistant")
        turns = self.script.turns
        if index >= len(turns):
            raise ScriptError(
                f"script {self.source!r} is exhausted: the model was called for turn {index + 1} "
                f"but the script has {len(turns)} turn(s)",
                code="SCRIPT_EXHAUSTED",
            )
        turn = turns[index]
        if turn.expect is not None:
            problem = _unmet(turn.expect, request.messages[-1] if request.messages else None)
            if problem:
                raise ScriptError(
                    f"script {self.source!r} turn {index + 1}: expected {problem}",
                    code="SCRIPT_EXPECTATION_FAILED",
                )
        return _Checked(index, turn)

    async def stream_once(self, request: ModelRequest, attempt: Any) -> AsyncIterator[ProviderEvent]:
        response = self.respond(request)
        async for event in _stream(response, self.chunk_size):
            yield event

    async def discover(self, connection: Any = None) -> list[ModelDescriptor]:
        return [_descriptor(self.model, self.script.window, self.script.output_limit)]

    async def aclose(self) -> None:
        """Nothing to release: no connection was ever opened."""


def _unmet(expect: ScriptExpect, last: Message | None) -> str | None:
    if last is None:
        return "a last message, but the request has none"
    shown = f"(last message: {last.role} {_excerpt(last.content)!r})"
    if expect.role is not None and last.role != expect.role:
        return f"the last message to be a {expect.role} message {shown}"
    if expect.name is not None and last.name != expect.name:
        return f"the last message to come from {expect.name!r}, not {last.name!r} {shown}"
    content = last.content or ""
    for needle in expect.contains:
        if needle not in content:
            return f"the last message to contain {needle!r} {shown}"
    for needle in expect.not_contains:
        if needle in content:
            return f"the last message not to contain {needle!r} {shown}"
    return None
