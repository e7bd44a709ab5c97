"""Issue 19: a resumable handler commits a remote handle during its Attempt
(``AttemptContext.checkpoint``); resumed at ``attempt_started``, the pipeline gives the handle
back (``resume_once``, the same Attempt) instead of reporting the call ``unknown`` — and a
call whose handle was never committed stays ``unknown`` and is never sent again. No A2A here:
a fake "remote job" handler on a real SQLite store, a second ``Kernel`` standing in for the
process that resumes after a crash."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.pipeline.support import spec

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.kernel import Kernel
from agentloom.pipeline.ports import ResumableHandler, as_resumable
from agentloom.results import ToolResult

WAIT_S = 10


class RemoteJob(ResumableHandler):
    """Starts a "remote job" (counted in ``sent``), commits its id unless told not to, then
    waits for it forever — the process is killed meanwhile (the test cancels the call)."""

    rerunnable = False
    recoverable = False
    resumable = True

    def __init__(self, *, commit_handle: bool = True) -> None:
        self.commit_handle = commit_handle
        self.sent: list[str] = []
        self.resumed: list[dict[str, Any]] = []
        self.waiting = asyncio.Event()

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        self.sent.append(request.operation_id)
        if self.commit_handle:
            await context.checkpoint({"job": f"job-{len(self.sent)}"})
        self.waiting.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def resume_once(self, request: CapabilityRequest, context: AttemptContext,
                          handle: Mapping[str, Any]) -> ToolResult:
        self.resumed.append({"handle": dict(handle), "attempt_no": context.attempt_no})
        context.observe("job.polled", {"job": handle["job"], "state": "done"})
        return ToolResult.success({"job": handle["job"], "state": "done"})


async def _interrupted_call(url: str, handler: RemoteJob) -> tuple[str, str]:
    """Run one call until the handler waits, then cut it off as a crash would (the task is
    cancelled, nothing after the Attempt's start is committed). Returns (run id, op id)."""
    kernel = Kernel(url)
    kernel.publish("rel", [(spec(), handler)], roles={"main": ["demo.echo"]})
    lease = await kernel.start_run()
    ctx = kernel.invocation_context(lease, release_id="rel", role="main")
    call = asyncio.ensure_future(kernel.bus.request("demo_echo", {"text": "go"}, ctx,
                                                    logical_key="step-1/call-0"))
    await asyncio.wait_for(handler.waiting.wait(), WAIT_S)
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    (op,) = kernel.operations(lease.run_id)
    kernel.close()
    return lease.run_id, op["operation_id"]


async def _resume(url: str, run_id: str, handler: RemoteJob,
                  seen: list[tuple[str, dict[str, Any]]]) -> Any:
    kernel = Kernel(url)
    kernel.publish("rel", [(spec(), handler)], roles={"main": ["demo.echo"]})
    kernel.bus.subscribe(lambda kind, payload: seen.append((kind, payload)))
    lease = kernel.claim(run_id)
    ctx = kernel.invocation_context(lease, release_id="rel", role="main")
    try:
        result = await kernel.bus.request("demo_echo", {"text": "go"}, ctx,
                                          logical_key="step-1/call-0")
        attempts = kernel.store.query("attempts", {"operation_id": result.operation_id})
        return result, attempts
    finally:
        kernel.close()


def test_i19_a_handler_is_resumable_only_when_it_says_so() -> None:
    assert as_resumable(RemoteJob()) is not None

    class Plain(RemoteJob):
        resumable = False

    assert as_resumable(Plain()) is None


async def test_i19_2_a_call_whose_handle_was_committed_is_followed_again_not_sent_again(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    first = RemoteJob()
    run_id, op_id = await _interrupted_call(url, first)
    assert first.sent == [op_id]

    again = RemoteJob()
    seen: list[tuple[str, dict[str, Any]]] = []
    result, attempts = await _resume(url, run_id, again, seen)

    assert result.outcome == "succeeded" and result.attempts == 1
    assert again.sent == []  # never sent again
    assert again.resumed == [{"handle": {"job": "job-1"}, "attempt_no": 1}]
    assert [a["attempt_no"] for a in attempts] == [1]  # the same Attempt, no new row
    assert ("job.polled", {"run_id": run_id, "operation_id": op_id, "job": "job-1",
                           "state": "done"}) in seen


async def test_i19_2_a_call_cut_off_before_its_handle_was_committed_is_unknown(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    run_id, _ = await _interrupted_call(url, RemoteJob(commit_handle=False))

    again = RemoteJob()
    result, attempts = await _resume(url, run_id, again, [])

    assert result.outcome == "unknown" and result.error.code == "ATTEMPT_OUTCOME_UNKNOWN"
    assert again.sent == [] and again.resumed == []
    assert [(a["attempt_no"], a["status"]) for a in attempts] == [(1, "lost")]


async def test_i19_2_a_handler_that_is_not_resumable_ignores_a_committed_handle(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    run_id, _ = await _interrupted_call(url, RemoteJob())

    class NotResumable(RemoteJob):
        resumable = False

    again = NotResumable()
    result, _ = await _resume(url, run_id, again, [])
    assert result.outcome == "unknown" and again.resumed == [] and again.sent == []


async def test_i19_checkpoint_and_observe_outside_a_pipeline_do_nothing() -> None:
    context = AttemptContext(operation_id="op", attempt_no=1, run_id="run", role=None,
                             deadline=0.0)
    await context.checkpoint({"job": "x"})
    context.observe("job.polled", {"state": "done"})
