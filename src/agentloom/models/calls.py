"""Tool calls that cannot run in a valid response, and what the model is told (000 §4).

A complete response may hold a tool call that names a tool the request did not offer, or
whose arguments are not a JSON object (not JSON at all, nested too deeply to read, or a JSON
value of another kind). The response is not broken — only that call cannot run — so it is
delivered, and ``mark_calls`` gives each such call a ``problem``: the ``OperationError`` the
agent loop records as the call's failure (no Attempt) and hands the model as the call's
tool result, so that the model can correct itself:

=====================  ==============  =====================================================
code                   category        the model is told
=====================  ==============  =====================================================
``TOOL_NOT_OFFERED``   ``not_found``   the name it used and the tools it may call
``INVALID_ARGUMENTS``  ``validation``  the JSON error and the tool's parameter schema
=====================  ==============  =====================================================

The first line of a problem's message states the fault; the rest says how to correct it.
A response broken as a whole — a call without a name, a missing or repeated call id — is
refused (``MODEL_RESPONSE_INVALID``): ``check_response`` / ``broken_call`` is that one rule,
applied by the Aggregator to the response an Attempt assembled (``aggregate``) and by the
gateway to the effective response after the after-hooks (``gateway``). A stream cut off is
refused before (``aggregate``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from agentloom.canonical import readable_json
from agentloom.errors import OperationError
from agentloom.models.types import ModelResponse, ToolCall, ToolDef

__all__ = ["INVALID_ARGUMENTS", "MODEL_RESPONSE_INVALID", "RESPONSE_INVALID_CODES",
           "TOOL_NOT_OFFERED", "arguments_problem", "broken_call", "call_problem", "check_response",
           "mark_calls", "parse_arguments"]

TOOL_NOT_OFFERED = "TOOL_NOT_OFFERED"
INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
NAME_SHOWN = 100  # characters of a name the model made up, quoted back to it
NAMES_SHOWN = 60  # offered tool names listed
SCHEMA_SHOWN = 4_000  # characters of a parameter schema quoted; a longer one is referred to

MODEL_RESPONSE_INVALID = "MODEL_RESPONSE_INVALID"
"""The error code of a complete response that may not be delivered (``check_response``)."""
RESPONSE_INVALID_CODES = frozenset({MODEL_RESPONSE_INVALID, "MODEL_INVALID_RESPONSE"})
"""``MODEL_RESPONSE_INVALID`` and the code an Attempt's refusal had in runs stored before #13:
a replayed run must take the same turn again."""


def broken_call(tool_calls: Sequence[ToolCall]) -> tuple[ToolCall, str] | None:
    """The first call that makes a complete response invalid, and why: it has no tool name,
    or no id, or the id of an earlier call. ``None`` when every call may be delivered (a
    call that cannot run is still delivered, with its ``problem``: see ``mark_calls``)."""
    seen: set[str] = set()
    for call in tool_calls:
        if not call.name:
            return call, f"tool call #{call.index} has no tool name"
        if not call.id or call.id in seen:
            why = f"it repeats the id {call.id!r} of another tool call" if call.id else "it has none"
            return call, f"tool call #{call.index} ({call.name}) has a missing or repeated id: {why}"
        seen.add(call.id)
    return None


def check_response(response: ModelResponse) -> str | None:
    """Why ``response`` may not be delivered (``broken_call``), or None."""
    found = broken_call(response.tool_calls)
    return None if found is None else found[1]


def mark_calls(response: ModelResponse, tools: Sequence[ToolDef]) -> ModelResponse:
    """``response`` with ``problem`` set on each tool call that cannot run against the
    offered ``tools`` (``response`` itself when every call can)."""
    if not response.tool_calls:
        return response
    offered = {t.name: t for t in tools}
    cut = response.finish_reason == "length"
    problems = [call_problem(c, offered, cut=cut) for c in response.tool_calls]
    if all(p == c.problem for p, c in zip(problems, response.tool_calls, strict=True)):
        return response
    return replace(response, tool_calls=tuple(
        replace(c, problem=p) for p, c in zip(problems, response.tool_calls, strict=True)))


def call_problem(call: ToolCall, offered: Mapping[str, ToolDef], *,
                 cut: bool = False) -> OperationError | None:
    """Why ``call`` cannot run, or None. ``cut``: the response ended at its output limit
    (``finish_reason`` ``length``), which may be why its arguments are not JSON."""
    tool = offered.get(call.name)
    if tool is None:
        names = sorted(offered)
        listed = ", ".join(names[:NAMES_SHOWN]) + (
            f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")
        advice = (f"The tools you can call: {listed}. Call one of them by its exact name, or "
                  "answer without a tool." if names else
                  "No tools are offered to you: answer without calling a tool.")
        return OperationError(
            code=TOOL_NOT_OFFERED, category="not_found", phase="validate",
            message=f"tool {_shown(call.name)} is not offered\n{advice}",
            details={"offered": names[:NAMES_SHOWN]})
    problem = arguments_problem(call.arguments)
    if problem is None:
        return None
    if cut:
        problem += " (the response was cut off at its output limit)"
    schema = readable_json(tool.parameters)
    shown = schema if len(schema) <= SCHEMA_SHOWN else \
        f"(too long to repeat here: it is the parameters of {tool.name} in your tool list)"
    return OperationError(
        code=INVALID_ARGUMENTS, category="validation", phase="validate",
        message=f"the arguments of {tool.name} are {problem}\nCall {tool.name} again with "
        f"arguments that are one JSON object matching its parameters schema: {shown}",
        details={"problem": problem})


def arguments_problem(text: str) -> str | None:
    """What keeps ``text`` from being a JSON object (``not valid JSON: …``, ``nested too
    deeply to read``, ``not a JSON object but …``), or None."""
    parsed = parse_arguments(text)
    return parsed if isinstance(parsed, str) else None


def parse_arguments(text: str) -> dict[str, Any] | str:
    """The JSON object ``text`` holds (an empty text is ``{}``), or what keeps it from being
    one (see ``arguments_problem``)."""
    try:
        value = json.loads(text or "{}")
    except ValueError as exc:
        return f"not valid JSON: {exc}"
    except RecursionError:
        return "nested too deeply to read"
    if not isinstance(value, dict):
        return f"not a JSON object but {_kind(value)}"
    return value


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


def _shown(name: str) -> str:
    return repr(name if len(name) <= NAME_SHOWN else name[:NAME_SHOWN] + "…")
