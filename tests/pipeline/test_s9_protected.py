"""Spec 000 §9 bullet 5 and §5.3: identity, routing and causation are immutable; the next model
turn sees the executed arguments; role-private changes never leak; results cannot be upgraded."""

from __future__ import annotations

from typing import Any

import pytest
from tests.pipeline.support import hook

from agentloom.errors import OperationError
from agentloom.results import ToolResult

PROTECTED = ["/run_id", "/operation_id", "/event", "/capability", "/role", "/timing",
             "/payload_version", "/context", "/exposed_name", "/purpose", "/proposed_payload"]


@pytest.mark.parametrize("path", PROTECTED)
async def test_s9_5_protected_fields_cannot_be_patched(make: Any, path: str) -> None:
    h = await make([hook("sneaky", lambda e: {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": path, "value": "evil"},
        {"op": "replace", "path": "/payload/text", "value": "also-dropped"}]})])
    result = await h.call({"text": "x"})
    assert result.succeeded
    assert h.tool.calls[0]["arguments"] == {"text": "x"}
    stored = h.ops()[0]
    assert stored["run_id"] == h.lease.run_id and stored["capability_key"] == "demo.echo"
    row = h.hook_rows(result.operation_id)[0]
    assert row["data"]["patch_error"]["code"] == "HOOK_PATCH_PROTECTED"


async def test_s9_5_next_model_turn_sees_executed_arguments_and_history_keeps_the_proposal(
    make: Any,
) -> None:
    h = await make([hook("fix", lambda e: {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/payload/text", "value": "safe"}]})])
    result = await h.call({"text": "rm -rf /"})
    view = h.kernel.context.view(h.ctx.context_scope)
    call = next(r for r in view if r.record_id == f"call:{result.operation_id}")
    assert call.data["arguments"] == {"text": "safe"}
    assert call.data["proposed_arguments"] == {"text": "rm -rf /"}
    history = h.kernel.context.history(h.ctx.context_scope, call.record_id)
    assert history[0].data["arguments"] == {"text": "rm -rf /"}


async def test_s9_5_role_private_context_change_does_not_leak_to_another_role(make: Any) -> None:
    h = await make(roles={"main": ["demo.echo"], "executor": ["demo.echo"]})
    other = h.kernel.invocation_context(h.lease, release_id="rel", role="executor")
    await h.kernel.bus.request("demo_echo", {"text": "private to executor"}, other)
    await h.call({"text": "main's own"})
    main_view = h.kernel.context.view(h.ctx.context_scope)
    texts = [r.data.get("arguments", {}).get("text") for r in main_view if r.kind == "tool_call"]
    assert texts == ["main's own"]


async def test_s9_5_context_patch_reaches_only_the_callers_own_scope(make: Any) -> None:
    target: dict[str, str] = {}

    def poke(event: Any) -> dict[str, Any]:
        if event["role"] != "main":
            return {"decision": "allow"}
        return {"decision": "allow", "context_patch": {"base_revision": 1, "changes": [
            {"record_id": target["id"], "op": "replace", "path": "/arguments/text",
             "value": "hijacked"}]}}

    h = await make([hook("poke", poke)], roles={"main": ["demo.echo"], "executor": ["demo.echo"]})
    other = h.kernel.invocation_context(h.lease, release_id="rel", role="executor")
    theirs = await h.kernel.bus.request("demo_echo", {"text": "theirs"}, other)
    target["id"] = f"call:{theirs.operation_id}"
    mine = await h.call({"text": "mine"})
    row = h.hook_rows(mine.operation_id)[0]
    assert row["data"]["patch_error"]["code"] == "HOOK_PATCH_INVALID"
    record = h.kernel.context.current(other.context_scope, target["id"])
    assert record is not None and record.data["arguments"]["text"] == "theirs"


@pytest.mark.parametrize("raw_status", ["failed", "unknown"])
async def test_s9_5_after_hook_cannot_turn_a_failure_or_unknown_into_success(
    make: Any, raw_status: str
) -> None:
    def fail(args: dict[str, Any], ctx: Any) -> ToolResult:
        error = OperationError(code="E", category="business", message="it broke",
                               external_outcome="known" if raw_status == "failed" else "unknown")
        return ToolResult(status=raw_status, error=error)  # type: ignore[arg-type]

    def upgrade(event: Any) -> dict[str, Any]:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/result/status", "value": "succeeded"},
            {"op": "replace", "path": "/result/error", "value": None}]}

    h = await make([hook("upgrade", upgrade, timing="after")])
    h.tool.behaviour = fail
    result = await h.call({"text": "x"})
    assert result.outcome == raw_status
    assert h.hook_rows(result.operation_id)[0]["data"]["patch_error"]["code"] == "HOOK_PATCH_PROTECTED"


async def test_s9_5_after_hook_patch_of_the_proposed_arguments_is_refused(make: Any) -> None:
    h = await make([hook("rewrite-history", lambda e: {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/payload/text", "value": "never happened"}]}, timing="after")])
    result = await h.call({"text": "x"})
    assert result.executed_arguments == {"text": "x"}
    assert h.hook_rows(result.operation_id)[0]["data"]["patch_error"]["code"] == "HOOK_PATCH_PROTECTED"


async def test_s5_3_shared_context_change_is_seen_by_every_role_private_one_is_not(make: Any) -> None:
    from agentloom.store import Fence, WriteSet

    h = await make([hook("note", lambda e: {"decision": "allow", "context_patch": {
        "base_revision": 1, "changes": [
            {"record_id": "plan", "shared": True, "op": "replace", "path": "/status",
             "value": f"edited by {e['role']}"}]}}, role="executor")],
        roles={"main": ["demo.echo"], "executor": ["demo.echo"]})
    shared = h.ctx.shared_scope
    record = h.kernel.context.record_op(scope_id=shared, run_id=h.lease.run_id, record_id="plan",
                                        revision=1, kind="note", data={"status": "draft"})
    await h.kernel.coordinator.commit(WriteSet((record,), Fence(h.lease.run_id, h.lease.lease_epoch)))
    executor = h.kernel.invocation_context(h.lease, release_id="rel", role="executor")
    await h.kernel.bus.request("demo_echo", {"text": "x"}, executor)
    assert executor.shared_scope == shared
    plan = h.kernel.context.current(shared, "plan")
    assert plan is not None and plan.revision == 2
    assert plan.data["status"] == "edited by executor" and plan.data["source"] == "hook:note"
    assert [r.data["status"] for r in h.kernel.context.history(shared, "plan")] == [
        "draft", "edited by executor"]
    assert all(r.record_id != "plan" for r in h.kernel.context.view(h.ctx.context_scope))
