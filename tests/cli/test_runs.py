"""``agentloom runs list|show|events|stop|supplement``: what they read, their JSON shapes, the
store resolution order, and errors that exit 2. In process, offline, on SQLite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentloom.store import Put, WriteSet, open_store

from .support import Cli, write_project

PATCHING_HOOKS = '''
def louder(event):
    return {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/payload/argv/1", "value": "patched by a hook"}]}


def redact(event):
    return {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/result/content", "value": [{"type": "text", "text": "[redacted]"}]}]}
'''

PATCHED_TURNS = """\
  - tool_calls:
      - name: exec
        arguments: {argv: [echo, proposed by the model]}
  - expect: {role: tool, contains: "[redacted]"}
    text: done
"""

PATCH_HOOKS_CONFIG = """\
    hooks:
      - {hook_id: louder, timing: before, match: {capability: exec}, handler: {ref: "cli_patch_hooks:louder"}}
      - {hook_id: redact, timing: after, match: {capability: exec}, handler: {ref: "cli_patch_hooks:redact"}}
"""


def _run(cli: Cli, project: Path, task: str = "write a note") -> str:
    out = cli.json("run", str(project / "agentloom.yaml"), task, "--store", cli.store)
    assert out["status"] == "succeeded"
    return str(out["run_id"])


def test_cli_runs_list_json_is_newest_first_with_run_id_status(project: Path, cli: Cli) -> None:
    first, second = _run(cli, project, "first task"), _run(cli, project, "second task " + "x" * 300)

    runs = cli.json("runs", "list", "--store", cli.store)

    assert [r["run_id"] for r in runs] == [second, first]
    assert {r["status"] for r in runs} == {"succeeded"}
    assert runs[0]["agent"] == "main" and runs[0]["created_at"] >= runs[1]["created_at"]
    assert runs[1]["task"] == "first task" and len(runs[0]["task"]) <= 120  # an excerpt
    assert len(cli.json("runs", "list", "--store", cli.store, "--limit", "1")) == 1


def test_cli_runs_show_json_operations_have_attempts_hooks_and_call_ids(project: Path, cli: Cli) -> None:
    run_id = _run(cli, project)

    shown = cli.json("runs", "show", run_id, "--store", cli.store)

    assert shown["run_id"] == run_id and shown["status"] == "succeeded" and shown["task"] == "write a note"
    ops = shown["operations"]
    assert [o["capability"] for o in ops] == ["model.main", "fs.write", "model.main", "fs.read",
                                              "model.main", "fs.list", "exec", "model.main"]
    for op in ops:
        assert op["operation_id"] and op["status"] == "succeeded" and op["role"] == "main"
        assert op["attempts"]["count"] == 1
        assert op["attempts"]["items"][0]["status"] == "succeeded"
        assert isinstance(op["hooks"], list)
        assert (op["call_id"] is None) == (op["kind"] == "model")
    tools = {o["capability"]: o for o in ops if o["kind"] == "tool"}
    assert tools["fs.write"]["call_id"] == "call_1_1" and tools["exec"]["call_id"] == "call_3_2"
    assert tools["exec"]["hooks"] == [{
        "hook_id": "exec-guard", "timing": "before", "position": 0, "status": "succeeded",
        "decision": "allow", "reason": None, "diagnostic": None, "patch_error": None,
        "on_failure": None, "not_started": False}]
    assert tools["fs.read"]["proposed_arguments"] == {"path": "hello.txt"}
    assert tools["fs.read"]["executed_arguments"] == {"path": "hello.txt"}
    assert '"content": "hello from agentloom\\n"' in tools["fs.read"]["raw_result"]
    assert tools["fs.read"]["effective_result"] == tools["fs.read"]["raw_result"]


def test_cli_runs_show_puts_proposed_beside_executed_arguments_and_raw_beside_effective_result(
    tmp_path: Path, cli: Cli
) -> None:
    folder = tmp_path / "patched"
    config = write_project(folder, PATCHED_TURNS, tools=["exec"], extra=PATCH_HOOKS_CONFIG)
    (folder / "cli_patch_hooks.py").write_text(PATCHING_HOOKS, encoding="utf-8")
    out = cli.json("run", str(config), "echo", "--store", cli.store)
    assert out["status"] == "succeeded", out

    shown = cli.json("runs", "show", out["run_id"], "--store", cli.store)
    (op,) = [o for o in shown["operations"] if o["capability"] == "exec"]
    assert op["proposed_arguments"] == {"argv": ["echo", "proposed by the model"]}
    assert op["executed_arguments"] == {"argv": ["echo", "patched by a hook"]}
    assert op["arguments_changed"] is True
    assert '"stdout": "patched by a hook\\n"' in op["raw_result"]
    assert op["effective_result"] == "[redacted]" and op["result_changed"] is True
    assert [(h["hook_id"], h["timing"], h["decision"]) for h in op["hooks"]] == [
        ("louder", "before", "allow"), ("redact", "after", "allow")]

    human = cli("runs", "show", out["run_id"], "--store", cli.store)
    assert human.exit_code == 0
    assert 'proposed: {"argv": ["echo", "proposed by the model"]}' in human.stdout
    assert 'executed: {"argv": ["echo", "patched by a hook"]}' in human.stdout
    assert "effective: [redacted]" in human.stdout


def test_cli_runs_show_human_view_truncates_long_values(tmp_path: Path, cli: Cli) -> None:
    long = "y" * 2000
    config = write_project(tmp_path / "p", "  - tool_calls:\n      - name: fs_write\n"
                           f"        arguments: {{path: big.txt, content: {long}}}\n  - text: ok\n")
    out = cli.json("run", str(config), "big", "--store", cli.store)

    human = cli("runs", "show", out["run_id"], "--store", cli.store)

    assert human.exit_code == 0
    assert long not in human.stdout and "yyyy…" in human.stdout
    full = cli.json("runs", "show", out["run_id"], "--store", cli.store)
    assert full["operations"][1]["proposed_arguments"]["content"] == long


def test_cli_runs_events_json_is_the_stored_projection_oldest_first(project: Path, cli: Cli) -> None:
    run_id = _run(cli, project)

    events = cli.json("runs", "events", run_id, "--store", cli.store)

    types = [e["type"] for e in events]
    assert types[0] == "run.started" and types[-1] == "run.finished"
    assert types.count("model.call.completed") == 4 and types.count("tool.call.completed") == 4
    done = {e["call_id"]: e for e in events if e["type"] == "tool.call.completed"}
    assert set(done) == {"call_1_1", "call_2_1", "call_3_1", "call_3_2"}
    assert all(e["status"] == "succeeded" and e["role"] == "main" for e in done.values())
    assert "hello from agentloom" in done["call_2_1"]["summary"]
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)

    human = cli("runs", "events", run_id, "--store", cli.store)
    assert human.exit_code == 0 and "tool.call.completed" in human.stdout


def test_cli_runs_commands_on_a_missing_sqlite_store_exit_2_and_create_nothing(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = f"sqlite:///{tmp_path / 'nowhere' / 'x.db'}"
    for args in (["runs", "list"], ["runs", "show", "r1"], ["runs", "events", "r1"],
                 ["runs", "stop", "r1"], ["runs", "supplement", "r1", "more"],
                 ["runs", "list", "--store", missing]):
        result = cli(*args, "--json")
        assert result.exit_code == 2, args
        assert "no store at" in result.stderr
        assert result.stdout == "" or json.loads(result.stdout)["error"]["code"] == "STORE_NOT_FOUND"
    assert not (tmp_path / ".agentloom").exists() and not (tmp_path / "nowhere").exists()


def test_cli_runs_store_resolution_is_flag_then_env_then_config_then_cwd(
    tmp_path: Path, project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = str(project / "agentloom.yaml")
    in_flag_store = _run(cli, project)                                  # --store
    in_config_store = cli.json("run", config, "default store")["run_id"]  # beside the config

    def listed(*args: str) -> list[str]:
        return [r["run_id"] for r in cli.json("runs", "list", *args)]

    assert listed("--config", config) == [in_config_store]
    monkeypatch.setenv("AGENTLOOM_STORE", cli.store)
    assert listed("--config", config) == [in_flag_store]                 # env beats --config
    assert listed("--store", f"sqlite:///{project / '.agentloom' / 'agentloom.db'}") == [in_config_store]
    monkeypatch.delenv("AGENTLOOM_STORE")
    monkeypatch.chdir(project)                                           # cwd default
    assert listed() == [in_config_store]


def test_cli_runs_show_events_stop_supplement_of_an_unknown_run_exit_2(project: Path, cli: Cli) -> None:
    _run(cli, project)
    for args in (["show", "nope"], ["events", "nope"], ["stop", "nope"], ["supplement", "nope", "x"]):
        result = cli("runs", *args, "--store", cli.store)
        assert result.exit_code == 2, args
        assert "'nope'" in result.stderr


def test_cli_runs_stop_of_a_finished_run_changes_nothing(project: Path, cli: Cli) -> None:
    run_id = _run(cli, project)

    out = cli.json("runs", "stop", run_id, "--store", cli.store)

    assert out == {"run_id": run_id, "requested": False, "status": "succeeded"}


def test_cli_runs_supplement_of_a_finished_run_exits_2(project: Path, cli: Cli) -> None:
    run_id = _run(cli, project)

    result = cli("runs", "supplement", run_id, "more input", "--store", cli.store)

    assert result.exit_code == 2 and "not running" in result.stderr


def test_cli_runs_resume_of_a_finished_run_prints_its_result(project: Path, cli: Cli) -> None:
    run_id = _run(cli, project)

    out = cli.json("runs", "resume", run_id, "--config", str(project / "agentloom.yaml"),
                   "--store", cli.store)

    assert out["run_id"] == run_id and out["status"] == "succeeded"
    assert out["output"].startswith("I wrote hello.txt")
    assert len(cli.json("runs", "show", run_id, "--store", cli.store)["operations"]) == 8


def test_12_3_runs_resume_of_a_finished_run_needs_no_config(project: Path, cli: Cli) -> None:
    run_id = _run(cli, project)
    out = cli.json("runs", "resume", run_id, "--store", cli.store)
    assert out["run_id"] == run_id and out["status"] == "succeeded"


def test_12_3_runs_resume_of_a_run_without_a_recorded_config_asks_for_one(
    project: Path, cli: Cli,
) -> None:
    run_id = _run(cli, project)
    store = open_store(cli.store)
    try:  # as a run started from Python, or by an older AgentLoom, records it
        row = store.get("runs", {"run_id": run_id})
        assert row is not None and row["data"]["config"]["path"] == str(
            (project / "agentloom.yaml").absolute())
        data = {k: v for k, v in row["data"].items() if k != "config"}
        store.commit_many([WriteSet((Put("runs", {"run_id": run_id, "data": data}),))])
    finally:
        store.close()
    result = cli("runs", "resume", run_id, "--store", cli.store)
    assert result.exit_code == 2 and "CONFIG_REQUIRED" in result.stderr
    assert "--config" in result.stderr
    (project / "agentloom.yaml").rename(project / "moved.yaml")
    assert cli.json("runs", "resume", run_id, "--config", str(project / "moved.yaml"),
                    "--store", cli.store)["status"] == "succeeded"
