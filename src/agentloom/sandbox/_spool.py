"""Each gateway's spool folder, and the reclaiming of folders whose runtime died.

A gateway writes the full output of its executions (and, under Landlock, their private
temporary folders) into ``<output_dir>/spool-<pid>-<nonce>/``, and holds an exclusive
``flock`` on a lock file in it for as long as it lives. The kernel drops that lock when
the process dies, however it dies, so a folder whose lock can be taken belongs to nobody
and is deleted: at every gateway's start and whenever ``reclaim_spools`` is called (the
worker does, on each sweep). Locks are per open file, so this holds between processes
on one machine and, with NFSv4 locks, between machines sharing the folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from agentloom.folders import make_dirs

PREFIX = "spool-"
LOCK_NAME = ".lock"
#: Traversable but not listable by others: a command running as the sandbox uid reaches
#: its private temporary folder below by path; spool files themselves are 0600.
FOLDER_MODE = 0o711


@dataclass(frozen=True, slots=True)
class SpoolDir:
    """A live gateway's spool folder and the fd holding its lock."""

    path: Path
    lock_fd: int

    @classmethod
    def create(cls, output_dir: Path) -> SpoolDir:
        make_dirs(output_dir, FOLDER_MODE)
        reclaim_spools(output_dir)
        name = f"{os.getpid()}-{secrets.token_hex(4)}"
        # Made and locked under a name reclaim never touches, then renamed into view.
        building = output_dir / f".new-{name}"
        building.mkdir(mode=FOLDER_MODE)
        os.chmod(building, FOLDER_MODE)
        fd = os.open(building / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        path = output_dir / f"{PREFIX}{name}"
        os.rename(building, path)
        return cls(path=path, lock_fd=fd)


def reclaim_spools(output_dir: Path) -> int:
    """Delete the spool folders under ``output_dir`` whose gateway is gone; return how many."""
    try:
        entries = list(os.scandir(output_dir))
    except FileNotFoundError:
        return 0
    reclaimed = 0
    for entry in entries:
        if not entry.name.startswith(PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            fd = os.open(Path(entry.path) / LOCK_NAME, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live gateway holds it
            shutil.rmtree(entry.path, ignore_errors=True)
            reclaimed += 1
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
    return reclaimed

