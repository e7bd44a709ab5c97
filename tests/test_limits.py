"""Issue 13.7: one window / output-limit rule (``agentloom.limits``), used by the config check
at load time and by ``models.budget.resolve_descriptor``."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.limits import Limits, leaves_input_room, resolve_limits
from agentloom.models.budget import resolve_descriptor

KEYS = {"window_key": "m.window", "output_key": "m.output_limit"}
CONFIG = """\
version: 1
connections:
  local: {{preset: openai, base_url: "http://127.0.0.1:8000/v1", api_key_env: LOCAL_KEY}}
agents:
  main:
    model: {{connection: local, name: m, window: {window}, output_limit: {output}}}
"""


def config_accepts(tmp_path: Path, window: int, output: int) -> bool:
    path = tmp_path / "agentloom.yaml"
    path.write_text(CONFIG.format(window=window, output=output), encoding="utf-8")
    try:
        load_config(path)
    except ConfigError as exc:
        assert "agents.main.model.output_limit: must be less than window" in str(exc)
        return False
    return True


def descriptor_accepts(window: int, output: int) -> bool:
    try:
        resolve_descriptor(None, configured_window=window, configured_output_limit=output,
                           model="m")
    except ConfigError as exc:
        assert "leaves no room for input" in str(exc)
        return False
    return True


@pytest.mark.parametrize(("window", "output"), [(1000, 999), (1000, 1000), (1000, 1001), (2, 1)])
def test_13_7_the_config_check_and_the_descriptor_draw_the_output_line_in_the_same_place(
    tmp_path: Path, window: int, output: int,
) -> None:
    expected = leaves_input_room(window, output)
    assert config_accepts(tmp_path, window, output) is expected
    assert descriptor_accepts(window, output) is expected


def test_13_7_configured_values_win_then_the_providers_then_the_platform_default() -> None:
    assert resolve_limits(known_window=8000, known_output_limit=2000, configured_window=6000,
                          configured_output_limit=None, **KEYS) == Limits(
        window=6000, window_source="config", output_limit=2000, output_limit_source="provider")
    assert resolve_limits(known_window=None, known_output_limit=None, configured_window=100_000,
                          configured_output_limit=None, **KEYS) == Limits(
        window=100_000, window_source="config", output_limit=4096,
        output_limit_source="platform_default")
    assert resolve_limits(known_window=8000, known_output_limit=None, configured_window=None,
                          configured_output_limit=None, **KEYS).output_limit == 2000


@pytest.mark.parametrize(("known", "configured", "message"), [
    ((None, None), (None, None), "the context window is unknown"),
    ((8000, None), (9000, None), "m.window=9000 exceeds the provider's window 8000"),
    ((8000, 1000), (None, 2000), "m.output_limit=2000 exceeds the provider's output limit 1000"),
    ((8000, 8000), (None, None), "the provider's output limit 8000 leaves no room"),
    ((None, None), (0, None), "m.window must be a positive integer, not 0"),
    ((None, None), (1000, True), "m.output_limit must be a positive integer, not True"),
])
def test_13_7_each_broken_rule_names_the_key_to_set(
    known: tuple[int | None, int | None], configured: tuple[int | None, int | None], message: str,
) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_limits(known_window=known[0], known_output_limit=known[1],
                       configured_window=configured[0], configured_output_limit=configured[1],
                       **KEYS)
