"""Issue 18: the config key `telemetry: {enabled: …}` reaches the runtime a config builds."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.assembly import runtime_from_config
from agentloom.config import load_config


@pytest.mark.parametrize(("key", "traced"), [("", False), ("telemetry: {enabled: true}\n", True),
                                             ("telemetry: {enabled: false}\n", False)])
async def test_i18_5_the_telemetry_config_key_turns_tracing_on_and_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, traced: bool) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    if key.endswith("false}\n"):  # false wins over the environment
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    config = tmp_path / "agentloom.yaml"
    config.write_text("version: 1\nagents:\n  main:\n    model: {builtin: test}\n" + key,
                      encoding="utf-8")
    runtime = runtime_from_config(load_config(config), store=f"sqlite:///{tmp_path / 'a.db'}")
    try:
        assert (runtime.tracing is not None) is traced
    finally:
        await runtime.aclose()
