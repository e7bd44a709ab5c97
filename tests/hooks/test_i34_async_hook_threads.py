"""Issue #34 (LOW): a coroutine hook that blocks (a synchronous wait inside ``async def``) defeated
its own timeout, which can only cancel at an ``await``: it ran on the runtime's event loop and
stalled it. Coroutine hooks now run each in an event loop of its own on a thread of their own
(``hooks.loops``): the runtime's loop keeps running, the timeout holds and is recorded as
``timed_out``, and the blocked hook is abandoned (counted until it returns).

Counted, not timed: a task of the caller's loop ticks while the hook blocks on a
``threading.Event`` only the test sets."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

import pytest
from tests.pipeline.support import Harness, harnesses, hook

from agentloom.hooks.loops import HookLoops
from agentloom.hooks.runner import PythonHookRunner
from agentloom.hooks.threads import HookThreads

WAIT_S = 30.0
HOOK_BLOCK_S = 10.0  # the blocked hook's own bound: only reached when the loop was stalled
TICKS = 20  # ticks of the caller's loop counted while the hook is still blocked

caller_var: contextvars.ContextVar[str] = contextvars.ContextVar("caller_var", default="unset")


@pytest.fixture
async def make(durable_store_url: str) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    async with harnesses(durable_store_url) as factory:
        yield factory


class Ticker:
    """A task of the caller's loop that counts its turns until stopped."""

    def __init__(self) -> None:
        self.ticks = 0
        self._target: int | None = None
        self._reached = asyncio.Event()
        self._task = asyncio.ensure_future(self._tick())

    async def _tick(self) -> None:
        while True:
            self.ticks += 1
            if self._target is not None and self.ticks >= self._target:
                self._reached.set()
            await asyncio.sleep(0.001)

    async def advance(self, count: int) -> None:
        """Wait until the loop has ticked ``count`` more times (bounded by ``WAIT_S``)."""
        self._reached.clear()
        self._target = self.ticks + count
        await asyncio.wait_for(self._reached.wait(), WAIT_S)

    def stop(self) -> None:
        self._task.cancel()


def runner_of(h: Harness) -> PythonHookRunner:
    return cast(PythonHookRunner, h.kernel.hooks.runner("python"))


async def test_i34_a_blocking_async_hook_times_out_on_a_thread_and_the_loop_keeps_running(
    make: Any,
) -> None:
    loop = asyncio.get_running_loop()
    entered = asyncio.Event()
    release, returned = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    async def blocking(event: Any) -> Any:
        seen["thread"] = threading.current_thread()
        seen["caller_var"] = caller_var.get()
        loop.call_soon_threadsafe(entered.set)
        seen["released"] = release.wait(HOOK_BLOCK_S)  # blocks: no await to cancel at
        returned.set()
        return {"decision": "deny", "reason": "too late to count"}

    h = await make([hook("blocking", blocking, timeout_s=0.2)])
    caller_var.set("from the caller")
    ticker = Ticker()
    try:
        call = asyncio.ensure_future(h.call({"text": "hi"}))
        await asyncio.wait_for(entered.wait(), WAIT_S)
        result = await asyncio.wait_for(call, WAIT_S)

        # the timeout held while the hook still blocks: fail-open, recorded as any timeout
        assert not returned.is_set()
        assert result.outcome == "succeeded"
        assert [c["arguments"] for c in h.tool.calls] == [{"text": "hi"}]
        (row,) = h.hook_rows(result.operation_id)
        assert row["status"] == "timed_out"
        assert "timed out after 0.2s" in row["data"]["diagnostic"]
        assert [o.execution_status for o in h.kernel.hook_outcomes(result.operation_id)] == [
            "timed_out"]
        assert runner_of(h).loops.abandoned == 1

        # the caller's loop keeps turning while the hook is still blocked
        await ticker.advance(TICKS)
        assert not returned.is_set() and runner_of(h).loops.abandoned == 1
    finally:
        release.set()
        ticker.stop()

    assert await asyncio.to_thread(returned.wait, WAIT_S)
    assert seen["released"] is True  # its wait was ended by the test, not by its own bound
    assert seen["thread"] is not threading.current_thread()
    assert seen["thread"].name.startswith("agentloom-async-hook")
    assert seen["caller_var"] == "from the caller"  # run in a copy of the caller's context
    for _ in range(int(WAIT_S * 100)):  # the abandoned call is counted until it returned
        if runner_of(h).loops.abandoned == 0:
            break
        await asyncio.sleep(0.01)
    assert runner_of(h).loops.abandoned == 0
    assert runner_of(h).threads.abandoned == 0  # the synchronous hooks' pool is apart


async def test_i34_an_awaiting_async_hook_past_its_timeout_is_cancelled_in_its_own_loop(
    make: Any,
) -> None:
    cancelled = threading.Event()
    loops: list[asyncio.AbstractEventLoop] = []

    async def waiting(event: Any) -> Any:
        loops.append(asyncio.get_running_loop())
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {"decision": "deny", "reason": "never"}

    async def quick(event: Any) -> Any:
        loops.append(asyncio.get_running_loop())
        threads.append(threading.current_thread().name)
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/text", "value": event["payload"]["text"] + "!"}]}

    threads: list[str] = []
    h = await make([hook("waiting", waiting, timeout_s=0.2), hook("quick", quick),
                    hook("wrapped", lambda event: quick(event))])  # a plain fn returning one
    result = await asyncio.wait_for(h.call({"text": "hi"}), WAIT_S)

    assert result.succeeded
    assert h.tool.calls[-1]["arguments"] == {"text": "hi!!"}
    assert {r["hook_id"]: r["status"] for r in h.hook_rows(result.operation_id)} == {
        "waiting": "timed_out", "quick": "succeeded", "wrapped": "succeeded"}
    assert await asyncio.to_thread(cancelled.wait, WAIT_S)  # the cancel reached its own loop
    caller = asyncio.get_running_loop()
    assert len(loops) == 3 and caller not in loops and len(set(map(id, loops))) == 3
    assert all(lp.is_closed() for lp in loops)
    assert [name.startswith("agentloom-async-hook") for name in threads] == [True, True]


async def test_i34_blocked_async_hooks_exhaust_their_own_pool_never_the_sync_hooks_one(
    make: Any,
) -> None:
    release = threading.Event()

    async def gate(event: Any) -> Any:
        if event["payload"]["text"] == "hang":
            release.wait(HOOK_BLOCK_S)
        return {"decision": "allow"}

    def sync_patch(event: Any) -> Any:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/text", "value": "sync ran"}]}

    h = await make([hook("gate", gate, timeout_s=0.2), hook("sync", sync_patch)])
    runner_of(h).loops = HookLoops(threads=HookThreads(max_abandoned=2, kind="coroutine"))
    try:
        hung = await asyncio.wait_for(asyncio.gather(*(
            h.call({"text": "hang"}) for _ in range(2))), WAIT_S)
        assert [r.succeeded for r in hung] == [True, True]
        assert {r["status"] for op in hung for r in h.hook_rows(op.operation_id)
                if r["hook_id"] == "gate"} == {"timed_out"}

        result = await asyncio.wait_for(h.call({"text": "quick"}), WAIT_S)
        rows = {r["hook_id"]: r for r in h.hook_rows(result.operation_id)}
        assert rows["gate"]["status"] == "failed"
        assert "2 coroutine hooks" in rows["gate"]["data"]["diagnostic"]
        assert rows["sync"]["status"] == "succeeded"
        assert h.tool.calls[-1]["arguments"] == {"text": "sync ran"}
        assert runner_of(h).loops.abandoned == 2 and runner_of(h).threads.abandoned == 0
    finally:
        release.set()
