"""Issue #33, acceptance 1 and 2: every integration where users run agents — as root, with
bubblewrap or without it, with ``CAP_SYS_ADMIN`` or in a default container, the project in a
folder others cannot search — through the real CLI, on the offline script model.

Which shape a test runs in is this process's: on a VM or CI as root (``namespace``: Landlock or
bubblewrap give each command a view of its own), in ``tests/shapes/launcher.py --shape
container`` (``host``: no mount namespace, commands at the host's paths), or as an ordinary user.
Each test says what must happen in each: where the folders allow it, the same thing works; a
root-owned repository below a ``0700`` folder without a mount namespace is refused before
anything starts, naming the folder, the uid and the fixes. Nothing here makes a folder
searchable: the base folder is ``mkdtemp``'s ``0700`` (``0711`` in the ``host`` shape, "where the
folders allow it", except in the refusal tests).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.sandbox.reach import can_make_mount_namespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from mcp_npm import NpmUnavailable, install_global

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 180
VENV_BIN = Path(sys.executable).parent
GIT_ENV = ("    env: {GIT_AUTHOR_NAME: agent, GIT_AUTHOR_EMAIL: agent@example.org,\n"
           "          GIT_COMMITTER_NAME: agent, GIT_COMMITTER_EMAIL: agent@example.org}\n")
NO_RM_RF = """\
import json, sys
event = json.load(sys.stdin)
command = event["tool_input"].get("command", "")
if event["tool_name"] == "Bash" and "rm -rf" in command:
    print(f"rm -rf is not allowed here (blocked: {command})", file=sys.stderr)
    sys.exit(2)
"""
SETTINGS = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
    {"type": "command", "command": 'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/no_rm_rf.py'}]}]}}


def shape() -> str:
    """``namespace`` (root, may make a mount namespace), ``host`` (root without one: a default
    container) or ``user`` (an ordinary user)."""
    if os.geteuid() != 0:
        return "user"
    return "namespace" if can_make_mount_namespace() else "host"


def bubblewrap() -> bool:
    return shutil.which("bwrap") is not None


BACKENDS = ["auto", *(["landlock"] if bubblewrap() else [])]
"""``auto`` is bubblewrap where installed, else Landlock; Landlock is also asked for by name
where bubblewrap is installed, so both run."""


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder as ``mktemp -d`` makes it: ``0700``, root's (``0711`` in the ``host`` shape,
    where only folders others may search can work)."""
    folder = Path(tempfile.mkdtemp(prefix="agentloom-i33-"))
    if shape() == "host":
        os.chmod(folder, 0o711)
    yield folder
    _remove(folder)


@pytest.fixture
def private() -> Iterator[Path]:
    """A ``0700`` folder in every shape (the refusals)."""
    folder = Path(tempfile.mkdtemp(prefix="agentloom-i33-"))
    yield folder
    _remove(folder)


def _remove(folder: Path) -> None:
    for link in folder.glob("*/.agentloom/workspaces"):  # moved to /var/tmp (``reach``)
        if link.is_symlink():
            shutil.rmtree(os.path.realpath(link), ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    return subprocess.run([sys.executable, "-m", "agentloom", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def project(folder: Path, turns: str, *, tools: str, extra: str = "", backend: str = "auto") -> Path:
    """A one-agent config on the script model in ``folder``; returns the config."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "turns.yaml").write_text("turns:\n" + turns, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\nagents:\n  main:\n    model: {builtin: script, path: turns.yaml}\n"
        f"    tools: [{tools}]\n{extra}sandbox: {{backend: {backend}, allow_shell: true}}\n",
        encoding="utf-8")
    return config


def run(config: Path, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``agentloom run CONFIG`` and its ``runs show``: (the run's JSON, operations by call id)."""
    done = cli("run", str(config), "go", "--json", *args, cwd=config.parent)
    assert done.stdout, done.stderr
    result = json.loads(done.stdout)
    assert "run_id" in result, (result, done.stderr)
    store = f"sqlite:///{config.parent / '.agentloom' / 'agentloom.db'}"
    shown = json.loads(cli("runs", "show", result["run_id"], "--store", store, "--json",
                           cwd=config.parent).stdout)
    return result, {o["call_id"]: o for o in shown["operations"] if o["kind"] == "tool"}


def exec_result(op: dict[str, Any]) -> dict[str, Any]:
    text = op["effective_result"] or op["raw_result"]
    body = json.loads(text)
    assert isinstance(body, dict), text
    return body


def git_repo(folder: Path, *, mode: int = 0o755) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(folder), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=u", "-c", "user.email=u@x",
                    "commit", "-qm", "init"], check=True)
    os.chmod(folder, mode)
    return folder


def owner_and_mode(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the container shapes are root's: this runs as an ordinary user")


# -- acceptance 1 / 2: hooks -------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_i33_1_an_imported_claude_code_bash_guard_denies_rm_rf_with_its_stderr_reaching_the_model(
    base: Path, backend: str,
) -> None:
    proj = base / "proj"
    hooks = proj / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "no_rm_rf.py").write_text(NO_RM_RF)
    (proj / ".claude" / "settings.json").write_text(json.dumps(SETTINGS))
    config = project(proj, "  - tool_calls:\n"
                           "      - {id: rm, name: exec, arguments: {argv: [rm, -rf, build]}}\n"
                           "  - text: done\n", tools="exec", backend=backend)
    imported = cli("hooks", "import-claude", str(proj / ".claude" / "settings.json"), "--write",
                   str(config), cwd=proj)
    assert imported.returncode == 0, imported.stderr
    (proj / "build").mkdir()
    result, ops = run(config)
    assert result["status"] == "succeeded", result
    rm = ops["rm"]
    assert rm["status"] == "denied" and rm["attempts"]["count"] == 0  # rm -rf never ran
    (hook,) = rm["hooks"]
    assert (hook["status"], hook["decision"]) == ("succeeded", "deny")
    assert "rm -rf is not allowed here (blocked: rm -rf build)" in hook["reason"]
    assert (proj / "build").is_dir()


def test_i33_2_without_a_mount_namespace_a_hook_that_cannot_reach_its_project_denies_the_call(
    private: Path,
) -> None:
    if shape() != "host":
        pytest.skip("only without a mount namespace (the 'container' test shape) can a hook "
                    "not reach its project")
    proj = private / "proj"
    proj.mkdir()
    (proj / "build").mkdir()
    config = project(proj, "  - tool_calls:\n"
                           "      - {id: rm, name: exec, arguments: {argv: [rm, -rf, build]}}\n"
                           "  - text: done\n", tools="exec",
                     extra="    hooks:\n      - {hook_id: guard, timing: before, match: {capability: exec}, "
                           "handler: {kind: command, command: 'exit 0'}}\n")
    result, ops = run(config)
    rm = ops["rm"]
    assert rm["status"] == "denied" and rm["attempts"]["count"] == 0
    (hook,) = rm["hooks"]
    assert hook["decision"] == "deny" and "could not start" in hook["reason"]
    assert str(private) in hook["reason"] and "uid 65534" in hook["reason"]
    assert (proj / "build").is_dir()
    assert result["warnings"] and result["warnings"][0]["denied"] is True


# -- acceptance 1 / 2: skills ------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_i33_1_a_skill_script_runs_from_skills_by_argv_and_by_shell_script(
    base: Path, backend: str,
) -> None:
    proj = base / "proj"
    scripts = proj / "skills" / "notes" / "scripts"
    scripts.mkdir(parents=True)
    (proj / "skills" / "notes" / "SKILL.md").write_text(
        "---\nname: notes\ndescription: Stamps notes.\n---\nRun scripts/stamp.sh.\n")
    (scripts / "stamp.sh").write_text('#!/bin/sh\necho "stamped as $(id -u)"\n')
    os.chmod(scripts / "stamp.sh", 0o755)
    namespace = shape() != "host"
    script = '"$AGENTLOOM_SKILLS"/notes/scripts/stamp.sh; ls "$AGENTLOOM_SKILLS"'
    if namespace:  # the folder itself exists only in a mount namespace
        script += "; /skills/notes/scripts/stamp.sh"
    config = project(proj, "  - tool_calls:\n"
                           "      - {id: argv, name: exec, arguments: {argv: "
                           "[/skills/notes/scripts/stamp.sh]}}\n"
                           "      - {id: shell, name: exec, arguments: {shell_script: "
                           f"{json.dumps(script)}}}}}\n"
                           "  - text: done\n", tools="exec", backend=backend,
                     extra="    skills: [notes]\nskills:\n  - {path: ./skills}\n")
    imported = cli("skills", "import", "--config", str(config), cwd=proj)
    assert imported.returncode == 0, imported.stderr
    result, ops = run(config)
    assert result["status"] == "succeeded", result
    uid = "65534" if os.geteuid() == 0 else str(os.geteuid())
    argv = exec_result(ops["argv"])
    assert (argv["exit_code"], argv["stdout"]) == (0, f"stamped as {uid}\n"), argv
    shell = exec_result(ops["shell"])
    assert shell["exit_code"] == 0, shell
    assert shell["stdout"].split("\n")[:2] == [f"stamped as {uid}", "notes"]
    assert shell["stdout"].count("stamped as") == (2 if namespace else 1)


# -- acceptance 1 / 2: MCP servers -------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_i33_1_server_everything_installed_with_npm_global_lists_its_tools_and_answers_echo(
    base: Path, backend: str,
) -> None:
    try:
        command = install_global(base / "npm-global")  # as `npm install -g` under a home
    except NpmUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the npm MCP server tests: {exc}")
        pytest.skip(f"npm MCP server unavailable: {exc}")
    config = project(base / "proj", "  - text: done\n", tools='"mcp.everything.*"',
                     backend=backend, extra=f"mcp_servers:\n  everything:\n    transport: stdio\n"
                                            f"    command: {command}\n")
    listed = cli("mcp", "list", str(config), "--json", cwd=config.parent)
    assert listed.returncode == 0, listed.stderr
    (server,) = json.loads(listed.stdout)
    assert "mcp.everything.echo" in {t["capability_key"] for t in server["tools"]}
    called = cli("mcp", "call", str(config), "everything", "echo", "--args",
                 json.dumps({"message": "hi from the sandbox"}), "--json", cwd=config.parent)
    assert called.returncode == 0, called.stderr
    assert "Echo: hi from the sandbox" in called.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_i33_1_mcp_server_git_from_a_venv_on_an_interpreter_under_root_answers_git_status(
    base: Path, backend: str,
) -> None:
    needs_root()
    repo = git_repo(base / "repo", mode=0o750)
    (repo / "new.txt").write_text("new\n")
    before = owner_and_mode(repo)
    config = project(base / "proj", "  - tool_calls:\n"
                                    "      - {id: st, name: mcp__git__git_status, "
                                    "arguments: {repo_path: \".\"}}\n"
                                    "  - text: done\n", tools='"mcp.git.*"', backend=backend,
                     extra=f"mcp_servers:\n  git:\n    transport: stdio\n"
                           f"    command: {VENV_BIN / 'mcp-server-git'}\n{GIT_ENV}"
                           "workspace: {bind: ../repo}\n")
    result, ops = run(config) if shape() != "host" else (None, None)
    if shape() == "host":  # the venv's interpreter lies below /root: refused, named
        done = cli("run", str(config), "go", "--json", cwd=config.parent)
        assert done.returncode != 0
        assert "FOLDER_UNREACHABLE" in done.stdout + done.stderr
    else:
        assert result is not None and ops is not None
        assert result["status"] == "succeeded", result
        status = ops["st"]["effective_result"]
        assert "new.txt" in status and "Untracked" in status, status
    assert owner_and_mode(repo) == before


# -- acceptance 1 / 2: exec and git in a folder of the user's -----------------------------------


def _git_and_touch(folder: Path, backend: str, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    config = project(folder, "  - tool_calls:\n"
                             "      - {id: st, name: exec, arguments: {argv: [git, status, --short]}}\n"
                             "  - tool_calls:\n"
                             "      - {id: touch, name: exec, arguments: {argv: [touch, made.txt]}}\n"
                             "  - text: done\n", tools="exec", backend=backend)
    return run(config, *args)


@pytest.mark.parametrize("backend", BACKENDS)
def test_i33_1_exec_git_status_and_touch_work_in_workdir_on_a_repository_root_owns(
    base: Path, backend: str,
) -> None:
    needs_root()
    if shape() == "host":
        pytest.skip("without a mount namespace a root-owned repository is refused (tested below)")
    repo = git_repo(base / "repo", mode=0o750)
    (repo / "new.txt").write_text("new\n")
    before = owner_and_mode(repo)
    result, ops = _git_and_touch(base / "proj", backend, "--workdir", str(repo))
    assert result["status"] == "succeeded", result
    status = exec_result(ops["st"])
    assert (status["exit_code"], status["stdout"]) == (0, "?? new.txt\n"), status
    assert exec_result(ops["touch"])["exit_code"] == 0
    assert owner_and_mode(repo) == before  # nothing on disk changed owner or mode
    assert (repo / "made.txt").stat().st_uid == 0  # what the command made is the owner's


def test_i33_2_without_a_mount_namespace_a_repository_of_a_user_is_worked_in_as_that_user(
    base: Path,
) -> None:
    if shape() != "host":
        pytest.skip("only without a mount namespace are commands run as a folder's owner")
    repo = git_repo(base / "repo", mode=0o750)
    (repo / "new.txt").write_text("new\n")
    for folder, _, files in os.walk(repo):
        for name in [".", *files]:
            os.chown(os.path.join(folder, name), 1000, 1000)
    before = owner_and_mode(repo)
    result, ops = _git_and_touch(base / "proj", "auto", "--workdir", str(repo))
    assert result["status"] == "succeeded", result
    status = exec_result(ops["st"])
    assert (status["exit_code"], status["stdout"]) == (0, "?? new.txt\n"), status
    assert exec_result(ops["touch"])["exit_code"] == 0
    assert owner_and_mode(repo) == before
    assert (repo / "made.txt").stat().st_uid == 1000


def test_i33_2_without_a_mount_namespace_a_root_owned_repository_below_a_0700_folder_is_refused(
    private: Path,
) -> None:
    if shape() != "host":
        pytest.skip("with a mount namespace the repository is bound idmapped (tested above)")
    repo = git_repo(private / "repo", mode=0o755)
    before = owner_and_mode(repo)
    config = project(private / "proj", "  - tool_calls:\n"
                                       "      - {id: t, name: exec, arguments: {argv: [touch, x]}}\n"
                                       "  - text: done\n", tools="exec")
    done = cli("run", str(config), "go", "--json", "--workdir", str(repo), cwd=config.parent)
    assert done.returncode != 0  # refused before the run starts: no model turn, no command
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "FOLDER_UNREACHABLE", error
    message = error["message"]
    assert str(repo) in message and "65534" in message and "CAP_SYS_ADMIN" in message
    assert sorted(p.name for p in repo.iterdir()) == [".git", "a.txt"]  # nothing ran
    assert owner_and_mode(repo) == before
