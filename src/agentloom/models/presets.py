"""Provider presets: versioned data that says how one provider speaks a protocol (000 §4).

A preset is a YAML file in ``models/preset_data/`` (one per preset, ``version:`` bumped on every
change). It names the protocol (``chat`` | ``responses``), the endpoints by variant, the model
capabilities, how think parameters map into the body, where reasoning arrives, what history must
echo back, the max-tokens parameter, whether ``stream_options.include_usage`` is sent, the usage
field mapping and the provider's finish reasons. No code branches on a provider's name: every
difference is data, read here and by ``history`` / ``reasoning``.

``Preset.check`` runs at release compile time and refuses a capability the preset lacks (never
silently ignored); ``Preset.build_body`` produces the provider request body. A ``models:`` entry
in the file overrides sections for model ids matching its glob patterns (``Preset.for_model``)
and may state the window and output limit the provider documents for those models
(``Preset.descriptor``). ``discovery:`` declares that the provider's ``GET /models`` listing
may state a model's window, and in which fields (``models.discovery``).

Owns: loading, validating and applying presets. Does not own: HTTP, SSE parsing, aggregation
(``models/adapters``), or where the release keeps the preset name (``config``).
"""

from __future__ import annotations

import copy
import fnmatch
import hashlib
import importlib.resources
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NoReturn, TypeAlias, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentloom.canonical import canonical_json
from agentloom.catalog.spec import freeze_json
from agentloom.errors import CatalogError, ConfigError, ErrorCategory
from agentloom.models.discovery import discover_descriptor
from agentloom.models.history import to_chat_messages, to_responses_input
from agentloom.models.ports import Connection
from agentloom.models.reasoning import extractor_for
from agentloom.models.types import (
    STRUCTURED_FORMATS,
    ModelDescriptor,
    ModelRequest,
    ThinkParams,
    ToolDef,
    Usage,
    named_schema,
)
from agentloom.models.usage import reported_usage
from agentloom.yamlfile import load_yaml

__all__ = [
    "CAPABILITIES",
    "FORMAT_VERSION",
    "Capability",
    "DiscoveryRules",
    "EffortMapping",
    "Endpoint",
    "ErrorRules",
    "HistoryRules",
    "Preset",
    "ReasoningRules",
    "RequestRules",
    "StreamRules",
    "ThinkMapping",
    "ThinkTags",
    "UsageMapping",
    "capabilities_for",
    "list_presets",
    "load_preset",
    "load_preset_file",
    "parse_preset",
]

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

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_PACKAGE = "agentloom.models.preset_data"
# Keys the body builder owns; preset constants may not set them.
_RESERVED = frozenset(
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
    """Where one variant lives and which environment variable holds its API key."""

    base_url: str = Field(pattern=r"^https?://")
    api_key_env: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$")


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
    for usage in a stream, and fixed body fields (plus those sent only with tools)."""

    max_tokens_param: str = Field(min_length=1)
    stream_usage: StreamUsageMode
    body: dict[str, Any] = Field(default_factory=dict)
    body_with_tools: dict[str, Any] = Field(default_factory=dict)


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


class _PresetFile(_Section):
    format: Literal[1]
    name: str = Field(pattern=_NAME.pattern)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """One validated provider preset (or its view for one model id, see ``for_model``).

    Sections are frozen pydantic values; treat their dicts as read-only (``build_body`` copies).
    ``digest`` is the SHA-256 of the file's canonical JSON, for the release's content digest.
    ``window`` / ``output_limit`` are what the provider documents for the models a ``models:``
    entry matches (``None``: not documented; always ``None`` on the preset itself).
    """

    name: str
    version: int
    title: str
    protocol: Protocol
    variants: Mapping[str, Endpoint]
    capabilities: frozenset[str]
    think: ThinkMapping
    reasoning: ReasoningRules
    history: HistoryRules
    request: RequestRules
    usage: UsageMapping
    stream: StreamRules
    errors: ErrorRules
    notes: Mapping[str, str]
    source: str
    digest: str
    matched: tuple[str, ...] = ()
    overrides: tuple[Preset, ...] = field(default=(), repr=False)
    discovery: DiscoveryRules | None = None
    window: int | None = None
    output_limit: int | None = None

    # -- selection --------------------------------------------------------------------------

    def for_model(self, model: str) -> Preset:
        """The preset as it applies to ``model``: the first ``models:`` entry whose glob
        pattern matches (case-insensitive), else this preset."""
        lowered = model.lower()
        for override in self.overrides:
            if any(fnmatch.fnmatchcase(lowered, p.lower()) for p in override.matched):
                return override
        return self

    def endpoint(self, variant: str = "default") -> Endpoint:
        """The base URL and API-key variable of ``variant`` (``default``, ``coding_plan``, …).

        Raises:
            ConfigError: the preset has no such variant (the message lists those it has).
        """
        try:
            return self.variants[variant]
        except KeyError:
            raise ConfigError(
                f"preset {self.name!r} has no variant {variant!r}; choose one of {sorted(self.variants)}",
                code="MODEL_PRESET_VARIANT",
            ) from None

    # -- what is known about a model ---------------------------------------------------------

    def descriptor(self, model: str) -> ModelDescriptor | None:
        """The window and output limit this preset documents for ``model`` (its ``models:``
        entry), labelled ``source="provider"``; ``None`` when it documents no window."""
        view = self.for_model(model)
        if view.window is None:
            return None
        return ModelDescriptor(
            provider_model_id=model, window=view.window, output_limit=view.output_limit,
            source="provider",
            output_limit_source="provider" if view.output_limit is not None else None,
            extras={"preset": self.name, "preset_version": self.version})

    def discover(self, connection: Connection) -> ModelDescriptor | None:
        """What the provider's model listing states about ``connection.model`` (one bounded
        ``GET {base_url}/models``), or ``None`` when this preset declares no discovery."""
        rules = self.for_model(connection.model).discovery
        if rules is None:
            return None
        return discover_descriptor(connection, window_fields=rules.window,
                                   output_fields=rules.output_limit)

    # -- compile-time check -----------------------------------------------------------------

    def supports(self, capability: str, *, model: str) -> bool:
        return capability in self.for_model(model).capabilities

    def check(self, capabilities: Iterable[str], *, model: str) -> None:
        """Refuse, at compile time, any requested capability ``model`` lacks on this preset.

        Raises:
            ConfigError: an unknown capability name, or one the preset does not support; the
                message names the capability, the preset and the model.
        """
        effective = self.for_model(model)
        for capability in sorted(set(capabilities)):
            if capability not in CAPABILITIES:
                raise ConfigError(
                    f"unknown model capability {capability!r}; known: {', '.join(CAPABILITIES)}",
                    code="MODEL_CAPABILITY_UNKNOWN",
                )
            if capability not in effective.capabilities:
                has = ", ".join(sorted(effective.capabilities)) or "none"
                raise ConfigError(
                    f"preset {self.name!r} (version {self.version}) does not support capability "
                    f"{capability!r} for model {model!r}; it supports: {has}",
                    code="MODEL_CAPABILITY_UNSUPPORTED",
                )

    # -- request body -----------------------------------------------------------------------

    def build_body(self, request: ModelRequest, *, model: str) -> dict[str, Any]:
        """The provider request body (Chat Completions or Responses) for ``request``.

        Raises:
            ConfigError: the request needs a capability the preset lacks, or its think
                parameters contradict each other.
        """
        preset = self.for_model(model)
        preset.check(capabilities_for(request), model=model)
        body: dict[str, Any] = {"model": model}
        if preset.protocol == "chat":
            body["messages"] = to_chat_messages(preset, request.messages)
        else:
            body["input"] = to_responses_input(preset, request.messages)
        body["stream"] = True
        if preset.request.stream_usage == "include_usage":
            body["stream_options"] = {"include_usage": True}
        _merge(body, preset.request.body)
        if request.tools:
            _merge(body, preset.request.body_with_tools)
            body["tools"] = [_tool(preset.protocol, t) for t in request.tools]
        _output_format(body, preset.protocol, request.output_format)
        if request.think is not None:
            _think(body, preset.think, request.think)
        if request.max_output_tokens is not None:
            if request.max_output_tokens < 1:
                raise ConfigError(f"max_output_tokens must be positive, not {request.max_output_tokens}")
            body[preset.request.max_tokens_param] = request.max_output_tokens
        return body

    # -- wiring into a connection -------------------------------------------------------------

    def connection_kwargs(self, model: str) -> dict[str, Any]:
        """Keyword arguments for ``models.ports.Connection`` that make it speak this preset for
        ``model``: protocol, body builder, per-Attempt reasoning extractor, usage / finish /
        status mappers, ``stream_options``, the structured output formats it can send
        (``output_formats``), the capability check (``capability_check``, ``Preset.check``
        for ``model``), the documented ``descriptor`` and the listing ``discovery`` (when the
        preset declares one). The caller adds ``base_url``, ``api_key`` (from
        ``endpoint(variant)``) and ``model``."""
        preset = self.for_model(model)
        kwargs: dict[str, Any] = {
            "name": preset.name,
            "protocol": preset.protocol,
            "body_builder": lambda request, connection: self.build_body(request, model=connection.model),
            "reasoning_factory": lambda: extractor_for(preset),
            "usage_mapper": preset.map_usage,
            "finish_mapper": preset.finish_reason,
            "status_category": preset.error_category,
            "stream_options": {"include_usage": True}
            if preset.request.stream_usage == "include_usage"
            else None,
            "output_formats": preset.capabilities & STRUCTURED_FORMATS,
            "capability_check": lambda capabilities: self.check(capabilities, model=model),
            "descriptor": self.descriptor(model),
            "discovery": self.discover if preset.discovery is not None else None,
        }
        if preset.request.max_tokens_param in ("max_tokens", "max_completion_tokens"):
            kwargs["max_tokens_param"] = preset.request.max_tokens_param
        return kwargs

    # -- response side ----------------------------------------------------------------------

    def map_usage(self, raw: Mapping[str, Any] | None) -> Usage:
        """The provider's usage object mapped onto ``Usage`` (missing fields stay ``None``)."""
        if not isinstance(raw, Mapping):
            return Usage()
        return reported_usage({name: _first_int(raw, getattr(self.usage, name))
                               for name in UsageMapping.model_fields})

    def finish_reason(self, raw: str | None) -> str | None:
        """A provider finish reason in the common vocabulary (unknown values pass through)."""
        if raw is None:
            return None
        return self.stream.finish_reasons.get(raw, raw)

    def error_category(self, status: int) -> ErrorCategory | None:
        """This provider's category for an HTTP status, or ``None`` for the adapter default."""
        return self.errors.status.get(status)


def capabilities_for(request: ModelRequest) -> frozenset[str]:
    """The capabilities a request needs: ``tools``, ``json_object`` / ``json_schema``,
    ``think_toggle`` (any explicit ``think.enabled``) and ``think_effort``."""
    needed: set[str] = set()
    if request.tools:
        needed.add("tools")
    if isinstance(request.output_format, Mapping):
        needed.add("json_schema")
    elif request.output_format == "json_object":
        needed.add("json_object")
    if request.think is not None:
        if request.think.enabled is not None:
            needed.add("think_toggle")
        if request.think.effort is not None:
            needed.add("think_effort")
    return frozenset(needed)


# -- body helpers ----------------------------------------------------------------------------


def _merge(target: dict[str, Any], fragment: Mapping[str, Any]) -> None:
    """Deep-merge a copy of ``fragment`` into ``target``; a ``None`` value deletes the key."""
    for key, value in fragment.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(dict(value) if isinstance(value, Mapping) else value)


def _tool(protocol: Protocol, tool: ToolDef) -> dict[str, Any]:
    spec = {"name": tool.name, "description": tool.description, "parameters": _plain(tool.parameters)}
    if protocol == "responses":
        return {"type": "function", **spec}
    return {"type": "function", "function": spec}


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _output_format(body: dict[str, Any], protocol: Protocol, fmt: Any) -> None:
    if isinstance(fmt, Mapping):
        spec = _plain(named_schema(fmt) or {"name": "output", "schema": fmt})
        if protocol == "responses":
            body["text"] = {"format": {"type": "json_schema", **spec}}
        else:
            body["response_format"] = {"type": "json_schema", "json_schema": spec}
    elif fmt == "json_object":
        if protocol == "responses":
            body["text"] = {"format": {"type": "json_object"}}
        else:
            body["response_format"] = {"type": "json_object"}


def _think(body: dict[str, Any], mapping: ThinkMapping, think: ThinkParams) -> None:
    if think.enabled is False and think.effort is not None:
        raise ConfigError(
            f"think.effort={think.effort!r} contradicts think.enabled=false; set one of them",
            code="MODEL_THINK_CONFLICT",
        )
    if think.enabled is True:
        _merge(body, mapping.enabled)
    elif think.enabled is False:
        _merge(body, mapping.disabled)
    if think.effort is not None and mapping.effort is not None:
        value: Any = mapping.effort.values[think.effort]
        for part in reversed(mapping.effort.param.split(".")):
            value = {part: value}
        _merge(body, value)


def _first_int(raw: Mapping[str, Any], paths: tuple[str, ...]) -> tuple[str, int | None]:
    """The first of ``paths`` holding an integer, and that integer (``reported_usage`` judges
    whether it is a count); ``(first path, None)`` when none does."""
    for path in paths:
        node: Any = raw
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, int) and not isinstance(node, bool):
            return path, node
    return (paths[0] if paths else ""), None


# -- loading ---------------------------------------------------------------------------------


def list_presets() -> tuple[str, ...]:
    """Names of the presets shipped in ``models/preset_data``, sorted."""
    root = importlib.resources.files(_PACKAGE)
    return tuple(sorted(p.name[: -len(".yaml")] for p in root.iterdir() if p.name.endswith(".yaml")))


@cache
def load_preset(name: str) -> Preset:
    """The shipped preset ``name``.

    Raises:
        ConfigError: no such preset (the message lists the known ones), or its file is broken.
    """
    if not _NAME.match(name) or name not in list_presets():
        raise ConfigError(
            f"unknown model preset {name!r}; known presets: {', '.join(list_presets())}",
            code="MODEL_PRESET_UNKNOWN",
        )
    resource = importlib.resources.files(_PACKAGE) / f"{name}.yaml"
    return _parse_text(resource.read_text(encoding="utf-8"), source=f"preset_data/{name}.yaml", stem=name)


def load_preset_file(path: str | Path) -> Preset:
    """A preset from any YAML file (its ``name`` must equal the file's stem).

    Raises:
        ConfigError: the file is unreadable, not YAML, or fails validation (file and key named).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"preset file {str(p)!r}: cannot be read ({exc.strerror})") from None
    return _parse_text(text, source=str(p), stem=p.stem.removesuffix(".yaml"))


def _parse_text(text: str, *, source: str, stem: str | None) -> Preset:
    try:
        data = load_yaml(text)  # refuses a key written twice
    except yaml.YAMLError as exc:
        raise ConfigError(f"preset file {source!r}: not valid YAML: {exc}") from None
    return parse_preset(data, source=source, stem=stem)


def parse_preset(data: Any, *, source: str, stem: str | None = None) -> Preset:
    """Validate parsed preset data into a ``Preset`` (its model overrides included).

    Raises:
        ConfigError: the data is invalid; the message names ``source`` and the offending key.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"preset file {source!r}: must be a mapping, not {type(data).__name__}")
    try:
        digest = hashlib.sha256(
            canonical_json(data).encode()
        ).hexdigest()
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"preset file {source!r}: holds a value that is not plain JSON ({exc})") from None
    parsed = _validate(data, source=source, prefix="")
    if stem is not None and parsed.name != stem:
        _fail(source, "name", f"is {parsed.name!r} but the file is named {stem!r}")
    base_raw = {k: v for k, v in data.items() if k != "models"}
    overrides = []
    for i, override in enumerate(parsed.models):
        raw = copy.deepcopy(base_raw)
        caps = [c for c in parsed.capabilities if c not in override.capabilities.remove]
        raw["capabilities"] = caps + [c for c in override.capabilities.add if c not in caps]
        for section in ("think", "reasoning", "history", "request", "usage", "stream"):
            fragment = getattr(override, section)
            if fragment is not None:
                target = raw.setdefault(section, {})
                if not isinstance(target, dict):
                    _fail(source, section, "must be a mapping")
                _merge(target, fragment)
        if override.notes:
            raw["notes"] = {**dict(raw.get("notes") or {}), "model": override.notes}
        view = _validate(raw, source=source, prefix=f"models[{i}].")
        if (override.window is not None and override.output_limit is not None
                and override.output_limit >= override.window):
            _fail(source, f"models[{i}].output_limit", f"must be less than window ({override.window})")
        overrides.append(replace(_build(view, source=source, digest=digest, matched=override.match),
                                 window=override.window, output_limit=override.output_limit))
    return replace(_build(parsed, source=source, digest=digest), overrides=tuple(overrides))


def _validate(data: Mapping[str, Any], *, source: str, prefix: str) -> _PresetFile:
    try:
        parsed = _PresetFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        _fail(source, prefix + _loc(first["loc"]), first["msg"])
    for problem in _semantic_problems(parsed):
        _fail(source, prefix + problem[0], problem[1])
    return parsed


def _semantic_problems(p: _PresetFile) -> list[tuple[str, str]]:
    caps = set(p.capabilities)
    problems: list[tuple[str, str]] = []
    if "default" not in p.variants:
        problems.append(("variants", "must include a 'default' variant"))
    if "think_effort" in caps and p.think.effort is None:
        problems.append(("think.effort", "is required when capabilities include think_effort"))
    if "think_toggle" in caps and not (p.think.enabled and p.think.disabled):
        problems.append(("think", "needs both 'enabled' and 'disabled' fragments for think_toggle"))
    if ("stream_usage" in caps) == (p.request.stream_usage == "none"):
        problems.append(
            ("request.stream_usage", "must be 'none' exactly when stream_usage is not a capability")
        )
    if p.history.reasoning_echo != "never" and not p.history.reasoning_as:
        problems.append(("history.reasoning_as", "must name at least one form when reasoning is echoed"))
    responses_form = "responses_items" in p.history.reasoning_as
    if responses_form != (p.protocol == "responses") and p.history.reasoning_as:
        problems.append(
            ("history.reasoning_as", "responses_items is the form for, and only for, protocol responses")
        )
    if p.protocol == "responses" and p.reasoning.channels:
        problems.append(("reasoning.channels", "must be empty for protocol responses (typed events)"))
    reserved = _RESERVED | {p.request.max_tokens_param}
    fragments = {
        "request.body": p.request.body,
        "request.body_with_tools": p.request.body_with_tools,
        "think.enabled": p.think.enabled,
        "think.disabled": p.think.disabled,
    }
    for where, fragment in fragments.items():
        clash = sorted(reserved & set(fragment))
        if clash:
            problems.append((where, f"may not set {clash}: the body builder owns them"))
    return problems


def _build(p: _PresetFile, *, source: str, digest: str, matched: tuple[str, ...] = ()) -> Preset:
    return Preset(
        name=p.name,
        version=p.version,
        title=p.title,
        protocol=p.protocol,
        variants=MappingProxyType(dict(p.variants)),
        capabilities=frozenset(p.capabilities),
        think=p.think,
        reasoning=p.reasoning,
        history=p.history,
        request=p.request,
        usage=p.usage,
        stream=p.stream,
        errors=p.errors,
        notes=MappingProxyType(dict(p.notes)),
        discovery=p.discovery,
        source=source,
        digest=digest,
        matched=matched,
    )


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _fail(source: str, key: str, message: str) -> NoReturn:
    raise ConfigError(f"preset file {source!r}: key {key!r}: {message}", code="MODEL_PRESET_INVALID")
