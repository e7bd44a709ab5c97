"""Modes and owners of what the workspace creates (issue #10, hardening).

Owns: the modes of the folders the workspace package creates — ``0700`` for scope work
folders, ``.locks/`` and the folders of ``fs.mkdir``; ``0711`` (searchable, not listable)
for the runtime's area above them (the shared root, ``system/``, owner and partition
folders, blob folders), so a sandbox launcher running as the unprivileged uid can reach a
work folder by its path without being able to list anything — the "never writable by others"
mask of the files the file tools write, and handing new entries to the *content owner*. Does
not own who the content owner is: the runtime passes it in (``sandbox_identity()``; the
workspace never imports the sandbox).

When the runtime runs as root, commands run as an unprivileged ``(uid, gid)``. Each scope's
work folder, and every file or folder the file tools create inside it, is given to that
owner through its own descriptor (``fchown``), never by a path a command could have swapped.
Everything above a work folder stays the runtime's and ``0711``::

    <root>/ agents/ <file_root_id>/ sessions/ <session>/   runtime, 0711
        work/                                              content owner, 0700
            notes.txt, src/, ...  (written by the file tools) content owner
            .locks/                                        runtime, 0700
"""

from __future__ import annotations

import os
from pathlib import Path

from agentloom.folders import SEARCH_MODE, make_dirs

DIR_MODE = 0o700
FILE_MODE_MASK = 0o775
"""Permission bits a written file may keep: never setuid/setgid/sticky, never writable by others."""

ContentOwner = tuple[int, int]
"""``(uid, gid)`` of the unprivileged user sandboxed commands run as."""


def make_private_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents, each ``0711``; existing folders are left as they are.

    Only for the runtime's own area (the shared root and what it lays out there), whose
    parents no command can write.
    """
    make_dirs(path, SEARCH_MODE)


def hand_over(fd: int, owner: ContentOwner | None) -> None:
    """Give a new entry, by its descriptor, to the content owner (nothing when ``None``)."""
    if owner is not None:
        os.fchown(fd, owner[0], owner[1])


def hand_over_dir(
    name: str | Path, owner: ContentOwner | None, *, dir_fd: int | None = None, private: bool = False
) -> None:
    """Give a folder to the content owner unless it already has it (and, with ``private``,
    make it ``0700``); the last name is never followed."""
    if owner is None and not private:
        return
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if owner is not None and (st.st_uid, st.st_gid) != owner:
            os.fchown(fd, owner[0], owner[1])
        if private and st.st_mode & 0o7777 != DIR_MODE:
            os.fchmod(fd, DIR_MODE)
    finally:
        os.close(fd)


def check_owner(owner: object) -> ContentOwner | None:
    """``None`` or a ``(uid, gid)`` pair of non-negative ints; anything else is a ``ValueError``."""
    if owner is None:
        return None
    if (
        not isinstance(owner, tuple)
        or len(owner) != 2
        or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in owner)
    ):
        raise ValueError(f"content_owner must be None or a (uid, gid) pair of ints, not {owner!r}")
    return (owner[0], owner[1])
