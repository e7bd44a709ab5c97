"""Built-in file tools and exec through the one pipeline (000 §7.2, §7.3, §9 workspace bullets):
each call is a recorded operation on the run's own workspace; other scopes are unreachable."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.sandbox.conftest import BACKENDS, require_backend, searchable

from agentloom import Kernel, StrictInput, Tool, ToolContext
from agentloom.kernel import RunLease
from agentloom.sandbox import EnvironmentPolicy
from agentloom.tools.builtin.fs import fs_spec

FS = ["fs.read", "fs.write", "fs.edit", "fs.patch", "fs.list", "fs.glob", "fs.grep", "fs.mkdir",
      "fs.move", "fs.delete"]


class NoteInput(StrictInput):
    text: str


class WriteNote(Tool[NoteInput]):
    name = "notes.write"
    description = "Write note.txt through ctx.files."
    input_type = NoteInput

    async def execute(self, args: NoteInput, ctx: ToolContext) -> dict[str, Any]:
        saved = await ctx.files.write("note.txt", args.text)
        return {"path": saved.path, "etag": saved.etag}


@pytest.fixture(params=BACKENDS)
def exec_backend(request: pytest.FixtureRequest) -> str:
    """Each confining backend this machine has (the others skip with their reason)."""
    require_backend(request.param)
    return str(request.param)


@pytest.fixture
async def kernel(store_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Kernel]:
    backend = request.getfixturevalue("exec_backend") if "exec_backend" in request.fixturenames else "auto"
    searchable(tmp_path)  # as root, bubblewrap reaches the work folder by path as the sandbox uid
    k = Kernel(store_url, workspace_root=tmp_path / "shared",
               sandbox=EnvironmentPolicy(allow_shell=True), sandbox_backend=backend)
    k.publish("rel", [*FS, "exec", WriteNote()],
              roles={"main": [*FS, "exec", "notes.write"]})
    yield k
    k.close()


async def call(k: Kernel, lease: RunLease, name: str, **args: Any) -> Any:
    ctx = k.invocation_context(lease, release_id="rel")
    return await k.bus.request(name, args, ctx)


def folder(k: Kernel, lease: RunLease) -> Path:
    assert lease.workspace_scope_id is not None
    return k.environment.scopes.ensure_folder(k.environment.scopes.get(lease.workspace_scope_id))


async def test_s7_3_file_tools_work_in_the_runs_own_workspace(kernel: Kernel) -> None:
    lease = await kernel.start_run()
    wrote = await call(kernel, lease, "fs_write", path="a.txt", content="hello\nworld\n")
    assert wrote.succeeded, wrote.error
    etag = wrote.result.content[0].data["etag"]
    read = await call(kernel, lease, "fs_read", path="a.txt")
    assert read.result.content[0].data["content"] == "hello\nworld\n"
    edited = await call(kernel, lease, "fs_edit", path="a.txt", old_text="world",
                        new_text="there", if_match=etag)
    assert edited.succeeded
    again = await call(kernel, lease, "fs_write", path="a.txt", content="x", mode="replace",
                       if_match=etag)
    assert again.outcome == "failed" and again.error.code == "ETAG_MISMATCH"
    assert (folder(kernel, lease) / "a.txt").read_text() == "hello\nthere\n"
    listed = await call(kernel, lease, "fs_list")
    assert [e["name"] for e in listed.result.content[0].data["entries"]] == ["a.txt"]
    assert str(kernel.environment.root) not in str(listed.to_dict())


async def test_s7_3_fs_move_and_fs_delete_without_if_match_tell_the_model_to_read_first(
    kernel: Kernel,
) -> None:
    lease = await kernel.start_run()
    wrote = await call(kernel, lease, "fs_write", path="a.txt", content="keep me\n")
    etag = wrote.result.content[0].data["etag"]
    refused = [await call(kernel, lease, "fs_move", src="a.txt", dst="b.txt"),
               await call(kernel, lease, "fs_delete", path="a.txt")]
    for result in refused:
        assert result.outcome == "failed" and result.error.code == "ETAG_REQUIRED"
        assert "read 'a.txt'" in result.error.message and "if_match" in result.error.message
    assert sorted(p.name for p in folder(kernel, lease).iterdir() if p.name != ".locks") == ["a.txt"]
    for key in ("fs.move", "fs.delete"):  # what the model is told
        assert "needs if_match" in fs_spec(key).description
    moved = await call(kernel, lease, "fs_move", src="a.txt", dst="b.txt", if_match=etag)
    assert moved.succeeded, moved.error
    gone = await call(kernel, lease, "fs_delete", path="b.txt", if_match=etag)
    assert gone.succeeded, gone.error
    assert not (folder(kernel, lease) / "b.txt").exists()


async def test_s8_ctx_files_is_bound_to_the_calls_scope(kernel: Kernel) -> None:
    lease = await kernel.start_run()
    result = await call(kernel, lease, "notes_write", text="from a tool")
    assert result.succeeded, result.error
    assert (folder(kernel, lease) / "note.txt").read_text() == "from a tool"


async def test_s9_cross_run_folders_are_unreachable_by_path_symlink_glob_and_grep(
    kernel: Kernel,
) -> None:
    mine = await kernel.start_run()
    theirs = await kernel.start_run()
    (folder(kernel, theirs) / "secret.txt").write_text("THEIR SECRET")
    os.symlink(folder(kernel, theirs), folder(kernel, mine) / "peek")
    rel = os.path.relpath(folder(kernel, theirs) / "secret.txt", folder(kernel, mine))  # noqa: ASYNC240
    attempts = [
        await call(kernel, mine, "fs_read", path=rel),
        await call(kernel, mine, "fs_read", path="peek/secret.txt"),
        await call(kernel, mine, "fs_read", path=str(folder(kernel, theirs) / "secret.txt")),
        await call(kernel, mine, "fs_glob", pattern="**/secret.txt"),
        await call(kernel, mine, "fs_grep", pattern="THEIR"),
        await call(kernel, mine, "fs_list", path="peek"),
    ]
    for result in attempts:
        seen = str(result.result.to_dict() if result.result else "") + str(result.error)
        assert "THEIR SECRET" not in seen
        if result.succeeded:  # glob / grep succeed, but find nothing of theirs
            assert "secret.txt" not in str(result.result.content[0].data)
    assert [r.outcome for r in attempts[:3]] == ["failed"] * 3


async def test_s9_a_scope_of_another_run_is_refused_even_if_named(kernel: Kernel) -> None:
    mine = await kernel.start_run()
    theirs = await kernel.start_run()
    forged = RunLease(mine.run_id, mine.lease_epoch, theirs.workspace_scope_id)
    result = await call(kernel, forged, "fs_write", path="x.txt", content="x")
    assert result.outcome == "failed" and result.error.category == "permission"
    assert not (folder(kernel, theirs) / "x.txt").exists()


async def test_s7_2_exec_runs_in_the_workspace_and_cannot_see_other_runs(
    kernel: Kernel, exec_backend: str
) -> None:
    mine = await kernel.start_run()
    theirs = await kernel.start_run()
    (folder(kernel, theirs) / "secret.txt").write_text("THEIR SECRET")
    ran = await call(kernel, mine, "exec", shell_script="echo made > out.txt; ls /; "
                     f"cat {folder(kernel, theirs)}/secret.txt; echo done")
    assert ran.succeeded, ran.error
    body = ran.result.content[0].data
    assert body["sandboxed"] is True and body["sandbox_mode"] == exec_backend
    assert "THEIR SECRET" not in body["stdout"] + body["stderr"]
    assert (folder(kernel, mine) / "out.txt").read_text() == "made\n"
    read = await call(kernel, mine, "fs_read", path="out.txt")
    assert read.result.content[0].data["content"] == "made\n"


async def test_f15_large_exec_output_is_a_bounded_preview_with_a_readable_result_ref(
    kernel: Kernel, exec_backend: str
) -> None:
    lease = await kernel.start_run()
    ran = await call(kernel, lease, "exec", argv=["seq", "1", "200000"])
    assert ran.succeeded, ran.error
    body = ran.result.content[0].data
    assert body["truncated"] is True and body["stdout_bytes"] == len(
        "".join(f"{i}\n" for i in range(1, 200001)))
    assert len(body["stdout"]) < 20_000
    ctx = kernel.invocation_context(lease, release_id="rel")
    record = kernel.context.current(ctx.context_scope or "", f"result:{ran.operation_id}")
    assert record is not None
    (stored,) = [s for s in record.data["stored"] if s["name"] == "stdout"]
    page = await kernel.bus.request("result_read", {"result_ref": stored["result_ref"],
                                                    "offset": 0, "limit": 12}, ctx)
    assert page.result.content[0].data["text"] == "1\n2\n3\n4\n5\n6\n"
    assert str(kernel.environment.root) not in str(record.data)


async def test_s7_2_exec_timeout_kills_and_is_reported_unknown(kernel: Kernel, exec_backend: str) -> None:
    lease = await kernel.start_run()
    ran = await call(kernel, lease, "exec", argv=["sleep", "30"], timeout_s=0.3)
    assert ran.outcome == "unknown" and ran.error.code == "EXEC_TIMEOUT"


async def test_s7_4_end_run_deletes_the_non_persistent_workspace(kernel: Kernel) -> None:
    lease = await kernel.start_run()
    await call(kernel, lease, "fs_write", path="tmp.txt", content="x")
    path = folder(kernel, lease)
    result = await kernel.end_run(lease)
    assert result.state == "done" and not path.exists()
    after = await call(kernel, lease, "fs_write", path="again.txt", content="x")
    assert after.outcome == "failed"


async def test_s7_1_a_persistent_session_keeps_its_folder_and_the_old_run_loses_writes(
    kernel: Kernel,
) -> None:
    first = await kernel.start_run(session_id="chat-1")
    await call(kernel, first, "fs_write", path="memo.txt", content="v1")
    second = await kernel.start_run(session_id="chat-1")
    assert folder(kernel, first) == folder(kernel, second)
    stale = await call(kernel, first, "fs_write", path="late.txt", content="x")
    assert stale.outcome == "failed" and stale.error.code == "READ_ONLY"
    read = await call(kernel, second, "fs_read", path="memo.txt")
    assert read.result.content[0].data["content"] == "v1"
    await kernel.end_run(second)
    assert (folder(kernel, second) / "memo.txt").exists()


@pytest.mark.parametrize("other", ["another_session", "another_owner", "another_run"])
async def test_s9_cross_scope_reads_globs_greps_symlinks_and_scripts_are_refused(
    kernel: Kernel, other: str
) -> None:
    from agentloom.refs import OwnerRef

    mine = await kernel.start_run(session_id="mine")
    if other == "another_session":
        theirs = await kernel.start_run(session_id="theirs")
    elif other == "another_owner":
        theirs = await kernel.start_run(session_id="mine", owner=OwnerRef(kind="agent", id="x"))
    else:
        theirs = await kernel.start_run()
    target = folder(kernel, theirs)
    assert target != folder(kernel, mine)
    (target / "secret.txt").write_text("THEIR SECRET")
    os.symlink(target, folder(kernel, mine) / "peek")
    results = [
        await call(kernel, mine, "fs_read", path="peek/secret.txt"),
        await call(kernel, mine, "fs_read", path=str(target / "secret.txt")),
        await call(kernel, mine, "fs_glob", pattern="**/secret.txt"),
        await call(kernel, mine, "fs_grep", pattern="THEIR"),
    ]
    # exec under whatever sandbox this machine has (a refusal, where it has none)
    results.append(await call(kernel, mine, "exec",
                              shell_script=f"cat peek/secret.txt {target}/secret.txt"))
    for result in results:
        seen = str(result.result.to_dict() if result.result else "") + str(result.error)
        assert "THEIR SECRET" not in seen
    assert [r.outcome for r in results[:2]] == ["failed", "failed"]
