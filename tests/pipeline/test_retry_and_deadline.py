"""Spec 000 §3.3: retries come from the run's RetryPolicy snapshot (off by default), only for
transport and rate-limit errors, 429 waits max(interval, Retry-After), nothing crosses the run
deadline; a stop or the deadline during a call is reported honestly, never as success."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import pytest

from agentloom.cancel import CancelToken
from agentloom.errors import OperationError
from agentloom.pipeline.retry import RetryPolicy
from agentloom.results import ToolResult


def failing(category: str, *, times: int = 1, retry_after: float | None = None) -> Any:
    def behaviour(args: dict[str, Any], ctx: Any) -> ToolResult | None:
        if ctx.attempt_no <= times:
            details = {"retry_after_s": retry_after} if retry_after is not None else {}
            return ToolResult.unknown(OperationError(
                code="E", category=category, message=f"{category} trouble",  # type: ignore[arg-type]
                external_outcome="unknown", details=details))
        return None
    return behaviour


def attempts(h: Any, operation_id: str) -> list[dict[str, Any]]:
    return h.kernel.store.query("attempts", {"operation_id": operation_id}, order_by=("attempt_no",))


def test_s3_3_retry_policy_defaults_are_off_two_attempts_two_seconds() -> None:
    policy = RetryPolicy()
    assert (policy.enabled, policy.max_attempts, policy.interval_s) == (False, 2, 2.0)


async def test_s3_3_retry_is_off_by_default_even_for_transport_errors(make: Any) -> None:
    h = await make()
    h.tool.behaviour = failing("transport")
    result = await h.call({"text": "x"})
    assert result.outcome == "unknown" and result.attempts == 1
    assert len(h.tool.calls) == 1


async def test_s3_3_transport_error_is_retried_as_a_new_attempt_when_enabled(make: Any) -> None:
    h = await make(retry=RetryPolicy(enabled=True, max_attempts=2, interval_s=0.0))
    h.tool.behaviour = failing("transport")
    result = await h.call({"text": "x"})
    assert result.succeeded and result.attempts == 2
    rows = attempts(h, result.operation_id)
    assert [r["status"] for r in rows] == ["failed", "succeeded"]
    assert rows[0]["data"]["raw"]["error"]["category"] == "transport"


async def test_s3_3_retries_stop_at_max_attempts(make: Any) -> None:
    h = await make(retry=RetryPolicy(enabled=True, max_attempts=3, interval_s=0.0))
    h.tool.behaviour = failing("transport", times=10)
    result = await h.call({"text": "x"})
    assert result.outcome == "unknown" and result.attempts == 3


@pytest.mark.parametrize("category", ["business", "validation", "permission", "not_found",
                                      "unknown", "protocol", "timeout"])
async def test_s3_3_non_retryable_categories_are_never_retried(make: Any, category: str) -> None:
    h = await make(retry=RetryPolicy(enabled=True, max_attempts=5, interval_s=0.0))
    h.tool.behaviour = failing(category)
    result = await h.call({"text": "x"})
    assert result.attempts == 1 and len(h.tool.calls) == 1


async def test_s3_3_rate_limit_waits_the_larger_of_interval_and_retry_after(make: Any) -> None:
    h = await make(retry=RetryPolicy(enabled=True, max_attempts=2, interval_s=0.01))
    h.tool.behaviour = failing("rate_limit", retry_after=0.05)
    result = await h.call({"text": "x"})
    assert result.succeeded
    assert attempts(h, result.operation_id)[0]["data"]["retry_wait_s"] == 0.05
    h2 = await make(retry=RetryPolicy(enabled=True, max_attempts=2, interval_s=0.05))
    h2.tool.behaviour = failing("rate_limit", retry_after=0.01)
    result2 = await h2.call({"text": "x"})
    assert attempts(h2, result2.operation_id)[0]["data"]["retry_wait_s"] == 0.05


async def test_s3_3_a_retry_wait_that_would_cross_the_run_deadline_is_not_taken(make: Any) -> None:
    h = await make(retry=RetryPolicy(enabled=True, max_attempts=2, interval_s=0.0),
                   deadline=time.time() + 5)
    h.tool.behaviour = failing("rate_limit", retry_after=3600)
    result = await h.call({"text": "x"})
    assert result.outcome == "unknown" and result.attempts == 1
    assert result.error.category == "rate_limit"


async def test_s3_1_the_run_deadline_during_a_call_gives_unknown_not_success(make: Any) -> None:
    async def hang(args: dict[str, Any], ctx: Any) -> None:
        await asyncio.sleep(30)

    h = await make()
    # the deadline is set once the harness is built (building it on a loaded PostgreSQL can
    # take longer than the deadline itself), so it passes during the call, not before it
    h.ctx = dataclasses.replace(h.ctx, deadline=time.time() + 0.2)
    h.tool.behaviour = hang
    result = await asyncio.wait_for(h.call({"text": "x"}), timeout=10)
    assert result.outcome == "unknown"
    assert result.error.code == "RUN_DEADLINE_EXCEEDED"
    assert result.error.external_outcome == "unknown"


async def test_s3_1_a_call_after_the_run_deadline_never_executes(make: Any) -> None:
    h = await make(deadline=time.time() - 1)
    result = await h.call({"text": "x"})
    assert result.outcome == "failed" and result.error.code == "RUN_DEADLINE_EXCEEDED"
    assert result.attempts == 0 and h.tool.calls == []


async def test_s3_2_stop_during_a_long_call_is_cancelled_with_unknown_effect(make: Any) -> None:
    cancel = CancelToken()
    started = asyncio.Event()

    async def long_call(args: dict[str, Any], ctx: Any) -> None:
        started.set()
        await asyncio.sleep(30)

    h = await make(cancel=cancel)
    h.tool.behaviour = long_call
    task = asyncio.create_task(h.call({"text": "x"}))
    await asyncio.wait_for(started.wait(), timeout=5)
    cancel.set("user pressed stop")
    result = await asyncio.wait_for(task, timeout=5)
    assert result.outcome == "cancelled"
    assert result.error.external_outcome == "unknown"
    assert "user pressed stop" in result.error.message
    assert h.ops()[0]["outcome"] == "cancelled"


async def test_s3_2_after_stop_no_new_call_executes(make: Any) -> None:
    cancel = CancelToken()
    cancel.set("stopped")
    h = await make(cancel=cancel)
    result = await h.call({"text": "x"})
    assert result.outcome == "cancelled" and result.attempts == 0
    assert h.tool.calls == []


async def test_s3_handler_exception_is_unknown_never_success(make: Any) -> None:
    def explode(args: dict[str, Any], ctx: Any) -> None:
        raise ConnectionResetError("peer reset the connection")

    h = await make()
    h.tool.behaviour = explode
    result = await h.call({"text": "x"})
    assert result.outcome == "unknown"
    assert result.error.external_outcome == "unknown"
