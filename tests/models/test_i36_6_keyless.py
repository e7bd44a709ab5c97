"""Issue 36 (6): ``api_key_env`` is optional where the endpoint needs no key — a local base URL
or a preset that takes no key — and such a connection sends no ``Authorization`` header at
all; where a key is needed and missing, the error names the variable and the fix. Through
``agentloom run --json`` against the scripted server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentloom.cli.main import app
from agentloom.errors import ConfigError
from agentloom.models.connect import connection_for, is_local_url, key_rule
from agentloom.models.presets import load_preset
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

KEYS = ("OPENAI_API_KEY", "VLLM_API_KEY", "LM_API_TOKEN", "MY_KEY")


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


def run(tmp_path: Path, connection: str, *, window: str = "") -> tuple[int, Any, str]:
    config = tmp_path / "agentloom.yaml"
    config.write_text(
        f"version: 1\nconnections:\n  local: {connection}\n"
        f"agents:\n  main:\n    model: {{connection: local, name: scripted-model{window}}}\n",
        encoding="utf-8")
    store = f"sqlite:///{tmp_path / 'store.db'}"
    result = CliRunner().invoke(app, ["run", str(config), "say hello", "--store", store, "--json"],
                                catch_exceptions=False)
    try:
        out = json.loads(result.stdout)
    except ValueError:
        out = None
    return result.exit_code, out, result.stdout + result.stderr


def test_i36_6_a_keyless_preset_runs_without_any_key_and_sends_no_authorization(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    server.script(chat_turn("hello from ollama"))
    code, out, text = run(tmp_path, f'{{preset: ollama, base_url: "{server.base_url}"}}',
                          window=", window: 32000")
    assert code == 0, text
    assert out["status"] == "succeeded"
    assert "authorization" not in server.model_requests[0].headers


def test_i36_6_a_local_base_url_needs_no_key_even_on_a_keyed_preset(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    server.script(chat_turn("hello from a local server"))
    code, out, text = run(tmp_path, f'{{preset: openai, base_url: "{server.base_url}"}}')
    assert code == 0, text
    assert out["status"] == "succeeded"
    assert [r.path for r in server.requests] == ["/v1/models", "/v1/chat/completions"]  # window discovered
    assert all("authorization" not in r.headers for r in server.requests)


def test_i36_6_a_set_key_is_still_sent_to_a_local_server(
    tmp_path: Path, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "token-abc123")
    server.script(chat_turn("hello"))
    code, _, text = run(tmp_path, f'{{preset: vllm, base_url: "{server.base_url}", api_key_env: MY_KEY}}')
    assert code == 0, text
    assert server.model_requests[0].headers["authorization"] == "Bearer token-abc123"


def test_i36_6_a_variable_the_config_names_is_required_even_for_a_local_server(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    code, out, _ = run(tmp_path, f'{{preset: vllm, base_url: "{server.base_url}", api_key_env: MY_KEY}}')
    assert code == 2 and out["error"]["code"] == "MODEL_API_KEY_MISSING"
    assert "connections.local.api_key_env: the environment variable 'MY_KEY'" in out["error"]["message"]
    assert server.requests == []


def test_i36_6_a_remote_endpoint_without_its_key_names_the_variable_and_the_fix(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, '{preset: openai, base_url: "https://llm.example.invalid/v1"}',
                       window=", window: 32000")
    assert code == 2
    assert out["error"]["code"] == "MODEL_API_KEY_MISSING"
    message = out["error"]["message"]
    assert "connections.local.api_key_env" in message and "'OPENAI_API_KEY' is not set" in message
    assert "export it" in message


@pytest.mark.parametrize(("url", "local"), [
    ("http://localhost:11434/v1", True), ("http://127.0.0.1:8000/v1", True), ("http://[::1]:1234/v1", True),
    ("http://127.3.2.1/v1", True), ("http://app.localhost/v1", True), ("https://api.openai.com/v1", False),
    ("http://10.0.0.5:8000/v1", False), ("http://localhost.example.com/v1", False), ("not a url", False),
])
def test_i36_6_what_counts_as_a_local_base_url(url: str, local: bool) -> None:
    assert is_local_url(url) is local


def test_i36_6_the_key_rule_per_preset() -> None:
    def rule(preset: str, base_url: str | None = None, api_key_env: str | None = None) -> tuple[Any, bool]:
        found = key_rule(load_preset(preset).endpoint(), base_url=base_url, api_key_env=api_key_env)
        return found.variable, found.required

    assert rule("openai") == ("OPENAI_API_KEY", True)
    assert rule("openai", "http://127.0.0.1:9/v1") == ("OPENAI_API_KEY", False)
    assert rule("openai", "http://127.0.0.1:9/v1", "OPENAI_API_KEY") == ("OPENAI_API_KEY", False)
    assert rule("openai", "http://127.0.0.1:9/v1", "MY_KEY") == ("MY_KEY", True)  # named: required
    assert rule("vllm", None, "VLLM_API_KEY") == ("VLLM_API_KEY", False)
    assert rule("ollama") == (None, False)
    assert rule("ollama", "https://ollama.example.com/v1", "MY_KEY") == ("MY_KEY", True)
    assert rule("vllm") == ("VLLM_API_KEY", False)
    assert rule("vllm", "https://vllm.example.com/v1") == ("VLLM_API_KEY", False)
    assert rule("vllm", "https://vllm.example.com/v1", "MY_KEY") == ("MY_KEY", True)
    assert rule("lmstudio") == ("LM_API_TOKEN", False)
    assert rule("anthropic") == ("ANTHROPIC_API_KEY", True)


def test_i36_6_connection_for_refuses_a_missing_required_key_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"'GEMINI_API_KEY' is not set or empty; export it") as info:
        connection_for("gemini", model="gemini-2.5-flash", environ={})
    assert info.value.code == "MODEL_API_KEY_MISSING"
    keyless = connection_for("ollama", model="llama3.2", environ={})
    assert (keyless.api_key, keyless.api_key_env, keyless.base_url) == ("", None, "http://localhost:11434/v1")
