"""The fork launcher of the Landlock and ``none`` backends: a reaper per execution.

::

    runtime ──fork──► reaper (subreaper, own session) ──fork──► command
        │  control pipe ▲                                 (rlimits, uid, no_new_privs,
        └───────────────┘                                  Landlock, seccomp, exec)

The reaper is the runtime's child and the parent of the command. It is a child
subreaper, so every process the command starts stays in its subtree even after a
``setsid`` or a double fork. When the command exits, when the runtime asks (a byte on
the control pipe), or when the runtime dies (the pipe's end of file: only the runtime
holds its write end), the reaper kills its whole subtree, reaps it and exits. So the
reaper's own exit proves every process of the execution is gone: it exits with the
command's status (``128 + N`` for a command killed by signal N, like bubblewrap) and
with 137 when it was told to kill. If its subtree will not empty it kills itself, and
the runtime then sees a reaper killed by a signal: not confirmed.

Forking the runtime (not starting an interpreter) keeps an ``exec`` of ``true`` cheap.
The forked code is single-threaded from its first line, calls only ``os`` functions and
pre-bound ``ctypes`` functions, and leaves with ``os._exit``.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import stat
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from agentloom.sandbox import _kernel
from agentloom.sandbox._limits import apply_rlimits

# Python 3.12+ warns about fork() in a threaded process; the forked code above is the
# narrow kind that is safe (no locks, no imports, os._exit).
warnings.filterwarnings(
    "ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning
)

#: The reaper's exit status when the runtime asked it to kill (SIGKILL's shell status).
KILLED_STATUS = 128 + signal.SIGKILL
#: How long the reaper keeps killing a subtree that will not empty before giving up.
KILL_TREE_TIMEOUT_S = 10.0
_SETUP_FAILED = 126
_NOT_FOUND = 127
_PREFIX = b"agentloom-sandbox: "


@dataclass(frozen=True, slots=True, kw_only=True)
class LandlockRules:
    """Paths the command may use: ``(host path, rights)``; everything else is denied."""

    abi: int
    rules: tuple[tuple[str, int], ...]
    deny_tcp: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Confinement:
    """What the command's process applies to itself before ``exec``.

    ``identity`` is the ``(uid, gid)`` to switch to (the runtime is root), ``rlimits``
    ``(resource, limit)`` pairs, ``seccomp`` a packed filter.
    """

    identity: tuple[int, int] | None = None
    rlimits: tuple[tuple[int, int], ...] = ()
    landlock: LandlockRules | None = None
    seccomp: bytes | None = None


class ReaperProcess:
    """The runtime's handle on one reaper: enough of ``Popen`` for the supervisor."""

    def __init__(self, pid: int, control_fd: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._control = control_fd

    def wait(self) -> int:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
            with contextlib.suppress(OSError):
                os.close(self._control)
        return self.returncode

    def request_kill(self) -> None:
        """Ask the reaper to kill the whole execution; SIGKILL it if it cannot be asked."""
        try:
            os.write(self._control, b"k")
        except OSError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    stdout_fd: int,
    stderr_fd: int,
    confinement: Confinement,
) -> ReaperProcess:
    """Fork a reaper that runs ``argv`` under ``confinement``; return at once.

    A command that cannot be confined or started never runs: its reaper reports why on
    the command's stderr and exits 126 (confinement) or 127 (no such program).
    """
    args = [os.fsencode(a) for a in argv]
    environ = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    control_r, control_w = os.pipe2(os.O_CLOEXEC)
    try:
        pid = os.fork()
    except BaseException:
        os.close(control_r)
        os.close(control_w)
        raise
    if pid == 0:  # the reaper
        _reaper(control_r, stdout_fd, stderr_fd, args, environ, cwd, confinement)
    os.close(control_r)
    return ReaperProcess(pid, control_w)


# -- in the reaper ---------------------------------------------------------------------------


def _reaper(
    control: int, out: int, err: int, argv: list[bytes], env: dict[bytes, bytes], cwd: str,
    confinement: Confinement,
) -> NoReturn:
    status = _SETUP_FAILED
    try:
        os.setsid()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        _close_fds_except((control, out, err))
        _kernel.prctl(_kernel.PR_SET_CHILD_SUBREAPER, 1)
        reaper = os.getpid()
        command = os.fork()
        if command == 0:
            _command(reaper, out, err, argv, env, cwd, confinement)
        for fd in {out, err}:
            os.close(fd)
        status = _wait_command(command, control)
    except BaseException as exc:
        _say(b"the reaper failed: " + repr(exc).encode(errors="replace"), fd=err)
        status = _SETUP_FAILED
    finally:
        if not _kill_tree():
            os.kill(os.getpid(), signal.SIGKILL)  # unconfirmed: the runtime sees a signal
        os._exit(status)


def _close_fds_except(keep: tuple[int, ...]) -> None:
    low = 3
    for fd in sorted(keep):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1 << 20)


def _wait_command(command: int, control: int) -> int:
    poller = select.poll()
    poller.register(control, select.POLLIN)
    pidfd = os.pidfd_open(command)
    poller.register(pidfd, select.POLLIN)
    while True:
        ready = {fd for fd, _ in poller.poll(1000)}
        if control in ready:  # a kill request, or the runtime is gone
            return KILLED_STATUS
        status = _reap(command)
        if status is not None:
            return status


def _reap(command: int) -> int | None:
    """Reap every exited child (orphans land here too); the command's status once reaped."""
    found: int | None = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if pid == 0:
            return found
        if pid == command:
            code = os.waitstatus_to_exitcode(status)
            found = 128 - code if code < 0 else code


def _kill_tree() -> bool:
    """SIGKILL every descendant until none is left; false if they would not go."""
    deadline = time.monotonic() + KILL_TREE_TIMEOUT_S
    while time.monotonic() < deadline:
        pids = _descendants(os.getpid())
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return True  # no child left: the subtree is empty
        if not pids:
            time.sleep(0.001)
    return False


def _descendants(root: int) -> list[int]:
    found: list[int] = []
    stack = [root]
    while stack:
        pid = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                    children = [int(c) for c in fh.read().split()]
            except OSError:
                continue
            found += children
            stack += children
    return found


# -- in the command, before exec ------------------------------------------------------------


def _command(
    reaper: int, out: int, err: int, argv: list[bytes], env: dict[bytes, bytes], cwd: str,
    confinement: Confinement,
) -> NoReturn:
    try:
        os.setsid()
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.closerange(3, 1 << 20)
    except BaseException:
        os._exit(_SETUP_FAILED)
    try:
        _confine(reaper, cwd, confinement)
    except BaseException as exc:
        _say(b"could not confine the command: " + str(exc).encode(errors="replace"))
        os._exit(_SETUP_FAILED)
    try:
        os.execvpe(argv[0], argv, env)
    except BaseException as exc:
        _say(b"cannot run " + argv[0] + b": " + str(exc).encode(errors="replace"))
    os._exit(_NOT_FOUND)


def _confine(reaper: int, cwd: str, confinement: Confinement) -> None:
    ruleset = _ruleset(confinement.landlock) if confinement.landlock is not None else None
    apply_rlimits(confinement.rlimits)
    os.chdir(cwd)  # before dropping root: the folders above the workspace are root's 0700
    if confinement.identity is not None:
        uid, gid = confinement.identity
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    _kernel.prctl(_kernel.PR_SET_PDEATHSIG, signal.SIGKILL)  # after setuid, which clears it
    if os.getppid() != reaper:
        raise OSError("the reaper is gone")
    _kernel.prctl(_kernel.PR_SET_NO_NEW_PRIVS, 1)
    if ruleset is not None:
        _kernel.restrict_self(ruleset)
        os.close(ruleset)
    if confinement.seccomp is not None:
        _kernel.install_seccomp(confinement.seccomp)


def _ruleset(plan: LandlockRules) -> int:
    ruleset = _kernel.create_ruleset(plan.abi, deny_tcp=plan.deny_tcp, scope=True)
    for path, rights in plan.rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            allowed = rights & _kernel.handled_fs(plan.abi)
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                allowed &= _kernel.FILE_RIGHTS  # a rule on a file takes file rights only
            _kernel.allow_path(ruleset, fd, allowed)
        finally:
            os.close(fd)
    return ruleset


def _say(message: bytes, *, fd: int = 2) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, _PREFIX + message + b"\n")
