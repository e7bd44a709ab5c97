"""Issue #33, point 3: AgentLoom never touches the user's folders. The config folder, the
folder ``workspace.bind`` names, a ``--workdir`` and every folder AgentLoom did not create keep
their owner, group and mode through every command (``run``, ``mcp list``, ``mcp call``,
``hooks``, ``skills``, ``serve``, ``worker``).

Each test lays the project out as a container user has it: in a ``mkdtemp`` folder (``0700``,
root's when run as root) the config folder ``proj/`` (``0750``, its ``agentloom.yaml``
``0640``: a skill, a stdio MCP server, a Claude Code hook, ``workspace: {bind: ../repo}``),
the bound repository ``repo/`` (``0750``, its file ``0640``) and a second repository
``workdir/`` (``0751``); it runs the real CLI in a subprocess and compares
``(uid, gid, mode)`` of the base folder and of every entry below the three folders that existed
before (``proj/.agentloom/``, AgentLoom's own, aside) after each command. New files are allowed.

The shapes (``AGENTLOOM_TEST_SHAPE``, ``tests/shapes/launcher.py``): unset or ``no-bwrap``
(root with ``CAP_SYS_ADMIN``, or an ordinary user), every command must also succeed; in
``container`` (no ``CAP_SYS_ADMIN``, no namespaces) a root-owned repository below a ``0700``
folder cannot be worked in, and a command may be refused, but only naming
``FOLDER_UNREACHABLE``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from tests.cli.support import agentloom
from tests.host.support import Api, make_key, serving, wait_status
from tests.shapes.launcher import SHAPE_VARIABLE

#: Unset or ``no-bwrap``: root with CAP_SYS_ADMIN (or not root at all), where every command works.
STRICT = os.environ.get(SHAPE_VARIABLE, "") in ("", "no-bwrap")
REFUSAL = "FOLDER_UNREACHABLE"
ENDED = {"succeeded", "failed", "cancelled", "timed_out"}
HOOK_ID = "claude.PreToolUse[0].hooks[0]"
MCP_SERVER_GIT = Path(sys.executable).parent / "mcp-server-git"
#: What the user's folders and files are made with: distinctive modes, never AgentLoom's own.
PROJ_MODE, REPO_MODE, WORKDIR_MODE, FILE_MODE = 0o750, 0o750, 0o751, 0o640
GIT_ENV = {"GIT_AUTHOR_NAME": "user", "GIT_AUTHOR_EMAIL": "user@example.org",
           "GIT_COMMITTER_NAME": "user", "GIT_COMMITTER_EMAIL": "user@example.org",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

#: Every kind of work a run does in its folder: git, a new file, a skill's script, an MCP tool.
TURNS = """\
  - tool_calls:
      - {name: exec, arguments: {argv: [git, status]}}
      - {name: exec, arguments: {argv: [touch, made.txt]}}
      - {name: exec, arguments: {argv: [/skills/notes/scripts/hello.sh]}}
      - {name: mcp__git__git_status, arguments: {repo_path: "."}}
  - text: done
"""
CONFIG = f"""\
version: 1
agents:
  main:
    model: {{builtin: script, path: turns.yaml}}
    tools: [exec, mcp.git.git_status]
    skills: [notes]
skills:
  - {{path: ./skills}}
mcp_servers:
  git:
    transport: stdio
    command: {json.dumps(str(MCP_SERVER_GIT))}
    env:
      GIT_AUTHOR_NAME: agent
      GIT_AUTHOR_EMAIL: agent@example.org
      GIT_COMMITTER_NAME: agent
      GIT_COMMITTER_EMAIL: agent@example.org
workspace: {{bind: ../repo}}
"""
SKILL = """\
---
name: notes
description: Says hello from a script of its own.
---
Run `/skills/notes/scripts/hello.sh`.
"""
CLAUDE_SETTINGS = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{
    "type": "command", "command": 'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/allow.py',
    "timeout": 30}]}]}}

Snapshot = dict[str, tuple[int, int, int]]


@dataclass(frozen=True)
class Layout:
    """The base folder and what a user keeps in it."""

    base: Path

    @property
    def proj(self) -> Path:
        return self.base / "proj"

    @property
    def repo(self) -> Path:
        return self.base / "repo"

    @property
    def workdir(self) -> Path:
        return self.base / "workdir"

    @property
    def config(self) -> Path:
        return self.proj / "agentloom.yaml"

    @property
    def store(self) -> str:
        return f"sqlite:///{self.base / 'store.db'}"

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``agentloom ARGS --json`` in the config folder."""
        return agentloom(*args, "--json", cwd=self.proj)


def _git_repository(folder: Path, mode: int) -> None:
    """A repository with one commit of one ``FILE_MODE`` file; ``folder`` gets ``mode``."""
    folder.mkdir()
    (folder / "README.md").write_text("# a repository of the user's\n", encoding="utf-8")
    os.chmod(folder / "README.md", FILE_MODE)
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "one"]):
        subprocess.run(["git", *args], cwd=folder, env=env, check=True, capture_output=True)
    os.chmod(folder, mode)


def _project(proj: Path) -> None:
    proj.mkdir()
    (proj / "agentloom.yaml").write_text(CONFIG, encoding="utf-8")
    (proj / "turns.yaml").write_text("turns:\n" + TURNS, encoding="utf-8")
    script = proj / "skills" / "notes" / "scripts" / "hello.sh"
    script.parent.mkdir(parents=True)
    (proj / "skills" / "notes" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    script.write_text("#!/bin/sh\necho hello from notes\n", encoding="utf-8")
    script.chmod(0o755)
    hooks = proj / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "allow.py").write_text("import sys\nsys.stdin.read()\nsys.exit(0)\n", encoding="utf-8")
    (proj / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS), encoding="utf-8")
    os.chmod(proj / "agentloom.yaml", FILE_MODE)  # ``hooks import-claude --write`` rewrites it
    os.chmod(proj, PROJ_MODE)


@pytest.fixture
def layout() -> Iterator[Layout]:
    """A fresh layout in a ``mkdtemp`` folder, removed afterwards (with a workspace root
    AgentLoom moved out of it, if it did)."""
    base = Path(tempfile.mkdtemp(prefix="i33-3-"))
    made = Layout(base)
    try:
        _project(made.proj)
        _git_repository(made.repo, REPO_MODE)
        _git_repository(made.workdir, WORKDIR_MODE)
        yield made
    finally:
        moved = made.proj / ".agentloom" / "workspaces"
        if moved.is_symlink():
            shutil.rmtree(moved.resolve(), ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)


def snapshot(layout: Layout) -> Snapshot:
    """``(uid, gid, mode)`` of the base folder and of every entry in and below ``proj``,
    ``repo`` and ``workdir``, links not followed, ``proj/.agentloom/`` aside."""
    def entry(path: Path) -> tuple[int, int, int]:
        st = os.lstat(path)
        return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)

    seen = {".": entry(layout.base)}
    for top in (layout.proj, layout.repo, layout.workdir):
        seen[top.name] = entry(top)
        for folder, dirs, files in os.walk(top):
            if Path(folder) == layout.proj and ".agentloom" in dirs:
                dirs.remove(".agentloom")
            for name in [*dirs, *files]:
                path = Path(folder, name)
                seen[str(path.relative_to(layout.base))] = entry(path)
    return seen


def assert_kept(layout: Layout, before: Snapshot, after_what: str) -> None:
    """Every entry of ``before`` is still there with its owner, group and mode."""
    after = snapshot(layout)
    changed = {path: (f"{was[0]}:{was[1]} {was[2]:04o}",
                      "gone" if now is None else f"{now[0]}:{now[1]} {now[2]:04o}")
               for path, was in before.items() if (now := after.get(path)) != was}
    assert not changed, f"after {after_what}: {changed}"


def outcome(done: subprocess.CompletedProcess[str], what: str) -> Any:
    """What the command printed (``--json``), or ``None`` when it was refused before doing
    anything. Outside the strict shapes a command may fail, but only naming
    ``FOLDER_UNREACHABLE``; in them it must succeed."""
    assert done.stdout.strip(), (what, done.returncode, done.stderr)
    printed = json.loads(done.stdout)
    if done.returncode != 0:
        assert not STRICT, (what, done.stdout, done.stderr)
        assert REFUSAL in done.stdout, (what, done.stdout, done.stderr)
    return None if isinstance(printed, dict) and set(printed) == {"error"} else printed


def check_run(layout: Layout, run_id: str, *, hooked: bool = False) -> None:
    """The run ended ``succeeded``, every tool call with it (each command exiting 0), the
    hook allowing each ``exec`` when ``hooked``; outside the strict shapes, a failed run or
    call must name ``FOLDER_UNREACHABLE``."""
    shown = layout.cli("runs", "show", run_id, "--store", layout.store)
    assert shown.returncode == 0, shown.stderr
    run = json.loads(shown.stdout)
    tools = [op for op in run["operations"] if op["kind"] == "tool"]
    failed = [op for op in tools if op["status"] != "succeeded"
              or (op["capability"] == "exec" and json.loads(op["raw_result"])["exit_code"] != 0)]
    if STRICT:
        assert (run["status"], failed) == ("succeeded", []), json.dumps(run, indent=1)
        assert sorted(op["capability"] for op in tools) == [
            "exec", "exec", "exec", "mcp.git.git_status"], json.dumps(run, indent=1)
        if hooked:
            decisions = [(h["hook_id"], h["status"], h["decision"]) for op in tools
                         if op["capability"] == "exec" for h in op["hooks"]]
            assert decisions == [(HOOK_ID, "succeeded", "allow")] * 3, json.dumps(run, indent=1)
    elif run["status"] != "succeeded" or failed:
        assert REFUSAL in json.dumps(run), json.dumps(run, indent=1)


def run_ids(result: Any) -> list[str]:
    return [result["run_id"]] if result is not None else []


def import_skills(layout: Layout) -> None:
    done = layout.cli("skills", "import", "--config", str(layout.config), "--store", layout.store)
    assert done.returncode == 0, done.stderr  # nothing of it runs in the sandbox


@pytest.mark.parametrize("where", ["bind", "workdir"])
def test_i33_3_run_keeps_the_owner_group_and_mode_of_every_user_folder(
        layout: Layout, where: str) -> None:
    before = snapshot(layout)
    import_skills(layout)
    assert_kept(layout, before, "skills import")
    extra = ["--workdir", str(layout.workdir)] if where == "workdir" else []
    done = layout.cli("run", str(layout.config), "check the repository", *extra,
                      "--store", layout.store)
    assert_kept(layout, before, f"run ({where})")
    for run_id in run_ids(outcome(done, "run")):
        check_run(layout, run_id)
    if STRICT:
        made = layout.workdir if where == "workdir" else layout.repo
        assert (made / "made.txt").is_file()


def test_i33_3_mcp_list_keeps_the_owner_group_and_mode_of_every_user_folder(
        layout: Layout) -> None:
    before = snapshot(layout)
    done = layout.cli("mcp", "list", str(layout.config))
    assert_kept(layout, before, "mcp list")
    listed = outcome(done, "mcp list")
    if STRICT:
        assert "git_status" in [tool["name"] for tool in listed[0]["tools"]]


def test_i33_3_mcp_call_keeps_the_owner_group_and_mode_of_every_user_folder(
        layout: Layout) -> None:
    before = snapshot(layout)
    done = layout.cli("mcp", "call", str(layout.config), "git", "git_status",
                      "--args", '{"repo_path": "."}')
    assert_kept(layout, before, "mcp call")
    result = outcome(done, "mcp call")
    if STRICT:
        assert result["status"] == "succeeded", result


def test_i33_3_hooks_keeps_the_owner_group_and_mode_of_every_user_folder(
        layout: Layout) -> None:
    before = snapshot(layout)
    imported = layout.cli("hooks", "import-claude", str(layout.proj / ".claude" / "settings.json"),
                          "--write", str(layout.config))
    assert imported.returncode == 0, imported.stderr
    assert [hook["hook_id"] for hook in json.loads(imported.stdout)["hooks"]] == [HOOK_ID]
    assert_kept(layout, before, "hooks import-claude --write")
    import_skills(layout)
    done = layout.cli("run", str(layout.config), "check the repository", "--store", layout.store)
    assert_kept(layout, before, "run with the imported hook")
    for run_id in run_ids(outcome(done, "run")):
        check_run(layout, run_id, hooked=True)


def test_i33_3_skills_keeps_the_owner_group_and_mode_of_every_user_folder(
        layout: Layout) -> None:
    before = snapshot(layout)
    import_skills(layout)
    assert_kept(layout, before, "skills import")
    listed = layout.cli("skills", "list", "--config", str(layout.config), "--store", layout.store)
    assert listed.returncode == 0, listed.stderr
    assert [skill["name"] for skill in json.loads(listed.stdout)] == ["notes"]
    assert_kept(layout, before, "skills list")


def test_i33_3_serve_keeps_the_owner_group_and_mode_of_every_user_folder(
        layout: Layout) -> None:
    before = snapshot(layout)
    import_skills(layout)
    key = make_key(layout.store, "alice", "acme")
    run_id = None
    with contextlib.ExitStack() as stack:
        try:
            base = stack.enter_context(serving(layout.config, layout.store))
        except AssertionError as exited:  # ``serving`` asserts the server stays up: it refused
            assert not STRICT and REFUSAL in str(exited), str(exited)
        else:
            api = Api(base, key, httpx2.get(base + "/openapi.json").json())
            created = api.post("/v1/runs", body={"task": "check the repository"})
            assert created.status_code == 201, created.text
            run_id = created.json()["run_id"]
            wait_status(api, run_id, ENDED)
    assert_kept(layout, before, "serve")
    if run_id is not None:
        check_run(layout, run_id)


def test_i33_3_worker_keeps_the_owner_group_and_mode_of_every_user_folder(
        layout: Layout) -> None:
    before = snapshot(layout)
    import_skills(layout)
    submitted = layout.cli("submit", str(layout.config), "check the repository",
                           "--store", layout.store)
    assert_kept(layout, before, "submit")
    queued = run_ids(outcome(submitted, "submit"))
    done = layout.cli("worker", str(layout.config), "--once", "--store", layout.store)
    assert_kept(layout, before, "worker --once")
    outcome(done, "worker --once")
    for run_id in queued:
        check_run(layout, run_id)
