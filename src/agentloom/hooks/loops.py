"""The event loops coroutine hook functions run in: each call in a loop of its own, on a thread
of its own.

A timeout can only cancel a coroutine at an ``await``: a coroutine hook that blocks — a
synchronous ``time.sleep``, a blocking socket or lock — on the runtime's event loop would stall
that loop, and with it every run, every timer and the hook's own timeout. So a coroutine hook
never runs on the caller's loop. Each ``PythonHookRunner`` owns one ``HookLoops``::

    run(fn, event) ─► a thread of its HookThreads pool ─► a new event loop ─► await fn(event)
       │ the caller's loop awaits the call's future: the HookManager's timeout, the run
       │ deadline and the stop all still hold, whatever the coroutine does
       ▼ the waiter gives up (timeout, stop)
    the hook's task is cancelled in its own loop (thread-safe): a coroutine at an ``await``
    ends there; one that blocks is abandoned, counted by the pool until it returns (as a
    synchronous hook is), and its late result thrown away

The hook runs in a copy of the caller's context (``contextvars``), as a task of the caller's
loop would. What it must not do is use objects bound to the runtime's loop (a client, lock,
queue or future made there): it makes its own, or passes values with thread-safe calls.
When the hook's coroutine returns, the tasks it left behind are cancelled and its loop is
closed; the hook's result is not held up by threads it left running (``asyncio.to_thread``).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from agentloom.hooks.threads import HookThreads


class HookLoops:
    """Runs coroutine hook functions each in an event loop of its own, on ``threads`` (a
    ``HookThreads`` pool of kind ``coroutine``, apart from the synchronous hooks' one)."""

    def __init__(self, *, threads: HookThreads | None = None) -> None:
        self.threads = threads or HookThreads(name="agentloom-async-hook", kind="coroutine")

    @property
    def abandoned(self) -> int:
        """Abandoned coroutine hooks whose threads are still running (blocked ones)."""
        return self.threads.abandoned

    async def run(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Await ``fn(*args)`` in a new event loop on a pool thread and return its result.

        Cancelling the await cancels the hook's task in its own loop and abandons the call
        (the pool counts it until it returns); a call not yet started never starts.

        Raises:
            HookThreadsExhausted: the pool's ``max_abandoned`` calls are still running.
        """
        call = _LoopCall(fn, args)
        try:
            return await self.threads.run(call)
        except asyncio.CancelledError:
            call.cancel()
            raise


class _LoopCall:
    """One coroutine hook call, run by a pool thread in an event loop made for it."""

    def __init__(self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        self._fn = fn
        self._args = args
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None  # set while the hook runs
        self._task: asyncio.Task[Any] | None = None
        self._started = False
        self._cancelled = False

    async def _main(self) -> Any:
        return await self._fn(*self._args)

    def __call__(self) -> Any:
        loop = asyncio.new_event_loop()
        try:
            with self._lock:
                if self._cancelled:  # given up on before its thread took it
                    raise asyncio.CancelledError
                self._started = True
                task = loop.create_task(self._main())
                self._loop, self._task = loop, task
            try:
                return loop.run_until_complete(task)
            finally:
                with self._lock:
                    self._loop = None
                _cancel_left_over(loop)
        finally:
            loop.close()  # never waits for the threads of its default executor

    def cancel(self) -> None:
        """Cancel the hook's task in its own loop; a call that has not started never will (a
        coroutine it was given is closed, not left unawaited)."""
        with self._lock:
            self._cancelled = True
            if not self._started:
                for arg in self._args:
                    if inspect.iscoroutine(arg):
                        arg.close()
            if self._loop is not None and self._task is not None:
                try:
                    self._loop.call_soon_threadsafe(self._task.cancel)
                except RuntimeError:  # the loop closed meanwhile: the hook has ended
                    pass


def _cancel_left_over(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the tasks a hook left behind in ``loop`` and let them end; close its async
    generators. A task or generator that blocks while it ends holds up only this thread."""
    if loop.is_running() or loop.is_closed():  # left by a BaseException out of run_forever
        return
    left = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in left:
        task.cancel()
    try:
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    except BaseException:  # the hook's own cleanup failed: its result stands
        pass
