"""The model payload and response wire forms round-trip exactly, the payload schema accepts
every payload ``request_to_payload`` makes, and a model connection's catalog entry is fixed."""

from __future__ import annotations

from typing import Any

import pytest

from agentloom.catalog import CapabilityRegistry
from agentloom.models.gateway import (
    ModelCallFailed,
    check_response,
    is_model_capability,
    payload_to_request,
    request_to_payload,
    response_from_dict,
    response_to_dict,
)
from agentloom.models.manager import model_capability
from agentloom.models.offline import TestModel
from agentloom.models.types import (
    Message,
    ModelRequest,
    ModelResponse,
    ThinkParams,
    ToolCall,
    ToolDef,
    Usage,
)

from .support import WEATHER

CALL = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}', index=0)
REQUESTS = [
    ModelRequest(messages=(Message(role="user", content="hi"),)),
    ModelRequest(
        messages=(
            Message(role="system", content="be brief"),
            Message(role="user", content="weather?"),
            Message(role="assistant", content=None, tool_calls=(CALL,), reasoning="look it up",
                    reasoning_details=({"type": "reasoning.text", "text": "look", "index": 0},)),
            Message(role="tool", content="sunny", tool_call_id="call_1", name="get_weather"),
            Message(role="assistant", content="", reasoning_details=()),
        ),
        tools=(WEATHER,),
        output_format={"name": "answer", "schema": {"type": "object"}, "strict": True},
        think=ThinkParams(enabled=True, effort="max"),
        max_output_tokens=512,
    ),
    ModelRequest(messages=(Message(role="user", content="json please"),), output_format="json_object",
                 think=ThinkParams(enabled=False)),
]
RESPONSES = [
    ModelResponse(text="hello"),
    ModelResponse(text="", reasoning="thinking", tool_calls=(CALL,), finish_reason="tool_calls",
                  reasoning_details=({"type": "reasoning.text", "text": "t", "index": 0},),
                  usage=Usage(input_tokens=10, output_tokens=5, total_tokens=15, reasoning_tokens=2),
                  model="m", response_id="r1"),
]


@pytest.mark.parametrize("req", REQUESTS)
def test_a_request_round_trips_through_its_payload_exactly(req: ModelRequest) -> None:
    payload = request_to_payload(req)
    assert payload_to_request(payload) == req
    assert payload_to_request(payload, purpose="compaction") == ModelRequest(
        messages=req.messages, tools=req.tools, output_format=req.output_format, think=req.think,
        max_output_tokens=req.max_output_tokens, purpose="compaction")


@pytest.mark.parametrize("response", RESPONSES)
def test_a_response_round_trips_through_its_dict_exactly(response: ModelResponse) -> None:
    assert response_from_dict(response_to_dict(response)) == response


def test_the_payload_schema_accepts_every_payload_and_refuses_unknown_fields() -> None:
    registry = CapabilityRegistry()
    registry.publish("rel", [model_capability("main")], roles={"main": ["model.main"]})
    catalog = registry.for_role("rel", "main")
    validator = registry.validator(catalog, "model.main")
    for req in REQUESTS:
        assert validator.errors(request_to_payload(req)) == []
    payload: dict[str, Any] = request_to_payload(REQUESTS[0])
    assert validator.errors({**payload, "model": "gpt-5"}) != []
    assert validator.errors({**payload, "messages": [{"role": "robot", "content": "x"}]}) != []
    assert validator.errors({**payload, "max_output_tokens": 0}) != []


def test_a_model_connection_has_a_fixed_catalog_entry() -> None:
    spec = model_capability("main")
    assert (spec.capability_key, spec.exposed_name, spec.kind, spec.handler_ref) == (
        "model.main", "model_main", "builtin", "model:main")
    assert spec.input_schema["additionalProperties"] is False
    assert is_model_capability(spec)


SCHEMA_REFUSAL = "arguments for model_main do not match its schema: "
ROLES = "['system', 'user', 'assistant', 'tool']"


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([{"role": "robot", "content": "hi"}], f"$.messages[0].role: 'robot' is not one of {ROLES}"),
        ([{"role": "user", "content": 3}], "$.messages[0].content: 3 is not of type 'string', 'null'"),
        ([{"content": "hi"}], "$.messages[0]: 'role' is a required property"),
        ([{"role": "user", "content": "x", "extra": 1}],
         "$.messages[0]: Additional properties are not allowed ('extra' was unexpected)"),
        ([{"role": "assistant", "tool_calls": [{"id": "c", "name": "f", "arguments": {}}]}],
         "$.messages[0].tool_calls[0].arguments: {} is not of type 'string'"),
        ([], "$.messages: [] should be non-empty"),
    ],
)
async def test_an_invalid_model_payload_on_the_bus_is_refused_before_any_attempt(
    make: Any, messages: list[Any], error: str,
) -> None:
    # The request the gateway sends (bus → pipeline final checks), with a payload it did not make.
    g = await make({"main": TestModel()})
    envelope = await g.kernel.bus.request("model_main", {"messages": messages}, g.ctx,
                                          event_type="model")
    assert (envelope.outcome, envelope.attempts) == ("failed", 0)
    assert envelope.error is not None
    assert (envelope.error.code, envelope.error.message) == ("INVALID_ARGUMENTS", SCHEMA_REFUSAL + error)


async def test_generate_refuses_an_invalid_request_with_the_schema_errors(make: Any) -> None:
    g = await make({"main": TestModel()})
    cases = [
        (ModelRequest(messages=(Message(role="robot", content="x"),)),  # type: ignore[arg-type]
         f"$.messages[0].role: 'robot' is not one of {ROLES}"),
        (ModelRequest(messages=(Message(role="user", content=5),)),  # type: ignore[arg-type]
         "$.messages[0].content: 5 is not of type 'string', 'null'"),
        (ModelRequest(messages=(Message(role="user", content="x"),), max_output_tokens=0,
                      tools=(ToolDef(name="", description="d", parameters={}),)),
         "$.max_output_tokens: 0 is less than the minimum of 1; $.tools[0].name: '' should be non-empty"),
    ]
    for req, error in cases:
        with pytest.raises(ModelCallFailed) as caught:
            await g.generate(req)
        assert (caught.value.outcome, caught.value.error.code) == ("failed", "INVALID_ARGUMENTS")
        assert caught.value.error.message == SCHEMA_REFUSAL + error
    assert all(op["data"]["attempts"] == 0 for op in g.operations())


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"messages": "hi"}, "messages must be an array"),
        ({"messages": [{"role": "robot"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content must be str"),
        ({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "name": 5}]},
         "messages[1].name must be str"),
        ({"messages": [], "max_output_tokens": True}, "payload.max_output_tokens must be int, not bool"),
        ({"messages": [], "think": {"effort": "extreme"}}, "think.effort"),
        ({"messages": [], "output_format": "yaml"}, "output_format"),
    ],
)
def test_a_malformed_payload_is_a_clear_value_error(payload: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        payload_to_request(payload)


def test_12_4_check_response_refuses_only_nameless_calls_and_missing_or_repeated_ids() -> None:
    assert check_response(RESPONSES[1]) is None
    bad = ModelResponse(text="", tool_calls=(ToolCall(id="c", name="get_weather", arguments="[1]"),))
    assert check_response(bad) is None  # that call cannot run, the response is valid
    twice = ModelResponse(text="", tool_calls=(CALL, CALL))
    assert "repeated id" in (check_response(twice) or "")
    nameless = ModelResponse(text="", tool_calls=(ToolCall(id="c", name="", arguments="{}"),))
    assert "no tool name" in (check_response(nameless) or "")
    assert "missing or repeated id" in (check_response(ModelResponse(text="", tool_calls=(
        ToolCall(id="", name="get_weather", arguments="{}"),))) or "")
    assert check_response(ModelResponse(text="x")) is None
