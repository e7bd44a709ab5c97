"""The model adapter port (000 §4): one physical Attempt as a stream of provider events.

``ModelAdapter`` is what every protocol adapter implements (``adapters/openai_chat.py``,
``adapters/openai_responses.py``, a preset's own). ``Connection`` is the frozen, resolved
connection an adapter is built with: where to send, which protocol, and the two hooks a
preset supplies — ``body_builder`` (request → wire body) and ``reasoning`` (Chat delta →
text / reasoning pieces). ``AttemptInfo`` is what one Attempt is bounded by.

This module owns no I/O. Timing lives in ``timers.py``, aggregation and validation in
``aggregate.py``, error classification in ``errors.py``.

Times: ``AttemptInfo.deadline`` is a wall-clock epoch (``time.time()`` scale), as in the
pipeline's ``AttemptContext``; durations are seconds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Protocol, TypeAlias

from agentloom.attempts import AttemptContext
from agentloom.cancel import CancelToken
from agentloom.errors import ErrorCategory
from agentloom.models.types import (
    STRUCTURED_FORMATS,
    ModelDescriptor,
    ModelRequest,
    ProviderEvent,
    StructuredFormat,
    Usage,
)

WireProtocol: TypeAlias = Literal["chat", "responses"]
MaxTokensParam: TypeAlias = Literal["max_tokens", "max_completion_tokens"]

#: ``(text piece, reasoning piece, reasoning_details or None)`` taken from one Chat delta.
ReasoningPiece: TypeAlias = tuple[str, str, tuple[Mapping[str, Any], ...] | None]

#: Maps one Chat ``delta`` (``content`` plus every non-standard field exactly as received,
#: e.g. ``reasoning_content``, ``reasoning_details``) to a :data:`ReasoningPiece`.
#: It is called only for deltas that carry ``content`` or a non-standard field. When the
#: terminal frame (``finish_reason``) arrives, a stateful extractor (see
#: ``Connection.reasoning_factory``) that has a ``flush()`` method returning a
#: ``ReasoningPiece`` gets it called once, to release text it held back (e.g. a possible
#: partial ``<think>`` tag); an extractor without ``flush`` is called with an empty mapping.
ReasoningExtractor: TypeAlias = Callable[[Mapping[str, Any]], ReasoningPiece]

#: Builds the JSON request body for one Attempt (``stream`` included). Presets wrap the
#: protocol defaults ``build_chat_body`` / ``build_responses_body``.
BodyBuilder: TypeAlias = Callable[[ModelRequest, "Connection"], dict[str, Any]]

DEFAULT_FIRST_OUTPUT_TIMEOUT_S = 60.0
DEFAULT_FINISH_GRACE_S = 5.0


def read_reasoning_content(delta: Mapping[str, Any]) -> ReasoningPiece:
    """The default extractor: text from ``content``, reasoning from ``reasoning_content``."""
    text = delta.get("content")
    reasoning = delta.get("reasoning_content")
    return (
        text if isinstance(text, str) else "",
        reasoning if isinstance(reasoning, str) else "",
        None,
    )


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True, slots=True, kw_only=True)
class Connection:
    """A resolved model connection: endpoint, credentials, protocol and provider hooks.

    ``extra_body`` is merged (shallow, last) into every request body; ``stream_options``
    is sent as-is on Chat requests (``None``: not sent — some providers reject it);
    ``max_tokens_param`` names the Chat output-limit field. ``reasoning`` reads each Chat
    delta; ``reasoning_factory``, when set, makes a fresh (stateful) extractor per
    Attempt instead, e.g. ``<think>`` splitting across chunk boundaries. ``body_builder``
    ``None`` means the adapter's protocol default. The response-side hooks a preset may
    set: ``usage_mapper`` (the provider's raw usage object → ``Usage``; default: the
    OpenAI fields), ``finish_mapper`` (a raw finish reason → the common vocabulary
    ``stop | length | tool_calls | content_filter | error``; ``error`` fails the Attempt)
    and ``status_category`` (an HTTP status → an error category overriding the default
    table in ``models.errors``, ``None`` to keep it). ``output_formats`` are the structured
    output formats requests may ask for (a preset's ``json_schema`` / ``json_object``
    capabilities; the protocol defaults send both). ``connect_timeout_s`` bounds the
    connect only (reads are bounded by the Attempt's clocks); ``name`` labels the provider
    in error messages. ``config_name`` (the config's name for this connection) and
    ``api_key_env`` (the variable the key was read from) let a failure point back to the
    config: a refused connection names both and the base URL, a 401 / 403 the variable.
    ``capability_check`` (set by a preset, ``None`` otherwise) raises ``ConfigError``
    ``MODEL_CAPABILITY_UNSUPPORTED`` for capabilities this model cannot serve (``tools``,
    ``json_schema`` / ``json_object``, ``think_toggle``, ``think_effort``): the runtime calls it
    when it is built, before any run (000 §4.6). ``descriptor`` (set by a preset that
    documents this model's window) and ``discovery`` (set by a preset that declares a model
    listing: it reads ``GET {base_url}/models`` once, ``models.discovery``) are how the window
    W of an agent on this connection is resolved when the agent is built
    (``models.budget.build_descriptor``). The API key never appears in ``repr``.
    """

    base_url: str
    api_key: str = field(repr=False)
    model: str
    protocol: WireProtocol = "chat"
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    extra_headers: Mapping[str, str] = field(default_factory=dict)
    stream_options: Mapping[str, Any] | None = field(
        default_factory=lambda: MappingProxyType({"include_usage": True})
    )
    max_tokens_param: MaxTokensParam = "max_tokens"
    reasoning: ReasoningExtractor = read_reasoning_content
    reasoning_factory: Callable[[], ReasoningExtractor] | None = None
    body_builder: BodyBuilder | None = None
    usage_mapper: Callable[[Mapping[str, Any]], Usage] | None = None
    finish_mapper: Callable[[str | None], str | None] | None = None
    status_category: Callable[[int], ErrorCategory | None] | None = None
    output_formats: frozenset[StructuredFormat] = STRUCTURED_FORMATS
    connect_timeout_s: float = 10.0
    name: str | None = None
    config_name: str | None = None
    api_key_env: str | None = None
    capability_check: Callable[[Iterable[str]], None] | None = field(
        default=None, repr=False, compare=False)
    descriptor: ModelDescriptor | None = field(default=None, repr=False, compare=False)
    discovery: Callable[[Connection], ModelDescriptor] | None = field(
        default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.protocol not in ("chat", "responses"):
            raise ValueError(f"connection protocol must be 'chat' or 'responses', not {self.protocol!r}")
        if self.max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ValueError(f"unknown max_tokens_param {self.max_tokens_param!r}")
        unknown = set(self.output_formats) - STRUCTURED_FORMATS
        if unknown:
            raise ValueError(f"unknown output formats {sorted(unknown)}; known: "
                             f"{sorted(STRUCTURED_FORMATS)}")
        object.__setattr__(self, "output_formats", frozenset(self.output_formats))
        object.__setattr__(self, "extra_body", _frozen(self.extra_body))
        object.__setattr__(self, "extra_headers", _frozen(self.extra_headers))
        if self.stream_options is not None:
            object.__setattr__(self, "stream_options", _frozen(self.stream_options))

    def __hash__(self) -> int:
        return hash((self.base_url, self.model, self.protocol, self.name, self.api_key))

    def extractor(self) -> ReasoningExtractor:
        """The reasoning extractor for one new Attempt."""
        return self.reasoning_factory() if self.reasoning_factory is not None else self.reasoning


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptInfo:
    """What bounds one physical Attempt.

    ``deadline`` is the run deadline (epoch seconds, ``None``: none) and always applies.
    ``first_output_timeout_s`` counts from the start of the Attempt until the first
    meaningful event (``types.is_meaningful``) or a complete terminal frame.
    ``stream_idle_timeout_s`` (``None``: off) bounds the gap between any two provider
    events (heartbeat frames included; the wait for the first event is the first-output
    clock's). ``finish_grace_s`` bounds the wait for trailing frames (usage, ``[DONE]``)
    after a terminal frame; when it runs out the response is complete as received.
    ``cancel`` is the run's stop signal.
    """

    attempt_no: int = 1
    deadline: float | None = None
    cancel: CancelToken | None = None
    first_output_timeout_s: float = DEFAULT_FIRST_OUTPUT_TIMEOUT_S
    stream_idle_timeout_s: float | None = None
    finish_grace_s: float = DEFAULT_FINISH_GRACE_S
    operation_id: str | None = None

    @classmethod
    def from_context(
        cls,
        context: AttemptContext,
        *,
        first_output_timeout_s: float = DEFAULT_FIRST_OUTPUT_TIMEOUT_S,
        stream_idle_timeout_s: float | None = None,
        finish_grace_s: float = DEFAULT_FINISH_GRACE_S,
    ) -> AttemptInfo:
        """The bounds of a model Attempt run by the pipeline (``invoke_once``'s context)."""
        return cls(
            attempt_no=context.attempt_no, deadline=context.deadline, cancel=context.cancel,
            first_output_timeout_s=first_output_timeout_s, stream_idle_timeout_s=stream_idle_timeout_s,
            finish_grace_s=finish_grace_s, operation_id=context.operation_id,
        )

    def __post_init__(self) -> None:
        if self.first_output_timeout_s <= 0:
            raise ValueError("first_output_timeout_s must be positive")
        if self.stream_idle_timeout_s is not None and self.stream_idle_timeout_s <= 0:
            raise ValueError("stream_idle_timeout_s must be positive or None")
        if self.finish_grace_s < 0:
            raise ValueError("finish_grace_s cannot be negative")


DeltaKind: TypeAlias = Literal["text", "reasoning"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputPiece:
    """A piece of a model's text or reasoning as it arrived from the provider: an observation
    for a person watching (``--stream``, ``model.delta``), never a record, never a response.

    ``attempt`` numbers the physical Attempt within the call (a retried call's text starts
    over at the next Attempt); ``operation_id`` is the call's operation; ``role``,
    ``capability`` and ``purpose`` are the call's as the gateway sent it."""

    kind: DeltaKind
    text: str
    role: str | None = None
    capability: str | None = None
    purpose: str | None = None
    operation_id: str | None = None
    attempt: int = 1


#: Told each ``OutputPiece`` of the model calls made where it watches
#: (``gateway.watch_deltas``). It must not block: it runs inside the call's stream; what it
#: raises is logged once and it is told nothing more of that Attempt.
DeltaObserver: TypeAlias = Callable[[OutputPiece], None]


class ModelAdapter(Protocol):
    """One model adapter: a protocol adapter bound to one ``Connection`` (which it exposes as
    ``connection``), or an offline model, which has none — so ``connection`` is not part of
    this port.

    ``stream_once`` sends exactly one request (no SDK retries) and yields the provider's
    events as they arrive; it raises ``models.errors.ModelAttemptError`` for anything
    that is not a complete stream. It never aggregates, validates or retries.
    """

    def stream_once(self, request: ModelRequest, attempt: AttemptInfo) -> AsyncIterator[ProviderEvent]: ...

    async def discover(self, connection: Connection | None = None) -> list[ModelDescriptor]: ...

    async def aclose(self) -> None: ...
