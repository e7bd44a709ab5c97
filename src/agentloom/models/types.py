"""Model values: requests, responses, the adapter's provider events, descriptors (000 §4).

Frozen, keyword-only values. ``ProviderEvent`` is what an adapter yields *inside* one
Attempt; it never reaches the bus, a hook or a client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from agentloom.errors import OperationError

Role = Literal["system", "user", "assistant", "tool"]

_PayloadMemo: TypeAlias = tuple[dict[str, Any], bool]
"""A message's or tool's payload form and whether it passed its item of the payload schema:
kept on the value by ``models.codec.encode_request`` the first time the value is sent (an
agent re-sends its whole history every turn). Not an input, not compared, not in ``repr``;
``dataclasses.replace`` starts a new value without it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One complete tool call of a response: ``arguments`` is the raw JSON text as received.

    ``problem`` is why the call cannot run although the response is valid — it names a tool
    that was not offered, or its arguments are not a JSON object (``models.calls``): set by
    the gateway on a delivered response, recorded as the call's failure and told to the
    model. It is not part of any wire form (it is derived again from the stored response).
    """

    id: str
    name: str
    arguments: str
    index: int = 0
    problem: OperationError | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message of the assembled history. ``reasoning`` / ``reasoning_details`` keep the
    provider's reasoning channel so it can be echoed back when the preset requires it. ``id``
    is the message's stable id within its invocation (the agent loop sets it; hooks address a
    message's context record by it, 000 §5.3); it is never sent to a provider."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None
    reasoning_details: tuple[Mapping[str, Any], ...] | None = None
    id: str | None = field(default=None, compare=False)
    _payload: _PayloadMemo | None = field(default=None, init=False, repr=False, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDef:
    """A tool offered to the model: its model-facing name and JSON Schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    _payload: _PayloadMemo | None = field(default=None, init=False, repr=False, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkParams:
    """A request's reasoning switch: on / off (``None``: the provider's default) and effort.
    The preset translates it into the provider's own parameters."""

    enabled: bool | None = None
    effort: Literal["minimal", "low", "medium", "high", "max"] | None = None


OutputFormat: TypeAlias = Literal["text", "json_object"] | Mapping[str, Any]
"""``text``, JSON mode (``json_object``), or a schema: a bare JSON Schema or the named form
``{"name": str, "schema": {...}, "strict": bool}`` (``strict`` optional)."""

StructuredFormat: TypeAlias = Literal["json_schema", "json_object"]
"""A structured output format a model may be asked for (a preset capability of that name)."""
STRUCTURED_FORMATS: frozenset[StructuredFormat] = frozenset({"json_schema", "json_object"})


def named_schema(fmt: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{"name", "schema", "strict"?}`` taken from ``fmt`` when it is the named form of a
    schema output format, else ``None`` (a bare JSON Schema, or a provider's own form)."""
    if not (isinstance(fmt.get("name"), str) and isinstance(fmt.get("schema"), Mapping)):
        return None
    spec: dict[str, Any] = {"name": fmt["name"], "schema": fmt["schema"]}
    if fmt.get("strict") is not None:
        spec["strict"] = bool(fmt["strict"])
    return spec


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """Assembled messages, tool catalog, output format, think parameters, output limit.
    The model and the credentials come from the frozen release, not from here."""

    messages: tuple[Message, ...]
    tools: tuple[ToolDef, ...] = ()
    output_format: OutputFormat = "text"
    think: ThinkParams | None = None
    max_output_tokens: int | None = None
    purpose: str | None = None  # e.g. "compaction"


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts of one model call, each ``None`` when the provider did not report it."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    total_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """One complete response of one Attempt, validated before anyone sees it."""

    text: str
    reasoning: str | None = None
    reasoning_details: tuple[Mapping[str, Any], ...] | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None
    response_id: str | None = None


# -- provider events (inside one Attempt only) ----------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A fragment of the answer's text in a model stream."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A fragment of the model's reasoning in a stream, with the provider's structured details
    when it sends any."""

    text: str
    details: tuple[Mapping[str, Any], ...] | None = None


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of tool call ``index``: ``id`` / ``name`` are set once (repeats are ignored);
    only ``arguments`` fragments are concatenated."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class UsageEvent:
    """The token usage of the call, as reported in the stream."""

    usage: Usage


@dataclass(frozen=True, slots=True)
class Finish:
    """A complete terminal frame: the response ended normally."""

    reason: str | None
    response_id: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Anything that proves the connection is alive but is not meaningful output: SSE
    comments, empty deltas, role-only or usage-only frames."""

    what: str = ""


ProviderEvent: TypeAlias = (
    TextDelta | ReasoningDelta | ToolCallDelta | UsageEvent | Finish | Heartbeat
)


def is_meaningful(event: ProviderEvent) -> bool:
    """First meaningful output (000 §4): non-empty text, reasoning, a tool name or argument
    fragment. Not the connection, heartbeats, empty deltas, role-only or usage-only frames."""
    if isinstance(event, TextDelta | ReasoningDelta):
        return bool(event.text) or bool(getattr(event, "details", None))
    if isinstance(event, ToolCallDelta):
        return bool(event.name) or bool(event.arguments)
    return False


# -- descriptors and budgets ---------------------------------------------------------------

DescriptorSource = Literal["provider", "config", "platform_default"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelDescriptor:
    """What is known about a model: the window W and output limit, and where each came from.
    A value the provider did not state is never presented as the provider's."""

    provider_model_id: str
    window: int | None
    output_limit: int | None
    source: DescriptorSource
    fetched_at: float | None = None
    output_limit_source: DescriptorSource | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
