"""Spec 000 §7.1 and §7.4: workspace scopes are registered before their folders exist, keyed by
(owner, partition, run); persistent sessions keep their folder but not an old run's write
right; at run end non-persistent folders go, persistent ones stay; failures become jobs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentloom import Kernel, StrictInput, Tool, ToolContext
from agentloom.errors import ConfigError
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.refs import OwnerRef
from agentloom.store import open_store
from agentloom.workspace.cleanup import RunCleanup
from agentloom.workspace.scope import WorkspaceStore

AGENT = OwnerRef(kind="agent", id="writer", space_id="s1")


class _Text(StrictInput):
    text: str


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




class _Pure(Tool[_Text]):
    name = "pure"
    description = "A step with no side effect that may look at its files."
    rerunnable = True

    async def execute(self, args: _Text, ctx: ToolContext) -> str:
        if args.text == "write":
            await ctx.files.write("made.txt", "x")
        return "done"


async def test_s7_1_a_runs_scope_is_committed_with_the_run_and_its_folder_made_on_first_use(
    store_url: str, tmp_path: Path,
) -> None:
    kernel = Kernel(store_url, workspace_root=tmp_path / "ws")
    kernel.publish("rel", [_Pure(), "fs.write"], roles={"main": ["pure", "fs.write"]})
    seen: list[tuple[bool, tuple[str, ...]]] = []
    commit_many = kernel.store.commit_many

    def counting(batch: Any) -> Any:
        seen.extend((ws.sync, tuple(sorted({op.table for op in ws.ops}))) for ws in batch)
        return commit_many(batch)

    kernel.store.commit_many = counting  # type: ignore[method-assign]
    try:
        await kernel.start_run(owner=AGENT)  # the owner's first run: its file root first
        assert seen == [(True, ("file_roots",)), (True, ("runs", "workspace_scopes"))]
        seen.clear()
        lease = await kernel.start_run(owner=AGENT)
        assert seen == [(True, ("runs", "workspace_scopes"))]  # one commit: run and scope
        scopes = kernel.environment.scopes
        scope = scopes.get(str(lease.workspace_scope_id))
        assert scope.state == "registered" and not scopes.path(scope).exists()

        ctx = kernel.invocation_context(lease, release_id="rel", owner=AGENT)
        untouched = await kernel.bus.request("pure", {"text": "look"}, ctx, logical_key="a")
        assert untouched.outcome == "succeeded" and not scopes.path(scope).exists()
        wrote = await kernel.bus.request("pure", {"text": "write"}, ctx, logical_key="b")
        assert wrote.outcome == "succeeded"
        assert (scopes.path(scope) / "made.txt").read_text() == "x"

        seen.clear()
        cleaned = await kernel.end_run(lease)
        # the end revokes the scope in the run's own synced commit; the cleanup record of
        # what was done rides unsynced
        assert seen == [(True, ("runs", "workspace_scopes")),
                        (False, ("cleanup_jobs", "workspace_scopes"))]
        assert cleaned.state == "done" and not scopes.path(scope).exists()
        assert scopes.get(scope.workspace_scope_id).state == "deleted"
    finally:
        kernel.store.commit_many = commit_many  # type: ignore[method-assign]
        kernel.close()


async def test_s7_1_a_side_effecting_tool_is_refused_before_it_runs_a_pure_one_on_first_use(
    store_url: str, tmp_path: Path,
) -> None:
    """A scope that is no longer usable refuses a tool with side effects before it starts
    (``not_started``); a re-runnable tool, which has none, only when it touches its files."""
    kernel = Kernel(store_url, workspace_root=tmp_path / "ws")
    kernel.publish("rel", [_Pure(), "fs.write"], roles={"main": ["pure", "fs.write"]})
    try:
        lease = await kernel.start_run(owner=AGENT)
        scopes = kernel.environment.scopes
        await scopes.set_state([scopes.get(str(lease.workspace_scope_id))], "deleted")
        ctx = kernel.invocation_context(lease, release_id="rel", owner=AGENT)

        effect = await kernel.bus.request("fs_write", {"path": "a.txt", "content": "a"}, ctx,
                                          logical_key="w")
        looked = await kernel.bus.request("pure", {"text": "look"}, ctx, logical_key="a")
        wrote = await kernel.bus.request("pure", {"text": "write"}, ctx, logical_key="b")

        assert effect.outcome == "failed" and effect.error is not None
        assert (effect.error.code, effect.error.external_outcome) == (
            "WORKSPACE_UNAVAILABLE", "not_started")
        assert looked.outcome == "succeeded"
        assert wrote.outcome == "failed" and wrote.error is not None
        assert wrote.error.code == "WORKSPACE_UNAVAILABLE"
        assert not scopes.path(scopes.get(str(lease.workspace_scope_id))).exists()
    finally:
        kernel.close()


async def test_s7_4_a_run_that_ended_without_its_cleanup_is_cleaned_by_a_later_sweep(
    store_url: str, tmp_path: Path,
) -> None:
    """The process died between the commit that ended a run (its scopes revoked with it) and
    the run's cleanup: no job, the folder left. A later worker's sweep (``resume_interrupted``)
    cleans it once the run ended longer ago than the grace — never a running run's folder,
    never a kept one."""
    kernel = Kernel(store_url, workspace_root=tmp_path / "ws")
    scopes, cleanup = kernel.environment.scopes, kernel.environment.cleanup
    try:
        lease = await kernel.start_run(owner=AGENT)
        scope = scopes.get(str(lease.workspace_scope_id))
        folder = scopes.ensure_folder(scope)
        (folder / "left.txt").write_text("x", encoding="utf-8")
        revoked, _ = cleanup.revoke_ops([scope])  # the end commit, and then the process died
        await kernel._commit_run(lease, {"run_id": lease.run_id, "status": "succeeded",
                                         "updated_at": time.time()}, *revoked)
        running = await kernel.start_run(owner=AGENT)
        running_folder = scopes.ensure_folder(scopes.get(str(running.workspace_scope_id)))
        kept = await kernel.start_run(owner=AGENT, keep_workspace=True)
        kept_scope = scopes.get(str(kept.workspace_scope_id))
        await kernel.end_run(kept)

        assert await cleanup.sweep_ended() == []  # within the grace: its process may clean it
        (done,) = await cleanup.sweep_ended(now=time.time() + 61)

        assert (done.run_id, done.state, done.deleted) == (
            lease.run_id, "done", (scope.workspace_scope_id,))
        assert not folder.exists() and scopes.get(scope.workspace_scope_id).state == "deleted"
        assert running_folder.is_dir() and scopes.path(kept_scope).is_dir()
        assert await cleanup.sweep_ended(now=time.time() + 61) == []  # nothing left to do
    finally:
        kernel.close()
