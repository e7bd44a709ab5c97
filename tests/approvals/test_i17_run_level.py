"""Issue 17 at the run level, in one process: a before-hook on a *model* call (and on a
delegation) asks; the run's handle ends ``waiting`` with the call named, nothing holds the
run, ``Runtime.approve`` queues it again and ``resume`` goes on — the model call is made once.
On SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import agentloom
from agentloom import HookDecision
from agentloom.approvals import ApprovalError
from agentloom.models.offline import Script, ScriptModel
from agentloom.store.records import get_run, operations

ANSWER = Script.model_validate({"turns": [{"text": "the answer"}]})


def _runtime(store: str, tmp_path: Path, asked: list[str]) -> agentloom.Runtime:
    @agentloom.hook(timing="before", event="model")
    def ask_model(event: dict[str, Any]) -> HookDecision:
        asked.append(event["operation_id"])
        return HookDecision.ask("Spend tokens on this?")

    return agentloom.Runtime(
        [agentloom.AgentSpec(name="main", model=ScriptModel(ANSWER, source="answer"),
                             tools=("fs.read",))],
        store=store, hooks=[ask_model], workspace_root=tmp_path / "ws", sandbox_backend="none")


async def test_i17_a_model_call_that_asks_makes_the_run_wait_and_approve_resumes_it(
        tmp_path: Path, durable_store_url: str) -> None:
    asked: list[str] = []
    runtime = _runtime(durable_store_url, tmp_path, asked)
    try:
        waiting = await runtime.run("answer me")
        assert waiting.status == "waiting" and waiting.output is None
        (call,) = waiting.waiting
        assert call["question"] == "Spend tokens on this?"
        run = get_run(runtime.store, waiting.run_id)
        assert run is not None and run.status == "waiting" and run.lease_expires_at == 0.0
        (op,) = operations(runtime.store, waiting.run_id)
        assert op.event_type == "model" and op.phase == "awaiting_approval"

        refused = await _refusal(runtime.resume(waiting.run_id))
        assert "RUN_WAITING" in refused and f"runs approve {waiting.run_id}" in refused

        record = await runtime.approve(waiting.run_id, call["operation_id"], actor="alice")
        assert record.status == "approved"
        run = get_run(runtime.store, waiting.run_id)
        assert run is not None and run.status == "pending"
        try:
            await runtime.reject(waiting.run_id, call["operation_id"])
        except ApprovalError as exc:
            assert exc.code == "APPROVAL_ALREADY_ANSWERED" and "alice" in str(exc)
        else:
            raise AssertionError("a second answer was accepted")

        result = await (await runtime.resume(waiting.run_id)).result()
        assert result.status == "succeeded" and result.output == "the answer"
        assert len(asked) == 1  # the hook was not asked again on replay
        (op,) = operations(runtime.store, waiting.run_id)
        assert op.phase == "delivered" and op.outcome == "succeeded"
    finally:
        await runtime.aclose()


async def _refusal(coro: Any) -> str:
    try:
        await coro
    except agentloom.RunError as exc:
        return f"{exc.code}: {exc}"
    raise AssertionError("a waiting run was resumed")
