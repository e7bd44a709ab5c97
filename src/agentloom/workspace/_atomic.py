"""Atomic file replacement in one folder: temp file (``O_EXCL``), write, fsync, rename, fsync folder.

Owns the byte-level helpers the file tools share: bounded reads, content etags, the
no-replace rename and the test-only crash point. Everything works on folder descriptors
that ``paths.Beneath`` resolved, never on path strings.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import secrets
import signal
import stat

from agentloom.workspace._modes import FILE_MODE_MASK, ContentOwner, hand_over
from agentloom.workspace.paths import TEMP_PREFIX, RelPath, WorkspaceError, os_error, shown

MAX_FILE_BYTES = 16 * 1024 * 1024
CRASH_ENV = "AGENTLOOM_WORKSPACE_CRASH_AT"
"""Test-only: ``after_temp_fsync`` SIGKILLs the process after the temp file is durable and
before the rename, to prove a crash there leaves the old content in place."""

RENAME_NOREPLACE = 1
_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)


def etag_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def normalise_etag(value: object) -> str:
    """Accept ``sha256:<hex>`` or bare ``<hex>``; anything else is an invalid argument."""
    if not isinstance(value, str):
        raise WorkspaceError("INVALID_ARGUMENTS", "if_match must be the etag string returned by read")
    text = value.strip()
    if len(text) == 64 and all(c in "0123456789abcdef" for c in text):
        return "sha256:" + text
    return text


def crash_point(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def read_all(fd: int, rel: RelPath, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """Read a regular file's bytes; refuse files larger than ``max_bytes``."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, 1024 * 1024)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:
            raise WorkspaceError(
                "FILE_TOO_LARGE",
                f"{shown(rel.display)} is larger than {max_bytes} bytes; the file tools handle smaller files",
            )
        chunks.append(chunk)


def decode_text(data: bytes, rel: RelPath) -> str:
    """UTF-8 text, or ``BINARY_FILE`` for NUL bytes and invalid UTF-8."""
    if b"\x00" in data:
        raise WorkspaceError(
            "BINARY_FILE", f"{shown(rel.display)} is a binary file (NUL bytes); the file tools read text only"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise WorkspaceError(
            "BINARY_FILE", f"{shown(rel.display)} is not valid UTF-8 text; the file tools read text only"
        ) from None


def encode_text(content: object, *, what: str = "content") -> bytes:
    if not isinstance(content, str):
        raise WorkspaceError("INVALID_ARGUMENTS", f"{what} must be a string")
    if "\x00" in content:
        raise WorkspaceError(
            "INVALID_ARGUMENTS", f"{what} contains a NUL character; the file tools write text"
        )
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise WorkspaceError("INVALID_ARGUMENTS", f"{what} is not valid Unicode text") from None
    if len(data) > MAX_FILE_BYTES:
        raise WorkspaceError("FILE_TOO_LARGE", f"{what} is larger than {MAX_FILE_BYTES} bytes; split it")
    return data


def rename_noreplace(src_dir: int, src: str, dst_dir: int, dst: str) -> None:
    """``renameat2(RENAME_NOREPLACE)``; raises ``FileExistsError`` when ``dst`` exists.

    File systems without RENAME_NOREPLACE (``EINVAL``, older NFS) fall back to
    check-then-rename, which is atomic only against other writers holding the entry lock.
    """
    if _renameat2 is not None:
        ctypes.set_errno(0)
        rc = _renameat2(
            ctypes.c_int(src_dir),
            ctypes.c_char_p(os.fsencode(src)),
            ctypes.c_int(dst_dir),
            ctypes.c_char_p(os.fsencode(dst)),
            ctypes.c_uint(RENAME_NOREPLACE),
        )
        if rc == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(err, os.strerror(err))
    try:
        os.stat(dst, dir_fd=dst_dir, follow_symlinks=False)
    except FileNotFoundError:
        os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir)
        return
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST))


def fsync_dir(dir_fd: int) -> None:
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EROFS):
            raise


def write_atomic(
    dir_fd: int,
    name: str,
    data: bytes,
    rel: RelPath,
    *,
    replace: bool,
    mode: int,
    owner: ContentOwner | None = None,
) -> None:
    """Make ``name`` in ``dir_fd`` hold ``data``, all or nothing.

    ``replace=False`` refuses an existing entry (``EXISTS``) at the rename itself. A crash
    before the rename leaves the old file and a hidden temp file; never a partial target.
    The new file gets ``mode``'s permission bits without write for others, and belongs to
    ``owner`` when one is given (set on the temp file's descriptor, before the rename).
    """
    tmp = TEMP_PREFIX + secrets.token_hex(8)
    try:
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd
        )
    except OSError as exc:
        raise os_error(exc, rel) from None
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            hand_over(fd, owner)  # before fchmod: a chown clears setuid/setgid bits
            os.fchmod(fd, stat.S_IMODE(mode) & FILE_MODE_MASK)
            os.fsync(fd)
        finally:
            os.close(fd)
        crash_point("after_temp_fsync")
        if replace:
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            rename_noreplace(dir_fd, tmp, dir_fd, name)
    except BaseException as exc:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        if isinstance(exc, FileExistsError):
            raise WorkspaceError(
                "EXISTS", f"{shown(rel.display)} already exists; read it and write with mode='replace'"
            ) from None
        if isinstance(exc, OSError):
            raise os_error(exc, rel) from None
        raise
    try:
        fsync_dir(dir_fd)
    except OSError as exc:
        code = errno.errorcode.get(exc.errno or 0, "EIO")
        raise WorkspaceError(
            "IO_ERROR",
            f"{shown(rel.display)} was written but its folder could not be flushed ({code})",
            external_outcome="unknown",
        ) from None
