"""The threads synchronous hook functions run on: a bounded pool of daemon threads.

Synchronous hooks never run on asyncio's default executor, which the file tools share: a hook
hung past its timeout there would stall every file tool and hold up process exit. Each
``PythonHookRunner`` owns one ``HookThreads``::

    run(fn, event) ─► an idle thread, or a new one (at most ``max_threads``) ─► fn(event)
       │ the waiter gives up (timeout, stop) while fn runs
       ▼
    abandoned: counted and replaced; the thread runs on until fn returns, then exits
       │ ``max_abandoned`` still running
       ▼
    run() raises HookThreadsExhausted at once (the hook fails; nothing queues behind them)

A Python thread cannot be killed, so an abandoned hook keeps running until it returns. The
threads are daemon threads: process exit never waits for one. Idle threads exit after
``idle_s``. Coroutine hooks run on a pool of their own, each in an event loop of its own
(``hooks.loops``), so that a coroutine that blocks cannot stall the runtime's loop either.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal

from agentloom.errors import AgentLoomError, ErrorCategory

MAX_HOOK_THREADS = 32  # threads running synchronous hooks at once (abandoned ones aside)
MAX_ABANDONED_THREADS = 16  # timed-out synchronous hooks still running before new ones fail
IDLE_S = 10.0  # an idle thread exits after this long

HookKind = Literal["synchronous", "coroutine"]
"""What a pool runs: plain hook functions, or coroutine hooks each in an event loop of its own
(``hooks.loops``); it names them in the error of an exhausted pool."""

_ADVICE: dict[HookKind, str] = {
    "synchronous": "make the hook return within its timeout_s, or write it as a coroutine function",
    "coroutine": "make the hook await instead of blocking (asyncio.sleep, asyncio.to_thread) so "
                 "its timeout can cancel it, or return within its timeout_s",
}


class HookThreadsExhausted(AgentLoomError):
    """Too many abandoned synchronous hooks are still running: a new one is not started."""

    default_code = "HOOK_THREADS_EXHAUSTED"
    default_category: ErrorCategory = "rate_limit"


@dataclass(slots=True, eq=False)
class _Work:
    call: Callable[[], Any]
    future: Future[Any]
    abandoned: bool = False
    finished: bool = False


class HookThreads:
    """A bounded pool of daemon threads for hook functions (synchronous ones, or coroutine ones
    each in an event loop of its own: ``kind``)."""

    def __init__(
        self,
        *,
        max_threads: int = MAX_HOOK_THREADS,
        max_abandoned: int = MAX_ABANDONED_THREADS,
        idle_s: float = IDLE_S,
        name: str = "agentloom-hook",
        kind: HookKind = "synchronous",
    ) -> None:
        if max_threads < 1 or max_abandoned < 1 or idle_s <= 0:
            raise ValueError("max_threads and max_abandoned must be at least 1, idle_s positive")
        self.kind = kind
        self.max_threads = max_threads
        self.max_abandoned = max_abandoned
        self._idle_s = idle_s
        self._name = name
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Work] = queue.SimpleQueue()
        self._idle = 0  # waiting threads minus queued work (negative: work waits for a thread)
        self._live = 0  # threads not abandoned
        self._abandoned = 0
        self._started = 0

    @property
    def abandoned(self) -> int:
        """Abandoned hooks whose threads are still running."""
        return self._abandoned

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn(*args)`` on a pool thread, in a copy of the caller's context.

        Cancelling the await abandons a call that has started (it is counted until it
        returns) and drops one that has not.

        Raises:
            HookThreadsExhausted: ``max_abandoned`` abandoned calls are still running.
        """
        work = self._submit(functools.partial(contextvars.copy_context().run, fn, *args))
        try:
            return await asyncio.wrap_future(work.future)
        except asyncio.CancelledError:
            self._abandon(work)
            raise

    def _submit(self, call: Callable[[], Any]) -> _Work:
        with self._lock:
            if self._abandoned >= self.max_abandoned:
                raise HookThreadsExhausted(
                    f"{self._abandoned} {self.kind} hooks that were given up on (timed out or "
                    f"stopped) are still running, the most this runtime allows "
                    f"({self.max_abandoned}); {self.kind} hooks fail until they return — "
                    f"{_ADVICE[self.kind]}"
                )
            if self._idle <= 0 and self._live < self.max_threads:
                self._start()
            work = _Work(call, Future())
            self._queue.put(work)
            self._idle -= 1
        return work

    def _start(self) -> None:
        """Start one more thread (under the lock); it counts as waiting until it takes work."""
        self._started += 1
        thread = threading.Thread(target=self._serve, name=f"{self._name}-{self._started}",
                                  daemon=True)
        thread.start()
        self._live += 1
        self._idle += 1

    def _abandon(self, work: _Work) -> None:
        if work.future.cancel():  # not started: it never will be
            return
        with self._lock:
            if work.finished or work.abandoned:
                return
            work.abandoned = True
            self._abandoned += 1
            self._live -= 1
            if self._idle < 0 and self._live < self.max_threads:
                # its thread is gone for now: replace it for the work already waiting
                try:
                    self._start()
                except RuntimeError:  # no thread can be started: the waiting work times out
                    pass

    def _serve(self) -> None:
        while True:
            try:
                work = self._queue.get(timeout=self._idle_s)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nothing is waiting for this thread
                        self._idle -= 1
                        self._live -= 1
                        return
                continue
            if not work.future.set_running_or_notify_cancel():
                with self._lock:
                    self._idle += 1
                continue
            error: BaseException | None = None
            result: Any = None
            try:
                result = work.call()
            except BaseException as exc:  # the hook's own, even SystemExit: it ends this call only
                error = exc
            with self._lock:
                work.finished = True
                if work.abandoned:
                    self._abandoned -= 1
                else:
                    self._idle += 1
            if error is None:
                work.future.set_result(result)
            else:
                work.future.set_exception(error)
            del error, result
            if work.abandoned:
                return
