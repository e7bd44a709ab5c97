"""Issue 36 (6): a preset variant may take no key or an optional one, and may name optional
headers read from the environment; a file that says so wrongly is refused naming the key."""

from __future__ import annotations

import importlib.resources
from typing import Any

import pytest
import yaml

from agentloom.errors import ConfigError
from agentloom.models.connect import connection_for
from agentloom.models.presets import load_preset, parse_preset


def shipped(name: str) -> dict[str, Any]:
    text = (importlib.resources.files("agentloom.models.preset_data") / f"{name}.yaml").read_text("utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


@pytest.mark.parametrize(("name", "url", "variable", "optional"), [
    ("anthropic", "https://api.anthropic.com/v1/", "ANTHROPIC_API_KEY", False),
    ("gemini", "https://generativelanguage.googleapis.com/v1beta/openai/", "GEMINI_API_KEY", False),
    ("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", False),
    ("ollama", "http://localhost:11434/v1", None, False),
    ("vllm", "http://localhost:8000/v1", "VLLM_API_KEY", True),
    ("lmstudio", "http://localhost:1234/v1", "LM_API_TOKEN", True),
])
def test_i36_6_the_new_presets_have_their_documented_endpoints(
    name: str, url: str, variable: str | None, optional: bool
) -> None:
    endpoint = load_preset(name).endpoint()
    assert (endpoint.base_url, endpoint.api_key_env, endpoint.api_key_optional) == (url, variable, optional)


def test_i36_6_an_optional_key_without_a_variable_is_refused_naming_the_key() -> None:
    data = shipped("vllm")
    data["variants"]["default"].pop("api_key_env")
    with pytest.raises(ConfigError, match=r"key 'variants.default.api_key_optional': needs api_key_env"):
        parse_preset(data, source="vllm.yaml")


def test_i36_6_a_header_read_from_a_bad_variable_name_is_refused() -> None:
    data = shipped("openrouter")
    data["request"]["headers_env"]["X-Title"] = "app name"
    with pytest.raises(ConfigError, match=r"key 'request.headers_env.X-Title': must name an environment"):
        parse_preset(data, source="openrouter.yaml")


def test_i36_6_optional_headers_are_sent_only_when_their_variable_is_set() -> None:
    env = {"OPENROUTER_API_KEY": "sk-or-1234", "OPENROUTER_APP_NAME": "My app"}
    connection = connection_for("openrouter", model="openai/gpt-5", environ=env)
    assert dict(connection.extra_headers) == {"X-Title": "My app"}
    assert "sk-or-1234" not in repr(connection)
