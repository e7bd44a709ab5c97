"""Unit tests of patch parsing, normalisation and application (000 §5.1), without a store."""

from __future__ import annotations

from typing import Any

import pytest

from agentloom.hooks.decision import HookDecision, InvalidDecision, parse_decision
from agentloom.hooks.patch import (
    CallRecord,
    PatchInvalid,
    PatchOp,
    apply_ops,
    normalise,
    parse_context_patch,
    parse_payload_patch,
)

CALL = CallRecord("call:op1", 1, "/arguments", "/payload")


def norm(payload: Any = None, context: Any = None, version: int = 0) -> Any:
    return normalise(parse_payload_patch(payload), parse_context_patch(context), call=CALL,
                     writable=("/payload",), payload_version=version)


def test_same_path_same_value_merges() -> None:
    changes = norm([{"op": "replace", "path": "/payload/a", "value": 1}] * 2)
    assert changes.ops == (PatchOp("replace", "/payload/a", 1),)


def test_same_path_different_values_conflict() -> None:
    with pytest.raises(PatchInvalid) as err:
        norm([{"op": "replace", "path": "/payload/a", "value": 1},
              {"op": "replace", "path": "/payload/a", "value": 2}])
    assert err.value.code == "HOOK_PATCH_CONFLICT"


@pytest.mark.parametrize("parent,child", [("/payload/a", "/payload/a/b"),
                                          ("/payload", "/payload/x"),
                                          ("/payload/list/0", "/payload/list/0/k")])
def test_parent_child_overlap_conflicts_in_either_order(parent: str, child: str) -> None:
    for first, second in ((parent, child), (child, parent)):
        with pytest.raises(PatchInvalid) as err:
            norm([{"op": "add", "path": first, "value": {}},
                  {"op": "add", "path": second, "value": 1}])
        assert err.value.code == "HOOK_PATCH_CONFLICT"


def test_siblings_do_not_conflict() -> None:
    changes = norm([{"op": "add", "path": "/payload/a", "value": 1},
                    {"op": "add", "path": "/payload/ab", "value": 2}])
    assert len(changes.ops) == 2


def test_context_change_to_the_current_call_maps_onto_the_payload() -> None:
    changes = norm(context={"base_revision": 1, "changes": [
        {"record_id": "call:op1", "op": "replace", "path": "/arguments/x", "value": 5}]})
    assert changes.ops == (PatchOp("replace", "/payload/x", 5),)
    assert changes.context_changes == ()


def test_context_and_payload_writing_the_same_value_merge() -> None:
    changes = norm([{"op": "replace", "path": "/payload/x", "value": 5}],
                   {"base_revision": 1, "changes": [
                       {"record_id": "call:op1", "op": "replace", "path": "/arguments/x", "value": 5}]})
    assert changes.ops == (PatchOp("replace", "/payload/x", 5),)


def test_context_change_on_a_stale_call_revision_is_refused() -> None:
    with pytest.raises(PatchInvalid) as err:
        norm(context={"base_revision": 0, "changes": [
            {"record_id": "call:op1", "op": "replace", "path": "/arguments/x", "value": 5}]})
    assert err.value.code == "HOOK_PATCH_STALE"


def test_context_change_outside_the_calls_arguments_is_protected() -> None:
    with pytest.raises(PatchInvalid) as err:
        norm(context={"base_revision": 1, "changes": [
            {"record_id": "call:op1", "op": "replace", "path": "/proposed_arguments/x", "value": 5}]})
    assert err.value.code == "HOOK_PATCH_PROTECTED"


def test_other_records_stay_context_changes_and_are_conflict_checked() -> None:
    changes = norm(context={"base_revision": 3, "changes": [
        {"record_id": "note:1", "op": "add", "path": "/text", "value": "a"}]})
    assert changes.ops == () and changes.context_changes[0].record_id == "note:1"
    with pytest.raises(PatchInvalid):
        norm(context={"base_revision": 3, "changes": [
            {"record_id": "note:1", "op": "add", "path": "/text", "value": "a"},
            {"record_id": "note:1", "op": "add", "path": "/text", "value": "b"}]})


def test_expected_version_must_match() -> None:
    with pytest.raises(PatchInvalid) as err:
        norm({"ops": [{"op": "add", "path": "/payload/a", "value": 1}], "expected_version": 2},
             version=3)
    assert err.value.code == "HOOK_PATCH_STALE"


@pytest.mark.parametrize("raw", [
    [{"op": "move", "from": "/payload/a", "path": "/payload/b"}],
    [{"op": "replace", "path": "payload/a", "value": 1}],
    [{"op": "add", "path": "/payload/a"}],
    [{"op": "add", "path": "/payload/a", "value": 1, "extra": True}],
    "not a list",
    {"ops": [], "expected_version": "1"},
])
def test_malformed_payload_patches_are_invalid(raw: Any) -> None:
    with pytest.raises(PatchInvalid) as err:
        parse_payload_patch(raw)
    assert err.value.code == "HOOK_PATCH_INVALID"


def test_apply_ops_follows_rfc6902_for_objects_and_arrays() -> None:
    doc = {"payload": {"a": 1, "list": [1, 2], "x~y": 0, "s/t": 0}}
    out = apply_ops(doc, [PatchOp("add", "/payload/b", 2), PatchOp("remove", "/payload/a"),
                          PatchOp("add", "/payload/list/-", 3), PatchOp("add", "/payload/list/0", 0),
                          PatchOp("replace", "/payload/x~0y", 1), PatchOp("replace", "/payload/s~1t", 1)])
    assert out == {"payload": {"b": 2, "list": [0, 1, 2, 3], "x~y": 1, "s/t": 1}}
    assert doc["payload"]["a"] == 1  # the input is never mutated


@pytest.mark.parametrize("op", [PatchOp("replace", "/payload/missing", 1),
                                PatchOp("remove", "/payload/missing"),
                                PatchOp("add", "/payload/list/9", 1),
                                PatchOp("add", "/payload/list/01", 1),
                                PatchOp("add", "/payload/a/deeper", 1)])
def test_apply_ops_refuses_targets_that_do_not_exist(op: PatchOp) -> None:
    with pytest.raises(PatchInvalid):
        apply_ops({"payload": {"a": 1, "list": []}}, [op])


def test_writable_paths_protect_everything_else() -> None:
    with pytest.raises(PatchInvalid) as err:
        norm([{"op": "replace", "path": "/run_id", "value": "x"}])
    assert err.value.code == "HOOK_PATCH_PROTECTED"
    with pytest.raises(PatchInvalid):
        norm([{"op": "replace", "path": "/payloadx", "value": "x"}])


def test_decision_is_validated_separately_from_its_patch() -> None:
    parsed = parse_decision({"decision": "deny", "payload_patch": [{"op": "copy"}]})
    assert parsed.decision == "deny" and parsed.patch_error is not None
    parsed = parse_decision(HookDecision.allow(reason="ok"))
    assert parsed.decision == "allow" and parsed.reason == "ok"
    for bad in (None, "allow", {"decision": "ALLOW"}, {"decision": "allow", "why": 1},
                {"decision": "deny", "reason": 3}):
        with pytest.raises(InvalidDecision):
            parse_decision(bad)
