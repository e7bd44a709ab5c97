"""A worker: one process that drives the queued runs of a configuration (issue 17, 000 §3).

::

    worker = Worker(runtime, concurrency=4)
    report = await worker.run()          # until worker.stop(); once=True: drain the queue, exit

Every pass it (1) tries again the run-end cleanups whose back-off is over, expires the
approvals whose deadline passed (their default answer applies) and queues again the waiting
runs whose every call was answered, (2) resumes the
runs whose holder died (``Runtime.resume_interrupted``: a conditional claim, never a run a live
process drives), then (3) claims ``pending`` runs (``Runtime.claim_next``: priority, then age;
this worker's ``concurrency`` and the per-agent caps checked in the claim's transaction) until
it holds ``concurrency`` runs or the queue has nothing it may take. Then it sleeps until a run
is queued (PostgreSQL ``LISTEN``/``NOTIFY``), one of its runs ends (a free slot), or
``poll_s`` (with ±20 % jitter, so idle workers do not poll in step) has passed.

Its ``workers`` row says it is alive: a heartbeat every third of the lease TTL, with the runs
it holds (``agentloom workers list``, which shows a worker whose heartbeat is older than its
lease as ``stale`` and the runs each holds as the store's leases say, ``held_runs``).
``stop()`` — SIGTERM — stops claiming, gives each of its runs back to the queue at its next
step boundary (the current step's calls commit first), waits for them and marks the row
``stopped``; a run that ends meanwhile just ends. SIGKILL is safe too: its leases expire and
another worker resumes the runs (``is_interrupted``).

Owns: the worker loop, its row and heartbeat, draining. Does not own: the claim (the store),
driving a run (``Runtime``), or the command line (``cli.worker``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentloom.agent.runtime import RunHandle, RunResult, Runtime
from agentloom.approvals import expire_due, requeue_if_answered
from agentloom.store import WriteSet
from agentloom.store.holders import parse_holder
from agentloom.store.ports import QueueListener, Store
from agentloom.store.records import get_run, runs
from agentloom.store.workers import WorkerRecord, heartbeat_op
from agentloom.workspace.cleanup import CleanupResult

__all__ = ["Worker", "WorkerReport", "held_runs", "live_workers"]

log = logging.getLogger(__name__)

JITTER = 0.2  # an idle wait is poll_s × (1 ± JITTER)
LISTEN_SLICE_S = 0.5  # a listening thread checks this often whether the worker stopped
CLOCK_SKEW_S = 2.0  # a worker's clock further than this from the store's is named a skew


@dataclass(slots=True)
class WorkerReport:
    """What a worker did: the runs it drove to an end (or gave back: status ``pending`` /
    ``waiting``), per run id why a run was left for another worker (lease held elsewhere,
    back-off not over, …), and the cleanup jobs it tried again."""

    finished: list[RunResult] = field(default_factory=list)
    left: dict[str, str] = field(default_factory=dict)  # run id -> why it was not taken
    cleanups: list[CleanupResult] = field(default_factory=list)
    claimed: int = 0  # runs it took from the queue


def _ignore(*_: Any) -> None:
    return None


class Worker:
    """Drives queued and interrupted runs of one runtime, at most ``concurrency`` at once."""

    def __init__(self, runtime: Runtime, *, concurrency: int = 1,
                 on_finished: Callable[[RunResult], None] = _ignore,
                 on_left: Callable[[str, str], None] = _ignore,
                 on_cleanup: Callable[[CleanupResult], None] = _ignore,
                 on_claimed: Callable[[str], None] = _ignore) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a whole number of at least 1, got {concurrency!r}")
        self.runtime = runtime
        self.concurrency = concurrency
        self.worker_id = runtime.kernel.worker_id
        self.report = WorkerReport()
        self._on_finished = on_finished
        self._on_left = on_left
        self._on_cleanup = on_cleanup
        self._on_claimed = on_claimed
        self._in_flight: dict[str, asyncio.Future[RunResult]] = {}
        self._stopping = asyncio.Event()
        self._changed = asyncio.Event()  # a run ended (a slot is free) or stop() was called
        self._started_at = time.time()
        self._beat_at = 0.0
        self._held: list[str] = []  # the runs its last heartbeat named

    # -- control -----------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop claiming and give every run in flight back to the queue at its next step."""
        self._stopping.set()
        self._changed.set()
        for run_id in list(self._in_flight):
            self.runtime.release_at_next_step(run_id)

    def wake(self) -> None:
        """Look for work now: a run was queued by this very process (no NOTIFY needed)."""
        self._changed.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    # -- the loop ----------------------------------------------------------------------------
    async def run(self, *, once: bool = False) -> WorkerReport:
        """Work until ``stop()`` (``once``: until the queue and the interrupted runs hold
        nothing this worker may take, and its runs have ended). The runtime stays open."""
        settings = self.runtime.workers
        listener = self.runtime.store.listen()
        waker: asyncio.Future[bool] | None = None
        done = threading.Event()  # ends a listening thread within LISTEN_SLICE_S
        await self._beat("live")
        try:
            while not self.stopping:
                self._changed.clear()  # a wake-up from here on is seen by the wait below
                took = await self._pass()
                if self._held != sorted(self._in_flight):  # what it holds changed: say so
                    await self._beat("live")
                if once and not took and not self._in_flight:
                    break
                if took and len(self._in_flight) < self.concurrency:
                    continue  # the queue may hold more: claim again before sleeping
                if waker is None or waker.done():
                    timeout = settings.poll_s * random.uniform(1 - JITTER, 1 + JITTER)
                    waker = asyncio.ensure_future(
                        asyncio.to_thread(_listen, listener, timeout, done))
                changed: asyncio.Future[Any] = asyncio.ensure_future(self._changed.wait())
                beat = max(0.05, self._beat_at + settings.lease_ttl_s / 3 - time.time())
                wakers: set[asyncio.Future[Any]] = {waker, changed}
                await asyncio.wait(wakers, timeout=beat, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                if time.time() - self._beat_at >= settings.lease_ttl_s / 3:
                    await self._beat("live")
            if self.stopping:
                await self._beat("draining")
                for run_id in list(self._in_flight):
                    self.runtime.release_at_next_step(run_id)
            while self._in_flight:
                await asyncio.wait(set(self._in_flight.values()),
                                   timeout=settings.lease_ttl_s / 3)
                await self._beat("draining" if self.stopping else "live")
            await asyncio.sleep(0)  # let the done callbacks report the last ones
            return self.report
        finally:
            done.set()
            if waker is not None:
                waker.cancel()
            listener.close()
            with contextlib.suppress(Exception):
                await self._beat("stopped")

    async def _pass(self) -> bool:
        """One pass: cleanups, interrupted runs, then claims. True when it took a run."""
        runtime = self.runtime
        cleanup = runtime.kernel.environment.cleanup
        cleanup.backoff = True  # the runtime's own sweep waits out each job's back-off too
        for retried in await cleanup.retry_pending():
            self.report.cleanups.append(retried)
            if retried.state == "pending":  # stderr: the job waits for its next try
                log.warning("the cleanup of run %s failed again (attempt %d): %s",
                            retried.run_id, retried.attempts, "; ".join(retried.errors))
            self._on_cleanup(retried)
        commit = runtime.kernel.coordinator.commit
        for expired in await expire_due(runtime.store, commit):  # their default answer applies
            log.info("the approval of %s (run %s) expired: %s", expired.operation_id,
                     expired.run_id, expired.answer)
        for run in runs(runtime.store, status="waiting"):  # answered before it was waiting
            await requeue_if_answered(runtime.store, commit, run.run_id)
        took = False
        if len(self._in_flight) < self.concurrency:
            taken, left = await runtime.resume_interrupted()
            for handle in taken:
                self._track(handle)
                took = True
            for run_id, why in left:
                if run_id not in self.report.left:
                    self.report.left[run_id] = why
                    self._on_left(run_id, why)
        while not self.stopping and len(self._in_flight) < self.concurrency:
            lease = runtime.claim_next(worker_cap=self.concurrency)
            if lease is None:
                break
            self.report.claimed += 1
            self._on_claimed(lease.run_id)
            try:
                handle = await runtime.take(lease)
            except Exception as exc:  # e.g. its folder is busy: back to the queue, named
                why = getattr(exc, "code", type(exc).__name__)
                log.warning("could not start run %s: %s", lease.run_id, exc)
                await runtime.kernel.park_run(lease, "pending", data=_run_data(runtime, lease.run_id))
                self.report.left[lease.run_id] = why
                self._on_left(lease.run_id, why)
                break
            self._track(handle)
            took = True
        return took

    def _track(self, handle: RunHandle) -> None:
        run_id = handle.run_id
        done = asyncio.ensure_future(handle.result())
        self._in_flight[run_id] = done
        if self.stopping:
            self.runtime.release_at_next_step(run_id)

        def settle(future: asyncio.Future[RunResult]) -> None:
            self._in_flight.pop(run_id, None)
            self._changed.set()
            if future.cancelled():
                return
            error = future.exception()
            if error is None:
                self.report.finished.append(future.result())
                self._on_finished(future.result())
            else:  # e.g. LEASE_LOST: another worker took it over; it is theirs now
                why = getattr(error, "code", type(error).__name__)
                self.report.left[run_id] = why
                self._on_left(run_id, why)

        done.add_done_callback(settle)

    async def _beat(self, state: str) -> None:
        """Write this worker's row: alive (``state``), when, and the runs it holds."""
        self._beat_at = time.time()
        self._held = sorted(self._in_flight)
        holder = parse_holder(self.worker_id)
        store = self.runtime.store
        try:  # in the store's time, as leases are; the offset names a skewed clock
            offset = store.clock_offset_s()
        except Exception as exc:
            log.warning("worker %s could not read the store's clock: %s", self.worker_id, exc)
            offset = 0.0
        beat = WorkerRecord(
            worker_id=self.worker_id, host=holder.host or socket.gethostname(),
            pid=os.getpid() if holder.pid is None else holder.pid, state=state,
            started_at=self._started_at + offset, heartbeat_at=self._beat_at + offset,
            data={"concurrency": self.concurrency, "held": self._held,
                  "clock_offset_s": round(-offset, 3), "agents": sorted(self.runtime.agents),
                  "release_id": self.runtime.release_id,
                  "heartbeat_s": self.runtime.workers.lease_ttl_s / 3,
                  "lease_s": self.runtime.workers.lease_ttl_s})
        try:
            await self.runtime.kernel.coordinator.commit(WriteSet((heartbeat_op(beat),)))
        except Exception as exc:  # the heartbeat is a report, never a reason to stop working
            log.warning("worker %s could not record its heartbeat: %s", self.worker_id, exc)


def _listen(listener: QueueListener, timeout_s: float, done: threading.Event) -> bool:
    """``listener.wait(timeout_s)`` in slices, so a stopped worker's thread ends soon after
    (a thread cannot be cancelled; the process waits for it before it exits)."""
    until = time.monotonic() + timeout_s
    while not done.is_set():
        left = until - time.monotonic()
        if left <= 0:
            return False
        if listener.wait(min(left, LISTEN_SLICE_S)):
            return True
    return False


def _run_data(runtime: Runtime, run_id: str) -> dict[str, Any]:
    run = get_run(runtime.store, run_id, lenient=True)  # its data, whatever its status
    return dict(run.data) if run is not None else {}


def live_workers(rows: list[dict[str, Any]], now: float | None = None, *,
                 holders: Mapping[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """The ``workers`` rows as ``workers list`` shows them, newest heartbeat first: each with
    ``state`` — ``live`` / ``draining`` while its last heartbeat is at most one lease old,
    ``stale`` once it is older (the process died or hangs: its leases expire and others take
    its runs over), ``stopped`` when it stopped — ``alive`` (live or draining), ``last_seen_s``
    (how long ago it last beat), ``held`` and ``clock_skew_s`` (how far its clock is from the
    store's; None within ``CLOCK_SKEW_S``). ``now``: the store's time (heartbeats are written in
    it). ``holders``: per worker, the runs the store names it the holder of (``held_runs``); the
    runs its own last heartbeat named when not given."""
    now = time.time() if now is None else now
    shown = []
    for row in sorted(rows, key=lambda r: r["heartbeat_at"], reverse=True):
        data = row.get("data") or {}
        lease = float(data.get("lease_s") or 3 * float(data.get("heartbeat_s") or 20.0))
        age = now - row["heartbeat_at"]
        stopped = row["state"] == "stopped"
        alive = not stopped and age <= lease
        state = "stopped" if stopped else row["state"] if alive else "stale"
        held = (data.get("held", []) if holders is None
                else sorted(holders.get(row["worker_id"], [])))
        shown.append({"worker_id": row["worker_id"], "host": row["host"], "pid": row["pid"],
                      "state": state, "alive": alive, "started_at": row["started_at"],
                      "heartbeat_at": row["heartbeat_at"],
                      "heartbeat_age_s": round(age, 3), "last_seen_s": round(max(age, 0.0), 1),
                      "lease_s": lease, "concurrency": data.get("concurrency"), "held": held,
                      "agents": data.get("agents", []),
                      "clock_skew_s": _skew(data.get("clock_offset_s"))})
    return shown


def held_runs(store: Store) -> dict[str, list[str]]:
    """Per holder id, the runs the store says it holds now: ``running`` runs whose
    ``lease_owner`` it is (whatever a worker's own row last said)."""
    held: dict[str, list[str]] = {}
    for run in runs(store, status="running", lenient=True):
        if run.lease_owner:
            held.setdefault(run.lease_owner, []).append(run.run_id)
    return held


def _skew(offset: Any) -> float | None:
    """A worker's clock offset from the store's, when it is worth naming."""
    if isinstance(offset, int | float) and abs(offset) > CLOCK_SKEW_S:
        return float(offset)
    return None
