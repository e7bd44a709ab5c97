"""Issue #12 point 8: a provider failure points back to the config — a refused connection names
the config's connection and its base URL, a 401 / 403 the variable its API key came from —
and never shows the key. Through ``agentloom run --json`` against 127.0.0.1."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloom.testing.openai_server import ScriptedOpenAIServer, Status

from .support import Cli

KEY = "sk-test-" + "k" * 24


def _project(tmp_path: Path, base_url: str, *, connection: str = "mylocal", variable: str = "MY_LOCAL_KEY"
             ) -> Path:
    config = tmp_path / "agentloom.yaml"
    config.write_text(
        f'version: 1\nconnections:\n  {connection}: {{preset: openai, base_url: "{base_url}", '
        f"api_key_env: {variable}}}\n"
        f"agents:\n  main:\n    model: {{connection: {connection}, name: scripted-model, "
        "window: 128000}\n",
        encoding="utf-8")
    return config


def _failed_run(cli: Cli, config: Path) -> dict[str, str]:
    result = cli("run", str(config), "say hello", "--store", cli.store, "--json")
    assert result.exit_code == 1, result.stderr
    out = json.loads(result.stdout)
    assert out["status"] == "failed"
    error: dict[str, str] = out["error"]
    assert KEY not in result.stdout + result.stderr
    return error


@pytest.fixture
def free_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def test_12_8_a_refused_connection_names_the_configs_connection_and_its_base_url(
    tmp_path: Path, cli: Cli, free_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_LOCAL_KEY", KEY)
    base_url = f"http://127.0.0.1:{free_port}/v1"

    error = _failed_run(cli, _project(tmp_path, base_url))

    assert error["code"] == "MODEL_CONNECT_FAILED"
    assert "connection 'mylocal'" in error["message"]
    assert f"base URL {base_url}" in error["message"]
    assert "connections.mylocal.base_url" in error["message"]


def test_12_8_a_base_url_in_a_message_never_carries_user_info_or_a_query(
    tmp_path: Path, cli: Cli, free_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_LOCAL_KEY", KEY)
    config = _project(tmp_path, f"http://proxyuser:hunter2-secret@127.0.0.1:{free_port}/v1?token=abc123")

    error = _failed_run(cli, config)

    assert f"base URL http://127.0.0.1:{free_port}/v1)" in error["message"]
    assert "hunter2" not in error["message"] and "abc123" not in error["message"]


@pytest.mark.parametrize("status", [401, 403])
def test_12_8_a_401_or_403_names_the_api_key_variable_of_the_connection(
    status: int, tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOSTED_KEY", KEY)
    refusal = {"message": "Incorrect API key provided", "type": "invalid_request_error",
               "code": "invalid_api_key"}
    server.script([Status(status, body={"error": refusal})])

    error = _failed_run(cli, _project(tmp_path, server.base_url, connection="hosted", variable="HOSTED_KEY"))

    assert error["code"] == "MODEL_PERMISSION_DENIED"
    message = error["message"]
    assert f"answered HTTP {status}: Incorrect API key provided" in message
    assert "connection 'hosted'" in message and f"base URL {server.base_url}" in message
    assert "environment variable 'HOSTED_KEY' (connections.hosted.api_key_env)" in message


def test_12_8_the_key_hint_survives_a_long_provider_message(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOSTED_KEY", KEY)
    server.script([Status(401, body={"error": {"message": "no. " * 400, "type": "auth"}})])

    error = _failed_run(cli, _project(tmp_path, server.base_url, connection="hosted", variable="HOSTED_KEY"))

    assert "environment variable 'HOSTED_KEY'" in error["message"]
