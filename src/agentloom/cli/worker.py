"""``agentloom worker``: drive the runs of a configuration — queued ones and those whose
process died — until stopped (``agent.worker.Worker`` does the work; docs/workers.md).

Ctrl-C / SIGTERM stops claiming and gives each run in flight back to the queue at its next
step boundary (its current step's calls commit first), then exits; a second signal quits at
once (its runs' leases expire and another worker resumes them). SIGUSR1 makes it look for work
now (``agentloom serve`` sends it when its API queues a run, so SQLite does not wait a poll).
Started by ``agentloom serve`` (``$AGENTLOOM_SERVE_PID`` set to the server's pid), it stops the
same graceful way once that server is gone. ``--once`` drains what it may take now and exits
when its runs have ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from dataclasses import replace

from agentloom.agent import RunResult, Runtime
from agentloom.agent.worker import Worker, WorkerReport
from agentloom.host.driver import PARENT_ENV
from agentloom.workspace.cleanup import CleanupResult

__all__ = ["WorkerReport", "work"]

PARENT_CHECK_S = 1.0
STOPS = (signal.SIGINT, signal.SIGTERM)


async def work(runtime: Runtime, *, once: bool, poll_s: float | None = None,
               concurrency: int = 1,
               on_finished: Callable[[RunResult], None],
               on_left: Callable[[str, str], None],
               on_cleanup: Callable[[CleanupResult], None] = lambda result: None) -> WorkerReport:
    """Work until a signal (``once``: until nothing is left to take), then close the runtime.
    ``poll_s`` overrides ``workers.poll_s``."""
    if poll_s is not None:
        runtime.workers = replace(runtime.workers, poll_s=poll_s)
    loop = asyncio.get_running_loop()
    worker = Worker(runtime, concurrency=concurrency, on_finished=on_finished, on_left=on_left,
                    on_cleanup=on_cleanup)

    def first_signal() -> None:
        worker.stop()
        for sig in STOPS:  # a second signal quits at once
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)

    for sig in STOPS:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, first_signal)
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGUSR1, worker.wake)
        # agentloom serve starts its child with SIGUSR1 blocked until this handler is in place
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
    watch = asyncio.ensure_future(_watch_parent(first_signal))
    try:
        return await worker.run(once=once)
    finally:
        watch.cancel()
        for sig in (*STOPS, signal.SIGUSR1):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
        if os.environ.get(PARENT_ENV):  # serve's late wake-up must not kill it while closing
            with contextlib.suppress(ValueError):
                signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        await runtime.aclose()


async def _watch_parent(stop: Callable[[], None]) -> None:
    """Stop (gracefully) once the ``agentloom serve`` that started this worker is gone."""
    parent = os.environ.get(PARENT_ENV, "")
    if not parent.isdigit():
        return  # not started by agentloom serve
    while True:  # polled: nothing tells a process that its parent is gone
        await asyncio.sleep(PARENT_CHECK_S)
        if os.getppid() != int(parent):
            stop()
            return
