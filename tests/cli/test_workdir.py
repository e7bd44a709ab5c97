"""Issue 12, points 1 and 2: files stay where they can be found; work on an existing folder.

``agentloom run`` ends by saying where the run's files are, or that its folder was removed and
how to keep it (``workspace.keep``). ``--workdir PATH`` / ``workspace: {bind: PATH}`` make a
folder of the user's — here a real git checkout — the run's workspace: read and edited in
place by the file tools, at ``/work`` for ``exec``, nothing outside it reachable, kept after
the run, and never the workspace of two running runs at once. Through the CLI, the model on
the real OpenAI wire (the scripted server on 127.0.0.1).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.sandbox.conftest import owned_by_a_user_where_needed, searchable

from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

from .support import SERVER_KEY_ENV, SUBPROCESS_TIMEOUT_S, Cli, agentloom, openai_project, spawn
from .test_process import _wait_for_exec_started

SECRET = "the-outside-secret"


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVER_KEY_ENV, "sk-test")


def _config(folder: Path, server: ScriptedOpenAIServer, workspace: str = "") -> Path:
    return openai_project(folder, server.base_url, tools=("fs.read", "fs.write", "fs.edit", "exec"),
                          extra=f"workspace: {workspace}\n" if workspace else "")


def _calls(*calls: tuple[str, str, dict[str, Any]]) -> list[Any]:
    return chat_turn("", tool_calls=[(i, n, json.dumps(a)) for i, n, a in calls])


def _told(server: ScriptedOpenAIServer, request: int) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in server.model_requests[request].json["messages"]
            if m["role"] == "tool"}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", str(repo), *args], check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git repository with one commit, and a secret beside it (outside it)."""
    repo = tmp_path / "repo"
    repo.mkdir(mode=0o755)
    repo.chmod(0o755)  # as a clone is, whatever this process's umask
    (repo / "README.md").write_text("# Project\nold line\n", encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "add", "README.md")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(SECRET, encoding="utf-8")
    searchable(repo)  # as root, sandboxed commands run unprivileged and must reach it
    owned_by_a_user_where_needed(repo)  # a default container works in it as its owner
    return repo


def test_12_1_a_run_says_its_folder_was_removed_and_how_to_keep_it(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    server.script(_calls(("w1", "fs_write", {"path": "note.md", "content": "hi"})),
                  chat_turn("The note is at note.md"))
    config = _config(tmp_path / "p", server)
    cli = Cli(f"sqlite:///{tmp_path / 'store.db'}")

    human = cli("run", str(config), "write a note", "--store", cli.store)

    assert human.exit_code == 0, human.stderr
    assert "The run's folder was removed when it ended; keep its files with --workdir PATH" \
        in human.stdout
    assert "workspace.keep: true" in human.stdout


def test_12_1_workspace_keep_prints_the_folder_and_the_note_is_there(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    server.script(_calls(("w1", "fs_write", {"path": "note.md", "content": "kept"})),
                  chat_turn("The note is at note.md"))
    server.script(_calls(("w1", "fs_write", {"path": "note.md", "content": "again"})),
                  chat_turn("The note is at note.md"))
    config = _config(tmp_path / "p", server, "{keep: true}")
    cli = Cli(f"sqlite:///{tmp_path / 'store.db'}")

    human = cli("run", str(config), "write a note", "--store", cli.store)
    out = cli.json("run", str(config), "write it again", "--store", cli.store)

    assert human.exit_code == 0, human.stderr
    line = [x for x in human.stdout.splitlines() if x.startswith("Files: ")]
    (first,) = [Path(x.removeprefix("Files: ")) for x in line]
    assert (first / "note.md").read_text(encoding="utf-8") == "kept"
    second = Path(out["workspace"])
    assert second != first and (second / "note.md").read_text(encoding="utf-8") == "again"
    assert cli.json("runs", "show", out["run_id"], "--store", cli.store)["status"] == "succeeded"


def test_12_2_workdir_reads_and_edits_a_git_checkout_in_place_and_nothing_outside(
    tmp_path: Path, server: ScriptedOpenAIServer, checkout: Path,
) -> None:
    secret = tmp_path / "outside" / "secret.txt"
    server.script(
        _calls(("r1", "fs_read", {"path": "README.md"}),
               ("r2", "fs_read", {"path": "../outside/secret.txt"}),
               ("x1", "exec", {"argv": ["cat", str(secret)]}),
               ("x2", "exec", {"argv": ["ls", "-a"]})),  # in /work, its cwd
        _calls(("e1", "fs_edit", {"path": "README.md", "old_text": "old line",
                                  "new_text": "new line"})),
        chat_turn("edited"))
    config = _config(tmp_path / "p", server)
    cli = Cli(f"sqlite:///{tmp_path / 'store.db'}")

    out = cli.json("run", str(config), "fix the readme", "--workdir", str(checkout),
                   "--store", cli.store)

    assert out["status"] == "succeeded" and out["workspace"] == str(checkout.resolve())
    told = _told(server, 1)
    assert "old line" in told["r1"]
    assert SECRET not in told["r2"] and "resolves outside the workspace" in told["r2"]
    assert SECRET not in told["x1"]
    assert "README.md" in told["x2"] and ".git" in told["x2"]  # the checkout is /work
    # edited in place, the repository intact and kept
    assert (checkout / "README.md").read_text(encoding="utf-8") == "# Project\nnew line\n"
    assert _git(checkout, "status", "--short") == " M README.md\n"
    assert secret.read_text(encoding="utf-8") == SECRET
    assert sorted(p.name for p in checkout.iterdir()) == [".git", "README.md"]


def test_12_2_workspace_bind_in_the_config_and_a_missing_folder_is_a_clear_error(
    tmp_path: Path, server: ScriptedOpenAIServer, checkout: Path,
) -> None:
    server.script(_calls(("r1", "fs_read", {"path": "README.md"})), chat_turn("read"))
    config = _config(tmp_path / "p", server, "{bind: ../repo}")  # relative to the config
    cli = Cli(f"sqlite:///{tmp_path / 'store.db'}")

    out = cli.json("run", str(config), "read it", "--store", cli.store)

    assert out["status"] == "succeeded" and out["workspace"] == str(checkout.resolve())
    assert "old line" in _told(server, 1)["r1"]

    missing = cli("run", str(config), "read it", "--workdir", str(tmp_path / "nope"),
                  "--store", cli.store, "--json")
    assert missing.exit_code != 0
    error = json.loads(missing.stdout)["error"]
    assert error["code"] == "WORKDIR_NOT_FOUND" and "no such folder" in error["message"]
    assert not (tmp_path / "nope").exists()
    assert len(cli.json("runs", "list", "--store", cli.store)) == 1  # no run was left behind


def test_12_2_a_second_run_on_a_busy_folder_is_refused_and_wait_waits(
    tmp_path: Path, server: ScriptedOpenAIServer, checkout: Path,
) -> None:
    server.script(_calls(("s1", "exec", {"argv": ["sleep", "60"], "timeout_s": 120})))
    config = _config(tmp_path / "p", server)
    cli = Cli(f"sqlite:///{tmp_path / 'store.db'}")
    first = spawn("run", str(config), "sleep", "--workdir", str(checkout), "--store", cli.store,
                  "--json", cwd=tmp_path)
    try:
        first_id = str(_wait_for_exec_started(cli, first)["run_id"])

        refused = agentloom("run", str(config), "read", "--workdir", str(checkout),
                            "--store", cli.store, "--json", cwd=tmp_path)

        assert refused.returncode == 1, refused.stderr
        error = json.loads(refused.stdout)["error"]
        assert error["code"] == "WORKSPACE_BUSY" and first_id in error["message"]
        assert len(cli.json("runs", "list", "--store", cli.store)) == 1  # nothing started

        server.script(chat_turn("my turn"))
        waiting = spawn("run", str(config), "read", "--workdir", str(checkout), "--wait",
                        "--store", cli.store, "--json", cwd=tmp_path)
        assert cli.json("runs", "stop", first_id, "--store", cli.store)["requested"] is True
        stdout, stderr = waiting.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        for proc in (first,):
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    assert waiting.returncode == 0, stderr
    assert json.loads(stdout)["output"] == "my turn"
    assert (checkout / "README.md").exists()  # neither run deleted it
