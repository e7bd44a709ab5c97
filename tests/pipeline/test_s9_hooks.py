"""Spec 000 §9 bullet 2 (and §5.2): ordered before / after hooks allow, deny or modify; a valid
deny blocks execution or delivery; a failing hook is fail-open for itself only; the two are
distinct outcomes."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from tests.pipeline.support import hook

from agentloom.hooks.decision import HookDecision


def replace_text(value: str) -> Any:
    def fn(event: Any) -> dict[str, Any]:
        return {"decision": "allow",
                "payload_patch": [{"op": "replace", "path": "/payload/text", "value": value}]}
    return fn


async def test_s9_2_before_hooks_run_in_order_and_each_sees_the_previous_accepted_value(make: Any) -> None:
    seen: list[tuple[str, str]] = []

    def first(event: Any) -> dict[str, Any]:
        seen.append(("first", event["payload"]["text"]))
        return {"decision": "allow",
                "payload_patch": [{"op": "replace", "path": "/payload/text", "value": "A"}]}

    async def second(event: Any) -> dict[str, Any]:
        seen.append(("second", event["payload"]["text"]))
        return {"decision": "allow",
                "payload_patch": [{"op": "replace", "path": "/payload/text",
                                   "value": event["payload"]["text"] + "B"}]}

    h = await make([hook("first", first), hook("second", second)])
    result = await h.call({"text": "raw"})
    assert seen == [("first", "raw"), ("second", "A")]
    assert h.tool.calls[0]["arguments"]["text"] == "AB"
    assert result.executed_arguments == {"text": "AB"}
    assert result.proposed_arguments == {"text": "raw"}
    rows = h.hook_rows(result.operation_id)
    assert [(r["hook_id"], r["position"], r["status"]) for r in rows] == [
        ("first", 0, "succeeded"), ("second", 1, "succeeded")]
    assert [r["data"]["input_version"] for r in rows] == [0, 1]


async def test_s9_2_before_deny_blocks_execution_and_creates_no_attempt(make: Any) -> None:
    h = await make([hook("guard", lambda e: HookDecision.deny("not today")),
                    hook("never", replace_text("x"))])
    result = await h.call({"text": "hi"})
    assert result.outcome == "denied_before_execution"
    assert result.reason == "not today"
    assert result.attempts == 0 and result.raw is None and result.result is None
    assert h.tool.calls == []
    assert h.kernel.store.query("attempts", {"operation_id": result.operation_id}) == []
    rows = h.hook_rows(result.operation_id)
    assert [(r["hook_id"], r["decision"]) for r in rows] == [("guard", "deny")]


async def test_s9_2_after_deny_blocks_delivery_keeps_raw_and_says_side_effects_not_rolled_back(
    make: Any,
) -> None:
    h = await make([hook("post", lambda e: {"decision": "deny", "reason": "leaks a secret"},
                         timing="after")])
    result = await h.call({"text": "hi"})
    assert result.outcome == "denied_after_execution"
    assert len(h.tool.calls) == 1
    assert result.result is None
    assert result.raw is not None and result.raw.status == "succeeded"
    assert "not rolled back" in (result.reason or "")
    assert result.side_effects_rolled_back is False
    stored = h.ops()[0]
    assert stored["outcome"] == "denied_after_execution"
    assert stored["data"]["raw"]["status"] == "succeeded"


async def test_s9_2_after_hook_replaces_delivered_content_and_raw_is_kept(make: Any) -> None:
    def redact(event: Any) -> dict[str, Any]:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/result/content", "value": [{"type": "text",
                                                                    "text": "[redacted]"}]}]}

    h = await make([hook("redact", redact, timing="after")])
    result = await h.call({"text": "secret"})
    assert result.succeeded
    assert result.result.text() == "[redacted]"
    assert "secret" in result.raw.text()
    view = h.kernel.context.view(h.ctx.context_scope)
    assert [r.data.get("preview") for r in view if r.kind == "tool_result"] == ["[redacted]"]


async def test_s9_2_hook_exception_is_fail_open_for_that_hook_only(make: Any) -> None:
    def boom(event: Any) -> Any:
        raise RuntimeError("hook bug with api_key=abc123secret")

    h = await make([hook("a", replace_text("from-a")), hook("boom", boom),
                    hook("c", lambda e: {"decision": "allow", "payload_patch": [
                        {"op": "add", "path": "/payload/count", "value": 3}]})])
    result = await h.call({"text": "hi"})
    assert result.succeeded
    assert h.tool.calls[0]["arguments"] == {"text": "from-a", "count": 3}
    rows = {r["hook_id"]: r for r in h.hook_rows(result.operation_id)}
    assert rows["boom"]["status"] == "failed"
    assert "abc123secret" not in rows["boom"]["data"]["diagnostic"]
    assert rows["a"]["status"] == rows["c"]["status"] == "succeeded"


async def test_s9_2_hook_timeout_is_fail_open_and_recorded(make: Any) -> None:
    release = threading.Event()

    async def slow(event: Any) -> dict[str, Any]:
        await asyncio.sleep(30)
        return {"decision": "deny"}

    def slow_sync(event: Any) -> dict[str, Any]:
        release.wait(5)
        return {"decision": "deny", "reason": "late"}

    h = await make([hook("slow", slow, timeout_s=0.05), hook("slow_sync", slow_sync, timeout_s=0.05)])
    try:
        result = await h.call({"text": "hi"})
    finally:
        release.set()
    assert result.succeeded
    statuses = [r["status"] for r in h.hook_rows(result.operation_id)]
    assert statuses == ["timed_out", "timed_out"]


async def test_s9_2_invalid_decision_is_fail_open(make: Any) -> None:
    h = await make([hook("none", lambda e: None), hook("weird", lambda e: {"decision": "maybe"}),
                    hook("extra", lambda e: {"decision": "allow", "bogus": 1})])
    result = await h.call({"text": "hi"})
    assert result.succeeded
    assert [r["status"] for r in h.hook_rows(result.operation_id)] == ["invalid"] * 3


async def test_s9_2_deny_and_hook_failure_are_distinct_outcomes(make: Any) -> None:
    def fail(event: Any) -> Any:
        raise ValueError("broken")

    failing = await make([hook("f", fail)])
    denying = await make([hook("d", lambda e: {"decision": "deny", "reason": "policy"})])
    failed_hook = await failing.call({"text": "x"})
    denied = await denying.call({"text": "x"})
    assert failed_hook.outcome == "succeeded"
    assert denied.outcome == "denied_before_execution"
    assert len(failing.tool.calls) == 1 and denying.tool.calls == []


async def test_s9_2_a_later_hook_cannot_allow_what_an_earlier_hook_denied(make: Any) -> None:
    later: list[str] = []
    h = await make([hook("deny", lambda e: {"decision": "deny"}),
                    hook("allow", lambda e: later.append("ran") or {"decision": "allow"})])
    result = await h.call({"text": "x"})
    assert result.outcome == "denied_before_execution"
    assert later == []


async def test_s9_2_matchers_select_hooks_by_capability_role_and_status(make: Any) -> None:
    ran: list[str] = []

    def record(name: str) -> Any:
        return lambda e: ran.append(name) or {"decision": "allow"}

    h = await make([
        hook("cap-match", record("cap-match"), capability="demo.*"),
        hook("cap-miss", record("cap-miss"), capability="fs.*"),
        hook("role-miss", record("role-miss"), role="planner"),
        hook("after-failed", record("after-failed"), timing="after", status="failed"),
        hook("after-ok", record("after-ok"), timing="after", status="succeeded"),
    ])
    await h.call({"text": "x"})
    assert ran == ["cap-match", "after-ok"]


async def test_s9_2_hook_receives_a_read_only_event_with_the_documented_fields(make: Any) -> None:
    captured: dict[str, Any] = {}

    def inspect(event: Any) -> dict[str, Any]:
        captured.update(event)
        try:
            event["payload"]["text"] = "mutated"
        except TypeError:
            captured["mutation_refused"] = True
        return {"decision": "allow"}

    def after(event: Any) -> dict[str, Any]:
        captured["after_result"] = event["result"]["status"]
        return {"decision": "allow"}

    h = await make([hook("inspect", inspect), hook("after", after, timing="after")])
    result = await h.call({"text": "hi"})
    for key in ("timing", "event", "capability", "role", "run_id", "operation_id", "payload"):
        assert key in captured, key
    assert captured["capability"] == "demo.echo" and captured["role"] == "main"
    assert captured["operation_id"] == result.operation_id
    assert captured["mutation_refused"] is True
    assert h.tool.calls[0]["arguments"] == {"text": "hi"}
    assert captured["after_result"] == "succeeded"


async def test_s5_2_each_decision_and_cursor_is_committed_before_the_next_hook_runs(make: Any) -> None:
    seen_by_second: list[dict[str, Any]] = []
    box: dict[str, Any] = {}

    def first(event: Any) -> dict[str, Any]:
        return {"decision": "allow",
                "payload_patch": [{"op": "replace", "path": "/payload/text", "value": "one"}]}

    def second(event: Any) -> dict[str, Any]:
        h = box["h"]
        rows = h.kernel.store.query("hook_invocations", {"operation_id": event["operation_id"]},
                                    order_by=("position",))
        seen_by_second.extend(rows)
        stored = h.kernel.store.get("operations", {"operation_id": event["operation_id"]})
        seen_by_second.append({"payload": stored["data"]["payload"]})
        return {"decision": "allow"}

    h = await make([hook("first", first), hook("second", second)])
    box["h"] = h
    await h.call({"text": "x"})
    first_row, second_row, op = seen_by_second
    assert (first_row["status"], first_row["decision"], first_row["data"]["cursor"]) == (
        "succeeded", "allow", 1)
    assert first_row["data"]["change_hash"] is not None
    assert second_row["status"] == "started"
    assert op["payload"] == {"text": "one"}


async def test_s5_1_a_hook_outcome_is_recorded_for_every_hook_run(make: Any) -> None:
    def boom(event: Any) -> Any:
        raise RuntimeError("x")

    h = await make([hook("ok", lambda e: {"decision": "allow"}), hook("boom", boom),
                    hook("bad", lambda e: 42), hook("deny", lambda e: {"decision": "deny"})])
    result = await h.call({"text": "x"})
    outcomes = h.kernel.hook_outcomes(result.operation_id)
    assert [o.execution_status for o in outcomes] == ["succeeded", "failed", "invalid", "succeeded"]
    assert outcomes[0].decision_ref is not None and outcomes[1].decision_ref is None
    assert outcomes[1].diagnostic_ref is not None and outcomes[0].diagnostic_ref is None
