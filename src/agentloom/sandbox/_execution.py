"""The gateway's record of one execution: its lock, kill, status and waiters.

Killing a bubblewrap execution is ``killpg(SIGKILL)`` on the launcher's process group
(it is started with ``start_new_session``) plus ``SIGKILL`` to the sandbox's init through
a pidfd; killing a reaper-run execution (Landlock, ``none``) is a request on its control
pipe, after which the reaper kills its whole subtree. Both happen under the execution's
lock and only while the launcher is not reaped, so a recycled id is never signalled.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from typing import Literal

from agentloom.sandbox._launcher import ReaperProcess
from agentloom.sandbox.ports import (
    ExecutionOwnerRef,
    ExecutionResult,
    ExecutionState,
    ExecutionStatus,
    SandboxMode,
)

KillReason = Literal["timeout", "terminated", "revoked", "disk_limit"]
#: What runs an execution: bubblewrap or a command under ``Popen``, or a reaper.
Launched = subprocess.Popen[bytes] | ReaperProcess


class Execution:
    """The gateway's record of one execution; thread-safe."""

    def __init__(
        self,
        *,
        execution_id: str,
        run_id: str,
        lease_epoch: int,
        owner: ExecutionOwnerRef,
        mode: SandboxMode,
        timeout_s: float,
        env_stripped: tuple[str, ...],
    ) -> None:
        self.execution_id = execution_id
        self.run_id = run_id
        self.lease_epoch = lease_epoch
        self.owner = owner
        self.mode: SandboxMode = mode
        self.timeout_s = timeout_s
        self.env_stripped = env_stripped
        self.started_at = time.time()
        self.lock = threading.Lock()
        self.proc: Launched | None = None
        self.reaped = False
        self.ready = False  # the launcher reported what must die for the execution to be gone
        self.kill_reason: KillReason | None = None
        self.kill_requested = 0.0
        self.kill_sent = False
        self.kill_sent_at = 0.0
        self.wake_r, self.wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self.confirmed = False
        self.inner_pidfd: int | None = None
        self.inner_gone = False
        self.info = bytearray()
        self.disk_limit: str | None = None  # why a size cap killed it (``_disk``)
        self.result: ExecutionResult | None = None
        self.done = threading.Event()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[ExecutionResult]]] = []

    # -- control ---------------------------------------------------------------------

    def kill(self, reason: KillReason) -> bool:
        """SIGKILL the launcher's process group; false if it had already been reaped.

        Before the launcher is ``ready`` (spawning, or bubblewrap has not reported its
        sandbox init yet) the kill is left to the supervisor, which sends it as soon as
        it can watch everything die, and after ``READY_GRACE_S`` at the latest.
        """
        with self.lock:
            if self.reaped or self.done.is_set():
                return False
            if self.kill_reason is None:
                self.kill_reason = reason
                self.kill_requested = time.monotonic()
            if self.ready:
                self.send_kill_locked()
            else:
                with contextlib.suppress(OSError):
                    os.write(self.wake_w, b"k")
            return True

    def send_kill_locked(self) -> None:
        if self.proc is not None and not self.reaped:
            if isinstance(self.proc, ReaperProcess):
                self.proc.request_kill()  # the reaper kills its whole subtree
            else:
                # The launcher first, so its status is "killed" rather than its child's 137.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.kill_inner_locked()
            self.kill_sent = True
            self.kill_sent_at = time.monotonic()

    def kill_inner_locked(self) -> None:
        """SIGKILL the sandbox's init directly: that empties its PID namespace. The
        launcher's death alone is not enough, because bubblewrap's child can be killed
        before it armed ``--die-with-parent`` (it then waits forever for its parent)."""
        if self.inner_pidfd is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                signal.pidfd_send_signal(self.inner_pidfd, signal.SIGKILL)

    def status(self) -> ExecutionStatus:
        state: ExecutionState = "running"
        if self.result is not None:
            if self.result.killed_by_revoke:
                state = "revoked"
            elif self.result.timed_out:
                state = "timed_out"
            elif self.result.terminated or self.result.disk_limit:
                state = "terminated"
            else:
                state = "exited"
        return ExecutionStatus(
            execution_id=self.execution_id,
            run_id=self.run_id,
            lease_epoch=self.lease_epoch,
            owner=self.owner,
            state=state,
            started_at=self.started_at,
            result=self.result,
        )

    def recheck_confirmed(self) -> bool:
        """Re-poll an unconfirmed sandbox init (it may have gone since)."""
        with self.lock:
            if not self.confirmed and self.inner_pidfd is not None and readable(self.inner_pidfd, 0):
                self.confirmed = True
                close_fd(self.inner_pidfd)
                self.inner_pidfd = None
            return self.confirmed

    # -- waiting ---------------------------------------------------------------------

    async def wait(self) -> ExecutionResult:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[ExecutionResult] = loop.create_future()
        with self.lock:
            if self.result is None:
                self._waiters.append((loop, fut))
        if self.result is not None:
            return self.result
        return await fut

    def finish(self, result: ExecutionResult | None) -> None:
        with self.lock:
            self.result = result
            waiters, self._waiters = self._waiters, []
            self.done.set()
            close_fd(self.wake_r)
            close_fd(self.wake_w)
        for loop, fut in waiters:
            with contextlib.suppress(RuntimeError):  # the loop was closed meanwhile
                loop.call_soon_threadsafe(_resolve, fut, result)


def _resolve(fut: asyncio.Future[ExecutionResult], result: ExecutionResult | None) -> None:
    if fut.done():
        return
    if result is None:
        fut.set_exception(RuntimeError("the execution did not start"))
    else:
        fut.set_result(result)


class ExecutionHandleImpl:
    """``ExecutionHandle`` over an ``Execution``."""

    __slots__ = ("_execution",)

    def __init__(self, execution: Execution) -> None:
        self._execution = execution

    @property
    def execution_id(self) -> str:
        return self._execution.execution_id

    async def wait(self) -> ExecutionResult:
        return await self._execution.wait()


def readable(fd: int, timeout_s: float) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(int(timeout_s * 1000)))


def close_fd(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
