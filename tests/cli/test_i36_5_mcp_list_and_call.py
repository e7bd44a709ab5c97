"""Issue #36, point 5: ``agentloom mcp list`` reports every server — listed, or its error — and
exits 1 when any failed (``--json``: one entry per server with ``ok`` / ``error``);
``agentloom mcp call`` starts a stdio server in the folder ``--workdir`` names, else the one
``workspace.bind`` names, else an empty temporary folder, and says which on stderr.

Real stdio servers in real ``agentloom`` subprocesses: ``mcp-server-git`` (installed with the
dev extra) and one whose command does not exist. The folder a
call works in is a real git repository of the user's; its owner, group and mode — and those of
every entry in it — are the same after the call (as ``run --workdir`` keeps them,
tests/shapes/test_i33_3_user_folders_keep_owner_and_mode.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloom.sandbox.reach import can_make_mount_namespace

from .support import agentloom

MCP_SERVER_GIT = Path(sys.executable).parent / "mcp-server-git"
REPO_MODE, FILE_MODE = 0o751, 0o640
GIT_ENV = {"GIT_AUTHOR_NAME": "user", "GIT_AUTHOR_EMAIL": "user@example.org",
           "GIT_COMMITTER_NAME": "user", "GIT_COMMITTER_EMAIL": "user@example.org",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
GIT_SERVER = f"""\
  git:
    transport: stdio
    command: {json.dumps(str(MCP_SERVER_GIT))}
"""
STATUS = ("git", "git_status", "--args", '{"repo_path": "."}')


def _host_paths_only() -> bool:
    """A root runtime that may not make a mount namespace (the 'container' test shape): its
    servers run at the host's paths as uid 65534, which cannot reach pytest's 0700 folders."""
    return os.geteuid() == 0 and not can_make_mount_namespace()


REACHABLE = pytest.mark.skipif(_host_paths_only(), reason=(
    "without a mount namespace uid 65534 cannot reach pytest's 0700 folders: "
    "test_i36_5_in_a_default_container_mcp_list_names_the_refusal_and_exits_1 checks what is shown"))


def _config(folder: Path, servers: str, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "agentloom.yaml"
    config.write_text("version: 1\nagents:\n  main:\n    model: {builtin: test}\n"
                      f"mcp_servers:\n{servers}{extra}", encoding="utf-8")
    return config


def _repository(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "README.md").write_text("# a repository of the user's\n", encoding="utf-8")
    os.chmod(folder / "README.md", FILE_MODE)
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "trunk"], ["add", "README.md"], ["commit", "-q", "-m", "one"]):
        subprocess.run(["git", *args], cwd=folder, env=env, check=True, capture_output=True)
    os.chmod(folder, REPO_MODE)
    return folder


def _owners_and_modes(folder: Path) -> dict[str, tuple[int, int, int]]:
    found = {".": folder.stat()}
    for entry in folder.rglob("*"):
        found[str(entry.relative_to(folder))] = entry.lstat()
    return {k: (s.st_uid, s.st_gid, s.st_mode) for k, s in found.items()}


@REACHABLE
def test_i36_5_mcp_list_reports_every_server_and_exits_1_when_one_failed(tmp_path: Path) -> None:
    config = _config(tmp_path / "proj", GIT_SERVER + f"""\
  broken:
    transport: stdio
    command: {json.dumps(str(tmp_path / "no-such-server"))}
  again:
    transport: stdio
    command: {json.dumps(str(MCP_SERVER_GIT))}
""")
    listed = agentloom("mcp", "list", str(config), "--json", cwd=config.parent)
    assert listed.returncode == 1, listed.stderr
    git, broken, again = json.loads(listed.stdout)  # every server, in the config's order
    assert (git["server"], git["ok"], git["error"]) == ("git", True, None)
    assert "git_status" in [tool["name"] for tool in git["tools"]]
    assert git["protocol_version"] and git["server_info"]["name"] == "mcp-git"
    assert (again["server"], again["ok"], again["error"]) == ("again", True, None)
    assert "mcp.again.git_status" in [tool["capability_key"] for tool in again["tools"]]
    assert broken == {"server": "broken", "transport": "stdio", "ok": False, "error": {
        "code": "COMMAND_INVALID", "message": broken["error"]["message"]}}
    assert "no-such-server" in broken["error"]["message"]

    shown = agentloom("mcp", "list", str(config), cwd=config.parent)
    assert shown.returncode == 1, shown.stderr
    lines = shown.stdout.splitlines()
    assert [line.split()[0] for line in lines if not line.startswith(" ")] == ["git", "broken", "again"]
    assert "  mcp.git.git_status  (mcp__git__git_status)" in shown.stdout
    assert any(line.startswith("broken  stdio  error: COMMAND_INVALID: ") for line in lines), lines
    assert "1 of 3 MCP server(s) could not be listed: broken" in shown.stderr

    fine = _config(tmp_path / "fine", GIT_SERVER)
    ok = agentloom("mcp", "list", str(fine), "--json", cwd=fine.parent)
    assert ok.returncode == 0, ok.stderr
    assert [(s["server"], s["ok"]) for s in json.loads(ok.stdout)] == [("git", True)]


@REACHABLE
def test_i36_5_mcp_call_works_in_the_workdir_and_keeps_its_owner_and_mode(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    link = tmp_path / "link-to-repo"
    link.symlink_to(repo)  # resolved once to the real folder, as run --workdir does
    config = _config(tmp_path / "proj", GIT_SERVER)
    before = _owners_and_modes(repo)
    done = agentloom("mcp", "call", str(config), *STATUS, "--workdir", str(link), "--json",
                     cwd=config.parent)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result
    assert "On branch trunk" in result["content"][0]["text"], result
    assert f"MCP server 'git' works in {repo} (--workdir)" in done.stderr.splitlines()
    assert _owners_and_modes(repo) == before

    missing = agentloom("mcp", "call", str(config), *STATUS, "--workdir",
                        str(tmp_path / "nowhere"), cwd=config.parent)
    assert missing.returncode == 2, missing.stderr
    assert "WORKDIR_NOT_FOUND" in missing.stderr and "--workdir" in missing.stderr
    assert "nowhere" in missing.stderr


@REACHABLE
def test_i36_5_mcp_call_works_in_workspace_bind_else_says_the_folder_is_empty(
        tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    bound = _config(tmp_path / "proj", GIT_SERVER, "workspace: {bind: ../repo}\n")
    done = agentloom("mcp", "call", str(bound), *STATUS, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "On branch trunk" in json.loads(done.stdout)["content"][0]["text"]
    assert f"MCP server 'git' works in {repo} (workspace.bind of {bound})" in done.stderr

    other = _repository(tmp_path / "other")  # --workdir wins over workspace.bind
    done = agentloom("mcp", "call", str(bound), *STATUS, "--workdir", str(other), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"works in {other} (--workdir)" in done.stderr

    unbound = _config(tmp_path / "unbound", GIT_SERVER)
    done = agentloom("mcp", "call", str(unbound), *STATUS, "--json", cwd=tmp_path)
    assert done.returncode == 1  # an empty folder is no repository: the tool says so
    assert json.loads(done.stdout)["status"] == "failed"
    (said,) = [line for line in done.stderr.splitlines() if "works in" in line]
    assert said == (f"MCP server 'git' works in an empty temporary folder (no --workdir and no "
                    f"workspace.bind in {unbound}; pass --workdir PATH to work in a folder of "
                    "yours)")


@pytest.mark.skipif(not _host_paths_only(), reason="only without a mount namespace (the 'container' "
                    "test shape) can a server's folder be out of the sandbox's reach")
def test_i36_5_in_a_default_container_mcp_list_names_the_refusal_and_exits_1(tmp_path: Path) -> None:
    """Where the sandbox's uid cannot reach the server's folders, every server is still reported:
    the refusal names the folder and the fixes, and the command exits 1."""
    config = _config(tmp_path / "proj", GIT_SERVER)
    listed = agentloom("mcp", "list", str(config), "--json", cwd=config.parent)
    assert listed.returncode == 1, listed.stderr
    (git,) = json.loads(listed.stdout)
    assert (git["server"], git["ok"], git["error"]["code"]) == ("git", False, "FOLDER_UNREACHABLE")
    assert "chmod o+x" in git["error"]["message"]
    shown = agentloom("mcp", "list", str(config), cwd=config.parent)
    assert shown.returncode == 1
    assert "git  stdio  error: FOLDER_UNREACHABLE: " in shown.stdout
    assert "1 of 1 MCP server(s) could not be listed: git" in shown.stderr
