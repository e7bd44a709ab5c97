"""Issue #37, point 2: examples/workflow/collab through the CLI, as a user runs it (offline,
scripted models; CI runs it with the suite) — a lead posts, hands off and puts a task on the
board; a worker reads, accepts, claims, finishes the task and posts its report; a wait node
takes that message as the run's output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from agentloom.squad import collab
from agentloom.store import open_store

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentloom", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def test_i37_2_example_collab_hands_work_over_and_the_wait_takes_the_report(
        tmp_path: Path) -> None:
    folder = tmp_path / "collab"
    shutil.copytree(ROOT / "examples" / "workflow" / "collab", folder)
    store = f"sqlite:///{tmp_path / 'c.db'}"

    done = _run("run", str(folder / "agentloom.yaml"), "--workflow", "team", "add 2 and 3",
                "--json", "--store", store, cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded" and result["output"] == "2 + 3 = 5"
    shown = json.loads(_run("runs", "show", result["run_id"], "--json", "--store", store,
                            cwd=tmp_path).stdout)
    assert {n["node"]: n["status"] for n in shown["nodes"]} == {
        "lead": "succeeded", "worker": "succeeded", "report": "succeeded"}
    s = open_store(store)
    try:
        (handoff,) = collab.handoffs(s, result["run_id"])
        (task,) = collab.board(s, result["run_id"])
        mail = collab.inbox(s, result["run_id"], "report")
    finally:
        s.close()
    assert handoff.status == "accepted" and handoff.payload == {"numbers": [2, 3]}
    assert (task.status, task.assignee, task.data) == ("done", "worker",
                                                       {"numbers": [2, 3], "sum": 5})
    assert [(m.sender, m.body, m.read_at is not None) for m in mail] == [
        ("worker", "2 + 3 = 5", True)]
