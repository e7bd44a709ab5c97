"""mkdir / move / delete, and the entry checks every mutating file tool shares.

Mutations act on the entry in its folder (``mkdirat``/``renameat2``/``unlinkat`` on the
folder's descriptor), never through it: a symbolic link as the last name is moved or
deleted as the link itself; a folder is removed by a walk that never follows a link and
never crosses onto another file system, after a first pass has checked every entry (F01).
New folders — mkdir's, and the parents a write makes (``open_dir_creating``) — are ``0700``
and, with a content owner, given to it through a descriptor opened ``O_NOFOLLOW`` from their
parent's.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

from agentloom.workspace._atomic import etag_of, fsync_dir, normalise_etag, read_all, rename_noreplace
from agentloom.workspace._locks import entry_locks
from agentloom.workspace._modes import DIR_MODE, hand_over, hand_over_dir
from agentloom.workspace._search import MAX_DEPTH, MAX_VISITS, EntryKind, ListEntry
from agentloom.workspace.paths import (
    LOCK_DIR,
    Beneath,
    RelPath,
    WorkspaceError,
    os_error,
    parse_path,
    refuse_reserved,
    shown,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Deleted:
    """What a delete removed: the path, its kind, and how many entries went with it."""

    path: str
    kind: EntryKind
    removed: int
    """Entries removed, the target included."""


@dataclass(frozen=True, slots=True)
class Current:
    """A file's bytes as read, with the etag and mode they had; what an etag check compares
    against before a replace."""

    data: bytes
    etag: str
    mode: int


def entry_stat(dir_fd: int, name: str, rel: RelPath) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_error(exc, rel) from None


def require_file(b: Beneath, st: os.stat_result, rel: RelPath) -> None:
    p = shown(rel.display)
    if stat.S_ISLNK(st.st_mode):
        raise WorkspaceError(
            "SYMLINK_REFUSED", f"{p} is a symbolic link; change the file it points to instead"
        )
    if stat.S_ISDIR(st.st_mode):
        raise WorkspaceError("IS_A_DIRECTORY", f"{p} is a folder; use list to see its entries")
    if not stat.S_ISREG(st.st_mode):
        raise WorkspaceError("NOT_A_FILE", f"{p} is not a regular file")
    if st.st_nlink > 1:
        raise WorkspaceError(
            "HARDLINK_REFUSED",
            f"{p} has {st.st_nlink} hard links, so it may be shared with a file outside the workspace; "
            "the file tools refuse it — copy its content to a new file if you need it",
        )
    b.check_device(st, rel)


def load_file(b: Beneath, dir_fd: int, name: str, rel: RelPath) -> Current | None:
    st = entry_stat(dir_fd, name, rel)
    if st is None:
        return None
    require_file(b, st, rel)
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError as exc:
        raise os_error(exc, rel) from None
    try:
        st = os.fstat(fd)
        require_file(b, st, rel)
        data = read_all(fd, rel)
    finally:
        os.close(fd)
    return Current(data=data, etag=etag_of(data), mode=st.st_mode)


def check_etag(cur: Current, expected: str | None, rel: RelPath) -> None:
    if expected is not None and cur.etag != expected:
        raise WorkspaceError(
            "ETAG_MISMATCH",
            f"{shown(rel.display)} changed since it was read (etag differs); read it again, then redo it",
        )


def entry_target(raw: object, what: str) -> RelPath:
    rel = parse_path(raw, what=what)
    refuse_reserved(rel)
    if rel.is_root:
        raise WorkspaceError(
            "ROOT_REFUSED", f"{what} is the workspace root, which cannot be moved or deleted"
        )
    return rel


def optional_etag(if_match: object) -> str | None:
    return None if if_match is None else normalise_etag(if_match)


def make_dir(b: Beneath, raw: object, *, parents: bool) -> ListEntry:
    rel = parse_path(raw)
    refuse_reserved(rel)
    entry = ListEntry(name=rel.display_name, path=rel.display, kind="dir", size=None)
    if not parents:
        dir_fd, name = b.open_parent(rel)
        try:
            os.mkdir(name, DIR_MODE, dir_fd=dir_fd)
            hand_over_dir(name, b.content_owner, dir_fd=dir_fd)
            fsync_dir(dir_fd)
        except OSError as exc:
            raise os_error(exc, rel) from None
        finally:
            os.close(dir_fd)
        return entry
    os.close(open_dir_creating(b, rel))
    return entry


def open_dir_creating(b: Beneath, rel: RelPath, *, target: RelPath | None = None) -> int:
    """Open the folder ``rel``, first creating the folders missing from it (``mkdir -p``).

    The deepest folder that exists is resolved like every other path (``Beneath.open_dir``).
    What is missing below it must be plain new names — no ``..``, not ``.locks`` at the root —
    which is checked before the first ``mkdirat`` (F01). Each one is made ``0700`` on its
    parent's descriptor, given to the content owner, and opened ``O_NOFOLLOW`` from there, so
    nothing is created through a link: a link in the way (even a dangling one) is
    ``SYMLINK_REFUSED``, anything else that is not a folder ``NOT_A_DIRECTORY``. ``target``
    is the path messages name (the file a write creates; default ``rel``).
    """
    whole = target or rel
    depth = len(rel.parts)
    while True:
        try:
            fd = b.open_dir(RelPath(rel.parts[:depth]))
            break
        except WorkspaceError as exc:
            if exc.code == "NOT_A_DIRECTORY":
                raise not_a_folder(b, rel, whole) from None
            if exc.code != "NOT_FOUND" or depth == 0:
                raise
            depth -= 1
    missing = rel.parts[depth:]
    here = RelPath(rel.parts[:depth])
    try:
        if ".." in missing:
            raise WorkspaceError(
                "INVALID_PATH", f"{shown(whole.display)} has '..' after a folder that does not exist"
            )
        if missing and missing[0] == LOCK_DIR and os.fstat(fd).st_ino == b.ino:
            raise WorkspaceError(
                "RESERVED_PATH", f"{shown(whole.display)} is the file service's {LOCK_DIR}/ folder"
            )
        for name in missing:
            here = here.child(name)
            created = True
            try:
                os.mkdir(name, DIR_MODE, dir_fd=fd)
            except FileExistsError:
                created = False  # made meanwhile (or a link): an existing folder keeps its owner
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _in_the_way(fd, name, here, whole) from None
                raise
            try:
                b.check_device(os.fstat(sub), here)
                if created:
                    hand_over(sub, b.content_owner)
                fsync_dir(fd)
            except BaseException:
                os.close(sub)
                raise
            os.close(fd)
            fd = sub
    except OSError as exc:
        os.close(fd)
        raise os_error(exc, here) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _in_the_way(dir_fd: int, name: str, here: RelPath, whole: RelPath) -> WorkspaceError:
    st = entry_stat(dir_fd, name, here)
    if st is not None and stat.S_ISLNK(st.st_mode):
        return WorkspaceError(
            "SYMLINK_REFUSED",
            f"{shown(here.display)} is a symbolic link and folders are never created through one, "
            f"so {shown(whole.display)} cannot be made; use the real path",
        )
    return _blocked(here, whole)


def _blocked(here: RelPath, whole: RelPath) -> WorkspaceError:
    if here.parts == whole.parts:
        return WorkspaceError(
            "NOT_A_DIRECTORY", f"{shown(here.display)} already exists and is not a folder; pick another path"
        )
    return WorkspaceError(
        "NOT_A_DIRECTORY",
        f"{shown(here.display)} is not a folder, so {shown(whole.display)} cannot be created "
        "beneath it; pick another path or move that entry away first",
    )


def not_a_folder(b: Beneath, folder: RelPath, whole: RelPath) -> WorkspaceError:
    """``NOT_A_DIRECTORY`` naming the first component of ``folder`` that is not a folder."""
    for depth in range(1, len(folder.parts) + 1):
        prefix = RelPath(folder.parts[:depth])
        try:
            os.close(b.open_dir(prefix))
        except WorkspaceError as exc:
            if exc.code == "NOT_A_DIRECTORY":
                return _blocked(prefix, whole)
            return exc
    return _blocked(folder, whole)  # changed meanwhile


def _kind_of(st: os.stat_result) -> EntryKind:
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    return "file" if stat.S_ISREG(st.st_mode) else "other"


def _check_entry(
    b: Beneath, dir_fd: int, name: str, rel: RelPath, expected: str | None, verb: str
) -> tuple[os.stat_result, EntryKind]:
    """Checks shared by move and delete: it exists, is ours to change, and — a file — matches
    ``if_match``, which a file must have (000 §7.3); a folder or link has no etag and takes none."""
    st = entry_stat(dir_fd, name, rel)
    if st is None:
        raise WorkspaceError("NOT_FOUND", f"{shown(rel.display)} does not exist; list the folder to check")
    kind = _kind_of(st)
    if rel.trailing_slash and kind != "dir":
        raise WorkspaceError("NOT_A_DIRECTORY", f"{shown(rel.display + '/')} ends with '/' but is a {kind}")
    if expected is not None and kind != "file":
        raise WorkspaceError(
            "INVALID_ARGUMENTS", f"if_match applies to files and {shown(rel.display)} is a {kind}"
        )
    if kind == "file":
        require_file(b, st, rel)
        if expected is None:
            raise WorkspaceError(
                "ETAG_REQUIRED",
                f"to {verb} a file you need if_match: read {shown(rel.display)} and pass the etag it "
                "returned, so you never act on a version you have not seen",
            )
        cur = load_file(b, dir_fd, name, rel)
        assert cur is not None
        check_etag(cur, expected, rel)
    elif kind == "dir":
        b.check_device(st, rel)
        b.check_not_lock_dir(st, rel)
    return st, kind


def move_entry(
    b: Beneath, raw_src: object, raw_dst: object, *, if_match: object, lock_timeout_s: float
) -> ListEntry:
    expected = optional_etag(if_match)
    src = entry_target(raw_src, "src")
    dst = entry_target(raw_dst, "dst")
    sfd, sname = b.open_parent(src)
    try:
        dfd, dname = b.open_parent(dst)
        try:

            def check() -> tuple[os.stat_result, EntryKind]:
                st, kind = _check_entry(b, sfd, sname, src, expected, "move")
                if dst.trailing_slash and kind != "dir":
                    raise WorkspaceError(
                        "NOT_A_DIRECTORY", f"dst ends with '/' but {shown(src.display)} is a {kind}"
                    )
                if entry_stat(dfd, dname, dst) is not None:
                    raise WorkspaceError(
                        "EXISTS",
                        f"{shown(dst.display)} already exists; move never overwrites — pick another name",
                    )
                return st, kind

            check()
            with entry_locks(b, [(sfd, sname, src), (dfd, dname, dst)], timeout_s=lock_timeout_s):
                st, kind = check()
                try:
                    rename_noreplace(sfd, sname, dfd, dname)
                except FileExistsError:
                    raise WorkspaceError("EXISTS", f"{shown(dst.display)} already exists") from None
                except OSError as exc:
                    raise os_error(exc, dst) from None
            fsync_dir(dfd)
            fsync_dir(sfd)
        finally:
            os.close(dfd)
    finally:
        os.close(sfd)
    size = st.st_size if kind == "file" else None
    return ListEntry(name=dst.display_name, path=dst.display, kind=kind, size=size)


def _tree_count(b: Beneath, dir_fd: int, rel: RelPath, depth: int, budget: list[int]) -> int:
    """Count a folder's entries before deleting it; refuse what the delete must not touch."""
    count = 0
    with os.scandir(dir_fd) as it:
        entries = list(it)
    for entry in entries:
        budget[0] -= 1
        if budget[0] < 0:
            raise WorkspaceError(
                "INVALID_ARGUMENTS",
                f"{shown(rel.display)} holds more than {MAX_VISITS} entries; delete parts of it",
            )
        child = rel.child(entry.name)
        st = entry.stat(follow_symlinks=False)
        b.check_device(st, child)
        if stat.S_ISDIR(st.st_mode):
            if depth >= MAX_DEPTH:
                raise WorkspaceError(
                    "INVALID_ARGUMENTS", f"{shown(rel.display)} is nested too deeply to delete"
                )
            sub = os.open(
                entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
            )
            try:
                count += _tree_count(b, sub, child, depth + 1, budget)
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            require_file(b, st, child)
        count += 1
    return count


def _remove_tree(b: Beneath, parent_fd: int, name: str, rel: RelPath) -> None:
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
    try:
        b.check_device(os.fstat(fd), rel)
        with os.scandir(fd) as it:
            entries = list(it)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                _remove_tree(b, fd, entry.name, rel.child(entry.name))
            else:
                os.unlink(entry.name, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent_fd)


def delete_entry(
    b: Beneath, raw: object, *, if_match: object, recursive: bool, lock_timeout_s: float
) -> Deleted:
    expected = optional_etag(if_match)
    rel = entry_target(raw, "path")
    dir_fd, name = b.open_parent(rel)
    try:

        def check() -> tuple[EntryKind, int]:
            _, kind = _check_entry(b, dir_fd, name, rel, expected, "delete")
            if kind != "dir":
                return kind, 1
            try:
                sub = os.open(
                    name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
                )
                try:
                    if recursive:
                        inner = _tree_count(b, sub, rel, 0, [MAX_VISITS])
                    else:
                        with os.scandir(sub) as it:
                            inner = sum(1 for _ in it)
                finally:
                    os.close(sub)
            except OSError as exc:
                raise os_error(exc, rel) from None
            if inner and not recursive:
                raise WorkspaceError(
                    "NOT_EMPTY", f"{shown(rel.display)} is a folder with {inner} entries; pass recursive=True"
                )
            return kind, inner + 1

        check()
        with entry_locks(b, [(dir_fd, name, rel)], timeout_s=lock_timeout_s):
            kind, removed = check()
            try:
                if kind == "dir":
                    _remove_tree(b, dir_fd, name, rel)
                else:
                    os.unlink(name, dir_fd=dir_fd)
            except OSError as exc:
                raise os_error(exc, rel) from None
        fsync_dir(dir_fd)
    finally:
        os.close(dir_fd)
    return Deleted(path=rel.display, kind=kind, removed=removed)
