"""CommitCoordinator: the single entry through which run facts are committed.

Durable stores get *group commit*: one writer thread takes every write set that
queued while the previous transaction was running and commits them together, so
100 concurrent callers share one fsync instead of paying one each. Each write set
still succeeds or fails on its own (fence, revision conflict). A failure is
raised to the caller: persistence errors are never fail-open.

A caller that is alone (``inline=True``, nothing queued or in flight) commits on
the event loop's thread instead: there is nothing to batch with, and the two
thread hand-offs would cost more than the commit's own CPU work. The loop is
blocked for that one commit's duration, then yields once so that other callers
can start (and turn the next commits into group commits).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from dataclasses import dataclass

from agentloom.errors import StoreError
from agentloom.store.ports import Store, WriteSet

_Item = tuple[WriteSet, "asyncio.Future[None]", asyncio.AbstractEventLoop]


@dataclass(slots=True)
class CommitStats:
    """Counters of a ``CommitCoordinator``: transactions run and write sets committed (their
    ratio is the group-commit factor)."""

    transactions: int = 0
    write_sets: int = 0


class CommitCoordinator:
    """The single entry through which run facts are committed: group commit on durable stores
    (one writer thread, one transaction for everything queued), inline commit for a lone caller.

    Owns: batching and the writer thread. Does not own: what is written (write sets come built)
    or their fences. Each write set succeeds or fails on its own; a failure is raised to its
    caller — persistence is never fail-open."""

    def __init__(self, store: Store, *, max_batch: int = 512) -> None:
        self.store = store
        self.max_batch = max_batch
        self.stats = CommitStats()
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._queued = 0  # write sets handed to the writer thread and not yet settled

    async def commit(self, ws: WriteSet, *, inline: bool = False) -> None:
        """Commit ``ws`` atomically; raise ``FencedOut`` / ``RevisionConflict`` / ``StoreError``.

        ``inline`` says the caller is the only one committing right now; the commit then
        runs on this thread when the writer thread has nothing queued.
        """
        if self._closed:
            raise StoreError("the commit coordinator is closed; nothing was written")
        if not self.store.durable or (inline and self._queued == 0):
            try:
                outcome = self.store.commit_many([ws])[0]
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"commit failed: {exc}") from exc
            self.stats.transactions += 1
            self.stats.write_sets += 1
            if outcome is not None:
                raise outcome
            if self.store.durable:
                await asyncio.sleep(0)  # let other callers in: they turn this into group commit
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._ensure_thread()
        self._queued += 1
        self._queue.put((ws, future, loop))
        try:
            await future
        finally:
            self._queued -= 1

    def _ensure_thread(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._writer, name="agentloom-commit", daemon=True
                )
                self._thread.start()

    def _writer(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)
                    break
                batch.append(item)
            outcomes: list[BaseException | None]
            try:
                outcomes = self.store.commit_many([ws for ws, _, _ in batch])
            except BaseException as exc:  # the whole transaction failed
                err = exc if isinstance(exc, StoreError) else StoreError(f"commit failed: {exc}")
                outcomes = [err] * len(batch)
            self.stats.transactions += 1
            self.stats.write_sets += len(batch)
            for (_, future, loop), outcome in zip(batch, outcomes, strict=True):
                loop.call_soon_threadsafe(_settle, future, outcome)

    def close(self) -> None:
        self._closed = True
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=30)
            self._thread = None


def _settle(future: asyncio.Future[None], outcome: BaseException | None) -> None:
    if future.done():
        return
    if outcome is None:
        future.set_result(None)
    else:
        future.set_exception(outcome)
