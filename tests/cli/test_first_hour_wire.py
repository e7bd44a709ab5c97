"""Issue 12, points 4, 6 and 7 through the CLI with the model on the real OpenAI wire.

The scripted server on 127.0.0.1 plays the model: a call of a tool that was not offered is
told to it and it corrects itself (or, calling it again and again, ends the run with
``TOOL_ERRORS_EXCEEDED``); a write of a nested path succeeds at once; an agent with an output
schema asks for it in ``response_format`` and ``run --json`` prints the parsed answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

from .support import SERVER_KEY_ENV, Cli, openai_project


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.setenv(SERVER_KEY_ENV, "sk-test")
    with ScriptedOpenAIServer() as srv:
        yield srv


def _call(call_id: str, name: str, **arguments: Any) -> list[Any]:
    return chat_turn("", tool_calls=[(call_id, name, json.dumps(arguments))])


def _told(server: ScriptedOpenAIServer, request: int, call_id: str) -> str:
    (content,) = [m["content"] for m in server.model_requests[request].json["messages"]
                  if m["role"] == "tool" and m["tool_call_id"] == call_id]
    return str(content)


def test_12_4_over_the_wire_web_search_is_told_not_offered_then_the_right_tool_succeeds(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    server.script(_call("s1", "web_search", query="release date"),
                  _call("w1", "fs_write", path="found.md", content="not searched"),
                  chat_turn("wrote found.md"))
    config = openai_project(tmp_path / "p", server.base_url, tools=("fs.write",))

    out = cli.json("run", str(config), "find the release date", "--store", cli.store)

    assert (out["status"], out["output"]) == ("succeeded", "wrote found.md")
    told = _told(server, 1, "s1")
    assert "tool 'web_search' is not offered" in told and "fs_write" in told
    ops = cli.json("runs", "show", out["run_id"], "--store", cli.store)["operations"]
    (bad,) = [o for o in ops if o["call_id"] == "s1"]
    assert bad["status"] == "failed" and bad["attempts"]["count"] == 0
    assert [o["status"] for o in ops if o["capability"] == "fs.write"] == ["succeeded"]


def test_12_4_over_the_wire_a_model_that_keeps_calling_web_search_ends_tool_errors_exceeded(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    for i in range(5):
        server.script(_call(f"s{i}", "web_search", query="again"))
    config = openai_project(tmp_path / "p", server.base_url, tools=("fs.write",))

    result = cli("run", str(config), "search", "--store", cli.store, "--json")

    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "TOOL_ERRORS_EXCEEDED" and "web_search" in error["message"]
    assert len(server.model_requests) == 3  # the default limit: 3 turns in a row


def test_12_6_over_the_wire_a_write_of_a_nested_path_succeeds_at_once(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    server.script(_call("w1", "fs_write", path="notes/2026/hello.txt", content="hi"),
                  chat_turn("wrote it"))
    config = openai_project(tmp_path / "p", server.base_url, tools=("fs.write",),
                            extra="workspace: {keep: true}\n")

    out = cli.json("run", str(config), "keep a note", "--store", cli.store)

    assert out["status"] == "succeeded"
    assert '"path": "notes/2026/hello.txt"' in _told(server, 1, "w1")
    assert (Path(out["workspace"]) / "notes" / "2026" / "hello.txt").read_text() == "hi"


def test_12_7_over_the_wire_the_output_schema_is_requested_and_the_answer_parsed(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    server.script(chat_turn(json.dumps({"title": "Release", "ready": True})))
    schema = ('{type: object, required: [title, ready], properties: '
              '{title: {type: string}, ready: {type: boolean}}}')
    config = openai_project(tmp_path / "p", server.base_url, tools=(),
                            extra=f"    output: {{schema: {schema}}}\n")

    out = cli.json("run", str(config), "summarise", "--store", cli.store)

    assert out["status"] == "succeeded"
    assert out["output"] == {"title": "Release", "ready": True}  # parsed JSON, not a string
    sent = server.model_requests[0].json["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"]["required"] == ["title", "ready"]
