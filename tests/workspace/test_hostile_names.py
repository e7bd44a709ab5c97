"""Issue 11, point 1: names that are not UTF-8 never crash the file tools.

Such names (``git clone`` or a tarball can create them) are printed losslessly — each
undecodable byte as ``\\xNN``, a real backslash before ``xNN`` doubled — in every path the
tools return and every message, and every tool accepts the printed form back and acts on the
real bytes. Lone surrogates from a model are refused as ``INVALID_PATH``. On both resolvers;
end to end through the ``fs.*`` tools on a Kernel with a durable store.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.workspace.layout import Layout, snapshot

from agentloom import Kernel
from agentloom.store import open_store
from agentloom.workspace._atomic import etag_of
from agentloom.workspace.paths import RelPath, parse_path
from agentloom.workspace.service import WorkspaceError, WorkspaceHandle, WorkspaceService

FS = ["fs.read", "fs.write", "fs.edit", "fs.patch", "fs.list", "fs.glob", "fs.grep", "fs.mkdir",
      "fs.move", "fs.delete"]


def plant(folder: Path, rel: bytes, content: bytes | None = b"needle\n") -> None:
    """Create ``rel`` (raw bytes) under ``folder`` the way a script would; ``None`` is a folder."""
    path = os.fsencode(folder) + b"/" + rel
    if content is None:
        os.mkdir(path, 0o700)
        return
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    try:
        os.write(fd, content)
    finally:
        os.close(fd)


def names(folder: Path) -> list[bytes]:
    return sorted(os.listdir(os.fsencode(folder)))


def utf8_json(value: Any) -> bytes:
    """What a store or the model wire does with a result; raises on a surrogate."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


@pytest.fixture
def hostile(layout: Layout) -> Path:
    """``hostile/`` holding a non-UTF-8 file, a real ``\\xff`` spelt in ASCII, and a
    non-UTF-8 folder with a non-UTF-8 file inside."""
    folder = layout.root / "hostile"
    folder.mkdir()
    plant(folder, b"bad\xff.txt")
    plant(folder, b"lit\\xff.txt", b"literal needle\n")
    plant(folder, b"sub\xfe", None)
    plant(folder, b"sub\xfe/in\x80.txt")
    return folder


async def expect(code: str, call: Any) -> WorkspaceError:
    with pytest.raises(WorkspaceError) as info:
        await call
    assert info.value.code == code, info.value
    return info.value


async def test_i11_1_non_utf8_file_names_are_listed_globbed_and_grepped_escaped(
    service: WorkspaceService, handle: WorkspaceHandle, hostile: Path
) -> None:
    listing = await service.list(handle, "hostile")
    assert [(e.name, e.path) for e in listing.entries] == [
        (r"bad\xff.txt", r"hostile/bad\xff.txt"),
        (r"lit\\xff.txt", r"hostile/lit\\xff.txt"),
        (r"sub\xfe", r"hostile/sub\xfe"),
    ]
    globbed = await service.glob(handle, "**/*.txt", root="hostile")
    assert globbed.paths == (r"hostile/bad\xff.txt", r"hostile/lit\\xff.txt", r"hostile/sub\xfe/in\x80.txt")
    # Patterns match the names as printed.
    assert (await service.glob(handle, r"hostile/bad\xff*")).paths == (r"hostile/bad\xff.txt",)
    grepped = await service.grep(handle, "needle", paths=["hostile"])
    assert [m.path for m in grepped.matches] == list(globbed.paths)
    missing = await expect("NOT_FOUND", service.read(handle, r"hostile/missing\xfe.txt"))
    assert r"'hostile/missing\xfe.txt'" in missing.error.message  # as printed, backslash single
    for value in (listing, globbed, grepped, missing.error.message):
        utf8_json(value)


async def test_i11_1_an_escaped_name_is_accepted_back_by_every_file_tool(
    service: WorkspaceService, handle: WorkspaceHandle, hostile: Path
) -> None:
    bad = r"hostile/bad\xff.txt"
    read = await service.read(handle, bad)
    assert (read.path, read.content) == (bad, "needle\n")
    assert (await service.read(handle, r"hostile/lit\\xff.txt")).content == "literal needle\n"
    v1 = await service.write(handle, bad, "needle one\n", mode="replace", if_match=read.etag)
    v2 = await service.edit(handle, bad, "one", "two", if_match=v1.etag)
    diff = f"--- a/{bad}\n+++ b/{bad}\n@@ -1 +1 @@\n-needle two\n+needle three\n"
    v3 = await service.apply_patch(handle, bad, diff, if_match=v2.etag)
    assert v3.path == bad
    assert (hostile / os.fsdecode(b"bad\xff.txt")).read_bytes() == b"needle three\n"
    await service.write(handle, r"hostile/new\xfd.txt", "fresh\n")
    made = await service.mkdir(handle, r"hostile/dir\xfc")
    assert (made.name, made.path) == (r"dir\xfc", r"hostile/dir\xfc")
    await service.mkdir(handle, r"hostile/p\xfb/q\xfa", parents=True)
    moved = await service.move(handle, bad, r"hostile/dir\xfc/moved\xf9.txt", if_match=v3.etag)
    assert (moved.name, moved.path) == (r"moved\xf9.txt", r"hostile/dir\xfc/moved\xf9.txt")
    assert [e.name for e in (await service.list(handle, r"hostile/dir\xfc")).entries] == [r"moved\xf9.txt"]
    inside = await service.glob(handle, "*", root=r"hostile/sub\xfe")
    assert inside.paths == (r"hostile/sub\xfe/in\x80.txt",)
    hit = await service.grep(handle, "three", paths=[r"hostile/dir\xfc/moved\xf9.txt"])
    assert [m.path for m in hit.matches] == [r"hostile/dir\xfc/moved\xf9.txt"]
    gone = await service.delete(handle, r"hostile/dir\xfc", recursive=True)
    assert (gone.path, gone.removed) == (r"hostile/dir\xfc", 2)
    last = await service.read(handle, r"hostile/sub\xfe/in\x80.txt")
    await service.delete(handle, r"hostile/sub\xfe/in\x80.txt", if_match=last.etag)
    assert names(hostile) == [b"lit\\xff.txt", b"new\xfd.txt", b"p\xfb", b"sub\xfe"]
    assert names(hostile / os.fsdecode(b"p\xfb")) == [b"q\xfa"]
    assert names(hostile / os.fsdecode(b"sub\xfe")) == []
    # One spelling per name: escapes of bytes that are text are refused, not aliases.
    for alias in (r"hostile/\x6cit.txt", r"hostile/sub\xfe/\x2e\x2e/bad\xff.txt", r"hostile/\xc3\xa9"):
        await expect("INVALID_PATH", service.read(handle, alias))


async def refused_by_every_tool(service: WorkspaceService, handle: WorkspaceHandle, raw: str) -> None:
    """Every tool that takes ``raw`` as a path refuses it with ``INVALID_PATH``."""
    await expect("INVALID_PATH", service.read(handle, raw))
    await expect("INVALID_PATH", service.write(handle, raw, "x"))
    await expect("INVALID_PATH", service.edit(handle, raw, "needle", "pin"))
    await expect("INVALID_PATH", service.apply_patch(handle, raw, "@@ -1 +1 @@\n-needle\n+pin\n"))
    await expect("INVALID_PATH", service.list(handle, raw))
    await expect("INVALID_PATH", service.glob(handle, "*", root=raw))
    await expect("INVALID_PATH", service.grep(handle, "needle", paths=[raw]))
    await expect("INVALID_PATH", service.mkdir(handle, raw))
    await expect("INVALID_PATH", service.move(handle, raw, "hostile/moved.txt"))
    await expect("INVALID_PATH", service.move(handle, r"hostile/lit\\xff.txt", raw))
    err = await expect("INVALID_PATH", service.delete(handle, raw))
    utf8_json(err.error.message)


async def test_i11_1_a_lone_surrogate_path_from_a_model_is_refused_not_a_crash(
    service: WorkspaceService, handle: WorkspaceHandle, hostile: Path
) -> None:
    before = snapshot(hostile)
    # The last one used to be an alias of the real bytes (surrogateescape); only \xff is now.
    for raw in ("\ud800", "hostile/\udfff.txt", "hostile/bad\udcff.txt"):
        await refused_by_every_tool(service, handle, raw)
        # A surrogate in a pattern is not a name: it matches nothing and crashes nothing.
        name = raw.rsplit("/", 1)[-1]
        assert (await service.glob(handle, name + "*", root="hostile")).paths == ()
        assert (await service.grep(handle, name, paths=["hostile"], literal=True)).matches == ()
    assert snapshot(hostile) == before


@given(st.binary(min_size=1, max_size=255).filter(lambda b: b"/" not in b and b"\x00" not in b
                                                   and b not in (b".", b"..")))
def test_i11_1_every_byte_name_prints_as_text_and_reads_back_to_the_same_bytes(raw: bytes) -> None:
    printed = RelPath((os.fsdecode(raw),)).display
    printed.encode("utf-8")
    assert parse_path(printed).kernel == raw
    assert parse_path(f"dir/{printed}").display == f"dir/{printed}"


@pytest.fixture
async def kernel(durable_store_url: str, tmp_path: Path) -> Any:
    k = Kernel(durable_store_url, workspace_root=tmp_path / "shared")
    k.publish("rel", FS, roles={"main": FS})
    yield k
    k.close()


async def test_i11_1_fs_tools_on_a_kernel_list_and_use_non_utf8_names_and_the_results_are_committed(
    kernel: Kernel, durable_store_url: str
) -> None:
    lease = await kernel.start_run()
    assert lease.workspace_scope_id is not None
    scopes = kernel.environment.scopes
    plant(scopes.ensure_folder(scopes.get(lease.workspace_scope_id)), b"bad\xff.txt")  # as exec would
    ctx = kernel.invocation_context(lease, release_id="rel")
    calls = [("fs_list", {}), ("fs_glob", {"pattern": "*"}), ("fs_grep", {"pattern": "needle"}),
             ("fs_read", {"path": r"bad\xff.txt"}),
             ("fs_move", {"src": r"bad\xff.txt", "dst": r"moved\xfe.txt",
                          "if_match": etag_of(b"needle\n")}),
             ("fs_read", {"path": r"bad\xff.txt"})]
    done = [await kernel.bus.request(name, args, ctx) for name, args in calls]
    assert [r.outcome for r in done] == ["succeeded"] * 5 + ["failed"]  # moved away
    assert done[0].result.content[0].data["entries"][0]["name"] == r"bad\xff.txt"
    assert done[1].result.content[0].data["paths"] == [r"bad\xff.txt"]
    assert done[2].result.content[0].data["matches"][0]["path"] == r"bad\xff.txt"
    assert done[4].result.content[0].data["path"] == r"moved\xfe.txt"
    assert done[5].error is not None and done[5].error.code == "NOT_FOUND"
    assert r"'bad\xff.txt'" in done[5].error.message
    record = kernel.context.current(ctx.context_scope or "", f"result:{done[0].operation_id}")
    assert record is not None
    assert json.loads(record.data["preview"])["entries"][0]["name"] == r"bad\xff.txt"
    assert (await kernel.end_run(lease)).state == "done"
    kernel.close()
    store = open_store(durable_store_url)  # a fresh reader: everything was committed
    try:
        ops = store.query("operations", {"run_id": lease.run_id, "event_type": "tool"})
        assert sorted(op["outcome"] for op in ops) == ["failed"] + ["succeeded"] * 5
        raw = {op["data"]["request"]["exposed_name"]: op["data"]["raw"]["content"][0]["data"]
               for op in ops if op["outcome"] == "succeeded"}
        assert raw["fs_list"]["entries"][0]["name"] == r"bad\xff.txt"
        assert raw["fs_move"]["path"] == r"moved\xfe.txt"
    finally:
        store.close()
