"""One execution's life: spawn, drain, deadline, kill, reap, confirm, report.

Each execution gets a supervisor thread (a reused one, ``_threads``) that *spawns* the
launcher itself and lives until the launcher is reaped: bubblewrap's ``--die-with-parent``
is tied to the thread that forked it, so that thread must outlive the sandbox. Two more
(reused) threads drain
stdout and stderr (``StreamCapture``).

How an execution is killed is in ``_execution``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from agentloom.sandbox._disk import TICK_S, Capped, DiskWatch
from agentloom.sandbox._execution import Execution, Launched, close_fd, readable
from agentloom.sandbox._launcher import Confinement, ReaperProcess, spawn
from agentloom.sandbox._limits import apply_rlimits
from agentloom.sandbox._threads import THREADS
from agentloom.sandbox.output import StreamCapture, enlarge_pipe
from agentloom.sandbox.ports import (
    ExecutionResult,
)

log = logging.getLogger("agentloom.sandbox")

#: How long to wait for the sandbox's PID namespace to empty after its launcher died.
CONFIRM_TIMEOUT_S = 5.0
#: How long to wait for a stream's end of file once every known writer is gone.
DRAIN_GRACE_S = 5.0
#: Unsandboxed: processes that left the group can hold the pipes open forever.
UNSANDBOXED_DRAIN_GRACE_S = 0.5
#: A kill asked for before bubblewrap reported its sandbox init waits this long for the
#: report, so the init can be watched until the namespace is empty (it comes in ms).
READY_GRACE_S = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """What to start: the launcher's argv, environment and working directory.

    ``info_fd`` asks for a pipe whose write end is passed to the launcher and whose
    number ``argv_for`` writes into the argv (bubblewrap's ``--info-fd``, which
    reports the PID of the sandbox's init).
    """

    argv_for: Callable[[int | None], list[str]]
    env: dict[str, str]
    cwd: str | None
    info_fd: bool
    preview_bytes: int
    spool_bytes: int
    spool_dir: Path
    #: Set: start through a reaper (``_launcher``) that applies it; else ``Popen``.
    confinement: Confinement | None = None
    #: ``Popen`` only: fds passed to the launcher (their numbers are in the argv); closed
    #: here once it is spawned. ``identity`` the (uid, gid) it starts as, ``rlimits`` set
    #: in the child before exec.
    pass_fds: tuple[int, ...] = ()
    identity: tuple[int, int] | None = None
    rlimits: tuple[tuple[int, int], ...] = ()
    #: Run once the execution has ended (e.g. remove its private temporary folder).
    cleanup: Callable[[], object] | None = None
    #: Folders with a size cap, watched while the command runs (``_disk``).
    capped: tuple[Capped, ...] = ()


def start(execution: Execution, launch: Launch) -> Future[None]:
    """Start the supervisor thread; the future resolves once the launcher is spawned
    (or carries the ``OSError`` that prevented it)."""
    spawned: Future[None] = Future()
    THREADS.run(lambda: _supervise(execution, launch, spawned))
    return spawned


def _supervise(ex: Execution, launch: Launch, spawned: Future[None]) -> None:
    if not spawned.set_running_or_notify_cancel():  # the caller left before anything started
        ex.finish(None)
        return
    try:
        proc, captures, info_r = _spawn(ex, launch)
    except BaseException as exc:
        if launch.cleanup is not None:
            with contextlib.suppress(OSError):
                launch.cleanup()
        ex.finish(None)
        spawned.set_exception(exc)
        return
    spawned.set_result(None)
    started = time.monotonic()
    try:
        _wait_for_leader(ex, proc, info_r, started + ex.timeout_s,
                         DiskWatch(launch.capped) if launch.capped else None)
    except Exception:  # never leave a command running unsupervised
        log.exception("sandbox %s: supervisor failed; killing the command", ex.execution_id)
        ex.kill("terminated")
        with ex.lock:
            ex.send_kill_locked()
    finally:
        with ex.lock:
            if not isinstance(proc, ReaperProcess):
                # The leader is dead (a zombie) but not reaped: its group id cannot be
                # reused yet, so this only reaches what is left of *our* group.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            ex.reaped = True
        duration = time.monotonic() - started
    if info_r is not None:
        _read_info(ex, info_r, block=False)
        close_fd(info_r)
    _confirm(ex, proc)
    grace = DRAIN_GRACE_S if ex.confirmed or ex.mode == "bubblewrap" else UNSANDBOXED_DRAIN_GRACE_S
    for capture in captures:
        if not capture.wait(grace):
            log.warning("sandbox %s: a stream stayed open after its processes ended", ex.execution_id)
            capture.stop()
    for capture in captures:
        capture.wait(None)  # its drain has returned
    if launch.cleanup is not None:
        try:
            launch.cleanup()
        except OSError as exc:
            log.warning("sandbox %s: cleanup failed: %s", ex.execution_id, exc)
    ex.finish(_result(ex, proc, captures, duration))


def _start(launch: Launch, out_w: int, err_w: int, info_w: int | None) -> Launched:
    if launch.confinement is not None:
        assert launch.cwd is not None
        return spawn(launch.argv_for(None), env=launch.env, cwd=launch.cwd, stdout_fd=out_w,
                     stderr_fd=err_w, confinement=launch.confinement)
    rlimits = launch.rlimits
    uid, gid = launch.identity if launch.identity is not None else (None, None)
    return subprocess.Popen(
        launch.argv_for(info_w),
        stdin=subprocess.DEVNULL,
        stdout=out_w,
        stderr=err_w,
        env=launch.env,
        cwd=launch.cwd,
        close_fds=True,
        pass_fds=(() if info_w is None else (info_w,)) + launch.pass_fds,
        start_new_session=True,
        user=uid,
        group=gid,
        extra_groups=None if uid is None else [],
        # Only setrlimit between fork and exec: no lock, no import, no allocation of note.
        preexec_fn=(lambda: apply_rlimits(rlimits)) if rlimits else None,
    )


def _spawn(
    ex: Execution, launch: Launch
) -> tuple[Launched, list[StreamCapture], int | None]:
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    info_r, info_w = os.pipe2(os.O_CLOEXEC) if launch.info_fd else (None, None)
    for fd in (out_r, err_r):
        enlarge_pipe(fd)
    try:
        proc = _start(launch, out_w, err_w, info_w)
    except BaseException:
        for unused in (out_r, err_r, info_r):
            close_fd(unused)
        raise
    finally:
        for write_end in (out_w, err_w, info_w, *launch.pass_fds):
            close_fd(write_end)
    with ex.lock:
        ex.proc = proc
        ex.ready = info_r is None
        if ex.kill_reason is not None and ex.ready:  # revoked or terminated while spawning
            ex.send_kill_locked()
    captures = [
        StreamCapture(
            fd,
            spool_path=launch.spool_dir / f"{ex.execution_id}.{name}",
            max_preview_bytes=launch.preview_bytes,
            max_spool_bytes=launch.spool_bytes,
        )
        for fd, name in ((out_r, "stdout"), (err_r, "stderr"))
    ]
    for capture in captures:
        THREADS.run(capture.run)
    return proc, captures, info_r


def _wait_for_leader(ex: Execution, proc: Launched, info_r: int | None, deadline: float,
                     watch: DiskWatch | None = None) -> None:
    # A reaper is the zygote's child, not ours: its pidfd came from the zygote.
    pidfd = os.dup(proc.pidfd) if isinstance(proc, ReaperProcess) else os.pidfd_open(proc.pid)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(ex.wake_r, select.POLLIN)
        if info_r is not None:
            poller.register(info_r, select.POLLIN)
        while True:
            now = time.monotonic()
            if now >= deadline and ex.kill_reason is None:
                ex.kill("timeout")
            if watch is not None and ex.kill_reason is None and (full := watch.over()) is not None:
                ex.disk_limit = f"{full.label} grew past its cap of {full.limit} bytes"
                ex.kill("disk_limit")
            with ex.lock:
                overdue = ex.ready or now >= ex.kill_requested + READY_GRACE_S
                if ex.kill_reason is not None and not ex.kill_sent and overdue:
                    ex.send_kill_locked()
                if ex.kill_sent and isinstance(proc, ReaperProcess):
                    # The reaper kills the tree itself; SIGKILL it if it does not end.
                    hard_kill_at = ex.kill_sent_at + CONFIRM_TIMEOUT_S
                    if now >= hard_kill_at:
                        proc.hard_kill()
                    wait_until = max(hard_kill_at, now + 0.05)
                elif ex.kill_sent:
                    wait_until = None
                elif ex.kill_reason is not None:
                    wait_until = ex.kill_requested + READY_GRACE_S
                else:
                    wait_until = deadline if watch is None else min(deadline, now + TICK_S)
            timeout_ms = None if wait_until is None else max(1, int((wait_until - now) * 1000) + 1)
            for fd, _ in poller.poll(timeout_ms):
                if fd == ex.wake_r:
                    with contextlib.suppress(OSError):
                        os.read(ex.wake_r, 64)
                elif fd == info_r and _read_info(ex, info_r, block=False):
                    poller.unregister(info_r)
                    with ex.lock:
                        ex.ready = True
            if readable(pidfd, 0):
                return
    finally:
        close_fd(pidfd)


def _read_info(ex: Execution, fd: int, *, block: bool) -> bool:
    """Read bubblewrap's info JSON; true once it is complete (or the pipe closed)."""
    buf = ex.info
    done = False
    try:
        os.set_blocking(fd, block)
        while True:
            try:
                data = os.read(fd, 4096)
            except BlockingIOError:
                break
            if not data:
                done = True
                break
            buf += data
        text = bytes(buf)
        if b"}" in text:
            done = True
            child = json.loads(text[: text.index(b"}") + 1]).get("child-pid")
            if isinstance(child, int) and ex.inner_pidfd is None:
                try:
                    inner = os.pidfd_open(child)
                except ProcessLookupError:
                    ex.inner_gone = True  # already exited and reaped
                else:
                    with ex.lock:
                        ex.inner_pidfd = inner
                        if ex.kill_sent:  # the launcher was killed before we knew the init
                            ex.kill_inner_locked()
    except (OSError, ValueError) as exc:
        log.warning("sandbox %s: unreadable bubblewrap info: %s", ex.execution_id, exc)
        done = True
    return done


def _confirm(ex: Execution, proc: Launched) -> None:
    """Decide whether every process of the execution is provably gone."""
    if isinstance(proc, ReaperProcess):
        # A reaper exits by itself only once its subtree is empty; killed, it proves nothing.
        ex.confirmed = proc.returncode is not None and proc.returncode >= 0
        return
    if ex.mode != "bubblewrap":
        ex.confirmed = False  # setsid / double-fork escapes are invisible without a PID namespace
        return
    if ex.inner_pidfd is None:
        # Either the init is already reaped, or none was ever reported: then bubblewrap
        # failed before cloning it (it exits by itself) or was killed first (unknown).
        ex.confirmed = ex.inner_gone or (proc.returncode is not None and proc.returncode >= 0)
        return
    if proc.returncode is None or proc.returncode < 0:  # the launcher was killed
        with ex.lock:
            ex.kill_inner_locked()
    # The init of a PID namespace exits only after every other process in it has been
    # reaped (zap_pid_ns_processes), so its exit proves the namespace is empty.
    if readable(ex.inner_pidfd, CONFIRM_TIMEOUT_S):
        ex.recheck_confirmed()
    else:
        log.error(
            "sandbox %s: the sandbox init is still alive %.0fs after its launcher",
            ex.execution_id,
            CONFIRM_TIMEOUT_S,
        )


def _result(ex: Execution, proc: Launched, captures: list[StreamCapture], duration: float) -> ExecutionResult:
    rc = proc.returncode
    # bubblewrap and a reaper report a command killed by SIGKILL as 137; once we sent one,
    # that was us.
    shell_status = ex.mode == "bubblewrap" or isinstance(proc, ReaperProcess)
    killed = rc is not None and (rc < 0 or (ex.kill_sent and shell_status and rc == 128 + 9))
    reason = ex.kill_reason if killed else None
    return ExecutionResult(
        execution_id=ex.execution_id,
        exit_code=None if killed else rc,
        signal=(-rc if rc < 0 else rc - 128) if killed and rc is not None else None,
        timed_out=reason == "timeout",
        killed_by_revoke=reason == "revoked",
        terminated=reason == "terminated",
        disk_limit=ex.disk_limit if reason == "disk_limit" else None,
        stdout=captures[0].result(),
        stderr=captures[1].result(),
        duration_s=duration,
        sandboxed=ex.mode != "unsandboxed",
        sandbox_mode=ex.mode,
        env_stripped=ex.env_stripped,
    )
