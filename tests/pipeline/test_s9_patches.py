"""Spec 000 §9 bullet 3 and §5.1: patches are normalised into one change set; the conflict
cases each have their own test; raw is kept and the executed value is the recorded value."""

from __future__ import annotations

from typing import Any

import pytest
from tests.pipeline.support import hook


def allow(*ops: dict[str, Any], context: dict[str, Any] | None = None, deny: bool = False) -> Any:
    def fn(event: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": "deny" if deny else "allow", "payload_patch": list(ops)}
        if context is not None:
            out["context_patch"] = context(event) if callable(context) else context
        return out
    return fn


def rep(path: str, value: Any) -> dict[str, Any]:
    return {"op": "replace", "path": path, "value": value}


def add(path: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}


async def test_s9_3_same_field_same_value_in_one_hook_merges_into_one_change(make: Any) -> None:
    h = await make([hook("dup", allow(rep("/payload/text", "same"), rep("/payload/text", "same")))])
    result = await h.call({"text": "x"})
    assert h.tool.calls[0]["arguments"]["text"] == "same"
    row = h.hook_rows(result.operation_id)[0]
    assert row["data"]["changes"]["ops"] == [rep("/payload/text", "same")]
    assert "patch_error" not in row["data"]


async def test_s9_3_different_values_for_one_field_drop_every_patch_of_that_hook(make: Any) -> None:
    h = await make([hook("clash", allow(add("/payload/count", 1), rep("/payload/text", "a"),
                                        rep("/payload/text", "b")))])
    result = await h.call({"text": "orig"})
    assert result.succeeded
    assert h.tool.calls[0]["arguments"] == {"text": "orig"}
    row = h.hook_rows(result.operation_id)[0]
    assert row["data"]["patch_error"]["code"] == "HOOK_PATCH_CONFLICT"
    assert row["data"]["change_hash"] is None


async def test_s9_3_parent_and_child_overlap_is_a_conflict(make: Any) -> None:
    h = await make([hook("overlap", allow(add("/payload/opts", {"mode": "fast"}),
                                          add("/payload/opts/level", 2)))])
    result = await h.call({"text": "x"})
    assert h.tool.calls[0]["arguments"] == {"text": "x"}
    assert h.hook_rows(result.operation_id)[0]["data"]["patch_error"]["code"] == "HOOK_PATCH_CONFLICT"


async def test_s9_3_payload_and_context_patch_writing_different_values_conflict(make: Any) -> None:
    def both(event: Any) -> dict[str, Any]:
        call = event["context"]["call_record"]
        return {"decision": "allow",
                "payload_patch": [rep("/payload/text", "from-payload")],
                "context_patch": {"base_revision": call["revision"], "changes": [
                    {"record_id": call["record_id"], **rep("/arguments/text", "from-context")}]}}

    h = await make([hook("both", both)])
    result = await h.call({"text": "x"})
    assert h.tool.calls[0]["arguments"] == {"text": "x"}
    assert h.hook_rows(result.operation_id)[0]["data"]["patch_error"]["code"] == "HOOK_PATCH_CONFLICT"


async def test_s9_3_context_only_patch_of_the_current_call_changes_what_executes(make: Any) -> None:
    def context_only(event: Any) -> dict[str, Any]:
        call = event["context"]["call_record"]
        return {"decision": "allow", "context_patch": {"base_revision": call["revision"], "changes": [
            {"record_id": call["record_id"], **rep("/arguments/text", "via-context")}]}}

    h = await make([hook("ctx", context_only)])
    result = await h.call({"text": "proposed"})
    assert h.tool.calls[0]["arguments"]["text"] == "via-context"
    assert result.executed_arguments == {"text": "via-context"}
    record = h.kernel.context.current(h.ctx.context_scope, f"call:{result.operation_id}")
    assert record is not None and record.data["arguments"] == {"text": "via-context"}
    assert record.data["source"] == "hook:ctx"


async def test_s9_3_a_later_hook_may_legally_repatch_an_earlier_hooks_value(make: Any) -> None:
    h = await make([hook("one", allow(rep("/payload/text", "one"))),
                    hook("two", allow(rep("/payload/text", "two")))])
    result = await h.call({"text": "x"})
    assert h.tool.calls[0]["arguments"]["text"] == "two"
    history = h.kernel.context.history(h.ctx.context_scope, f"call:{result.operation_id}")
    assert [(r.revision, r.data["arguments"]["text"], r.data["source"]) for r in history] == [
        (1, "x", "model"), (2, "one", "hook:one"), (3, "two", "hook:two")]


async def test_s9_3_deny_with_a_conflicting_patch_still_denies(make: Any) -> None:
    h = await make([hook("deny", allow(rep("/payload/text", "a"), rep("/payload/text", "b"),
                                       deny=True))])
    result = await h.call({"text": "x"})
    assert result.outcome == "denied_before_execution"
    assert h.tool.calls == []
    row = h.hook_rows(result.operation_id)[0]
    assert row["decision"] == "deny"
    assert row["data"]["patch_error"]["code"] == "HOOK_PATCH_CONFLICT"


async def test_s9_3_deny_with_a_malformed_patch_still_denies(make: Any) -> None:
    h = await make([hook("deny", lambda e: {"decision": "deny", "payload_patch": [
        {"op": "move", "from": "/payload/a", "path": "/payload/b"}]})])
    result = await h.call({"text": "x"})
    assert result.outcome == "denied_before_execution"
    assert h.tool.calls == []


@pytest.mark.parametrize("op", ["move", "copy", "test"])
async def test_s5_only_add_replace_remove_are_accepted(make: Any, op: str) -> None:
    h = await make([hook("bad", lambda e: {"decision": "allow", "payload_patch": [
        {"op": op, "path": "/payload/text", "from": "/payload/text", "value": "z"}]})])
    result = await h.call({"text": "x"})
    assert h.tool.calls[0]["arguments"] == {"text": "x"}
    assert h.hook_rows(result.operation_id)[0]["data"]["patch_error"]["code"] == "HOOK_PATCH_INVALID"


async def test_s5_stale_expected_version_is_refused(make: Any) -> None:
    h = await make([hook("one", allow(rep("/payload/text", "one"))),
                    hook("stale", lambda e: {"decision": "allow", "payload_patch": {
                        "expected_version": 0, "ops": [rep("/payload/text", "stale")]}})])
    result = await h.call({"text": "x"})
    assert h.tool.calls[0]["arguments"]["text"] == "one"
    assert h.hook_rows(result.operation_id)[1]["data"]["patch_error"]["code"] == "HOOK_PATCH_STALE"


async def test_s5_patch_that_breaks_the_schema_is_dropped_not_executed(make: Any) -> None:
    h = await make([hook("typo", allow(rep("/payload/text", 42))),
                    hook("extra", allow(add("/payload/undeclared", True)))])
    result = await h.call({"text": "x"})
    assert result.succeeded
    assert h.tool.calls[0]["arguments"] == {"text": "x"}
    codes = [r["data"]["patch_error"]["code"] for r in h.hook_rows(result.operation_id)]
    assert codes == ["HOOK_PATCH_INVALID", "HOOK_PATCH_INVALID"]


async def test_s9_3_raw_proposal_is_kept_beside_the_executed_arguments(make: Any) -> None:
    from agentloom.pipeline.records import stored_envelope

    h = await make([hook("rewrite", allow(rep("/payload/text", "executed")))])
    result = await h.call({"text": "proposed"})
    stored = h.ops()[0]
    assert stored["data"]["request"]["proposed_arguments"] == {"text": "proposed"}
    assert stored["data"]["payload"] == {"text": "executed"}
    envelope = stored_envelope(stored)
    assert envelope is not None and envelope.executed_arguments == {"text": "executed"}
    assert envelope.proposed_arguments == {"text": "proposed"}
    assert h.tool.calls[0]["arguments"] == {"text": "executed"}
    assert result.executed_arguments == {"text": "executed"}
