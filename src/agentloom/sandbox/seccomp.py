"""The seccomp filter every confined command runs under (bubblewrap and Landlock alike).

A deny list in the manner of container runtimes: the calls an unprivileged process has
no business making inside a sandbox, and that have been the way out of one — kernel
keyrings (``add_key``, ``request_key``, ``keyctl``), ``ptrace`` and cross-process memory
access, every mount call, ``bpf``, ``perf_event_open``, ``userfaultfd``, namespaces
(``unshare``, ``setns``, ``clone`` with a namespace flag; ``clone3`` answers ``ENOSYS`` so
the C library falls back to ``clone``, whose flags can be checked), module and kexec
loading, ``open_by_handle_at``, io_uring (``io_uring_setup``, ``_enter``, ``_register``: its
operations — a socket, an open with any mode — never pass through this filter); a ``chmod``
that sets the setuid or setgid bit, and a file or folder *created* with either (``open`` /
``openat`` with ``O_CREAT`` or ``O_TMPFILE``, ``creat``, ``mkdir``, ``mknod``; ``openat2``,
whose mode this filter cannot read, answers ``ENOSYS`` and the C library uses ``openat``):
through an idmapped bind (``_view``) a file the command makes is its folder owner's on disk,
root's perhaps, so no set-id file may exist even for the length of a command (the work folder
is swept after each execution as well, ``_sweep``). Denied calls fail with ``EPERM``; nothing
is killed. A command of another architecture (x32, 32-bit) is refused outright.

With ``deny_sockets`` (Landlock without egress) ``socket()`` fails with ``EACCES`` for
every address family: Landlock confines TCP only, and neither UDP nor unix sockets on
paths. ``socketpair`` stays allowed for stream and seqpacket sockets (asyncio's event loop
needs one), which are connected to each other from birth; a datagram pair fails with
``EACCES``, since a datagram socket may still ``sendto`` or ``connect`` a host socket path.
"""

from __future__ import annotations

import errno
import platform
import struct

from agentloom.sandbox.errors import SANDBOX_UNAVAILABLE, SandboxError

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_AND_K = 0x54
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0_LOW = 16  # little-endian: the low 32 bits of args[0]
_X32_BIT = 0x40000000
#: CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
#: S_ISUID | S_ISGID: a chmod to either fails, so no command makes a set-id file.
_SET_ID_BITS = 0o6000
#: SOCK_NONBLOCK | SOCK_CLOEXEC: the flags a socket type may carry.
_SOCK_TYPE_FLAGS = 0o4000 | 0o2000000
#: SOCK_STREAM, SOCK_SEQPACKET: connected from birth, a pair of them reaches only itself.
_CONNECTED_TYPES = (1, 5)
#: O_CREAT | __O_TMPFILE: an open that creates, whose mode argument is used.
_CREATE_FLAGS = 0o100 | 0o20000000
_CLONE_NAMESPACES = (
    0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80
)

_DENIED = (
    "add_key", "request_key", "keyctl", "ptrace", "process_vm_readv", "process_vm_writev",
    "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr", "bpf", "perf_event_open", "userfaultfd", "unshare", "setns",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "open_by_handle_at", "acct", "swapon", "swapoff", "syslog", "quotactl",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
)

#: (AUDIT_ARCH value, syscall numbers) per machine.
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "add_key": 248, "request_key": 249, "keyctl": 250, "ptrace": 101,
        "process_vm_readv": 310, "process_vm_writev": 311, "mount": 165, "umount2": 166,
        "pivot_root": 155, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "mount_setattr": 442, "bpf": 321, "perf_event_open": 298,
        "userfaultfd": 323, "unshare": 272, "setns": 308, "kexec_load": 246, "kexec_file_load": 320,
        "init_module": 175, "finit_module": 313, "delete_module": 176, "open_by_handle_at": 304,
        "acct": 163, "swapon": 167, "swapoff": 168, "syslog": 103, "quotactl": 179,
        "socket": 41, "socketpair": 53, "clone": 56, "clone3": 435,
        "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "open": 2, "creat": 85, "openat": 257, "openat2": 437, "mkdir": 83, "mkdirat": 258,
        "mknod": 133, "mknodat": 259,
    }),
    "aarch64": (0xC00000B7, {
        "add_key": 217, "request_key": 218, "keyctl": 219, "ptrace": 117,
        "process_vm_readv": 270, "process_vm_writev": 271, "mount": 40, "umount2": 39,
        "pivot_root": 41, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "mount_setattr": 442, "bpf": 280, "perf_event_open": 241,
        "userfaultfd": 282, "unshare": 97, "setns": 268, "kexec_load": 104, "kexec_file_load": 294,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "open_by_handle_at": 265,
        "acct": 89, "swapon": 224, "swapoff": 225, "syslog": 116, "quotactl": 60,
        "socket": 198, "socketpair": 199, "clone": 220, "clone3": 435,
        "fchmod": 52, "fchmodat": 53, "fchmodat2": 452,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "openat": 56, "openat2": 437, "mkdirat": 34, "mknodat": 33,
    }),
}


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _deny(nr: int, err: int) -> bytes:
    return _op(_JEQ_K, nr, 0, 1) + _op(_RET_K, _RET_ERRNO | err)


def _deny_set_id_mode(nr: int, mode_arg: int) -> bytes:
    """``nr`` with set-id bits in argument ``mode_arg`` fails with EPERM."""
    return (
        _op(_JEQ_K, nr, 0, 4)
        + _op(_LD_W_ABS, _OFF_ARG0_LOW + 8 * mode_arg)
        + _op(_JSET_K, _SET_ID_BITS, 0, 1)
        + _op(_RET_K, _RET_ERRNO | errno.EPERM)
        + _op(_LD_W_ABS, _OFF_NR)  # the accumulator holds the call number again
    )


def _deny_set_id_create(nr: int, flags_arg: int, mode_arg: int) -> bytes:
    """``nr`` creating a file (``flags_arg`` has ``O_CREAT`` or ``O_TMPFILE``) with set-id
    bits in argument ``mode_arg`` fails with EPERM; without those flags the mode is unused."""
    return (
        _op(_JEQ_K, nr, 0, 6)
        + _op(_LD_W_ABS, _OFF_ARG0_LOW + 8 * flags_arg)
        + _op(_JSET_K, _CREATE_FLAGS, 0, 3)
        + _op(_LD_W_ABS, _OFF_ARG0_LOW + 8 * mode_arg)
        + _op(_JSET_K, _SET_ID_BITS, 0, 1)
        + _op(_RET_K, _RET_ERRNO | errno.EPERM)
        + _op(_LD_W_ABS, _OFF_NR)  # the accumulator holds the call number again
    )


def _deny_unconnected_pairs(nr: int) -> bytes:
    """``socketpair`` (``nr``) of a type other than stream or seqpacket fails with EACCES: a
    datagram socket of a pair may still ``sendto`` or ``connect`` a unix socket path."""
    stream, seqpacket = _CONNECTED_TYPES
    return (
        _op(_JEQ_K, nr, 0, 6)
        + _op(_LD_W_ABS, _OFF_ARG0_LOW + 8)
        + _op(_AND_K, ~_SOCK_TYPE_FLAGS & 0xFFFFFFFF)
        + _op(_JEQ_K, stream, 2, 0)
        + _op(_JEQ_K, seqpacket, 1, 0)
        + _op(_RET_K, _RET_ERRNO | errno.EACCES)
        + _op(_LD_W_ABS, _OFF_NR)  # the accumulator holds the call number again
    )


def seccomp_program(*, deny_sockets: bool, machine: str | None = None) -> bytes:
    """The filter as packed ``struct sock_filter`` items (what ``bwrap --seccomp`` reads
    and ``PR_SET_SECCOMP`` takes).

    Raises:
        SandboxError: ``SANDBOX_UNAVAILABLE`` on a machine this filter does not know.
    """
    arch = machine or platform.machine()
    if arch not in _ARCHES:
        raise SandboxError(SANDBOX_UNAVAILABLE, f"no seccomp filter for the {arch} architecture")
    audit_arch, numbers = _ARCHES[arch]
    prog = _op(_LD_W_ABS, _OFF_ARCH) + _op(_JEQ_K, audit_arch, 1, 0) + _op(_RET_K, _RET_KILL_PROCESS)
    prog += _op(_LD_W_ABS, _OFF_NR)
    if arch == "x86_64":
        prog += _op(_JGE_K, _X32_BIT, 0, 1) + _op(_RET_K, _RET_ERRNO | errno.EPERM)
    for name in _DENIED:
        prog += _deny(numbers[name], errno.EPERM)
    prog += _deny(numbers["clone3"], errno.ENOSYS)
    prog += _deny(numbers["openat2"], errno.ENOSYS)
    if deny_sockets:
        prog += _deny(numbers["socket"], errno.EACCES)
        prog += _deny_unconnected_pairs(numbers["socketpair"])
    for name, mode_arg in (("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("fchmodat2", 2),
                           ("creat", 1), ("mkdir", 1), ("mkdirat", 2), ("mknod", 1),
                           ("mknodat", 2)):
        if name in numbers:
            prog += _deny_set_id_mode(numbers[name], mode_arg)
    for name, flags_arg, mode_arg in (("open", 1, 2), ("openat", 2, 3)):
        if name in numbers:
            prog += _deny_set_id_create(numbers[name], flags_arg, mode_arg)
    # Last: clone with a namespace flag (the accumulator then holds an argument, not the nr).
    prog += _op(_JEQ_K, numbers["clone"], 0, 3)
    prog += _op(_LD_W_ABS, _OFF_ARG0_LOW)
    prog += _op(_JSET_K, _CLONE_NAMESPACES, 0, 1)
    prog += _op(_RET_K, _RET_ERRNO | errno.EPERM)
    prog += _op(_RET_K, _RET_ALLOW)
    return prog
