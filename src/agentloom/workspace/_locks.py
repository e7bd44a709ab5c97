"""Advisory entry locks: ``.locks/<file-key>`` under the root, held with ``fcntl.flock``.

A lock is held across read → check etag → write, so two service writers of one entry
serialise; the etag check still catches writers that bypass the service (scripts).
The file key is ``sha256("<folder inode>/<name>")`` of the entry's folder and name: unlike
the path string it is the same for every spelling of the path (``a//b``, ``x/../a/b``, an inner
symlink to the folder) and it is what ``renameat`` actually replaces. Inode numbers are
stable on one file system, including NFS file ids, so every host agrees on the key.
Lock files are empty, never removed (removing them would race with waiters) and hidden. A
folder of the user's bound as the workspace keeps its locks outside it (``Beneath.lock_dir``).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from agentloom.workspace.paths import LOCK_DIR, Beneath, RelPath, WorkspaceError, shown

DEFAULT_LOCK_TIMEOUT_S = 10.0


def file_key(dir_fd: int, name: str) -> str:
    return hashlib.sha256(f"{os.fstat(dir_fd).st_ino}/{name}".encode("utf-8", "surrogateescape")).hexdigest()


def _lock_dir(beneath: Beneath) -> int:
    if beneath.lock_dir is not None:  # outside the root: nothing is added to the user's folder
        os.makedirs(beneath.lock_dir, mode=0o700, exist_ok=True)
        return os.open(beneath.lock_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.mkdir(LOCK_DIR, 0o700, dir_fd=beneath.fd)
    except FileExistsError:
        pass
    except OSError as exc:
        raise WorkspaceError(
            "IO_ERROR", f"the {LOCK_DIR}/ folder cannot be created ({exc.strerror})"
        ) from None
    try:
        fd = os.open(LOCK_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=beneath.fd)
    except OSError:
        raise WorkspaceError(
            "IO_ERROR", f"{LOCK_DIR} at the workspace root is not a folder; remove it so writes can lock"
        ) from None
    if os.fstat(fd).st_dev != beneath.dev:
        os.close(fd)
        raise WorkspaceError("IO_ERROR", f"{LOCK_DIR} is on another file system; remove the mount")
    return fd


def _acquire(fd: int, deadline: float, rel: RelPath) -> None:
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EINTR):
                raise
        if time.monotonic() >= deadline:
            raise WorkspaceError(
                "LOCK_TIMEOUT", f"another writer holds {shown(rel.display)}; read it again and retry"
            )
        # Bounded polling: flock has no timeout of its own and a blocked thread cannot be woken.
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


@contextmanager
def entry_locks(
    beneath: Beneath,
    entries: Sequence[tuple[int, str, RelPath]],
    *,
    timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
) -> Iterator[None]:
    """Hold the locks of ``(folder fd, name, rel)`` entries, taken in key order (no deadlock)."""
    keys = sorted({file_key(d, n): rel for d, n, rel in entries}.items())
    deadline = time.monotonic() + timeout_s
    held: list[int] = []
    lock_dir = _lock_dir(beneath)
    try:
        for key, rel in keys:
            try:
                fd = os.open(
                    key,
                    os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                    0o600,
                    dir_fd=lock_dir,
                )
            except OSError:
                raise WorkspaceError(
                    "IO_ERROR", f"the lock for {shown(rel.display)} cannot be opened; retry the call"
                ) from None
            held.append(fd)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise WorkspaceError("IO_ERROR", f"the lock for {shown(rel.display)} is not a regular file")
            _acquire(fd, deadline, rel)
        yield
    finally:
        for fd in reversed(held):
            os.close(fd)  # closing the last descriptor releases the flock
        os.close(lock_dir)
