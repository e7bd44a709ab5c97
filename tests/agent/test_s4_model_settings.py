"""Model settings from config reach the wire, what a model cannot serve is refused when the
runtime is built, and a tool-less agent offers no tools (000 §4, §4.6; issue #14 items 5-7).

Each test loads a real YAML config whose connection points a shipped preset at the scripted
OpenAI-wire server on 127.0.0.1, builds the runtime (or runs the real CLI in process) on a
SQLite file under ``tmp_path``, and reads what the server received.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.support import Cli

from agentloom.agent import AgentSpec, Runtime
from agentloom.assembly import runtime_from_config
from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.models.connect import connection_for
from agentloom.models.types import ThinkParams
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

WAIT_S = 30.0
KEY_ENV = "S4_TEST_API_KEY"


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    srv = ScriptedOpenAIServer().start()
    yield srv
    srv.close()


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key")
    monkeypatch.delenv("AGENTLOOM_STORE", raising=False)


def write_config(folder: Path, srv: ScriptedOpenAIServer, *, preset: str, model: str,
                 model_keys: str = "", tools: str = "[]") -> Path:
    if "window:" not in model_keys and not model.startswith("deepseek-"):
        model_keys += "      window: 64000\n"  # the scripted server lists none of these models
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "agentloom.yaml"
    path.write_text(
        "version: 1\n"
        "connections:\n"
        f"  wire: {{preset: {preset}, base_url: '{srv.base_url}', api_key_env: {KEY_ENV}}}\n"
        "agents:\n"
        "  main:\n"
        "    model:\n"
        "      connection: wire\n"
        f"      name: {model}\n"
        f"{model_keys}"
        f"    tools: {tools}\n", encoding="utf-8")
    return path


async def run_config(path: Path, store: str, task: str = "hello") -> Any:
    rt = runtime_from_config(load_config(path), store=store,
                             sandbox_backend="none")
    try:
        return await asyncio.wait_for(rt.run(task), WAIT_S)
    finally:
        await rt.aclose()


# -- item 5: model.think and model.max_output_tokens ---------------------------------------


@pytest.mark.parametrize(("preset", "model", "keys", "expected"), [
    ("deepseek", "deepseek-chat", "      think: off\n      max_output_tokens: 512\n",
     {"thinking": {"type": "disabled"}, "max_tokens": 512}),
    ("deepseek", "deepseek-chat", "      think: high\n",
     {"reasoning_effort": "high"}),
    ("glm", "glm-4.6", "      think: on\n      max_output_tokens: 300\n",
     {"thinking": {"type": "enabled"}, "max_tokens": 300}),
    ("aliyun", "qwen-plus", "      think: off\n      max_output_tokens: 64\n",
     {"enable_thinking": False, "max_completion_tokens": 64}),
    ("minimax", "MiniMax-M2", "      max_output_tokens: 2048\n",
     {"max_completion_tokens": 2048}),
    ("openai", "o4-mini", "      think: low\n      max_output_tokens: 1000\n",
     {"reasoning_effort": "low", "max_completion_tokens": 1000}),
])
async def test_s4_model_think_and_max_output_tokens_reach_the_request_body(
    tmp_path: Path, server: ScriptedOpenAIServer, preset: str, model: str, keys: str,
    expected: dict[str, Any],
) -> None:
    server.script(chat_turn("done"))
    path = write_config(tmp_path / "p", server, preset=preset, model=model, model_keys=keys)

    result = await run_config(path, f"sqlite:///{tmp_path / 'store.db'}")

    assert result.status == "succeeded", result.error
    body = server.model_requests[0].json
    assert {k: body.get(k) for k in expected} == expected


async def test_s4_model_settings_unset_send_no_think_or_limit(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    server.script(chat_turn("done"))
    path = write_config(tmp_path / "p", server, preset="deepseek", model="deepseek-chat")

    result = await run_config(path, f"sqlite:///{tmp_path / 'store.db'}")

    assert result.status == "succeeded", result.error
    body = server.model_requests[0].json
    assert "thinking" not in body and "reasoning_effort" not in body and "max_tokens" not in body


@pytest.mark.parametrize(("keys", "problem"), [
    ("      think: maybe\n", "agents.main.model.think"),
    ("      think: max\n", "agents.main.model.think"),
    ("      max_output_tokens: 0\n", "agents.main.model.max_output_tokens"),
    ("      max_output_tokens: many\n", "agents.main.model.max_output_tokens"),
    ("      window: 1000\n      max_output_tokens: 1000\n", "agents.main.model.max_output_tokens"),
])
def test_s4_bad_model_settings_are_config_errors_naming_the_key(
    tmp_path: Path, server: ScriptedOpenAIServer, keys: str, problem: str,
) -> None:
    path = write_config(tmp_path / "p", server, preset="deepseek", model="deepseek-chat",
                        model_keys=keys)

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert problem in caught.value.error.message


# -- item 6: unsupported capabilities refused when the runtime is built ----------------------


@pytest.mark.parametrize(("preset", "model", "keys", "tools", "capability"), [
    ("deepseek", "deepseek-reasoner", "", "[fs.read]", "tools"),
    ("deepseek", "deepseek-reasoner", "      think: off\n", "[]", "think_toggle"),
    ("openai", "o4-mini", "      think: on\n", "[]", "think_toggle"),
    ("openai", "gpt-4o", "      think: high\n", "[]", "think_effort"),
    ("minimax", "MiniMax-M2", "      think: off\n", "[]", "think_toggle"),
])
def test_s4_6_unsupported_capability_is_refused_when_the_runtime_is_built(
    tmp_path: Path, server: ScriptedOpenAIServer, preset: str, model: str, keys: str,
    tools: str, capability: str,
) -> None:
    path = write_config(tmp_path / "p", server, preset=preset, model=model, model_keys=keys,
                        tools=tools)
    config = load_config(path)

    with pytest.raises(ConfigError) as caught:
        runtime_from_config(config, store=f"sqlite:///{tmp_path / 'store.db'}")

    message = caught.value.error.message
    assert caught.value.code == "CONFIG_INVALID"
    assert "agents.main.model" in message
    assert repr(model) in message and repr(preset) in message and repr(capability) in message
    assert not server.requests  # refused before anything was sent


def test_s4_6_python_api_runtime_refuses_a_tool_less_model_with_tools(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    model = connection_for("deepseek", model="deepseek-reasoner", base_url=server.base_url,
                           api_key="test")

    with pytest.raises(ConfigError) as caught:
        Runtime([AgentSpec(name="main", model=model, tools=("fs.read",))],
                store=f"sqlite:///{tmp_path / 'store.db'}", workspace_root=tmp_path / "ws")

    assert caught.value.code == "MODEL_CAPABILITY_UNSUPPORTED"
    message = caught.value.error.message
    assert "agent 'main'" in message and "'deepseek-reasoner'" in message
    assert "'deepseek'" in message and "'tools'" in message


def test_s4_6_python_api_runtime_refuses_think_the_preset_lacks(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    model = connection_for("openai", model="gpt-4o", base_url=server.base_url, api_key="test")

    with pytest.raises(ConfigError) as caught:
        Runtime([AgentSpec(name="main", model=model, think=ThinkParams(effort="high"))],
                store=f"sqlite:///{tmp_path / 'store.db'}", workspace_root=tmp_path / "ws")

    assert caught.value.code == "MODEL_CAPABILITY_UNSUPPORTED"
    assert "'think_effort'" in caught.value.error.message


def test_s4_6_cli_run_refuses_deepseek_reasoner_with_tools(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    path = write_config(tmp_path / "p", server, preset="deepseek", model="deepseek-reasoner",
                        tools="[fs.read]")

    result = Cli(store)("run", str(path), "hello", "--store", store)

    assert result.exit_code != 0
    assert "'deepseek-reasoner'" in result.stderr and "'tools'" in result.stderr
    assert not server.requests


# -- item 7: a tool-less agent offers no tools -----------------------------------------------


async def test_s4_7_tool_less_agent_on_a_tool_less_model_runs_end_to_end(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    server.script(chat_turn("the answer is 4"))
    path = write_config(tmp_path / "p", server, preset="deepseek", model="deepseek-reasoner")

    result = await run_config(path, f"sqlite:///{tmp_path / 'store.db'}", "2 + 2?")

    assert result.status == "succeeded", result.error
    assert result.output == "the answer is 4"
    body = server.model_requests[0].json
    assert body["model"] == "deepseek-reasoner"
    assert "tools" not in body


async def test_s4_7_tool_less_agent_is_not_offered_result_read(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    server.script(chat_turn("done"))
    path = write_config(tmp_path / "p", server, preset="openai", model="gpt-4o")

    result = await run_config(path, f"sqlite:///{tmp_path / 'store.db'}")

    assert result.status == "succeeded", result.error
    assert "tools" not in server.model_requests[0].json


async def test_s4_7_an_agent_with_tools_is_still_offered_result_read(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    server.script(chat_turn("done"))
    path = write_config(tmp_path / "p", server, preset="openai", model="gpt-4o",
                        tools="[fs.read]")

    result = await run_config(path, f"sqlite:///{tmp_path / 'store.db'}")

    assert result.status == "succeeded", result.error
    offered = [t["function"]["name"] for t in server.model_requests[0].json["tools"]]
    assert offered == ["fs_read", "result_read"]


def test_s4_7_cli_runs_a_tool_less_agent_on_deepseek_reasoner(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    server.script(chat_turn("four"))
    store = f"sqlite:///{tmp_path / 'store.db'}"
    path = write_config(tmp_path / "p", server, preset="deepseek", model="deepseek-reasoner")

    out = Cli(store).json("run", str(path), "2 + 2?", "--store", store)

    assert out["status"] == "succeeded", out.get("error")
    assert out["output"] == "four"
    assert "tools" not in server.model_requests[0].json


async def test_s4_model_settings_are_part_of_the_release(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    ids = []
    for keys in ("", "      think: off\n", "      think: on\n", "      max_output_tokens: 99\n"):
        path = write_config(tmp_path / f"p{len(ids)}", server, preset="deepseek",
                            model="deepseek-chat", model_keys=keys)
        rt = runtime_from_config(load_config(path), store=store)
        ids.append(rt.release_id)
        await rt.aclose()

    assert len(set(ids)) == len(ids)
