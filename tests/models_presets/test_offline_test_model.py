"""The offline ``test`` model: calls every offered tool once with schema-valid, deterministic
arguments, then summarises what it saw, each result with its status."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

from agentloom.models.offline import TestModel, example_arguments, result_status
from agentloom.models.types import Finish, Message, ModelRequest, ToolCall, ToolDef, UsageEvent
from agentloom.results import SIDE_EFFECTS_NOT_ROLLED_BACK

from .offline_support import collect

SCHEMAS: dict[str, dict[str, Any]] = {
    "flat": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer"},
            "force": {"type": "boolean"},
        },
        "required": ["path", "limit", "force"],
        "additionalProperties": False,
    },
    "bounds": {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 3, "maximum": 9, "multipleOf": 3},
            "x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "neg": {"type": "integer", "maximum": -5},
            "ex": {"type": "integer", "exclusiveMinimum": 10, "exclusiveMaximum": 12},
            "code": {"type": "string", "minLength": 12, "maxLength": 12},
            "short": {"type": "string", "maxLength": 2},
        },
        "required": ["n", "x", "neg", "ex", "code", "short"],
    },
    "enums_and_const": {
        "type": "object",
        "properties": {
            "mode": {"enum": ["fast", "safe"]},
            "version": {"const": 2},
            "level": {"type": "string", "enum": ["low", "high"]},
        },
        "required": ["mode", "version", "level"],
    },
    "nested": {
        "type": "object",
        "properties": {
            "owner": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "email": {"type": "string", "format": "email"}},
                "required": ["name", "email"],
                "additionalProperties": False,
            },
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 3, "uniqueItems": True},
            "matrix": {
                "type": "array",
                "items": {"type": "array", "items": {"type": "integer", "minimum": 1}},
            },
            "when": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
        },
        "required": ["owner", "tags", "matrix", "when", "id"],
    },
    "refs_and_unions": {
        "type": "object",
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
        "properties": {
            "at": {"$ref": "#/$defs/point"},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 5}]},
            "either": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "integer"}]},
            "both": {
                "allOf": [
                    {"$ref": "#/$defs/point"},
                    {"properties": {"y": {"type": "integer"}}, "required": ["y"]},
                ]
            },
            "nullable": {"type": ["null", "string"]},
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "boolean"}],
                "minItems": 2,
            },
        },
        "required": ["at", "maybe", "either", "both", "nullable", "pair"],
    },
    "optional_left_out": {"type": "object", "properties": {"opt": {"type": "string", "minLength": 50}}},
    "empty": {"type": "object"},
}


def valid(schema: dict[str, Any], value: Any) -> None:
    Draft202012Validator(schema, format_checker=FormatChecker()).validate(value)


@pytest.mark.parametrize("name", SCHEMAS)
def test_generated_arguments_validate_against_the_tool_schema(name: str) -> None:
    value = example_arguments(SCHEMAS[name])
    valid(SCHEMAS[name], value)
    assert value == example_arguments(SCHEMAS[name])  # deterministic


def test_only_required_properties_are_generated() -> None:
    assert example_arguments(SCHEMAS["optional_left_out"]) == {}
    assert set(example_arguments(SCHEMAS["flat"])) == {"path", "limit", "force"}


# -- generated schemas ---------------------------------------------------------------------------


@st.composite
def leaf(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean", "null", "enum", "format"]))
    if kind == "string":
        low = draw(st.integers(0, 20))
        high = draw(st.one_of(st.none(), st.integers(low, 40)))
        return {"type": "string", "minLength": low} | ({"maxLength": high} if high is not None else {})
    if kind in ("integer", "number"):
        schema: dict[str, Any] = {"type": kind}
        floor = draw(st.one_of(st.none(), st.integers(-50, 50)))
        span = draw(st.integers(2, 100))
        if floor is not None:
            schema["exclusiveMinimum" if draw(st.booleans()) else "minimum"] = floor
        if draw(st.booleans()):
            top = (floor if floor is not None else 0) + span
            schema["exclusiveMaximum" if draw(st.booleans()) else "maximum"] = top
        return schema
    if kind == "enum":
        return {"enum": draw(st.lists(st.one_of(st.text(max_size=5), st.integers()), min_size=1, max_size=4))}
    if kind == "format":
        return {
            "type": "string",
            "format": draw(st.sampled_from(["email", "date-time", "date", "uuid", "ipv4"])),
        }
    return {"type": kind}


def containers(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def obj(props: dict[str, dict[str, Any]], required: list[str], closed: bool) -> dict[str, Any]:
        keep = [k for k in required if k in props]
        return {"type": "object", "properties": props, "required": keep, "additionalProperties": not closed}

    def arr(items: dict[str, Any], low: int, extra: int) -> dict[str, Any]:
        return {"type": "array", "items": items, "minItems": low, "maxItems": low + extra}

    names = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)
    return st.one_of(
        st.builds(
            obj, st.dictionaries(names, children, max_size=4), st.lists(names, max_size=4), st.booleans()
        ),
        st.builds(arr, children, st.integers(0, 3), st.integers(0, 3)),
    )


SCHEMA = st.recursive(leaf(), containers, max_leaves=12).map(
    lambda s: (
        s if s.get("type") == "object" else {"type": "object", "properties": {"v": s}, "required": ["v"]}
    )
)


@settings(max_examples=200, deadline=None)
@given(SCHEMA)
def test_arguments_are_valid_for_generated_schemas(schema: dict[str, Any]) -> None:
    valid(schema, example_arguments(schema))


# -- the model ---------------------------------------------------------------------------------


def tools() -> tuple[ToolDef, ...]:
    return tuple(ToolDef(name=n, description=f"tool {n}", parameters=s) for n, s in SCHEMAS.items())


async def test_first_turn_calls_every_offered_tool_once_with_valid_arguments() -> None:
    request = ModelRequest(messages=(Message(role="user", content="go"),), tools=tools())
    seen = await collect(TestModel(), request)
    assert [c["name"] for c in seen.calls.values()] == list(SCHEMAS)
    assert len({c["id"] for c in seen.calls.values()}) == len(SCHEMAS)
    for call in seen.calls.values():
        valid(SCHEMAS[call["name"]], json.loads(call["arguments"]))
    assert seen.finish == Finish(
        "tool_calls", response_id=seen.finish.response_id if seen.finish else None, model="test"
    )
    assert isinstance(seen.events[-2], UsageEvent) and isinstance(seen.events[-1], Finish)
    assert seen.text == ""


async def test_the_same_request_streams_the_same_events() -> None:
    request = ModelRequest(messages=(Message(role="user", content="go"),), tools=tools())
    first, second = await collect(TestModel(), request), await collect(TestModel(chunk_size=16), request)
    assert first.events == second.events
    assert TestModel().respond(request) == TestModel().respond(request)


async def test_after_the_results_it_summarises_each_tool_and_its_status() -> None:
    calls = (
        ToolCall(id="c1", name="fs_read", arguments="{}"),
        ToolCall(id="c2", name="exec", arguments="{}", index=1),
        ToolCall(id="c3", name="deploy", arguments="{}", index=2),
        ToolCall(id="c4", name="probe", arguments="{}", index=3),
    )
    request = ModelRequest(
        messages=(
            Message(role="user", content="go"),
            Message(role="assistant", tool_calls=calls),
            Message(role="tool", tool_call_id="c1", content="hello\nworld"),
            Message(role="tool", tool_call_id="c2", content="failed: exit status 2"),
            Message(role="tool", tool_call_id="c3", content="denied before execution (nothing ran): policy"),
            Message(
                role="tool", tool_call_id="c4", content=json.dumps({"status": "unknown", "detail": "timeout"})
            ),
        ),
        tools=tools(),
    )
    seen = await collect(TestModel(reasoning=True), request)
    assert seen.calls == {}
    assert seen.finish is not None and seen.finish.reason == "stop"
    assert seen.reasoning == "read 4 tool result(s)"
    assert seen.text.splitlines() == [
        "test model saw 4 tool result(s):",
        "- fs_read [c1]: succeeded: hello world",
        "- exec [c2]: failed: failed: exit status 2",
        "- deploy [c3]: denied_before_execution: denied before execution (nothing ran): policy",
        '- probe [c4]: unknown: {"status": "unknown", "detail": "timeout"}',
    ]


async def test_without_tools_it_answers_with_an_echo() -> None:
    seen = await collect(TestModel(), ModelRequest(messages=(Message(role="user", content="ping"),)))
    assert seen.text == "test model: no tools to call; last user message: 'ping'"
    assert seen.usage is not None and seen.usage.output_tokens


async def test_a_new_user_message_starts_a_new_tool_round_with_new_ids() -> None:
    first = ModelRequest(messages=(Message(role="user", content="a"),), tools=tools()[:1])
    later = ModelRequest(
        messages=(
            Message(role="user", content="a"),
            Message(role="assistant", tool_calls=(ToolCall(id="call_1_0", name="flat", arguments="{}"),)),
            Message(role="tool", tool_call_id="call_1_0", content="ok"),
            Message(role="assistant", content="done"),
            Message(role="user", content="again"),
        ),
        tools=tools()[:1],
    )
    assert TestModel().respond(first).tool_calls[0].id == "call_1_0"
    assert TestModel().respond(later).tool_calls[0].id == "call_2_0"


def test_result_status_reads_the_model_facing_descriptions() -> None:
    assert result_status(f"{SIDE_EFFECTS_NOT_ROLLED_BACK}: reviewer said no") == "denied_after_execution"
    assert result_status("outcome unknown (it may or may not have taken effect): x") == "unknown"
    assert result_status("cancelled: stop requested") == "cancelled"
    assert result_status('{"status": "failed"}') == "failed"
    assert result_status("") == "succeeded"


async def test_discover_reports_the_offline_window() -> None:
    (descriptor,) = await TestModel().discover(None)
    assert (descriptor.provider_model_id, descriptor.window, descriptor.output_limit) == (
        "test",
        128_000,
        4_096,
    )
