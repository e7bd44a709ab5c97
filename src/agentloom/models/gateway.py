"""The model gateway: one model call = one request on the bus, through the pipeline (000 §3, §4).

::

    ModelGateway.generate(request, context, model="main", purpose=…)
        │  payload = request_to_payload(request)             (the hook-patchable JSON)
        ▼
    bus.request("model_<name>", payload, event_type="model", purpose=…)
        │  intent → before-hooks (event: model) → frozen payload
        ▼
    ModelHandler.invoke_once (models/manager.py) — ONE Attempt: stream → clocks → Aggregator
        │  success: ToolResult(JsonBlock(response_to_dict(response)))
        │  failure: ToolResult(failed, e.error, metadata["incomplete"]); the pipeline retries
        ▼           transport / rate_limit with a *new* Attempt and a fresh Aggregator
    after-hooks → effective result saved → envelope
        ▼
    response_from_dict + check_response  →  ModelResponse      (else ``ModelCallFailed``)
        ▼  each call that cannot run (not offered, arguments not an object) gets its
           ``problem`` (``models.calls.mark_calls``): the response is still delivered

Owns: the payload / response wire forms, the caller-facing ``generate`` and the ``model.*``
observations (one ``model.started`` and one ``model.completed`` / ``model.failed`` per call,
never per token; they carry ids, outcome, finish reason and usage — never text). Does not
own: adapters and presets, retries, hooks and persistence (the pipeline), the handlers and
the ownership of ``event_type="model"`` (``models/manager.py``).

Model calls are sent with the caller's ``context_scope`` cleared: the pipeline records a
call's payload and result as ``tool_call`` / ``tool_result`` context records, which for a
model call would copy the whole history into the context on every turn. The operation, its
Attempts, the raw and the effective response are stored as for any other call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from agentloom.catalog import CapabilitySpec
from agentloom.errors import AgentLoomError, OperationError
from agentloom.models.calls import mark_calls
from agentloom.models.types import (
    Message,
    ModelRequest,
    ModelResponse,
    ThinkParams,
    ToolCall,
    ToolDef,
    Usage,
)
from agentloom.results import JsonBlock, OperationResult

if TYPE_CHECKING:
    from agentloom.models.manager import ModelManager

__all__ = [
    "MODEL_EVENT",
    "CallerContext",
    "ModelCallFailed",
    "ModelGateway",
    "RequestBus",
    "check_response",
    "is_model_capability",
    "message_to_dict",
    "model_key",
    "model_name",
    "payload_to_request",
    "request_to_payload",
    "response_from_dict",
    "response_to_dict",
    "tool_to_dict",
]

MODEL_EVENT = "model"
MODEL_REQUEST_INVALID = "MODEL_REQUEST_INVALID"
MODEL_RESPONSE_INVALID = "MODEL_RESPONSE_INVALID"
MODEL_CALL_DENIED = "MODEL_CALL_DENIED"
ROLES = ("system", "user", "assistant", "tool")
EFFORTS = ("minimal", "low", "medium", "high", "max")
_USAGE_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens", "total_tokens")


# -- names ---------------------------------------------------------------


def model_key(name: str) -> str:
    """The capability key of model connection ``name`` (``model.<name>``)."""
    return f"model.{name}"


def model_name(name: str) -> str:
    """The catalog (model-facing) name of model connection ``name`` (``model_<name>``)."""
    return f"model_{name}"


def is_model_capability(spec: CapabilitySpec) -> bool:
    """Whether ``spec`` is a model connection (never offered to a model as a tool)."""
    return spec.handler_ref.startswith("model:")


# -- wire forms --------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _call_to_dict(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments, "index": call.index}


def message_to_dict(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role}
    if m.content is not None:
        out["content"] = m.content
    if m.tool_calls:
        out["tool_calls"] = [_call_to_dict(c) for c in m.tool_calls]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        out["name"] = m.name
    if m.reasoning is not None:
        out["reasoning"] = m.reasoning
    if m.reasoning_details is not None:
        out["reasoning_details"] = _plain(m.reasoning_details)
    return out


def tool_to_dict(t: ToolDef) -> dict[str, Any]:
    return {"name": t.name, "description": t.description, "parameters": _plain(t.parameters)}


def request_to_payload(
    request: ModelRequest, *, messages: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON payload of ``request`` (its ``purpose`` travels beside it, on the bus);
    ``messages`` / ``tools`` are their JSON forms when the caller already has them."""
    return {
        "messages": [message_to_dict(m) for m in request.messages] if messages is None
        else messages,
        "tools": [tool_to_dict(t) for t in request.tools] if tools is None else tools,
        "output_format": _plain(request.output_format),
        "think": None if request.think is None
        else {"enabled": request.think.enabled, "effort": request.think.effort},
        "max_output_tokens": request.max_output_tokens,
    }


def _get(data: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    """``data[key]`` when it is a ``kind`` (never a bool for ``int``), ``None`` when absent."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ValueError(f"{where}.{key} must be {kind.__name__}, not {type(value).__name__}")
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be an object")
    return value


def _array(value: Any, where: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise ValueError(f"{where} must be an array")
    return value


def _call_from_dict(data: Any, where: str) -> ToolCall:
    d = _object(data, where)
    index = _get(d, "index", int, where) or 0
    return ToolCall(id=str(_get(d, "id", str, where) or ""), name=str(_get(d, "name", str, where) or ""),
                    arguments=str(_get(d, "arguments", str, where) or ""), index=index)


def _details(value: Any, where: str) -> tuple[Mapping[str, Any], ...] | None:
    if value is None:
        return None
    return tuple(dict(_object(d, f"{where}[{i}]")) for i, d in enumerate(_array(value, where)))


_TEXT_FIELDS = frozenset({"role", "content", "tool_call_id", "name", "reasoning"})


def _message_from_dict(data: Any, where: str) -> Message:
    if type(data) is dict and data.keys() <= _TEXT_FIELDS and data.get("role") in ROLES:
        # The common message: text fields only, each a string or absent — what the checks
        # below accept unchanged; anything else takes them, with their exact errors.
        content, call_id, name, reasoning = (
            data.get("content"), data.get("tool_call_id"), data.get("name"), data.get("reasoning"))
        if ((content is None or type(content) is str) and (call_id is None or type(call_id) is str)
                and (name is None or type(name) is str)
                and (reasoning is None or type(reasoning) is str)):
            return Message(role=data["role"], content=content, tool_call_id=call_id, name=name,
                           reasoning=reasoning)
    d = _object(data, where)
    role = d.get("role")
    if role not in ROLES:
        raise ValueError(f"{where}.role must be one of {list(ROLES)}, not {role!r}")
    return Message(
        role=role,
        content=_get(d, "content", str, where),
        tool_calls=tuple(_call_from_dict(c, f"{where}.tool_calls[{i}]")
                         for i, c in enumerate(_array(d.get("tool_calls"), f"{where}.tool_calls"))),
        tool_call_id=_get(d, "tool_call_id", str, where),
        name=_get(d, "name", str, where),
        reasoning=_get(d, "reasoning", str, where),
        reasoning_details=_details(d.get("reasoning_details"), f"{where}.reasoning_details"),
    )


def payload_to_request(payload: Mapping[str, Any], *, purpose: str | None = None) -> ModelRequest:
    """The ``ModelRequest`` a payload describes (the inverse of ``request_to_payload``).

    Raises:
        ValueError: the payload is not a model request (the message names the field).
    """
    p = _object(payload, "payload")
    messages = tuple(_message_from_dict(m, f"messages[{i}]")
                     for i, m in enumerate(_array(p.get("messages"), "messages")))
    tools = []
    for i, t in enumerate(_array(p.get("tools"), "tools")):
        d = _object(t, f"tools[{i}]")
        tools.append(ToolDef(name=str(_get(d, "name", str, f"tools[{i}]") or ""),
                             description=str(_get(d, "description", str, f"tools[{i}]") or ""),
                             parameters=dict(_object(d.get("parameters", {}), f"tools[{i}].parameters"))))
    fmt = p.get("output_format", "text")
    if not (fmt in ("text", "json_object") or isinstance(fmt, Mapping)):
        raise ValueError(f"output_format must be 'text', 'json_object' or a schema object, not {fmt!r}")
    think = None
    if p.get("think") is not None:
        t = _object(p["think"], "think")
        effort = t.get("effort")
        if effort is not None and effort not in EFFORTS:
            raise ValueError(f"think.effort must be one of {list(EFFORTS)}, not {effort!r}")
        think = ThinkParams(enabled=_get(t, "enabled", bool, "think"), effort=effort)
    limit = _get(p, "max_output_tokens", int, "payload")
    return ModelRequest(
        messages=messages, tools=tuple(tools),
        output_format=dict(fmt) if isinstance(fmt, Mapping) else fmt,
        think=think, max_output_tokens=limit, purpose=purpose,
    )


def response_to_dict(response: ModelResponse) -> dict[str, Any]:
    """The JSON form of a complete response (the content of the call's result)."""
    usage = response.usage
    return {
        "text": response.text,
        "reasoning": response.reasoning,
        "reasoning_details": None if response.reasoning_details is None
        else _plain(response.reasoning_details),
        "tool_calls": [_call_to_dict(c) for c in response.tool_calls],
        "finish_reason": response.finish_reason,
        "usage": None if usage is None else {f: getattr(usage, f) for f in _USAGE_FIELDS},
        "model": response.model,
        "response_id": response.response_id,
    }


def response_from_dict(data: Mapping[str, Any]) -> ModelResponse:
    """The ``ModelResponse`` a ``response_to_dict`` value describes.

    Raises:
        ValueError: ``data`` is not a response (the message names the field).
    """
    d = _object(data, "response")
    text = d.get("text")
    if not isinstance(text, str):
        raise ValueError("response.text must be a string")
    usage = None
    if d.get("usage") is not None:
        u = _object(d["usage"], "response.usage")
        usage = Usage(**{f: _get(u, f, int, "response.usage") for f in _USAGE_FIELDS})
    return ModelResponse(
        text=text,
        reasoning=_get(d, "reasoning", str, "response"),
        reasoning_details=_details(d.get("reasoning_details"), "response.reasoning_details"),
        tool_calls=tuple(_call_from_dict(c, f"response.tool_calls[{i}]")
                         for i, c in enumerate(_array(d.get("tool_calls"), "response.tool_calls"))),
        finish_reason=_get(d, "finish_reason", str, "response"),
        usage=usage,
        model=_get(d, "model", str, "response"),
        response_id=_get(d, "response_id", str, "response"),
    )


def check_response(response: ModelResponse) -> str | None:
    """Why ``response`` may not be delivered — a tool call without a name, or with a missing
    or repeated id — or None. A call of a tool that was not offered, or with arguments that
    are not a JSON object, is delivered with its ``problem`` (``models.calls``)."""
    seen: set[str] = set()
    for call in response.tool_calls:
        where = f"tool call #{call.index} ({call.name or 'no name'})"
        if not call.name:
            return f"{where} has no tool name"
        if not call.id or call.id in seen:
            return f"{where} has a missing or repeated id {call.id!r}"
        seen.add(call.id)
    return None


# -- the caller-facing gateway -------------------------------------------------------------------


class RequestBus(Protocol):
    """What the gateway needs of the event bus (``bus.EventBus`` implements it)."""

    async def request(
        self,
        name: str,
        arguments: Mapping[str, Any],
        context: Any,
        *,
        event_type: str = ...,
        logical_key: str | None = ...,
        purpose: str | None = ...,
        prevalidated: bool = ...,
        defer_commit: bool = ...,
    ) -> OperationResult: ...

    def notify(self, kind: str, payload: dict[str, Any]) -> None: ...


class CallerContext(Protocol):
    """The trusted invocation context of a call (``pipeline.context.InvocationContext``)."""

    @property
    def run_id(self) -> str: ...

    @property
    def role(self) -> str | None: ...

    @property
    def context_scope(self) -> str | None: ...


class ModelCallFailed(AgentLoomError):
    """A model call that did not deliver a response: failed, unknown, denied or cancelled.

    ``envelope`` is the call's terminal ``OperationResult``; ``outcome`` its outcome;
    ``incomplete`` what the last Attempt had received before it failed (evidence, never a
    response).
    """

    default_code = "MODEL_CALL_FAILED"

    def __init__(self, envelope: OperationResult, *, error: OperationError | None = None) -> None:
        if error is None:
            error = envelope.error or OperationError(
                code=MODEL_CALL_DENIED, category="permission", phase="hooks",
                message=envelope.describe(),
                external_outcome="not_started" if envelope.outcome == "denied_before_execution"
                else "known")
        super().__init__(f"model call {envelope.capability} {envelope.outcome}: {error.message}",
                         code=error.code, category=error.category, phase=error.phase,
                         external_outcome=error.external_outcome)
        self.error = error
        self.envelope = envelope
        self.outcome = envelope.outcome

    @property
    def incomplete(self) -> dict[str, Any] | None:
        raw = self.envelope.raw
        found = raw.metadata.get("incomplete") if raw is not None else None
        return cast(dict[str, Any], found) if isinstance(found, dict) else None


class ModelGateway:
    """``generate``: send one ``ModelRequest`` through the bus and wait for its complete,
    post-processed, stored response (000 §4)."""

    def __init__(self, bus: RequestBus, manager: ModelManager | None = None) -> None:
        self._bus = bus
        self._manager = manager
        # The last caller context and its copy without a context scope (contexts are frozen;
        # an agent makes its model calls with one context).
        self._unscoped: tuple[CallerContext, CallerContext] | None = None

    async def generate(
        self,
        request: ModelRequest,
        context: CallerContext,
        *,
        model: str = "main",
        purpose: str | None = None,
        logical_key: str | None = None,
        defer_commit: bool = False,
    ) -> ModelResponse:
        """The complete response of model connection ``model`` to ``request``.

        ``purpose`` (default ``request.purpose``) is what hook matchers see, e.g.
        ``compaction``; ``logical_key`` names the call within the run, so the same key
        returns the stored call instead of calling the model again. ``defer_commit``
        lets a hook-free call's record ride on the invocation's next commit; the caller
        then owes ``EventBus.flush`` when its invocation ends.

        Raises:
            ModelCallFailed: the call failed, its outcome is unknown, a hook denied it, the
                run was stopped, or the effective response does not validate.
        """
        purpose = purpose if purpose is not None else request.purpose
        if context.context_scope is not None:
            last = self._unscoped
            if last is not None and last[0] is context:
                context = last[1]
            else:
                unscoped = cast(CallerContext, dataclasses.replace(cast(Any, context), context_scope=None))
                self._unscoped, context = (context, unscoped), unscoped
        observed: dict[str, Any] = {
            "run_id": context.run_id, "role": context.role, "capability": model_key(model),
            "purpose": purpose,
        }
        self._bus.notify("model.started", observed)
        if self._manager is not None:
            cache = self._manager.payloads
            payload, checked = cache.payload(request)
            key = id(payload["messages"])
            cache.sent[key] = (payload, request)
            try:
                envelope = await self._bus.request(
                    model_name(model), payload, context, event_type=MODEL_EVENT,
                    logical_key=logical_key, purpose=purpose, prevalidated=checked,
                    defer_commit=defer_commit)
            finally:
                cache.sent.pop(key, None)
        else:
            envelope = await self._bus.request(
                model_name(model), request_to_payload(request), context, event_type=MODEL_EVENT,
                logical_key=logical_key, purpose=purpose, defer_commit=defer_commit)
        observed.update(operation_id=envelope.operation_id, outcome=envelope.outcome,
                        attempts=envelope.attempts)
        try:
            response = self._effective(envelope, request, payload)
        except ModelCallFailed as exc:
            self._bus.notify("model.failed", {**observed, "error_code": exc.error.code})
            raise
        usage = response.usage
        self._bus.notify("model.completed", {
            **observed, "finish_reason": response.finish_reason,
            "tool_calls": len(response.tool_calls),
            "usage": None if usage is None else {f: getattr(usage, f) for f in _USAGE_FIELDS}})
        return response

    def _effective(
        self, envelope: OperationResult, request: ModelRequest, payload: dict[str, Any]
    ) -> ModelResponse:
        result = envelope.result
        if envelope.outcome != "succeeded" or result is None:
            raise ModelCallFailed(envelope)
        problem: str | None
        try:
            (block,) = result.content
            if not isinstance(block, JsonBlock):
                raise ValueError("the result is not one JSON block")
            response = response_from_dict(block.data)
            problem = check_response(response)
            if problem is None and response.tool_calls:
                executed = envelope.executed_arguments or {}
                # The tools the model was offered: those of ``request`` unless a before-hook
                # changed the payload (then parse what was executed; a history is not re-read
                # on every call only to find the tool names).
                offered = request.tools if executed == payload \
                    else payload_to_request(executed).tools
                response = mark_calls(response, offered)
        except ValueError as exc:
            problem = str(exc)
        if problem is not None:
            raise ModelCallFailed(envelope, error=OperationError(
                code=MODEL_RESPONSE_INVALID, category="protocol", phase="deliver",
                message=f"the effective model response is invalid: {problem}",
                external_outcome="known"))
        return response

    async def aclose(self) -> None:
        """Close the provider connections the model handlers opened."""
        if self._manager is not None:
            await self._manager.aclose()
