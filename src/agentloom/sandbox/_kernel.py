"""The kernel calls the confining backends need and Python does not wrap: Landlock
rulesets, ``prctl`` flags, a seccomp filter, and the mount calls that build a command's
private view of the files (``_view``: ``unshare``, binds by the new mount API with
idmappings, ``pivot_root``), through ``ctypes`` on the C library.

No binding on the package index is maintained for Landlock, and the calls are few and
stable ABI (``linux/landlock.h``, ``linux/seccomp.h``, ``linux/filter.h``), so this module
states the constants and structures itself. Every function raises ``OSError`` with the
kernel's errno.

Landlock rights by ABI: 1 files, 2 ``REFER``, 3 ``TRUNCATE``, 4 TCP bind / connect,
5 ``IOCTL_DEV``, 6 scoping of abstract unix sockets and signals.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_prctl = _libc.prctl
_prctl.restype = ctypes.c_int
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

# The three Landlock system calls have these numbers on every architecture.
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13
FS_TRUNCATE = 1 << 14
FS_IOCTL_DEV = 1 << 15
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

#: Rights a rule on a regular file (not a folder) may carry.
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT = 1, 2, 4, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MNT_DETACH = 2
OPEN_TREE_CLONE = 1
AT_EMPTY_PATH = 0x1000
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 1, 2, 4
MOUNT_ATTR_IDMAP = 0x00100000
_MOVE_MOUNT_F_EMPTY_PATH = 4
_AT_FDCWD = -100
# The new mount API has one number on every architecture; pivot_root does not.
_SYS_OPEN_TREE = 428
_SYS_MOVE_MOUNT = 429
_SYS_MOUNT_SETATTR = 442
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}


def _check(result: int) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent or disabled."""
    result = _syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return int(result) if result > 0 else 0


def handled_fs(abi: int) -> int:
    """Every filesystem right the ABI knows: whatever a rule does not grant is denied."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def create_ruleset(abi: int, *, deny_tcp: bool, scope: bool) -> int:
    """A ruleset fd handling every filesystem right, TCP (``deny_tcp``, ABI >= 4) and
    abstract-socket / signal scoping (``scope``, ABI >= 6)."""
    net = NET_BIND_TCP | NET_CONNECT_TCP if deny_tcp and abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if scope and abi >= 6 else 0
    if abi >= 6:
        attr = struct.pack("=QQQ", handled_fs(abi), net, scoped)
    elif abi >= 4:
        attr = struct.pack("=QQ", handled_fs(abi), net)
    else:
        attr = struct.pack("=Q", handled_fs(abi))
    buf = ctypes.create_string_buffer(attr, len(attr))
    return _check(_syscall(_SYS_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)))


def allow_path(ruleset_fd: int, path_fd: int, rights: int) -> None:
    """Grant ``rights`` beneath the file or folder ``path_fd`` (an ``O_PATH`` fd)."""
    attr = struct.pack("=Qi", rights, path_fd)
    buf = ctypes.create_string_buffer(attr, len(attr))
    _check(_syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset_fd), ctypes.c_int(_RULE_PATH_BENEATH), buf,
                    ctypes.c_uint32(0)))


def restrict_self(ruleset_fd: int) -> None:
    """Enforce the ruleset on this thread and everything it starts (needs no_new_privs)."""
    _check(_syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset_fd), ctypes.c_uint32(0)))


def prctl(option: int, value: int) -> None:
    _check(_prctl(option, value, 0, 0, 0))


def install_seccomp(program: bytes) -> None:
    """Install a classic-BPF seccomp filter (``program`` is packed ``sock_filter``s)."""
    count = len(program) // 8
    filters = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("@HP", count, ctypes.addressof(filters))  # struct sock_fprog, native layout
    prog_buf = ctypes.create_string_buffer(fprog, len(fprog))
    _check(_prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog_buf), 0, 0))


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags))


def setns(fd: int, nstype: int) -> None:
    """Move this (single-threaded) process into the namespace ``fd`` refers to."""
    _check(_libc.setns(fd, nstype))


def mount(source: bytes | None, target: str, fstype: bytes | None, flags: int,
          data: bytes | None = None) -> None:
    _check(_libc.mount(source, target.encode(), fstype, ctypes.c_ulong(flags), data))


def umount2(target: str, flags: int) -> None:
    _check(_libc.umount2(target.encode(), flags))


def pivot_root(new_root: str, put_old: str) -> None:
    number = _SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(38, f"pivot_root: unknown architecture {platform.machine()}")
    _check(_syscall(number, new_root.encode(), put_old.encode()))


def open_tree(fd: int, flags: int) -> int:
    """A detached copy of the mount tree at ``fd`` (an ``O_PATH`` fd; ``OPEN_TREE_CLONE``),
    as a new fd (close-on-exec)."""
    return _check(_syscall(_SYS_OPEN_TREE, ctypes.c_int(fd), b"",
                           ctypes.c_uint(flags | AT_EMPTY_PATH | os.O_CLOEXEC)))


def mount_setattr(fd: int, attr_set: int, *, userns_fd: int = 0, recursive: bool = False) -> None:
    """Set ``attr_set`` (``MOUNT_ATTR_*``) on the mount at ``fd``; ``MOUNT_ATTR_IDMAP``
    takes the idmapping of the user namespace ``userns_fd``."""
    attr = struct.pack("=QQQQ", attr_set, 0, 0, userns_fd)
    buf = ctypes.create_string_buffer(attr, len(attr))
    flags = AT_EMPTY_PATH | (AT_RECURSIVE if recursive else 0)
    _check(_syscall(_SYS_MOUNT_SETATTR, ctypes.c_int(fd), b"", ctypes.c_uint(flags), buf,
                    ctypes.c_size_t(len(attr))))


def move_mount(fd: int, target: str) -> None:
    """Attach the detached mount ``fd`` at ``target``."""
    _check(_syscall(_SYS_MOVE_MOUNT, ctypes.c_int(fd), b"", ctypes.c_int(_AT_FDCWD),
                    target.encode(), ctypes.c_uint(_MOVE_MOUNT_F_EMPTY_PATH)))


def machine() -> str:
    return platform.machine()
