"""``agentloom worker``: pick up the runs whose process died and drive them to the end.

A run is *interrupted* when its status is still ``running`` but no live lease holds it (the
process that drove it was killed, or its machine went away). Every ``poll`` seconds the worker
resumes those of its configuration (``Runtime.resume_interrupted``: a conditional claim, so a
run some live process drives is never taken, and two workers never take the same run) and
reports each as it finishes. Each sweep first tries again the cleanup jobs whose back-off is
over (a run-end deletion that failed, 000 §7.4; ``workspace.cleanup``), and reports each.
Ctrl-C / SIGTERM stops the sweeping; the runs in flight are
finished first (a second signal quits at once: they stay interrupted, for the next worker).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from agentloom.agent import RunResult, Runtime
from agentloom.workspace.cleanup import CleanupResult

__all__ = ["WorkerReport", "work"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class WorkerReport:
    """What ``agentloom worker`` did: the runs it finished, per run id why a run was left
    for another worker (lease held elsewhere, back-off not over, …), and the cleanup jobs it
    tried again."""

    finished: list[RunResult] = field(default_factory=list)
    left: dict[str, str] = field(default_factory=dict)  # run id -> why it was not taken
    cleanups: list[CleanupResult] = field(default_factory=list)


async def work(runtime: Runtime, *, once: bool, poll_s: float,
               on_finished: Callable[[RunResult], None],
               on_left: Callable[[str, str], None],
               on_cleanup: Callable[[CleanupResult], None] = lambda result: None) -> WorkerReport:
    """Sweep for interrupted runs until stopped (``once``: one sweep, then its runs' ends).

    Each sweep first retries the pending cleanup jobs that are due (their back-off, recorded
    on the job, is over) and passes each result to ``on_cleanup``."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    report = WorkerReport()
    in_flight: set[asyncio.Future[RunResult]] = set()

    def settle(run_id: str, done: asyncio.Future[RunResult]) -> None:
        in_flight.discard(done)
        if done.cancelled():
            return
        error = done.exception()
        if error is None:
            report.finished.append(done.result())
            on_finished(done.result())
        else:  # e.g. LEASE_LOST: another worker took it over; it is theirs now
            why = getattr(error, "code", type(error).__name__)
            report.left[run_id] = why
            on_left(run_id, why)

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stopping.set)
    cleanup = runtime.kernel.environment.cleanup
    cleanup.backoff = True  # the runtime's own sweep waits out each job's back-off too
    try:
        while True:
            for retried in await cleanup.retry_pending():
                report.cleanups.append(retried)
                if retried.state == "pending":  # stderr: the job waits for its next try
                    logger.warning("the cleanup of run %s failed again (attempt %d): %s",
                                   retried.run_id, retried.attempts, "; ".join(retried.errors))
                on_cleanup(retried)
            taken, left = await runtime.resume_interrupted()
            for handle in taken:
                result = asyncio.ensure_future(handle.result())
                in_flight.add(result)
                result.add_done_callback(functools.partial(settle, handle.run_id))
            for run_id, why in left:
                if run_id not in report.left:
                    report.left[run_id] = why
                    on_left(run_id, why)
            if once:
                break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stopping.wait(), poll_s)
            if stopping.is_set():
                break
        for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal quits at once
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
        if in_flight:
            await asyncio.gather(*in_flight, return_exceptions=True)
            await asyncio.sleep(0)  # let the done callbacks report the last ones
        return report
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
        await runtime.aclose()
