"""Spec 000 §9 bullet 6 and §3.2: observers never change a result; zero or two owners and an
unknown name are explicit errors, never a hang; batches keep every member."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.pipeline.support import hook

from agentloom.errors import OperationError, RegistrationError
from agentloom.results import ToolResult


async def test_s9_6_observer_return_values_and_exceptions_never_change_a_result(make: Any) -> None:
    h = await make()
    seen: list[str] = []

    def raising(kind: str, payload: dict[str, Any]) -> None:
        seen.append(kind)
        raise RuntimeError("observer crashed")

    def meddling(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        payload["outcome"] = "failed"
        return {"decision": "deny", "outcome": "failed"}

    async def async_raising(kind: str, payload: dict[str, Any]) -> None:
        raise RuntimeError("async observer crashed")

    for subscriber in (raising, meddling, async_raising):
        h.kernel.bus.subscribe(subscriber)
    result = await h.call({"text": "x"})
    await asyncio.sleep(0)
    assert result.succeeded
    assert seen == ["operation.started", "operation.completed"]
    assert h.ops()[0]["outcome"] == "succeeded"


async def test_s9_6_an_event_type_with_no_owner_is_an_explicit_routing_error(make: Any) -> None:
    h = await make()
    result = await asyncio.wait_for(
        h.kernel.bus.request("demo_echo", {"text": "x"}, h.ctx, event_type="skill"), timeout=5)
    assert result.outcome == "failed"
    assert result.error.code == "NO_OWNER" and result.error.external_outcome == "not_started"
    assert h.tool.calls == []


async def test_s9_6_a_second_owner_for_one_event_type_is_a_registration_error(make: Any) -> None:
    h = await make()
    with pytest.raises(RegistrationError, match="already has an owner"):
        h.kernel.bus.register_owner("tool", h.kernel.tools)


async def test_s9_6_an_owner_without_a_handler_is_an_explicit_error(make: Any) -> None:
    h = await make()

    class Nobody:
        def handler_for(self, spec: Any) -> None:
            return None

    h.kernel.bus.register_owner("widget", Nobody())
    result = await asyncio.wait_for(
        h.kernel.bus.request("demo_echo", {"text": "x"}, h.ctx, event_type="widget"), timeout=5)
    assert result.outcome == "failed" and result.error.code == "NO_HANDLER"


async def test_s9_6_an_unknown_capability_name_fails_explicitly_and_is_recorded(make: Any) -> None:
    h = await make()
    result = await asyncio.wait_for(h.kernel.bus.request("rm_rf", {}, h.ctx), timeout=5)
    assert result.outcome == "failed" and result.error.code == "UNKNOWN_CAPABILITY"
    assert h.ops()[0]["outcome"] == "failed"


async def test_s3_request_many_returns_every_member_in_order_despite_a_deny_and_a_failure(
    make: Any,
) -> None:
    def deny_two(event: Any) -> dict[str, Any]:
        return {"decision": "deny" if event["payload"]["text"] == "two" else "allow"}

    def fail_three(args: dict[str, Any], ctx: Any) -> ToolResult | None:
        if args["text"] == "three":
            return ToolResult.failure("three is broken")
        return None

    from agentloom.bus import RequestItem

    h = await make([hook("deny-two", deny_two)])
    h.tool.behaviour = fail_three
    items = [RequestItem(name="demo_echo", arguments={"text": t})
             for t in ("one", "two", "three", "four")]
    results = await h.kernel.bus.request_many(items, h.ctx, concurrency=2)
    assert [r.outcome for r in results] == [
        "succeeded", "denied_before_execution", "failed", "succeeded"]
    assert [r.proposed_arguments["text"] for r in results] == ["one", "two", "three", "four"]
    assert len({r.operation_id for r in results}) == 4


async def test_s3_request_many_never_exceeds_the_configured_concurrency(make: Any) -> None:
    active = 0
    peak = 0

    async def slow(args: dict[str, Any], ctx: Any) -> None:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1

    from agentloom.bus import RequestItem

    h = await make()
    h.tool.behaviour = slow
    items = [RequestItem(name="demo_echo", arguments={"text": str(i)}) for i in range(8)]
    results = await h.kernel.bus.request_many(items, h.ctx, concurrency=3)
    assert all(r.succeeded for r in results)
    assert peak == 3


async def test_s2_a_failed_result_always_carries_an_error_and_unknown_is_never_success() -> None:
    with pytest.raises(ValueError):
        ToolResult(status="failed")
    with pytest.raises(ValueError):
        ToolResult(status="succeeded", error=OperationError(
            code="x", category="business", message="m"))
    unknown = ToolResult.unknown(OperationError(code="x", category="transport", message="lost",
                                                external_outcome="unknown"))
    assert unknown.status == "unknown"
