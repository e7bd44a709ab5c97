"""The one model codec: a model request and response in their stored JSON forms (000 §4).

A model call travels typed: the gateway hands the handler the ``ModelRequest`` it was given
and the handler hands back the ``ModelResponse`` the Attempt produced (``models.gateway``);
the provider's own wire body is built from the typed request at the edge, by the adapter.
The JSON forms here exist for what must be plain JSON — the operation's recorded payload,
which before-hooks may patch (``MODEL_PAYLOAD_SCHEMA``), and the call's raw result, which
after-hooks may patch — and are read back only when a hook changed them or a stored call
is recovered::

    ModelRequest ──encode_request──► payload (stored, hook-patchable) ──payload_to_request──►
    ModelResponse ──response_to_dict──► raw result (stored) ──response_from_dict──►

The keys are those of every stored run: changing them is a schema change.

Owns: the payload and response JSON forms and their exact inverses, the payload schema, and
``encode_request`` — each ``Message`` / ``ToolDef`` object is encoded, and checked against its
item of the schema, once (an agent re-sends its whole history every turn). Does not own: the
provider wire bodies (``adapters``, ``presets``), nor whether a complete response may be
delivered (``models.calls.check_response``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentloom.models.types import (
    Message,
    ModelRequest,
    ModelResponse,
    ThinkParams,
    ToolCall,
    ToolDef,
    Usage,
)

__all__ = [
    "EFFORTS",
    "MODEL_PAYLOAD_SCHEMA",
    "ROLES",
    "encode_request",
    "message_to_dict",
    "payload_to_request",
    "plain",
    "request_to_payload",
    "response_from_dict",
    "response_to_dict",
    "tool_to_dict",
    "usage_to_dict",
]

ROLES = ("system", "user", "assistant", "tool")
EFFORTS = ("minimal", "low", "medium", "high", "max")
_USAGE_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens", "total_tokens")


# -- the payload schema ------------------------------------------------------------------------


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
                    "id": {"type": "string"},
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


# -- typed → JSON ------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A JSON-ready deep copy: mappings become dicts, tuples lists (the adapters use it too)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _call_to_dict(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments, "index": call.index}


def message_to_dict(m: Message) -> dict[str, Any]:
    """The payload form of one message (absent fields are left out)."""
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
        out["reasoning_details"] = plain(m.reasoning_details)
    if m.id is not None:
        out["id"] = m.id
    return out


def tool_to_dict(t: ToolDef) -> dict[str, Any]:
    """The payload form of one offered tool."""
    return {"name": t.name, "description": t.description, "parameters": plain(t.parameters)}


def usage_to_dict(usage: Usage | None) -> dict[str, int | None] | None:
    """The JSON form of a call's token usage (every field, ``None`` where not reported)."""
    return None if usage is None else {f: getattr(usage, f) for f in _USAGE_FIELDS}


def _assemble(request: ModelRequest, messages: list[dict[str, Any]],
              tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "messages": messages,
        "tools": tools,
        "output_format": plain(request.output_format),
        "think": None if request.think is None
        else {"enabled": request.think.enabled, "effort": request.think.effort},
        "max_output_tokens": request.max_output_tokens,
    }


def request_to_payload(request: ModelRequest) -> dict[str, Any]:
    """The JSON payload of ``request``, fresh (its ``purpose`` travels beside it, on the bus)."""
    return _assemble(request, [message_to_dict(m) for m in request.messages],
                     [tool_to_dict(t) for t in request.tools])


class _Checks:
    """The payload schema compiled once: per message, per tool, and whole."""

    __slots__ = ("message", "rest", "tool")

    def __init__(self) -> None:
        from agentloom.catalog import ArgumentValidator

        props = MODEL_PAYLOAD_SCHEMA["properties"]
        self.message: Callable[[Any], bool] = ArgumentValidator(props["messages"]["items"]).is_valid
        self.tool: Callable[[Any], bool] = ArgumentValidator(props["tools"]["items"]).is_valid
        self.rest: Callable[[Any], bool] = ArgumentValidator(MODEL_PAYLOAD_SCHEMA).is_valid


@functools.cache
def _checks() -> _Checks:
    return _Checks()


def _encoded(part: Message | ToolDef, checks: _Checks) -> tuple[dict[str, Any], bool]:
    memo = part._payload
    if memo is None:
        if isinstance(part, Message):
            value = message_to_dict(part)
            memo = (value, checks.message(value))
        else:
            value = tool_to_dict(part)
            memo = (value, checks.tool(value))
        object.__setattr__(part, "_payload", memo)  # a frozen value's own memo (types.py)
    return memo


def encode_request(request: ModelRequest) -> tuple[dict[str, Any], bool]:
    """``request_to_payload(request)`` and whether it is known to match ``MODEL_PAYLOAD_SCHEMA``.

    Each message and tool is encoded and checked against its item of the schema once, on the
    object itself; the rest of the payload is checked with the whole schema on a one-message,
    no-tool copy. A payload whose every part passed is exactly one the whole schema accepts
    (array items are checked independently), so the pipeline need not walk the history again;
    ``False`` leaves the payload to the pipeline's full check, with its usual error. The
    encoded parts are shared between payloads and must not be changed (hooks patch copies).
    """
    checks = _checks()
    ok = bool(request.messages)
    messages = []
    for m in request.messages:
        value, part_ok = _encoded(m, checks)
        messages.append(value)
        ok = ok and part_ok
    tools = []
    for t in request.tools:
        value, part_ok = _encoded(t, checks)
        tools.append(value)
        ok = ok and part_ok
    payload = _assemble(request, messages, tools)
    if ok:
        ok = checks.rest({**payload, "messages": messages[:1], "tools": []})
    return payload, ok


def response_to_dict(response: ModelResponse) -> dict[str, Any]:
    """The JSON form of a complete response (the content of the call's result)."""
    return {
        "text": response.text,
        "reasoning": response.reasoning,
        "reasoning_details": None if response.reasoning_details is None
        else plain(response.reasoning_details),
        "tool_calls": [_call_to_dict(c) for c in response.tool_calls],
        "finish_reason": response.finish_reason,
        "usage": usage_to_dict(response.usage),
        "model": response.model,
        "response_id": response.response_id,
    }


# -- JSON → typed ------------------------------------------------------------------------------


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


_TEXT_FIELDS = frozenset({"role", "content", "tool_call_id", "name", "reasoning", "id"})


def _message_from_dict(data: Any, where: str) -> Message:
    if type(data) is dict and data.keys() <= _TEXT_FIELDS and data.get("role") in ROLES:
        # The common message: text fields only, each a string or absent — what the checks
        # below accept unchanged; anything else takes them, with their exact errors.
        content, call_id, name, reasoning, mid = (
            data.get("content"), data.get("tool_call_id"), data.get("name"), data.get("reasoning"),
            data.get("id"))
        if ((content is None or type(content) is str) and (call_id is None or type(call_id) is str)
                and (name is None or type(name) is str)
                and (reasoning is None or type(reasoning) is str)
                and (mid is None or type(mid) is str)):
            return Message(role=data["role"], content=content, tool_call_id=call_id, name=name,
                           reasoning=reasoning, id=mid)
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
        id=_get(d, "id", str, where),
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
