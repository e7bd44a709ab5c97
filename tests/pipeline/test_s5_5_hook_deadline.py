"""Spec 000 §5.5 (last paragraph): the stop and the run deadline always come first. A hook is
waited for at most min(its timeout, the time left to the run deadline), and not at all once
the run is stopped: the hook is cancelled (its thread, for a synchronous hook, is abandoned),
its late decision is discarded and its row says why. The call then ends as §3.3 says: the
deadline gives ``RUN_DEADLINE_EXCEEDED``, the stop ``cancelled``."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
from tests.pipeline.support import Harness, hook

from agentloom.cancel import CancelToken
from agentloom.hooks.runner import PythonHookRunner

HOOK_TIMEOUT_S = 30.0  # far beyond the run deadline: only the deadline or the stop can end it
DEADLINE_S = 0.3
GUARD_S = 10.0  # a bound on every wait, so a regression fails instead of hanging


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of each test so abandoned hook threads return."""
    event = threading.Event()
    yield event
    event.set()


def hang_sync(release: threading.Event, decision: str = "allow") -> Any:
    def hang(event: Any) -> Any:
        release.wait(HOOK_TIMEOUT_S * 2)
        return {"decision": decision, "reason": "a late decision"}
    return hang


async def hang_async(event: Any) -> Any:
    await asyncio.sleep(HOOK_TIMEOUT_S * 2)
    return {"decision": "deny", "reason": "a late decision"}


def by_deadline(h: Harness) -> None:
    # set once the harness is built (building it on a loaded PostgreSQL can take longer than
    # the deadline itself), so it passes while the hook runs, not before it
    h.ctx = dataclasses.replace(h.ctx, deadline=time.time() + DEADLINE_S)


def row(h: Harness, operation_id: str, hook_id: str) -> dict[str, Any]:
    (found,) = [r for r in h.hook_rows(operation_id) if r["hook_id"] == hook_id]
    return found


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_s5_5_a_hook_wait_ends_at_the_run_deadline_before_execution(
    make: Any, release: threading.Event, kind: str,
) -> None:
    fn = hang_sync(release) if kind == "sync" else hang_async
    h = await make([hook("slow", fn, timeout_s=HOOK_TIMEOUT_S)])
    by_deadline(h)
    result = await asyncio.wait_for(h.call({"text": "x"}), GUARD_S)
    assert result.outcome == "failed"
    assert result.error.code == "RUN_DEADLINE_EXCEEDED"
    assert result.error.category == "timeout"
    assert result.error.external_outcome == "not_started"
    assert result.attempts == 0 and h.tool.calls == []
    slow = row(h, result.operation_id, "slow")
    assert slow["status"] == "abandoned"
    assert slow["data"]["ended_by"] == "run_deadline"
    assert "run deadline" in slow["data"]["diagnostic"]
    assert h.ops()[0]["outcome"] == "failed"


async def test_s5_5_an_after_hook_wait_ends_at_the_run_deadline_result_not_delivered(
    make: Any, release: threading.Event,
) -> None:
    h = await make([hook("slow-after", hang_sync(release), timing="after",
                         timeout_s=HOOK_TIMEOUT_S)])
    by_deadline(h)
    result = await asyncio.wait_for(h.call({"text": "x"}), GUARD_S)
    assert result.outcome == "failed"
    assert result.error.code == "RUN_DEADLINE_EXCEEDED"
    assert result.error.external_outcome == "known"  # it ran: the raw result is kept
    assert result.raw.status == "succeeded"
    assert "not delivered" in result.describe()
    assert [c["arguments"]["text"] for c in h.tool.calls] == ["x"]
    slow = row(h, result.operation_id, "slow-after")
    assert (slow["status"], slow["data"]["ended_by"]) == ("abandoned", "run_deadline")


async def test_s5_5_a_late_decision_after_the_deadline_is_discarded(
    make: Any, release: threading.Event,
) -> None:
    h = await make([hook("late-deny", hang_sync(release, "deny"), timeout_s=HOOK_TIMEOUT_S,
                         on_failure="deny")])
    by_deadline(h)
    result = await asyncio.wait_for(h.call({"text": "x"}), GUARD_S)
    assert result.error.code == "RUN_DEADLINE_EXCEEDED"  # not the hook's failure: no on_failure
    runner = cast(PythonHookRunner, h.kernel.hooks.runner("python"))
    assert runner.threads.abandoned == 1
    release.set()  # the hook now returns its deny
    for _ in range(int(GUARD_S / 0.01)):
        if runner.threads.abandoned == 0:
            break
        await asyncio.sleep(0.01)
    assert runner.threads.abandoned == 0
    await asyncio.sleep(0)  # let anything the late decision might trigger run
    late = row(h, result.operation_id, "late-deny")
    assert late["status"] == "abandoned" and late["decision"] is None
    assert h.ops()[0]["outcome"] == "failed"


async def test_s5_5_a_stop_during_a_hanging_hook_cancels_it(make: Any) -> None:
    entered, cancelled = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()

    async def hang(event: Any) -> Any:  # runs in an event loop of its own, on a thread
        loop.call_soon_threadsafe(entered.set)
        try:
            await asyncio.sleep(HOOK_TIMEOUT_S * 2)
        except asyncio.CancelledError:
            loop.call_soon_threadsafe(cancelled.set)
            raise
        return {"decision": "allow"}

    token = CancelToken()
    h = await make([hook("hang", hang, timeout_s=HOOK_TIMEOUT_S)], cancel=token)
    call = asyncio.ensure_future(h.call({"text": "x"}))
    await asyncio.wait_for(entered.wait(), GUARD_S)
    token.set("user pressed stop")
    result = await asyncio.wait_for(call, GUARD_S)
    await asyncio.wait_for(cancelled.wait(), GUARD_S)  # the hook itself was cancelled
    assert result.outcome == "cancelled" and result.error.code == "RUN_STOPPED"
    assert result.attempts == 0 and h.tool.calls == []
    hung = row(h, result.operation_id, "hang")
    assert (hung["status"], hung["data"]["ended_by"]) == ("abandoned", "stop")
    assert "user pressed stop" in hung["data"]["diagnostic"]


async def test_s5_5_a_hook_is_not_started_once_the_run_deadline_has_passed(
    make: Any, release: threading.Event,
) -> None:
    """The first hook runs into the deadline; the second is never started."""
    started: list[str] = []

    def second(event: Any) -> Any:
        started.append("second")
        return {"decision": "allow"}

    h = await make([hook("first", hang_sync(release), timeout_s=HOOK_TIMEOUT_S),
                    hook("second", second, timeout_s=HOOK_TIMEOUT_S)])
    by_deadline(h)
    result = await asyncio.wait_for(h.call({"text": "x"}), GUARD_S)
    assert result.error.code == "RUN_DEADLINE_EXCEEDED"
    assert started == []
    assert {r["hook_id"]: r["status"] for r in h.hook_rows(result.operation_id)} == {
        "first": "abandoned"}


async def test_s5_5_after_the_deadline_cut_an_attempt_no_after_hook_starts_and_it_stays_unknown(
    make: Any,
) -> None:
    """An after-hook is not started once the deadline has passed during the Attempt: the
    result is not delivered unreviewed, and the call is reported as the Attempt was."""
    after: list[str] = []

    async def hang_call(args: dict[str, Any], ctx: Any) -> None:
        await asyncio.sleep(HOOK_TIMEOUT_S * 2)

    def audit(event: Any) -> Any:
        after.append("audit")
        return {"decision": "allow"}

    h = await make([hook("audit", audit, timing="after", timeout_s=HOOK_TIMEOUT_S)])
    h.tool.behaviour = hang_call
    by_deadline(h)
    result = await asyncio.wait_for(h.call({"text": "x"}), GUARD_S)
    assert result.outcome == "unknown"
    assert result.error.code == "RUN_DEADLINE_EXCEEDED"
    assert result.error.external_outcome == "unknown"
    assert after == []
    audited = row(h, result.operation_id, "audit")
    assert (audited["status"], audited["data"]["ended_by"]) == ("abandoned", "run_deadline")
