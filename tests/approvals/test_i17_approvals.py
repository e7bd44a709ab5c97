"""Issue 17 (human approval) and 000 §5.2: a before-hook answers ``ask``; the call is recorded
waiting for a person and nothing runs; an answer is recorded once; the call, issued again with
its logical key (here or in another process), runs once when approved and is denied when
rejected or when its deadline passed with the default deny. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.approvals.support import (
    Counted,
    elsewhere,
    executions,
    file_counting_tool,
    pending,
    replay,
)
from tests.pipeline.support import CountingTool, hook, spec

from agentloom.approvals import (
    ApprovalError,
    ApprovalPending,
    answer,
    expire_due,
    get_approval,
    pending_approvals,
)
from agentloom.bus.bus import RequestItem
from agentloom.hooks.decision import HookDecision, may_ask
from agentloom.kernel import Kernel
from agentloom.results import ToolResult
from agentloom.store import Delete, Put, WriteSet
from agentloom.store import clock as store_clock

ASK = {"decision": "ask", "reason": "May demo_echo say this?"}


def text_patch(value: str) -> dict[str, Any]:
    return {"decision": "allow",
            "payload_patch": [{"op": "replace", "path": "/payload/text", "value": value}]}


async def answer_it(h: Any, signal: ApprovalPending, approve: bool, **kw: Any) -> Any:
    return await answer(h.kernel.store, h.kernel.coordinator.commit, run_id=signal.run_id,
                        operation_id=signal.operation_id, approve=approve, **kw)


async def test_s5_2_ask_records_the_call_waiting_and_runs_nothing(make: Any) -> None:
    asks = Counted(ASK)
    h = await make([hook("gate", asks)])
    h.ctx = replace(h.ctx, approval_timeout_s=600.0)
    before = time.time()

    signal = await pending(h, "hello")

    assert signal.code == "APPROVAL_PENDING"
    assert (signal.run_id, signal.capability_key, signal.question) == (
        h.lease.run_id, "demo.echo", "May demo_echo say this?")
    assert signal.deadline is not None and before + 600 <= signal.deadline <= time.time() + 600
    assert h.tool.calls == []
    assert h.kernel.store.query("attempts", {"operation_id": signal.operation_id}) == []
    (op,) = h.ops()
    assert (op["operation_id"], op["phase"], op["outcome"]) == (
        signal.operation_id, "awaiting_approval", None)
    (row,) = h.hook_rows(signal.operation_id)
    assert (row["hook_id"], row["status"], row["decision"]) == ("gate", "succeeded", "ask")
    record = get_approval(h.kernel.store, signal.operation_id)
    assert record is not None
    assert (record.status, record.question, record.capability_key, dict(record.arguments),
            record.deadline, record.default, record.asked_by) == (
        "pending", "May demo_echo say this?", "demo.echo", {"text": "hello"}, signal.deadline,
        "deny", ("gate",))
    assert pending_approvals(h.kernel.store, h.lease.run_id) == [record]


async def test_s5_2_ask_without_a_reason_asks_a_default_question_naming_the_tool(
    make: Any,
) -> None:
    h = await make([hook("gate", lambda e: HookDecision.ask())])
    signal = await pending(h)
    assert "demo_echo" in signal.question and "demo.echo" in signal.question
    assert signal.deadline is None  # no approval_timeout_s: no deadline


async def test_i17_approval_replay_while_pending_raises_again_without_running_hooks(
    make: Any,
) -> None:
    asks = Counted(ASK)
    h = await make([hook("gate", asks)])
    first = await pending(h)

    again = await pending(h)  # the same logical key: the same call
    other = await elsewhere(h, [hook("gate", asks)], h.tool)
    elsewhere_too = await pending(other)

    assert again.operation_id == elsewhere_too.operation_id == first.operation_id
    assert asks.runs == [first.operation_id]  # the hook ran once
    assert h.tool.calls == []
    other.kernel.close()


async def test_i17_approval_approved_call_runs_exactly_once_in_another_process(
    make: Any, tmp_path: Path,
) -> None:
    counter = tmp_path / "effects.txt"
    asks, after = Counted(ASK), Counted({"decision": "allow"})
    hooks = [hook("gate", asks), hook("audit", after, timing="after")]
    h = await make(hooks, tool=file_counting_tool(counter))
    signal = await pending(h, "ship it")
    h.kernel.close()  # the first process is gone

    other = await elsewhere(h, hooks, file_counting_tool(counter))
    record = await answer_it(other, signal, True, reason="looks fine", actor="alice")
    result = await replay(other, text="ship it")
    again = await replay(other, text="ship it")

    assert (record.status, record.answer, record.actor) == ("approved", "approve", "alice")
    assert result.outcome == "succeeded" and result.attempts == 1
    assert result.operation_id == signal.operation_id
    assert result.executed_arguments == {"text": "ship it"}
    assert executions(counter) == ["ship it"]  # exactly once, across both replays
    assert asks.runs == [signal.operation_id]  # the before-hook was not run again
    assert after.runs == [signal.operation_id]  # the after-hook ran as usual
    assert again.outcome == "succeeded" and again.attempts == 1
    other.kernel.close()


async def test_i17_approval_rejected_call_is_denied_before_execution_with_the_reason(
    make: Any,
) -> None:
    h = await make([hook("gate", lambda e: ASK)])
    signal = await pending(h)

    await answer_it(h, signal, False, reason="not on a Friday", actor="bob")
    result = await replay(h)

    assert result.outcome == "denied_before_execution"
    assert result.reason == "rejected by bob: not on a Friday"
    assert "not on a Friday" in result.describe()  # what the model is told
    assert result.attempts == 0 and h.tool.calls == []
    assert (await replay(h)).reason == result.reason  # stored: the same envelope again


@pytest.mark.parametrize(("default", "outcome", "runs"), [
    ("deny", "denied_before_execution", 0), ("approve", "succeeded", 1)])
async def test_i17_approval_expired_applies_the_default_answer(
    make: Any, default: str, outcome: str, runs: int,
) -> None:
    h = await make([hook("gate", lambda e: ASK)])
    h.ctx = replace(h.ctx, approval_timeout_s=30.0, approval_default=default)
    signal = await pending(h)
    assert signal.deadline is not None
    kept = await make([hook("gate", lambda e: ASK)])  # another run's approval, not yet due
    kept.ctx = replace(kept.ctx, approval_timeout_s=3600.0)
    not_due = await pending(kept)

    assert await expire_due(h.kernel.store, h.kernel.coordinator.commit,
                            now=signal.deadline - 1) == []
    expired = await expire_due(h.kernel.store, h.kernel.coordinator.commit,
                               now=signal.deadline + 1)
    result = await replay(h)

    assert [(r.operation_id, r.status, r.answer) for r in expired] == [
        (signal.operation_id, "expired", default)]
    assert result.outcome == outcome and len(h.tool.calls) == runs
    assert [r.operation_id for r in pending_approvals(kept.kernel.store, kept.lease.run_id)] \
        == [not_due.operation_id]
    if default == "deny":
        assert "approval deadline" in (result.reason or "")
    with pytest.raises(ApprovalError) as refused:
        await answer_it(h, signal, True)
    assert refused.value.code == "APPROVAL_ALREADY_ANSWERED"
    assert "expired" in str(refused.value)


async def test_i17_approval_a_second_answer_is_refused_naming_the_first(make: Any) -> None:
    h = await make([hook("gate", lambda e: ASK)])
    signal = await pending(h)
    await answer_it(h, signal, True, reason="ok", actor="alice")

    with pytest.raises(ApprovalError) as refused:
        await answer_it(h, signal, False, actor="mallory")

    assert refused.value.code == "APPROVAL_ALREADY_ANSWERED"
    assert "approved by alice" in str(refused.value) and "UTC" in str(refused.value)
    record = get_approval(h.kernel.store, signal.operation_id)
    assert record is not None and (record.status, record.actor) == ("approved", "alice")


async def test_i17_approval_two_answers_at_once_only_one_wins(make: Any) -> None:
    h = await make([hook("gate", lambda e: ASK)])
    signal = await pending(h)

    outcomes = await asyncio.gather(answer_it(h, signal, True, actor="a"),
                                    answer_it(h, signal, False, actor="b"),
                                    return_exceptions=True)

    refused = [o for o in outcomes if isinstance(o, ApprovalError)]
    won = [o for o in outcomes if not isinstance(o, BaseException)]
    assert len(won) == 1 and len(refused) == 1
    assert refused[0].code == "APPROVAL_ALREADY_ANSWERED"
    stored = get_approval(h.kernel.store, signal.operation_id)
    assert stored is not None and stored.actor == won[0].actor


async def test_i17_approval_an_operation_of_another_run_is_not_found(make: Any) -> None:
    h = await make([hook("gate", lambda e: ASK)])
    signal = await pending(h)
    other = await h.kernel.start_run(workspace=False)

    with pytest.raises(ApprovalError) as wrong_run:
        await answer(h.kernel.store, h.kernel.coordinator.commit, run_id=other.run_id,
                     operation_id=signal.operation_id, approve=True)
    with pytest.raises(ApprovalError) as unknown:
        await answer(h.kernel.store, h.kernel.coordinator.commit, run_id=signal.run_id,
                     operation_id="no-such-operation", approve=True)

    assert wrong_run.value.code == unknown.value.code == "APPROVAL_NOT_FOUND"
    assert other.run_id in str(wrong_run.value)
    record = get_approval(h.kernel.store, signal.operation_id)
    assert record is not None and record.status == "pending"


async def test_i17_approval_the_answer_requeues_a_waiting_run_once_nothing_else_waits(
    make: Any,
) -> None:
    h = await make([hook("gate", lambda e: ASK)])
    first = await pending(h, key="k1")
    second = await pending(h, key="k2")
    store = h.kernel.store
    await h.kernel.coordinator.commit(WriteSet((Put("runs", {  # the driver lets it wait
        "run_id": h.lease.run_id, "status": "waiting", "updated_at": time.time()}),)))

    await answer_it(h, first, True)
    still = store.get("runs", {"run_id": h.lease.run_id})
    await answer_it(h, second, False)
    queued = store.get("runs", {"run_id": h.lease.run_id})

    assert still is not None and still["status"] == "waiting"  # k2 still waited
    assert queued is not None and queued["status"] == "pending"


async def test_s5_2_ask_then_deny_in_one_chain_is_denied_and_nobody_is_asked(make: Any) -> None:
    h = await make([hook("gate", lambda e: ASK), hook("guard", lambda e: HookDecision.deny("no"))])

    result = await h.call({"text": "hi"}, logical_key="k1")

    assert result.outcome == "denied_before_execution" and result.reason == "no"
    assert h.tool.calls == []
    assert get_approval(h.kernel.store, result.operation_id) is None
    assert [(r["hook_id"], r["decision"]) for r in h.hook_rows(result.operation_id)] == [
        ("gate", "ask"), ("guard", "deny")]


async def test_s5_2_patches_before_at_and_after_the_ask_are_what_is_approved_and_run(
    make: Any,
) -> None:
    asks_with_patch = {**text_patch("B"), "decision": "ask", "reason": "ok?"}
    h = await make([hook("first", lambda e: text_patch("A")),
                    hook("gate", lambda e: asks_with_patch),
                    hook("last", lambda e: text_patch(e["payload"]["text"] + "C"))])
    signal = await pending(h, "raw")
    record = get_approval(h.kernel.store, signal.operation_id)

    await answer_it(h, signal, True)
    result = await replay(h, text="raw")

    assert record is not None and dict(record.arguments) == {"text": "BC"}
    assert [c["arguments"] for c in h.tool.calls] == [{"text": "BC"}]
    assert result.executed_arguments == {"text": "BC"}
    assert result.proposed_arguments == {"text": "raw"}


async def test_s5_2_two_asking_hooks_make_one_approval_with_both_questions(make: Any) -> None:
    h = await make([hook("a", lambda e: HookDecision.ask("first?")),
                    hook("b", lambda e: HookDecision.ask("second?"))])
    signal = await pending(h)
    assert signal.question == "first?\nsecond?"
    record = get_approval(h.kernel.store, signal.operation_id)
    assert record is not None and record.asked_by == ("a", "b")


async def test_i17_approval_ask_from_an_after_hook_is_an_invalid_decision(make: Any) -> None:
    h = await make([hook("late", lambda e: ASK, timing="after")])

    result = await h.call({"text": "hi"})

    assert result.outcome == "succeeded" and len(h.tool.calls) == 1  # fail-open
    (row,) = h.hook_rows(result.operation_id)
    assert row["status"] == "invalid" and row["decision"] is None
    assert "answered 'ask'" in row["data"]["diagnostic"]
    assert get_approval(h.kernel.store, result.operation_id) is None


async def test_i17_approval_ask_from_an_after_hook_with_on_failure_deny_denies(
    make: Any,
) -> None:
    h = await make([hook("late", lambda e: ASK, timing="after", on_failure="deny")])
    result = await h.call({"text": "hi"})
    assert result.outcome == "denied_after_execution"
    assert "answered 'ask'" in (result.reason or "")


async def test_i17_approval_a_batch_delivers_the_others_then_names_the_waiting_member(
    make: Any,
) -> None:
    gate = hook("gate", lambda e: ASK if e["payload"]["text"] == "risky" else {"decision": "allow"})
    h = await make([gate])
    items = [RequestItem(name="demo_echo", arguments={"text": "safe"}, logical_key="b1"),
             RequestItem(name="demo_echo", arguments={"text": "risky"}, logical_key="b2")]

    with pytest.raises(ApprovalPending) as waiting:
        await h.kernel.bus.request_many(items, h.ctx)

    safe, risky = waiting.value.results
    assert risky is None and safe is not None and safe.outcome == "succeeded"
    assert [c["arguments"] for c in h.tool.calls] == [{"text": "safe"}]
    assert [c.operation_id for c in waiting.value.calls] == [waiting.value.operation_id]
    assert waiting.value.question == ASK["reason"]
    stored = {o["logical_key"]: o for o in h.ops()}
    assert stored["b1"]["outcome"] == "succeeded"
    assert stored["b2"]["phase"] == "awaiting_approval"
    assert stored["b2"]["operation_id"] == waiting.value.operation_id


async def test_i17_approval_a_batch_after_the_answer_runs_only_the_waiting_member(
    make: Any,
) -> None:
    gate = hook("gate", lambda e: ASK if e["payload"]["text"] == "risky" else {"decision": "allow"})
    h = await make([gate])
    items = [RequestItem(name="demo_echo", arguments={"text": "safe"}, logical_key="b1"),
             RequestItem(name="demo_echo", arguments={"text": "risky"}, logical_key="b2")]
    with pytest.raises(ApprovalPending) as waiting:
        await h.kernel.bus.request_many(items, h.ctx)

    await answer_it(h, waiting.value, True)
    results = await h.kernel.bus.request_many(items, h.ctx)

    assert [r.outcome for r in results] == ["succeeded", "succeeded"]
    assert [c["arguments"]["text"] for c in h.tool.calls] == ["safe", "risky"]


def test_i17_approval_only_before_hooks_of_tool_model_and_delegation_calls_may_ask() -> None:
    assert [may_ask("before", e) for e in ("tool", "model", "delegation", "context")] == [
        True, True, True, False]
    assert not may_ask("after", "tool")


class Delegating:
    """A recoverable handler (as a delegation is) that makes a call of its own on the bus."""

    rerunnable = False
    recoverable = True

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.ctx: Any = None
        self.runs = 0

    async def invoke_once(self, request: Any, context: Any) -> ToolResult:
        self.runs += 1
        inner = await self.kernel.bus.request("demo_echo", {"text": "inner"}, self.ctx,
                                              logical_key="child")
        return ToolResult.success({"inner": inner.outcome})


async def test_i17_approval_a_call_inside_a_recoverable_handler_waits_and_replays_with_it(
    durable_store_url: str,
) -> None:
    gate = hook("gate", lambda e: ASK, capability="demo.echo")
    kernel = Kernel(durable_store_url, hooks=[gate[0]], hook_functions={gate[1]: gate[2]})
    inner, outer = CountingTool(), Delegating(kernel)
    kernel.publish("rel", [(spec(), inner), (spec("demo.outer"), outer)],
                   roles={"main": ["demo.echo", "demo.outer"]})
    lease = await kernel.start_run(workspace=False)
    outer.ctx = ctx = kernel.invocation_context(lease, release_id="rel")
    try:
        with pytest.raises(ApprovalPending) as waiting:
            await kernel.bus.request("demo_outer", {"text": "go"}, ctx, logical_key="parent")
        await answer(kernel.store, kernel.coordinator.commit, run_id=lease.run_id,
                     operation_id=waiting.value.operation_id, approve=True)
        result = await kernel.bus.request("demo_outer", {"text": "go"}, ctx,
                                          logical_key="parent")
    finally:
        kernel.close()

    assert waiting.value.capability_key == "demo.echo"
    assert result.outcome == "succeeded" and result.attempts == 1
    assert result.result is not None and result.result.to_dict()["content"][0]["data"] == {
        "inner": "succeeded"}
    assert outer.runs == 2 and [c["arguments"] for c in inner.calls] == [{"text": "inner"}]


async def test_s5_2_the_wait_is_committed_with_the_last_hooks_decision_in_one_commit(
    make: Any,
) -> None:
    h = await make([hook("first", lambda e: ASK), hook("last", lambda e: {"decision": "allow"})])
    committed: list[WriteSet] = []
    commit = h.kernel.coordinator.commit

    async def recording(ws: WriteSet, **kw: Any) -> None:
        await commit(ws, **kw)
        committed.append(ws)

    h.kernel.coordinator.commit = recording  # type: ignore[method-assign]
    await pending(h)

    (together,) = [ws for ws in committed if any(op.table == "approvals" for op in ws.ops)]
    rows = {op.table: op.row for op in together.ops if not isinstance(op, Delete)}
    assert rows["operations"]["phase"] == "awaiting_approval"
    assert (rows["hook_invocations"]["hook_id"], rows["hook_invocations"]["decision"]) == (
        "last", "allow")
    assert together is committed[-1]  # nothing is written after it


async def test_i17_approval_an_ask_committed_before_an_interruption_still_makes_the_call_wait(
    make: Any,
) -> None:
    started = asyncio.Event()
    loop = asyncio.get_running_loop()
    slow_runs: list[str] = []

    async def slow(event: Any) -> dict[str, Any]:
        slow_runs.append(event["operation_id"])
        loop.call_soon_threadsafe(started.set)  # the hook runs in an event loop of its own
        await asyncio.sleep(60)
        return {"decision": "allow"}

    h = await make([hook("gate", lambda e: ASK), hook("slow", slow, timeout_s=120)])
    task = asyncio.ensure_future(h.call({"text": "hi"}, logical_key="k1"))
    await asyncio.wait_for(started.wait(), 30)
    task.cancel()  # the runtime stops while the hook after the ask runs
    with pytest.raises(asyncio.CancelledError):
        await task

    signal = await pending(h)

    assert [(r["hook_id"], r["status"], r["decision"]) for r in h.hook_rows(
        signal.operation_id)] == [("gate", "succeeded", "ask"), ("slow", "indeterminate", None)]
    assert slow_runs == [signal.operation_id] and h.tool.calls == []
    record = get_approval(h.kernel.store, signal.operation_id)
    assert record is not None and record.status == "pending"


async def test_i34_2_an_approval_deadline_is_in_the_stores_time_whatever_the_askers_clock(
    make: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(store_clock, "REFRESH_S", 0.0)  # each reading measures the offset anew
    true_time = time.time
    monkeypatch.setattr(time, "time", lambda: true_time() - 3600.0)  # the asker: an hour behind
    h = await make([hook("gate", lambda e: ASK)])
    h.ctx = replace(h.ctx, approval_timeout_s=30.0)
    signal = await pending(h)
    monkeypatch.setattr(time, "time", true_time)  # a worker with a true clock

    assert signal.deadline is not None and abs(signal.deadline - (true_time() + 30.0)) < 5.0
    assert await expire_due(h.kernel.store, h.kernel.coordinator.commit) == []  # not yet due
