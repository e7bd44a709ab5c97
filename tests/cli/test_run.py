"""``agentloom run`` and ``agentloom init``: exit codes, ``--json`` output, the live view, where
the task and the store come from. In process (typer's CliRunner), offline, on SQLite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli.scaffold import FILES

from .support import Cli, write_project

EXHAUSTED = """\
  - tool_calls:
      - name: fs_write
        arguments: {path: a.txt, content: a}
"""


def test_cli_init_then_run_json_prints_run_id_status_output(project: Path, cli: Cli) -> None:
    result = cli("run", str(project / "agentloom.yaml"), "write a note", "--store", cli.store, "--json")

    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)  # stdout is exactly one JSON object
    assert out["status"] == "succeeded"
    assert out["run_id"] and out["agent"] == "main" and out["error"] is None
    assert out["output"] == "I wrote hello.txt, read it back, listed the workspace and ran echo."


def test_cli_init_writes_the_three_files_and_refuses_to_overwrite_without_force(
    tmp_path: Path, cli: Cli
) -> None:
    folder = tmp_path / "p"
    first = cli.json("init", str(folder))
    assert sorted(Path(f).name for f in first["files"]) == sorted(FILES)
    (folder / "hooks.py").write_text("# mine\n", encoding="utf-8")

    again = cli("init", str(folder))
    assert again.exit_code == 2
    assert "--force" in again.stderr and "hooks.py" in again.stderr
    assert (folder / "hooks.py").read_text(encoding="utf-8") == "# mine\n"

    forced = cli("init", str(folder), "--force")
    assert forced.exit_code == 0
    assert (folder / "hooks.py").read_text(encoding="utf-8") == FILES["hooks.py"]


def test_cli_run_live_view_shows_each_call_with_role_call_id_status_then_the_answer(
    project: Path, cli: Cli
) -> None:
    result = cli("run", str(project / "agentloom.yaml"), "write a note", "--store", cli.store)

    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    calls = [line.split() for line in lines if line.startswith("main ")]
    assert [c[1:3] for c in calls] == [
        ["model", "turn"], ["tool", "fs.write"], ["model", "turn"], ["tool", "fs.read"],
        ["model", "turn"], ["tool", "fs.list"], ["tool", "exec"], ["model", "turn"]]
    assert any("[call_1_1] succeeded" in line for line in lines)
    assert any("exec [call_3_2] succeeded" in line and '"exit_code": 0' in line for line in lines)
    assert "succeeded after 4 step(s)" in result.stdout
    answer = lines.index("I wrote hello.txt, read it back, listed the workspace and ran echo.")
    # then where its files are (removed here), and where to look: the run's operations and
    # events, in the store it used
    run_id = next(line.split()[1] for line in lines if line.startswith("run ") and "succeeded" in line)
    assert lines[answer + 2:] == [
        "The run's folder was removed when it ended; keep its files with --workdir PATH (a "
        "folder of yours), --session ID, or workspace.keep: true",
        "",
        "Every call is recorded. See them with:",
        f"  agentloom runs show {run_id} --store {cli.store}",
        f"  agentloom runs events {run_id} --store {cli.store}"]


def test_cli_run_reads_the_task_from_stdin_when_it_is_omitted(project: Path, cli: Cli) -> None:
    out = cli.json("run", str(project / "agentloom.yaml"), "--store", cli.store,
                   input="a task from stdin\n")
    shown = cli.json("runs", "show", out["run_id"], "--store", cli.store)
    assert shown["task"] == "a task from stdin"


def test_cli_run_with_an_empty_task_exits_2(project: Path, cli: Cli) -> None:
    result = cli("run", str(project / "agentloom.yaml"), "--store", cli.store, input="  \n")
    assert result.exit_code == 2
    assert "task is empty" in result.stderr


def test_cli_run_config_error_exits_2_and_names_the_key_path(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("version: 1\nagents:\n  main:\n    model: {builtin: test}\n"
                      "    tools: [fs.read, fs.raed]\n", encoding="utf-8")

    result = cli("run", str(config), "x", "--store", cli.store, "--json")

    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "CONFIG_INVALID"  # --json: an error object
    assert "agents.main.tools[1]" in result.stderr and "fs.raed" in result.stderr


def test_cli_run_missing_config_file_and_unknown_agent_exit_2(project: Path, cli: Cli) -> None:
    missing = cli("run", str(project / "nope.yaml"), "x", "--store", cli.store)
    assert missing.exit_code == 2 and "no such config file" in missing.stderr

    unknown = cli("run", str(project / "agentloom.yaml"), "x", "--agent", "planner", "--store", cli.store)
    assert unknown.exit_code == 2 and "'planner'" in unknown.stderr and "main" in unknown.stderr


def test_12_4_cli_run_tells_the_script_model_a_tool_was_not_offered_and_it_corrects_itself(
    tmp_path: Path, cli: Cli
) -> None:
    config = write_project(tmp_path / "p", """\
  - tool_calls:
      - {id: bad, name: fs_delete, arguments: {path: a.txt}}
  - expect: {role: tool, contains: ["tool 'fs_delete' is not offered", "you can call: fs_read"]}
    text: I cannot delete files here
""", tools=["fs.read"])

    out = cli.json("run", str(config), "delete it", "--store", cli.store)

    assert out["status"] == "succeeded" and out["output"] == "I cannot delete files here"
    shown = cli.json("runs", "show", out["run_id"], "--store", cli.store)
    (refused,) = [o for o in shown["operations"] if o["kind"] == "tool"]
    assert (refused["capability"], refused["call_id"], refused["status"]) == (
        "fs_delete", "bad", "failed")
    assert refused["attempts"] == {"count": 0, "items": []}
    assert refused["error"]["code"] == "TOOL_NOT_OFFERED"
    human = cli("runs", "show", out["run_id"], "--store", cli.store)
    assert "tool fs_delete [bad]" in human.stdout and "attempts: 0" in human.stdout


def test_12_4_cli_run_exits_1_with_tool_errors_exceeded_after_the_configured_limit(
    tmp_path: Path, cli: Cli
) -> None:
    bad = "  - tool_calls:\n      - {name: fs_delete, arguments: {path: a.txt}}\n"
    config = write_project(tmp_path / "p", bad * 3 + "  - text: never\n", tools=["fs.read"],
                           extra="    limits: {max_tool_errors: 2}\n")

    out = cli.json("run", str(config), "delete it", "--store", cli.store, exit_code=1)

    assert out["status"] == "failed" and out["output"] is None and out["steps"] == 2
    assert out["error"]["code"] == "TOOL_ERRORS_EXCEEDED"
    assert "2 turns in a row" in out["error"]["message"]
    assert "TOOL_NOT_OFFERED: tool 'fs_delete' is not offered" in out["error"]["message"]


def test_cli_run_exits_1_when_the_script_is_exhausted(tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", EXHAUSTED)

    result = cli("run", str(config), "write", "--store", cli.store)

    assert result.exit_code == 1
    assert "failed after" in result.stdout and "SCRIPT_EXHAUSTED" in result.stdout


def test_cli_run_store_defaults_to_sqlite_beside_the_config(project: Path, cli: Cli) -> None:
    out = cli.json("run", str(project / "agentloom.yaml"), "write a note")

    assert (project / ".agentloom" / "agentloom.db").is_file()
    listed = cli.json("runs", "list", "--config", str(project / "agentloom.yaml"))
    assert [r["run_id"] for r in listed] == [out["run_id"]]


def test_cli_run_agentloom_store_env_overrides_the_config_default(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLOOM_STORE", cli.store)
    out = cli.json("run", str(project / "agentloom.yaml"), "write a note")

    assert not (project / ".agentloom" / "agentloom.db").exists()
    assert cli.json("runs", "list")[0]["run_id"] == out["run_id"]


def test_cli_run_config_hook_denies_exec_and_the_run_goes_on(project: Path, cli: Cli) -> None:
    turns = (project / "turns.yaml").read_text(encoding="utf-8")
    (project / "turns.yaml").write_text(
        turns.replace("argv: [echo, note written]", "argv: [rm, -rf, /work]")
        .replace("contains: note written", "contains: not allowed"), encoding="utf-8")

    out = cli.json("run", str(project / "agentloom.yaml"), "write a note", "--store", cli.store)

    assert out["status"] == "succeeded"
    shown = cli.json("runs", "show", out["run_id"], "--store", cli.store)
    (op,) = [o for o in shown["operations"] if o["capability"] == "exec"]
    assert op["status"] == "denied" and op["executed_arguments"] is None
    assert op["attempts"] == {"count": 0, "items": []}
    assert op["hooks"][0]["hook_id"] == "exec-guard" and op["hooks"][0]["decision"] == "deny"
    assert "rm is not allowed here" in op["reason"]


@pytest.mark.parametrize("argv", [
    ["rm", "-rf", "/work"], ["/bin/rm", "x"], ["sh", "-c", "rm -rf /work"],
    ["bash", "-c", "rm x"], ["env", "rm", "x"], ["command", "rm", "x"],
    ["python3", "-c", "import shutil"], ["./echo", "x"], ["/tmp/echo", "x"]])
def test_i34_the_scaffolded_exec_guard_holds_against_its_bypasses(argv: list[str]) -> None:
    scope: dict[str, Any] = {}
    exec(compile(FILES["hooks.py"], "hooks.py", "exec"), scope)  # the file agentloom init writes
    guard = scope["exec_guard"]
    assert guard({"payload": {"argv": argv}})["decision"] == "deny"
    assert guard({"payload": {"argv": ["echo", "hi"]}})["decision"] == "allow"
    assert guard({"payload": {"argv": ["/usr/bin/ls"]}})["decision"] == "allow"
