"""The examples under examples/ run, offline, as a user would run them (the README's main
job runs examples/notes through the CLI in .ci/run; these run the Python ones)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentloom.sandbox import landlock_available

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def test_example_python_api_runs_a_planner_and_an_executor(tmp_path: Path) -> None:
    done = _run(str(ROOT / "examples" / "python_api.py"), "--store",
                f"sqlite:///{tmp_path / 'api.db'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "succeeded: hello.txt is written and says hello." in done.stdout
    assert "delegation.call.completed" in done.stdout


def test_example_approvals_submits_waits_for_a_person_and_resumes(tmp_path: Path) -> None:
    done = _run(str(ROOT / "examples" / "approvals.py"), "--store",
                f"sqlite:///{tmp_path / 'ap.db'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith("(pending)")
    assert ": waiting: Write hello.txt? (op " in lines[1]
    assert lines[2].endswith(": succeeded: hello.txt is written.")
    assert lines[3].endswith("hello.txt says 'hello'")


def test_example_quickstart_runs_the_recorded_pipeline(tmp_path: Path) -> None:
    done = _run(str(ROOT / "examples" / "quickstart.py"), "--store",
                f"sqlite:///{tmp_path / 'q.db'}", "--workdir", str(tmp_path / "work"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_example_notes_config_runs_through_the_cli(tmp_path: Path) -> None:
    done = _run("-m", "agentloom", "run", str(ROOT / "examples" / "notes" / "agentloom.yaml"),
                "Keep a note", "--json", "--store", f"sqlite:///{tmp_path / 'n.db'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"status": "succeeded"' in done.stdout


def test_example_notes_exec_runs_under_landlock_on_a_machine_without_bubblewrap(tmp_path: Path) -> None:
    """Issue #10: a fresh machine without bubblewrap still confines the example's ``exec``."""
    if not landlock_available():
        pytest.skip("Landlock is not enabled in this kernel (needs Linux >= 5.13, landlock in lsm=)")
    no_bwrap = tmp_path / "bin"  # a PATH on which `bwrap` is not found
    no_bwrap.mkdir()
    store = f"sqlite:///{tmp_path / 'n.db'}"
    env = {**os.environ, "PATH": str(no_bwrap)}
    done = subprocess.run([sys.executable, "-m", "agentloom", "run",
                           str(ROOT / "examples" / "notes" / "agentloom.yaml"), "Keep a note", "--json",
                           "--store", store], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    events = _run("-m", "agentloom", "runs", "events", run_id, "--json", "--store", store, cwd=tmp_path)
    (call,) = [e for e in json.loads(events.stdout)
               if e["type"] == "tool.call.completed" and e["capability"] == "exec"]
    assert call["status"] == "succeeded"
    summary = call["summary"]
    assert '"sandbox_mode": "landlock"' in summary and '"sandboxed": true' in summary


def test_example_a2a_serving_answers_the_official_client_on_both_bindings(tmp_path: Path) -> None:
    from tests.host.support import free_port

    done = _run(str(ROOT / "examples" / "a2a_serving.py"), "--store",
                f"sqlite:///{tmp_path / 'a2a.db'}", "--port", str(free_port()), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("card: [('JSONRPC'") and "HTTP+JSON" in lines[0]
    assert lines[1].startswith("JSONRPC: task ") and lines[1].endswith("TASK_STATE_COMPLETED")
    assert lines[2].startswith("HTTP+JSON: TASK_STATE_COMPLETED: ")


def test_example_workflow_routes_an_error_waits_for_approval_and_publishes(tmp_path: Path) -> None:
    """Issue 20: examples/workflow through the CLI — the build's first failure goes back to
    the planner, the run waits for a person (exit 3), is approved, resumes and publishes."""
    folder = tmp_path / "workflow"
    shutil.copytree(ROOT / "examples" / "workflow", folder)
    store = f"sqlite:///{tmp_path / 'w.db'}"
    config = str(folder / "agentloom.yaml")
    first = _run("-m", "agentloom", "run", config, "--workflow", "release", "ship 2.0", "--json",
                 "--store", store, cwd=tmp_path)
    assert first.returncode == 3, first.stderr
    run_id = json.loads(first.stdout)["run_id"]
    shown = json.loads(_run("-m", "agentloom", "runs", "show", run_id, "--json", "--store", store,
                            cwd=tmp_path).stdout)
    assert {n["node"]: n["attempts"] for n in shown["nodes"]} == {
        "plan": 2, "build": 2, "review": 2, "approve": 1, "publish": 0}
    (approval,) = shown["diagnosis"]["waiting_for"]["approvals"]
    assert approval["question"] == "Ship dist/release-2.0.txt?"
    answered = _run("-m", "agentloom", "runs", "approve", run_id, approval["operation_id"],
                    "--store", store, cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr
    done = _run("-m", "agentloom", "runs", "resume", run_id, "--json", "--store", store,
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == "published dist/release-2.0.txt (1 line)"
