"""Issue #10, hardening: work folders are 0700 and the runtime's folders above them 0711
(searchable, never listable), no written file is writable by others, and a root runtime
gives a scope's work folder and everything the file tools create in it to the unprivileged
content owner its commands run as."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.refs import OwnerRef
from agentloom.store import open_store
from agentloom.workspace.blobs import FileBlobStore
from agentloom.workspace.scope import WorkspaceScope, WorkspaceStore
from agentloom.workspace.service import WorkspaceHandle, WorkspaceService

AGENT = OwnerRef(kind="agent", id="writer", space_id="s1")
NOBODY = (65534, 65534)
DEADLINE_S = 30.0

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="only root can give files to another uid")


@dataclass
class Shared:
    root: Path
    store: CommitCoordinator
    scopes: WorkspaceStore

    async def scope(self, *, persistent: bool = False, run_id: str = "run1") -> WorkspaceScope:
        return await self.scopes.register(owner=AGENT, partition_kind="agent_session",
                                          partition_id="sess1", run_id=run_id,
                                          persistent=persistent)


@pytest.fixture
async def shared(tmp_path: Path) -> AsyncIterator[Shared]:
    store = open_store("memory://")
    coordinator = CommitCoordinator(store)
    root = tmp_path / "shared"
    yield Shared(root, coordinator, WorkspaceStore(store, coordinator, root))
    coordinator.close()
    store.close()


def mode(path: Path) -> int:
    return os.stat(path, follow_symlinks=False).st_mode & 0o7777


def owner(path: Path) -> tuple[int, int]:
    st = os.stat(path, follow_symlinks=False)
    return st.st_uid, st.st_gid


def folders_from(top: Path, leaf: Path) -> list[Path]:
    """``top`` and every folder below it down to ``leaf``."""
    return [top, *(top / Path(*leaf.relative_to(top).parts[:i + 1])
                   for i in range(len(leaf.relative_to(top).parts)))]


async def test_hardening_work_folders_are_0700_and_the_folders_above_them_0711(
    shared: Shared, resolution: str, tmp_path: Path
) -> None:
    scope = await shared.scope()
    work = shared.scopes.path(scope)
    for folder in folders_from(shared.root, work.parent):
        assert mode(folder) == 0o711, folder.relative_to(tmp_path)  # searchable, not listable
    assert mode(work) == 0o700
    assert mode(shared.root / "agents" / scope.file_root_id / "manifest.json") == 0o600

    spool = tmp_path / "spool.out"
    spool.write_bytes(b"a command's full output")
    location, _ = FileBlobStore(shared.root).adopt(spool, owners="agents",
                                                   file_root_id=scope.file_root_id)
    blob = shared.root / location
    for folder in folders_from(shared.root / "system", blob.parent):
        assert mode(folder) == 0o711, folder.relative_to(tmp_path)

    service = WorkspaceService(resolution=resolution)  # type: ignore[arg-type]
    handle = await service.open_view(work, scope_id=scope.workspace_scope_id)
    await service.mkdir(handle, "one")
    await service.mkdir(handle, "two/three/four", parents=True)
    await service.write(handle, "two/three/four/notes.txt", "hello\n")
    for name in ("one", "two", "two/three", "two/three/four", ".locks"):
        assert mode(work / name) == 0o700, name


async def test_hardening_written_files_are_never_writable_by_others(
    shared: Shared, resolution: str
) -> None:
    work = shared.scopes.path(await shared.scope())
    service = WorkspaceService(resolution=resolution)  # type: ignore[arg-type]
    handle = await service.open_view(work, scope_id="scope")
    await service.write(handle, "new.txt", "new\n")
    assert mode(work / "new.txt") == 0o644

    (work / "open.txt").write_text("shared\n")
    os.chmod(work / "open.txt", 0o666)  # e.g. made by a command with umask 0
    etag = (await service.read(handle, "open.txt")).etag
    await service.write(handle, "open.txt", "replaced\n", mode="replace", if_match=etag)
    assert mode(work / "open.txt") == 0o664  # its bits are kept, except write for others

    (work / "tool.sh").write_text("echo one\n")
    os.chmod(work / "tool.sh", 0o4777)
    await service.edit(handle, "tool.sh", "one", "two")
    assert mode(work / "tool.sh") == 0o775


@root_only
async def test_hardening_files_written_as_root_belong_to_the_content_owner(
    tmp_path: Path, resolution: str
) -> None:
    store = open_store("memory://")
    coordinator = CommitCoordinator(store)
    try:
        scopes = WorkspaceStore(store, coordinator, tmp_path / "shared", content_owner=NOBODY)
        scope = await scopes.register(owner=AGENT, partition_kind="invocation",
                                      partition_id="inv1", run_id="run1", persistent=False)
    finally:
        coordinator.close()
        store.close()
    work = scopes.path(scope)
    runtime = (os.geteuid(), os.getegid())
    assert owner(work) == NOBODY and mode(work) == 0o700
    for folder in folders_from(scopes.root, work.parent):
        assert owner(folder) == runtime and mode(folder) == 0o711, folder

    (work / "kept").mkdir(mode=0o700)  # an existing folder keeps its owner
    (work / "old.txt").write_text("the runtime's\n")
    service = WorkspaceService(resolution=resolution, content_owner=NOBODY)  # type: ignore[arg-type]
    handle = await service.open_view(work, scope_id=scope.workspace_scope_id)
    await service.write(handle, "notes.txt", "one\n")
    await service.edit(handle, "notes.txt", "one", "two")
    await service.mkdir(handle, "single")
    await service.mkdir(handle, "kept/src/pkg", parents=True)
    await service.write(handle, "kept/src/pkg/mod.py", "x = 1\n")
    await service.apply_patch(handle, "kept/src/pkg/mod.py", "@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    etag = (await service.read(handle, "old.txt")).etag
    await service.write(handle, "old.txt", "replaced\n", mode="replace", if_match=etag)
    notes = (await service.read(handle, "notes.txt")).etag
    await service.move(handle, "notes.txt", "single/notes.txt", if_match=notes)

    assert owner(work / "kept") == runtime
    assert owner(work / ".locks") == runtime and mode(work / ".locks") == 0o700
    given = {str(p.relative_to(work)) for p in work.rglob("*")
             if ".locks" not in p.parts and p != work / "kept"}
    assert given == {"old.txt", "single", "single/notes.txt", "kept/src", "kept/src/pkg",
                     "kept/src/pkg/mod.py"}
    for name in sorted(given):
        assert owner(work / name) == NOBODY, name


@root_only
async def test_hardening_a_command_running_as_the_content_owner_can_change_what_the_agent_wrote(
    tmp_path: Path,
) -> None:
    store = open_store("memory://")
    coordinator = CommitCoordinator(store)
    try:
        scopes = WorkspaceStore(store, coordinator, tmp_path / "shared", content_owner=NOBODY)
        scope = await scopes.register(owner=AGENT, partition_kind="agent_session",
                                      partition_id="sess1", run_id="run1", persistent=True)
    finally:
        coordinator.close()
        store.close()
    work = scopes.path(scope)
    service = WorkspaceService(content_owner=NOBODY)
    handle: WorkspaceHandle = await service.open_view(work, scope_id=scope.workspace_scope_id)
    await service.write(handle, "notes.txt", "by the agent\n")
    await service.mkdir(handle, "src/pkg", parents=True)
    await service.write(handle, "src/pkg/mod.py", "x = 1\n")

    # As the sandbox does: enter the folder first, then drop to the unprivileged uid.
    script = ("echo 'by the command' >> notes.txt && echo 'x = 2' > src/pkg/mod.py && "
              "mkdir src/pkg/sub && echo new > src/pkg/sub/new.txt && "
              "if ls .. >/dev/null 2>&1; then echo 'parent listable'; exit 1; fi")
    done = await asyncio.to_thread(
        subprocess.run, ["/bin/sh", "-c", script], cwd=work, user=NOBODY[0], group=NOBODY[1],
        extra_groups=[], capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (await service.read(handle, "notes.txt")).content == "by the agent\nby the command\n"
    assert (await service.read(handle, "src/pkg/mod.py")).content == "x = 2\n"
    assert (await service.read(handle, "src/pkg/sub/new.txt")).content == "new\n"


@root_only
async def test_hardening_an_existing_work_folder_is_given_to_the_content_owner(
    shared: Shared,
) -> None:
    scope = await shared.scope(persistent=True)  # made before the runtime had a content owner
    work = shared.scopes.path(scope)
    assert owner(work) == (os.geteuid(), os.getegid())
    scopes = WorkspaceStore(shared.scopes.store, shared.store, shared.root, content_owner=NOBODY)
    again = await scopes.register(owner=AGENT, partition_kind="agent_session",
                                  partition_id="sess1", run_id="run2", persistent=True)
    assert scopes.path(again) == work
    assert owner(work) == NOBODY
    assert owner(work.parent) == (os.geteuid(), os.getegid())


def test_hardening_the_content_owner_must_be_a_uid_gid_pair(tmp_path: Path) -> None:
    store = open_store("memory://")
    coordinator = CommitCoordinator(store)
    try:
        for bad in ((65534,), (65534, -1), ("65534", "65534"), (True, 0)):
            with pytest.raises(ValueError, match="content_owner"):
                WorkspaceService(content_owner=bad)  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="content_owner"):
                WorkspaceStore(store, coordinator, tmp_path, content_owner=bad)  # type: ignore[arg-type]
    finally:
        coordinator.close()
        store.close()
