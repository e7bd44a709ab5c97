"""Issue 20: a caller may ask a person before its call runs (``Request.ask``, the workflow's
wait node): the call waits in ``awaiting_approval`` exactly as if a before-hook had answered
``ask`` — with no hook at all, or after the hooks ran (a hook's deny still wins and nobody is
asked); issued again it runs once when approved and is denied when rejected. On SQLite and
PostgreSQL."""

from __future__ import annotations

from typing import Any

from tests.approvals.support import Counted
from tests.pipeline.support import hook

from agentloom.approvals import ApprovalPending, answer, get_approval

QUESTION = "Ship version 2.0?"


async def _asked(h: Any, key: str = "w1") -> ApprovalPending:
    try:
        result = await h.call({"text": "ship"}, logical_key=key, ask=QUESTION)
    except ApprovalPending as signal:
        return signal
    raise AssertionError(f"the call did not wait for a person: {result.outcome}")


async def test_i20_a_callers_ask_without_hooks_waits_then_runs_once_when_approved(make: Any) -> None:
    h = await make([])

    signal = await _asked(h)

    assert signal.question == QUESTION and h.tool.calls == []
    (op,) = h.ops()
    assert op["phase"] == "awaiting_approval" and op["outcome"] is None
    record = get_approval(h.kernel.store, signal.operation_id)
    assert record is not None and record.asked_by == ("caller",) and record.status == "pending"
    again = await _asked(h)  # issued again before an answer: it still waits, nothing ran
    assert again.operation_id == signal.operation_id and h.tool.calls == []

    await answer(h.kernel.store, h.kernel.coordinator.commit, run_id=signal.run_id,
                 operation_id=signal.operation_id, approve=True)
    done = await h.call({"text": "ship"}, logical_key="w1", ask=QUESTION)
    replayed = await h.call({"text": "ship"}, logical_key="w1", ask=QUESTION)

    assert done.outcome == "succeeded" and replayed.outcome == "succeeded"
    assert len(h.tool.calls) == 1 and done.attempts == 1
    assert [o["operation_id"] for o in h.ops()] == [signal.operation_id]


async def test_i20_a_callers_ask_rejected_is_denied_before_execution(make: Any) -> None:
    h = await make([])
    signal = await _asked(h)

    await answer(h.kernel.store, h.kernel.coordinator.commit, run_id=signal.run_id,
                 operation_id=signal.operation_id, approve=False, reason="not today")
    done = await h.call({"text": "ship"}, logical_key="w1", ask=QUESTION)

    assert done.outcome == "denied_before_execution" and "not today" in (done.reason or "")
    assert h.tool.calls == []


async def test_i20_a_callers_ask_comes_after_the_hooks_and_a_deny_still_wins(make: Any) -> None:
    allows = Counted({"decision": "allow"})
    h = await make([hook("gate", allows)])
    signal = await _asked(h, "w2")
    assert allows.runs == [signal.operation_id]  # the hooks ran first; then the person is asked

    denies = Counted({"decision": "deny", "reason": "frozen"})
    d = await make([hook("freeze", denies)])
    denied = await d.call({"text": "ship"}, logical_key="w3", ask=QUESTION)

    assert denied.outcome == "denied_before_execution" and denied.reason == "frozen"
    assert d.tool.calls == [] and d.kernel.store.query("approvals", {"run_id": d.lease.run_id}) == []
