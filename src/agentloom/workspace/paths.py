"""Resolve a model-supplied path beneath a workspace root directory fd — never by string prefix.

Owns: turning a path string into a checked relative path (``parse_path``), and opening it
beneath the root (``Beneath``) with
``openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`` or, where the kernel has no openat2,
a component-wise ``O_NOFOLLOW`` walk that refuses every symbolic link. Does not own what
the file tools do with the descriptors (``files.py``) or which root a scope maps to.

``WorkspaceError`` (defined in ``_errors.py``) is re-exported here. Messages name the
*relative* path and say how to fix the call; the host root never appears in a message, a
result or a ``repr``. Paths are printed and read back in the escaped form of ``_names.py``
(undecodable bytes as ``\\xNN``); ``RelPath.parts`` hold the real names.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
from dataclasses import dataclass
from typing import Literal

from agentloom.workspace._errors import CATEGORIES as CATEGORIES
from agentloom.workspace._errors import WorkspaceError as WorkspaceError
from agentloom.workspace._errors import WorkspaceErrorCode as WorkspaceErrorCode
from agentloom.workspace._names import real_name, render_name
from agentloom.workspace._names import shown as shown

PATH_MAX = 4096
NAME_MAX = 255
SANDBOX_ROOT = "/work"
LOCK_DIR = ".locks"
TEMP_PREFIX = ".agentloom-tmp-"
RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE_IN_ROOT = 0x10
EAGAIN_TRIES = 16

Resolution = Literal["auto", "openat2", "walk"]
"""``auto`` uses openat2 when the kernel has it, else the walk; the others force one."""


@dataclass(frozen=True, slots=True)
class RelPath:
    """A checked path relative to the workspace root; ``..`` is kept for the kernel to judge.

    ``parts`` are the real names (``surrogateescape`` for bytes that are not UTF-8);
    ``display`` and ``display_name`` are their printed forms, which results and messages use.
    """

    parts: tuple[str, ...]
    trailing_slash: bool = False

    @property
    def display(self) -> str:
        return "/".join(render_name(p) for p in self.parts) or "."

    @property
    def display_name(self) -> str:
        return render_name(self.name)

    @property
    def kernel(self) -> bytes:
        text = "/".join(self.parts) or "."
        return os.fsencode(text + "/" if self.trailing_slash and self.parts else text)

    @property
    def is_root(self) -> bool:
        return not self.parts

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else "."

    @property
    def parent(self) -> RelPath:
        return RelPath(self.parts[:-1])

    def child(self, name: str) -> RelPath:
        return RelPath((*self.parts, name))


def parse_path(raw: object, *, what: str = "path") -> RelPath:
    """Check a path from a model or user and return it relative to the root.

    Relative POSIX paths are taken as they are; ``/work`` and ``/work/...`` (the sandbox's
    view of the root) map to the root; every other absolute path is refused. Empty and
    ``.`` components are dropped; ``..`` is left to the kernel (RESOLVE_BENEATH).
    """
    if not isinstance(raw, str):
        raise WorkspaceError("INVALID_PATH", f"{what} must be a string, e.g. 'src/app.py'")
    if "\x00" in raw:
        raise WorkspaceError("INVALID_PATH", f"{what} {shown(raw)} contains a NUL byte; remove it")
    if raw == "":
        raise WorkspaceError("INVALID_PATH", f"{what} is empty; use '.' for the workspace root")
    text = raw
    if text == SANDBOX_ROOT or text.startswith(SANDBOX_ROOT + "/"):
        text = text[len(SANDBOX_ROOT) :].lstrip("/")
    elif text.startswith("/"):
        raise WorkspaceError(
            "PATH_ESCAPE",
            f"{what} is an absolute path outside the workspace; "
            "give a path relative to the workspace (or under /work/), e.g. 'src/app.py'",
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise WorkspaceError("INVALID_PATH", f"{what} {shown(raw)} is not valid text; use UTF-8") from None
    names: list[str] = []
    for component in text.split("/"):
        name = real_name(component)
        if name is None:
            raise WorkspaceError(
                "INVALID_PATH",
                f"{what} {shown(raw)} escapes bytes that are text: \\xNN stands only for a byte that "
                "is not UTF-8; write other characters as themselves and a backslash before 'xNN' as \\\\",
            )
        names.append(name)
    encoded = b"/".join(os.fsencode(n) for n in names)
    if len(encoded) >= PATH_MAX:
        raise WorkspaceError(
            "PATH_TOO_LONG", f"{what} is {len(encoded)} bytes long; paths must be under {PATH_MAX} bytes"
        )
    if any(len(os.fsencode(n)) > NAME_MAX for n in names):
        raise WorkspaceError(
            "NAME_TOO_LONG", f"{what} {shown(raw)} has a name longer than {NAME_MAX} bytes; shorten it"
        )
    parts = tuple(n for n in names if n not in ("", "."))
    trailing = text.endswith("/") or text.endswith("/.") or text == "."
    return RelPath(parts, trailing_slash=trailing and bool(parts))


def refuse_reserved(rel: RelPath) -> None:
    """Refuse the service's own bookkeeping names (lexical; ``Beneath`` also checks identity)."""
    if rel.parts and rel.parts[0] == LOCK_DIR:
        raise WorkspaceError(
            "RESERVED_PATH", f"{shown(rel.display)} is inside {LOCK_DIR}/, which the file service reserves"
        )
    if any(p.startswith(TEMP_PREFIX) for p in rel.parts):
        raise WorkspaceError(
            "RESERVED_PATH",
            f"{shown(rel.display)}: names starting with {TEMP_PREFIX!r} are reserved for atomic writes",
        )


# --- openat2 through ctypes -------------------------------------------------------------

_NR_OPENAT2 = {"x86_64": 437, "amd64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437}.get(
    platform.machine().lower()
)
_libc = ctypes.CDLL(None, use_errno=True)


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def openat2(dir_fd: int, path: bytes, flags: int, mode: int, resolve: int) -> int:
    """One raw openat2(2) call; raises ``OSError`` with the kernel's errno."""
    if _NR_OPENAT2 is None:
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
    how = _OpenHow(flags, mode, resolve)
    ctypes.set_errno(0)
    fd = int(
        _libc.syscall(
            ctypes.c_long(_NR_OPENAT2),
            ctypes.c_int(dir_fd),
            ctypes.c_char_p(path),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


_openat2_ok: bool | None = None


def openat2_available() -> bool:
    """Whether this kernel (and seccomp policy) lets us call openat2; probed once."""
    global _openat2_ok
    if _openat2_ok is None:
        try:
            os.close(openat2(-100, b"/", os.O_PATH | os.O_CLOEXEC, 0, 0))  # -100 is AT_FDCWD
            _openat2_ok = True
        except OSError:
            _openat2_ok = False
    return _openat2_ok


# --- errors from errno ------------------------------------------------------------------


def os_error(exc: OSError, rel: RelPath, *, walk: bool = False) -> WorkspaceError:
    """Translate a kernel error on ``rel`` into a ``WorkspaceError`` without host paths."""
    p = shown(rel.display)
    code = exc.errno
    if code == errno.EXDEV:
        return WorkspaceError("PATH_ESCAPE", f"{p} resolves outside the workspace; use a path inside it")
    if code == errno.ELOOP:
        if walk:
            return WorkspaceError(
                "SYMLINK_REFUSED", f"{p} goes through a symbolic link, which this host does not follow"
            )
        return WorkspaceError(
            "PATH_ESCAPE",
            f"{p} goes through a /proc magic link or too many symbolic links; use a plain path",
        )
    if code == errno.ENOENT:
        return WorkspaceError("NOT_FOUND", f"{p} does not exist; list the folder to see what is there")
    if code == errno.ENOTDIR:
        return WorkspaceError("NOT_A_DIRECTORY", f"a component of {p} is not a folder")
    if code == errno.EISDIR:
        return WorkspaceError("IS_A_DIRECTORY", f"{p} is a folder; use list to see its entries")
    if code == errno.EEXIST:
        return WorkspaceError("EXISTS", f"{p} already exists")
    if code == errno.ENOTEMPTY:
        return WorkspaceError("NOT_EMPTY", f"{p} is not empty; pass recursive=True to delete it")
    if code == errno.ENAMETOOLONG:
        return WorkspaceError("NAME_TOO_LONG", f"{p} is too long; shorten it")
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return WorkspaceError("PERMISSION_DENIED", f"the workspace does not allow this access to {p}")
    if code == errno.EINVAL:
        return WorkspaceError("INVALID_ARGUMENTS", f"the operation is not valid for {p}")
    name = errno.errorcode.get(code or 0, "EIO")
    return WorkspaceError("IO_ERROR", f"file system error {name} on {p}; retry or report it")


# --- resolution -------------------------------------------------------------------------


class Beneath:
    """An open workspace root and the rule for resolving paths beneath it.

    Every descriptor handed out was resolved by the kernel beneath the root's fd:
    with openat2 (``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS``; inner symlinks are followed
    while they stay beneath, ``EAGAIN`` is retried at most ``EAGAIN_TRIES`` times) or with the
    walk (``O_PATH | O_NOFOLLOW | O_DIRECTORY`` per folder, ``O_NOFOLLOW`` on the last name,
    ``..`` popped off the stack of descriptors already held; any symlink is refused).

    ``content_owner`` is the ``(uid, gid)`` every file and folder the file tools create
    beneath the root is given to (``None``: the runtime keeps them). ``lock_dir``: the
    folder the entry locks live in when they must not be written into the root (a folder of
    the user's bound as the workspace); default ``.locks`` at the root.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        resolution: Resolution = "auto",
        content_owner: tuple[int, int] | None = None,
        lock_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.content_owner = content_owner
        self.lock_dir = lock_dir  # None: ``.locks`` at the root; else a folder outside it
        if resolution == "auto":
            resolution = "openat2" if openat2_available() else "walk"
        self.walk = resolution == "walk"
        try:
            self.fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            raise WorkspaceError(
                "WORKSPACE_UNAVAILABLE", "the workspace folder is not available; reopen the workspace view"
            ) from None
        st = os.fstat(self.fd)
        self.dev = st.st_dev
        self.ino = st.st_ino

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # identity -------------------------------------------------------------------------

    def lock_dir_ino(self) -> int | None:
        """The inode of ``.locks`` at the root, if it is a real folder the service's locks
        are in (a root whose locks live outside it has none)."""
        if self.lock_dir is not None:
            return None
        try:
            st = os.stat(LOCK_DIR, dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            return None
        return st.st_ino if stat.S_ISDIR(st.st_mode) and st.st_dev == self.dev else None

    def check_device(self, st: os.stat_result, rel: RelPath) -> None:
        if st.st_dev != self.dev:
            raise WorkspaceError(
                "PATH_ESCAPE", f"{shown(rel.display)} is on another file system mounted in the workspace"
            )

    def check_not_lock_dir(self, st: os.stat_result, rel: RelPath) -> None:
        if stat.S_ISDIR(st.st_mode) and st.st_ino == self.lock_dir_ino():
            raise WorkspaceError(
                "RESERVED_PATH", f"{shown(rel.display)} is the file service's {LOCK_DIR}/ folder"
            )

    # opening --------------------------------------------------------------------------

    def open(self, rel: RelPath, flags: int, mode: int = 0) -> int:
        """Open ``rel`` beneath the root; raises ``WorkspaceError`` for every refusal."""
        try:
            if self.walk:
                return self._walk_open(rel, flags, mode)
            return self._openat2_open(rel, flags, mode)
        except OSError as exc:
            raise os_error(exc, rel, walk=self.walk) from None

    def _openat2_open(self, rel: RelPath, flags: int, mode: int) -> int:
        resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
        for _ in range(EAGAIN_TRIES):
            try:
                return openat2(self.fd, rel.kernel, flags | os.O_CLOEXEC, mode, resolve)
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EINTR):
                    raise
        raise WorkspaceError(
            "PATH_BUSY", f"{shown(rel.display)} kept changing while it was resolved; retry the call"
        )

    def _walk_open(self, rel: RelPath, flags: int, mode: int) -> int:
        held: list[int] = []
        try:
            components = list(rel.parts)
            last = components.pop() if components else "."
            for comp in components:
                if comp == "..":
                    self._pop(held, rel)
                    continue
                cur = held[-1] if held else self.fd
                try:
                    fd = os.open(comp, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=cur)
                except OSError as exc:
                    self._raise_if_symlink(cur, comp, rel, exc)
                    raise
                held.append(fd)
            if last == "..":
                self._pop(held, rel)
                last = "."
            cur = held[-1] if held else self.fd
            if rel.trailing_slash:
                # Never append "/": a trailing slash makes the kernel follow a final symlink.
                flags |= os.O_DIRECTORY
            try:
                return os.open(last, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=cur)
            except OSError as exc:
                self._raise_if_symlink(cur, last, rel, exc)
                raise
        finally:
            for fd in held:
                os.close(fd)

    def _pop(self, held: list[int], rel: RelPath) -> None:
        if not held:
            raise WorkspaceError(
                "PATH_ESCAPE", f"{shown(rel.display)} climbs above the workspace root; use a path inside it"
            )
        os.close(held.pop())

    def _raise_if_symlink(self, dir_fd: int, name: str, rel: RelPath, exc: OSError) -> None:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            return
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            raise WorkspaceError(
                "SYMLINK_REFUSED",
                f"{shown(rel.display)} goes through the symbolic link {shown(render_name(name))}, "
                "which this host does not follow; use the real path",
            ) from None

    def open_dir(self, rel: RelPath) -> int:
        """Open a folder for listing; refuses other devices and the ``.locks`` folder."""
        fd = self.open(rel, os.O_RDONLY | os.O_DIRECTORY)
        try:
            st = os.fstat(fd)
            self.check_device(st, rel)
            self.check_not_lock_dir(st, rel)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_parent(self, rel: RelPath) -> tuple[int, str]:
        """Open the folder that holds ``rel``'s last name; return ``(folder fd, name)``.

        The name itself is not resolved, so callers act on the entry (never through it).
        """
        if rel.is_root:
            raise WorkspaceError(
                "ROOT_REFUSED", "this call needs an entry inside the workspace, not its root"
            )
        name = rel.name
        if name == "..":
            raise WorkspaceError(
                "INVALID_PATH",
                f"{shown(rel.display)} ends in '..'; name the entry itself, e.g. 'dir/file.txt'",
            )
        fd = self.open_dir(rel.parent)
        try:
            st = os.fstat(fd)
            if name == LOCK_DIR and st.st_ino == self.ino:
                raise WorkspaceError(
                    "RESERVED_PATH", f"{shown(rel.display)} is the file service's {LOCK_DIR}/ folder"
                )
        except BaseException:
            os.close(fd)
            raise
        return fd, name
