"""What a confined command may not leave behind in its work folder.

After every execution the gateway walks the work folder and takes away the setuid and setgid
bits and write-for-others from everything the command's uid owns there (and gives the work
folder itself back its ``0700``), so nothing it made can be run with its uid, or written, by
another local user. Entries of other owners are never changed: a hard link to a file of the
host is the host's business, not the command's. The walk never follows a symbolic link and
never changes an entry by a path: each one is opened ``O_PATH | O_NOFOLLOW`` beneath an open
folder, checked with ``fstat`` and changed through ``/proc/self/fd``; only regular files and
folders are touched. Cost: one ``fstatat`` per entry, so it grows with the tree.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

#: Bits no entry of a work folder may keep after an execution.
FORBIDDEN_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_IWOTH
WORK_FOLDER_MODE = 0o700
#: File systems stamp ctimes from a coarse clock, up to a tick behind ``time.time()``.
CTIME_SLACK_S = 1.0
_MAX_DEPTH = 256


def sweep(work_dir: Path, owner: int, *, managed: bool, since: float | None = None) -> int:
    """Clear ``FORBIDDEN_BITS`` on the entries below ``work_dir`` that uid ``owner`` owns
    (on disk: through an idmapped bind that is the folder's owner, not the command's uid)
    and, for a ``managed`` folder (one AgentLoom made), make ``work_dir`` ``0700``; return how
    many entries were changed. In a folder of the user's (not ``managed``) the folder keeps
    its mode and, given ``since`` (the command's start, wall clock), only entries whose status
    changed since then — which the command made or changed; no call sets a ctime back — are
    looked at: the user's own files keep theirs. A folder that vanishes meanwhile is
    skipped."""
    try:
        top = os.open(work_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        changed = 0
        st = os.fstat(top)
        if managed and stat.S_IMODE(st.st_mode) != WORK_FOLDER_MODE:
            os.chmod(f"/proc/self/fd/{top}", WORK_FOLDER_MODE)
            changed += 1
        after = None if managed or since is None else int((since - CTIME_SLACK_S) * 1e9)
        return changed + _sweep_dir(top, owner, 0, after)
    finally:
        os.close(top)


def _sweep_dir(dir_fd: int, owner: int, depth: int, after: int | None) -> int:
    changed = 0
    with contextlib.suppress(OSError), os.scandir(dir_fd) as entries:
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            if not (is_dir or stat.S_ISREG(st.st_mode)):
                continue
            touched = after is None or st.st_ctime_ns >= after
            if st.st_mode & FORBIDDEN_BITS and st.st_uid == owner and touched:
                changed += _clear(dir_fd, entry.name, owner)
            if is_dir and depth < _MAX_DEPTH:
                try:
                    sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                  dir_fd=dir_fd)
                except OSError:
                    continue
                try:
                    changed += _sweep_dir(sub, owner, depth + 1, after)
                finally:
                    os.close(sub)
    return changed


def _clear(dir_fd: int, name: str, owner: int) -> int:
    try:
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return 0
    try:
        st = os.fstat(fd)
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) or st.st_uid != owner:
            return 0
        os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(st.st_mode) & ~FORBIDDEN_BITS)
        return 1
    except OSError:
        return 0
    finally:
        os.close(fd)
