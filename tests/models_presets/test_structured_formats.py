"""Structured output formats (#12 point 7): a preset connection states which formats it can
send (its ``json_schema`` / ``json_object`` capabilities), the protocol defaults send the named
schema form ``{name, schema, strict}`` as the presets do, and the offline models answer in the
requested format."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from agentloom.models.adapters import build_chat_body
from agentloom.models.adapters.openai_responses import build_responses_body
from agentloom.models.connect import connection_for
from agentloom.models.offline import ScriptModel, TestModel
from agentloom.models.ports import Connection
from agentloom.models.presets import load_preset
from agentloom.models.types import Message, ModelRequest

MODELS = {"openai": "gpt-5", "openai-responses": "gpt-5", "deepseek": "deepseek-v4-pro",
          "glm": "glm-5.2", "aliyun": "qwen-plus", "minimax": "MiniMax-M2.5"}
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"answer": {"type": "string"},
                                                           "n": {"type": "integer", "minimum": 3}},
                          "required": ["answer", "n"]}
NAMED = {"name": "verdict", "schema": SCHEMA, "strict": True}
ASK = (Message(role="user", content="answer"),)


@pytest.mark.parametrize(("preset", "formats"), [
    ("openai", {"json_schema", "json_object"}),
    ("openai-responses", {"json_schema", "json_object"}),
    ("deepseek", {"json_object"}),
    ("glm", {"json_object"}),
    ("aliyun", {"json_object"}),
    ("minimax", set()),
])
def test_12_7_a_preset_connection_states_the_structured_formats_its_preset_supports(
    preset: str, formats: set[str]
) -> None:
    connection = connection_for(preset, model=MODELS[preset], api_key="sk-test")
    assert connection.output_formats == formats
    assert {f for f in ("json_schema", "json_object")
            if load_preset(preset).supports(f, model=MODELS[preset])} == formats


def test_12_7_a_connection_without_a_preset_sends_both_formats_and_refuses_unknown_ones() -> None:
    assert Connection(base_url="http://x", api_key="k", model="m").output_formats == {
        "json_schema", "json_object"}
    with pytest.raises(ValueError, match="unknown output formats"):
        Connection(base_url="http://x", api_key="k", model="m",
                   output_formats=frozenset({"yaml"}))  # type: ignore[arg-type]


def test_12_7_the_protocol_defaults_send_the_named_schema_form_as_the_presets_do() -> None:
    request = ModelRequest(messages=ASK, output_format=NAMED)
    chat = Connection(base_url="http://x", api_key="k", model="m")
    responses = Connection(base_url="http://x", api_key="k", model="m", protocol="responses")

    assert build_chat_body(request, chat)["response_format"] == {
        "type": "json_schema", "json_schema": NAMED}
    assert build_responses_body(request, responses)["text"] == {
        "format": {"type": "json_schema", **NAMED}}
    assert load_preset("openai").build_body(request, model="gpt-5")["response_format"] == {
        "type": "json_schema", "json_schema": NAMED}


@pytest.mark.parametrize("fmt", [NAMED, SCHEMA])
def test_12_7_the_test_model_answers_a_schema_request_with_a_valid_example(fmt: Any) -> None:
    text = TestModel().respond(ModelRequest(messages=ASK, output_format=fmt)).text
    Draft202012Validator(SCHEMA).validate(json.loads(text))
    plain = TestModel().respond(ModelRequest(messages=ASK)).text
    assert json.loads(TestModel().respond(ModelRequest(messages=ASK, output_format="json_object"))
                      .text) == {"answer": plain}


def test_12_7_the_offline_models_take_both_formats() -> None:
    assert TestModel.output_formats == ScriptModel.output_formats == {"json_schema", "json_object"}
