"""000 §7.4 (issue #14 item 13): deleting an agent owner first refuses its new runs, stops its
running runs and revokes their environments, then deletes its sessions, runs, records,
checkpoints, the blobs no other owner refers to and its folders — in every table, on SQLite
and PostgreSQL — and leaves every row and file of another owner byte for byte as it was."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentloom
from agentloom.agent import AgentSpec, RunHandle, Runtime
from agentloom.store import Put, WriteSet
from agentloom.store.owners import OwnerDeleted
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.tools.sdk import ToolContext

from .conftest import WAIT_S, answer, calls, connection, run, tool_call
from .owners_support import dump, files, owner_rows, union

SHARED = "shared-content " * 1000  # both owners get this result: one content-addressed blob
ALPHA = "alpha-only-content " * 60_000  # over 1 MiB: a blob in chunks (blob_chunks)
BETA = "beta-only-content " * 1000
GATES: dict[str, asyncio.Event] = {}


def allow(event: Any) -> None:
    """A before hook on every tool call: each call leaves a hook_invocations row."""


@agentloom.tool
async def shared_big(ctx: ToolContext) -> str:
    """A large result both agents get."""
    return SHARED


@agentloom.tool
async def alpha_big(ctx: ToolContext) -> str:
    """A large result only alpha gets."""
    return ALPHA


@agentloom.tool
async def beta_big(ctx: ToolContext) -> str:
    """A large result only beta gets."""
    return BETA


@agentloom.tool
async def hold(ctx: ToolContext) -> str:
    """Stay in the call until the run is stopped (or the test lets it go)."""
    GATES["entered"].set()
    await GATES["release"].wait()
    return "released"


@pytest.fixture(autouse=True)
def gates() -> None:
    GATES["entered"] = asyncio.Event()
    GATES["release"] = asyncio.Event()


def work(name: str, big: str) -> list[Any]:
    """A turn writing a file and calling the shared and the agent's own large-result tool."""
    return calls(tool_call("w", "fs_write", path=f"{name}.txt", content=f"{name} was here"),
                 tool_call("s", "shared_big"), tool_call("o", big))


async def populate(rt: Runtime, servers: dict[str, ScriptedOpenAIServer]) -> None:
    """Each agent: a session run (its persistent folder keeps the file) and a run of its own."""
    for name in ("alpha", "beta"):
        for session in (f"{name}-session", None):
            servers[name].script(work(name, f"{name}_big"), answer(f"{name} done"))
            result = await run(rt, "do the work", agent=name, session=session)
            assert result.status == "succeeded", result


async def approval_and_receipt(rt: Runtime, agent: str) -> None:
    """An answered approval (its question and arguments are the owner's data) and a revocation
    receipt on a run of ``agent`` (issue 17's tables)."""
    run_id = next(r["run_id"] for r in rt.store.query("runs") if r["agent"] == agent)
    op_id = rt.store.query("operations", {"run_id": run_id})[0]["operation_id"]
    await rt.kernel.coordinator.commit(WriteSet((
        Put("approvals", {"operation_id": op_id, "run_id": run_id, "status": "approved",
                          "created_at": 1.0, "deadline": None, "answered_at": 2.0,
                          "data": {"question": f"{agent}'s secret plan?"}}),
        Put("revocations", {"run_id": run_id, "lease_epoch": 1, "worker_id": "w",
                            "confirmed": 1, "created_at": 1.0, "data": {}}))))


def runtime(factory: Callable[..., Runtime], url: str,
            servers: dict[str, ScriptedOpenAIServer]) -> Runtime:
    return factory([
        AgentSpec(name="alpha", model=connection(servers["alpha"]),
                  tools=("fs.write", shared_big, alpha_big, hold)),
        AgentSpec(name="beta", model=connection(servers["beta"]),
                  tools=("fs.write", shared_big, beta_big)),
    ], store=url, hooks=[allow])


async def test_s7_4_deleting_an_owner_removes_all_of_it_and_leaves_another_owner_byte_for_byte(
    durable_store_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime], tmp_path: Path,
) -> None:
    url = durable_store_url
    scripted = {"alpha": servers(), "beta": servers()}
    rt = runtime(runtime_factory, url, scripted)
    await populate(rt, scripted)
    await approval_and_receipt(rt, "alpha")
    await approval_and_receipt(rt, "beta")
    # a run of alpha that is running when it is deleted: inside a call that never returns
    scripted["alpha"].script(calls(tool_call("h", "hold")), answer("never"))
    held: RunHandle = await rt.start("hold on", agent="alpha")
    await asyncio.wait_for(GATES["entered"].wait(), WAIT_S)

    before = dump(url)
    alpha = owner_rows(before, "agent", "alpha", blob_markers=[b"alpha-only-content"])
    beta = owner_rows(before, "agent", "beta", blob_markers=[b"beta-only-content"])
    shared = {t: {r for r in rows if t in ("blobs", "blob_chunks")}
              for t, rows in owner_rows(before, "agent", "-", blob_markers=[
                  b"shared-content"]).items()}
    assert shared["blobs"] and alpha["blobs"] and beta["blobs"]  # each kind of blob exists
    assert alpha["blob_chunks"]  # alpha's large one is stored in chunks
    assert union(alpha, beta, shared) == before  # every row is one owner's (or a shared blob)
    for t in ("runs", "operations", "attempts", "hook_invocations", "context_records",
              "results", "sessions", "session_turns", "workspace_scopes", "file_roots",
              "cleanup_jobs", "approvals", "revocations"):
        assert alpha[t] and beta[t], t  # both owners have rows in every table that matters
    root = tmp_path / "workspaces"
    frids = {o: next(r[3] for r in before["file_roots"] if r[1] == o) for o in ("alpha", "beta")}
    mine = (f"agents/{frids['alpha']}/", f"system/agents/{frids['alpha']}/")
    files_before = files(root)
    assert any(p.startswith(mine[0]) and p.endswith("alpha.txt") for p in files_before)
    assert any(p.endswith("beta.txt") for p in files_before)

    summary = await asyncio.wait_for(rt.delete_owner("agent:alpha"), WAIT_S)

    assert summary.state == "deleted" and summary.stopped == (held.run_id,)
    stopped = await asyncio.wait_for(held.result(), WAIT_S)
    assert stopped.status == "cancelled"
    after = dump(url)
    (stone,) = after.pop("deleted_owners")  # alpha's tombstone: its identity and counts only
    assert stone[:4] == ("agent", "alpha", "default", "deleted")
    expected = union(beta, shared)
    expected.pop("deleted_owners")
    assert after == expected  # beta's rows and the shared blob, byte for byte; nothing of alpha
    assert summary.rows["runs"] == 3 and summary.blobs_kept >= 1
    assert files(root) == {p: h for p, h in files_before.items() if not p.startswith(mine)}
    assert not (root / mine[0]).exists() and not (root / mine[1]).exists()

    with pytest.raises(OwnerDeleted) as refused:  # no new run, no new session of alpha
        await rt.start("again", agent="alpha", session="alpha-session")
    assert refused.value.code == "OWNER_DELETED"
    with pytest.raises(OwnerDeleted):
        await rt.kernel.start_run(owner=agentloom.OwnerRef(kind="agent", id="alpha"))
    assert dump(url) == {**after, "deleted_owners": {stone}}  # the refusals wrote nothing

    again = await rt.delete_owner("agent:alpha")
    assert again.state == "already_deleted" and again.to_dict()["total_rows"] == 0
    assert dump(url) == {**after, "deleted_owners": {stone}}
    scripted["beta"].script(answer("beta still works"))
    assert (await run(rt, "still here?", agent="beta")).status == "succeeded"


async def test_s7_4_deleting_an_owner_with_nothing_stored_leaves_only_its_tombstone(
    durable_store_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime],
) -> None:
    scripted = {"alpha": servers(), "beta": servers()}
    rt = runtime(runtime_factory, durable_store_url, scripted)
    before = dump(durable_store_url)
    summary = await rt.delete_owner("agent:alpha")
    assert (summary.state, dict(summary.rows), summary.stopped) == ("deleted", {}, ())
    after = dump(durable_store_url)
    assert len(after.pop("deleted_owners")) == 1
    before.pop("deleted_owners")
    assert after == before


async def test_s7_4_a_blob_an_imported_skill_holds_stays_when_the_owner_is_deleted(
    durable_store_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime], tmp_path: Path,
) -> None:
    """A Skill file with the very text of one of alpha's results is the same content-addressed
    blob: deleting alpha leaves it, and the skill reads whole (shared resources are only
    unreferenced, 000 §7.4)."""
    from agentloom.skills.service import SourceSpec, import_skills
    from agentloom.store import open_store

    scripted = {"alpha": servers(), "beta": servers()}
    rt = runtime(runtime_factory, durable_store_url, scripted)
    await populate(rt, scripted)
    folder = tmp_path / "skills" / "alpha-notes"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: alpha-notes\ndescription: Notes.\n---\nRead "
                                     "notes.txt.\n", encoding="utf-8")
    (folder / "notes.txt").write_text(ALPHA, encoding="utf-8")
    store = open_store(durable_store_url)
    try:
        (imported,) = import_skills(SourceSpec(path=tmp_path / "skills"), store).skills
    finally:
        store.close()
    (notes,) = [f for f in imported.version.files if f.path == "notes.txt"]
    before = dump(durable_store_url)
    assert any(r[0] == notes.sha256 for r in before["blobs"])  # one blob: alpha's and the skill's

    summary = await asyncio.wait_for(rt.delete_owner("agent:alpha"), WAIT_S)

    assert summary.state == "deleted" and summary.blobs_kept >= 2  # the shared one, the skill's
    after = dump(durable_store_url)
    assert {r for r in before["blobs"] if r[0] == notes.sha256} <= after["blobs"]
    assert {r for r in before["blob_chunks"] if r[0] == notes.sha256} <= after["blob_chunks"]
