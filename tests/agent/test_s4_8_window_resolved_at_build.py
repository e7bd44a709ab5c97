"""Every agent runs with a known window (000 §4; issue #14 item 8).

When a runtime is built — from YAML or from Python — each agent's window W is resolved: the
configured ``model.window`` (it may narrow, never widen what is known), else the window its
preset documents for the model, else what the provider's ``GET /models`` listing states (where
the preset discovers), else the build is refused naming ``agents.<agent>.model.window``. O is
the configured output limit, else the provider's, else ``min(4096, W // 4)`` labelled
``platform_default``. The loop then always has a budget: a request larger than the window
ends ``CONTEXT_WINDOW_EXCEEDED`` instead of being sent unchecked.

Real components: YAML configs loaded from ``tmp_path``, the scripted OpenAI-wire server on
127.0.0.1 (its ``/v1/models`` listing is the discovery edge), SQLite stores, the real CLI.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.support import Cli

from agentloom.agent import AgentSpec, Runtime
from agentloom.assembly import agent_specs, runtime_from_config
from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.models.connect import connection_for
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

WAIT_S = 30.0
KEY_ENV = "S4_8_TEST_API_KEY"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key")
    monkeypatch.delenv("AGENTLOOM_STORE", raising=False)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def write_config(folder: Path, base_url: str, *, preset: str, model: str, keys: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "agentloom.yaml"
    path.write_text(
        "version: 1\n"
        f"connections:\n  wire: {{preset: {preset}, base_url: '{base_url}', api_key_env: {KEY_ENV}}}\n"
        "agents:\n"
        "  coder:\n"
        "    model:\n"
        "      connection: wire\n"
        f"      name: {model}\n"
        f"{keys}"
        "    tools: []\n", encoding="utf-8")
    return path


def gets(srv: ScriptedOpenAIServer) -> list[str]:
    return [r.path for r in srv.requests if r.method == "GET"]


# -- refused: nobody knows the window ------------------------------------------------------


def test_s4_8_a_yaml_agent_whose_window_nobody_knows_is_refused_naming_the_key(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    # glm documents no window for glm-4.6 and does not discover: nothing to ask
    path = write_config(tmp_path / "p", server.base_url, preset="glm", model="glm-4.6")

    with pytest.raises(ConfigError) as caught:
        runtime_from_config(load_config(path), store=f"sqlite:///{tmp_path / 'store.db'}")

    assert caught.value.code == "CONFIG_INVALID"
    message = caught.value.error.message
    assert "agents.coder.model.window" in message
    assert "agent 'coder'" in message and "'glm-4.6'" in message
    assert server.requests == []  # refused before anything was asked or sent


def test_s4_8_python_agent_whose_window_nobody_knows_is_refused_like_a_capability(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    model = connection_for("minimax", model="MiniMax-M2", base_url=server.base_url, api_key="k")

    with pytest.raises(ConfigError) as caught:
        Runtime([AgentSpec(name="main", model=model)], store=f"sqlite:///{tmp_path / 's.db'}",
                workspace_root=tmp_path / "ws")

    assert caught.value.code == "MODEL_WINDOW_UNKNOWN"
    message = caught.value.error.message
    assert "agent 'main'" in message and "'MiniMax-M2'" in message
    assert "agents.main.model.window" in message


def test_s4_8_a_model_the_listing_does_not_state_a_window_for_is_refused_saying_why(
    tmp_path: Path,
) -> None:
    listed = [{"id": "bare-model", "object": "model", "created": 0, "owned_by": "me"}]
    with ScriptedOpenAIServer(models=listed) as srv:
        for model, why in (("bare-model", "states no window"), ("missing-model", "does not list")):
            path = write_config(tmp_path / model, srv.base_url, preset="openai", model=model)
            with pytest.raises(ConfigError) as caught:
                agent_specs(load_config(path))
            message = caught.value.error.message
            assert "agents.coder.model.window" in message and why in message
            assert f"{srv.base_url}/models" in message


def test_s4_8_cli_run_refuses_an_agent_without_a_known_window(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    server.script(chat_turn("never sent"))
    store = f"sqlite:///{tmp_path / 'store.db'}"
    path = write_config(tmp_path / "p", server.base_url, preset="aliyun", model="qwen-plus")

    result = Cli(store)("run", str(path), "hello", "--store", store)

    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "CONFIG_INVALID" in result.stderr
    assert "agents.coder.model.window" in result.stderr and "'qwen-plus'" in result.stderr
    assert server.model_requests == []


# -- resolved: documented by the preset, discovered, configured --------------------------------


def test_s4_8_a_preset_documented_model_gets_its_window_and_the_platform_output_reserve(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    path = write_config(tmp_path / "p", server.base_url, preset="deepseek", model="deepseek-chat")

    (spec,) = agent_specs(load_config(path))

    assert (spec.window, spec.output_limit) == (128_000, 4096)  # O = min(4096, W // 4)
    assert spec.descriptor is not None
    assert (spec.descriptor.source, spec.descriptor.output_limit_source) == (
        "provider", "platform_default")
    assert gets(server) == []  # documented: nothing to discover


@pytest.mark.parametrize(("entry", "window", "output", "output_source"), [
    ({"max_model_len": 32_768}, 32_768, 4096, "platform_default"),  # vLLM
    ({"context_length": 200_000, "top_provider": {"max_completion_tokens": 16_000}},
     200_000, 16_000, "provider"),  # OpenRouter
])
def test_s4_8_discovery_reads_the_window_from_the_models_listing_once_at_build(
    tmp_path: Path, entry: dict[str, Any], window: int, output: int, output_source: str,
) -> None:
    listed = [{"id": "local-llm", "object": "model", "created": 0, "owned_by": "me", **entry}]
    with ScriptedOpenAIServer(models=listed) as srv:
        path = write_config(tmp_path / "p", srv.base_url, preset="openai", model="local-llm")
        (spec,) = agent_specs(load_config(path))
        python = AgentSpec(name="main", model=connection_for(
            "openai", model="local-llm", base_url=srv.base_url, api_key="k"))
        asked = gets(srv)

    for built in (spec, python):
        assert (built.window, built.output_limit) == (window, output)
        assert built.descriptor is not None
        assert (built.descriptor.source, built.descriptor.output_limit_source) == (
            "provider", output_source)
        assert built.descriptor.fetched_at is not None
    assert asked == ["/v1/models", "/v1/models"]  # once per build


def test_s4_8_a_configured_window_wider_than_the_known_one_is_refused(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    path = write_config(tmp_path / "p", server.base_url, preset="deepseek", model="deepseek-chat",
                        keys="      window: 200000\n")

    with pytest.raises(ConfigError) as caught:
        agent_specs(load_config(path))

    assert caught.value.code == "CONFIG_INVALID"
    message = caught.value.error.message
    assert "agents.coder.model.window" in message and "128000" in message

    model = connection_for("deepseek", model="deepseek-chat", base_url=server.base_url,
                           api_key="k")
    with pytest.raises(ConfigError) as python:
        AgentSpec(name="main", model=model, window=200_000)
    assert python.value.code == "MODEL_WINDOW_INVALID"
    narrower = AgentSpec(name="main", model=model, window=64_000)  # narrowing is fine
    assert narrower.descriptor is not None
    assert (narrower.window, narrower.descriptor.source) == (64_000, "config")


# -- the budget is always there ----------------------------------------------------------------


async def test_s4_8_a_request_larger_than_the_discovered_window_fails_context_window_exceeded(
    tmp_path: Path,
) -> None:
    listed = [{"id": "small-llm", "object": "model", "created": 0, "owned_by": "me",
               "max_model_len": 1000}]
    with ScriptedOpenAIServer(models=listed) as srv:
        srv.script(chat_turn("this answer must never be asked for"))
        path = write_config(tmp_path / "p", srv.base_url, preset="openai", model="small-llm")
        rt = runtime_from_config(load_config(path), store=f"sqlite:///{tmp_path / 's.db'}",
                                 sandbox_backend="none")
        try:
            task = "summarise this: " + "word " * 3000
            result = await asyncio.wait_for(rt.run(task, agent="coder"), WAIT_S)
        finally:
            await rt.aclose()
        sent = srv.model_requests

    assert result.status == "failed"
    assert result.error is not None and result.error.code == "CONTEXT_WINDOW_EXCEEDED"
    assert sent == []  # never sent unchecked
