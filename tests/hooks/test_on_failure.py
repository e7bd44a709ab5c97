"""Issue 11 (hooks) and 12 point 5: ``on_failure: deny`` covers a decision lost in a crash.

A guard that was running when the runtime went away has no committed decision; recovery
never runs it again. With the default it is ``indeterminate`` and fail-open; with
``on_failure: deny`` the call is denied and the tool never runs. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from tests.pipeline.support import Harness, harnesses, hook

WAIT_S = 30.0


@pytest.fixture
async def make(durable_store_url: str) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    async with harnesses(durable_store_url) as factory:
        yield factory


@pytest.mark.parametrize("on_failure", ["deny", "allow"])
async def test_i11_hook_on_failure_applies_to_a_decision_lost_in_a_crash(
    make: Any, on_failure: str,
) -> None:
    entered = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def hangs(event: Any) -> Any:
        loop.call_soon_threadsafe(entered.set)  # the hook runs in an event loop of its own
        await asyncio.Event().wait()

    h = await make([hook("guard", hangs, timeout_s=WAIT_S * 4, on_failure=on_failure)])
    ctx = h.kernel.invocation_context(h.lease, release_id="rel")
    call = asyncio.ensure_future(h.kernel.bus.request("demo_echo", {"text": "hi"}, ctx))
    await asyncio.wait_for(entered.wait(), WAIT_S)
    call.cancel()  # the runtime goes away while the guard runs: no decision is committed
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, WAIT_S)

    (recovered,) = await asyncio.wait_for(h.kernel.recover(ctx), WAIT_S)

    (row,) = h.hook_rows(recovered.operation_id)
    assert row["status"] == "indeterminate"
    if on_failure == "deny":
        assert recovered.outcome == "denied_before_execution"
        assert h.tool.calls == []
        assert row["decision"] == "deny" and row["data"]["on_failure"] == "deny"
        assert "decision was lost" in row["data"]["reason"]
    else:
        assert recovered.outcome == "succeeded"
        assert [c["arguments"] for c in h.tool.calls] == [{"text": "hi"}]
        assert row["decision"] is None and "fail-open" in row["data"]["diagnostic"]
