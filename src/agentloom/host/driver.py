"""What drives the runs a host queues: a ``RunDriver`` the app's lifespan starts and stops, and
the routes wake when they queue a run (issue 18, acceptance 4).

::

                 create_app(runtime, driver=…)
                       │ start / wake / stop
            ┌──────────┴───────────┐
     InProcessDriver         WorkerProcess ──► python -m agentloom worker CONFIG
     (a Worker on the        (a child process,      --store URL --concurrency N
      app's event loop)       supervised)

``agentloom serve`` drives its runs in a **child worker process** (``WorkerProcess``): the
same code path as ``agentloom worker`` on the same config file and store, so a flood of
requests on the server's event loop never delays the runs' steps. The child is restarted
(with a growing back-off) when it dies unexpectedly, woken with SIGUSR1 when the API queues a
run (SQLite has no ``NOTIFY``), and stopped with SIGTERM on shutdown — its runs go back to the
queue at their next step — then SIGKILL after ``grace_s``. It runs in its own session, so a
terminal's Ctrl-C reaches only the server, which stops it once; and it stops by itself when
the server is gone (``AGENTLOOM_SERVE_PID``, watched by ``cli.worker``). A memory store cannot
be shared with another process: there, and for embedders, ``InProcessDriver`` runs a
``Worker`` in the app's own loop.

Owns: starting, waking, supervising and stopping whatever drives the runs. Does not own the
worker loop (``agent.worker``) nor the ``agentloom worker`` command (``cli``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Protocol

from agentloom.agent.runtime import Runtime
from agentloom.agent.worker import Worker
from agentloom.errors import redact_secrets

__all__ = ["PARENT_ENV", "InProcessDriver", "RunDriver", "WorkerProcess", "shareable"]

log = logging.getLogger(__name__)

PARENT_ENV = "AGENTLOOM_SERVE_PID"  # the child stops by itself once this process is gone
WAKE_EVERY_S = 0.05  # at most one SIGUSR1 per this long: a burst of creates is one wake-up
BACKOFF_S = (0.5, 30.0)  # the first and the longest wait before starting a dead child again
STEADY_S = 60.0  # a child that lived this long starts the back-off afresh when it dies


class RunDriver(Protocol):
    """Drives the queued runs while the host is up."""

    async def start(self) -> None:
        """Begin driving runs (returns once started)."""
        ...

    def state(self) -> dict[str, Any]:
        """What ``/ready`` says of it: ``driver`` (``process`` | ``in_process``), ``running``
        (it can drive runs now), and for a process its ``pid``, how many were ``started`` and
        the ``last_exit`` of one that died."""
        ...

    def wake(self) -> None:
        """A run was just queued: look for work now, not at the next poll."""
        ...

    async def stop(self) -> None:
        """Stop claiming; runs in flight go back to the queue at their next step."""
        ...


def shareable(runtime: Runtime) -> bool:
    """True when another process can open ``runtime``'s store (it has a URL, not memory)."""
    url = runtime.store_url
    return bool(url) and not str(url).startswith("memory:")


class InProcessDriver:
    """A ``Worker`` of ``concurrency`` runs on the app's own event loop (memory stores,
    embedders, tests)."""

    def __init__(self, runtime: Runtime, *, concurrency: int = 1) -> None:
        self.worker = Worker(runtime, concurrency=concurrency)
        self._task: asyncio.Task[object] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self.worker.run())

    def state(self) -> dict[str, Any]:
        return {"driver": "in_process",
                "running": self._task is not None and not self._task.done()}

    def wake(self) -> None:
        self.worker.wake()

    async def stop(self) -> None:
        self.worker.stop()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task


class WorkerProcess:
    """``python -m agentloom worker CONFIG --store URL --concurrency N`` as a supervised child:
    started with ``start()``, restarted after an unexpected exit (``BACKOFF_S``), woken with
    SIGUSR1, stopped with SIGTERM and, after ``grace_s``, SIGKILL. ``pid`` is the live
    child's process id (None between children)."""

    def __init__(self, config: Path, store_url: str, *, concurrency: int = 1,
                 grace_s: float = 10.0) -> None:
        self.argv = [sys.executable, "-m", "agentloom", "worker", str(config.resolve()),
                     "--store", store_url, "--concurrency", str(concurrency)]
        self.grace_s = grace_s
        self.started = 0  # children started so far (1 + restarts)
        self.last_exit: str | None = None  # how the last child that died unexpectedly ended
        self.next_start_at: float | None = None  # when a dead child's successor starts
        self._proc: asyncio.subprocess.Process | None = None
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._woken_at = 0.0
        self._wake_due: asyncio.TimerHandle | None = None

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.returncode is None else None

    async def start(self) -> None:
        await self._spawn()
        self._task = asyncio.create_task(self._supervise())

    def state(self) -> dict[str, Any]:
        pid = self.pid
        return {"driver": "process", "running": pid is not None, "pid": pid,
                "started": self.started, "last_exit": self.last_exit,
                "next_start_in_s": None if pid is not None or self.next_start_at is None
                else round(max(0.0, self.next_start_at - time.monotonic()), 1)}

    def wake(self) -> None:
        """SIGUSR1 to the child (at most one per ``WAKE_EVERY_S``; a later one is sent at the
        end of that window, so no wake-up is lost)."""
        if self._wake_due is not None or self._stopping.is_set():
            return
        wait = self._woken_at + WAKE_EVERY_S - time.monotonic()
        if wait <= 0:
            self._signal_wake()
        else:
            self._wake_due = asyncio.get_running_loop().call_later(wait, self._signal_wake)

    def _signal_wake(self) -> None:
        self._wake_due = None
        self._woken_at = time.monotonic()
        proc = self._proc
        if proc is not None and proc.returncode is None and not self._stopping.is_set():
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGUSR1)  # not reaped yet: the pid is still the child's

    async def stop(self) -> None:
        self._stopping.set()
        if self._wake_due is not None:
            self._wake_due.cancel()
        try:
            if self._task is not None:
                await self._task
        except Exception:  # a bug here must not keep the server from shutting down
            log.exception("the worker process supervisor failed")
        await self._terminate()

    # -- the child -------------------------------------------------------------------------
    async def _spawn(self) -> None:
        # SIGUSR1 is blocked in the child until its handler is in place (``cli.worker``
        # unblocks it): a wake-up that comes sooner waits instead of killing it.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
                env={**os.environ, PARENT_ENV: str(os.getpid())})
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        self.started += 1
        log.info("worker process %d started: %s", self._proc.pid,
                 redact_secrets(" ".join(self.argv[1:])))

    async def _supervise(self) -> None:
        """Wait for the child; start another after an unexpected exit; stop it on ``stop()``."""
        backoff = BACKOFF_S[0]
        while True:
            proc = self._proc
            began = time.monotonic()
            if proc is not None:
                exited = asyncio.ensure_future(proc.wait())
                stopping = asyncio.ensure_future(self._stopping.wait())
                await asyncio.wait({exited, stopping}, return_when=asyncio.FIRST_COMPLETED)
                stopping.cancel()
                if not exited.done():
                    exited.cancel()
            if self._stopping.is_set():
                await self._terminate()
                return
            if time.monotonic() - began >= STEADY_S:
                backoff = BACKOFF_S[0]
            self.last_exit = _exit_text(proc.returncode if proc else None)
            self.next_start_at = time.monotonic() + backoff
            log.warning("worker process %s exited unexpectedly (%s); starting another in "
                        "%.1f s", proc.pid if proc else "?", self.last_exit, backoff)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), backoff)
            if self._stopping.is_set():
                return
            backoff = min(backoff * 2, BACKOFF_S[1])
            try:
                await self._spawn()
            except OSError as exc:  # e.g. out of processes: try again after the back-off
                log.warning("could not start a worker process: %s", exc)
                self._proc = None

    async def _terminate(self) -> None:
        """SIGTERM (runs go back to the queue at their next step); SIGKILL after the grace."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), self.grace_s)
        except TimeoutError:
            log.warning("worker process %d did not stop within %g s: killed (its runs' "
                        "leases expire and another worker resumes them)", proc.pid, self.grace_s)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        log.info("worker process %d stopped (%s)", proc.pid, _exit_text(proc.returncode))


def _exit_text(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit status {code}"
