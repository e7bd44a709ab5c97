"""``agentloom worker``: drive the runs of a configuration — queued ones and those whose
process died — until stopped (``agent.worker.Worker`` does the work; docs/workers.md).

Ctrl-C / SIGTERM stops claiming and gives each run in flight back to the queue at its next
step boundary (its current step's calls commit first), then exits; a second signal quits at
once (its runs' leases expire and another worker resumes them). ``--once`` drains what it may
take now and exits when its runs have ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from dataclasses import replace

from agentloom.agent import RunResult, Runtime
from agentloom.agent.worker import Worker, WorkerReport
from agentloom.workspace.cleanup import CleanupResult

__all__ = ["WorkerReport", "work"]


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
        for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal quits at once
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, first_signal)
    try:
        return await worker.run(once=once)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
        await runtime.aclose()
