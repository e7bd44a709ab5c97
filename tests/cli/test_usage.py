"""Issue #12, usage totals: ``runs show`` (human and ``--json``) and ``run --json`` report the
input / output / reasoning tokens and the duration of every model call and of the run. In
process, offline: the script model and the scripted OpenAI server report known usage."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloom.testing.openai_server import Done, ScriptedOpenAIServer, chat_turn, chat_usage

from .support import Cli, write_project

TURNS = """\
  - tool_calls:
      - name: fs_write
        arguments: {path: note.txt, content: hi}
    usage: {input_tokens: 100, output_tokens: 20, reasoning_tokens: 5}
  - expect: {role: tool}
    text: done
    usage: {input_tokens: 130, output_tokens: 7}
"""


def _run(cli: Cli, config: Path) -> dict[str, object]:
    result = cli("run", str(config), "write a note", "--store", cli.store, "--json")
    assert result.exit_code == 0, result.stderr
    out: dict[str, object] = json.loads(result.stdout)
    return out


def test_12_usage_runs_show_json_has_tokens_and_duration_per_model_call_and_per_run(
    tmp_path: Path, cli: Cli
) -> None:
    run_id = _run(cli, write_project(tmp_path / "p", TURNS))["run_id"]

    shown = cli.json("runs", "show", str(run_id), "--store", cli.store)

    ops = shown["operations"]
    assert [o["capability"] for o in ops] == ["model.main", "fs.write", "model.main"]
    assert [o["usage"] for o in ops] == [
        {"input_tokens": 100, "output_tokens": 20, "reasoning_tokens": 5},
        None,  # a tool call uses no tokens
        {"input_tokens": 130, "output_tokens": 7, "reasoning_tokens": None},  # not reported
    ]
    for op in ops:
        (attempt,) = op["attempts"]["items"]
        started, finished = attempt["started_at"], attempt["finished_at"]
        assert op["duration_s"] == pytest.approx(finished - started, abs=0.001)
    assert shown["usage"] == {"input_tokens": 230, "output_tokens": 27, "reasoning_tokens": 5}
    assert shown["duration_s"] == pytest.approx(shown["updated_at"] - shown["created_at"], abs=0.001)
    assert shown["duration_s"] >= sum(o["duration_s"] for o in ops if o["kind"] == "model")


def test_12_usage_run_json_carries_the_runs_usage_totals_and_duration(tmp_path: Path, cli: Cli) -> None:
    out = _run(cli, write_project(tmp_path / "p", TURNS))

    assert out["usage"] == {"input_tokens": 230, "output_tokens": 27, "reasoning_tokens": 5}
    shown = cli.json("runs", "show", str(out["run_id"]), "--store", cli.store)
    assert out["duration_s"] == shown["duration_s"] and isinstance(out["duration_s"], float)


def test_12_usage_runs_show_prints_usage_and_duration_of_the_run_and_each_model_call(
    tmp_path: Path, cli: Cli
) -> None:
    run_id = _run(cli, write_project(tmp_path / "p", TURNS))["run_id"]

    result = cli("runs", "show", str(run_id), "--store", cli.store)

    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "  usage: 230 input, 27 output, 5 reasoning tokens" in text
    assert "     usage: 100 input, 20 output, 5 reasoning tokens" in text
    assert "     usage: 130 input, 7 output, — reasoning tokens" in text
    assert text.count("usage:") == 3  # the run and its two model calls, not the tool call
    assert "  duration: " in text
    assert text.count(" s\n") >= 4  # each operation's attempts line ends with its duration


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def test_12_usage_a_providers_reported_usage_reaches_runs_show_and_run_json(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USAGE_TEST_KEY", "sk-test")
    config = tmp_path / "agentloom.yaml"
    config.write_text(
        f'version: 1\nconnections:\n  local: {{preset: openai, base_url: "{server.base_url}", '
        "api_key_env: USAGE_TEST_KEY}\n"
        "agents:\n  main:\n    model: {connection: local, name: scripted-model}\n", encoding="utf-8")
    server.script([*chat_turn("hello", usage=None, done=False), chat_usage(12, 3, reasoning=2), Done()])

    out = _run(cli, config)

    assert out["usage"] == {"input_tokens": 12, "output_tokens": 3, "reasoning_tokens": 2}
    (op,) = cli.json("runs", "show", str(out["run_id"]), "--store", cli.store)["operations"]
    assert op["usage"] == out["usage"] and op["duration_s"] > 0
