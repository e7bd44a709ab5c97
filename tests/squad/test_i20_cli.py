"""Issue 20 through the CLI, as a user's script calls it: ``agentloom run CONFIG --workflow
NAME TASK --json`` prints ``{"run_id", "status", "output"}`` (exit 3 while it waits for a
person), ``agentloom runs approve``, ``agentloom runs resume``, and ``runs show RUN --json``
with ``nodes`` — a YAML workflow whose agent runs on the offline script model, on SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.cli.support import Cli

CONFIG = """\
version: 1
agents:
  writer:
    model: {builtin: script, path: writer.yaml}
workflows:
  release:
    nodes:
      plan:    {agent: writer, input: "{{ input.task }}"}
      build:   {capability: fs.write, args: {path: dist.txt, content: "{{ nodes.plan.output }}"}}
      approve: {wait: approval, question: "Ship {{ nodes.plan.output }}?"}
      check:   {capability: fs.read, args: {path: dist.txt}}
    edges:
      - {from: plan, to: build}
      - {from: build, to: approve}
      - {from: approve, to: check, when: approved}
sandbox: {backend: none}
"""


def _project(tmp_path: Path) -> Path:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "writer.yaml").write_text("turns:\n  - text: version 2.0\n", encoding="utf-8")
    (folder / "agentloom.yaml").write_text(CONFIG, encoding="utf-8")
    return folder / "agentloom.yaml"


def _nodes(shown: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in shown["nodes"]}


def test_i20_cli_run_workflow_waits_is_approved_resumes_and_shows_its_nodes(
        tmp_path: Path, cli: Cli) -> None:
    config = _project(tmp_path)

    first = cli.json("run", str(config), "--workflow", "release", "ship it", "--store", cli.store,
                     exit_code=3)

    assert first["status"] == "waiting" and first["output"] is None
    run_id = first["run_id"]
    shown = cli.json("runs", "show", run_id, "--store", cli.store)
    nodes = _nodes(shown)
    assert [n["node"] for n in shown["nodes"]] == ["plan", "build", "approve", "check"]
    assert nodes["plan"]["status"] == "succeeded" and nodes["plan"]["output"] == "version 2.0"
    assert nodes["plan"]["kind"] == "agent" and nodes["plan"]["attempts"] == 1
    assert nodes["build"]["status"] == "succeeded" and nodes["build"]["call_id"] == "build#1"
    assert nodes["approve"]["status"] == "waiting" and nodes["check"]["status"] == "pending"
    assert shown["current"] == ["approve"]
    (approval,) = shown["diagnosis"]["waiting_for"]["approvals"]
    assert approval["question"] == "Ship version 2.0?"
    drawn = cli("runs", "show", run_id, "--store", cli.store).stdout  # the terminal's view
    assert "workflow release  current: approve" in drawn
    lines = {line.split()[1]: line for line in drawn.splitlines() if line.startswith("  ")
             and len(line.split()) > 2 and line.split()[0] in "✓✗▶⏸·"}
    assert lines["plan"].split()[:4] == ["✓", "plan", "agent", "succeeded"]
    assert "→ version 2.0" in lines["plan"]
    assert lines["approve"].split()[:4] == ["⏸", "approve", "wait", "waiting"]
    assert lines["check"].split()[:4] == ["·", "check", "capability", "pending"]
    assert "approve → check, when approved" in drawn

    answered = cli("runs", "approve", run_id, approval["operation_id"], "--store", cli.store)
    assert answered.exit_code == 0, answered.stderr
    done = cli.json("runs", "resume", run_id, "--store", cli.store)

    assert done["status"] == "succeeded"
    assert "version 2.0" in done["output"]  # check: fs.read of the file build wrote
    nodes = _nodes(cli.json("runs", "show", run_id, "--store", cli.store))
    assert {n: v["status"] for n, v in nodes.items()} == {
        "plan": "succeeded", "build": "succeeded", "approve": "succeeded", "check": "succeeded"}
    assert nodes["approve"]["output"] == "approved"
    events = cli.json("runs", "events", run_id, "--store", cli.store)
    completed = [e for e in events if e["type"] == "node.completed"]
    assert [(e["node"], e["call_id"], e["status"]) for e in completed] == [
        ("plan", "plan#1", "succeeded"), ("build", "build#1", "succeeded"),
        ("approve", "approve#1", "succeeded"), ("check", "check#1", "succeeded")]


def test_i20_cli_an_unknown_workflow_is_a_usage_error_naming_the_defined_ones(
        tmp_path: Path, cli: Cli) -> None:
    config = _project(tmp_path)

    result = cli("run", str(config), "--workflow", "relase", "x", "--store", cli.store)

    assert result.exit_code == 2
    assert "no workflow named 'relase'; did you mean 'release'?" in result.stderr
    assert "defined: release" in result.stderr


async def test_i20_a_workflows_limits_reach_its_runs_and_enter_its_release(tmp_path: Path) -> None:
    from agentloom.assembly import runtime_from_config
    from agentloom.config import load_config

    config = _project(tmp_path)
    plain = runtime_from_config(load_config(config), store="memory://")
    limits = "    limits: {run_deadline_s: 5, max_total_tokens: 900}\n    edges:\n"
    config.write_text(CONFIG.replace("    edges:\n", limits, 1), encoding="utf-8")
    limited = runtime_from_config(load_config(config), store="memory://")

    program = limited.programs["workflow:release"]
    assert program.limits.run_deadline_s == 5 and program.limits.max_total_tokens == 900
    assert plain.programs["workflow:release"].limits.run_deadline_s == 3600
    assert limited.release_id != plain.release_id
    await plain.aclose()
    await limited.aclose()
