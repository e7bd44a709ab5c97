"""Run-end cleanup of trees deeper than Python's recursion limit (issue #11, point 6).

Work folders are deleted iteratively through descriptors, whatever their depth, and a
cleanup that fails for any reason leaves a retryable cleanup job while the run ends and
reports its result as usual.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.sandbox.conftest import open_to_others

from agentloom import Kernel
from agentloom.agent import AgentSpec, Runtime
from agentloom.models.types import Finish, ModelRequest, ProviderEvent, TextDelta, ToolCallDelta
from agentloom.workspace._rmtree import remove_tree

DEPTH = 1500
"""Deeper than the default recursion limit (1,000), which ``shutil.rmtree`` recursed into."""
WAIT_S = 60.0


def build_deep(folder: Path, depth: int, *, leaf: Callable[[int], None] | None = None) -> Path:
    """``folder/d/d/…/d`` ``depth`` levels deep, a file at every level, made through
    descriptors (the path is longer than ``PATH_MAX``); ``leaf`` gets the deepest folder's
    descriptor. Returns the first folder of the chain."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(depth):
            file = os.open(f"f{level}", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
            os.write(file, b"x")
            os.close(file)
            os.mkdir("d", dir_fd=fd)
            sub = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = sub
        if leaf is not None:
            leaf(fd)
    finally:
        os.close(fd)
    return folder / "d"


@pytest.fixture
def leftovers() -> Iterator[list[Path]]:
    """Deep trees a failing test may leave: removed here, since pytest's own clean-up of
    its temporary folders recurses."""
    paths: list[Path] = []
    yield paths
    for path in paths:
        remove_tree(path)


@pytest.fixture
async def kernel(store_url: str, tmp_path: Path) -> AsyncIterator[Kernel]:
    k = Kernel(store_url, workspace_root=tmp_path / "shared")
    k.publish("rel", ["fs.write"], roles={"main": ["fs.write"]})
    yield k
    k.close()


async def test_i11_6_a_folder_1500_levels_deep_is_deleted_at_run_end(
    kernel: Kernel, tmp_path: Path, leftovers: list[Path]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the run's")
    lease = await kernel.start_run()
    ctx = kernel.invocation_context(lease, release_id="rel")
    wrote = await kernel.bus.request("fs_write", {"path": "top.txt", "content": "x"}, ctx)
    assert wrote.succeeded, wrote.error
    scopes = kernel.environment.scopes
    assert lease.workspace_scope_id is not None
    work = scopes.path(scopes.get(lease.workspace_scope_id))
    leftovers.append(work.parent)
    build_deep(work, DEPTH, leaf=lambda fd: os.symlink(outside, "escape", dir_fd=fd))

    result = await kernel.end_run(lease)

    assert (result.state, result.errors) == ("done", ())
    assert not work.parent.exists()
    job = kernel.store.get("cleanup_jobs", {"job_id": result.job_id})
    assert job is not None and job["state"] == "done"
    run = kernel.store.get("runs", {"run_id": lease.run_id})
    assert run is not None and run["status"] == "succeeded"
    assert (outside / "keep.txt").read_text() == "not the run's"  # the symlink was not followed


class WritesThenLocks:
    """An in-process model: its first turn writes a file through ``fs_write`` (so the run's
    work folder exists); its second calls ``lock(work folder)`` — standing in for a folder
    the runtime cannot delete — and answers ``done``."""

    model = "locks"

    def __init__(self, lock: Callable[[], None]) -> None:
        self.lock = lock

    async def stream_once(self, request: ModelRequest, attempt: Any) -> AsyncIterator[ProviderEvent]:
        if not any(m.role == "tool" for m in request.messages):
            yield ToolCallDelta(index=0, id="w1", name="fs_write",
                                arguments=json.dumps({"path": "top.txt", "content": "x"}))
            yield Finish("tool_calls")
        else:
            self.lock()
            yield TextDelta("done")
            yield Finish("stop")

    async def discover(self, connection: Any = None) -> list[Any]:
        return []

    async def aclose(self) -> None:
        return None


def chattr(flag: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True, text=True,
                          check=False, timeout=30)


async def test_i11_6_a_cleanup_failure_leaves_a_retryable_job_and_the_run_ends(
    store_url: str, tmp_path: Path, leftovers: list[Path]
) -> None:
    if shutil.which("chattr") is None:
        pytest.skip("chattr (e2fsprogs) is not installed: no folder can be made undeletable")
    probe = tmp_path / "probe"
    probe.mkdir()
    tried = chattr("+i", probe)
    if tried.returncode != 0:
        pytest.skip(f"chattr +i does not work here (needs CAP_LINUX_IMMUTABLE and ext4, "
                    f"xfs or btrfs): {tried.stderr.strip()}")
    chattr("-i", probe)

    locked: list[Path] = []
    rt = Runtime([AgentSpec(name="main", model=WritesThenLocks(lambda: lock(rt, locked, leftovers)),
                            tools=("fs.write",), window=128_000)],
                 store=store_url, workspace_root=tmp_path / "workspaces")
    try:
        result = await asyncio.wait_for(rt.run("write, then get locked"), WAIT_S)
        assert (result.status, result.output) == ("succeeded", "done")
        assert len(locked) == 1 and locked[0].exists()
        run_folder = locked[0].parents[DEPTH]
        (job,) = rt.store.query("cleanup_jobs", {"run_id": result.run_id})
        assert job["state"] == "pending" and job["attempts"] == 1
        (error,) = job["data"]["errors"]
        assert "Operation not permitted" in error and "more levels" in error
        assert str(tmp_path) not in error  # no host path in the job

        assert chattr("-i", locked[0]).returncode == 0
        await rt.resume_interrupted()  # what `agentloom worker` does on each sweep
        assert not run_folder.exists()
        after = rt.store.get("cleanup_jobs", {"job_id": job["job_id"]})
        assert after is not None and (after["state"], after["attempts"]) == ("done", 2)
    finally:
        for path in locked:
            chattr("-i", path)
        await rt.aclose()


def lock(rt: Runtime, locked: list[Path], leftovers: list[Path]) -> None:
    """Make the run's work folder ``DEPTH`` levels deep and its deepest folder immutable."""
    scopes = rt.kernel.environment.scopes
    (row,) = scopes.store.query("workspace_scopes", {"state": "registered"})
    work = scopes.path(scopes.get(row["workspace_scope_id"]))
    leftovers.append(work.parent)
    deepest = build_deep(work, DEPTH, leaf=lambda fd: os.close(
        os.open("pinned.txt", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)))
    deepest = Path(os.path.join(deepest, *["d"] * (DEPTH - 1)))
    tried = chattr("+i", deepest)
    assert tried.returncode == 0, tried.stderr
    locked.append(deepest)


UNREADABLE = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from agentloom.workspace._rmtree import remove_tree
    if os.geteuid() == 0:  # everything is imported: become an ordinary user
        os.setgroups([])
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)
    tree = Path(sys.argv[1]) / "tree"
    (tree / "ro" / "sub").mkdir(parents=True)
    (tree / "ro" / "f").write_text("x")
    (tree / "ro" / "sub" / "g").write_text("y")
    (tree / "none").mkdir()
    (tree / "none" / "h").write_text("z")
    os.chmod(tree / "ro" / "sub", 0o000)
    os.chmod(tree / "ro", 0o500)
    os.chmod(tree / "none", 0o000)
    remove_tree(tree)
    print("left" if tree.exists() else "gone")
""")


def test_i11_6_folders_their_owner_made_unreadable_are_deleted_all_the_same(tmp_path: Path) -> None:
    """A non-root runtime owns what its commands made; a folder a command turned ``0o000`` or
    ``0o500`` is given ``u+rwx`` back through its descriptor and deleted (as root, the
    check runs as uid 65534 in a child process)."""
    base = tmp_path / "owned"
    base.mkdir()
    if os.geteuid() == 0:
        open_to_others(tmp_path)  # the child below reaches it as uid 65534
        os.chown(base, 65534, 65534)
    ran = subprocess.run([sys.executable, "-c", UNREADABLE, str(base)], capture_output=True,
                         text=True, check=False, timeout=60)
    assert ran.stdout.strip() == "gone", ran.stderr
