"""Run a command in one of the container shapes CI runs the integration tests in again
(issue #33, point 6)::

    python tests/shapes/launcher.py --shape no-bwrap -- CMD [ARGS...]
    python tests/shapes/launcher.py --shape container -- CMD [ARGS...]

============  ==========================================================================
shape         what CMD and everything it starts get
============  ==========================================================================
no-bwrap      root, CAP_SYS_ADMIN kept; a private mount namespace in which every ``bwrap``
              on ``PATH`` (and in ``BIN_DIRS``) is ``/dev/null`` bound over it: nothing
              finds it executable (``shutil.which``), nothing can start it
container     ``no-bwrap``, plus a seccomp filter as Docker's default profile has:
              ``unshare`` / ``clone`` with a namespace flag fail with ``EPERM``, ``clone3``
              with ``ENOSYS`` (the C library falls back to ``clone``, whose flags can be
              checked), ``setns`` with ``EPERM``; then ``CAP_SYS_ADMIN`` dropped from the
              bounding, effective, permitted, inheritable and ambient sets
============  ==========================================================================

Both set ``AGENTLOOM_TEST_SHAPE=<shape>`` and ``exec`` CMD, so its exit status is the
launcher's. A shape that cannot be made here (not root, no mount namespace, an architecture
the filter does not know) is refused: exit 2 and one line on stderr, CMD never runs.

Why a filter as well: dropping ``CAP_SYS_ADMIN`` alone still lets a process make a user
namespace (and mount namespaces inside it) on this kernel; in a default container it is the
seccomp profile that refuses them. The filter is installed while the launcher still holds
``CAP_SYS_ADMIN``, as container runtimes do, so ``no_new_privs`` stays off (a filter
installed without the capability would need it, and make the shape stricter than Docker's).

The standard library only, and never ``agentloom``: the shapes test the product from outside.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
from collections.abc import Mapping, Sequence

SHAPES = ("no-bwrap", "container")
SHAPE_VARIABLE = "AGENTLOOM_TEST_SHAPE"
USAGE = "usage: launcher.py --shape {no-bwrap,container} -- CMD [ARGS...]"
REFUSED = 2
#: Where ``bwrap`` is hidden as well as on CMD's ``PATH`` (code may name it by full path).
BIN_DIRS = ("/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin")

CAP_SYS_ADMIN = 21
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
#: CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
NAMESPACE_FLAGS = (
    CLONE_NEWNS | 0x02000000 | 0x04000000 | 0x08000000 | CLONE_NEWUSER | 0x20000000 | 0x40000000 | 0x80
)
#: (AUDIT_ARCH value, syscall numbers) per machine.
ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {"clone": 56, "unshare": 272, "setns": 308, "clone3": 435}),
    "aarch64": (0xC00000B7, {"clone": 220, "unshare": 97, "setns": 268, "clone3": 435}),
}

_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_PR_CAPBSET_READ, _PR_CAPBSET_DROP = 23, 24
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_LOWER = 47, 3
_CAP_VERSION_3 = 0x20080522
# Classic BPF over struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}.
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_OFF_NR, _OFF_ARCH, _OFF_ARG0_LOW = 0, 4, 16  # little-endian: the low 32 bits of args[0]
_X32_BIT = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.restype = ctypes.c_int
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]


class ShapeError(Exception):
    """The shape cannot be made (or the command line is wrong): the one-line reason."""


def _call(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise ShapeError(f"{what} failed: {os.strerror(err)} ({errno.errorcode.get(err, err)})")
    return result


def bwrap_paths(search_path: str) -> list[str]:
    """Every file a lookup of ``bwrap`` on ``search_path`` or in ``BIN_DIRS`` could find,
    symlinks followed, each once."""
    found: list[str] = []
    for folder in [*search_path.split(os.pathsep), *BIN_DIRS]:
        candidate = os.path.join(folder, "bwrap")
        if os.path.isabs(folder) and os.path.isfile(candidate):
            real = os.path.realpath(candidate)
            if real not in found:
                found.append(real)
    return found


def hide_bwrap(search_path: str) -> list[str]:
    """Enter a private mount namespace and bind ``/dev/null`` over every ``bwrap`` there is;
    return the files hidden."""
    _call(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    # Private first: on a shared / (systemd) the binds would otherwise reach the host.
    _call(_libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "making / a private mount")
    hidden = bwrap_paths(search_path)
    for path in hidden:
        _call(_libc.mount(b"/dev/null", path.encode(), None, _MS_BIND, None),
              f"binding /dev/null over {path}")
    # What shutil.which asks (it is not imported: it costs the launcher's start 5 ms).
    for folder in [*search_path.split(os.pathsep), *BIN_DIRS]:
        left = os.path.join(folder, "bwrap")
        if os.path.exists(left) and os.access(left, os.X_OK) and not os.path.isdir(left):
            raise ShapeError(f"{left} is still executable after hiding bubblewrap")
    return hidden


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def namespace_filter(machine: str) -> bytes:
    """The ``container`` shape's seccomp program (packed ``struct sock_filter`` items):
    namespaces refused as Docker's default profile refuses them, everything else allowed.
    A call of another architecture (x32, 32-bit) fails with ``EPERM``."""
    audit_arch, numbers = ARCHES[machine]
    eperm, enosys = _op(_RET_K, _RET_ERRNO | errno.EPERM), _op(_RET_K, _RET_ERRNO | errno.ENOSYS)
    prog = _op(_LD_W_ABS, _OFF_ARCH) + _op(_JEQ_K, audit_arch, 1, 0) + eperm
    prog += _op(_LD_W_ABS, _OFF_NR)
    if machine == "x86_64":
        prog += _op(_JGE_K, _X32_BIT, 0, 1) + eperm
    prog += _op(_JEQ_K, numbers["clone3"], 0, 1) + enosys
    prog += _op(_JEQ_K, numbers["setns"], 0, 1) + eperm
    prog += _op(_JEQ_K, numbers["unshare"], 1, 0)  # unshare: to the flags check
    prog += _op(_JEQ_K, numbers["clone"], 0, 3)  # neither: over the flags check, allowed
    prog += _op(_LD_W_ABS, _OFF_ARG0_LOW)
    prog += _op(_JSET_K, NAMESPACE_FLAGS, 0, 1) + eperm
    prog += _op(_RET_K, _RET_ALLOW)
    return prog


def install_filter(program: bytes) -> None:
    """Install ``program`` on this (single-threaded) process; children inherit it."""
    filters = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("@HP", len(program) // 8, ctypes.addressof(filters))  # struct sock_fprog
    buf = ctypes.create_string_buffer(fprog, len(fprog))
    _call(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(buf), 0, 0),
          "installing the seccomp filter")


def drop_cap_sys_admin() -> None:
    """Drop ``CAP_SYS_ADMIN`` from every capability set; what CMD ``exec``s cannot regain it
    (root's capabilities after ``exec`` are bounded by the bounding set)."""
    _call(_libc.prctl(_PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0), "PR_CAPBSET_DROP(CAP_SYS_ADMIN)")
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_LOWER, CAP_SYS_ADMIN, 0, 0)  # absent: nothing to lower
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable}: caps 0-31, 32-63
    _call(_libc.capget(header, data), "capget")
    for index in range(3):
        data[index] &= ~(1 << CAP_SYS_ADMIN) & 0xFFFFFFFF
    _call(_libc.capset(header, data), "capset without CAP_SYS_ADMIN")


def make_shape(shape: str, search_path: str) -> None:
    """Turn this process into ``shape`` (see the module docstring); ``search_path`` is the
    ``PATH`` CMD will have.

    Raises:
        ShapeError: the shape cannot be made here.
    """
    if shape not in SHAPES:
        raise ShapeError(f"unknown shape {shape!r} (one of {', '.join(SHAPES)})")
    if os.geteuid() != 0:
        raise ShapeError(f"the {shape!r} shape is made by root (it needs CAP_SYS_ADMIN to make it)")
    machine = os.uname().machine
    if shape == "container" and machine not in ARCHES:
        raise ShapeError(f"no seccomp filter for the {machine} architecture")
    hide_bwrap(search_path)
    if shape == "no-bwrap":
        return
    install_filter(namespace_filter(machine))
    drop_cap_sys_admin()
    # Confirm the shape holds before anything runs in it.
    if _libc.unshare(CLONE_NEWUSER) == 0 or ctypes.get_errno() != errno.EPERM:
        raise ShapeError("unshare(CLONE_NEWUSER) was not refused with EPERM under the filter")
    if _libc.prctl(_PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0:
        raise ShapeError("CAP_SYS_ADMIN is still in the bounding set")


def parse(args: Sequence[str]) -> tuple[str, list[str]]:
    """``(shape, command)`` from ``--shape SHAPE -- CMD [ARGS...]``.

    Raises:
        ShapeError: the command line is not of that form.
    """
    if "--" not in args:
        raise ShapeError(f"no command after `--` ({USAGE})")
    split = list(args).index("--")
    options, command = list(args[:split]), list(args[split + 1:])
    if len(options) == 2 and options[0] == "--shape":
        shape = options[1]
    elif len(options) == 1 and options[0].startswith("--shape="):
        shape = options[0].removeprefix("--shape=")
    else:
        raise ShapeError(f"expected --shape SHAPE before `--` ({USAGE})")
    if not command:
        raise ShapeError(f"no command after `--` ({USAGE})")
    return shape, command


def shape_env(shape: str, base: Mapping[str, str]) -> dict[str, str]:
    """CMD's environment: ``base`` with ``AGENTLOOM_TEST_SHAPE`` set."""
    return {**base, SHAPE_VARIABLE: shape}


def main(argv: Sequence[str] | None = None) -> int:
    """Make the shape and ``exec`` the command (never returns then); the exit status of a
    refusal (2) or of a command that could not be started (126, 127) otherwise."""
    args = sys.argv[1:] if argv is None else argv
    if list(args[:1]) in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    try:
        shape, command = parse(args)
        env = shape_env(shape, os.environ)
        make_shape(shape, env.get("PATH", os.defpath))
    except ShapeError as refused:
        print(f"launcher: refused: {refused}", file=sys.stderr)
        return REFUSED
    try:
        os.execvpe(command[0], command, env)
    except OSError as failed:
        print(f"launcher: cannot run {command[0]!r}: {failed.strerror}", file=sys.stderr)
        return 127 if isinstance(failed, FileNotFoundError) else 126


if __name__ == "__main__":
    sys.exit(main())
