"""The kernel calls the confining backends need and Python does not wrap: Landlock
rulesets, ``prctl`` flags, a seccomp filter and the private mounts that stage bubblewrap's
bind sources, through ``ctypes`` on the C library.

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
from collections.abc import Sequence

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
_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
#: In a private mount namespace (``stage_binds``): where bind sources are staged.
STAGE = "/tmp"


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


def stage_binds(sources: Sequence[str | bytes]) -> list[str]:
    """Enter a private mount namespace and bind every source at ``staged_path(i)``, in a small
    tmpfs of mode 0711 on ``STAGE``; return those paths (in the order of ``sources``).

    Run as root just before starting bubblewrap as the sandbox uid: bubblewrap finds its bind
    sources by path as that uid, and a source below a folder it cannot search (``/root``,
    pytest's 0700 folders) would be refused. The staged paths are reachable by any uid, and
    only this process and its children see them.
    """
    _check(_libc.unshare(_CLONE_NEWNS))
    _check(_libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None))
    # Opened in the new namespace (a bind source must be one of its mounts), before STAGE
    # hides what lies below it.
    fds = [os.open(src, os.O_PATH | os.O_CLOEXEC) for src in sources]
    _check(_libc.mount(b"tmpfs", STAGE.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                       b"mode=0711,size=65536"))
    staged = []
    for i, fd in enumerate(fds):
        target = staged_path(i)
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.mkdir(target, 0o711)
        else:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
        _check(_libc.mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None,
                           _MS_BIND | _MS_REC, None))
        os.close(fd)
        staged.append(target)
    return staged


def staged_path(index: int) -> str:
    """Where ``stage_binds`` puts its ``index``-th source."""
    return f"{STAGE}/{index}"


def machine() -> str:
    return platform.machine()
