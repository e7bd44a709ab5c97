"""Window W and output reserve O: W from the provider or the agent config (never guessed); O
falls back to min(4096, W // 4) labelled platform_default."""

from __future__ import annotations

import pytest

from agentloom.errors import ConfigError
from agentloom.models.budget import platform_output_reserve, resolve_descriptor
from agentloom.models.types import ModelDescriptor


def provider(window: int | None, output: int | None) -> ModelDescriptor:
    return ModelDescriptor(
        provider_model_id="m-1",
        window=window,
        output_limit=output,
        source="provider",
        fetched_at=1700.0,
        extras={"owned_by": "x"},
    )


@pytest.mark.parametrize(("window", "reserve"), [(8_000, 2_000), (16_384, 4_096), (200_000, 4_096), (7, 1)])
def test_platform_reserve_is_min_4096_and_a_quarter_of_the_window(window: int, reserve: int) -> None:
    assert platform_output_reserve(window) == reserve


def test_unknown_output_limit_uses_the_labelled_platform_default() -> None:
    d = resolve_descriptor(
        provider(10_000, None), configured_window=None, configured_output_limit=None, model="m"
    )
    assert (d.window, d.source) == (10_000, "provider")
    assert (d.output_limit, d.output_limit_source) == (2_500, "platform_default")
    assert (d.provider_model_id, d.fetched_at, dict(d.extras)) == ("m-1", 1700.0, {"owned_by": "x"})


def test_config_window_without_provider_data_and_platform_output() -> None:
    d = resolve_descriptor(None, configured_window=128_000, configured_output_limit=None, model="glm-4.7")
    assert (d.provider_model_id, d.window, d.source) == ("glm-4.7", 128_000, "config")
    assert (d.output_limit, d.output_limit_source) == (4_096, "platform_default")
    assert d.fetched_at is None


def test_a_missing_window_is_a_config_error_naming_the_key_to_set() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_descriptor(
            provider(None, 8_000), configured_window=None, configured_output_limit=None, model="m"
        )
    assert "agents.<agent>.model.window" in str(caught.value)
    assert caught.value.code == "MODEL_WINDOW_UNKNOWN"
    with pytest.raises(ConfigError, match=r"set agents\.coder\.model\.window"):
        resolve_descriptor(
            None,
            configured_window=None,
            configured_output_limit=None,
            model="m",
            config_path="agents.coder.model",
        )


def test_provider_values_are_used_and_labelled_as_the_providers() -> None:
    d = resolve_descriptor(
        provider(64_000, 8_000), configured_window=None, configured_output_limit=None, model="m"
    )
    assert (d.window, d.source, d.output_limit, d.output_limit_source) == (
        64_000,
        "provider",
        8_000,
        "provider",
    )


def test_config_may_narrow_but_not_widen_the_providers_values() -> None:
    d = resolve_descriptor(
        provider(64_000, 8_000), configured_window=32_000, configured_output_limit=2_000, model="m"
    )
    assert (d.window, d.source, d.output_limit, d.output_limit_source) == (32_000, "config", 2_000, "config")
    with pytest.raises(ConfigError, match="exceeds the provider's window 64000"):
        resolve_descriptor(
            provider(64_000, None), configured_window=100_000, configured_output_limit=None, model="m"
        )
    with pytest.raises(ConfigError, match="exceeds the provider's output limit 8000"):
        resolve_descriptor(
            provider(64_000, 8_000), configured_window=None, configured_output_limit=9_000, model="m"
        )


def test_an_output_limit_that_leaves_no_room_for_input_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"output_limit=5000 leaves no room for input"):
        resolve_descriptor(None, configured_window=5_000, configured_output_limit=5_000, model="m")
    with pytest.raises(ConfigError, match=r"set agents\.<agent>\.model\.output_limit below 32000"):
        resolve_descriptor(
            provider(64_000, 64_000), configured_window=32_000, configured_output_limit=None, model="m"
        )


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_configured_values_must_be_positive_integers(bad: object) -> None:
    with pytest.raises(ConfigError, match="must be a positive integer"):
        resolve_descriptor(None, configured_window=bad, configured_output_limit=None, model="m")  # type: ignore[arg-type]
