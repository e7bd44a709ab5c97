"""Builders for the common turns: Chat chunks (``chat_text``, ``chat_reasoning``,
``chat_tool_call``, ``chat_usage``, …, a whole reply with ``chat_turn``) and Responses events
(``resp_event``, a whole reply with ``responses_turn``).

Owns: the wire shapes those builders produce. Does not own: the step values (``_steps``) or
sending them (``_handler``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from agentloom.testing.openai_server._steps import Chunk, Done, Event, Step

__all__ = [
    "chat_delta",
    "chat_finish",
    "chat_reasoning",
    "chat_reasoning_details",
    "chat_role",
    "chat_text",
    "chat_tool_call",
    "chat_turn",
    "chat_usage",
    "resp_event",
    "responses_turn",
]


def chat_delta(finish_reason: str | None = None, **delta: Any) -> Chunk:
    """A Chat chunk with one choice whose ``delta`` holds exactly ``delta``."""
    return Chunk({"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})


def chat_role() -> Chunk:
    return chat_delta(role="assistant", content="")


def chat_text(text: str) -> Chunk:
    return chat_delta(content=text)


def chat_reasoning(text: str) -> Chunk:
    """Reasoning in the ``reasoning_content`` style (DeepSeek, GLM, DashScope)."""
    return chat_delta(reasoning_content=text)


def chat_reasoning_details(text: str, *, index: int = 0, id: str | None = None,
                           type: str = "reasoning.text") -> Chunk:
    """Reasoning in the ``reasoning_details`` style (MiniMax with ``reasoning_split``)."""
    item: dict[str, Any] = {"type": type, "index": index, "text": text}
    if id is not None:
        item["id"] = id
    return chat_delta(reasoning_details=[item])


def chat_tool_call(index: int = 0, *, id: str | None = None, name: str | None = None,
                   arguments: str | None = None) -> Chunk:
    """One tool-call fragment. Pass ``id`` / ``name`` on every fragment to script a provider
    that repeats them."""
    call: dict[str, Any] = {"index": index}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    if function:
        call["function"] = function
    return chat_delta(tool_calls=[call])


def chat_finish(reason: str = "stop") -> Chunk:
    return chat_delta(finish_reason=reason)


def chat_usage(prompt: int = 10, completion: int = 5, *, reasoning: int | None = None,
               cached: int | None = None) -> Chunk:
    """The final usage-only chunk (empty ``choices``), as with ``include_usage``."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
    }
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return Chunk({"choices": [], "usage": usage})


def _pieces(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


ToolSpec: TypeAlias = "tuple[str, str, str | Sequence[str]] | Mapping[str, Any]"


def _tool_spec(spec: ToolSpec) -> tuple[str, str, list[str]]:
    if isinstance(spec, Mapping):
        return str(spec["id"]), str(spec["name"]), _pieces(spec.get("arguments", "{}"))
    call_id, name, arguments = spec
    return call_id, name, _pieces(arguments)


def chat_turn(
    text: str | Sequence[str] = "",
    *,
    reasoning: str | Sequence[str] | None = None,
    tool_calls: Iterable[ToolSpec] = (),
    finish: str | None = None,
    usage: tuple[int, int] | None = (10, 5),
    repeat_ids: bool = False,
    done: bool = True,
) -> list[Step]:
    """A whole streamed Chat reply: role, reasoning pieces, text pieces, tool calls
    (``(id, name, arguments-or-pieces)``), finish (``tool_calls`` when there are any, else
    ``stop``), the usage chunk and ``[DONE]``. ``repeat_ids`` repeats id and name in every
    tool-call fragment."""
    steps: list[Step] = [chat_role()]
    steps += [chat_reasoning(p) for p in _pieces(reasoning)]
    steps += [chat_text(p) for p in _pieces(text)]
    calls = [_tool_spec(spec) for spec in tool_calls]
    for index, (call_id, name, pieces) in enumerate(calls):
        steps.append(chat_tool_call(index, id=call_id, name=name, arguments=""))
        for piece in pieces:
            if repeat_ids:
                steps.append(chat_tool_call(index, id=call_id, name=name, arguments=piece))
            else:
                steps.append(chat_tool_call(index, arguments=piece))
    steps.append(chat_finish(finish or ("tool_calls" if calls else "stop")))
    if usage is not None:
        steps.append(chat_usage(*usage))
    if done:
        steps.append(Done())
    return steps


# -- responses builders ----------------------------------------------------------------------


def resp_event(type: str, **fields: Any) -> Event:
    return Event(type, fields)


def _response(response_id: str, model: str, status: str, output: list[Any],
              usage: Mapping[str, Any] | None, **extra: Any) -> dict[str, Any]:
    return {"id": response_id, "object": "response", "created_at": 0, "status": status, "model": model,
            "output": output, "usage": usage, "error": None, "incomplete_details": None, **extra}


def responses_turn(
    text: str | Sequence[str] = "",
    *,
    reasoning: str | Sequence[str] | None = None,
    tool_calls: Iterable[ToolSpec] = (),
    usage: tuple[int, int] | None = (10, 5),
    response_id: str = "resp_1",
    model: str = "scripted-model",
    incomplete: str | None = None,
) -> list[Step]:
    """A whole streamed Responses reply: created / in_progress, a reasoning item with
    summary deltas, a message item with text deltas, function_call items with argument
    deltas, then ``response.completed`` (or ``response.incomplete`` with ``incomplete``
    as the reason) carrying usage."""
    steps: list[Step] = [
        resp_event("response.created", response=_response(response_id, model, "in_progress", [], None)),
        resp_event("response.in_progress", response=_response(response_id, model, "in_progress", [], None)),
    ]
    output: list[dict[str, Any]] = []
    if reasoning is not None:
        n, rid = len(output), f"rs_{len(output)}"
        pieces = _pieces(reasoning)
        steps.append(resp_event("response.output_item.added", output_index=n,
                                item={"type": "reasoning", "id": rid, "summary": []}))
        for p in pieces:
            steps.append(resp_event("response.reasoning_summary_text.delta", item_id=rid, output_index=n,
                                    summary_index=0, delta=p))
        summary = [{"type": "summary_text", "text": "".join(pieces)}]
        item = {"type": "reasoning", "id": rid, "summary": summary}
        steps.append(resp_event("response.output_item.done", output_index=n, item=item))
        output.append(item)
    pieces = _pieces(text)
    if pieces:
        n, mid = len(output), f"msg_{len(output)}"
        steps.append(resp_event("response.output_item.added", output_index=n, item={
            "type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}))
        steps.append(resp_event("response.content_part.added", item_id=mid, output_index=n, content_index=0,
                                part={"type": "output_text", "text": "", "annotations": []}))
        for p in pieces:
            steps.append(resp_event("response.output_text.delta", item_id=mid, output_index=n,
                                    content_index=0, delta=p, logprobs=[]))
        full = "".join(pieces)
        steps.append(resp_event("response.output_text.done", item_id=mid, output_index=n, content_index=0,
                                text=full, logprobs=[]))
        item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": full, "annotations": []}]}
        steps.append(resp_event("response.output_item.done", output_index=n, item=item))
        output.append(item)
    for call_id, name, arg_pieces in (_tool_spec(s) for s in tool_calls):
        n, fid = len(output), f"fc_{len(output)}"
        steps.append(resp_event("response.output_item.added", output_index=n, item={
            "type": "function_call", "id": fid, "call_id": call_id, "name": name, "arguments": "",
            "status": "in_progress"}))
        for p in arg_pieces:
            steps.append(resp_event("response.function_call_arguments.delta", item_id=fid, output_index=n,
                                    delta=p))
        arguments = "".join(arg_pieces)
        steps.append(resp_event("response.function_call_arguments.done", item_id=fid, output_index=n,
                                arguments=arguments))
        item = {"type": "function_call", "id": fid, "call_id": call_id, "name": name,
                "arguments": arguments, "status": "completed"}
        steps.append(resp_event("response.output_item.done", output_index=n, item=item))
        output.append(item)
    usage_obj = None if usage is None else {
        "input_tokens": usage[0], "output_tokens": usage[1], "total_tokens": usage[0] + usage[1],
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    if incomplete is None:
        steps.append(resp_event("response.completed",
                                response=_response(response_id, model, "completed", output, usage_obj)))
    else:
        steps.append(resp_event("response.incomplete", response=_response(
            response_id, model, "incomplete", output, usage_obj, incomplete_details={"reason": incomplete})))
    return steps
