"""The examples under examples/ run, offline, as a user would run them (the README's main
job runs examples/notes through the CLI in .ci/run; these run the Python ones)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloom.folders import default_workspace_root
from agentloom.sandbox import landlock_available
from agentloom.sandbox.reach import can_make_mount_namespace

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
    # i36 (1): it ends succeeded with no failed call (its count_words returns an int)
    run_id = done.stdout.split("run ", 1)[1].split(":", 1)[0]
    shown = _run("-m", "agentloom", "runs", "show", run_id, "--json", "--store",
                 f"sqlite:///{tmp_path / 'api.db'}", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    assert detail["status"] == "succeeded"
    statuses = {op["capability"]: op["status"] for op in detail["operations"]}
    assert statuses["text.count_words"] == "succeeded"
    assert set(statuses.values()) == {"succeeded"}, statuses
    assert "INVALID_TOOL_OUTPUT" not in shown.stdout


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


def test_example_a2a_tck_config_loads_an_agent_that_works_until_cancelled() -> None:
    """Issue 36 (14): examples/a2a-tck, the config the A2A TCK is run against (by hand, not in
    CI: tests/host/test_i36_14_a2a_tck.py serves it): one agent whose script keeps its task
    working in an exec call, then answers."""
    from agentloom.config.loader import load_config
    from agentloom.models.offline import load_script

    folder = ROOT / "examples" / "a2a-tck"
    config = load_config(folder / "agentloom.yaml")
    assert list(config.agents) == ["main"] and config.agents["main"].tools == ("exec",)
    first, last = load_script(folder / "turns.yaml").turns
    (call,) = first.tool_calls
    assert call.name == "exec" and isinstance(call.arguments, dict)
    assert call.arguments["argv"][0] == "sleep"
    assert last.text and not last.tool_calls and last.expect is None
    assert "agentloom serve" in (folder / "README.md").read_text(encoding="utf-8")


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


def _host_paths_only() -> bool:
    """A root runtime that may not make a mount namespace (the 'container' test shape): its
    commands and servers run at the host's paths as uid 65534."""
    return os.geteuid() == 0 and not can_make_mount_namespace()


@pytest.fixture
def example_tmp(tmp_path: Path) -> Iterator[Path]:
    """Where the MCP example runs: pytest's own folder (below ``0700`` ones, as ``/root`` is) —
    a root runtime binds the sandbox's folders where its uid 65534 reaches them. Without a
    mount namespace that uid works at the host's paths: then a folder every user may search
    (``0711``), where the folders allow it (issue #33)."""
    if not _host_paths_only():
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="agentloom-example-"))
    folder.chmod(0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _mcp_example(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """examples/mcp copied to ``tmp_path`` (its kept workspace lands there), and an environment
    whose PATH finds the virtualenv's ``mcp-server-git``."""
    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "mcp-server-git").exists():
        pytest.skip("mcp-server-git is not installed (pip install -e '.[dev]' installs it)")
    folder = tmp_path / "mcp"
    shutil.copytree(ROOT / "examples" / "mcp", folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PATH"] = f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}"
    return folder, env


def test_example_mcp_commits_a_note_with_the_git_server_through_the_pipeline(
    example_tmp: Path,
) -> None:
    """Issue #15: examples/mcp through the CLI — a published MCP server (mcp-server-git) in the
    run's sandbox, its tools called as recorded operations, its env defaults (${VAR:-default})
    read when it starts; the commit lands in the run's kept workspace."""
    tmp_path = example_tmp
    folder, env = _mcp_example(tmp_path)
    store = f"sqlite:///{tmp_path / 'm.db'}"
    done = subprocess.run([sys.executable, "-m", "agentloom", "run", str(folder / "agentloom.yaml"),
                           "Commit a release note", "--json", "--store", store], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=180, check=False)
    interpreter = Path(os.path.realpath(sys.executable))
    unreachable = next((p for p in interpreter.parents if not os.stat(p).st_mode & 0o001), None)
    if _host_paths_only() and unreachable is not None:
        # a default container with this venv's interpreter below /root: the clear refusal of
        # issue #33, before anything starts — never "Connection closed"
        assert done.returncode != 0
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "FOLDER_UNREACHABLE" and str(unreachable) in error["message"]
        return
    assert done.returncode == 0, done.stderr + done.stdout
    out = json.loads(done.stdout)
    assert out["output"] == "NOTES.md is committed: the last commit is 'Add the release note'."
    shown = json.loads(_run("-m", "agentloom", "runs", "show", out["run_id"], "--json", "--store",
                            store, cwd=tmp_path).stdout)
    calls = [(op["capability"], op["status"]) for op in shown["operations"]
             if op["capability"].startswith("mcp.")]
    assert calls == [("mcp.git.git_add", "succeeded"), ("mcp.git.git_commit", "succeeded"),
                     ("mcp.git.git_log", "succeeded")]
    (workspace,) = {p.parent for p in default_workspace_root(folder).rglob("NOTES.md")}
    log = subprocess.run(["git", "-c", f"safe.directory={workspace}", "-C", str(workspace), "log",
                          "--format=%an <%ae> %s"], capture_output=True, text=True, check=True)
    assert log.stdout.splitlines() == ["release-agent <agent@example.org> Add the release note"]


def test_example_mcp_json_imports_to_the_examples_mcp_servers_entry(tmp_path: Path) -> None:
    """The example's .mcp.json (Claude Code's form) is what its config says, once imported."""
    import yaml

    done = _run("-m", "agentloom", "mcp", "import-claude",
                str(ROOT / "examples" / "mcp" / ".mcp.json"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load((ROOT / "examples" / "mcp" / "agentloom.yaml").read_text(encoding="utf-8"))
    assert json.loads(done.stdout)["mcp_servers"] == config["mcp_servers"]
