"""Spec 000 §7.1 and §7.4: workspace scopes are registered before their folders exist, keyed by
(owner, partition, run); persistent sessions keep their folder but not an old run's write
right; at run end non-persistent folders go, persistent ones stay; failures become jobs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentloom.errors import ConfigError
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.refs import OwnerRef
from agentloom.store import open_store
from agentloom.workspace.cleanup import RunCleanup
from agentloom.workspace.scope import WorkspaceStore

AGENT = OwnerRef(kind="agent", id="writer", space_id="s1")


@pytest.fixture
async def scopes(store_url: str, tmp_path: Path) -> AsyncIterator[WorkspaceStore]:
    store = open_store(store_url)
    coordinator = CommitCoordinator(store)
    yield WorkspaceStore(store, coordinator, tmp_path / "shared")
    coordinator.close()
    store.close()


async def test_s7_1_registration_is_idempotent_and_creates_the_folder_after_the_record(
    scopes: WorkspaceStore,
) -> None:
    first = await scopes.register(owner=AGENT, partition_kind="agent_session",
                                  partition_id="sess1", run_id="run1", persistent=False)
    again = await scopes.register(owner=AGENT, partition_kind="agent_session",
                                  partition_id="sess1", run_id="run1", persistent=False)
    assert again == first
    folder = scopes.path(first)
    assert folder.is_dir()
    assert folder.relative_to(scopes.root).parts == (
        "agents", first.file_root_id, "sessions", "sess1", "runs", "run1", "work")
    rows = scopes.store.query("workspace_scopes", {"run_id": "run1"})
    assert len(rows) == 1 and rows[0]["data"]["path"] == str(first.relative_path)


async def test_s7_1_the_file_root_id_is_fixed_per_owner_with_a_manifest(
    scopes: WorkspaceStore,
) -> None:
    a = await scopes.register(owner=AGENT, partition_kind="agent_session", partition_id="s",
                              run_id="r1", persistent=True)
    b = await scopes.register(owner=AGENT, partition_kind="invocation", partition_id="inv9",
                              run_id="r2", persistent=False)
    assert a.file_root_id == b.file_root_id
    manifest = scopes.root / "agents" / a.file_root_id / "manifest.json"
    assert AGENT.id in manifest.read_text()
    other = await scopes.register(owner=OwnerRef(kind="agent", id="reader"),
                                  partition_kind="agent_session", partition_id="s",
                                  run_id="r1", persistent=True)
    assert other.file_root_id != a.file_root_id


async def test_s7_1_a_new_run_of_a_persistent_session_gets_a_new_scope_and_the_old_loses_writes(
    scopes: WorkspaceStore,
) -> None:
    old = await scopes.register(owner=AGENT, partition_kind="agent_session", partition_id="s",
                                run_id="r1", persistent=True)
    new = await scopes.register(owner=AGENT, partition_kind="agent_session", partition_id="s",
                                run_id="r2", persistent=True)
    assert new.workspace_scope_id != old.workspace_scope_id
    assert scopes.path(new) == scopes.path(old)
    assert scopes.writable(new.workspace_scope_id)
    assert not scopes.writable(old.workspace_scope_id)


async def test_s7_1_workflow_and_invocation_partitions_have_their_own_folders(
    scopes: WorkspaceStore,
) -> None:
    flow = await scopes.register(owner=OwnerRef(kind="workflow", id="wf"),
                                 partition_kind="workflow_session", partition_id="ws1",
                                 run_id="r1", persistent=True)
    inv = await scopes.register(owner=AGENT, partition_kind="invocation", partition_id="inv1",
                                run_id="r1", persistent=False)
    assert scopes.path(flow).relative_to(scopes.root).parts[:1] == ("workflows",)
    assert "invocations" in scopes.path(inv).relative_to(scopes.root).parts
    assert len({scopes.path(flow), scopes.path(inv)}) == 2


@pytest.mark.parametrize("bad", ["..", "../x", "a/b", "", ".hidden", "x" * 200, "a\x00b"])
async def test_s7_1_hostile_identities_never_become_paths(scopes: WorkspaceStore, bad: str) -> None:
    with pytest.raises(ConfigError):
        await scopes.register(owner=AGENT, partition_kind="agent_session", partition_id=bad,
                              run_id="r1", persistent=False)
    assert not (scopes.root / "agents").exists() or not any(
        p.name == bad for p in scopes.root.rglob("*"))


@dataclass
class FakeReceipt:
    confirmed: bool


async def test_s7_4_run_end_deletes_non_persistent_folders_and_keeps_persistent_ones(
    scopes: WorkspaceStore,
) -> None:
    temp = await scopes.register(owner=AGENT, partition_kind="invocation", partition_id="i1",
                                 run_id="r1", persistent=False)
    keep = await scopes.register(owner=AGENT, partition_kind="agent_session", partition_id="s",
                                 run_id="r1", persistent=True)
    (scopes.path(temp) / "scratch.txt").write_text("temp")
    (scopes.path(keep) / "notes.txt").write_text("keep")
    events: list[str] = []
    revoked: list[tuple[str, int]] = []

    async def revoke(run_id: str, epoch: int) -> FakeReceipt:
        revoked.append((run_id, epoch))
        return FakeReceipt(True)

    cleanup = RunCleanup(scopes, revoke=revoke, notify=lambda kind, p: events.append(kind))
    result = await cleanup.end_run("r1", 3)
    assert result.state == "done"
    assert revoked == [("r1", 3)] and events == ["run.ending"]
    assert not scopes.path(temp).exists() and not scopes.path(temp).parent.exists()
    assert (scopes.path(keep) / "notes.txt").read_text() == "keep"
    assert scopes.get(temp.workspace_scope_id).state == "deleted"
    assert scopes.get(keep.workspace_scope_id).state == "revoked"


async def test_s7_4_unconfirmed_revocation_keeps_folders_and_leaves_a_retryable_job(
    scopes: WorkspaceStore,
) -> None:
    temp = await scopes.register(owner=AGENT, partition_kind="invocation", partition_id="i1",
                                 run_id="r1", persistent=False)
    confirmed = {"value": False}

    async def revoke(run_id: str, epoch: int) -> FakeReceipt:
        return FakeReceipt(confirmed["value"])

    cleanup = RunCleanup(scopes, revoke=revoke)
    first = await cleanup.end_run("r1", 1)
    assert first.state == "pending" and scopes.path(temp).exists()
    assert scopes.store.get("cleanup_jobs", {"job_id": first.job_id})["state"] == "pending"
    confirmed["value"] = True
    (retried,) = await cleanup.retry_pending()
    assert retried.job_id == first.job_id and retried.state == "done"
    assert not scopes.path(temp).exists()
    assert scopes.store.get("cleanup_jobs", {"job_id": first.job_id})["attempts"] == 2


async def test_s7_4_cleanup_does_not_follow_a_symlink_out_of_the_run_folder(
    scopes: WorkspaceStore, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("do not delete")
    temp = await scopes.register(owner=AGENT, partition_kind="invocation", partition_id="i1",
                                 run_id="r1", persistent=False)
    os.symlink(outside, scopes.path(temp) / "link")
    result = await RunCleanup(scopes).end_run("r1", 1)
    assert result.state == "done"
    assert (outside / "precious.txt").read_text() == "do not delete"


async def test_s7_4_owner_deletion_removes_only_that_owners_folders(scopes: WorkspaceStore) -> None:
    mine = await scopes.register(owner=AGENT, partition_kind="agent_session", partition_id="s",
                                 run_id="r1", persistent=True)
    other_owner = OwnerRef(kind="agent", id="other")
    theirs = await scopes.register(owner=other_owner, partition_kind="agent_session",
                                   partition_id="s", run_id="r1", persistent=True)
    (scopes.path(theirs) / "keep.txt").write_text("x")
    await RunCleanup(scopes).delete_owner(AGENT)
    assert not scopes.path(mine).exists()
    assert (scopes.path(theirs) / "keep.txt").exists()
    assert scopes.get(mine.workspace_scope_id).state == "deleted"
    assert scopes.get(theirs.workspace_scope_id).state == "registered"


def test_s7_1_a_crash_after_registration_reuses_the_same_scope_and_path(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    code = textwrap.dedent(f"""
        import asyncio, os, signal, sys
        from pathlib import Path
        from agentloom.pipeline.coordinator import CommitCoordinator
        from agentloom.refs import OwnerRef
        from agentloom.store import open_store
        from agentloom.workspace import scope as mod
        store = open_store({url!r})
        ws = mod.WorkspaceStore(store, CommitCoordinator(store), Path({str(tmp_path / 'root')!r}))
        if sys.argv[1] == "crash":
            mod.WorkspaceStore.ensure_folder = lambda self, s: os.kill(os.getpid(), signal.SIGKILL)
        scope = asyncio.run(ws.register(owner=OwnerRef(kind="agent", id="a"),
            partition_kind="agent_session", partition_id="s", run_id="r", persistent=False))
        print(scope.workspace_scope_id, ws.path(scope))
    """)
    crashed = subprocess.run([sys.executable, "-c", code, "crash"], capture_output=True,
                             text=True, timeout=60)
    assert crashed.returncode == -signal.SIGKILL
    store = open_store(url)
    (row,) = store.query("workspace_scopes")
    store.close()
    assert not (tmp_path / "root" / row["data"]["path"]).exists()
    again = subprocess.run([sys.executable, "-c", code, "normal"], capture_output=True,
                           text=True, timeout=60, check=True)
    scope_id, path = again.stdout.split()
    assert scope_id == row["workspace_scope_id"]
    assert Path(path).is_dir() and Path(path) == tmp_path / "root" / row["data"]["path"]


