"""paths: input normalisation, the openat2 facts it relies on, retries and the fallback switch."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from tests.workspace.layout import Layout

from agentloom.workspace import paths
from agentloom.workspace.paths import (
    EAGAIN_TRIES,
    RESOLVE_BENEATH,
    RESOLVE_NO_MAGICLINKS,
    Beneath,
    RelPath,
    WorkspaceError,
    openat2,
    openat2_available,
    parse_path,
)

needs_openat2 = pytest.mark.skipif(not openat2_available(), reason="openat2 is not available here")


@pytest.mark.parametrize(
    ("raw", "parts", "display"),
    [
        ("a/b.txt", ("a", "b.txt"), "a/b.txt"),
        ("/work/a/b.txt", ("a", "b.txt"), "a/b.txt"),
        ("/work", (), "."),
        ("/work/", (), "."),
        ("/work//a", ("a",), "a"),
        ("./a//b/./c", ("a", "b", "c"), "a/b/c"),
        ("a/../b", ("a", "..", "b"), "a/../b"),
        ("/work/../..", ("..", ".."), "../.."),
        (".", (), "."),
    ],
)
def test_parse_path_maps_work_keeps_dotdot_for_the_kernel_and_drops_empty_components(
    raw: str, parts: tuple[str, ...], display: str
) -> None:
    rel = parse_path(raw)
    assert rel.parts == parts and rel.display == display


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("/etc/passwd", "PATH_ESCAPE"),
        ("/workspace/x", "PATH_ESCAPE"),
        ("//work/x", "PATH_ESCAPE"),
        ("a\x00b", "INVALID_PATH"),
        ("", "INVALID_PATH"),
        ("\ud800", "INVALID_PATH"),
        ("n" * 256, "NAME_TOO_LONG"),
        ("a/" * 2048, "PATH_TOO_LONG"),
        (42, "INVALID_PATH"),
    ],
)
def test_parse_path_refuses_with_a_stable_code(raw: object, code: str) -> None:
    with pytest.raises(WorkspaceError) as info:
        parse_path(raw)
    assert info.value.code == code


def test_a_trailing_slash_is_kept_so_a_file_is_not_taken_for_a_folder() -> None:
    assert parse_path("a/").trailing_slash and parse_path("a/.").trailing_slash
    assert not parse_path("a").trailing_slash
    assert parse_path("a/").kernel == b"a/"


@needs_openat2
def test_openat2_facts_the_resolver_relies_on(layout: Layout) -> None:
    """Research note §6, re-checked here: escapes give EXDEV/ELOOP, hardlinks are NOT blocked."""
    flags = os.O_RDONLY | os.O_CLOEXEC
    resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
    fd = os.open(layout.root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for path, expected in (
            (b"../outside/canary.txt", errno.EXDEV),
            (os.fsencode(layout.outside / "canary.txt"), errno.EXDEV),
            (b"out_abs/canary.txt", errno.EXDEV),
            (b"out_rel/canary.txt", errno.EXDEV),
            (b"proc_root/etc/hostname", errno.EXDEV),
        ):
            with pytest.raises(OSError) as info:
                openat2(fd, path, flags, 0, resolve)
            assert info.value.errno == expected, path
        os.close(openat2(fd, b"inner_link", flags, 0, resolve))  # inner symlinks resolve
        hard = openat2(fd, b"hard_canary", flags, 0, resolve)  # why the service checks st_nlink
        try:
            assert os.fstat(hard).st_nlink == 2
        finally:
            os.close(hard)
        proc = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY)
        try:
            with pytest.raises(OSError) as info:
                openat2(proc, b"root/etc/hostname", flags, 0, RESOLVE_NO_MAGICLINKS)
            assert info.value.errno == errno.ELOOP
        finally:
            os.close(proc)
    finally:
        os.close(fd)


@needs_openat2
def test_eagain_is_retried_a_bounded_number_of_times_then_path_busy_never_a_plain_open(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def always_eagain(*args: object) -> int:
        calls.append(args)
        raise OSError(errno.EAGAIN, "try again")

    monkeypatch.setattr(paths, "openat2", always_eagain)
    monkeypatch.setattr(os, "open", _forbidden_open(os.open, layout.root))
    with Beneath(layout.root, resolution="openat2") as b, pytest.raises(WorkspaceError) as info:
        b.open(RelPath(("decoy.txt",)), os.O_RDONLY)
    assert info.value.code == "PATH_BUSY" and info.value.error.category == "conflict"
    assert len(calls) == EAGAIN_TRIES


def _forbidden_open(real: object, root: Path) -> object:
    def guarded(path: object, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if path != root:  # only the root itself may be opened directly
            raise AssertionError(f"plain open of {path!r}")
        return real(path, flags, mode, dir_fd=dir_fd)  # type: ignore[operator, no-any-return]

    return guarded


def test_enosys_switches_auto_to_the_walk(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_syscall(*args: object) -> int:
        raise OSError(errno.ENOSYS, "not implemented")

    monkeypatch.setattr(paths, "openat2", no_syscall)
    monkeypatch.setattr(paths, "_openat2_ok", None)
    assert openat2_available() is False
    with Beneath(layout.root) as b:
        assert b.walk
        with pytest.raises(WorkspaceError) as info:
            b.open(RelPath(("out_abs", "canary.txt")), os.O_RDONLY)
        assert info.value.code == "SYMLINK_REFUSED"
        fd = b.open(RelPath(("inner", "..", "decoy.txt")), os.O_RDONLY)
        os.close(fd)


def test_the_walk_pops_dotdot_off_held_descriptors_and_refuses_climbing_above_the_root(
    layout: Layout,
) -> None:
    with Beneath(layout.root, resolution="walk") as b:
        for parts in (("..",), ("inner", "..", ".."), ("d1", "d2", "..", "..", "..", "outside")):
            with pytest.raises(WorkspaceError) as info:
                b.open(RelPath(parts), os.O_RDONLY)
            assert info.value.code == "PATH_ESCAPE"
        fd = b.open(RelPath(("d1", "d2", "..", "..", "inner", "file.txt")), os.O_RDONLY)
        try:
            assert os.read(fd, 100) == b"inside text\n"
        finally:
            os.close(fd)


def test_a_mount_point_inside_the_root_is_another_device_and_refused(layout: Layout) -> None:
    with Beneath(layout.root, resolution="walk") as b:
        other = os.stat("/proc")
        with pytest.raises(WorkspaceError) as info:
            b.check_device(other, RelPath(("mnt",)))
        assert info.value.code == "PATH_ESCAPE"
