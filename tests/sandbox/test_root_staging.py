"""A root runtime runs bubblewrap as the sandbox uid (65534), which finds its bind sources by
path: the runtime stages them first (a private mount namespace, ``_kernel.stage_binds``), so a
workspace below a folder that uid cannot search (``/root``, pytest's 0700 folders) still runs
under bubblewrap, not Landlock. Where root cannot stage, bubblewrap is started directly.

Every test here leaves pytest's 0700 folders as they are (no ``searchable``) and skips unless
the runtime is root and bubblewrap is installed."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.sandbox.conftest import open_to_others, require_bwrap, run_command, scope_for, text

from agentloom.sandbox import (
    BubblewrapGateway,
    EnvironmentPolicy,
    ExecCommand,
    SandboxError,
    make_gateway,
)
from agentloom.sandbox.identity import SANDBOX_UID


@pytest.fixture
def private(tmp_path: Path) -> Path:
    """A folder only root may search, as ``/root`` is."""
    if os.geteuid() != 0:
        pytest.skip("needs a root runtime (bubblewrap then runs as the sandbox uid)")
    require_bwrap()
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and folder.stat().st_uid == 0
    return folder


async def test_s7_2_root_runs_bubblewrap_below_a_folder_the_sandbox_uid_cannot_search(
    private: Path,
) -> None:
    work = private / "work"
    work.mkdir()
    docs = private / "docs"
    docs.mkdir()
    (docs / "guide.txt").write_text("read-only guide\n")
    gateway = make_gateway(EnvironmentPolicy(allow_shell=True), backend="auto",
                           output_dir=private / "out")
    assert isinstance(gateway, BubblewrapGateway) and gateway.sandbox_mode == "bubblewrap"
    assert gateway.stages_sources
    handle = await gateway.ensure(scope_for(work, readonly_mounts=((docs, "/resources/docs"),)), None, 1)
    result = await run_command(gateway, handle, ExecCommand(shell_script=(
        "id -u; pwd; cat /resources/docs/guide.txt; echo made > note.txt; "
        "echo tampered > /resources/docs/guide.txt 2>/dev/null || echo docs-read-only; "
        "ls /tmp | wc -l")))
    assert result.exit_code == 0, result
    assert result.sandbox_mode == "bubblewrap"
    lines = text(result).split()
    assert lines[:2] == [str(SANDBOX_UID), "/work"]
    assert "read-only guide" in text(result) and "docs-read-only" in text(result)
    assert lines[-1] == "0"  # the sandbox's own /tmp, not the staging folder
    assert (work / "note.txt").read_text() == "made\n"
    assert (work / "note.txt").stat().st_uid == SANDBOX_UID  # never root's
    assert (docs / "guide.txt").read_text() == "read-only guide\n"


async def test_s7_2_git_runs_in_a_workspace_below_root_only_folders(private: Path) -> None:
    """What the Landlock fallback could not do: git resolves the folders above its work
    tree, which uid 65534 may not enter on the host; in the sandbox it sees only /work."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    work = private / "repo"
    work.mkdir()
    gateway = make_gateway(EnvironmentPolicy(allow_shell=True, path="/usr/bin:/bin"),
                           backend="auto", output_dir=private / "out")
    handle = await gateway.ensure(scope_for(work), None, 1)
    result = await run_command(gateway, handle, ExecCommand(shell_script=(
        "git init -q . && git -c user.name=a -c user.email=a@example.org commit -q "
        "--allow-empty -m first && git log --format=%s")))
    assert result.exit_code == 0, (text(result), result.stderr.head)
    assert text(result).strip() == "first"
    assert (work / ".git" / "HEAD").is_file()


def _staging_refused_bwrap(folder: Path) -> str:
    """A ``bwrap`` that fails as one does where root cannot make a mount namespace for the
    staged sources (their paths start with /tmp/), and is the real one otherwise."""
    real = shutil.which("bwrap")
    path = folder / "bwrap"
    path.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = --version ] && exec {real} --version\n'
        'case " $* " in *" --bind /tmp/0 /work "*) '
        'echo "bwrap: Creating new namespace failed: Operation not permitted" >&2; exit 1;; esac\n'
        f'exec {real} "$@"\n')
    path.chmod(0o755)
    open_to_others(folder)  # the sandbox uid runs it by its path
    return str(path)


@pytest.fixture
def tools() -> Iterator[Path]:
    """A folder for a fake ``bwrap`` outside /tmp, which a staging command process covers."""
    folder = Path(tempfile.mkdtemp(prefix="agentloom-test-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


async def test_s7_2_where_root_cannot_stage_bubblewrap_starts_directly_and_says_so(
    private: Path, tmp_path: Path, tools: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake = _staging_refused_bwrap(tools)
    reachable = tmp_path / "reachable"
    reachable.mkdir()
    open_to_others(reachable)  # bubblewrap started directly finds it by path
    with caplog.at_level(logging.WARNING, logger="agentloom.sandbox"):
        gateway = make_gateway(EnvironmentPolicy(allow_shell=True), backend="bubblewrap",
                               output_dir=reachable / "out", bwrap=fake)
    assert isinstance(gateway, BubblewrapGateway) and not gateway.stages_sources
    assert any("cannot stage" in r.getMessage() for r in caplog.records)
    work = reachable / "work"
    work.mkdir()
    handle = await gateway.ensure(scope_for(work), None, 1)
    result = await run_command(gateway, handle, ExecCommand(shell_script="pwd"))
    assert result.exit_code == 0 and text(result).strip() == "/work"
    # below a folder the sandbox uid cannot search, that start is refused, naming the fix
    with pytest.raises(SandboxError) as caught:
        make_gateway(EnvironmentPolicy(), backend="bubblewrap", output_dir=private / "out",
                     bwrap=fake)
    message = str(caught.value)
    assert caught.value.code == "SANDBOX_UNAVAILABLE"
    assert "Operation not permitted" in message and "chmod o+x" in message
