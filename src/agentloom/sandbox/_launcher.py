"""How the Landlock and ``none`` backends, and bubblewrap run by root, start a command:
through the zygote, a reaper per execution (``_zygote``, ``_reaper``).

::

    runtime ──request + fds──► zygote ──fork──► reaper ──fork──► command
       │ ◄──── pid + pidfd ─────┘                 ▲ │
       ├── control pipe (write end) ──────────────┘ │   a byte: kill; end of file: the
       └── status pipe (read end) ◄─────────────────┘   runtime is gone, kill as well

The runtime never forks itself: one zygote per runtime process, started on first use
(``python -S``: the standard library only), forks the reapers. A reaper's exit proves that
every process of its execution is gone; it writes its status first. A reaper that exited
without a status was killed: its execution is not confirmed gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentloom.sandbox._reaper import STATUS, receive, send

ZYGOTE = Path(__file__).with_name("_zygote.py")


@dataclass(frozen=True, slots=True, kw_only=True)
class LandlockRules:
    """Paths the command may use: ``(host path, rights)``; everything else is denied."""

    abi: int
    rules: tuple[tuple[str, int], ...]
    deny_tcp: bool


ViewEntry = dict[str, Any]
"""One entry of a mount view (``_view``): a bind, a symlink or a tmpfs, JSON-able."""


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """A root of its own for the command (``_view``): ``static`` the same for every command of
    a gateway (the zygote's spare builds it ahead), ``dynamic`` the command's own folders."""

    static: tuple[ViewEntry, ...]
    dynamic: tuple[ViewEntry, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StagedBwrap:
    """A bubblewrap launcher started as root: ``stage`` the binds the command process
    attaches where the sandbox uid reaches them (``_view.stage``; the argv names
    ``_view.staged_path(i)``), ``seccomp`` the program it puts at
    ``_reaper.BWRAP_SECCOMP_FD`` for ``--seccomp``."""

    stage: tuple[ViewEntry, ...]
    seccomp: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Confinement:
    """What the command's process applies to itself before ``exec``.

    ``identity`` is the ``(uid, gid)`` to switch to (the runtime is root), ``rlimits``
    ``(resource, limit)`` pairs, ``seccomp`` a packed filter, ``view`` the entries of a
    root of its own to enter first (``_view.enter_root``; root only).
    """

    identity: tuple[int, int] | None = None
    rlimits: tuple[tuple[int, int], ...] = ()
    landlock: LandlockRules | None = None
    seccomp: bytes | None = None
    bwrap: StagedBwrap | None = None
    view: View | None = None


class ReaperProcess:
    """The runtime's handle on one reaper: enough of ``Popen`` for the supervisor, plus a
    pidfd (the reaper is the zygote's child, not ours)."""

    def __init__(self, pid: int, pidfd: int, control_fd: int, status_fd: int) -> None:
        self.pid = pid
        self.pidfd = pidfd
        self.returncode: int | None = None
        self._control = control_fd
        self._status = status_fd

    def wait(self) -> int:
        """Block until the reaper has exited; its status, or ``-SIGKILL`` if it wrote none."""
        if self.returncode is None:
            poller = select.poll()
            poller.register(self.pidfd, select.POLLIN)
            while not poller.poll():
                pass
            data = b""
            with contextlib.suppress(BlockingIOError):
                data = os.read(self._status, STATUS.size)
            self.returncode = STATUS.unpack(data)[0] if len(data) == STATUS.size else -signal.SIGKILL
            for fd in (self._control, self._status, self.pidfd):
                with contextlib.suppress(OSError):
                    os.close(fd)
        return self.returncode

    def request_kill(self) -> None:
        """Ask the reaper to kill the whole execution; SIGKILL it if it cannot be asked."""
        try:
            os.write(self._control, b"k")
        except OSError:
            self.hard_kill()

    def hard_kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, OSError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    stdout_fd: int,
    stderr_fd: int,
    confinement: Confinement,
) -> ReaperProcess:
    """Have the zygote fork a reaper that runs ``argv`` under ``confinement``; return at once.

    A command that cannot be confined or started never runs: its reaper reports why on the
    command's stderr and exits 126 (confinement) or 127 (no such program).

    Raises:
        OSError: the zygote could not be started or refused the request.
    """
    request = {
        "argv": [os.fsencode(a).decode("latin-1") for a in argv],
        "env": {os.fsencode(k).decode("latin-1"): os.fsencode(v).decode("latin-1") for k, v in env.items()},
        "cwd": cwd,
        "identity": confinement.identity,
        "rlimits": confinement.rlimits,
        "landlock": None if confinement.landlock is None else {
            "abi": confinement.landlock.abi, "rules": confinement.landlock.rules,
            "deny_tcp": confinement.landlock.deny_tcp},
        "seccomp": None if confinement.seccomp is None else confinement.seccomp.hex(),
        "bwrap": None if confinement.bwrap is None else {
            "stage": list(confinement.bwrap.stage), "seccomp": confinement.bwrap.seccomp.hex()},
        "view": None if confinement.view is None else {
            "static": list(confinement.view.static), "dynamic": list(confinement.view.dynamic)},
    }
    control_r, control_w = os.pipe2(os.O_CLOEXEC)
    status_r, status_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        pid, pidfd = _zygote().fork(json.dumps(request).encode(), [stdout_fd, stderr_fd, control_r, status_w])
    except BaseException:
        for fd in (control_w, status_r):
            os.close(fd)
        raise
    finally:
        for fd in (control_r, status_w):
            os.close(fd)
    return ReaperProcess(pid, pidfd, control_w, status_r)


class _Zygote:
    """The connection to this process's zygote; requests are serialised by a lock."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-E", "-s", "-S", "-B", str(ZYGOTE), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                start_new_session=True, close_fds=True, env={},
            )
        finally:
            theirs.close()
        self.sock = ours
        self.owner_pid = os.getpid()
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.owner_pid == os.getpid() and self.process.poll() is None

    def fork(self, request: bytes, fds: list[int]) -> tuple[int, int]:
        with self.lock:
            send(self.sock, request, fds)
            answer, pidfds = receive(self.sock, 1)
        if not answer:
            raise OSError("the sandbox zygote exited")
        reply = json.loads(answer)
        if "error" in reply or len(pidfds) != 1:
            for fd in pidfds:
                os.close(fd)
            raise OSError(f"the sandbox zygote refused to start the command: {reply.get('error')}")
        return int(reply["pid"]), pidfds[0]


_current: _Zygote | None = None
_current_lock = threading.Lock()


def _zygote() -> _Zygote:
    global _current
    with _current_lock:
        if _current is None or not _current.alive():
            _current = _Zygote()
        return _current
