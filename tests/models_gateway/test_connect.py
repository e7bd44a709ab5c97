"""``connection_for`` wires a preset into a ``Connection``; a missing key is a clear error that
names the variable and never shows a value."""

from __future__ import annotations

import pytest

from agentloom.errors import ConfigError
from agentloom.models.connect import connection_for
from agentloom.models.presets import load_preset
from agentloom.models.reasoning import DeltaExtractor

from .support import API_KEY, request


def test_a_preset_connection_takes_the_variant_endpoint_and_the_key_from_its_variable() -> None:
    conn = connection_for("glm", model="glm-4.7", variant="coding_plan",
                          environ={"ZHIPUAI_API_KEY": API_KEY})
    preset = load_preset("glm")
    assert conn.base_url == preset.endpoint("coding_plan").base_url
    assert conn.api_key == API_KEY and API_KEY not in repr(conn)
    assert conn.model == "glm-4.7" and conn.name == "glm" and conn.protocol == "chat"
    assert conn.body_builder is not None
    assert conn.body_builder(request(), conn) == preset.build_body(request(), model="glm-4.7")
    first, second = conn.extractor(), conn.extractor()
    assert isinstance(first, DeltaExtractor) and first is not second
    assert conn.status_category is not None and conn.finish_mapper is not None
    assert conn.usage_mapper is not None


def test_a_responses_preset_makes_a_responses_connection() -> None:
    conn = connection_for("openai-responses", model="gpt-5", api_key=API_KEY)
    assert conn.protocol == "responses"


def test_a_missing_key_names_the_variable_and_never_a_value() -> None:
    with pytest.raises(ConfigError) as caught:
        connection_for("deepseek", model="deepseek-chat", environ={"OTHER": "sk-not-this-one-123"})
    assert caught.value.code == "MODEL_API_KEY_MISSING"
    assert "'DEEPSEEK_API_KEY'" in str(caught.value)
    assert "sk-not-this-one" not in str(caught.value)
    with pytest.raises(ConfigError, match="'MY_KEY'"):
        connection_for("deepseek", model="deepseek-chat", api_key_env="MY_KEY", environ={"MY_KEY": ""})


def test_an_unknown_variant_or_an_unsupported_capability_is_refused_up_front() -> None:
    with pytest.raises(ConfigError) as caught:
        connection_for("deepseek", model="deepseek-chat", variant="coding_plan", api_key=API_KEY)
    assert caught.value.code == "MODEL_PRESET_VARIANT"
    with pytest.raises(ConfigError) as caught:
        connection_for("deepseek", model="deepseek-reasoner", api_key=API_KEY, capabilities={"tools"})
    assert caught.value.code == "MODEL_CAPABILITY_UNSUPPORTED"
    with pytest.raises(ConfigError) as caught:
        connection_for("nope", model="m", api_key=API_KEY)
    assert caught.value.code == "MODEL_PRESET_UNKNOWN"
