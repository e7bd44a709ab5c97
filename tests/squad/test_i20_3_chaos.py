"""Issue 20, acceptance 3 and 003 F05 at suite size: a workflow's process SIGKILLed at a named
crash point inside a CapabilityNode's call, then ``agentloom runs resume``, on SQLite and
PostgreSQL (tests/kill style: ``AGENTLOOM_CRASH_AT``, real ``agentloom`` subprocesses).

The node's SDK tool writes a target file and appends a line to a ledger, both outside the
workspace and the store. F05: a node that was running when the process died becomes
completed only from a committed terminal record; a call that started and saved nothing is
``unknown`` — the node waits for a person with the call listed, whether the target file is
there (killed after the effect) or not (killed before it): the file never decides, and the
call is never run again by itself. Killed after ``raw_saved``, the resume delivers the saved
result once and the workflow goes on. ``bench/chaos_workflows.py`` is the full-size version
(200 random kills over 50 runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloom.store import open_store
from agentloom.store.records import get_run

pytestmark = pytest.mark.kill

TIMEOUT_S = 60
EXIT_WAITING = 3

TOOLS = '''
"""The F05 node's tool: writes the target file, then appends a ledger line."""
import os
from pathlib import Path

from agentloom import StrictInput, Tool, ToolContext


class WriteInput(StrictInput):
    name: str
    text: str


class WriteTarget(Tool[WriteInput]):
    name = "f05.write_target"
    description = "Write a target file outside the workspace."

    async def execute(self, args: WriteInput, ctx: ToolContext) -> str:
        folder = Path(os.environ["I20_F05_TARGETS"])
        (folder / args.name).write_text(args.text, encoding="utf-8")
        with (folder / "ledger.log").open("a", encoding="utf-8") as ledger:
            ledger.write(f"{ctx.operation_id} {args.name}\\n")
        return f"wrote {args.name}"


write_target = WriteTarget()
'''

CONFIG = """\
version: 1
agents:
  unused:
    model: {builtin: script, path: unused.yaml}
workflows:
  ship:
    nodes:
      write:
        capability: "i20_f05_tools:write_target"
        args: {name: target.txt, text: "{{ input.task }}"}
      seal:
        capability: "i20_f05_tools:write_target"
        args: {name: seal.txt, text: "{{ nodes.write.output }}"}
    edges:
      - {from: write, to: seal}
sandbox: {backend: none}
"""


class Project:
    """A project folder, its store and the folder the tool writes into (outside both)."""

    def __init__(self, tmp_path: Path, store: str) -> None:
        self.folder = tmp_path / "p"
        self.targets = tmp_path / "targets"
        self.folder.mkdir()
        self.targets.mkdir()
        self.store = store
        (self.folder / "i20_f05_tools.py").write_text(TOOLS, encoding="utf-8")
        (self.folder / "unused.yaml").write_text("turns:\n  - text: unused\n", encoding="utf-8")
        self.config = self.folder / "agentloom.yaml"
        self.config.write_text(CONFIG, encoding="utf-8")

    def agentloom(self, *args: str, crash_at: str | None = None
                  ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("AGENTLOOM_STORE", "AGENTLOOM_CRASH_AT")}
        env["I20_F05_TARGETS"] = str(self.targets)
        if crash_at is not None:
            env["AGENTLOOM_CRASH_AT"] = crash_at
        return subprocess.run([sys.executable, "-m", "agentloom", *args, "--store", self.store,
                               "--json"], cwd=self.folder, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT_S, check=False)

    def killed_at(self, point: str) -> str:
        """Start the workflow with a crash point; the process must die there. Its run id."""
        killed = self.agentloom("run", str(self.config), "--workflow", "ship", "v2",
                                crash_at=point)
        assert killed.returncode == -9, (killed.returncode, killed.stderr[-2000:])
        store = open_store(self.store)
        try:
            (row,) = store.query("runs")
            run = get_run(store, row["run_id"])
        finally:
            store.close()
        assert run is not None and run.ended is None
        return str(row["run_id"])

    def resume(self, run_id: str, exit_code: int) -> dict[str, Any]:
        done = self.agentloom("runs", "resume", run_id)
        assert done.returncode == exit_code, (done.returncode, done.stdout, done.stderr[-2000:])
        return dict(json.loads(done.stdout))

    def show(self, run_id: str) -> dict[str, Any]:
        from agentloom.views import run_detail

        store = open_store(self.store)
        try:
            detail = run_detail(store, run_id)
        finally:
            store.close()
        assert detail is not None
        return detail

    def ledger(self) -> list[str]:
        path = self.targets / "ledger.log"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def operations(self, run_id: str) -> dict[str, dict[str, Any]]:
        """The run's operations by the node part of their logical key (``write/1``, …)."""
        store = open_store(self.store)
        try:
            rows = store.query("operations", {"run_id": run_id})
        finally:
            store.close()
        return {r["logical_key"].split("/n/", 1)[1]: r for r in rows
                if "/n/" in r["logical_key"]}


@pytest.fixture
def project(durable_store_url: str, tmp_path: Path) -> Project:
    return Project(tmp_path, durable_store_url)


def _nodes(detail: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in detail["nodes"]}


def _assert_waits_with_the_call_listed(project: Project, run_id: str) -> dict[str, Any]:
    """The node ``write`` waits (neither success nor re-run) with its unknown call listed,
    and a person is asked about it by name; ``seal`` never ran."""
    resumed = project.resume(run_id, EXIT_WAITING)
    assert resumed["status"] == "waiting"
    detail = project.show(run_id)
    nodes = _nodes(detail)
    write = nodes["write"]
    assert write["status"] == "waiting" and write["attempts"] == 1
    ops = project.operations(run_id)
    (unknown,) = write["unknown"]
    assert unknown["operation_id"] == ops["write/1"]["operation_id"] == write["operation_id"]
    assert ops["write/1"]["outcome"] == "unknown"
    assert "write/1/rerun" not in ops  # never run again by itself
    assert nodes["seal"]["status"] == "pending" and "seal/1" not in ops
    (question,) = detail["diagnosis"]["waiting_for"]["approvals"]
    assert "node 'write'" in question["question"]
    assert unknown["operation_id"] in question["question"]
    # resuming again is refused while a person has not answered: nothing is run again
    again = project.agentloom("runs", "resume", run_id)
    assert again.returncode == 1 and json.loads(again.stdout)["error"]["code"] == "RUN_WAITING"
    assert "write/1/rerun" not in project.operations(run_id)
    assert project.show(run_id)["status"] == "waiting"
    return write


@pytest.mark.parametrize("point", ["intent_saved", "attempt_started"])
def test_f05_crash_before_the_effect_target_absent_node_waits_never_reruns(
        project: Project, point: str) -> None:
    run_id = project.killed_at(point)
    assert not (project.targets / "target.txt").exists() and project.ledger() == []

    _assert_waits_with_the_call_listed(project, run_id)

    assert not (project.targets / "target.txt").exists()  # not run again
    assert project.ledger() == []


def test_f05_crash_after_the_effect_before_raw_saved_target_present_node_waits_never_reruns(
        project: Project) -> None:
    run_id = project.killed_at("effect_done")
    assert (project.targets / "target.txt").read_text(encoding="utf-8") == "v2"
    assert len(project.ledger()) == 1

    write = _assert_waits_with_the_call_listed(project, run_id)

    assert write["output"] in (None, "")  # the file on disk did not make it a success
    assert len(project.ledger()) == 1  # the effect happened once, and was not repeated


@pytest.mark.parametrize("point", ["raw_saved"])
def test_i20_3_crash_after_raw_saved_resumes_delivers_once_and_goes_on(
        project: Project, point: str) -> None:
    run_id = project.killed_at(point)
    assert len(project.ledger()) == 1

    resumed = project.resume(run_id, 0)

    assert resumed["status"] == "succeeded" and resumed["output"] == "wrote seal.txt"
    nodes = _nodes(project.show(run_id))
    assert {n: v["status"] for n, v in nodes.items()} == {"write": "succeeded",
                                                           "seal": "succeeded"}
    assert nodes["write"]["output"] == "wrote target.txt" and nodes["write"]["attempts"] == 1
    ops = project.operations(run_id)
    assert ops["write/1"]["outcome"] == "succeeded"
    assert nodes["write"]["operation_id"] == ops["write/1"]["operation_id"]
    # each effect once: the write's (before the kill) and the seal's (after the resume)
    assert sorted(line.split()[1] for line in project.ledger()) == ["seal.txt", "target.txt"]
    assert project.ledger()[0].split()[0] == ops["write/1"]["operation_id"]
    assert (project.targets / "seal.txt").read_text(encoding="utf-8") == "wrote target.txt"
