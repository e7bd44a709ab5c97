"""ModelManager: the one owner of ``event_type="model"`` requests on the bus (000 §1), and the
raw handler of one model connection.

Like ``tools.ToolManager`` for tools, the manager maps a catalog spec's ``handler_ref``
(``model:<name>``) to the ``ModelHandler`` of that connection. It consumes only final,
hook-processed model requests (the pipeline hands the handler the frozen payload); it never
executes a tool a model asked for and never forwards token deltas. The low-frequency
``model.*`` observations are emitted by ``ModelGateway``, once per call.

A model connection's catalog entry (``model_capability``): key ``model.<name>``, model name
``model_<name>``, kind ``builtin``, handler ``model:<name>``, input schema
``MODEL_PAYLOAD_SCHEMA`` — the payload before-hooks may patch, closed at the top.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentloom.catalog import CapabilitySpec
from agentloom.errors import AgentLoomError, ConfigError, OperationError, RegistrationError
from agentloom.models.gateway import (
    EFFORTS,
    MODEL_REQUEST_INVALID,
    ROLES,
    message_to_dict,
    model_key,
    model_name,
    payload_to_request,
    request_to_payload,
    response_to_dict,
    tool_to_dict,
)
from agentloom.models.ports import DEFAULT_FINISH_GRACE_S, AttemptInfo, Connection, ModelAdapter
from agentloom.models.types import ModelRequest
from agentloom.pipeline.ports import AttemptContext, CapabilityHandler, CapabilityRequest
from agentloom.results import JsonBlock, ResultStatus, ToolResult

if TYPE_CHECKING:
    from agentloom.models.aggregate import IncompleteAttempt
    from agentloom.models.errors import ModelAttemptError

# The streaming stack (aggregate, errors, adapters) pulls in the ``openai`` SDK; it is imported
# on the first model call, so ``import agentloom`` stays light for runs without one.

__all__ = ["MODEL_PAYLOAD_SCHEMA", "ModelHandler", "ModelManager", "model_capability"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,58}$")


# -- the catalog entry ---------------------------------------------------------------------------


def _open_object() -> dict[str, Any]:
    return {"type": "object", "additionalProperties": True}


def _nullable(kind: str) -> dict[str, Any]:
    return {"type": [kind, "null"]}


_TOOL_CALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "arguments": {"type": "string"},
        "index": {"type": "integer", "minimum": 0},
    },
    "required": ["id", "name", "arguments"],
    "additionalProperties": False,
}

#: The payload of a model request (``request_to_payload``): what before-hooks may patch.
#: Open only where the content is the provider's or the tool's own JSON.
MODEL_PAYLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "messages": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "role": {"enum": list(ROLES)},
                    "content": _nullable("string"),
                    "tool_calls": {"type": "array", "items": _TOOL_CALL_SCHEMA},
                    "tool_call_id": _nullable("string"),
                    "name": _nullable("string"),
                    "reasoning": _nullable("string"),
                    "reasoning_details": {"type": ["array", "null"], "items": _open_object()},
                },
                "required": ["role"],
                "additionalProperties": False,
            },
        },
        "tools": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "description": {"type": "string"},
                    "parameters": _open_object(),
                },
                "required": ["name", "description", "parameters"],
                "additionalProperties": False,
            },
        },
        "output_format": {"anyOf": [{"enum": ["text", "json_object"]}, _open_object()]},
        "think": {
            "type": ["object", "null"],
            "properties": {
                "enabled": _nullable("boolean"),
                "effort": {"enum": [*EFFORTS, None]},
            },
            "additionalProperties": False,
        },
        "max_output_tokens": {"type": ["integer", "null"], "minimum": 1},
    },
    "required": ["messages"],
    "additionalProperties": False,
}


def model_capability(
    name: str, *, resource_version_id: str | None = None, description: str | None = None
) -> CapabilitySpec:
    """The catalog entry of model connection ``name``: key ``model.<name>``, model name
    ``model_<name>``, kind ``builtin``, handler ``model:<name>``, the payload schema.

    Raises:
        ConfigError: ``name`` is not 1–58 characters of ``[A-Za-z0-9_-]``.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"model connection name {name!r} must be 1-58 characters of letters, digits, '_' or '-'",
            code="MODEL_NAME_INVALID",
        )
    return CapabilitySpec(
        resource_version_id=resource_version_id or f"model:{name}",
        capability_key=model_key(name),
        kind="builtin",
        model_name=model_name(name),
        description=description or f"model connection {name!r}",
        input_schema=MODEL_PAYLOAD_SCHEMA,
        handler_ref=f"model:{name}",
        schema_origin="config",
    )


# -- the handler of one connection ---------------------------------------------------------------


class ModelHandler:
    """The raw capability of one model connection: ``invoke_once`` is exactly one Attempt.

    ``source`` is a ``Connection`` (an OpenAI protocol adapter is built from it, one per event
    loop, and closed by ``aclose``) or any ``ModelAdapter`` — e.g. the offline ``TestModel`` /
    ``ScriptModel`` — which the caller keeps owning.
    """

    #: A generation has no external side effect: an Attempt lost in a crash is issued again
    #: (000 §4), and its intent is committed with its result when no before-hook runs.
    rerunnable = True

    def __init__(
        self,
        name: str,
        source: ModelAdapter | Connection,
        *,
        first_output_timeout_s: float = 60.0,
        stream_idle_timeout_s: float | None = None,
        finish_grace_s: float = DEFAULT_FINISH_GRACE_S,
        payloads: PayloadCache | None = None,
    ) -> None:
        try:  # validated once here, not on every Attempt
            AttemptInfo(first_output_timeout_s=first_output_timeout_s,
                        stream_idle_timeout_s=stream_idle_timeout_s, finish_grace_s=finish_grace_s)
        except ValueError as exc:
            raise ConfigError(f"model connection {name!r}: {exc}", code="MODEL_TIMEOUT_INVALID") from None
        self.name = name
        self.first_output_timeout_s = first_output_timeout_s
        self.stream_idle_timeout_s = stream_idle_timeout_s
        self.finish_grace_s = finish_grace_s
        self._connection = source if isinstance(source, Connection) else None
        self._given: ModelAdapter | None = None if isinstance(source, Connection) else source
        self._built: ModelAdapter | None = None
        self._built_on: asyncio.AbstractEventLoop | None = None
        self._payloads = payloads

    def describe(self) -> str:
        if self._connection is not None:
            return (f"model connection {self.name!r}: {self._connection.name or 'openai'} "
                    f"{self._connection.protocol} model {self._connection.model!r}")
        model = getattr(self._given, "model", None)
        return f"model connection {self.name!r}: {type(self._given).__name__} model {model!r}"

    def adapter(self) -> ModelAdapter:
        """The adapter for the running event loop."""
        if self._given is not None:
            return self._given
        assert self._connection is not None
        loop = asyncio.get_running_loop()
        if self._built is None or self._built_on is not loop:
            from agentloom.models.adapters import adapter_for

            self._built, self._built_on = adapter_for(self._connection), loop
        return self._built

    async def aclose(self) -> None:
        """Close the adapter this handler built (a given adapter stays the caller's)."""
        built, self._built, self._built_on = self._built, None, None
        if built is not None:
            await built.aclose()

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        from agentloom.models.aggregate import Aggregator, complete_once
        from agentloom.models.errors import ModelAttemptError

        try:
            recalled = self._payloads.recall(request.arguments) if self._payloads else None
            model_request = recalled or payload_to_request(request.arguments)
        except ValueError as exc:
            return ToolResult(status="failed", error=OperationError(
                code=MODEL_REQUEST_INVALID, category="validation", phase="validate",
                message=f"the model request payload is invalid: {exc}", external_outcome="not_started"))
        attempt = AttemptInfo.from_context(
            context, first_output_timeout_s=self.first_output_timeout_s,
            stream_idle_timeout_s=self.stream_idle_timeout_s, finish_grace_s=self.finish_grace_s)
        aggregator = Aggregator()  # one per Attempt: material is never spliced across Attempts
        try:
            response = await complete_once(self.adapter(), model_request, attempt, aggregator=aggregator)
        except ModelAttemptError as exc:
            return _failed(exc, exc.incomplete or aggregator.incomplete(exc.error.code))
        return ToolResult.success(JsonBlock(response_to_dict(response)))


def _failed(exc: ModelAttemptError, incomplete: IncompleteAttempt) -> ToolResult:
    """The raw result of a failed Attempt; its partial material is evidence, never a response."""
    error = _own_error(exc) or exc.error
    if error is not exc.error:
        incomplete = dataclasses.replace(incomplete, reason=error.code)
    # The adapter reported this Attempt as failed; only a failure nobody could classify,
    # after the request may have been sent, leaves the call's outcome unknown.
    unclassified = error.category == "unknown" and error.external_outcome == "unknown"
    status: ResultStatus = "unknown" if unclassified else "failed"
    return ToolResult(status=status, error=error, metadata={"incomplete": incomplete.to_dict()})


def _own_error(exc: ModelAttemptError) -> OperationError | None:
    """The error an adapter raised itself (e.g. ``ScriptError``, a preset's ``ConfigError``
    from ``build_body``), which the stream clock had reclassified as an adapter failure."""
    from agentloom.models.errors import MODEL_ADAPTER_FAILED, ModelAttemptError

    if exc.error.code != MODEL_ADAPTER_FAILED:
        return None
    seen: BaseException | None = exc
    for _ in range(6):  # complete_once → drive → the adapter's own exception
        seen = (seen.__cause__ or seen.__context__) if seen is not None else None
        if isinstance(seen, AgentLoomError) and not isinstance(seen, ModelAttemptError):
            return seen.error
    return None


# -- the payload cache ---------------------------------------------------------------------------


class PayloadCache:
    """Builds a request's payload from parts it has seen before (000 §4: an agent's history
    grows by a few messages a turn; its earlier messages are the same objects every turn).

    Each ``Message`` / ``ToolDef`` object is turned into its JSON form once and checked once
    against *its item* of ``MODEL_PAYLOAD_SCHEMA``; the rest of the payload is checked with the
    whole schema on a one-message, no-tool copy. A payload whose every part passed is exactly
    one the whole schema accepts (array items are checked independently), so the pipeline need
    not walk the history again; any part that failed leaves the payload to the pipeline's full
    check, with its usual error. ``sent`` lets the handler take the typed request back instead
    of parsing the payload, when the payload it is handed is still the one built here.
    """

    LIMIT = 50_000

    def __init__(self) -> None:
        from agentloom.catalog import ArgumentValidator

        props = MODEL_PAYLOAD_SCHEMA["properties"]
        self._message_ok = ArgumentValidator(props["messages"]["items"]).is_valid
        self._tool_ok = ArgumentValidator(props["tools"]["items"]).is_valid
        self._rest_ok = ArgumentValidator(MODEL_PAYLOAD_SCHEMA).is_valid
        self._parts: dict[int, tuple[object, dict[str, Any], bool]] = {}
        self.sent: dict[int, tuple[dict[str, Any], ModelRequest]] = {}

    def _part(self, obj: object, build: Callable[[Any], dict[str, Any]],
              ok: Callable[[Any], bool]) -> tuple[dict[str, Any], bool]:
        found = self._parts.get(id(obj))
        if found is None or found[0] is not obj:
            if len(self._parts) >= self.LIMIT:
                for key in list(self._parts)[: self.LIMIT // 2]:
                    del self._parts[key]
            value = build(obj)
            found = self._parts[id(obj)] = (obj, value, ok(value))
        return found[1], found[2]

    def payload(self, request: ModelRequest) -> tuple[dict[str, Any], bool]:
        """``request_to_payload(request)`` and whether it is known to match the schema."""
        checked = True
        messages = []
        for m in request.messages:
            value, ok = self._part(m, message_to_dict, self._message_ok)
            messages.append(value)
            checked = checked and ok
        tools = []
        for t in request.tools:
            value, ok = self._part(t, tool_to_dict, self._tool_ok)
            tools.append(value)
            checked = checked and ok
        payload = request_to_payload(request, messages=messages, tools=tools)
        if checked:
            checked = bool(messages) and self._rest_ok({**payload, "messages": messages[:1],
                                                        "tools": []})
        return payload, checked

    def recall(self, arguments: Mapping[str, Any]) -> ModelRequest | None:
        """The typed request ``arguments`` were built from, when they are still exactly that."""
        messages = arguments.get("messages")
        found = self.sent.get(id(messages))
        if found is None:
            return None
        payload, request = found
        if payload["messages"] is not messages or payload["tools"] is not arguments.get("tools") \
                or any(payload[k] != arguments.get(k) for k in payload
                       if k not in ("messages", "tools")) or len(arguments) != len(payload):
            return None
        return request


# -- the owner ----------------------------------------------------------------------------------


class ModelManager:
    """The one owner of ``event_type="model"`` requests on the bus: maps a catalog spec's
    ``handler_ref`` (``model:<name>``) to that connection's handler.

    Owns: the model handlers and specs, and the payload cache. Does not own: retries, streaming
    clocks or ``model.*`` observations (``ModelGateway``), nor the tools a model asks for."""

    def __init__(self) -> None:
        self._handlers: dict[str, CapabilityHandler] = {}
        self._specs: dict[str, CapabilitySpec] = {}
        self.payloads = PayloadCache()

    def register(self, handler_ref: str, handler: CapabilityHandler) -> None:
        """Register the raw handler behind ``handler_ref`` (one handler per reference)."""
        if handler_ref in self._handlers:
            raise RegistrationError(f"a model handler is already registered as {handler_ref!r}")
        self._handlers[handler_ref] = handler

    def handler_for(self, spec: CapabilitySpec) -> CapabilityHandler | None:
        return self._handlers.get(spec.handler_ref)

    def add(
        self,
        name: str,
        source: ModelAdapter | Connection,
        *,
        first_output_timeout_s: float = 60.0,
        stream_idle_timeout_s: float | None = None,
        finish_grace_s: float = DEFAULT_FINISH_GRACE_S,
    ) -> CapabilitySpec:
        """Add model connection ``name`` (a ``Connection`` or an adapter, e.g. ``TestModel``)
        and return its catalog spec (``model.<name>``).

        Raises:
            ConfigError: an illegal name or timeout.
            RegistrationError: a connection of that name was already added.
        """
        handler = ModelHandler(
            name, source, first_output_timeout_s=first_output_timeout_s,
            stream_idle_timeout_s=stream_idle_timeout_s, finish_grace_s=finish_grace_s,
            payloads=self.payloads)
        spec = model_capability(name, description=handler.describe())
        self.register(spec.handler_ref, handler)
        self._specs[spec.capability_key] = spec
        return spec

    def specs(self) -> tuple[CapabilitySpec, ...]:
        """The catalog specs of every added connection, in the order they were added."""
        return tuple(self._specs.values())

    async def aclose(self) -> None:
        """Close every provider connection a handler opened."""
        for handler in self._handlers.values():
            if isinstance(handler, ModelHandler):
                await handler.aclose()
