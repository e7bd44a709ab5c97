"""The preset file's shape: closed vocabularies (capabilities, protocols, echo rules) and the
frozen pydantic sections a preset file is validated into.

Owns: the field names, types, defaults and per-field validation of a preset file (format
``FORMAT_VERSION``). Does not own: checks across sections, the ``models:`` overrides and
loading (``_loading``), or what the values do to a request (``_preset``, ``_body``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentloom.catalog.spec import freeze_json
from agentloom.errors import CatalogError, ErrorCategory

FORMAT_VERSION = 1
"""Preset file format. 1: the layout documented in docs/models.md."""

Capability = Literal[
    "tools",
    "reasoning",
    "think_toggle",
    "think_effort",
    "json_object",
    "json_schema",
    "tool_stream",
    "stream_usage",
    "parallel_tool_calls",
]
CAPABILITIES: tuple[str, ...] = get_args(Capability)
Protocol: TypeAlias = Literal["chat", "responses"]
ReasoningChannel = Literal["reasoning_content", "reasoning_details", "think_tags"]
EchoRule = Literal["never", "tool_call_turns", "always"]
EchoForm = Literal["reasoning_content", "reasoning_details", "think_tags", "responses_items"]
StreamUsageMode = Literal["include_usage", "always", "none"]
EffortLevel = Literal["minimal", "low", "medium", "high", "max"]
EFFORT_LEVELS: tuple[str, ...] = get_args(EffortLevel)
FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "error"})

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
"""A preset's name (and file stem)."""
# Keys the body builder owns; preset constants may not set them.
RESERVED = frozenset(
    {"model", "messages", "input", "tools", "stream", "stream_options", "response_format", "text"}
)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def model_post_init(self, context: Any, /) -> None:
        # Loaded presets are cached and shared: their mappings are made read-only too.
        for name, value in self.__dict__.items():
            if isinstance(value, dict):
                object.__setattr__(self, name, _read_only(value))


def _read_only(value: dict[Any, Any]) -> Mapping[Any, Any]:
    try:
        frozen: Mapping[Any, Any] = freeze_json(value)
    except CatalogError:  # not plain JSON (int keys, nested models): freeze the top level
        frozen = MappingProxyType(value)
    return frozen


class Endpoint(_Section):
    """Where one variant lives and which environment variable holds its API key.

    ``api_key_env`` ``None``: the endpoint takes no key (a local server such as Ollama).
    ``api_key_optional``: the key is sent when the variable is set and not required when it
    is not (a local server that only checks a key when started with one, e.g. vLLM
    ``--api-key``). Whether a connection needs its key is decided in ``models.connect``.
    """

    base_url: str = Field(pattern=r"^https?://")
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Z][A-Z0-9_]*$")
    api_key_optional: bool = False


class EffortMapping(_Section):
    """``ThinkParams.effort`` → the provider's value, under ``param`` (a dotted body path)."""

    param: str = Field(min_length=1)
    values: dict[EffortLevel, str]

    @field_validator("values")
    @classmethod
    def _every_level(cls, values: dict[str, str]) -> dict[str, str]:
        missing = [level for level in EFFORT_LEVELS if level not in values]
        if missing:
            raise ValueError(f"must map every effort level; missing {missing}")
        return values


class ThinkMapping(_Section):
    """Body fragments merged when ``think.enabled`` is true / false, and the effort mapping."""

    enabled: dict[str, Any] = Field(default_factory=dict)
    disabled: dict[str, Any] = Field(default_factory=dict)
    effort: EffortMapping | None = None


class ThinkTags(_Section):
    """The tags that wrap reasoning inline in a Chat answer's text (default
    ``<think>`` … ``</think>``)."""

    open: str = Field(default="<think>", min_length=1)
    close: str = Field(default="</think>", min_length=1)


class ReasoningRules(_Section):
    """Where reasoning arrives in a Chat delta (in this order)."""

    channels: tuple[ReasoningChannel, ...] = ()
    think_tags: ThinkTags = Field(default_factory=ThinkTags)


class HistoryRules(_Section):
    """What assistant messages must carry back: when (``reasoning_echo``), in which form (first
    form the message has data for), and what to send when an echo is required but empty."""

    reasoning_echo: EchoRule = "never"
    reasoning_as: tuple[EchoForm, ...] = ()
    empty_reasoning_content: str | None = None


class RequestRules(_Section):
    """How a provider wants a Chat request: the name of its max-tokens parameter, how to ask
    for usage in a stream, fixed body fields (plus those sent only with tools) and optional
    headers read from the environment."""

    max_tokens_param: str = Field(min_length=1)
    stream_usage: StreamUsageMode
    body: dict[str, Any] = Field(default_factory=dict)
    body_with_tools: dict[str, Any] = Field(default_factory=dict)
    # Optional HTTP headers, each sent when its environment variable is set (header → variable),
    # e.g. OpenRouter's attribution headers.
    headers_env: dict[str, str] = Field(default_factory=dict)


class UsageMapping(_Section):
    """Each ``Usage`` field → candidate dotted paths in the provider's usage object; the first
    path holding an integer wins."""

    input_tokens: tuple[str, ...] = ()
    output_tokens: tuple[str, ...] = ()
    total_tokens: tuple[str, ...] = ()
    reasoning_tokens: tuple[str, ...] = ()
    cached_tokens: tuple[str, ...] = ()

    @field_validator("*", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value


class StreamRules(_Section):
    """How a provider ends and labels a stream: its done sentinel (``[DONE]`` or none) and how
    its finish reasons map to the canonical ones."""

    done_sentinel: str | None = "[DONE]"
    finish_reasons: dict[str, str] = Field(default_factory=dict)

    @field_validator("finish_reasons")
    @classmethod
    def _canonical(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(v for v in value.values() if v not in FINISH_REASONS)
        if bad:
            raise ValueError(f"maps to {bad}; allowed: {sorted(FINISH_REASONS)}")
        return value


class ErrorRules(_Section):
    """Provider-specific HTTP status → error category overrides (the adapter owns the rest)."""

    status: dict[int, ErrorCategory] = Field(default_factory=dict)


class DiscoveryRules(_Section):
    """Where a ``GET {base_url}/models`` entry states a model's window and output limit: dotted
    paths, the first holding a positive integer wins (``models.discovery``)."""

    window: tuple[str, ...] = Field(min_length=1)
    output_limit: tuple[str, ...] = ()

    @field_validator("*", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value


class _CapabilityDelta(_Section):
    add: tuple[Capability, ...] = ()
    remove: tuple[Capability, ...] = ()


class _ModelOverride(_Section):
    match: tuple[str, ...] = Field(min_length=1)
    capabilities: _CapabilityDelta = Field(default_factory=_CapabilityDelta)
    think: dict[str, Any] | None = None
    reasoning: dict[str, Any] | None = None
    history: dict[str, Any] | None = None
    request: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    stream: dict[str, Any] | None = None
    notes: str | None = None
    window: int | None = Field(default=None, ge=1)  # what the provider documents, in tokens
    output_limit: int | None = Field(default=None, ge=1)


class PresetFile(_Section):
    """One preset file as written (its ``models:`` overrides not yet applied)."""

    format: Literal[1]
    name: str = Field(pattern=NAME.pattern)
    version: int = Field(ge=1)
    title: str = Field(min_length=1)
    protocol: Protocol
    variants: dict[str, Endpoint]
    capabilities: tuple[Capability, ...]
    think: ThinkMapping = Field(default_factory=ThinkMapping)
    reasoning: ReasoningRules = Field(default_factory=ReasoningRules)
    history: HistoryRules = Field(default_factory=HistoryRules)
    request: RequestRules
    usage: UsageMapping
    stream: StreamRules = Field(default_factory=StreamRules)
    errors: ErrorRules = Field(default_factory=ErrorRules)
    discovery: DiscoveryRules | None = None
    notes: dict[str, str] = Field(default_factory=dict)
    models: tuple[_ModelOverride, ...] = ()

