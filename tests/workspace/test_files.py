"""The file tools' contract (000 §7.3): versions, conflicts, refusals and F01, on both resolvers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.workspace.layout import Layout, snapshot

from agentloom.workspace.paths import TEMP_PREFIX
from agentloom.workspace.service import (
    FileVersion,
    ListEntry,
    WorkspaceError,
    WorkspaceHandle,
    WorkspaceService,
)


def tree(root: Path) -> dict[str, tuple[object, ...]]:
    """Everything under the root, ``.locks`` included: "untouched" means not even a lock file."""
    return snapshot(root)


async def expect(code: str, call: object) -> WorkspaceError:
    with pytest.raises(WorkspaceError) as info:
        await call  # type: ignore[misc]
    assert info.value.code == code, info.value
    return info.value


# --- write modes and etags --------------------------------------------------------------


async def test_write_create_only_on_an_existing_file_is_exists_and_the_file_is_unchanged(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = tree(layout.root)
    err = await expect("EXISTS", service.write(handle, "decoy.txt", "new"))
    assert err.error.category == "conflict"
    assert tree(layout.root) == before


async def test_write_replace_without_etag_is_etag_required_and_the_file_is_unchanged(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = tree(layout.root)
    err = await expect("ETAG_REQUIRED", service.write(handle, "decoy.txt", "new", mode="replace"))
    assert err.error.category == "validation"
    assert tree(layout.root) == before


async def test_write_replace_with_a_stale_etag_is_etag_mismatch_and_the_file_is_byte_identical(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    first = await service.read(handle, "decoy.txt")
    v2 = await service.write(handle, "decoy.txt", "second\n", mode="replace", if_match=first.etag)
    before = (layout.root / "decoy.txt").read_bytes()
    err = await expect(
        "ETAG_MISMATCH", service.write(handle, "decoy.txt", "third\n", mode="replace", if_match=first.etag)
    )
    assert err.error.category == "conflict"
    assert (layout.root / "decoy.txt").read_bytes() == before == b"second\n"
    assert v2.etag == (await service.read(handle, "decoy.txt")).etag


async def test_write_create_only_with_if_match_is_invalid_arguments(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = tree(layout.root)
    await expect("INVALID_ARGUMENTS", service.write(handle, "new.txt", "x", if_match="sha256:" + "0" * 64))
    await expect("INVALID_ARGUMENTS", service.write(handle, "new.txt", "x", mode="append"))  # type: ignore[arg-type]
    assert tree(layout.root) == before


async def test_write_then_read_round_trips_with_a_content_hash_etag(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    v = await service.write(handle, "/work/inner/new.txt", "héllo\n")
    assert v == FileVersion(path="inner/new.txt", etag=v.etag, size=len("héllo\n".encode()))
    assert v.etag.startswith("sha256:") and len(v.etag) == 7 + 64
    r = await service.read(handle, "inner/new.txt")
    assert (r.content, r.etag, r.size) == ("héllo\n", v.etag, 7)
    replaced = await service.write(
        handle, "inner/new.txt", "bye\n", mode="replace", if_match=v.etag.removeprefix("sha256:")
    )
    assert (layout.root / "inner/new.txt").read_text() == "bye\n" and replaced.size == 4
    assert not [n for n in os.listdir(layout.root / "inner") if n.startswith(TEMP_PREFIX)]


async def test_write_keeps_the_mode_of_the_file_it_replaces(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    os.chmod(layout.root / "decoy.txt", 0o600)
    cur = await service.read(handle, "decoy.txt")
    await service.write(handle, "decoy.txt", "x", mode="replace", if_match=cur.etag)
    assert (layout.root / "decoy.txt").stat().st_mode & 0o777 == 0o600


# --- read -------------------------------------------------------------------------------


async def test_read_of_a_binary_file_is_binary_file_not_garbage(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    (layout.root / "nul.bin").write_bytes(b"abc\x00def")
    (layout.root / "latin1.txt").write_bytes("café".encode("latin-1"))
    for name in ("nul.bin", "latin1.txt"):
        err = await expect("BINARY_FILE", service.read(handle, name))
        assert err.error.category == "validation"


async def test_read_offsets_count_characters_and_next_offset_pages_through(
    service: WorkspaceService, handle: WorkspaceHandle
) -> None:
    text = "αβγ\n" * 10
    await service.write(handle, "greek.txt", text)
    parts, offset = [], 0
    while True:
        s = await service.read(handle, "greek.txt", offset, 7)
        parts.append(s.content)
        assert s.offset == offset and s.size == len(text.encode())
        if s.next_offset is None:
            break
        offset = s.next_offset
    assert "".join(parts) == text and len(parts) == 6
    await expect("INVALID_ARGUMENTS", service.read(handle, "greek.txt", len(text) + 1))
    await expect("INVALID_ARGUMENTS", service.read(handle, "greek.txt", -1))
    await expect("INVALID_ARGUMENTS", service.read(handle, "greek.txt", 0, 0))


async def test_read_of_a_folder_or_missing_file_is_a_clear_error(
    service: WorkspaceService, handle: WorkspaceHandle
) -> None:
    await expect("IS_A_DIRECTORY", service.read(handle, "inner"))
    await expect("NOT_FOUND", service.read(handle, "inner/nope.txt"))
    await expect("NOT_A_DIRECTORY", service.read(handle, "decoy.txt/x"))


async def test_read_of_a_fifo_does_not_block(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    os.mkfifo(layout.root / "pipe")
    await expect("NOT_A_FILE", service.read(handle, "pipe"))


# --- edit and patch ---------------------------------------------------------------------


async def test_edit_with_the_wrong_match_count_is_match_count_and_the_file_is_unchanged(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    await service.write(handle, "e.txt", "a x a x a\n")
    before = tree(layout.root)
    err = await expect("MATCH_COUNT", service.edit(handle, "e.txt", "a", "b"))
    assert err.error.category == "conflict" and err.error.details == {"found": 3, "expected": 1}
    await expect("MATCH_COUNT", service.edit(handle, "e.txt", "zzz", "b"))
    assert tree(layout.root) == before
    v = await service.edit(handle, "e.txt", "a", "b", expected_matches=3)
    assert (layout.root / "e.txt").read_text() == "b x b x b\n"
    await expect(
        "ETAG_MISMATCH",
        service.edit(handle, "e.txt", "x", "y", expected_matches=2, if_match="sha256:" + "1" * 64),
    )
    await service.edit(handle, "e.txt", "x", "y", expected_matches=2, if_match=v.etag)
    assert (layout.root / "e.txt").read_text() == "b y b y b\n"


async def test_apply_patch_applies_one_file_diff_exactly_and_tolerates_a_small_offset(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    await service.write(handle, "p.txt", "".join(f"line {i}\n" for i in range(1, 21)))
    # The hunk says it starts at line 3; its context really starts at line 5 (offset 2).
    diff = "--- a/p.txt\n+++ b/p.txt\n@@ -3,3 +3,3 @@\n line 5\n-line 6\n+LINE SIX\n line 7\n"
    await service.apply_patch(handle, "p.txt", diff)
    lines = (layout.root / "p.txt").read_text().splitlines()
    assert lines[5] == "LINE SIX" and len(lines) == 20
    add = "@@ -20,0 +21,1 @@\n+line 21\n"
    await service.apply_patch(handle, "/work/p.txt", add)
    assert (layout.root / "p.txt").read_text().endswith("line 20\nline 21\n")


async def test_apply_patch_with_context_that_does_not_match_is_patch_conflict_and_changes_nothing(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    await service.write(handle, "p.txt", "one\ntwo\nthree\n")
    before = tree(layout.root)
    err = await expect(
        "PATCH_CONFLICT", service.apply_patch(handle, "p.txt", "@@ -1,2 +1,2 @@\n one\n-TWO\n+2\n")
    )
    assert err.error.category == "conflict"
    assert tree(layout.root) == before


@pytest.mark.parametrize(
    "diff",
    [
        "--- a/other.txt\n+++ b/other.txt\n@@ -1 +1 @@\n-one\n+1\n",
        "--- a/p.txt\n+++ b/p.txt\n@@ -1 +1 @@\n-one\n+1\n--- a/q.txt\n+++ b/q.txt\n@@ -1 +1 @@\n-x\n+y\n",
        "diff --git a/p.txt b/p.txt\n@@ -1 +1 @@\n-one\n+1\n"
        "diff --git a/q.txt b/q.txt\n@@ -1 +1 @@\n-x\n+y\n",
        "--- /dev/null\n+++ b/p.txt\n@@ -0,0 +1 @@\n+x\n",
        "rename from p.txt\nrename to q.txt\n",
        "@@ -1,2 +1,2 @@\n-one\n+1\n",
        "no hunks at all\n",
        "",
    ],
    ids=["other-file", "two-files", "two-git-files", "dev-null", "rename", "bad-counts", "no-hunks", "empty"],
)
async def test_apply_patch_refuses_a_diff_for_another_or_several_files_with_patch_invalid(
    diff: str, service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    await service.write(handle, "p.txt", "one\ntwo\n")
    before = tree(layout.root)
    await expect("PATCH_INVALID", service.apply_patch(handle, "p.txt", diff))
    assert tree(layout.root) == before


async def test_apply_patch_honours_no_newline_at_end_of_file(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    await service.write(handle, "n.txt", "a\nb")
    diff = "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
    await service.apply_patch(handle, "n.txt", diff)
    assert (layout.root / "n.txt").read_text() == "a\nc\n"


# --- list and glob ----------------------------------------------------------------------


async def test_list_pages_through_a_folder_sorted_by_name_and_hides_service_files(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    await service.mkdir(handle, "many")
    for i in range(25):
        await service.write(handle, f"many/f{i:02d}.txt", "x" * i)
    (layout.root / "many" / (TEMP_PREFIX + "leftover")).write_text("partial")
    (layout.root / ".locks").mkdir(exist_ok=True)
    seen: list[ListEntry] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await service.list(handle, "many", cursor=cursor, limit=10)
        seen.extend(page.entries)
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == 3
    assert [e.name for e in seen] == [f"f{i:02d}.txt" for i in range(25)]
    assert seen[3].path == "many/f03.txt" and seen[3].size == 3 and seen[3].kind == "file"
    root_names = [e.name for e in (await service.list(handle, ".", limit=1000)).entries]
    assert ".locks" not in root_names and root_names == sorted(root_names, key=os.fsencode)
    kinds = {e.name: e.kind for e in (await service.list(handle)).entries}
    assert kinds["inner"] == "dir" and kinds["out_abs"] == "symlink" and kinds["decoy.txt"] == "file"
    await expect("INVALID_ARGUMENTS", service.list(handle, cursor="garbage"))
    await expect("INVALID_ARGUMENTS", service.list(handle, limit=0))
    await expect("NOT_A_DIRECTORY", service.list(handle, "decoy.txt"))


async def test_glob_does_not_follow_a_symlink_out_of_the_root(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    res = await service.glob(handle, "**/*.txt")
    assert "inner/file.txt" in res.paths and "decoy.txt" in res.paths
    assert not any(
        p.startswith(("out_abs/", "out_rel/", "chain", "inner/sub/up_")) and p.endswith(".txt")
        for p in res.paths
    )
    assert list(res.paths) == sorted(res.paths) and not res.truncated
    assert (await service.glob(handle, "out_abs/*")).paths == ()
    assert (await service.glob(handle, "**/canary.txt")).paths == ("canary.txt",)
    assert (await service.glob(handle, "out_*")).paths == (
        "out_abs",
        "out_file_abs",
        "out_file_rel",
        "out_rel",
    )
    with pytest.raises(WorkspaceError) as info:
        await service.glob(handle, "*", root="out_abs")
    assert info.value.code in ("PATH_ESCAPE", "SYMLINK_REFUSED")
    await expect("INVALID_PATTERN", service.glob(handle, "../outside/*"))
    await expect("INVALID_PATTERN", service.glob(handle, "/etc/*"))


async def test_glob_is_sorted_and_truncated_at_the_limit(
    service: WorkspaceService, handle: WorkspaceHandle
) -> None:
    await service.mkdir(handle, "g")
    for i in range(12):
        await service.write(handle, f"g/{11 - i:02d}.md", "")
    res = await service.glob(handle, "*.md", root="g", limit=5)
    assert res.paths == tuple(f"g/{i:02d}.md" for i in range(5)) and res.truncated
    full = await service.glob(handle, "g/**", limit=100)
    assert len(full.paths) == 12 and not full.truncated


# --- mkdir / move / delete --------------------------------------------------------------


async def test_mkdir_creates_parents_only_when_asked(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    await expect("NOT_FOUND", service.mkdir(handle, "x/y/z"))
    entry = await service.mkdir(handle, "x/y/z", parents=True)
    assert entry.path == "x/y/z" and (layout.root / "x/y/z").is_dir()
    await service.mkdir(handle, "x/y/z", parents=True)  # an existing folder is fine with parents
    await expect("EXISTS", service.mkdir(handle, "x/y/z"))


async def test_move_never_overwrites_and_checks_if_match(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    etag = (await service.read(handle, "inner/file.txt")).etag
    before = tree(layout.root)
    await expect("EXISTS", service.move(handle, "inner/file.txt", "decoy.txt", if_match=etag))
    await expect(
        "ETAG_MISMATCH", service.move(handle, "inner/file.txt", "moved.txt", if_match="sha256:" + "2" * 64)
    )
    await expect("NOT_FOUND", service.move(handle, "inner/nope.txt", "moved.txt"))
    assert tree(layout.root) == before
    moved = await service.move(handle, "inner/file.txt", "moved.txt", if_match=etag)
    assert moved.path == "moved.txt" and (layout.root / "moved.txt").read_text() == "inside text\n"
    link = await service.move(handle, "out_abs", "inner/link_moved")
    assert link.kind == "symlink" and os.readlink(layout.root / "inner/link_moved") == str(layout.outside)


async def test_delete_needs_recursive_for_a_non_empty_folder_and_never_deletes_the_root(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = tree(layout.root)
    err = await expect("NOT_EMPTY", service.delete(handle, "inner"))
    assert err.error.category == "conflict"
    for root in (".", "/work", "/work/", "./"):
        await expect("ROOT_REFUSED", service.delete(handle, root, recursive=True))
    await expect("INVALID_PATH", service.delete(handle, "inner/..", recursive=True))
    await expect("ETAG_MISMATCH", service.delete(handle, "decoy.txt", if_match="sha256:" + "3" * 64))
    await expect(
        "INVALID_ARGUMENTS", service.delete(handle, "inner", if_match="sha256:" + "3" * 64, recursive=True)
    )
    assert tree(layout.root) == before
    gone = await service.delete(handle, "inner", recursive=True)
    assert gone.kind == "dir" and gone.removed == 5 and not (layout.root / "inner").exists()
    assert (layout.outside / "canary.txt").exists()  # inner/sub/up_abs was removed as a link, not followed
    link = await service.delete(handle, "out_abs")
    assert link.kind == "symlink" and layout.outside.is_dir()
    etag = (await service.read(handle, "decoy.txt")).etag
    assert (await service.delete(handle, "decoy.txt", if_match=etag)).kind == "file"


async def test_s7_3_fs_move_and_fs_delete_require_if_match_for_files(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = tree(layout.root)
    for call in (service.move(handle, "inner/file.txt", "moved.txt"),
                 service.delete(handle, "inner/file.txt")):
        err = await expect("ETAG_REQUIRED", call)
        assert err.error.category == "validation" and err.error.external_outcome == "not_started"
        assert "read 'inner/file.txt'" in err.error.message and "if_match" in err.error.message
    stale = "sha256:" + "5" * 64
    await expect("ETAG_MISMATCH", service.move(handle, "inner/file.txt", "moved.txt", if_match=stale))
    await expect("ETAG_MISMATCH", service.delete(handle, "inner/file.txt", if_match=stale))
    assert tree(layout.root) == before  # nothing moved, nothing deleted, not even a lock file
    # A folder has no etag: moving it or deleting it empty needs none, a non-empty one `recursive`.
    await service.mkdir(handle, "empty")
    assert (await service.move(handle, "empty", "renamed")).kind == "dir"
    assert (await service.delete(handle, "renamed")).kind == "dir"
    await expect("NOT_EMPTY", service.delete(handle, "inner"))
    etag = (await service.read(handle, "inner/file.txt")).etag
    moved = await service.move(handle, "inner/file.txt", "moved.txt", if_match=etag)
    assert moved.kind == "file" and (layout.root / "moved.txt").read_text() == "inside text\n"
    assert (await service.delete(handle, "moved.txt", if_match=etag)).kind == "file"
    assert not (layout.root / "moved.txt").exists()


async def test_s7_3_a_binary_file_read_gives_its_etag_so_it_can_be_moved_and_deleted(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    (layout.root / "nul.bin").write_bytes(b"abc\x00def")
    err = await expect("BINARY_FILE", service.read(handle, "nul.bin"))
    etag = err.error.details["etag"]
    assert etag in err.error.message and "if_match" in err.error.message
    await service.move(handle, "nul.bin", "kept.bin", if_match=etag)
    assert (await service.delete(handle, "kept.bin", if_match=etag)).kind == "file"
    assert not (layout.root / "kept.bin").exists()


# --- refusals ---------------------------------------------------------------------------


async def test_hardlinked_files_are_refused_for_every_tool(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = tree(layout.root), snapshot(layout.outside)
    for call in (
        service.read(handle, "hard_canary"),
        service.write(handle, "hard_canary", "x", mode="replace", if_match="sha256:" + "0" * 64),
        service.edit(handle, "hard_canary", "CANARY", "x"),
        service.apply_patch(handle, "hard_canary", "@@ -1 +1 @@\n-x\n+y\n"),
        service.move(handle, "hard_canary", "elsewhere"),
        service.delete(handle, "hard_canary"),
    ):
        err = await expect("HARDLINK_REFUSED", call)
        assert err.error.category == "permission"
    assert (tree(layout.root), snapshot(layout.outside)) == before
    assert (await service.grep(handle, "CANARY", paths=["hard_canary"], literal=True)).matches == ()


async def test_the_locks_folder_is_refused_to_the_model(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    await service.write(handle, "made.txt", "x")  # creates .locks/
    assert (layout.root / ".locks").is_dir()
    for call in (
        service.read(handle, ".locks/x"),
        service.list(handle, ".locks"),
        service.list(handle, "inner/../.locks"),
        service.write(handle, ".locks/x", "x"),
        service.write(handle, "inner/../.locks", "x"),
        service.mkdir(handle, "inner/../.locks/sub", parents=True),
        service.delete(handle, ".locks", recursive=True),
        service.delete(handle, "inner/../.locks", recursive=True),
        service.move(handle, "made.txt", "inner/../.locks/key"),
        service.glob(handle, "*", root=".locks"),
        service.grep(handle, "x", paths=[".locks"]),
    ):
        await expect("RESERVED_PATH", call)
    os.symlink(".locks", layout.root / "locks_alias")
    with pytest.raises(WorkspaceError) as info:
        await service.list(handle, "locks_alias")
    assert info.value.code in ("RESERVED_PATH", "SYMLINK_REFUSED")


async def test_a_read_only_handle_refuses_every_write(service: WorkspaceService, layout: Layout) -> None:
    ro = await service.open_view(layout.root, scope_id="ro", writable=False)
    before = tree(layout.root)
    etag = (await service.read(ro, "decoy.txt")).etag
    for call in (
        service.write(ro, "n.txt", "x"),
        service.write(ro, "decoy.txt", "x", mode="replace", if_match=etag),
        service.edit(ro, "decoy.txt", "decoy", "x"),
        service.apply_patch(ro, "decoy.txt", "@@ -1 +1 @@\n-decoy\n+x\n"),
        service.mkdir(ro, "d"),
        service.move(ro, "decoy.txt", "d.txt"),
        service.delete(ro, "decoy.txt"),
    ):
        err = await expect("READ_ONLY", call)
        assert err.error.category == "permission"
    assert tree(layout.root) == before
    assert (await service.list(ro)).entries and (await service.glob(ro, "*.txt")).paths


async def test_path_input_rules_give_clear_errors(service: WorkspaceService, handle: WorkspaceHandle) -> None:
    await expect("PATH_ESCAPE", service.read(handle, "/etc/passwd"))
    await expect("PATH_ESCAPE", service.read(handle, "/work/../outside/canary.txt"))
    await expect("INVALID_PATH", service.read(handle, "a\x00b"))
    await expect("INVALID_PATH", service.read(handle, ""))
    await expect("NAME_TOO_LONG", service.read(handle, "n" * 256))
    await expect("PATH_TOO_LONG", service.read(handle, "d/" * 2048))
    assert (await service.read(handle, "/work//inner//./file.txt")).path == "inner/file.txt"
    assert (await service.read(handle, "inner/../decoy.txt")).content == "decoy\n"


async def test_the_walk_refuses_every_symlink_while_openat2_follows_inner_ones(
    resolution: str, service: WorkspaceService, handle: WorkspaceHandle
) -> None:
    if resolution == "walk":
        await expect("SYMLINK_REFUSED", service.read(handle, "inner_link"))
    else:
        assert (await service.read(handle, "inner_link")).content == "inside text\n"
    for outward in ("out_abs/canary.txt", "out_file_rel", "chain1/canary.txt", "proc_root/etc/hostname"):
        with pytest.raises(WorkspaceError) as info:
            await service.read(handle, outward)
        assert info.value.code == ("SYMLINK_REFUSED" if resolution == "walk" else "PATH_ESCAPE")


async def test_errors_never_name_the_host_root(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    calls = [
        service.read(handle, "nope"),
        service.read(handle, "../x"),
        service.write(handle, "decoy.txt", "x"),
        service.delete(handle, "."),
        service.list(handle, "decoy.txt"),
        service.open_view(layout.base / "missing", scope_id="gone"),
    ]
    for call in calls:
        with pytest.raises(WorkspaceError) as info:
            await call
        assert str(layout.base) not in str(info.value)
        assert str(layout.base) not in repr(info.value.error.to_dict())
    assert str(layout.root) not in repr(handle)


# --- F01 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ("inner/file.txt", "../outside/x.txt"),
        ("inner/file.txt", "out_abs/x.txt"),
        ("inner/file.txt", "/etc/x"),
        ("inner/file.txt", "no/such/dir/x.txt"),
        ("inner/file.txt", ".locks/x"),
        ("inner/file.txt", "bad\x00name"),
        ("../outside/canary.txt", "stolen.txt"),
        ("inner", "out_rel/inner"),
    ],
)
async def test_f01_invalid_second_target_leaves_workspace_untouched(
    src: str, dst: str, service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = tree(layout.root), snapshot(layout.outside)
    with pytest.raises(WorkspaceError):
        await service.move(handle, src, dst)
    assert (tree(layout.root), snapshot(layout.outside)) == before


@pytest.mark.parametrize(
    "path",
    [
        "new/a/../../../x",
        "new/../../outside/made",
        "new/x/../../..",
        "inner/new/" + "n" * 256,
        "fresh/.locks/../..",
    ],
)
async def test_f01_mkdir_parents_with_an_invalid_tail_creates_nothing(
    path: str, service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = tree(layout.root), snapshot(layout.outside)
    with pytest.raises(WorkspaceError):
        await service.mkdir(handle, path, parents=True)
    assert (tree(layout.root), snapshot(layout.outside)) == before


async def test_f01_refused_writes_create_no_lock_or_temp_file(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = tree(layout.root)
    for call in (
        service.write(handle, "decoy.txt", "x"),
        service.write(handle, "decoy.txt", "x", mode="replace", if_match="sha256:" + "4" * 64),
        service.edit(handle, "decoy.txt", "nothing-like-this", "x"),
        service.apply_patch(handle, "decoy.txt", "@@ -1 +1 @@\n-other\n+x\n"),
        service.write(handle, "dangling_rel", "x"),
        service.edit(handle, "inner_link", "inside", "x"),
        service.delete(handle, "inner", recursive=False),
    ):
        with pytest.raises(WorkspaceError):
            await call
    assert tree(layout.root) == before
    assert not (layout.root / ".locks").exists()
