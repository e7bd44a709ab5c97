"""Spec 000 §9 bullet 1: the proxy never runs the method itself, a handler never re-enters
its own request chain, a recovered call reuses its result and a new identical call is new."""

from __future__ import annotations

from typing import Any

from agentloom.attempts import AttemptContext


async def test_s9_1_handler_runs_exactly_once_per_request(make: Any) -> None:
    h = await make()
    result = await h.call({"text": "hi"})
    assert result.succeeded
    assert len(h.tool.calls) == 1
    assert h.tool.calls[0]["operation_id"] == result.operation_id


async def test_s9_1_same_logical_call_recovered_returns_stored_result_without_rerun(make: Any) -> None:
    h = await make()
    first = await h.call({"text": "hi"}, logical_key="step-1/call-0")
    again = await h.call({"text": "hi"}, logical_key="step-1/call-0")
    assert again.operation_id == first.operation_id
    assert again.to_dict() == first.to_dict()
    assert len(h.tool.calls) == 1


async def test_s9_1_identical_new_call_from_the_model_gets_a_new_identity(make: Any) -> None:
    h = await make()
    first = await h.call({"text": "hi"})
    second = await h.call({"text": "hi"})
    assert first.operation_id != second.operation_id
    assert len(h.tool.calls) == 2
    assert len(h.ops()) == 2


async def test_s9_1_handler_reentering_its_own_capability_is_refused(make: Any) -> None:
    inner: list[Any] = []

    async def reenter(args: dict[str, Any], ctx: AttemptContext) -> None:
        if args["text"] == "outer":
            inner.append(await h.call({"text": "inner"}))

    h = await make()
    h.tool.behaviour = reenter
    outer = await h.call({"text": "outer"})
    assert outer.succeeded
    assert inner[0].outcome == "failed"
    assert inner[0].error.code == "RECURSIVE_REQUEST"
    assert [c["arguments"]["text"] for c in h.tool.calls] == ["outer"]


async def test_s9_1_operation_id_is_handed_to_the_handler_and_stable_across_attempts(make: Any) -> None:
    from agentloom.errors import OperationError
    from agentloom.pipeline.retry import RetryPolicy
    from agentloom.results import ToolResult

    def flaky(args: dict[str, Any], ctx: AttemptContext) -> ToolResult | None:
        if ctx.attempt_no == 1:
            return ToolResult.unknown(OperationError(
                code="RESET", category="transport", message="connection reset",
                external_outcome="unknown"))
        return None

    h = await make(retry=RetryPolicy(enabled=True, max_attempts=2, interval_s=0.0))
    h.tool.behaviour = flaky
    result = await h.call({"text": "x"})
    assert result.succeeded and result.attempts == 2
    assert {c["operation_id"] for c in h.tool.calls} == {result.operation_id}
    assert [c["attempt_no"] for c in h.tool.calls] == [1, 2]
