"""A preset plugs into the adapters' ``Connection``: the preset builds the body, makes a fresh
reasoning extractor per Attempt and maps usage, finish reasons and status codes."""

from __future__ import annotations

import pytest

from agentloom.models.ports import Connection
from agentloom.models.presets import list_presets, load_preset
from agentloom.models.reasoning import DeltaExtractor
from agentloom.models.types import ThinkParams, Usage

from .support import request

MODELS = {
    "openai": "gpt-5",
    "openai-responses": "gpt-5",
    "deepseek": "deepseek-v4-pro",
    "glm": "glm-5.2",
    "aliyun": "qwen-plus",
    "minimax": "MiniMax-M2.5",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
    "openrouter": "openai/gpt-5",
    "ollama": "qwen3:8b",
    "vllm": "Qwen/Qwen3-8B",
    "lmstudio": "qwen/qwen3-8b",
}


@pytest.mark.parametrize("name", list_presets())
def test_a_connection_built_from_a_preset_speaks_that_preset(name: str) -> None:
    preset, model = load_preset(name), MODELS[name]
    endpoint = preset.endpoint()
    connection = Connection(
        base_url=endpoint.base_url, api_key="sk-test", model=model, **preset.connection_kwargs(model)
    )
    effort = preset.supports("think_effort", model=model)
    req = request(max_output_tokens=64, think=ThinkParams(effort="high") if effort else None)
    assert connection.body_builder is not None
    assert connection.body_builder(req, connection) == preset.build_body(req, model=model)
    assert connection.protocol == preset.protocol
    first, second = connection.extractor(), connection.extractor()
    assert isinstance(first, DeltaExtractor) and first is not second
    assert connection.usage_mapper is not None
    assert connection.usage_mapper({"total_tokens": 9}) == Usage(total_tokens=9)
    assert connection.finish_mapper is not None and connection.finish_mapper("stop") == "stop"
    include = preset.request.stream_usage == "include_usage"
    assert (connection.stream_options is not None) == include
