"""Issue #12 point 6: ``write`` creates a new file's missing parent folders beneath the root.

Each missing folder is made like ``mkdir(parents=True)`` makes it (0700, the content owner's),
the existing part of the path resolves exactly as for every other tool, and nothing is ever
created through a link; ``parents=False`` keeps the old ``NOT_FOUND``. Both resolvers.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from tests.workspace.layout import Layout, snapshot
from tests.workspace.test_races import racing

from agentloom.workspace.service import WorkspaceError, WorkspaceHandle, WorkspaceService

NOBODY = (65534, 65534)


def trees(layout: Layout) -> tuple[object, ...]:
    return snapshot(layout.root), snapshot(layout.outside)


async def refusal(call: object) -> WorkspaceError:
    with pytest.raises(WorkspaceError) as info:
        await call  # type: ignore[misc]
    return info.value


def mode(path: Path) -> int:
    return os.stat(path, follow_symlinks=False).st_mode & 0o7777


async def test_12_6_write_of_a_nested_path_creates_the_missing_parents_like_mkdir(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    version = await service.write(handle, "notes/2024/hello.txt", "hi\n")

    assert version.path == "notes/2024/hello.txt" and version.size == 3
    assert (layout.root / "notes/2024/hello.txt").read_text() == "hi\n"
    await service.mkdir(handle, "made/by/mkdir", parents=True)
    for written, made in (("notes", "made"), ("notes/2024", "made/by")):
        assert (layout.root / written).is_dir() and not (layout.root / written).is_symlink()
        assert mode(layout.root / written) == mode(layout.root / made) == 0o700
    again = await service.write(handle, "/work/notes/2024/../other.txt", "x")  # parents exist now
    assert again.path == "notes/2024/../other.txt" and (layout.root / "notes/other.txt").is_file()


async def test_12_6_write_with_parents_false_keeps_the_not_found_error_and_creates_nothing(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = trees(layout)

    err = await refusal(service.write(handle, "notes/hello.txt", "hi\n", parents=False))

    assert err.code == "NOT_FOUND" and err.error.category == "not_found"
    assert "'notes' does not exist" in str(err)
    assert trees(layout) == before
    await service.write(handle, "inner/hello.txt", "hi\n", parents=False)  # existing parent: fine


@pytest.mark.parametrize(
    "path",
    [
        "out_abs/new/hello.txt",
        "out_rel/hello.txt",
        "out_rel/new/deeper/hello.txt",
        "chain1/new/hello.txt",
        "deep_rel/new/hello.txt",
        "dangling_dir/hello.txt",
        "dangling_dir/sub/hello.txt",
        "inner/sub/up_rel/new/hello.txt",
        "inner/sub/up_abs/hello.txt",
        "proc_root/tmp/new/hello.txt",
        "loop_a/new/hello.txt",
    ],
)
async def test_12_6_a_symlinked_component_is_refused_as_other_tools_refuse_it_and_nothing_is_created(
    path: str, service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = trees(layout)

    err = await refusal(service.write(handle, path, "PWNED\n"))

    read_err = await refusal(service.read(handle, path))
    assert err.code == read_err.code and err.code in ("PATH_ESCAPE", "SYMLINK_REFUSED"), (err, read_err)
    assert err.error.category == "permission"
    assert trees(layout) == before  # the outside folder is untouched, and the root too
    assert not (layout.outside / "newdir").exists() and not (layout.outside / "new").exists()
    await service.write(handle, "real/" + path, "ok\n")  # the control: it is the link that is refused
    assert (layout.root / "real" / path).read_text() == "ok\n"


async def test_12_6_a_link_among_the_missing_folders_is_never_created_through_even_pointing_inside(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    os.symlink("inner/not-yet", layout.root / "later")  # dangling, but it would stay beneath
    before = trees(layout)

    err = await refusal(service.write(handle, "later/x/hello.txt", "hi\n"))

    assert err.code == "SYMLINK_REFUSED" and "'later'" in str(err)
    assert trees(layout) == before and not (layout.root / "inner/not-yet").exists()
    await service.write(handle, "inner/not-yet/x/hello.txt", "hi\n")  # without the link: made


async def test_12_6_an_inner_link_to_a_folder_is_followed_by_openat2_and_refused_by_the_walk_as_for_read(
    resolution: str, service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    os.symlink("inner", layout.root / "to_inner")
    if resolution == "walk":
        before = trees(layout)
        assert (await refusal(service.read(handle, "to_inner/file.txt"))).code == "SYMLINK_REFUSED"
        assert (await refusal(service.write(handle, "to_inner/new/x.txt", "x"))).code == "SYMLINK_REFUSED"
        assert trees(layout) == before
        await service.write(handle, "inner/new/x.txt", "x")  # the real path works
    else:
        assert (await service.read(handle, "to_inner/file.txt")).content == "inside text\n"
        await service.write(handle, "to_inner/new/x.txt", "x")
        assert (layout.root / "inner/new/x.txt").read_text() == "x"
        assert not (layout.root / "to_inner").resolve().is_relative_to(layout.outside)


@pytest.mark.parametrize("path", ["decoy.txt/hello.txt", "decoy.txt/new/hello.txt", "inner/file.txt/a/b.txt"])
async def test_12_6_a_file_in_the_way_is_not_a_directory_naming_it(
    path: str, service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = trees(layout)

    err = await refusal(service.write(handle, path, "x"))

    blocker = path.split(".txt")[0] + ".txt"
    assert err.code == "NOT_A_DIRECTORY"
    assert f"'{blocker}' is not a folder, so '{path}' cannot be created" in str(err)
    assert trees(layout) == before


@pytest.mark.parametrize(
    "path",
    ["new/../x.txt", "new/a/../../../outside/x.txt", "fresh/../.locks/x.txt", "new/" + "n" * 256 + "/x.txt",
     "new/..", ".locks/new/x.txt"],
)
async def test_12_6_a_refused_nested_write_creates_no_folder(
    path: str, service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = trees(layout)

    await refusal(service.write(handle, path, "x"))

    assert trees(layout) == before
    await service.write(handle, "fresh/ok/x.txt", "x")  # the control: parents are made otherwise


async def test_12_6_replace_never_creates_folders(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    before = trees(layout)
    etag = "sha256:" + "0" * 64
    err = await refusal(service.write(handle, "new/x.txt", "x", mode="replace", if_match=etag))
    assert err.code == "NOT_FOUND" and trees(layout) == before
    await service.write(handle, "new/x.txt", "x")  # create_only makes the folder


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give folders to another uid")
async def test_12_6_created_parents_belong_to_the_content_owner_and_existing_ones_keep_theirs(
    resolution: str, layout: Layout
) -> None:
    service = WorkspaceService(resolution=resolution, content_owner=NOBODY)  # type: ignore[arg-type]
    handle = await service.open_view(layout.root, scope_id="owned")

    await service.write(handle, "inner/a/b/c.txt", "x")

    runtime = (os.geteuid(), os.getegid())
    st = [os.stat(layout.root / p) for p in ("inner", "inner/a", "inner/a/b", "inner/a/b/c.txt")]
    assert [(s.st_uid, s.st_gid) for s in st] == [runtime, NOBODY, NOBODY, NOBODY]
    assert [s.st_mode & 0o777 for s in st[1:3]] == [0o700, 0o700]


async def test_12_6_parents_made_while_a_folder_is_swapped_for_a_link_out_never_land_outside(
    service: WorkspaceService, ram_layout: Layout
) -> None:
    layout = ram_layout
    root = layout.root
    handle = await service.open_view(root, scope_id="race")
    (root / "swap").mkdir()
    outside_before = snapshot(layout.outside)
    moved = [0]

    def toggle() -> None:
        """``swap`` is a folder, then a link to the outside folder, then a folder again."""
        if not (root / "swap_stash").exists():
            os.rename(root / "swap", root / "swap_stash")
            os.symlink(layout.outside, root / "swap")
            return
        if (root / "swap").is_symlink():
            os.unlink(root / "swap")
        elif (root / "swap").exists():  # a write made it while swap was missing: keep it aside
            moved[0] += 1
            os.rename(root / "swap", root / f"made-{moved[0]}")
        os.rename(root / "swap_stash", root / "swap")

    outcomes: Counter[str] = Counter()
    with racing(toggle) as cycles:
        for i in range(300):
            try:
                await service.write(handle, f"swap/deep-{i}/more/x.txt", "x")
                outcomes["ok"] += 1
            except WorkspaceError as exc:
                outcomes[exc.code] += 1
    if (root / "swap_stash").exists():
        toggle()
    assert cycles[0] > 0
    assert snapshot(layout.outside) == outside_before
    assert not list(layout.outside.rglob("deep-*"))
    assert outcomes["ok"] > 0 and outcomes["PATH_ESCAPE"] + outcomes["SYMLINK_REFUSED"] > 0, outcomes
    made = [p for p in root.rglob("x.txt") if p.parent.name == "more"]
    assert len(made) == outcomes["ok"]  # every write that succeeded landed beneath the root
