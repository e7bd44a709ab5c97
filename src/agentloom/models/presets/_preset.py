"""``Preset``: one validated provider preset, and what it does with a request and a response.

It selects the view for a model id (``for_model``), states what it knows about a model
(``descriptor``, ``discover``), refuses a capability it lacks (``check``), builds the provider
request body (``build_body``), wires itself into a ``Connection`` (``connection_kwargs``) and
maps usage, finish reasons and HTTP statuses back.

Owns: the ``Preset`` value and its methods. Does not own: reading and validating preset files
(``_loading``), the file's shape (``_sections``), the body helpers (``_body``), history and
reasoning rules (``models.history``, ``models.reasoning``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentloom.errors import ConfigError, ErrorCategory
from agentloom.models.discovery import discover_descriptor
from agentloom.models.history import to_chat_messages, to_responses_input
from agentloom.models.ports import Connection
from agentloom.models.presets._body import (
    apply_think,
    capabilities_for,
    first_int,
    merge,
    set_output_format,
    tool_entry,
)
from agentloom.models.presets._sections import (
    CAPABILITIES,
    DiscoveryRules,
    Endpoint,
    ErrorRules,
    HistoryRules,
    Protocol,
    ReasoningRules,
    RequestRules,
    StreamRules,
    ThinkMapping,
    UsageMapping,
)
from agentloom.models.reasoning import extractor_for
from agentloom.models.types import STRUCTURED_FORMATS, ModelDescriptor, ModelRequest, Usage
from agentloom.models.usage import reported_usage

__all__ = ["Preset"]


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
        merge(body, preset.request.body)
        if request.tools:
            merge(body, preset.request.body_with_tools)
            body["tools"] = [tool_entry(preset.protocol, t) for t in request.tools]
        set_output_format(body, preset.protocol, request.output_format)
        if request.think is not None:
            apply_think(body, preset.think, request.think)
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
        return reported_usage({name: first_int(raw, getattr(self.usage, name))
                               for name in UsageMapping.model_fields})

    def finish_reason(self, raw: str | None) -> str | None:
        """A provider finish reason in the common vocabulary (unknown values pass through)."""
        if raw is None:
            return None
        return self.stream.finish_reasons.get(raw, raw)

    def error_category(self, status: int) -> ErrorCategory | None:
        """This provider's category for an HTTP status, or ``None`` for the adapter default."""
        return self.errors.status.get(status)
