"""A release that asks for a capability its preset lacks does not compile; the error names both
the capability and the preset. Nothing is silently dropped from a request."""

from __future__ import annotations

import pytest

from agentloom.errors import ConfigError
from agentloom.models.presets import capabilities_for, load_preset
from agentloom.models.types import Message, ModelRequest, ThinkParams

from .support import READ, request

HI = (Message(role="user", content="hi"),)


@pytest.mark.parametrize(
    ("preset", "model", "capability"),
    [
        ("glm", "glm-4.7", "json_schema"),  # json_object only
        ("deepseek", "deepseek-v4-pro", "json_schema"),
        ("aliyun", "qwen-plus", "think_effort"),  # enable_thinking only, no effort
        ("glm", "glm-5.1", "think_effort"),  # effort exists from GLM-5.2
        ("minimax", "MiniMax-M2.5", "think_toggle"),  # M2.x always thinks
        ("minimax", "MiniMax-M2.5", "json_object"),
        ("openai", "gpt-4o", "think_effort"),  # not a reasoning model
        ("openai", "gpt-5", "think_toggle"),
        ("deepseek", "deepseek-reasoner", "tools"),  # legacy: no function calling
        ("glm", "glm-4.7", "parallel_tool_calls"),
    ],
)
def test_a_capability_the_preset_lacks_fails_at_compile_time_naming_both(
    preset: str, model: str, capability: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_preset(preset).check({capability}, model=model)
    message = str(caught.value)
    assert f"preset {preset!r}" in message
    assert f"capability {capability!r}" in message
    assert f"model {model!r}" in message
    assert caught.value.code == "MODEL_CAPABILITY_UNSUPPORTED"
    assert caught.value.error.category == "validation"


@pytest.mark.parametrize(
    ("preset", "model", "capabilities"),
    [
        ("glm", "glm-5.2", {"tools", "think_effort", "think_toggle", "tool_stream", "json_object"}),
        (
            "deepseek",
            "deepseek-v4-flash",
            {"tools", "think_toggle", "think_effort", "json_object", "stream_usage"},
        ),
        ("aliyun", "qwen3-max", {"tools", "think_toggle", "json_object", "reasoning"}),
        ("minimax", "MiniMax-M2.7", {"tools", "reasoning"}),
        ("openai", "gpt-5", {"tools", "think_effort", "json_schema", "parallel_tool_calls"}),
        ("openai-responses", "gpt-5", {"tools", "think_effort", "json_schema", "reasoning"}),
    ],
)
def test_supported_capabilities_pass(preset: str, model: str, capabilities: set[str]) -> None:
    load_preset(preset).check(capabilities, model=model)


def test_an_unknown_capability_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown model capability 'vision'; known: tools, reasoning"):
        load_preset("openai").check({"vision"}, model="gpt-5")


def test_a_request_needs_what_it_uses() -> None:
    assert capabilities_for(ModelRequest(messages=HI)) == frozenset()
    assert capabilities_for(request(output_format={"type": "object"}, think=ThinkParams(enabled=True))) == {
        "tools",
        "json_schema",
        "think_toggle",
    }
    assert capabilities_for(
        ModelRequest(messages=HI, output_format="json_object", think=ThinkParams(effort="low"))
    ) == {"json_object", "think_effort"}


def test_build_body_refuses_rather_than_drops_an_unsupported_request_field() -> None:
    with pytest.raises(ConfigError, match="'json_schema'"):
        load_preset("glm").build_body(
            ModelRequest(messages=HI, output_format={"type": "object"}), model="glm-4.7"
        )
    with pytest.raises(ConfigError, match="'think_effort'"):
        load_preset("aliyun").build_body(
            ModelRequest(messages=HI, think=ThinkParams(effort="high")), model="qwen-plus"
        )
    with pytest.raises(ConfigError, match="'tools'"):
        load_preset("deepseek").build_body(
            ModelRequest(messages=HI, tools=(READ,)), model="deepseek-reasoner"
        )


def test_effort_with_thinking_disabled_is_a_contradiction_not_a_guess() -> None:
    with pytest.raises(ConfigError, match=r"contradicts think\.enabled=false") as caught:
        load_preset("deepseek").build_body(
            ModelRequest(messages=HI, think=ThinkParams(enabled=False, effort="high")),
            model="deepseek-v4-pro",
        )
    assert caught.value.code == "MODEL_THINK_CONFLICT"


def test_effort_levels_map_to_each_providers_vocabulary() -> None:
    def effort(preset: str, model: str, level: str) -> object:
        body = load_preset(preset).build_body(
            ModelRequest(messages=HI, think=ThinkParams(effort=level)),  # type: ignore[arg-type]
            model=model,
        )
        return body.get("reasoning_effort", body.get("reasoning"))

    assert [
        effort("deepseek", "deepseek-v4-pro", lv) for lv in ("minimal", "low", "medium", "high", "max")
    ] == [
        "low",
        "low",
        "high",
        "high",
        "max",
    ]
    assert [effort("glm", "glm-5.2", lv) for lv in ("minimal", "medium", "max")] == ["high", "high", "max"]
    assert effort("openai-responses", "gpt-5", "low") == {"effort": "low"}


def test_a_non_positive_output_limit_is_refused() -> None:
    with pytest.raises(ConfigError, match="max_output_tokens must be positive"):
        load_preset("openai").build_body(ModelRequest(messages=HI, max_output_tokens=0), model="gpt-5")
