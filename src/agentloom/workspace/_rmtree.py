"""Deleting a folder tree iteratively, through descriptors (000 §7.4, issue #11).

Owns: removing a folder and everything below it at any depth without recursion — a tree a
command made 100,000 levels deep goes like a flat one — never following a symlink out of
it, never crossing into another file system, with at most two descriptors open at a time.
Does not own: *when* a folder may go (``cleanup.py`` decides, after revocation) nor what a
failure means (the caller keeps a retryable cleanup job).

The walk keeps, per level, the folder's name, its identity (device, inode) and the names of
the subfolders still to visit — memory, not descriptors. It climbs back through ``..``
opened from the folder it leaves and checks that this is the folder it came down from, so a
tree moved during the walk stops it instead of leading it outside::

    parent_fd ── root (level 0) ── a (1) ── a (2) ── … ── a (n)   <- one descriptor held
                    └ pending: [b, c]   └ pending: []

A folder the runtime's (non-root) user owns but cannot list or write — a command ran
``chmod 500`` — is given back ``u+rwx`` through its own descriptor first; anything else
that refuses (an immutable file, a mount point) raises ``OSError`` with the place, relative
to the folder being deleted.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["remove_tree", "remove_tree_at"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOT_A_FOLDER = (errno.ENOTDIR, errno.ELOOP)
"""What opening an entry as a folder without following symlinks says of a file or a symlink."""
_RESCANS = 3
"""Times a folder is emptied again when entries appear in it during the walk (ENOTEMPTY)."""


@dataclass(slots=True)
class _Level:
    name: str
    dev: int
    ino: int
    pending: list[str] = field(default_factory=list)
    rescans: int = 0


def remove_tree(path: Path) -> None:
    """Delete ``path``: a folder with everything below it, or a file or symlink (never its
    target). A missing ``path`` is nothing to do.

    Raises:
        OSError: an entry could not be deleted; what was deleted before stays deleted.
    """
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        remove_tree_at(parent, path.name)
    finally:
        os.close(parent)


def remove_tree_at(parent_fd: int, name: str) -> None:
    """Delete the entry ``name`` of the folder open as ``parent_fd`` (see ``remove_tree``)."""
    try:
        fd = _open_dir(parent_fd, name)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno not in _NOT_A_FOLDER:
            raise _located(exc, []) from None
        _unlink(parent_fd, name)
        return
    _remove_dir(parent_fd, name, fd)


def _open_dir(dir_fd: int, name: str) -> int:
    """Open a subfolder without following a symlink; a folder its owner locked is unlocked."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        if not _grant_owner(dir_fd, name):
            raise
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _remove_dir(top_parent: int, top_name: str, fd: int) -> None:
    """Empty and remove the folder open as ``fd`` (``top_name`` in ``top_parent``).

    ``fd`` is owned here and always closed; ``top_parent`` belongs to the caller.
    """
    levels: list[_Level] = []
    try:
        st = os.fstat(fd)
        levels.append(_Level(top_name, st.st_dev, st.st_ino))
        _unlock(fd, st)
        levels[-1].pending = _clear_files(fd)
        while levels:
            level = levels[-1]
            if level.pending:
                name = level.pending.pop()
                child = _enter(fd, name, level.dev)
                if child is None:
                    continue
                os.close(fd)
                fd = child
                st = os.fstat(fd)
                levels.append(_Level(name, st.st_dev, st.st_ino))
                _unlock(fd, st)
                levels[-1].pending = _clear_files(fd)
                continue
            above = levels[-2] if len(levels) > 1 else None
            up = top_parent if above is None else _climb(fd, above)
            try:
                os.rmdir(level.name, dir_fd=up)
            except OSError as exc:
                if up != top_parent:
                    os.close(up)
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST) or level.rescans >= _RESCANS:
                    raise OSError(exc.errno, exc.strerror) from None  # its place is the level's
                level.rescans += 1  # entries appeared meanwhile: empty it again
                level.pending = _clear_files(fd)
                continue
            levels.pop()
            done, fd = fd, (-1 if above is None else up)
            os.close(done)
            if above is None:
                return
    except OSError as exc:
        raise _located(exc, [lv.name for lv in levels]) from None
    finally:
        if fd >= 0:
            os.close(fd)


def _clear_files(fd: int) -> list[str]:
    """Unlink every non-folder entry of the folder open as ``fd``; return its subfolders."""
    folders: list[str] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                folders.append(entry.name)
                continue
            try:
                _unlink(fd, entry.name)
            except IsADirectoryError:  # replaced by a folder since it was listed
                folders.append(entry.name)
    return folders


def _unlink(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def _enter(fd: int, name: str, dev: int) -> int | None:
    """Open the subfolder ``name`` to go down into it; ``None`` when it is gone or turned out
    not to be a folder (then it was unlinked)."""
    try:
        child = _open_dir(fd, name)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in _NOT_A_FOLDER:
            raise
        _unlink(fd, name)
        return None
    if os.fstat(child).st_dev != dev:
        os.close(child)
        raise OSError(errno.EXDEV, "a mount point is inside the folder; not deleting across it",
                      name)
    return child


def _climb(fd: int, expected: _Level) -> int:
    """Open the parent of the folder open as ``fd``; it must be the folder we came from."""
    up = os.open("..", _DIR_FLAGS, dir_fd=fd)
    st = os.fstat(up)
    if (st.st_dev, st.st_ino) != (expected.dev, expected.ino):
        os.close(up)
        raise OSError(errno.ESTALE, "the folder was moved while it was being deleted")
    return up


def _unlock(fd: int, st: os.stat_result) -> None:
    """Give ``u+rwx`` back on a folder the runtime's own (non-root) user owns, so its
    entries can be listed and unlinked; root needs no permission bits."""
    uid = os.geteuid()
    if uid != 0 and st.st_uid == uid and stat.S_IMODE(st.st_mode) & 0o700 != 0o700:
        with contextlib.suppress(OSError):  # without /proc the unlinks below say why
            os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(st.st_mode) | 0o700)


def _grant_owner(dir_fd: int, name: str) -> bool:
    """``u+rwx`` on the subfolder ``name`` when the runtime's user owns it; whether it did.
    Through an ``O_PATH`` descriptor, so a symlink put in its place is never followed."""
    if os.geteuid() == 0:
        return False
    try:
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            return False
        os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(st.st_mode) | 0o700)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _located(exc: OSError, names: list[str]) -> OSError:
    """The same error, its message naming where it happened relative to the deleted folder
    (a very deep place is shortened: the first and last levels and how many in between)."""
    parts = [*names, exc.filename] if isinstance(exc.filename, str) and exc.filename else names
    if len(parts) > 8:
        parts = [*parts[:3], f"…({len(parts) - 6} more levels)…", *parts[-3:]]
    where = "/".join(p.encode("utf-8", "backslashreplace").decode("utf-8") for p in parts)
    return OSError(exc.errno, f"{exc.strerror or type(exc).__name__} at {where}")
