"""Staging a local folder: every entry below it, never following a link.

A symlink is recorded as a link (``Staging`` checks later that it stays in its skill folder);
an absolute symlink target is refused; ``.git`` folders are skipped (a checkout's metadata
is not part of any skill); a device, FIFO or socket is refused.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agentloom.skills._staging import Staging, link_target, member_path, read_chunks
from agentloom.skills.errors import MEMBER_LINK, MEMBER_TYPE, SOURCE_INVALID, SkillImportError

__all__ = ["stage_folder"]

SKIPPED_FOLDERS = frozenset({".git"})


def stage_folder(folder: Path, staged: Staging) -> None:
    """Stage every entry below ``folder``.

    Raises:
        SkillImportError: ``folder`` is not a folder, or a member is refused.
    """
    if not folder.is_dir():
        raise SkillImportError(SOURCE_INVALID, f"{str(folder)!r} is not a folder")
    _walk(folder, "", staged)


def _walk(folder: Path, prefix: str, staged: Staging) -> None:
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            rel = member_path(f"{prefix}{entry.name}", staged.limits)
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                if entry.name in SKIPPED_FOLDERS:
                    continue
                staged.add_folder(rel)
                _walk(Path(entry.path), rel + "/", staged)
            elif stat.S_ISLNK(info.st_mode):
                target = link_target(rel, os.readlink(entry.path), relative_to_link=True)
                if target is None:
                    raise SkillImportError(MEMBER_LINK, f"symlink {rel!r} points outside the "
                                           "folder (or is absolute); refused")
                staged.add_link(rel, target)
            elif stat.S_ISREG(info.st_mode):
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as src:
                    if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):  # swapped meanwhile
                        raise SkillImportError(MEMBER_TYPE, f"member {rel!r} changed while "
                                               "being read; refused")
                    staged.add_file(rel, read_chunks(src),
                                    executable=bool(info.st_mode & stat.S_IXUSR))
            else:
                raise SkillImportError(MEMBER_TYPE, f"member {rel!r} is a device, FIFO or "
                                       "socket; only files, folders and links are allowed")
