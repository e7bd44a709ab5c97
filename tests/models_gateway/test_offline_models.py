"""Spec 000 §9 (models) and DESIGN §1: the offline ``test`` and ``script`` models go through the
same gateway, hooks, Attempts and persistence as a real provider."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloom.models.connect import connection_for
from agentloom.models.gateway import ModelCallFailed
from agentloom.models.offline import ScriptModel, TestModel, parse_script
from agentloom.models.types import Message, ModelRequest
from agentloom.pipeline.retry import RetryPolicy
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

from .support import API_KEY, model_hook, request

SCRIPT = parse_script({
    "model": "scripted",
    "turns": [
        {"expect": {"role": "user", "contains": "weather"}, "reasoning": "Look it up.",
         "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"expect": {"role": "tool", "contains": "sunny"}, "text": "It is sunny in Paris."},
    ],
}, source="inline")


def shape(op: dict[str, Any]) -> tuple[Any, ...]:
    raw = op["data"]["raw"]
    return (op["event_type"], op["outcome"], op["phase"], raw["status"],
            [b["type"] for b in raw["content"]], sorted(raw["content"][0]["data"]))


async def test_s9_offline_test_model_runs_through_the_same_gateway_and_is_persisted_like_a_provider(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    server.script(chat_turn("Sunny."))
    provider = connection_for("openai", model="gpt-5", base_url=server.base_url, api_key=API_KEY)
    calls: list[str] = []

    def seen(event: Any) -> dict[str, Any]:
        calls.append(event["capability"])
        return {"decision": "allow"}

    g = await make({"offline": TestModel(reasoning=True), "real": provider},
                   hooks=[model_hook("seen", seen)])

    offline = await g.generate(model="offline")
    real = await g.generate(model="real")

    (call,) = offline.tool_calls
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "city"}
    assert offline.finish_reason == "tool_calls" and offline.reasoning
    assert real.text == "Sunny."
    assert calls == ["model.offline", "model.real"]
    ops = g.operations()
    assert [op["capability_key"] for op in ops] == ["model.offline", "model.real"]
    assert shape(ops[0]) == shape(ops[1])
    assert [len(g.attempts(op["operation_id"])) for op in ops] == [1, 1]
    assert g.kinds().count("model.completed") == 2


async def test_s9_offline_script_model_replays_turns_through_the_gateway(make: Any) -> None:
    g = await make({"main": ScriptModel(SCRIPT)})
    first = await g.generate()
    (call,) = first.tool_calls
    follow_up = ModelRequest(messages=(
        *request().messages,
        Message(role="assistant", content="", tool_calls=first.tool_calls, reasoning=first.reasoning),
        Message(role="tool", tool_call_id=call.id, name="get_weather", content="sunny, 24°C"),
    ), tools=request().tools)
    second = await g.generate(follow_up)

    assert json.loads(call.arguments) == {"city": "Paris"} and first.reasoning == "Look it up."
    assert second.text == "It is sunny in Paris." and second.model == "scripted"
    assert [op["outcome"] for op in g.operations()] == ["succeeded", "succeeded"]


async def test_s9_a_script_error_keeps_its_code_and_is_not_retried(make: Any) -> None:
    g = await make({"main": ScriptModel(SCRIPT)},
                   retry=RetryPolicy(enabled=True, max_attempts=3, interval_s=0.0))
    with pytest.raises(ModelCallFailed) as caught:
        await g.generate(request("no expectation matches this"))

    assert caught.value.code == "SCRIPT_EXPECTATION_FAILED"
    assert caught.value.error.category == "validation"
    assert caught.value.error.external_outcome == "not_started"
    (op,) = g.operations()
    (attempt,) = g.attempts(op["operation_id"])
    assert attempt["data"]["raw"]["error"]["code"] == "SCRIPT_EXPECTATION_FAILED"
    assert attempt["data"]["raw"]["metadata"]["incomplete"]["reason"] == "SCRIPT_EXPECTATION_FAILED"


async def test_12_4_a_scripted_call_with_unparsable_arguments_is_delivered_marked_with_its_problem(
    make: Any,
) -> None:
    script = parse_script({"turns": [{"tool_calls": [
        {"name": "get_weather", "arguments": '{"city": "Par'}]}]}, source="inline")
    g = await make({"main": ScriptModel(script)})
    response = await g.generate()

    (call,) = response.tool_calls
    assert call.arguments == '{"city": "Par'  # as the model sent it
    assert call.problem is not None and call.problem.code == "INVALID_ARGUMENTS"
    assert "not valid JSON" in call.problem.message and '"city"' in call.problem.message
    assert [op["outcome"] for op in g.operations()] == ["succeeded"]
