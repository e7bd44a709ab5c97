"""The reaper and the command's last steps before ``exec``: what runs inside the zygote's
children (``_zygote``). Standard library and ``_kernel`` only, so the zygote can load it
without the package (``python -S``).

::

    zygote ──fork──► spare reaper (subreaper, own session) ──fork──► spare command
       │ request + 4 fds ──► │ ── request + stdout, stderr ──────────►  ([bwrap: staged binds,
                             │ control pipe (runtime's end)            seccomp memfd] [view:
                             │ status pipe  (to the runtime)           a root of its own]
                                                                       rlimits, chdir, uid,
                                                                       pdeathsig, no_new_privs,
                                                                       Landlock, seccomp, exec)

Both processes are forked before the request comes (the zygote keeps one spare pair ready),
so starting a command costs two messages, not two forks.

The reaper kills its whole subtree when the command exits, when the runtime asks (a byte
on the control pipe) or dies (the pipe's end of file), reaps it, writes its status to the
status pipe and exits. Its status is the command's (``128 + N`` for a command killed by
signal N) or 137 after a kill request. If its subtree will not empty it kills itself
without writing a status: not confirmed.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import resource
import select
import signal
import socket
import stat
import struct
import time
from typing import Any, NoReturn

try:
    from agentloom.sandbox import _kernel, _view
except ImportError:  # inside the zygote, which runs without the package on its path
    import _kernel  # type: ignore[no-redef,import-not-found]
    import _view  # type: ignore[no-redef,import-not-found]

#: The reaper's status when the runtime asked it to kill (SIGKILL's shell status).
KILLED_STATUS = 128 + signal.SIGKILL
#: How long the reaper keeps killing a subtree that will not empty before giving up.
KILL_TREE_TIMEOUT_S = 10.0
SETUP_FAILED = 126
NOT_FOUND = 127
STATUS = struct.Struct("=i")
#: The fd a staged bubblewrap launcher reads its seccomp program from (``--seccomp``).
BWRAP_SECCOMP_FD = 3
_PREFIX = b"agentloom-sandbox: "


def run_spare(channel: int, static: list[dict[str, Any]] | None = None) -> NoReturn:
    """Be a spare reaper (in a freshly forked process); never returns.

    A spare prepares everything that does not depend on the request — its session, its
    signals, the subreaper flag, and a pre-forked command process waiting for its own part
    of the request (given ``static``, the root of a namespace view built ahead: the zygote
    passes the last request's) — then waits on ``channel`` for one request: a JSON message
    (see ``_command``) with four fds, the command's stdout and stderr, the read end of its
    control pipe and the write end of its status pipe, then the user namespaces of its
    idmapped binds (``_view.idmap_owners``). At ``channel``'s end of file (the zygote is gone)
    it kills its command and exits.
    """
    status = SETUP_FAILED
    err = -1
    try:
        os.setsid()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        _close_fds_except((channel,))
        _kernel.prctl(_kernel.PR_SET_CHILD_SUBREAPER, 1)
        reaper = os.getpid()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = os.fork()
        if command == 0:
            os.close(channel)
            ours.close()
            _spare_command(reaper, theirs, static)
        theirs.close()
        message, fds = receive(socket.socket(fileno=channel), 4 + _view.MAX_IDMAPS)
        if not message or len(fds) < 4:
            os.kill(command, signal.SIGKILL)
            _kill_tree()
            os._exit(0)
        out, err, control, status_w = fds[:4]
        send(ours, message, [out, err, *fds[4:]])
        ours.close()
        for fd in {out, *fds[4:]}:
            if fd != err:
                os.close(fd)
        status = _wait_command(command, control)
    except BaseException as exc:
        if err >= 0:
            _say(b"the reaper failed: " + repr(exc).encode(errors="replace"), fd=err)
        status = SETUP_FAILED
    finally:
        if _kill_tree():
            with contextlib.suppress(OSError, NameError):
                os.write(status_w, STATUS.pack(status))
        else:
            os.kill(os.getpid(), signal.SIGKILL)  # unconfirmed: the runtime sees no status
        os._exit(status)


def send(sock: socket.socket, message: bytes, fds: list[int]) -> None:
    """One message with ``fds`` (``SCM_RIGHTS``); ``receive`` reads it."""
    sock.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def receive(sock: socket.socket, max_fds: int) -> tuple[bytes, list[int]]:
    """One message and the fds that came with it."""
    fds = array.array("i")
    # The message's own length first (MSG_TRUNC on a peek says it), so no large buffer is made.
    size = sock.recv_into(bytearray(1), 1, socket.MSG_PEEK | socket.MSG_TRUNC)
    message, ancillary, _, _ = sock.recvmsg(max(size, 1), socket.CMSG_SPACE(max_fds * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return message, list(fds)


def _spare_command(reaper: int, channel: socket.socket,
                   static: list[dict[str, Any]] | None) -> NoReturn:
    """The pre-forked command: build ``static`` ahead (a namespace view's root, as root; a
    failure here only means it is built again once the request comes), wait for the request,
    its stdout / stderr and user namespaces, then run it."""
    prebuilt = None
    if static is not None and os.geteuid() == 0:
        with contextlib.suppress(OSError):
            prebuilt = _view.Prebuilt(static)
    try:
        message, fds = receive(channel, 2 + _view.MAX_IDMAPS)
        channel.close()
    except BaseException:
        os._exit(SETUP_FAILED)
    if not message or len(fds) < 2:
        os._exit(SETUP_FAILED)
    _command(reaper, fds[0], fds[1], json.loads(message), prebuilt, fds[2:])


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
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True  # no child at all, so no descendant (the usual end of a command)
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


def _command(reaper: int, out: int, err: int, request: dict[str, Any],
             prebuilt: _view.Prebuilt | None = None, userns_fds: list[int] | None = None
             ) -> NoReturn:
    userns_fds = userns_fds or []
    try:
        os.setsid()
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        _close_fds_except((*userns_fds, *(prebuilt.fds() if prebuilt is not None else ())))
    except BaseException:
        os._exit(SETUP_FAILED)
    try:
        argv = [a.encode("latin-1") for a in request["argv"]]
        env = {k.encode("latin-1"): v.encode("latin-1") for k, v in request["env"].items()}
        view, bwrap = request.get("view"), request.get("bwrap")
        owners = _view.idmap_owners([*(view["dynamic"] if view else ()),
                                     *(bwrap["stage"] if bwrap else ())])
        userns = dict(zip(owners, userns_fds, strict=False))
        if view is not None:  # Landlock in a mount namespace of its own
            if prebuilt is not None and prebuilt.static == view["static"]:
                prebuilt.enter(view["dynamic"], request["identity"], userns)
            else:
                if prebuilt is not None:
                    prebuilt.abandon()
                _view.enter_root(view["static"], view["dynamic"], request["identity"], userns)
        else:
            if prebuilt is not None:  # the host's mount namespace, as if nothing was built
                prebuilt.abandon()
            _prepare_bwrap(request, userns)
        for fd in userns_fds:
            os.close(fd)
        _confine(reaper, request)
    except BaseException as exc:
        _say(b"could not confine the command: " + str(exc).encode(errors="replace"))
        os._exit(SETUP_FAILED)
    try:
        os.execvpe(argv[0], argv, env)
    except BaseException as exc:
        _say(b"cannot run " + argv[0] + b": " + str(exc).encode(errors="replace"))
    os._exit(NOT_FOUND)


def _prepare_bwrap(request: dict[str, Any], userns: dict[tuple[int, int], int]) -> None:
    """For a bubblewrap launcher started as root (``request["bwrap"]``): its binds staged
    where the sandbox uid reaches them (``_view.stage``: the argv names the staged paths),
    and its seccomp program in a memfd at ``BWRAP_SECCOMP_FD`` (the argv's ``--seccomp``),
    which ``exec`` keeps open."""
    plan = request.get("bwrap")
    if plan is None:
        return
    _view.stage(plan["stage"], request["identity"], userns)
    program = os.memfd_create("agentloom-seccomp", 0)
    if program != BWRAP_SECCOMP_FD:
        os.dup2(program, BWRAP_SECCOMP_FD)
        os.close(program)
    os.write(BWRAP_SECCOMP_FD, bytes.fromhex(plan["seccomp"]))
    os.lseek(BWRAP_SECCOMP_FD, 0, os.SEEK_SET)


def _confine(reaper: int, request: dict[str, Any]) -> None:
    plan = request["landlock"]
    ruleset = _ruleset(plan) if plan is not None else None
    for limit, value in request["rlimits"]:
        resource.setrlimit(limit, (value, value))
    os.chdir(request["cwd"])  # before dropping root: the folders above the workspace are root's
    if request["identity"] is not None:
        uid, gid = request["identity"]
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
    if request["seccomp"] is not None:
        _kernel.install_seccomp(bytes.fromhex(request["seccomp"]))


def _ruleset(plan: dict[str, Any]) -> int:
    abi = plan["abi"]
    ruleset = _kernel.create_ruleset(abi, deny_tcp=plan["deny_tcp"], scope=True)
    for path, rights in plan["rules"]:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            allowed = rights & _kernel.handled_fs(abi)
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                allowed &= _kernel.FILE_RIGHTS  # a rule on a file takes file rights only
            _kernel.allow_path(ruleset, fd, allowed)
        finally:
            os.close(fd)
    return ruleset


def _say(message: bytes, *, fd: int = 2) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, _PREFIX + message + b"\n")
